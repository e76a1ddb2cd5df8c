//! [`TapeError`]: what loading, forking and re-executing a recorded session can fail with.

use openharness_core::SessionId;
use serde::Serialize;
use serde_json::Value;

/// A failure of a tape, fork or cassette operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TapeError {
    /// The workflow (its store, most often) failed.
    #[error(transparent)]
    Harness(#[from] openharness_core::Error),
    /// A state could not be encoded as JSON (for a diff).
    #[error("the state at position {position} does not encode as JSON")]
    Encode {
        /// The position whose state failed.
        position: u64,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// No position of the parent session matches the requested fork point.
    #[error("no fork point in session {session} matches {at}")]
    NoForkPoint {
        /// The parent session.
        session: SessionId,
        /// The requested point, described.
        at: String,
    },
    /// A fork's state could not be hashed, or no longer decodes once a
    /// [`crate::Fork::edit_state`] patch is applied.
    #[error("the state of session {session} at position {position} cannot be edited: {source}")]
    StateEdit {
        /// The parent session.
        session: SessionId,
        /// The fork point.
        position: u64,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
    /// [`crate::Tape::wait`] on a tape that is not attached to a run.
    #[error("tape of session {0} is not recording: it has no run to wait for")]
    NotRecording(SessionId),
    /// The task running a recorded workflow panicked or was cancelled.
    #[error("the run of session {session} did not finish: {message}")]
    RunTask {
        /// The session.
        session: SessionId,
        /// What happened to the task.
        message: String,
    },
    /// A cassette re-execution did something the recording did not.
    #[error("{0}")]
    Diverged(Box<Divergence>),
    /// A cassette re-execution recorded every event the recording did, but today's handlers
    /// fold the recording to another state than the live run recorded (a handler that
    /// changed only what it does to the state).
    #[error(
        "every event matches, but today's handlers fold the recording to another state after seq {} (`{}`): the live run's state hashed {}, today's {}",
        .0.seq,
        .0.event,
        short(&.0.recorded_hash),
        short(&.0.today_hash)
    )]
    StateDiverged(Box<openharness_core::StateDivergence>),
}

/// The first 12 characters of a hash.
fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

/// A tape error as the workflow error every part of Open Harness composes into: a workflow
/// failure as itself, anything else as [`openharness_core::Error::Other`].
impl From<TapeError> for openharness_core::Error {
    fn from(err: TapeError) -> Self {
        match err {
            TapeError::Harness(err) => err,
            other => Self::Other(Box::new(other)),
        }
    }
}

/// Where a cassette re-execution first parted from its recording.
///
/// `expected` is the recorded event the re-execution did not reproduce (`None`: the
/// recording had no further event there) and `seq` its seq in the recording (0-based, as the
/// store numbers events); `actual` is what the re-execution recorded in its place (`None`:
/// the re-execution ended first). For an event the recording does not have, `seq` is the
/// re-execution's seq of it. On a tape that event is `tape.event_at(seq + 1)`, the one that
/// leads to position `seq + 1`. Events are compared per stream (see `Cassette`):
/// when agents ran concurrently, the events before `seq` may have been recorded in
/// another order by the re-execution.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error, schemars::JsonSchema)]
#[error("the re-execution of session {session} diverged at seq {seq} (the event leading to position {}): expected {}, got {}", seq + 1, describe(expected.as_ref()), describe(actual.as_ref()))]
#[non_exhaustive]
pub struct Divergence {
    /// The recorded session.
    pub session: SessionId,
    /// The recording's seq of the first event that differs (the re-execution's, for an event
    /// the recording does not have).
    pub seq: u64,
    /// The recorded event at `seq`.
    pub expected: Option<EventShape>,
    /// What the re-execution recorded in its place.
    pub actual: Option<EventShape>,
}

/// An event without its id and timestamp: what a re-execution must reproduce. Ids inside the
/// payload and the cause are replaced by the seq of the event they name.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct EventShape {
    /// The event's name.
    pub name: String,
    /// The payload, with event ids as `"#seq"`.
    pub payload: Value,
    /// The seq of the event that caused it.
    pub caused_by: Option<u64>,
}

fn describe(shape: Option<&EventShape>) -> String {
    match shape {
        None => "the end of the session".to_owned(),
        Some(shape) => format!("`{}` {}", shape.name, shape.payload),
    }
}
