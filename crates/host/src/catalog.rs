//! [`Host::query_sessions`]: the session list of a team's store — searched, filtered, sorted
//! and paged on the host, never by reading every session's events again.
//!
//! The host keeps a digest of each session (its title, the agents it ran, tokens, cost, open
//! requests, the text of its inputs) together with how many of its events the digest covers.
//! A query lists the store's sessions (one metadata row each), reads only the events a digest
//! does not cover yet (all of them the first time, then what was appended since), and answers
//! from the digests.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use openharness_core::builtin::{
    AgentCompleted, AgentStarted, Builtin, InputReceived, InputRequested, UserInput,
};
use openharness_core::{
    Envelope, Event, EventId, SessionId, SessionInfo, SessionStatus, adapter::Usage,
};
use serde::{Deserialize, Serialize};

use crate::Host;
use crate::error::HostError;
use crate::feedback::{self, AnnotationAdded, Thumbs, TurnScored};
use crate::wire::{AnnotationSummary, SessionSummary};

/// How many characters of a session's first input make its title.
const TITLE_CHARS: usize = 100;
/// How much input text of a session a search looks through (bytes, lowercased).
const SEARCH_TEXT: usize = 8 * 1024;
/// How many agent names a digest keeps.
const AGENTS: usize = 32;
/// How many distinct annotation labels a digest keeps.
const LABELS: usize = 64;
/// How many sessions' new events are read at once.
const READS: usize = 8;
/// The largest page [`SessionQuery::limit`] gives.
pub const MAX_SESSIONS_PAGE: usize = 1_000;

/// What a session list asks for: every filter is optional and they combine (all must hold).
///
/// ```
/// use openharness_core::SessionStatus;
/// use openharness_host::{SessionQuery, SessionSort};
/// let query = SessionQuery::default()
///     .search("lisbon")
///     .status([SessionStatus::Waiting, SessionStatus::Failed])
///     .sort(SessionSort::Tokens)
///     .limit(50);
/// # let _ = query;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SessionQuery {
    /// Case-insensitive text found in the id, title, workflow, an agent's name or an input.
    pub search: Option<String>,
    /// Any of these statuses (all when empty).
    pub status: Vec<SessionStatus>,
    /// Owned by this workflow (a fork by its root's).
    pub workflow: Option<String>,
    /// Ran this agent.
    pub agent: Option<String>,
    /// Active at or after this time (its last event).
    pub since: Option<DateTime<Utc>>,
    /// Started at or before this time (its first event).
    pub until: Option<DateTime<Utc>>,
    /// With (`true`) or without (`false`) an `input:requested` still unanswered.
    pub open_request: Option<bool>,
    /// Forked from this session (its direct forks).
    pub fork_of: Option<SessionId>,
    /// Scored by this online scorer ([`crate::feedback::TurnScored`]); with
    /// [`SessionQuery::min_score`] and [`SessionQuery::max_score`], its latest score within
    /// them; the scorer [`SessionSort::Score`] orders by.
    pub scorer: Option<String>,
    /// The scorer's latest score at least this.
    pub min_score: Option<f64>,
    /// The scorer's latest score at most this.
    pub max_score: Option<f64>,
    /// Annotated by a person (`true`) or not yet (`false`): an annotation queue.
    pub annotated: Option<bool>,
    /// Annotated with this label.
    pub label: Option<String>,
    /// The order.
    pub sort: SessionSort,
    /// The cursor a previous page gave ([`SessionsPage::next_after`]).
    pub after: Option<String>,
    /// At most this many sessions (all when `None`; capped at [`MAX_SESSIONS_PAGE`]).
    pub limit: Option<usize>,
}

impl SessionQuery {
    /// Sessions whose id, title, workflow, agents or inputs contain `text` (any case).
    pub fn search(mut self, text: impl Into<String>) -> Self {
        self.search = Some(text.into());
        self
    }
    /// Sessions with any of these statuses.
    pub fn status(mut self, statuses: impl IntoIterator<Item = SessionStatus>) -> Self {
        self.status = statuses.into_iter().collect();
        self
    }
    /// Sessions owned by `workflow`.
    pub fn workflow(mut self, workflow: impl Into<String>) -> Self {
        self.workflow = Some(workflow.into());
        self
    }
    /// Sessions that ran `agent`.
    pub fn agent(mut self, agent: impl Into<String>) -> Self {
        self.agent = Some(agent.into());
        self
    }
    /// Sessions active at or after `time`.
    pub fn since(mut self, time: DateTime<Utc>) -> Self {
        self.since = Some(time);
        self
    }
    /// Sessions started at or before `time`.
    pub fn until(mut self, time: DateTime<Utc>) -> Self {
        self.until = Some(time);
        self
    }
    /// Sessions with (or without) an open request.
    pub fn open_request(mut self, open: bool) -> Self {
        self.open_request = Some(open);
        self
    }
    /// The direct forks of `parent`.
    pub fn fork_of(mut self, parent: SessionId) -> Self {
        self.fork_of = Some(parent);
        self
    }
    /// Sessions scored by `scorer` (and ordered by it with [`SessionSort::Score`]).
    pub fn scorer(mut self, scorer: impl Into<String>) -> Self {
        self.scorer = Some(scorer.into());
        self
    }
    /// Sessions whose scorer's latest score is at least `min`.
    pub fn min_score(mut self, min: f64) -> Self {
        self.min_score = Some(min);
        self
    }
    /// Sessions whose scorer's latest score is at most `max`.
    pub fn max_score(mut self, max: f64) -> Self {
        self.max_score = Some(max);
        self
    }
    /// Sessions a person annotated (`true`), or none did yet (`false`).
    pub fn annotated(mut self, annotated: bool) -> Self {
        self.annotated = Some(annotated);
        self
    }
    /// Sessions annotated with `label`.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
    /// The order.
    pub fn sort(mut self, sort: SessionSort) -> Self {
        self.sort = sort;
        self
    }
    /// The page after the cursor `after`.
    pub fn after(mut self, after: impl Into<String>) -> Self {
        self.after = Some(after.into());
        self
    }
    /// At most `limit` sessions.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }
}

/// The order of a session list.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum SessionSort {
    /// The most recently active first (by last event).
    #[default]
    Recent,
    /// The most recently started first.
    Newest,
    /// The first started first.
    Oldest,
    /// The most events first.
    Longest,
    /// The most tokens (input + output) first.
    Tokens,
    /// The costliest first.
    Cost,
    /// The highest latest score of [`SessionQuery::scorer`] first (which lists only the
    /// sessions it scored).
    Score,
    /// The lowest latest score of [`SessionQuery::scorer`] first: what to look at first.
    LowestScore,
}

impl std::str::FromStr for SessionSort {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "recent" => Ok(Self::Recent),
            "newest" => Ok(Self::Newest),
            "oldest" => Ok(Self::Oldest),
            "longest" => Ok(Self::Longest),
            "tokens" => Ok(Self::Tokens),
            "cost" => Ok(Self::Cost),
            "score" => Ok(Self::Score),
            "lowestScore" => Ok(Self::LowestScore),
            other => Err(format!(
                "`{other}` is not a sort: recent, newest, oldest, longest, tokens, cost, score or lowestScore"
            )),
        }
    }
}

/// A page of a session list ([`Host::query_sessions`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionsPage {
    /// The sessions, in the order asked.
    pub sessions: Vec<SessionSummary>,
    /// How many sessions match, over all pages.
    pub total: u64,
    /// The cursor of the next page, when there is one.
    pub next_after: Option<String>,
}

/// What a session's events say about it, beyond the store's metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Digest {
    /// Its first input, cut to [`TITLE_CHARS`].
    pub(crate) title: Option<String>,
    /// The agents it ran, in the order first seen.
    pub(crate) agents: Vec<String>,
    /// Tokens its agents used.
    pub(crate) usage: Usage,
    /// What its agents reported costing.
    pub(crate) cost: f64,
    /// `input:requested` events not answered yet.
    open: Vec<EventId>,
    /// Its inputs, lowercased, up to [`SEARCH_TEXT`] bytes.
    text: String,
    /// Why its events could not all be read, when they could not.
    pub(crate) damaged: Option<String>,
    /// For a feedback log: each online scorer's latest value (of the latest turn it scored).
    scores: std::collections::BTreeMap<String, f64>,
    /// For a feedback log: the turn each scorer's value in `scores` is of.
    scored_turns: std::collections::BTreeMap<String, u64>,
    /// For a feedback log: how many annotations.
    annotations: u64,
    /// For a feedback log: each person's latest thumb.
    thumbs: std::collections::BTreeMap<String, Thumbs>,
    /// For a feedback log: the labels given, in the order first seen.
    labels: Vec<String>,
}

impl Digest {
    fn absorb(&mut self, event: &Envelope) {
        let known = [
            UserInput::NAME,
            AgentStarted::NAME,
            AgentCompleted::NAME,
            InputRequested::NAME,
            InputReceived::NAME,
        ];
        if !known.contains(&event.name.as_ref()) {
            self.absorb_feedback(event);
            return;
        }
        match Builtin::decode(event) {
            Some(Ok(Builtin::UserInput(input))) => {
                if self.title.is_none() {
                    let line = input.text.lines().find(|l| !l.trim().is_empty());
                    self.title = line.map(|l| l.trim().chars().take(TITLE_CHARS).collect());
                }
                self.remember(&input.text);
            }
            Some(Ok(Builtin::AgentStarted(started)))
                if self.agents.len() < AGENTS && !self.agents.contains(&started.agent) =>
            {
                self.agents.push(started.agent);
            }
            Some(Ok(Builtin::AgentCompleted(completed))) => {
                self.usage += completed.usage;
                self.cost += completed.cost.unwrap_or(0.0);
            }
            Some(Ok(Builtin::InputRequested(_))) => self.open.push(event.id),
            Some(Ok(Builtin::InputReceived(received))) => {
                self.open.retain(|id| *id != received.request_id);
                self.remember(&received.text);
            }
            _ => {}
        }
    }

    /// A feedback log's event ([`feedback`]): an annotation or an online score.
    fn absorb_feedback(&mut self, event: &Envelope) {
        match event.name.as_ref() {
            AnnotationAdded::NAME => {
                let Ok(added) = event.decode::<AnnotationAdded>() else {
                    return;
                };
                self.annotations += 1;
                if let Some(thumbs) = added.thumbs {
                    self.thumbs.insert(added.by, thumbs);
                }
                for label in added.labels {
                    if self.labels.len() < LABELS && !self.labels.contains(&label) {
                        self.labels.push(label);
                    }
                }
            }
            TurnScored::NAME => {
                // The latest turn's score, whatever order the scores were recorded in:
                // scorers score turns concurrently, so a later turn's may come first.
                if let Ok(TurnScored {
                    scorer,
                    turn,
                    value: Some(value),
                    ..
                }) = event.decode::<TurnScored>()
                    && self
                        .scored_turns
                        .get(&scorer)
                        .is_none_or(|seen| *seen <= turn)
                {
                    self.scored_turns.insert(scorer.clone(), turn);
                    self.scores.insert(scorer, value);
                }
            }
            _ => {}
        }
    }

    /// A feedback log's digest, as its session's summary shows it.
    fn annotation_summary(&self) -> Option<AnnotationSummary> {
        (self.annotations > 0).then(|| AnnotationSummary {
            count: self.annotations,
            up: self.thumbs.values().filter(|t| **t == Thumbs::Up).count() as u64,
            down: self.thumbs.values().filter(|t| **t == Thumbs::Down).count() as u64,
            labels: self.labels.clone(),
        })
    }

    fn remember(&mut self, text: &str) {
        let room = SEARCH_TEXT.saturating_sub(self.text.len());
        if room == 0 {
            return;
        }
        let mut kept: String = text.to_lowercase();
        if kept.len() > room {
            let mut cut = room;
            while !kept.is_char_boundary(cut) {
                cut -= 1;
            }
            kept.truncate(cut);
        }
        self.text.push('\n');
        self.text.push_str(&kept);
    }

    /// How many requests are open.
    pub(crate) fn open_requests(&self) -> u64 {
        self.open.len() as u64
    }
}

/// A digest and how many of the session's events it covers.
#[derive(Debug, Clone, Default)]
struct Entry {
    covered: u64,
    digest: Digest,
}

/// The digests a host keeps, by session.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    entries: Mutex<HashMap<SessionId, Entry>>,
}

impl Catalog {
    fn covered(&self, session: &SessionId) -> u64 {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .map_or(0, |entry| entry.covered)
    }

    fn digest(&self, session: &SessionId) -> Option<Digest> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .map(|entry| entry.digest.clone())
    }
}

impl Host {
    /// Brings the digests of `infos` up to date, reading only the events they do not cover.
    async fn refresh(&self, infos: &[SessionInfo]) -> Result<(), HostError> {
        let stale: Vec<(SessionId, u64, u64)> = infos
            .iter()
            .filter_map(|info| {
                let covered = self.catalog.covered(&info.id);
                // A cleared (shorter) session is read again from its start.
                let from = if covered > info.count { 0 } else { covered };
                (from < info.count || covered > info.count)
                    .then(|| (info.id.clone(), from, info.count))
            })
            .collect();
        let mut reads = futures_util::stream::iter(stale)
            .map(|(session, from, to)| async move {
                let mut digest = match from {
                    0 => Digest::default(),
                    _ => self.catalog.digest(&session).unwrap_or_default(),
                };
                digest.damaged = None;
                let mut events = self.store.stream_events(&session, from..to);
                let mut read = from;
                while let Some(recorded) = events.next().await {
                    let recorded = match recorded {
                        Ok(recorded) => recorded,
                        Err(err) => {
                            return Err((session, HostError::store(self.store.as_ref(), err)));
                        }
                    };
                    digest.absorb(&recorded.event);
                    read = recorded.seq + 1;
                }
                Ok((session, from, read, digest))
            })
            .buffer_unordered(READS);
        while let Some(read) = reads.next().await {
            // One damaged session is marked, not the list failed: the others read fine.
            let (session, from, read, digest) = match read {
                Ok(read) => read,
                Err((session, err)) => {
                    let why = openharness_core::adapter::ErrorChain(&err).to_string();
                    tracing::warn!(%session, error = %why, "a session's events cannot all be read; it is listed as damaged");
                    let mut entries = self
                        .catalog
                        .entries
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    entries.entry(session).or_default().digest.damaged = Some(why);
                    continue;
                }
            };
            let mut entries = self
                .catalog
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let entry = entries.entry(session).or_default();
            // Another query may have read the same events meanwhile: keep the further one.
            if from == 0 || entry.covered == from {
                entry.covered = read;
                entry.digest = digest;
            }
        }
        Ok(())
    }

    /// The sessions `query` asks for, a page at a time, each with its title (its first
    /// input), the agents it ran, tokens, cost and open requests. The first query reads every
    /// session once; later ones read only what was appended since.
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host) -> Result<(), openharness_host::HostError> {
    /// use openharness_host::SessionQuery;
    /// let page = host.query_sessions(&SessionQuery::default().search("lisbon").limit(20)).await?;
    /// for session in &page.sessions {
    ///     println!("{} {}", session.id, session.title.as_deref().unwrap_or("(untitled)"));
    /// }
    /// if let Some(cursor) = page.next_after {
    ///     let _next = host.query_sessions(&SessionQuery::default().search("lisbon").after(cursor)).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn query_sessions(&self, query: &SessionQuery) -> Result<SessionsPage, HostError> {
        let infos = self.store.sessions().await.map_err(self.store_error())?;
        // Feedback logs are read for every session only when the query filters or sorts by
        // what they say; otherwise only the page's are (a store where every session was
        // annotated reads its first page as fast as one where none was).
        let (said, infos): (Vec<SessionInfo>, Vec<SessionInfo>) = infos
            .into_iter()
            .partition(|info| info.id.as_str().starts_with(feedback::FEEDBACK_PREFIX));
        let by_feedback = query.scorer.is_some()
            || query.annotated.is_some()
            || query.label.is_some()
            || matches!(query.sort, SessionSort::Score | SessionSort::LowestScore);
        self.refresh(&infos).await?;
        if by_feedback {
            self.refresh(&said).await?;
        }
        let after = query.after.as_deref().map(Cursor::parse).transpose()?;
        let mut rows: Vec<(Cursor, SessionSummary)> = self
            .summaries(&infos)
            .into_iter()
            .filter_map(|mut summary| {
                // One copy of the digest per session: filled in, then searched.
                let digest = self.catalog.digest(&summary.id);
                if let Some(digest) = &digest {
                    summary.absorb_digest(digest);
                }
                if by_feedback {
                    self.fill_feedback(&mut summary);
                }
                matches(&summary, query, digest).then_some(summary)
            })
            .map(|summary| (Cursor::of(&summary, query), summary))
            .collect();
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let total = rows.len() as u64;
        let start = after.map_or(0, |after| rows.partition_point(|(key, _)| *key <= after));
        let limit = query
            .limit
            .map_or(usize::MAX, |limit| limit.clamp(1, MAX_SESSIONS_PAGE));
        let end = start.saturating_add(limit).min(rows.len());
        let next_after = (end < rows.len() && end > start)
            .then(|| rows.get(end - 1).map(|(key, _)| key.render()))
            .flatten();
        let mut sessions: Vec<SessionSummary> = rows
            .drain(start.min(end)..end)
            .map(|(_, summary)| summary)
            .collect();
        if !by_feedback {
            // The page's sessions' feedback, brought up to date.
            let logs: std::collections::HashSet<SessionId> = sessions
                .iter()
                .filter_map(|summary| feedback::feedback_log(&summary.id).ok())
                .collect();
            let page_said: Vec<SessionInfo> = said
                .into_iter()
                .filter(|info| logs.contains(&info.id))
                .collect();
            self.refresh(&page_said).await?;
            for summary in &mut sessions {
                self.fill_feedback(summary);
            }
        }
        Ok(SessionsPage {
            sessions,
            total,
            next_after,
        })
    }

    /// Fills `summary` with what its feedback log's digest says (nothing when it has none).
    fn fill_feedback(&self, summary: &mut SessionSummary) {
        if let Some(said) = feedback::feedback_log(&summary.id)
            .ok()
            .and_then(|log| self.catalog.digest(&log))
        {
            summary.absorb_feedback(&said);
        }
    }

    /// One session's digest, brought up to date.
    pub(crate) async fn digest_of(&self, info: &SessionInfo) -> Result<Digest, HostError> {
        self.refresh(std::slice::from_ref(info)).await?;
        Ok(self.catalog.digest(&info.id).unwrap_or_default())
    }

    /// The digest of one session's feedback log, brought up to date (`None` when nobody
    /// annotated or scored it).
    pub(crate) async fn feedback_digest_of(
        &self,
        session: &SessionId,
    ) -> Result<Option<Digest>, HostError> {
        let Ok(log) = feedback::feedback_log(session) else {
            return Ok(None);
        };
        let Some(info) = self.store.session(&log).await.map_err(self.store_error())? else {
            return Ok(None);
        };
        self.refresh(std::slice::from_ref(&info)).await?;
        Ok(self.catalog.digest(&log))
    }
}

/// Whether `summary` (with its digest) passes every filter of `query`.
fn matches(summary: &SessionSummary, query: &SessionQuery, digest: Option<Digest>) -> bool {
    if !query.status.is_empty() && !query.status.contains(&summary.status) {
        return false;
    }
    if query
        .workflow
        .as_ref()
        .is_some_and(|w| summary.workflow.as_ref() != Some(w))
    {
        return false;
    }
    if query
        .agent
        .as_ref()
        .is_some_and(|a| !summary.agents.contains(a))
    {
        return false;
    }
    if query.since.is_some_and(|since| summary.last_event < since)
        || query.until.is_some_and(|until| summary.created > until)
    {
        return false;
    }
    if query
        .open_request
        .is_some_and(|open| (summary.open_requests > 0) != open)
    {
        return false;
    }
    if query
        .fork_of
        .as_ref()
        .is_some_and(|parent| summary.parent.as_ref() != Some(parent))
    {
        return false;
    }
    if let Some(scorer) = &query.scorer {
        let Some(score) = summary.scores.get(scorer) else {
            return false;
        };
        if query.min_score.is_some_and(|min| *score < min)
            || query.max_score.is_some_and(|max| *score > max)
        {
            return false;
        }
    }
    if query
        .annotated
        .is_some_and(|annotated| summary.annotations.is_some() != annotated)
    {
        return false;
    }
    if let Some(label) = &query.label
        && !summary
            .annotations
            .as_ref()
            .is_some_and(|said| said.labels.contains(label))
    {
        return false;
    }
    match &query.search {
        Some(text) if !text.trim().is_empty() => {
            let needle = text.trim().to_lowercase();
            let found = |hay: &str| hay.to_lowercase().contains(&needle);
            summary.id.as_str().contains(&needle)
                || summary.title.as_deref().is_some_and(found)
                || summary.workflow.as_deref().is_some_and(found)
                || summary.agents.iter().any(|a| found(a))
                || digest.is_some_and(|d| d.text.contains(&needle))
        }
        _ => true,
    }
}

/// Where a session stands in an order: a key that sorts ascending, then its id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Cursor {
    key: i128,
    id: String,
}

impl Cursor {
    fn of(summary: &SessionSummary, query: &SessionQuery) -> Self {
        let millis = |time: DateTime<Utc>| i128::from(time.timestamp_millis());
        // Billionths: fine enough to order scores by; unscored sessions go last.
        let score = || {
            query
                .scorer
                .as_ref()
                .and_then(|scorer| summary.scores.get(scorer))
                .map(|value| (value * 1e9).round() as i128)
        };
        let key = match query.sort {
            SessionSort::Recent => -millis(summary.last_event),
            SessionSort::Newest => -millis(summary.created),
            SessionSort::Oldest => millis(summary.created),
            SessionSort::Longest => -i128::from(summary.len),
            SessionSort::Tokens => {
                -i128::from(summary.usage.input_tokens + summary.usage.output_tokens)
            }
            // Micro-dollars: fine enough to order by, exact to compare.
            SessionSort::Cost => -((summary.cost * 1e6).round() as i128),
            SessionSort::Score => score().map_or(i128::MAX, |score| -score),
            SessionSort::LowestScore => score().unwrap_or(i128::MAX),
        };
        Self {
            key,
            id: summary.id.as_str().to_owned(),
        }
    }

    fn render(&self) -> String {
        format!("{}~{}", self.key, self.id)
    }

    fn parse(text: &str) -> Result<Self, HostError> {
        let bad = || HostError::BadCursor(text.to_owned());
        let (key, id) = text.split_once('~').ok_or_else(bad)?;
        Ok(Self {
            key: key.parse().map_err(|_| bad())?,
            id: id.to_owned(),
        })
    }
}

impl SessionSummary {
    fn absorb_digest(&mut self, digest: &Digest) {
        self.title.clone_from(&digest.title);
        self.agents.clone_from(&digest.agents);
        self.usage = digest.usage;
        self.cost = digest.cost;
        self.open_requests = digest.open_requests();
        self.damaged.clone_from(&digest.damaged);
    }

    /// What its feedback log says: online scores, annotations.
    fn absorb_feedback(&mut self, said: &Digest) {
        self.scores.clone_from(&said.scores);
        self.annotations = said.annotation_summary();
    }
}

/// A session's digest (and its feedback log's) as the wire shows it: filled into a summary.
pub(crate) fn with_digest(
    mut summary: SessionSummary,
    digest: &Digest,
    feedback: Option<&Digest>,
) -> SessionSummary {
    summary.absorb_digest(digest);
    if let Some(said) = feedback {
        summary.absorb_feedback(said);
    }
    summary
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_reads_title_agents_usage_and_open_requests() {
        let mut digest = Digest::default();
        let input = Envelope::typed(
            &UserInput::new("\n  Plan a trip to Lisbon\nwith museums"),
            None,
        )
        .unwrap();
        digest.absorb(&input);
        assert_eq!(digest.title.as_deref(), Some("Plan a trip to Lisbon"));
        assert!(digest.text.contains("museums"));
        let asked = Envelope::typed(&InputRequested::new("ok?"), None).unwrap();
        digest.absorb(&asked);
        assert_eq!(digest.open_requests(), 1);
        let answered = Envelope::new(
            "input:received",
            serde_json::json!({ "requestId": asked.id, "text": "Yes" }),
            None,
        );
        digest.absorb(&answered);
        assert_eq!(digest.open_requests(), 0);
        assert!(digest.text.contains("yes"));
    }

    #[test]
    fn cursors_round_trip_and_bad_ones_are_refused() {
        let cursor = Cursor {
            key: -42,
            id: "abc".into(),
        };
        assert_eq!(Cursor::parse(&cursor.render()).unwrap(), cursor);
        assert!(matches!(
            Cursor::parse("nonsense"),
            Err(HostError::BadCursor(_))
        ));
    }
}
