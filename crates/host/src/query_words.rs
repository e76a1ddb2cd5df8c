//! A session list asked for in words ([`SessionQueryWords`]), as a command line or a URL's
//! query gives it, checked into a [`SessionQuery`]: one set of rules and messages for the
//! CLI's `sessions` and the server's `GET /sessions`.

use chrono::{DateTime, Utc};
use openharness_core::{SessionId, SessionStatus};
use serde::Deserialize;

use crate::{SessionQuery, SessionSort};

/// The filters of a session list as text, before they are checked. Field names are the
/// server's query parameters (`openRequest`, `forkOf`); the CLI fills the same fields from
/// its options.
///
/// ```
/// use openharness_core::SessionStatus;
/// use openharness_host::{SessionQueryWords, SessionSort};
/// let mut words = SessionQueryWords::default();
/// words.status = Some("waiting,failed".to_owned());
/// words.sort = Some("tokens".to_owned());
/// let query = words.into_query()?;
/// assert_eq!(query.status, [SessionStatus::Waiting, SessionStatus::Failed]);
/// assert_eq!(query.sort, SessionSort::Tokens);
/// # Ok::<(), openharness_host::SessionQueryError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionQueryWords {
    /// [`SessionQuery::search`].
    pub search: Option<String>,
    /// Statuses separated by commas ([`SessionQuery::status`]).
    pub status: Option<String>,
    /// [`SessionQuery::workflow`].
    pub workflow: Option<String>,
    /// [`SessionQuery::agent`].
    pub agent: Option<String>,
    /// [`SessionQuery::since`].
    pub since: Option<DateTime<Utc>>,
    /// [`SessionQuery::until`].
    pub until: Option<DateTime<Utc>>,
    /// [`SessionQuery::open_request`].
    pub open_request: Option<bool>,
    /// A session id ([`SessionQuery::fork_of`]).
    pub fork_of: Option<String>,
    /// [`SessionQuery::scorer`].
    pub scorer: Option<String>,
    /// [`SessionQuery::min_score`].
    pub min_score: Option<f64>,
    /// [`SessionQuery::max_score`].
    pub max_score: Option<f64>,
    /// [`SessionQuery::annotated`].
    pub annotated: Option<bool>,
    /// [`SessionQuery::label`].
    pub label: Option<String>,
    /// A [`SessionSort`] by name (`recent`, `tokens`…); the default sort when absent.
    pub sort: Option<String>,
    /// [`SessionQuery::after`]; empty is the first page, as absent is.
    pub after: Option<String>,
    /// [`SessionQuery::limit`], not checked here.
    pub limit: Option<usize>,
}

/// A word of a [`SessionQueryWords`] that does not say what it should.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionQueryError {
    /// A status that is not one.
    #[error("`{0}` is not a status: running, idle, waiting or failed")]
    Status(String),
    /// A sort that is not one (the message names the sorts).
    #[error("{0}")]
    Sort(String),
    /// A score bound or a score sort without the scorer it bounds.
    #[error("`{0}` needs `scorer`: the online scorer whose scores it reads")]
    NoScorer(&'static str),
    /// `forkOf` that is not a session id.
    #[error("`{id}` is not a session id: {message}")]
    ForkOf {
        /// The text given.
        id: String,
        /// Why it is not an id.
        message: String,
    },
}

impl SessionQueryWords {
    /// The query these words ask for, or the first word that says nothing a query can hold.
    pub fn into_query(self) -> Result<SessionQuery, SessionQueryError> {
        let mut query = SessionQuery::default();
        if let Some(statuses) = &self.status {
            query.status = SessionStatus::parse_list(statuses.split(','))
                .map_err(|word| SessionQueryError::Status(word.to_owned()))?;
        }
        if let Some(id) = self.fork_of {
            let parent = id
                .parse::<SessionId>()
                .map_err(|err| SessionQueryError::ForkOf {
                    message: err.to_string(),
                    id,
                })?;
            query.fork_of = Some(parent);
        }
        if let Some(sort) = self.sort {
            query.sort = sort
                .parse::<SessionSort>()
                .map_err(SessionQueryError::Sort)?;
        }
        let scorer = self.scorer.filter(|scorer| !scorer.trim().is_empty());
        if scorer.is_none() {
            if self.min_score.is_some() {
                return Err(SessionQueryError::NoScorer("minScore"));
            }
            if self.max_score.is_some() {
                return Err(SessionQueryError::NoScorer("maxScore"));
            }
            if matches!(query.sort, SessionSort::Score | SessionSort::LowestScore) {
                return Err(SessionQueryError::NoScorer("sort by score"));
            }
        }
        query.scorer = scorer;
        query.min_score = self.min_score;
        query.max_score = self.max_score;
        query.annotated = self.annotated;
        query.label = self.label.filter(|label| !label.trim().is_empty());
        query.search = self.search;
        query.workflow = self.workflow;
        query.agent = self.agent;
        query.since = self.since;
        query.until = self.until;
        query.open_request = self.open_request;
        query.after = self.after.filter(|after| !after.is_empty());
        query.limit = self.limit;
        Ok(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reaches_its_field() {
        let parent = SessionId::new();
        let words = SessionQueryWords {
            search: Some("lisbon".into()),
            status: Some("running,idle".into()),
            workflow: Some("trip".into()),
            agent: Some("planner".into()),
            since: Some(DateTime::UNIX_EPOCH),
            until: Some(DateTime::UNIX_EPOCH),
            open_request: Some(true),
            fork_of: Some(parent.to_string()),
            scorer: Some("helpful".into()),
            min_score: Some(0.5),
            max_score: Some(0.9),
            annotated: Some(false),
            label: Some("wrong-city".into()),
            sort: Some("cost".into()),
            after: Some(String::new()),
            limit: Some(5),
        };
        let query = words.into_query().expect("valid words");
        let expected = SessionQuery::default()
            .search("lisbon")
            .status([SessionStatus::Running, SessionStatus::Idle])
            .workflow("trip")
            .agent("planner")
            .since(DateTime::UNIX_EPOCH)
            .until(DateTime::UNIX_EPOCH)
            .open_request(true)
            .fork_of(parent)
            .scorer("helpful")
            .min_score(0.5)
            .max_score(0.9)
            .annotated(false)
            .label("wrong-city")
            .sort(SessionSort::Cost)
            .limit(5);
        assert_eq!(query, expected);
    }

    #[test]
    fn a_wrong_word_is_named() {
        let wrong = |edit: fn(&mut SessionQueryWords)| {
            let mut words = SessionQueryWords::default();
            edit(&mut words);
            words.into_query().expect_err("refused")
        };
        assert_eq!(
            wrong(|w| w.status = Some("idle,asleep".into())),
            SessionQueryError::Status("asleep".into())
        );
        assert!(
            wrong(|w| w.sort = Some("size".into()))
                .to_string()
                .contains("`size` is not a sort")
        );
        assert!(matches!(
            wrong(|w| w.fork_of = Some(String::new())),
            SessionQueryError::ForkOf { id, .. } if id.is_empty()
        ));
        assert_eq!(
            wrong(|w| w.min_score = Some(0.5)),
            SessionQueryError::NoScorer("minScore")
        );
        assert_eq!(
            wrong(|w| w.sort = Some("lowestScore".into())),
            SessionQueryError::NoScorer("sort by score")
        );
    }
}
