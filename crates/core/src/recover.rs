//! Deriving a recorded session from its log alone: its state (latest snapshot plus the tail),
//! its open input requests, and the work a killed process left unfinished.
//!
//! The runtime records an event together with everything its handlers emit and the
//! `agent:started` of the agents it activates, and ends every turn with `workflow:completed`.
//! So a session whose last event is `workflow:completed` has nothing unfinished, and one whose
//! last event is anything else was cut off mid-turn (or is running elsewhere). For a cut-off
//! turn, the tail is folded again from the latest snapshot at or before the turn's start (the
//! runtime saves one at a turn's end; the ones it saves in the middle of a long turn are passed
//! over when they lie inside the cut-off turn) and every folded event's expected consequences
//! are matched against what was recorded after it:
//!
//! - events its handler emits, and the `agent:started` of the agents it activates, caused by
//!   it, in order: one that is missing was never recorded and is derived again (handlers are
//!   pure and deterministic);
//! - an `agent:started` without its `agent:completed` (same agent, same trigger) is a call
//!   that was in flight: the resume closes it as `interrupted` and runs it again.
//!
//! Memory is bounded by the work in flight (the fold's window, the expectations not yet met,
//! the open calls), never by the session's length: the tail is streamed.
//!
//! Where things are: this file derives a session at its end ([`derive`]); a fork's start from
//! its ancestors is in `fork`; the state or view at any position in `positions`; the tail's
//! fold with its expectations in `tail`; the fold's restore window in `window`.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::agent::activations;
use crate::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputSteered, SessionForked,
    TextDelta, ToolCalled, ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use crate::call_key::CallKey;
use crate::definition::{Inner, WorkflowState};
use crate::emit::Pending;
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::{Applied, Fold};
use crate::open_requests::OpenRequests;
use crate::queued::QueuedInputs;
use crate::status::SessionStatus;
use crate::store::{SnapshotJson, StoreError};

/// How deep a chain of forks may be before deriving gives up (also stops a cycle, which only a
/// corrupt store holds).
const MAX_FORK_DEPTH: usize = 64;

/// A recorded session, derived from its log.
pub(crate) struct Derived<S> {
    /// The state after every recorded event.
    pub(crate) state: S,
    /// The session's length.
    pub(crate) len: u64,
    /// The position of the snapshot the derivation started from (0 for none).
    pub(crate) snapshot_at: u64,
    /// The size of that snapshot's JSON in bytes (none when it started from position 0).
    pub(crate) snapshot_bytes: Option<u64>,
    /// What the session is doing, from its last event.
    pub(crate) status: SessionStatus,
    /// `input:requested` events not answered yet.
    pub(crate) open_requests: Vec<EventId>,
    /// What a cut-off turn had not recorded yet, in the order it was caused.
    pub(crate) unrecorded: Vec<Unrecorded>,
    /// Agent calls a cut-off turn had started and not completed, oldest first.
    pub(crate) open_calls: Vec<OpenCall>,
    /// Inputs queued during a turn and not answered yet, oldest first, with their events.
    pub(crate) queued: QueuedInputs,
}

/// Something a cut-off turn should have recorded and did not.
#[derive(Clone)]
pub(crate) enum Unrecorded {
    /// An event a handler emitted (or the runtime made of a panic), caused by `cause`.
    Event(Pending, EventId),
    /// An agent the event `trigger` activated, whose `agent:started` was never recorded.
    Start {
        /// What its `agent:started` records (boxed: the variant would dwarf the other).
        started: Box<AgentStarted>,
        /// The event that activated it.
        trigger: Envelope,
    },
}

/// An agent call with `agent:started` and no `agent:completed`.
#[derive(Clone)]
pub(crate) struct OpenCall {
    /// What its `agent:started` recorded.
    pub(crate) started: AgentStarted,
    /// The event that activated it, when the tail holds it.
    pub(crate) trigger: Option<Envelope>,
    /// The id of that event (its `agent:started`'s cause).
    pub(crate) trigger_id: Option<EventId>,
}

/// An expected consequence of a recorded event.
enum Expected {
    Event(Pending),
    Start { started: Box<AgentStarted> },
}

impl Expected {
    fn name(&self) -> &str {
        match self {
            Self::Event(pending) => &pending.name,
            Self::Start { .. } => AgentStarted::NAME,
        }
    }
}

fn store_error<'w, S>(wf: &'w Inner<S>, session: &SessionId) -> impl Fn(StoreError) -> Error + 'w {
    let session = session.clone();
    move |source| Error::store(wf.store.as_ref(), Some(&session), source)
}

/// Derives `session`: its state at its end, open requests and unfinished work.
pub(crate) async fn derive<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
) -> Result<Derived<S>, Error> {
    let info = recorded_info(wf, session).await?;
    derive_info(wf, session, info, 0).await
}

/// The store's listing of `session`, checked to hold events of this workflow.
async fn recorded_info<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
) -> Result<crate::SessionInfo, Error> {
    let info = wf
        .store
        .session(session)
        .await
        .map_err(store_error(wf, session))?
        .filter(|info| info.count > 0)
        .ok_or_else(|| Error::SessionNotFound(session.clone()))?;
    if let Some(recorded) = &info.workflow
        && !wf.reads(recorded)
    {
        return Err(Error::WrongWorkflow {
            session: session.clone(),
            recorded: recorded.clone(),
            workflow: wf.name.clone(),
        });
    }
    Ok(info)
}

/// Derives the first `end` events of `session` as if the session ended there (clamped to its
/// length): the state at position `end`, the requests open there and, when `end` lies inside a
/// turn, what that turn had not recorded yet and the agent calls it had open (what a resume of
/// a session cut at `end` would finish). This is where a fork at `end` continues from.
async fn derive_prefix<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    end: u64,
    depth: usize,
) -> Result<Derived<S>, Error> {
    let mut info = recorded_info(wf, session).await?;
    let end = end.min(info.count);
    let Some(last) = end.checked_sub(1) else {
        let state = session_base(wf, session, 0).await?;
        return Ok(Derived {
            state,
            len: 0,
            snapshot_at: 0,
            snapshot_bytes: None,
            status: SessionStatus::Idle,
            open_requests: Vec::new(),
            unrecorded: Vec::new(),
            open_calls: Vec::new(),
            queued: QueuedInputs::default(),
        });
    };
    let events = wf
        .store
        .events(session, last..end)
        .await
        .map_err(store_error(wf, session))?;
    let last = events
        .first()
        .ok_or_else(|| Error::SessionNotFound(session.clone()))?;
    info.status = SessionStatus::after(&last.name, &last.payload);
    info.count = end;
    derive_info(wf, session, info, depth).await
}

/// [`derive_fork`], `depth` forks down from the session asked about.
async fn derive_fork_at<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
    depth: usize,
) -> Result<ForkFrom<S>, Error> {
    // Position 0 of a fork is its parent's fork point, with the work under way there.
    if position == 0
        && depth < MAX_FORK_DEPTH
        && let Some(forked) = fork_origin(wf, session).await?
    {
        let mut from = Box::pin(derive_fork_at(
            wf,
            &forked.parent,
            forked.position,
            depth + 1,
        ))
        .await?;
        from.derived.len = 0;
        from.derived.state = edited(wf, session, from.derived.state, &forked)?;
        return Ok(from);
    }
    let mut derived = derive_prefix(wf, session, position, depth).await?;
    let fork = |derived, completing| {
        Ok(ForkFrom {
            derived,
            completing,
        })
    };
    let (Some(last), false) = (derived.len.checked_sub(1), derived.open_calls.is_empty()) else {
        return fork(derived, Vec::new());
    };
    let failed = store_error(wf, session);
    let before = wf
        .store
        .events(session, last..derived.len)
        .await
        .map_err(&failed)?;
    // The event before the fork point is part of a call's final record: caused by the call's
    // trigger, and not one the call records on its own as it goes.
    let Some(trigger) = before
        .first()
        .filter(|event| in_final_record(&event.name))
        .and_then(|event| event.caused_by)
        .filter(|trigger| {
            derived
                .open_calls
                .iter()
                .any(|call| call.trigger_id == Some(*trigger))
        })
    else {
        return fork(derived, Vec::new());
    };
    let mut completing = Vec::new();
    let mut events = wf.store.stream_events(session, derived.len..u64::MAX);
    while let Some(recorded) = events.next().await {
        let event = recorded.map_err(&failed)?.event;
        if event.caused_by != Some(trigger) {
            break;
        }
        let pending = Pending {
            name: event.name.clone(),
            payload: event.payload.clone(),
            version: event.version,
        };
        if event.name == AgentCompleted::NAME {
            let Ok(completed) = event.decode::<AgentCompleted>() else {
                break;
            };
            let Some(call) = derived.open_calls.iter().position(|call| {
                call.trigger_id == Some(trigger) && call.started.agent == completed.agent
            }) else {
                break;
            };
            derived.open_calls.remove(call);
            completing.push((pending, Some(trigger)));
            return fork(derived, completing);
        }
        if !in_final_record(&event.name) {
            break;
        }
        completing.push((pending, Some(trigger)));
    }
    // No final record is cut: the open calls run again.
    fork(derived, Vec::new())
}

/// Whether an event of this name, caused by an agent call's trigger, may belong to the call's
/// final record (everything but what a call records as it streams, the call's start and end,
/// and what only a turn or a person records).
fn in_final_record(name: &str) -> bool {
    !matches!(
        name,
        TextDelta::NAME
            | ToolCalled::NAME
            | ToolResult::NAME
            | InputSteered::NAME
            | AgentStarted::NAME
            | AgentCompleted::NAME
            | WorkflowStarted::NAME
            | WorkflowCompleted::NAME
            | UserInput::NAME
            | InputReceived::NAME
            | SessionForked::NAME
    )
}

/// [`derive`] with the session's listing in hand (its count and status may describe a prefix).
async fn derive_info<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    info: crate::SessionInfo,
    depth: usize,
) -> Result<Derived<S>, Error> {
    // A cut-off turn is derived from a snapshot at or before the turn's start, so the tail holds
    // the whole turn. Most often the latest snapshot is at a turn's end: `Streamed::AtTurnEnd`
    // checks the event before it as it streams. One saved inside a turn does too if that turn
    // ended (a `workflow:completed` is recorded after it); those inside the cut-off turn are
    // passed over, and each one passed over narrows the range still to search, so the events
    // of the cut-off turn are scanned at most once.
    let mut at_most = info.count;
    let mut no_turn_end_from = info.status.is_running().then_some(info.count);
    while let Some(start) = snapshot_for_derive(wf, session, at_most).await? {
        let base = start.base;
        at_most = base - 1;
        let how = match no_turn_end_from {
            None => Streamed::Whole,
            Some(_) => Streamed::AtTurnEnd,
        };
        let start = match derive_streamed(wf, session, &info, start, how).await? {
            Ok(derived) => return Ok(derived),
            Err(start) => start,
        };
        if let Some(end) = no_turn_end_from
            && turn_end_within(wf, session, base..end).await?
        {
            let derived = derive_streamed(wf, session, &info, start, Streamed::Whole).await?;
            return Ok(whole(derived));
        }
        no_turn_end_from = Some(base - 1);
    }
    let state = session_base(wf, session, 0).await?;
    // A fork cut off in its first turn may still owe what its parent had under way at the
    // fork point: its derivation starts from that.
    let inherited = match (
        info.status.is_running() && depth < MAX_FORK_DEPTH,
        fork_origin(wf, session).await?,
    ) {
        (true, Some(forked)) => Some(
            Box::pin(derive_fork_at(
                wf,
                &forked.parent,
                forked.position,
                depth + 1,
            ))
            .await?,
        ),
        _ => None,
    };
    let how = match inherited {
        Some(from) => Streamed::Inheriting(Box::new(from)),
        None => Streamed::Whole,
    };
    let start = DerivationStart {
        state,
        base: 0,
        bytes: None,
    };
    Ok(whole(
        derive_streamed(wf, session, &info, start, how).await?,
    ))
}

/// The latest snapshot at or before `at_most` (and after position 0) that decodes into the
/// workflow's state, as a derivation's start.
async fn snapshot_for_derive<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    at_most: u64,
) -> Result<Option<DerivationStart<S>>, Error> {
    let found = decoded_snapshot(wf, session, at_most, |_, json| json.byte_len()).await?;
    Ok(found.map(|(state, base, bytes)| DerivationStart {
        state,
        base,
        bytes: Some(bytes),
    }))
}

/// Whether a `workflow:completed` is recorded at a seq in `range`.
async fn turn_end_within<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    range: std::ops::Range<u64>,
) -> Result<bool, Error> {
    let failed = store_error(wf, session);
    let mut events = wf.store.stream_events(session, range);
    while let Some(recorded) = events.next().await {
        if recorded.map_err(&failed)?.event.name == WorkflowCompleted::NAME {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Where a derivation starts: `state` at position `base`, read from a snapshot of `bytes`
/// bytes (none for position 0).
struct DerivationStart<S> {
    state: S,
    base: u64,
    bytes: Option<u64>,
}

/// The derivation of a [`Streamed`] that cannot stop early.
fn whole<S>(streamed: Result<Derived<S>, DerivationStart<S>>) -> Derived<S> {
    match streamed {
        Ok(derived) => derived,
        Err(_) => unreachable!("only a derivation that checks for a turn's end stops early"),
    }
}

/// How [`derive_streamed`] goes.
enum Streamed<S> {
    /// Through the whole tail.
    Whole,
    /// Only if its base was saved at a turn's end (else it stops at once, giving the start
    /// back).
    AtTurnEnd,
    /// Through the whole tail of a fork, owing what its parent had under way at the fork point.
    Inheriting(Box<ForkFrom<S>>),
}

/// Derives the session from `start`, streaming the events after its base.
async fn derive_streamed<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    info: &crate::SessionInfo,
    start: DerivationStart<S>,
    how: Streamed<S>,
) -> Result<Result<Derived<S>, DerivationStart<S>>, Error> {
    let DerivationStart { state, base, bytes } = start;
    let failed = store_error(wf, session);
    let mut tail = Tail::new(wf, session, state, base);
    let at_turn_end = matches!(how, Streamed::AtTurnEnd);
    if let Streamed::Inheriting(from) = how {
        tail.inherit(*from);
    }
    let mut events = wf
        .store
        .stream_events(session, base.saturating_sub(1)..info.count);
    let mut len = base;
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(&failed)?;
        if recorded.seq < base {
            if at_turn_end && recorded.event.name != WorkflowCompleted::NAME {
                let state = tail.fold.into_state();
                return Ok(Err(DerivationStart { state, base, bytes }));
            }
            tail.look_back(&recorded.event);
            continue;
        }
        len = recorded.seq + 1;
        tail.absorb(recorded.seq, recorded.event)?;
    }
    // A fork's calls may have been started by an event of its parent (the one that triggered
    // a call the fork point cut): read it there, so the call can run again.
    for (_, call) in tail
        .open_calls
        .values_mut()
        .chain(tail.owed_reruns.values_mut())
    {
        if call.trigger.is_none()
            && let Some(id) = call.trigger_id
        {
            call.trigger = inherited_event(wf, session, id).await?;
        }
    }
    // Inputs a turn's end listed before the tail began: read where it said they are.
    for queued in tail.queued.unread() {
        let events = wf
            .store
            .events(session, queued.seq..queued.seq + 1)
            .await
            .map_err(&failed)?;
        match events
            .into_iter()
            .next()
            .filter(|event| event.id == queued.id)
        {
            Some(event) => tail.queued.read(queued, event),
            None => {
                tracing::warn!(%session, seq = queued.seq, id = %queued.id, "a queued input is not where its turn's end says it is; it is not answered");
            }
        }
    }
    Ok(Ok(tail.finish(len, base, bytes, info.status)))
}

/// The latest snapshot at or before `at_most` (and after position 0) that decodes into the
/// workflow's state, with its position and what `before` made of its position and JSON before
/// it was decoded (its size; a read of the events after it, started); snapshots that no longer
/// decode are passed over, with a warning.
async fn decoded_snapshot<S: WorkflowState, T>(
    wf: &Inner<S>,
    session: &SessionId,
    at_most: u64,
    mut before: impl FnMut(u64, &SnapshotJson) -> T,
) -> Result<Option<(S, u64, T)>, Error> {
    let failed = store_error(wf, session);
    let mut at_most = at_most;
    while let Some((position, json)) = wf
        .store
        .latest_snapshot_json(session, at_most)
        .await
        .map_err(&failed)?
        .filter(|(position, _)| *position > 0)
    {
        let measured = before(position, &json);
        match json.decode::<S>() {
            Ok(state) => return Ok(Some((state, position, measured))),
            Err(err) => {
                tracing::warn!(%session, position, error = %err, "a snapshot no longer decodes into the workflow's state; looking for an earlier one");
                at_most = position - 1;
            }
        }
    }
    Ok(None)
}

mod fork;
mod hashes;
mod positions;
mod tail;

pub(crate) use crate::fold::Window;
pub(crate) use fork::{ForkFrom, derive_fork};
use fork::{fork_origin, inherited_event};
pub(crate) use hashes::check_state;
pub use hashes::{ChangedBy, ShapeChange, StateCheck, StateDivergence};
pub use positions::ViewAt;
use positions::{edited, session_base};
pub(crate) use positions::{state_at, states_at, view_at};
use tail::Tail;
