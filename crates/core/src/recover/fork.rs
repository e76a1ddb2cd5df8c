//! Deriving a fork: the state at its fork point, read from the ancestors' logs, and the events
//! it inherits.

use super::*;

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

/// The `session:forked` a session begins with, if it is a fork.
pub(super) async fn fork_origin<S: WorkflowState>(
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

/// The event `id` of one of `session`'s ancestors, before the point each fork starts from
/// (none when `session` is no fork or no ancestor holds it).
pub(super) async fn inherited_event<S: WorkflowState>(
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
