//! A response's turn read from the store: from the request's event (or, for a queued input,
//! from the event that begins the turn answering it) to the turn's `workflow:completed`.

use openharness_core::builtin::{
    InputQueued, InputReceived, SessionForked, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Envelope, Event as _, EventId};

use super::wire::{OpenError, ResponseId};
use crate::AppState;
use crate::chat::{Answering, answering};

/// What a response waits for before its turn begins.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Awaiting {
    /// The turn that answers this request event (itself, or for a queued input the turn its
    /// `user:input` begins, or the call that took it as `input:steered`).
    Answer(EventId),
    /// The turn of a fork's input: a fork made with input records `session:forked` (and the
    /// end of that first, empty turn), then the input's turn.
    ForkInput,
}

impl Awaiting {
    /// What the response whose request event is `request` waits for.
    pub(super) fn of(request: &Envelope) -> Self {
        if request.name == SessionForked::NAME {
            Self::ForkInput
        } else {
            Self::Answer(request.id)
        }
    }

    /// Whether `event` begins the response's turn.
    pub(crate) fn begins(self, event: &Envelope) -> bool {
        match self {
            Self::Answer(request) => !matches!(answering(request, event), Answering::Waiting),
            Self::ForkInput => {
                [UserInput::NAME, InputReceived::NAME].contains(&event.name.as_ref())
            }
        }
    }
}

/// How many events one read of the store takes.
const PAGE: u64 = 256;

/// A response's turn as recorded so far.
pub(super) struct Turn {
    /// Its events, from the one that begins it to its end (when recorded).
    pub(super) events: Vec<Envelope>,
    /// The seq of its `workflow:completed`, once recorded.
    pub(super) end: Option<u64>,
    /// The input event it answers (`user:input` or `input:received`), once recorded.
    pub(super) input: Option<Envelope>,
    /// What the response waits for, while its turn has not begun (a queued input, a fork's).
    pub(super) waiting: Option<Awaiting>,
    /// The session's workflow.
    pub(super) workflow: String,
}

/// Whether a response can start at `event`: a turn's first event, or a queued input.
pub(crate) fn opens_response(event: &Envelope) -> bool {
    [
        UserInput::NAME,
        InputReceived::NAME,
        InputQueued::NAME,
        SessionForked::NAME,
        WorkflowStarted::NAME,
    ]
    .contains(&event.name.as_ref())
}

/// `session`'s events `from..to`, read a page at a time (fewer when the session is shorter).
pub(crate) async fn events(
    state: &AppState,
    session: &openharness_core::SessionId,
    from: u64,
    to: u64,
) -> Result<Vec<Envelope>, crate::error::ApiError> {
    let mut events = Vec::new();
    let mut at = from;
    while at < to {
        let page = state
            .host
            .store()
            .events(session, at..to.min(at + PAGE))
            .await
            .map_err(|err| crate::error::ApiError::internal(err.to_string()))?;
        if page.is_empty() {
            break;
        }
        at += page.len() as u64;
        events.extend(page);
    }
    Ok(events)
}

/// The turn of response `id`, as the store has it now (`404` for a session or position that
/// holds no response).
pub(super) async fn read_turn(state: &AppState, id: &ResponseId) -> Result<Turn, OpenError> {
    let summary = state.host.session(&id.session).await?;
    let store = state.host.store();
    let internal =
        |err: openharness_core::StoreError| crate::error::ApiError::internal(err.to_string());
    let not_a_response = || {
        OpenError::not_found(format!(
            "no response `{id}`: position {} of session {} is not where a response starts",
            id.seq, id.session
        ))
    };
    let first = store
        .events(&id.session, id.seq..id.seq + 1)
        .await
        .map_err(internal)?;
    let request = first
        .first()
        .filter(|event| opens_response(event))
        .ok_or_else(not_a_response)?;
    let mut turn = Turn {
        events: Vec::new(),
        end: None,
        input: None,
        waiting: Some(Awaiting::of(request)),
        workflow: summary.workflow.unwrap_or_default(),
    };
    let mut from = id.seq;
    loop {
        let page = store
            .events(&id.session, from..from + PAGE)
            .await
            .map_err(internal)?;
        if page.is_empty() {
            break;
        }
        for (seq, event) in (from..).zip(page.iter()) {
            if let Some(awaiting) = turn.waiting {
                if !awaiting.begins(event) {
                    continue;
                }
                turn.waiting = None;
            }
            if turn.input.is_none()
                && [UserInput::NAME, InputReceived::NAME].contains(&event.name.as_ref())
            {
                turn.input = Some(event.clone());
            }
            turn.events.push(event.clone());
            if event.name == WorkflowCompleted::NAME {
                turn.end = Some(seq);
                return Ok(turn);
            }
        }
        from += page.len() as u64;
    }
    Ok(turn)
}
