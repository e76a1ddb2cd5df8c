//! The turns this server runs: started in the background so they finish whatever the client
//! does, counted as in flight while they run, and acknowledged only once recorded.
//!
//! **Nothing is acknowledged before it is recorded.** [`start_turn`] returns once the event
//! that carries the request's input is durably in the store (the store's tail delivers only
//! committed events): `user:input` for new input, `input:received` for an answer, the first
//! event of a new session, a fork or a resumed turn. A turn that fails before recording it
//! answers its error instead (a session busy in another process is `409`, nothing recorded).
//! So a `202`, or the first byte of a chat's stream, means the input survives a crash of the
//! server right after it.

use std::future::Future;
use std::sync::{Arc, PoisonError};

use axum::http::StatusCode;
use openharness_core::SessionId;
use openharness_host::{HostError, TurnOutcome};

use crate::AppState;
use crate::error::ApiError;

/// The recorded event that acknowledges a turn's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ack {
    /// The first event named so (`user:input`, `input:received`).
    Named(&'static str),
    /// The turn's first event (a new session without input, a fork, a resume).
    First,
}

impl Ack {
    fn by(self, name: &str) -> bool {
        match self {
            Self::Named(wanted) => name == wanted,
            Self::First => true,
        }
    }
}

/// Starts `turn` on `session` (its first event at seq `first_seq`) in the background, and
/// returns once the event `ack` names is recorded, or with the turn's error when it failed
/// before recording it.
pub(crate) async fn start_turn<F>(
    state: &Arc<AppState>,
    session: &SessionId,
    first_seq: u64,
    ack: Ack,
    turn: F,
) -> Result<(), ApiError>
where
    F: Future<Output = Result<TurnOutcome, HostError>> + Send + 'static,
{
    // Subscribed before the turn starts: its first append cannot be missed.
    let mut recorded = crate::sse::subscribe(state, session, first_seq).await?;
    let (ended_tx, mut ended) = tokio::sync::oneshot::channel();
    spawn_turn(state, session.clone(), first_seq, turn, ended_tx);
    loop {
        tokio::select! {
            biased;
            next = recorded.next() => match next {
                Some(Ok(event)) if ack.by(event.event.name.as_ref()) => return Ok(()),
                Some(Ok(_)) => {}
                Some(Err(err)) => return Err(ApiError::internal(err.to_string())),
                None => return Err(ApiError::internal(format!("the tail of session {session} ended"))),
            },
            failure = &mut ended => {
                return match failure {
                    // Ended well: what it was asked to record is recorded.
                    Ok(None) => Ok(()),
                    // Failed after recording the input: the input is acknowledged, and the
                    // failure is the session's to tell (its events say it).
                    Ok(Some(err)) => {
                        if recorded_since(state, session, first_seq, ack).await {
                            Ok(())
                        } else {
                            Err(err)
                        }
                    }
                    Err(_) => Err(ApiError::internal(format!(
                        "the turn on session {session} stopped without a word"
                    ))),
                };
            }
        }
    }
}

/// Whether the event `ack` names was recorded on `session` from seq `first_seq`.
async fn recorded_since(state: &AppState, session: &SessionId, first_seq: u64, ack: Ack) -> bool {
    let Ok(events) = state
        .host
        .store()
        .events(session, first_seq..u64::MAX)
        .await
    else {
        return false;
    };
    events.iter().any(|event| ack.by(event.name.as_ref()))
}

/// Runs a turn on in the server, whatever the client does; `session` counts as busy until it
/// ends, and its turn is known to start at seq `first_seq` (for chat resumes). When it fails,
/// `ended` (if given) is told why, as the answer a request would give.
fn spawn_turn<F>(
    state: &Arc<AppState>,
    session: SessionId,
    first_seq: u64,
    turn: F,
    ended: tokio::sync::oneshot::Sender<Option<ApiError>>,
) where
    F: Future<Output = Result<TurnOutcome, HostError>> + Send + 'static,
{
    state
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(session.clone(), first_seq);
    let state = Arc::clone(state);
    tokio::spawn(async move {
        let failure = match turn.await {
            Ok(outcome) => {
                tracing::debug!(session = %outcome.session, reason = outcome.reason.as_str(), "a turn ended");
                None
            }
            Err(err) => {
                tracing::warn!(%session, error = %err, "a turn failed");
                Some(ApiError::from(err))
            }
        };
        state
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&session);
        state.turn_ended.notify_waiters();
        let _ = ended.send(failure);
    });
}

/// How long a post waits for a turn whose end is recorded to finish (its snapshot and its
/// durable sync come after its `workflow:completed`, which a client's stream ends on).
const ENDING_TURN: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits, up to [`ENDING_TURN`], until this server runs no turn on `session`; whether it
/// stopped running one.
async fn turn_finished(state: &AppState, session: &SessionId) -> bool {
    let deadline = tokio::time::Instant::now() + ENDING_TURN;
    loop {
        let ended = state.turn_ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if !running_here(state, session) {
            return true;
        }
        if tokio::time::timeout_at(deadline, ended).await.is_err() {
            return !running_here(state, session);
        }
    }
}

pub(crate) fn running_here(state: &AppState, session: &SessionId) -> bool {
    turn_start(state, session).is_some()
}

/// The seq the turn this server runs on `session` started at, if it runs one.
pub(crate) fn turn_start(state: &AppState, session: &SessionId) -> Option<u64> {
    state
        .in_flight
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(session)
        .copied()
}

/// Refuses a new turn on a session this server cannot fold, is running one on (unless inputs
/// queue), or whose last turn has not ended elsewhere. Returns the session's length, where the
/// new turn starts.
pub(crate) async fn check_free(state: &AppState, session: &SessionId) -> Result<u64, ApiError> {
    let summary = match state.host.session(session).await {
        // A session whose first turn this server has just started, before its first append:
        // busy, not missing.
        Err(openharness_host::HostError::SessionNotFound(_))
            if running_here(state, session) && !state.options.queue_inputs =>
        {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "session_busy",
                format!("session {session} is busy: a turn is running on it; nothing was recorded"),
            ));
        }
        found => found?,
    };
    if !summary.hosted {
        return Err(openharness_host::HostError::Unhosted {
            session: session.clone(),
            recorded: summary.workflow,
            known: state.host.workflow_names(),
        }
        .into());
    }
    let busy = |why: &str| {
        ApiError::new(
            StatusCode::CONFLICT,
            "session_busy",
            format!("session {session} is busy: {why}; nothing was recorded"),
        )
    };
    if running_here(state, session) {
        if state.options.queue_inputs {
            return Ok(summary.len);
        }
        // A turn whose end is recorded is only finishing (a client that answers as soon as
        // its stream ended posts here): wait for it rather than refuse.
        if summary.status.is_running() || !turn_finished(state, session).await {
            return Err(busy("a turn is running on it"));
        }
    }
    if summary.status.is_running() {
        return Err(busy(
            "its last turn has not ended (running in another process, or cut off: POST …/resume)",
        ));
    }
    Ok(summary.len)
}
