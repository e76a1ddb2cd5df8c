//! [`DatasetAdd`]: recorded sessions that match a query become cases of a dataset, each at a
//! position resolved now. Sessions evals made (experiments' runs, judges' verdicts) and forks
//! are left out as [`crate::Recordings`] leaves them out; sessions already in the dataset
//! are not added again; a session where the fork point is not (yet) is skipped and said so.

use std::collections::BTreeSet;
use std::fmt;

use chrono::{DateTime, Utc};
use openharness_core::{SessionId, SessionStatus};
use openharness_host::{Host, SessionQuery, SessionSort, SessionSummary};
use serde::Serialize;
use serde_json::Value;

use super::{Dataset, append, dataset_session};
use crate::case::ForkAt;
use crate::error::EvalError;
use crate::events::{DatasetCase, DatasetCasesAdded, DatasetQuery};
use crate::locate::{Found, position};
use crate::recordings::EvalMade;

/// An add to a dataset: which recorded sessions, where to fork each, with what answers.
///
/// ```
/// # async fn demo(host: &openharness_host::Host) -> Result<(), openharness_eval::EvalError> {
/// use openharness_core::SessionStatus;
/// use openharness_eval::{DatasetAdd, ForkAt};
/// let added = DatasetAdd::new("refunds", ForkAt::event("task:started", 2))
///     .search("refund")
///     .workflow("support")
///     .status([SessionStatus::Idle])
///     .limit(100)
///     .run(host)
///     .await?;
/// for skipped in &added.skipped {
///     println!("{} skipped: {}", skipped.session, skipped.reason);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DatasetAdd {
    name: String,
    at: ForkAt,
    query: DatasetQuery,
    answers: Vec<String>,
    inputs: Vec<String>,
}

impl DatasetAdd {
    /// Every recorded session, forked at `at`, into dataset `name`.
    pub fn new(name: impl Into<String>, at: ForkAt) -> Self {
        Self {
            name: name.into(),
            at,
            query: DatasetQuery::default(),
            answers: Vec::new(),
            inputs: Vec::new(),
        }
    }

    /// The sessions asked for, all at once.
    #[must_use]
    pub fn query(mut self, query: DatasetQuery) -> Self {
        self.query = query;
        self
    }

    /// Sessions whose id, title, workflow, agents or inputs contain `text` (any case), as
    /// the session list searches.
    #[must_use]
    pub fn search(mut self, text: impl Into<String>) -> Self {
        self.query.search = Some(text.into());
        self
    }

    /// Sessions of `workflow` only.
    #[must_use]
    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.query.workflow = Some(workflow.into());
        self
    }

    /// Sessions with one of `statuses` only.
    #[must_use]
    pub fn status(mut self, statuses: impl IntoIterator<Item = SessionStatus>) -> Self {
        self.query.status = statuses.into_iter().collect();
        self
    }

    /// Sessions that ran `agent` only.
    #[must_use]
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.query.agent = Some(agent.into());
        self
    }

    /// Sessions active at or after `time` only.
    #[must_use]
    pub fn since(mut self, time: DateTime<Utc>) -> Self {
        self.query.since = Some(time);
        self
    }

    /// Sessions started at or before `time` only.
    #[must_use]
    pub fn until(mut self, time: DateTime<Utc>) -> Self {
        self.query.until = Some(time);
        self
    }

    /// At most the `limit` newest matching sessions (runs and forks left out first).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.query.limit = Some(limit);
        self
    }

    /// Answers for the cases' runs' questions, in order.
    #[must_use]
    pub fn answers(mut self, answers: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.answers = answers.into_iter().map(Into::into).collect();
        self
    }

    /// Inputs for the cases' runs after the fork's first turn, each a later turn.
    #[must_use]
    pub fn inputs(mut self, inputs: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.inputs = inputs.into_iter().map(Into::into).collect();
        self
    }

    /// Adds the matching sessions not in the dataset yet, in one `dataset:cases-added` (none
    /// when nothing is new: adding twice adds nothing and says so), oldest first.
    pub async fn run(&self, host: &Host) -> Result<Added, EvalError> {
        let session = dataset_session(&self.name)?;
        let store = host.store().as_ref();
        let events = store.all_events(&session).await?;
        let len = events.len() as u64;
        let present: BTreeSet<SessionId> = if events.is_empty() {
            BTreeSet::new()
        } else {
            Dataset::fold(&self.name, &events, None)?
                .cases
                .into_iter()
                .map(|case| case.session)
                .collect()
        };
        let made = EvalMade::load(store).await?;
        let mut found: Vec<SessionSummary> = host
            .query_sessions(&self.session_query())
            .await?
            .sessions
            .into_iter()
            .filter(|s| made.is_recording(s))
            .collect();
        if let Some(limit) = self.query.limit {
            let skip = found.len().saturating_sub(limit);
            found.drain(..skip);
        }

        let mut added = Added {
            dataset: self.name.clone(),
            added: Vec::new(),
            present: Vec::new(),
            skipped: Vec::new(),
            version: len,
        };
        for summary in found {
            if present.contains(&summary.id) {
                added.present.push(summary.id);
                continue;
            }
            match self.case_of(host, &summary).await? {
                Ok(case) => added.added.push(case),
                Err(reason) => added.skipped.push(Skipped {
                    why: reason.to_string(),
                    session: summary.id,
                    reason,
                }),
            }
        }
        if !added.added.is_empty() {
            let event = DatasetCasesAdded {
                query: self.query.clone(),
                at: self.at.to_string(),
                cases: added.added.clone(),
            };
            append(store, &self.name, &session, &event, len).await?;
            added.version = len + 1;
        }
        Ok(added)
    }

    /// The session list's query for these words: every match, oldest first.
    fn session_query(&self) -> SessionQuery {
        let query = &self.query;
        let mut asked = SessionQuery::default()
            .status(query.status.iter().copied())
            .sort(SessionSort::Oldest);
        if let Some(search) = &query.search {
            asked = asked.search(search.clone());
        }
        if let Some(workflow) = &query.workflow {
            asked = asked.workflow(workflow.clone());
        }
        if let Some(agent) = &query.agent {
            asked = asked.agent(agent.clone());
        }
        if let Some(since) = query.since {
            asked = asked.since(since);
        }
        if let Some(until) = query.until {
            asked = asked.until(until);
        }
        asked
    }

    /// The case `summary`'s session makes, or why it makes none.
    async fn case_of(
        &self,
        host: &Host,
        summary: &SessionSummary,
    ) -> Result<Result<DatasetCase, SkipReason>, EvalError> {
        if !summary.hosted {
            return Ok(Err(SkipReason::Unhosted {
                workflow: summary.workflow.clone(),
            }));
        }
        if let Some(why) = &summary.damaged {
            return Ok(Err(SkipReason::Damaged { why: why.clone() }));
        }
        let owner = host.workflow_of(&summary.id).await?;
        let found = position(
            owner.as_ref(),
            host.store().as_ref(),
            &self.at,
            &summary.id,
            summary.len,
        )
        .await?;
        let position = match found {
            Found::At(position) => position,
            Found::Beyond { position, len } => {
                return Ok(Err(SkipReason::PastTheEnd { position, len }));
            }
            Found::Nowhere => {
                return Ok(Err(SkipReason::NoForkPoint {
                    at: self.at.to_string(),
                    missing: missing(&self.at),
                }));
            }
        };
        Ok(Ok(DatasetCase {
            id: summary.id.to_string(),
            session: summary.id.clone(),
            position,
            workflow: summary.workflow.clone(),
            title: summary.title.clone(),
            answers: self.answers.clone(),
            inputs: self.inputs.clone(),
            expected: Value::Null,
            metadata: Value::Null,
        }))
    }
}

/// What a session without the fork point `at` lacks, in words.
fn missing(at: &ForkAt) -> String {
    match at {
        ForkAt::Event { event, n } => format!("no `{event}` #{n}"),
        ForkAt::Phase {
            phase,
            occurrence,
            field,
        } => format!("no {occurrence} entry of `{field}` into {phase}"),
        ForkAt::State(_) => "no state the predicate holds for".to_owned(),
        ForkAt::Position { position } => format!("no position {position}"),
    }
}

/// What [`DatasetAdd::run`] did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Added {
    /// The dataset.
    pub dataset: String,
    /// The cases added, oldest session first.
    pub added: Vec<DatasetCase>,
    /// Matching sessions the dataset holds already (not added again).
    pub present: Vec<SessionId>,
    /// Matching sessions that make no case, and why.
    pub skipped: Vec<Skipped>,
    /// The dataset's version now (unchanged when nothing was added; 0 when it has no log).
    pub version: u64,
}

/// A matching session that makes no case.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// The session.
    pub session: SessionId,
    /// Why, as data.
    pub reason: SkipReason,
    /// Why, in words.
    pub why: String,
}

/// Why a matching session makes no case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum SkipReason {
    /// The fork point is not in it (not yet, perhaps: a later add may find it).
    NoForkPoint {
        /// The fork point asked, as text.
        at: String,
        /// What the session lacks, in words (`` no `task:started` #2 ``).
        missing: String,
    },
    /// The position asked is past its end.
    PastTheEnd {
        /// The position asked.
        position: u64,
        /// Its length.
        len: u64,
    },
    /// Its workflow is not registered in this host, so its states cannot be derived nor its
    /// runs forked here.
    Unhosted {
        /// Its workflow, when it names one.
        workflow: Option<String>,
    },
    /// Its events cannot all be read.
    Damaged {
        /// Why.
        why: String,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoForkPoint { missing, .. } => write!(f, "{missing} in it"),
            Self::PastTheEnd { position, len } => {
                write!(f, "position {position} is past its end ({len} events)")
            }
            Self::Unhosted {
                workflow: Some(workflow),
            } => write!(f, "its workflow `{workflow}` is not registered here"),
            Self::Unhosted { workflow: None } => f.write_str("it names no workflow"),
            Self::Damaged { why } => write!(f, "its events cannot all be read: {why}"),
        }
    }
}
