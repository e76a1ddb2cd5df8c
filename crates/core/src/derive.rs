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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::agent::activations;
use crate::assembled::{Inner, WorkflowState};
use crate::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, SessionForked,
    TextDelta, ToolCalled, ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use crate::emit::Pending;
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::{Applied, Fold};
use crate::status::SessionStatus;
use crate::store::{StoreError, json_len};

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
}

/// Something a cut-off turn should have recorded and did not.
#[derive(Clone)]
pub(crate) enum Unrecorded {
    /// An event a handler emitted (or the runtime made of a panic), caused by `cause`.
    Event(Pending, EventId),
    /// An agent the event `trigger` activated, whose `agent:started` was never recorded.
    Start {
        /// The agent's name.
        agent: String,
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
    Start {
        agent: String,
        started: Box<AgentStarted>,
    },
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

/// Where a fork at a position continues from: the prefix derived as a cut-off session
/// ([`derive_prefix`]), and the rest of an agent call's final record when the fork point cuts
/// one.
pub(crate) struct ForkFrom<S> {
    /// The prefix, derived.
    pub(crate) derived: Derived<S>,
    /// An agent records its call's end (`text:complete`, rejected outputs, the events made from
    /// its output, `agent:completed`) in one atomic append, so no crash cuts it; a position
    /// inside it does. These are that record's events after the fork point, with their cause,
    /// as the parent recorded them: the fork records them first and keeps the call's output,
    /// so the call is not sent to a model again (and it is not among the open calls).
    pub(crate) completing: Vec<(Pending, Option<EventId>)>,
}

/// Derives where a fork of `session` at `position` (clamped) continues from: see [`ForkFrom`].
pub(crate) async fn derive_fork<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
) -> Result<ForkFrom<S>, Error> {
    derive_fork_at(wf, session, position, 0).await
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
    // the whole turn. Most often the latest snapshot is at a turn's end: `derive_at_turn_end`
    // checks the event before it as it streams. One saved inside a turn does too if that turn
    // ended (a `workflow:completed` is recorded after it); those inside the cut-off turn are
    // passed over, and each one passed over narrows the range still to search, so the events
    // of the cut-off turn are scanned at most once.
    let mut at_most = info.count;
    let mut no_turn_end_from = info.status.is_running().then_some(info.count);
    while let Some((state, base, bytes)) = snapshot_for_derive(wf, session, at_most).await? {
        at_most = base - 1;
        let Some(end) = no_turn_end_from else {
            return derive_from(wf, session, &info, state, base, Some(bytes)).await;
        };
        let state = match derive_at_turn_end(wf, session, &info, state, base, bytes).await? {
            Ok(derived) => return Ok(derived),
            Err(state) => state,
        };
        if turn_end_within(wf, session, base..end).await? {
            return derive_from(wf, session, &info, state, base, Some(bytes)).await;
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
    match derive_streamed(wf, session, &info, state, 0, None, how).await? {
        Ok(derived) => Ok(derived),
        Err(_) => unreachable!("only a derivation that checks for a turn's end stops early"),
    }
}

/// The `session:forked` a session begins with, if it is a fork.
async fn fork_origin<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
) -> Result<Option<SessionForked>, Error> {
    let first = wf
        .store
        .events(session, 0..1)
        .await
        .map_err(store_error(wf, session))?;
    Ok(first
        .first()
        .filter(|e| e.name == SessionForked::NAME)
        .and_then(|e| e.decode::<SessionForked>().ok()))
}

/// The latest snapshot at or before `at_most` (and after position 0) that decodes into the
/// workflow's state, with its position and the size of its JSON.
async fn snapshot_for_derive<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    at_most: u64,
) -> Result<Option<(S, u64, u64)>, Error> {
    decoded_snapshot(wf, session, at_most, json_len).await
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

/// Derives the session from `state` at position `base` (a snapshot of `bytes` bytes, none for
/// position 0), streaming the events after it.
async fn derive_from<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    info: &crate::SessionInfo,
    state: S,
    base: u64,
    bytes: Option<u64>,
) -> Result<Derived<S>, Error> {
    match derive_streamed(wf, session, info, state, base, bytes, Streamed::Whole).await? {
        Ok(derived) => Ok(derived),
        Err(_) => unreachable!("only a derivation that checks for a turn's end stops early"),
    }
}

/// [`derive_from`] a snapshot at `base` if it was saved at a turn's end; else (found out from
/// the first event streamed) the state back, nothing derived.
async fn derive_at_turn_end<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    info: &crate::SessionInfo,
    state: S,
    base: u64,
    bytes: u64,
) -> Result<Result<Derived<S>, S>, Error> {
    derive_streamed(
        wf,
        session,
        info,
        state,
        base,
        Some(bytes),
        Streamed::AtTurnEnd,
    )
    .await
}

/// How [`derive_streamed`] goes.
enum Streamed<S> {
    /// Through the whole tail.
    Whole,
    /// Only if its base was saved at a turn's end (else it stops at once, giving the state
    /// back).
    AtTurnEnd,
    /// Through the whole tail of a fork, owing what its parent had under way at the fork point.
    Inheriting(Box<ForkFrom<S>>),
}

async fn derive_streamed<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    info: &crate::SessionInfo,
    state: S,
    base: u64,
    bytes: Option<u64>,
    how: Streamed<S>,
) -> Result<Result<Derived<S>, S>, Error> {
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
                return Ok(Err(tail.fold.into_state()));
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
    Ok(Ok(tail.finish(len, base, bytes, info.status)))
}

/// The event `id` of one of `session`'s ancestors, before the point each fork starts from
/// (none when `session` is no fork or no ancestor holds it).
async fn inherited_event<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    id: EventId,
) -> Result<Option<Envelope>, Error> {
    let mut current = session.clone();
    for _ in 0..MAX_FORK_DEPTH {
        let failed = store_error(wf, &current);
        let first = wf.store.events(&current, 0..1).await.map_err(&failed)?;
        let Some(forked) = first
            .first()
            .filter(|e| e.name == SessionForked::NAME)
            .and_then(|e| e.decode::<SessionForked>().ok())
        else {
            return Ok(None);
        };
        let failed = store_error(wf, &forked.parent);
        let mut events = wf.store.stream_events(&forked.parent, 0..forked.position);
        while let Some(recorded) = events.next().await {
            let event = recorded.map_err(&failed)?.event;
            if event.id == id {
                return Ok(Some(event));
            }
        }
        current = forked.parent;
    }
    Ok(None)
}

/// The latest snapshot at or before `at_most` (and after position 0) that decodes into the
/// workflow's state, with its position.
async fn latest_snapshot<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    at_most: u64,
) -> Result<Option<(S, u64)>, Error> {
    let found = decoded_snapshot(wf, session, at_most, |_| ()).await?;
    Ok(found.map(|(state, position, ())| (state, position)))
}

/// The latest snapshot at or before `at_most` (and after position 0) that decodes into the
/// workflow's state, with its position and what `measure` reads off its JSON before it is
/// decoded; snapshots that no longer decode are passed over, with a warning.
async fn decoded_snapshot<S: WorkflowState, T>(
    wf: &Inner<S>,
    session: &SessionId,
    at_most: u64,
    measure: impl Fn(&serde_json::Value) -> T,
) -> Result<Option<(S, u64, T)>, Error> {
    let failed = store_error(wf, session);
    let mut at_most = at_most;
    while let Some(snapshot) = wf
        .store
        .latest_snapshot(session, at_most)
        .await
        .map_err(&failed)?
        .filter(|s| s.position > 0)
    {
        let measured = measure(&snapshot.state);
        match serde_json::from_value::<S>(snapshot.state) {
            Ok(state) => return Ok(Some((state, snapshot.position, measured))),
            Err(err) => {
                tracing::warn!(%session, position = snapshot.position, error = %err, "a snapshot no longer decodes into the workflow's state; looking for an earlier one");
                at_most = snapshot.position - 1;
            }
        }
    }
    Ok(None)
}

/// The state at position 0 of `session`: the workflow's initial state, or for a fork the
/// parent's state at the fork point.
fn session_base<'a, S: WorkflowState>(
    wf: &'a Inner<S>,
    session: &'a SessionId,
    depth: usize,
) -> Pin<Box<dyn Future<Output = Result<S, Error>> + Send + 'a>> {
    Box::pin(async move {
        let first = wf
            .store
            .events(session, 0..1)
            .await
            .map_err(store_error(wf, session))?;
        let Some(forked) = first
            .first()
            .filter(|e| e.name == SessionForked::NAME)
            .and_then(|e| e.decode::<SessionForked>().ok())
        else {
            return Ok(wf.initial.clone());
        };
        if depth >= MAX_FORK_DEPTH {
            return Err(Error::store(
                wf.store.as_ref(),
                Some(session),
                StoreError::Corrupt {
                    session: session.clone(),
                    seq: 0,
                    message: format!(
                        "it is forked from a chain of more than {MAX_FORK_DEPTH} sessions (a cycle?)"
                    ),
                },
            ));
        }
        let parent = wf
            .store
            .session(&forked.parent)
            .await
            .map_err(store_error(wf, session))?;
        if parent.is_none_or(|info| info.count == 0) {
            return Err(Error::MissingParent {
                session: session.clone(),
                parent: forked.parent,
            });
        }
        let state = state_at(wf, &forked.parent, forked.position, depth + 1).await?;
        edited(wf, session, state, &forked)
    })
}

/// `state` with the fork's `stateEdit` (a JSON merge patch) applied, if it has one: a fork
/// that changed the state it inherited starts from the changed state, in every derivation.
fn edited<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    state: S,
    forked: &SessionForked,
) -> Result<S, Error> {
    let Some(patch) = &forked.state_edit else {
        return Ok(state);
    };
    let corrupt = |err: serde_json::Error| {
        Error::store(
            wf.store.as_ref(),
            Some(session),
            StoreError::Corrupt {
                session: session.clone(),
                seq: 0,
                message: format!("its stateEdit no longer applies to the workflow's state: {err}"),
            },
        )
    };
    let mut value = serde_json::to_value(&state).map_err(corrupt)?;
    json_patch::merge(&mut value, patch);
    serde_json::from_value(value).map_err(corrupt)
}

/// The state of `session` at `position` (clamped to its length): the latest decodable snapshot
/// at or before it and the events between, streamed. Events that do not decode are skipped
/// (and warned about), as a tape skips them.
pub(crate) async fn state_at<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
    depth: usize,
) -> Result<S, Error> {
    let failed = store_error(wf, session);
    let (state, from) = match latest_snapshot(wf, session, position).await? {
        Some(start) => start,
        None => (Box::pin(session_base(wf, session, depth)).await?, 0),
    };
    let mut fold = crate::StreamedFold::at(state, from);
    let mut backfill = crate::backfill::Backfill::from(from);
    let mut events = wf.store.stream_events(session, from..position);
    while let Some(recorded) = events.next().await {
        fold.apply(recorded.map_err(&failed)?.event);
        if backfill.due(fold.position()) {
            backfill.keep(fold.position(), fold.state());
        }
    }
    backfill.write(Arc::clone(&wf.store), session);
    Ok(fold.into_state())
}

/// The states of `session` at each of `positions` (each clamped to the session's length), in
/// the order asked, from one pass: the latest snapshot at or before the smallest position and
/// the events up to the largest, never the whole log when a snapshot is nearer.
pub(crate) async fn states_at<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    positions: &[u64],
) -> Result<Vec<(u64, S)>, Error> {
    let (Some(&first), Some(&last)) = (positions.iter().min(), positions.iter().max()) else {
        return Ok(Vec::new());
    };
    let failed = store_error(wf, session);
    let (state, from) = match latest_snapshot(wf, session, first).await? {
        Some(start) => start,
        None => (Box::pin(session_base(wf, session, 0)).await?, 0),
    };
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    let mut order = order.into_iter().peekable();
    let mut found: Vec<Option<(u64, S)>> = vec![None; positions.len()];
    let mut fold = Fold::at(state, from);
    let mut window = Window::new(from);
    let mut take = |fold: &Fold<S>, everything: bool| {
        while let Some(i) = order.next_if(|&i| everything || positions[i] <= fold.position()) {
            found[i] = Some((fold.position(), fold.state().clone()));
        }
    };
    take(&fold, false);
    let mut backfill = crate::backfill::Backfill::from(from);
    let mut events = wf.store.stream_events(session, from..last);
    while let Some(recorded) = events.next().await {
        let event = recorded.map_err(&failed)?.event;
        window.apply(&mut fold, event);
        take(&fold, false);
        if backfill.due(fold.position()) {
            backfill.keep(fold.position(), fold.state());
        }
    }
    backfill.write(Arc::clone(&wf.store), session);
    // Positions past the end of the log: the last state.
    take(&fold, true);
    Ok(found.into_iter().flatten().collect())
}

/// A session at one position, read in one streamed pass over its whole log: the state there,
/// the event that led there, the session's length and what a fold of the whole log skips. See
/// [`Workflow::view_at`](crate::Workflow::view_at).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ViewAt<S> {
    /// The position (clamped to `0..=len`).
    pub position: u64,
    /// The session's length.
    pub len: u64,
    /// The event at seq `position - 1` (none at position 0).
    pub current: Option<crate::Recorded>,
    /// The state at `position`.
    pub state: S,
    /// What folding the whole session skips (unknown and undecodable events).
    pub skipped: crate::Skipped,
}

/// See [`ViewAt`]: folds the whole log, streamed, keeping one state and the fold's window.
pub(crate) async fn view_at<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
) -> Result<ViewAt<S>, Error> {
    let failed = store_error(wf, session);
    let recorded_len = wf
        .store
        .session(session)
        .await
        .map_err(&failed)?
        .map_or(0, |info| info.count);
    if recorded_len == 0 {
        return Err(Error::SessionNotFound(session.clone()));
    }
    // Clamped to the length read now; events appended meanwhile are folded for the counts.
    let position = position.min(recorded_len);
    let base = Box::pin(session_base(wf, session, 0)).await?;
    let mut fold = Fold::new(base);
    let mut window = Window::new(0);
    let mut at = (position == 0).then(|| fold.state().clone());
    let mut current = None;
    let mut events = wf.store.stream_events(session, 0..u64::MAX);
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(&failed)?;
        if recorded.seq + 1 == position {
            current = Some(recorded.clone());
        }
        window.apply(&mut fold, recorded.event);
        if fold.position() == position {
            at = Some(fold.state().clone());
        }
    }
    let len = fold.position();
    let skipped = fold.skipped().clone();
    Ok(ViewAt {
        position: position.min(len),
        len,
        current,
        state: at.unwrap_or_else(|| fold.into_state()),
        skipped,
    })
}

/// The events a [`Fold`] may need to re-apply after a panic: those since its checkpoint.
#[derive(Debug)]
pub(crate) struct Window {
    events: Vec<Envelope>,
    start: u64,
}

impl Window {
    /// An empty window whose next event is at seq `start`.
    pub(crate) fn new(start: u64) -> Self {
        Self {
            events: Vec::new(),
            start,
        }
    }

    /// Folds `event`, keeps it and forgets what the fold can no longer need.
    pub(crate) fn apply<S: crate::Handler>(
        &mut self,
        fold: &mut Fold<S>,
        event: Envelope,
    ) -> Applied {
        let applied = fold.apply_windowed(&event, &self.events, self.start);
        self.events.push(event);
        self.trim(fold.checkpoint_position());
        applied
    }

    /// Folds `event` and keeps it, forgetting nothing (the caller trims).
    pub(crate) fn apply_kept<S: crate::Handler>(
        &mut self,
        fold: &mut Fold<S>,
        event: Envelope,
    ) -> (Applied, &Envelope) {
        let applied = fold.apply_windowed(&event, &self.events, self.start);
        self.events.push(event);
        let kept = self
            .events
            .last()
            .unwrap_or_else(|| unreachable!("just pushed"));
        (applied, kept)
    }

    /// Forgets the events before seq `keep_from`.
    pub(crate) fn trim(&mut self, keep_from: u64) {
        if keep_from > self.start {
            let drop = usize::try_from(keep_from - self.start)
                .unwrap_or(usize::MAX)
                .min(self.events.len());
            self.events.drain(..drop);
            self.start += drop as u64;
        }
    }

    /// The kept events from seq `from` on.
    pub(crate) fn from(&self, from: u64) -> &[Envelope] {
        let skip = usize::try_from(from.saturating_sub(self.start)).unwrap_or(usize::MAX);
        self.events.get(skip..).unwrap_or_default()
    }

    /// The kept event at seq `seq`.
    pub(crate) fn get(&self, seq: u64) -> Option<&Envelope> {
        let index = usize::try_from(seq.checked_sub(self.start)?).ok()?;
        self.events.get(index)
    }
}

/// The tail of a session, folded and matched against what each event should have caused.
struct Tail<'w, S> {
    wf: &'w Inner<S>,
    session: SessionId,
    fold: Fold<S>,
    window: Window,
    open_requests: Vec<EventId>,
    /// Consequences of recorded events not recorded yet: cause -> (cause's seq, in order).
    expected: HashMap<EventId, (u64, VecDeque<Expected>)>,
    /// Events that activated agents, while a call of theirs is expected or open.
    triggers: HashMap<EventId, (Envelope, usize)>,
    /// Open calls by (trigger, agent), with the seq of their `agent:started`.
    open_calls: HashMap<(Option<EventId>, String), (u64, OpenCall)>,
    /// Calls closed as interrupted by a resume or a fork and not started again yet, by
    /// (trigger, agent), with the seq of their close: they are owed a rerun.
    owed_reruns: HashMap<(Option<EventId>, String), (u64, OpenCall)>,
    last_status: Option<SessionStatus>,
}

impl<'w, S: WorkflowState> Tail<'w, S> {
    fn new(wf: &'w Inner<S>, session: &SessionId, state: S, position: u64) -> Self {
        Self {
            wf,
            session: session.clone(),
            fold: Fold::at(state, position),
            window: Window::new(position),
            open_requests: Vec::new(),
            expected: HashMap::new(),
            triggers: HashMap::new(),
            open_calls: HashMap::new(),
            owed_reruns: HashMap::new(),
            last_status: None,
        }
    }

    /// Starts a fork's tail owing what its parent had under way at the fork point (what the
    /// fork records first: the rest of a cut final record, then what the parent had not
    /// recorded, and the calls it closes and runs again).
    fn inherit(&mut self, from: ForkFrom<S>) {
        let ForkFrom {
            derived,
            completing,
        } = from;
        let mut expect = |cause: EventId, expected: Expected| {
            self.expected
                .entry(cause)
                .or_insert_with(|| (0, VecDeque::new()))
                .1
                .push_back(expected);
        };
        for (pending, cause) in completing {
            if let Some(cause) = cause {
                expect(cause, Expected::Event(pending));
            }
        }
        let mut triggers = Vec::new();
        for item in derived.unrecorded {
            match item {
                Unrecorded::Event(pending, cause) => expect(cause, Expected::Event(pending)),
                Unrecorded::Start {
                    agent,
                    started,
                    trigger,
                } => {
                    expect(trigger.id, Expected::Start { agent, started });
                    triggers.push(trigger);
                }
            }
        }
        for call in derived.open_calls {
            if let Some(trigger) = &call.trigger {
                triggers.push(trigger.clone());
            }
            let key = (call.trigger_id, call.started.agent.clone());
            self.open_calls.insert(key, (0, call));
        }
        for trigger in triggers {
            self.triggers
                .entry(trigger.id)
                .or_insert_with(|| (trigger.clone(), 0))
                .1 += 1;
        }
    }

    /// The event just before the snapshot: not folded (the snapshot holds it), read only for
    /// the open requests a turn-ending `workflow:completed` lists.
    fn look_back(&mut self, event: &Envelope) {
        self.end_of_turn(event);
    }

    fn end_of_turn(&mut self, event: &Envelope) {
        if event.name != WorkflowCompleted::NAME {
            return;
        }
        match event.decode::<WorkflowCompleted>() {
            Ok(completed) => self.open_requests = completed.open_requests,
            Err(err) => {
                tracing::warn!(session = %self.session, error = %err, "a `workflow:completed` does not decode; its open requests are unknown");
            }
        }
        // A turn's end interrupts and closes what was running: nothing carries over.
        self.expected.clear();
        self.triggers.clear();
        self.open_calls.clear();
    }

    fn absorb(&mut self, seq: u64, event: Envelope) -> Result<(), Error> {
        self.end_of_turn(&event);
        self.last_status = Some(SessionStatus::after(&event.name, &event.payload));
        self.match_expected(&event);
        self.track(seq, &event);
        let (applied, event) = self.window.apply_kept(&mut self.fold, event);
        let mut consequences: VecDeque<Expected> = match applied {
            Applied::Handled(emit) => emit
                .into_pending()
                .into_iter()
                .map(Expected::Event)
                .collect(),
            Applied::Panicked(message) => {
                VecDeque::from([Expected::Event(Pending::of(&ErrorOccurred::recoverable(
                    "handler",
                    format!("the handler for `{}` panicked: {message}", event.name),
                    Some(event.id),
                )))])
            }
            Applied::Skipped => VecDeque::new(),
            Applied::Undecodable(message) => {
                return Err(Error::Undecodable {
                    session: self.session.clone(),
                    seq,
                    name: event.name.to_string(),
                    message,
                });
            }
        };
        let until = self
            .wf
            .until
            .as_ref()
            .is_some_and(|until| until(self.fold.state()));
        let mut starts = 0;
        if !until && event.name != WorkflowCompleted::NAME {
            for (agent, activation) in activations(&self.wf.agents, self.fold.state(), event) {
                match activation {
                    Err(message) => consequences.push_back(Expected::Event(Pending::of(
                        &ErrorOccurred::recoverable("agent", message, Some(event.id)),
                    ))),
                    Ok(activation) => {
                        starts += 1;
                        let name = agent.spec().name.to_owned();
                        consequences.push_back(Expected::Start {
                            agent: name.clone(),
                            started: Box::new(AgentStarted {
                                agent: name,
                                model: activation.model,
                                provider: None,
                                system: activation.system,
                                messages: activation
                                    .messages
                                    .iter()
                                    .map(crate::ChatMessage::recorded)
                                    .collect(),
                                prompt: activation.prompt,
                                reply: activation.reply,
                            }),
                        });
                    }
                }
            }
        }
        if starts > 0 {
            self.triggers.insert(event.id, (event.clone(), starts));
        }
        if !consequences.is_empty() {
            self.expected.insert(event.id, (seq, consequences));
        }
        let keep_from = self.fold.checkpoint_position();
        self.window.trim(keep_from);
        Ok(())
    }

    /// Crosses off the next expected consequence of this event's cause, if this is it.
    fn match_expected(&mut self, event: &Envelope) {
        let Some(cause) = event.caused_by else {
            return;
        };
        let Some((_, expected)) = self.expected.get_mut(&cause) else {
            return;
        };
        if expected
            .front()
            .is_some_and(|next| next.name() == event.name)
        {
            expected.pop_front();
            if expected.is_empty() {
                self.expected.remove(&cause);
            }
        }
    }

    /// Follows requests, answers and agent calls.
    fn track(&mut self, seq: u64, event: &Envelope) {
        match event.name.as_ref() {
            InputRequested::NAME => self.open_requests.push(event.id),
            // A fork begins with the requests open in its parent at the fork point.
            SessionForked::NAME if seq == 0 => {
                if let Ok(forked) = event.decode::<SessionForked>() {
                    self.open_requests = forked.open_requests;
                }
            }
            InputReceived::NAME => {
                if let Ok(received) = event.decode::<InputReceived>() {
                    self.open_requests.retain(|id| *id != received.request_id);
                }
            }
            AgentStarted::NAME => {
                let Ok(started) = event.decode::<AgentStarted>() else {
                    return;
                };
                let trigger = event
                    .caused_by
                    .and_then(|id| self.triggers.get(&id))
                    .map(|(trigger, _)| trigger.clone());
                let key = (event.caused_by, started.agent.clone());
                self.owed_reruns.remove(&key);
                self.open_calls.insert(
                    key,
                    (
                        seq,
                        OpenCall {
                            started,
                            trigger,
                            trigger_id: event.caused_by,
                        },
                    ),
                );
            }
            AgentCompleted::NAME => {
                let Ok(completed) = event.decode::<AgentCompleted>() else {
                    return;
                };
                // An interrupted call is run again by a resume, under the same trigger: keep
                // the trigger for that rerun (and for a resume of it, should it be cut too), and
                // the call, owed its rerun until that starts.
                let key = (event.caused_by, completed.agent);
                let Some((_, call)) = self.open_calls.remove(&key) else {
                    return;
                };
                if completed.outcome == crate::builtin::Outcome::Interrupted {
                    self.owed_reruns.insert(key, (seq, call));
                } else if let Some(cause) = event.caused_by
                    && let Some((_, refs)) = self.triggers.get_mut(&cause)
                {
                    *refs = refs.saturating_sub(1);
                    if *refs == 0 {
                        self.triggers.remove(&cause);
                    }
                }
            }
            _ => {}
        }
    }

    fn finish(
        self,
        len: u64,
        snapshot_at: u64,
        snapshot_bytes: Option<u64>,
        listed: SessionStatus,
    ) -> Derived<S> {
        let status = self.last_status.unwrap_or(listed);
        let mut unrecorded = Vec::new();
        let mut open_calls = Vec::new();
        if status.is_running() {
            let mut expected: Vec<_> = self.expected.into_iter().collect();
            expected.sort_by_key(|(_, (seq, _))| *seq);
            for (cause, (_, missing)) in expected {
                for item in missing {
                    match item {
                        Expected::Event(pending) => {
                            unrecorded.push(Unrecorded::Event(pending, cause));
                        }
                        Expected::Start { agent, started } => {
                            if let Some((trigger, _)) = self.triggers.get(&cause) {
                                unrecorded.push(Unrecorded::Start {
                                    agent,
                                    started,
                                    trigger: trigger.clone(),
                                });
                            }
                        }
                    }
                }
            }
            // Calls a resume or a fork closed and did not start again yet: started now.
            let mut owed: Vec<(u64, OpenCall)> = self.owed_reruns.into_values().collect();
            owed.sort_by_key(|(seq, _)| *seq);
            for (_, call) in owed {
                match call.trigger {
                    Some(trigger) => unrecorded.push(Unrecorded::Start {
                        agent: call.started.agent.clone(),
                        started: Box::new(call.started),
                        trigger,
                    }),
                    None => {
                        tracing::warn!(session = %self.session, agent = %call.started.agent, "an interrupted call's trigger is not in the session or its ancestors; it is not run again");
                    }
                }
            }
            let mut calls: Vec<(u64, OpenCall)> = self.open_calls.into_values().collect();
            calls.sort_by_key(|(seq, _)| *seq);
            open_calls.extend(calls.into_iter().map(|(_, call)| call));
        }
        Derived {
            state: self.fold.into_state(),
            len,
            snapshot_at,
            snapshot_bytes,
            status,
            open_requests: self.open_requests,
            unrecorded,
            open_calls,
        }
    }
}
