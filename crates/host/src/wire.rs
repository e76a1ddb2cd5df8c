//! The host's answers as the wire carries them (camelCase JSON): how a turn ended, a session
//! with its lineage and status, a page of events, a tape view, states at positions; and the
//! two encoders every workflow handle and prepared fork share (`outcome`, `encode`).

use chrono::{DateTime, Utc};
use openharness_core::{
    EventId, RunOutcome, SessionId, SessionInfo, SessionStatus, StopReason, WorkflowState,
    adapter::{Recorded, Usage},
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::HostError;

/// How a turn (or a new session's first run, or a fork's) ended, with the state as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TurnOutcome {
    /// The session.
    pub session: SessionId,
    /// Why the turn ended.
    pub reason: StopReason,
    /// The session's length after the turn.
    pub len: u64,
    /// The seq of the turn's first event.
    pub first_seq: u64,
    /// `input:requested` events still open.
    pub open_requests: Vec<EventId>,
    /// `error:occurred` events the turn recorded.
    pub errors: u64,
    /// Tokens the turn's agents used.
    pub usage: Usage,
    /// What the turn's agents reported costing, in US dollars.
    pub cost: f64,
    /// The state after the turn.
    pub state: Value,
    /// Inputs queued during the turn (or before it) and not answered yet: the next turns
    /// answer them, one each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queued: Vec<openharness_core::builtin::QueuedRef>,
}

impl TurnOutcome {
    pub(crate) fn of<S: Serialize>(outcome: RunOutcome<S>) -> Result<Self, serde_json::Error> {
        Ok(Self {
            state: serde_json::to_value(&outcome.state)?,
            session: outcome.session,
            reason: outcome.reason,
            len: outcome.len,
            first_seq: outcome.first_seq,
            open_requests: outcome.open_requests,
            errors: outcome.errors,
            usage: outcome.usage,
            cost: outcome.cost,
            queued: outcome.queued,
        })
    }
}

/// A session as a host lists it: the store's metadata, the workflow that owns it (a fork's is
/// its root's) and whether this host can fold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SessionSummary {
    /// The session.
    pub id: SessionId,
    /// The workflow that recorded it; for a fork, the workflow of the session it descends from.
    pub workflow: Option<String>,
    /// The session it was forked from.
    pub parent: Option<SessionId>,
    /// What it is doing.
    pub status: SessionStatus,
    /// Its length.
    pub len: u64,
    /// When its first event was recorded.
    pub created: DateTime<Utc>,
    /// When its last event was recorded.
    pub last_event: DateTime<Utc>,
    /// Whether a registered workflow can fold it (states, tape, fork, turns).
    pub hosted: bool,
    /// Its first input, cut to 100 characters (`None` before any input).
    #[serde(default)]
    pub title: Option<String>,
    /// The agents it ran, in the order first seen.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Tokens its agents used.
    #[serde(default)]
    pub usage: Usage,
    /// What its agents reported costing, in US dollars.
    #[serde(default)]
    pub cost: f64,
    /// How many `input:requested` wait for an answer.
    #[serde(default)]
    pub open_requests: u64,
    /// Why its events could not all be read (one missing or unreadable): what this summary
    /// says of its events comes from those read before it; the session's other reads fail
    /// the same way. Absent for a healthy session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damaged: Option<String>,
    /// Its online scores: each scorer's latest score of its turns (see
    /// [`crate::feedback::TurnScored`]). Absent when no scorer scored it.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub scores: std::collections::BTreeMap<String, f64>,
    /// What people said of it ([`crate::feedback::AnnotationAdded`]). Absent when nobody
    /// annotated it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<AnnotationSummary>,
}

/// The annotations of a session, summed up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AnnotationSummary {
    /// How many annotations.
    pub count: u64,
    /// People whose latest thumb is up.
    pub up: u64,
    /// People whose latest thumb is down.
    pub down: u64,
    /// The labels given, in the order first seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

impl SessionSummary {
    pub(crate) fn of(info: SessionInfo, workflow: Option<String>, hosted: bool) -> Self {
        Self {
            id: info.id,
            workflow,
            parent: info.parent,
            status: info.status,
            len: info.count,
            created: info.created,
            last_event: info.last_event,
            hosted,
            title: None,
            agents: Vec::new(),
            usage: Usage::default(),
            cost: 0.0,
            open_requests: 0,
            damaged: None,
            scores: std::collections::BTreeMap::new(),
            annotations: None,
        }
    }
}

/// A page of a session's events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct EventsPage {
    /// The events, in order, with their seqs.
    pub events: Vec<Recorded>,
    /// The session's length when the page was read.
    pub len: u64,
    /// The `after` to ask for the next page, when there are more events.
    pub next_after: Option<u64>,
}

/// A session at one position: the event that led there and the state there.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "TapeView")]
#[non_exhaustive]
pub struct PositionView {
    /// The position (clamped to `0..=len`).
    pub position: u64,
    /// The session's length.
    pub len: u64,
    /// The event at seq `position - 1` (none at position 0).
    pub current: Option<Recorded>,
    /// The state at `position`.
    pub state: Value,
    /// What folding the session skipped: events of names the workflow does not know and
    /// events whose payload no longer decodes (the state diverges from the recorded run's
    /// there), counted, with the seqs of the first ones.
    pub skipped: openharness_core::adapter::Skipped,
}

/// The state at one position.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StateAt {
    /// The position (clamped to `0..=len`).
    pub position: u64,
    /// The state there.
    pub state: Value,
}

/// Where to fork a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", tag = "at")]
#[non_exhaustive]
pub enum ForkPoint {
    /// At a position of the parent (clamped to its length).
    Position {
        /// The position.
        #[schemars(range(max = 9_007_199_254_740_991u64))]
        #[serde(deserialize_with = "crate::whole::number")]
        position: u64,
    },
    /// Right after the `n`th (1-based) event named `name`.
    Nth {
        /// The event name.
        name: String,
        /// Which occurrence, from 1.
        #[schemars(range(min = 1, max = 1_000_000_000))]
        #[serde(deserialize_with = "crate::whole::number")]
        n: usize,
    },
}

/// A turn's outcome on the wire, or why its state does not encode.
pub(crate) fn outcome<S: WorkflowState>(
    result: Result<RunOutcome<S>, openharness_core::Error>,
) -> Result<TurnOutcome, HostError> {
    let outcome = result?;
    let (session, position) = (outcome.session.clone(), outcome.len);
    TurnOutcome::of(outcome).map_err(|source| HostError::Encode {
        session,
        position,
        source,
    })
}

/// `state` as JSON, or an error naming where it was taken.
pub(crate) fn encode<S: WorkflowState>(
    session: &SessionId,
    position: u64,
    state: &S,
) -> Result<Value, HostError> {
    serde_json::to_value(state).map_err(|source| HostError::Encode {
        session: session.clone(),
        position,
        source,
    })
}
