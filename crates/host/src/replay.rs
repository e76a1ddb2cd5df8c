//! [`Host::replay`]: re-execute a recorded session with today's code, every agent answered
//! from the recording (no model is called), and say where today's run parts from the
//! recorded one — the event each side has there, the patch between their payloads (the
//! prompt or the emitted event that changed) and between their states just after it — and
//! fold the recording through today's handlers to compare its state with the hashes the live
//! run recorded, which catches a handler that changed only the state.
//!
//! The re-execution is recorded in a store of its own in memory, into which the session's
//! ancestors are copied first (a fork re-executes as a fork of the same parent), so the
//! user's store is left as it was.

use std::sync::Arc;

use openharness_core::{RunOptions, SessionId, StateCheck, StateDivergence, Store};
use openharness_store::MemoryStore;
use openharness_tape::{Cassette, EventShape, TapeError};
use serde::Serialize;

use crate::Host;
use crate::error::HostError;

/// What a re-execution found ([`Host::replay`]).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Replayed {
    /// The recorded session.
    pub session: SessionId,
    /// Its length.
    pub len: u64,
    /// Whether today's run recorded every event as the recording did, and today's handlers
    /// folded the recording to every state it recorded.
    pub matched: bool,
    /// Where the events parted, when they did.
    pub divergence: Option<ReplayDivergence>,
    /// How many recorded state hashes today's fold was compared with (0: a recording made
    /// before state hashes were recorded, whose state could not be checked).
    pub state_hashes_checked: u64,
    /// When the state's fields changed since the session was recorded, which is why no state
    /// hash was compared ([`StateCheck::shape_changed`]).
    pub state_shape_changed: Option<openharness_core::ShapeChange>,
    /// Where today's handlers fold the recording to another state than the live run had,
    /// when they do: a handler that changed only what it does to the state parts here while
    /// every event matches ([`Workflow::check_state`](openharness_core::Workflow::check_state)).
    pub state_divergence: Option<StateDivergence>,
    /// When the session was recorded by other code than today's: which, and which now.
    pub code_change: Option<crate::CodeChange>,
}

/// Where a re-execution parted from its recording.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplayDivergence {
    /// The recording's seq of the first event that differs (as `Divergence::seq`).
    pub seq: u64,
    /// The recording's event there (`None`: the recording had ended).
    pub recorded: Option<EventShape>,
    /// Today's event there (`None`: today's run ended first).
    pub today: Option<EventShape>,
    /// When both have one name: the JSON patch from the recorded payload to today's.
    #[schemars(with = "Option<serde_json::Value>")]
    pub payload_patch: Option<json_patch::Patch>,
    /// The JSON patch from the recorded state to today's, each just after that event.
    #[schemars(with = "Option<serde_json::Value>")]
    pub state_patch: Option<json_patch::Patch>,
}

/// The first place a re-execution parts from its recording ([`Replayed::first_divergence`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FirstDivergence<'a> {
    /// Today's handlers fold the recording to another state, at or before the first event that
    /// differs: a state that parts at the same seq as the events is named first, since the
    /// handler that changed it may have run before that event.
    State(&'a StateDivergence),
    /// Today's run records another event (or ends elsewhere) first.
    Events(&'a ReplayDivergence),
}

impl FirstDivergence<'_> {
    /// The seq where it parts: the event after which the state differs, or the first event
    /// that differs.
    pub fn seq(&self) -> u64 {
        match self {
            Self::State(state) => state.seq,
            Self::Events(events) => events.seq,
        }
    }
}

impl Replayed {
    /// Where the replay parts first: the earlier of the first event that differs and the
    /// first state that differs (the state at a tie); `None` when it matched.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// use openharness_host::FirstDivergence;
    /// match host.replay(&session).await?.first_divergence() {
    ///     None => println!("today's code replays it"),
    ///     Some(FirstDivergence::State(d)) => println!("the state parts after seq {}", d.seq),
    ///     Some(FirstDivergence::Events(d)) => println!("the events part at seq {}", d.seq),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn first_divergence(&self) -> Option<FirstDivergence<'_>> {
        match (&self.state_divergence, &self.divergence) {
            (Some(state), Some(events)) if events.seq < state.seq => {
                Some(FirstDivergence::Events(events))
            }
            (Some(state), _) => Some(FirstDivergence::State(state)),
            (None, Some(events)) => Some(FirstDivergence::Events(events)),
            (None, None) => None,
        }
    }
}

/// Re-executes `session` (read from `workflow`'s store) into `store` as `into`, with the
/// agents' settings of `options`: `None` when every event matched.
pub(crate) async fn replay_into<S: openharness_core::WorkflowState>(
    workflow: &openharness_core::Workflow<S>,
    session: &SessionId,
    store: Arc<dyn Store>,
    into: &SessionId,
    options: RunOptions,
) -> Result<Option<openharness_tape::Divergence>, HostError> {
    let cassette = Cassette::load(workflow, session).await?;
    let target = workflow.with_shared_store(store);
    match cassette
        .replay(&target, options.session(into.clone()))
        .await
    {
        Ok(_) => Ok(None),
        Err(TapeError::Diverged(divergence)) => Ok(Some(*divergence)),
        Err(other) => Err(other.into()),
    }
}

impl Host {
    /// Re-executes `session` with today's code (every agent answered from the recording;
    /// no model is called) and compares the two runs event by event: where they part, the
    /// patch between the two events' payloads and between the two states just after.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// let replayed = host.replay(&session).await?;
    /// match &replayed.divergence {
    ///     None => println!("today's code records the same {} events", replayed.len),
    ///     Some(d) => println!("parts at seq {}: {:?}", d.seq, d.payload_patch),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn replay(&self, session: &SessionId) -> Result<Replayed, HostError> {
        let hosted = self.workflow_of(session).await?;
        let len = self.info(session).await?.count;
        let scratch: Arc<dyn Store> = Arc::new(MemoryStore::new());
        self.copy_ancestors(session, scratch.as_ref()).await?;
        let code_change = self.code_changed(session).await?;
        let into = SessionId::new();
        // Its turns get what the workflow's owner gives them (the platform's agent); the
        // recording answers every call.
        let options = self.own_turn_options(session).await?;
        let state = self.check_state(session).await?;
        let Some(divergence) = hosted
            .replay_into(session, Arc::clone(&scratch), &into, options)
            .await?
        else {
            return Ok(Replayed {
                session: session.clone(),
                len,
                matched: state.divergence.is_none(),
                divergence: None,
                state_hashes_checked: state.checked,
                state_shape_changed: state.shape_changed.clone(),
                state_divergence: state.divergence,
                code_change,
            });
        };
        let payload_patch = match (&divergence.expected, &divergence.actual) {
            (Some(recorded), Some(today)) if recorded.name == today.name => {
                Some(json_patch::diff(&recorded.payload, &today.payload))
            }
            _ => None,
        };
        let position = divergence.seq + 1;
        let recorded_state = hosted.state_at(session, position).await?;
        let today_state = hosted
            .with_store(scratch)
            .state_at(&into, position)
            .await
            .ok();
        Ok(Replayed {
            session: session.clone(),
            len,
            matched: false,
            state_hashes_checked: state.checked,
            state_shape_changed: state.shape_changed.clone(),
            state_divergence: state.divergence,
            code_change,
            divergence: Some(ReplayDivergence {
                seq: divergence.seq,
                state_patch: today_state.map(|today| json_patch::diff(&recorded_state, &today)),
                recorded: divergence.expected,
                today: divergence.actual,
                payload_patch,
            }),
        })
    }

    /// Folds `session` through today's handlers and compares its state with the hashes the
    /// live run recorded ([`Workflow::check_state`](openharness_core::Workflow::check_state)):
    /// no re-execution, nothing recorded.
    ///
    /// ```
    /// # async fn demo(host: &openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// if let Some(d) = host.check_state(&session).await?.divergence {
    ///     println!("today's handlers part from the recorded state after seq {}", d.seq);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn check_state(&self, session: &SessionId) -> Result<StateCheck, HostError> {
        self.workflow_of(session).await?.check_state(session).await
    }

    /// Copies the sessions `session` is forked from (its parent, the parent's parent, ...)
    /// into `store`, whole.
    async fn copy_ancestors(
        &self,
        session: &SessionId,
        store: &dyn Store,
    ) -> Result<(), HostError> {
        // Every session above this one: the parent, its parent, ... up to the root.
        for ancestor in self.ancestry(session).await?.into_iter().skip(1) {
            let events = self
                .store
                .all_events(&ancestor.session)
                .await
                .map_err(self.store_error())?;
            store
                .append(&ancestor.session, &events, 0)
                .await
                .map_err(|source| HostError::store(store, source))?;
        }
        Ok(())
    }
}
