//! The state (or the view) at any position of a session: the nearest snapshot at or before it,
//! then the events after it, folded; a fork's positions start from its parent's state at the
//! fork point.

use super::*;
use crate::event::EventSet as _;
use crate::store::EventStream;

/// The events a fold of `S` reads payloads of: those its handlers decode, and the rollbacks
/// every fold honours.
pub(super) fn folded<S: WorkflowState>(name: &str) -> bool {
    S::Events::contains(name) || name == crate::builtin::TurnRolledBack::NAME
}

/// The state at position 0 of `session`: the workflow's initial state, or for a fork the
/// parent's state at the fork point.
pub(super) fn session_base<'a, S: WorkflowState>(
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
pub(super) fn edited<S: WorkflowState>(
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
///
/// The fold takes no checkpoints: a copy of a state of plain `Vec`s costs as much as the
/// state (at 10,000 tasks the race bench's board took longer to copy than its whole jump took
/// with `imbl` lists). Should a handler panic, the read starts over with a fold that takes
/// them, which rolls the panicking event back as the live run did.
pub(crate) async fn state_at<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
    depth: usize,
) -> Result<S, Error> {
    if let Some(state) = fold_to(wf, session, position, depth, false).await? {
        return Ok(state);
    }
    fold_to(wf, session, position, depth, true)
        .await?
        .ok_or_else(|| Error::Other("a fold that takes checkpoints was spoiled".into()))
}

/// Where a read of `session` that folds up to `end` starts: the latest snapshot at or before
/// `at_most` that decodes (or the session's base state, at 0), and the stream of the events
/// from there to `end`, for the workflow's fold. The stream's first page is read while the
/// snapshot decodes (on the default store, on another thread).
async fn start_of_read<'a, S: WorkflowState>(
    wf: &'a Inner<S>,
    session: &SessionId,
    at_most: u64,
    end: u64,
    depth: usize,
) -> Result<(S, u64, EventStream<'a>), Error> {
    let events_from = |from: u64| {
        wf.store
            .stream_events_for_fold(session, from..end, folded::<S>)
    };
    let found = decoded_snapshot(wf, session, at_most, |position, _| {
        let mut events = events_from(position);
        events.start();
        events
    })
    .await?;
    Ok(match found {
        Some((state, from, events)) => (state, from, events),
        None => {
            let state = Box::pin(session_base(wf, session, depth)).await?;
            (state, 0, events_from(0))
        }
    })
}

/// [`state_at`]'s fold, with or without checkpoints; `None` when a handler panicked in a fold
/// without them.
async fn fold_to<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    position: u64,
    depth: usize,
    checkpoints: bool,
) -> Result<Option<S>, Error> {
    let failed = store_error(wf, session);
    let (state, from, mut events) = start_of_read(wf, session, position, position, depth).await?;
    let mut fold = crate::adapter::StreamedFold::at(state, from).restoring();
    if !checkpoints {
        fold = fold.without_checkpoints();
    }
    let mut backfill = crate::backfill::Backfill::new(from, wf.store.as_ref());
    while let Some(recorded) = events.next().await {
        fold.apply(recorded.map_err(&failed)?.event);
        if fold.spoiled() {
            return Ok(None);
        }
        if backfill.due(fold.position()) {
            backfill.keep(fold.position(), fold.state());
        }
    }
    backfill.write(Arc::clone(&wf.store), session);
    Ok(Some(fold.into_state()))
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
    let (state, from, mut events) = start_of_read(wf, session, first, last, 0).await?;
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    let mut order = order.into_iter().peekable();
    let mut found: Vec<Option<(u64, S)>> = vec![None; positions.len()];
    let mut fold = Fold::at(state, from).restoring();
    let mut window = Window::new(from);
    let mut take = |fold: &Fold<S>, everything: bool| {
        while let Some(i) = order.next_if(|&i| everything || positions[i] <= fold.position()) {
            found[i] = Some((fold.position(), fold.state().clone()));
        }
    };
    take(&fold, false);
    let mut backfill = crate::backfill::Backfill::new(from, wf.store.as_ref());
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
    pub current: Option<crate::adapter::Recorded>,
    /// The state at `position`.
    pub state: S,
    /// What folding the whole session skips (unknown and undecodable events).
    pub skipped: crate::adapter::Skipped,
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
    let mut fold = Fold::new(base).restoring();
    let mut window = Window::new(0);
    let mut at = (position == 0).then(|| fold.state().clone());
    // The fold needs only the payloads its handlers decode; the current event is read whole.
    let current = match position.checked_sub(1) {
        Some(seq) => {
            let read = wf.store.events(session, seq..position).await;
            let event = read.map_err(&failed)?.into_iter().next();
            event.map(|event| crate::adapter::Recorded { seq, event })
        }
        None => None,
    };
    let mut events = wf
        .store
        .stream_events_for_fold(session, 0..u64::MAX, folded::<S>);
    while let Some(recorded) = events.next().await {
        window.apply(&mut fold, recorded.map_err(&failed)?.event);
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
