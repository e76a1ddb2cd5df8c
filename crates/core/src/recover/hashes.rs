//! [`Workflow::check_state`](crate::Workflow::check_state): a recording folded through
//! today's handlers from its first event (no snapshot of it: a snapshot holds the state some
//! code computed, not today's; a fork starts from its parent's state read as usual, so check
//! the parent for the parent's events), its state hashed wherever the live run recorded one
//! ([`Envelope::state_hash`](crate::Envelope::state_hash)), and the first position where the
//! two part. A handler that changed only what it does to the state emits the same events, so
//! only this check sees it.

use serde::Serialize;

use super::positions::folded;
use super::*;
use crate::state_hash::json_hash;

/// What [`Workflow::check_state`](crate::Workflow::check_state) found.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StateCheck {
    /// How many recorded state hashes today's fold was compared with (0 for a recording made
    /// before they were recorded: then nothing could be checked).
    pub checked: u64,
    /// The first position where today's state is not the recorded one, if any.
    pub divergence: Option<StateDivergence>,
    /// When the state's fields changed since the session was recorded (its
    /// `workflow:started.stateShape` is not today's): then no hash was compared, since every
    /// one would differ without a bug. The recorded shape and today's.
    pub shape_changed: Option<ShapeChange>,
}

/// The state's shape a session was recorded with, and today's ([`StateCheck::shape_changed`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct ShapeChange {
    /// The shape `workflow:started` recorded.
    pub recorded: String,
    /// Today's.
    pub today: String,
}

/// Where today's fold of a recording parts from the state the live run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StateDivergence {
    /// The seq of the first event after which today's state hashes differently from what
    /// was recorded there.
    pub seq: u64,
    /// The event's name.
    pub event: String,
    /// The hash the live run recorded.
    pub recorded_hash: String,
    /// Today's hash.
    pub today_hash: String,
    /// Today's state just after the event.
    pub today: serde_json::Value,
    /// The live run's state there, when the store holds a snapshot of it: one saved before
    /// the state next changed whose hash is the recorded one (saved by the live run).
    pub recorded: Option<serde_json::Value>,
    /// The JSON patch from the recorded state to today's, when the recorded state is known.
    #[schemars(with = "Option<serde_json::Value>")]
    pub patch: Option<json_patch::Patch>,
    /// The events since the last hash that matched whose handlers changed the state, in
    /// order: one of them folds differently today (the handler to look at).
    pub changed_by: Vec<ChangedBy>,
}

/// An event a handler folded into the state ([`StateDivergence::changed_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct ChangedBy {
    /// Its seq.
    pub seq: u64,
    /// Its name.
    pub event: String,
}

/// See [`StateCheck`]: one streamed pass over `session`'s log from its base state (a fork's
/// parent's state at the fork point), hashing the state after each event that carries a
/// recorded hash.
pub(crate) async fn check_state<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
) -> Result<StateCheck, Error> {
    let failed = store_error(wf, session);
    let len = wf
        .store
        .session(session)
        .await
        .map_err(&failed)?
        .filter(|info| info.count > 0)
        .ok_or_else(|| Error::SessionNotFound(session.clone()))?
        .count;
    if let Some(shape_changed) = shape_change(wf, session).await? {
        return Ok(StateCheck {
            checked: 0,
            divergence: None,
            shape_changed: Some(shape_changed),
        });
    }
    let base = session_base(wf, session, 0).await?;
    // A check beside other reads of the session: they report what a fold skips.
    let mut fold = crate::adapter::StreamedFold::at(base, 0)
        .restoring()
        .quiet();
    let mut events = wf
        .store
        .stream_events_for_fold(session, 0..len, folded::<S>);
    let mut checked = 0;
    let mut changed_by = Vec::new();
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(&failed)?;
        let (seq, name, hash) = (
            recorded.seq,
            recorded.event.name.to_string(),
            recorded.event.state_hash.clone(),
        );
        if matches!(
            fold.apply(recorded.event),
            crate::adapter::Applied::Handled(_) | crate::adapter::Applied::Panicked(_)
        ) {
            changed_by.push(ChangedBy {
                seq,
                event: name.clone(),
            });
        }
        let Some(hash) = hash else { continue };
        checked += 1;
        let today = serde_json::to_value(fold.state()).map_err(|err| {
            Error::Other(
                format!("today's state of session {session} does not serialize: {err}").into(),
            )
        })?;
        let today_hash = json_hash(&today);
        if today_hash == hash {
            changed_by.clear();
            continue;
        }
        // The recorded state holds until the next event that records a hash: a snapshot
        // anywhere in between (saved by the live run: its hash says so) is that state.
        let mut unchanged_to = len;
        while let Some(next) = events.next().await {
            match next {
                Ok(next) if next.event.state_hash.is_some() => {
                    unchanged_to = next.seq;
                    break;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let recorded = recorded_state(wf, session, seq + 1..=unchanged_to, &hash).await;
        let patch = recorded
            .as_ref()
            .map(|recorded| json_patch::diff(recorded, &today));
        return Ok(StateCheck {
            checked,
            shape_changed: None,
            divergence: Some(StateDivergence {
                seq,
                event: name,
                recorded_hash: hash,
                today_hash,
                today,
                recorded,
                patch,
                changed_by,
            }),
        });
    }
    Ok(StateCheck {
        checked,
        divergence: None,
        shape_changed: None,
    })
}

/// Whether the state's shape the session (or the session it was forked from, at any depth)
/// recorded in its `workflow:started` is not today's.
async fn shape_change<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
) -> Result<Option<ShapeChange>, Error> {
    let Some(today) = &wf.code.state_shape else {
        return Ok(None);
    };
    let mut current = session.clone();
    for _ in 0..=MAX_FORK_DEPTH {
        let first = wf
            .store
            .events(&current, 0..2)
            .await
            .map_err(store_error(wf, &current))?;
        if let Some(started) = first
            .iter()
            .find(|event| event.name == crate::builtin::WorkflowStarted::NAME)
        {
            let recorded = started
                .decode::<crate::builtin::WorkflowStarted>()
                .ok()
                .and_then(|started| started.state_shape);
            return Ok(recorded
                .filter(|recorded| recorded != today)
                .map(|recorded| ShapeChange {
                    recorded,
                    today: today.clone(),
                }));
        }
        match first
            .first()
            .filter(|event| event.name == SessionForked::NAME)
            .and_then(|event| event.decode::<SessionForked>().ok())
        {
            Some(forked) => current = forked.parent,
            None => return Ok(None),
        }
    }
    Ok(None)
}

/// The live run's state at the positions of `during` (where it did not change): the latest
/// stored snapshot among them, when its state hashes to `hash`.
async fn recorded_state<S: WorkflowState>(
    wf: &Inner<S>,
    session: &SessionId,
    during: std::ops::RangeInclusive<u64>,
    hash: &str,
) -> Option<serde_json::Value> {
    let snapshot = wf
        .store
        .latest_snapshot(session, *during.end())
        .await
        .ok()??;
    (during.contains(&snapshot.position) && json_hash(&snapshot.state) == hash)
        .then_some(snapshot.state)
}
