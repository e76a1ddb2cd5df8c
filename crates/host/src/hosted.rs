//! [`Hosted`]: one workflow behind a handle that knows nothing of its state type. Everything
//! typed (states, folds, forks, turns) happens inside; what comes out is JSON.

use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::{
    BoxedProvider, EventId, RunOptions, SessionId, StateCheck, Store, Workflow, WorkflowState,
    adapter::{AgentSpec, Unfinished},
};
use openharness_tape::{At, ForkSession, LoadTape, Tape};
use serde_json::Value;

use crate::error::HostError;
use crate::json_fold::{JsonFold, TypedFold};
use crate::prepared::{PreparedFork, TypedFork};
use crate::wire::{ForkPoint, PositionView, StateAt, TurnOutcome};
use crate::wire::{encode, outcome};

/// A workflow with its state type erased: what a host, a server or a CLI needs of it.
///
/// Implemented for every [`Workflow<S>`] through `<dyn Hosted>::of`; registered in a
/// [`crate::Host`] by name.
#[async_trait]
pub trait Hosted: Send + Sync + 'static {
    /// The workflow's name (recorded in `workflow:started`).
    fn name(&self) -> &str;

    /// Its agents.
    fn agents(&self) -> Vec<AgentSpec>;

    /// Which code it is, as its `workflow:started` records it ([`Workflow::code`]).
    fn code(&self) -> openharness_core::adapter::CodeIdentity;

    /// The state every new session starts from.
    fn initial_state(&self) -> Result<Value, HostError>;

    /// The same workflow recording to (and reading from) `store`.
    fn with_store(&self, store: Arc<dyn Store>) -> Arc<dyn Hosted>;

    /// The same workflow asking `provider` (a real model instead of a script, another model
    /// for a fork, a cassette).
    fn with_provider(&self, provider: BoxedProvider) -> Arc<dyn Hosted>;

    /// The name of the provider its agents ask ([`openharness_core::Provider::name`]:
    /// `scripted`, `openai`, ...), as their `agent:started` records it; `None` when it has
    /// none or does not say.
    fn provider_name(&self) -> Option<&str> {
        None
    }

    /// Starts a new session (`input` recorded as `user:input`).
    async fn run(
        &self,
        input: Option<String>,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError>;

    /// A turn with new input on a recorded session ([`Workflow::send`]).
    async fn send(
        &self,
        session: &SessionId,
        input: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError>;

    /// Answers an open `input:requested` ([`Workflow::respond`]).
    async fn respond(
        &self,
        session: &SessionId,
        request: EventId,
        answer: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError>;

    /// Finishes a turn a crash cut off ([`Workflow::resume`]).
    async fn resume(
        &self,
        session: &SessionId,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError>;

    /// What a resume would finish ([`Workflow::unfinished`]).
    async fn unfinished(&self, session: &SessionId) -> Result<Unfinished, HostError>;

    /// The state at `position` (clamped), as JSON.
    async fn state_at(&self, session: &SessionId, position: u64) -> Result<Value, HostError>;

    /// The recording folded through today's handlers, compared with its state hashes
    /// ([`Workflow::check_state`]).
    async fn check_state(&self, session: &SessionId) -> Result<StateCheck, HostError>;

    /// The states at several positions, read in one pass: one tape over the session, moved to
    /// each position in turn.
    async fn states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> Result<Vec<StateAt>, HostError>;

    /// Forks `session` at `at` into a new session and runs it on.
    async fn fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError>;

    /// Finds the fork point `at` in `session` and derives the state there once, ready to
    /// run any number of times ([`PreparedFork::run`]).
    async fn prepare_fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
    ) -> Result<Box<dyn PreparedFork>, HostError>;

    /// Re-executes `session` with this workflow's code, its agents answered from the
    /// recording, into `store` as session `into`, each turn given the agents' settings of
    /// `options` (see [`crate::Host::replay`]): `None` when every event matched, else where
    /// it parted.
    async fn replay_into(
        &self,
        session: &SessionId,
        store: Arc<dyn Store>,
        into: &SessionId,
        options: RunOptions,
    ) -> Result<Option<openharness_tape::Divergence>, HostError>;

    /// A fold of this workflow's events starting from `state` (the JSON of a state of this
    /// workflow), for a caller that reads a session's events itself; `None` when `state` does
    /// not decode as this workflow's state.
    fn fold_from(&self, state: Value) -> Option<Box<dyn JsonFold>>;

    /// A tape over the session whose states come out as JSON (for debuggers).
    async fn tape(&self, session: &SessionId) -> Result<Box<dyn JsonTape>, HostError>;

    /// The session at `position` (clamped): the event that led there, the state and what a
    /// fold of the whole session skips. The default moves a [`Hosted::tape`] there; the
    /// handle of a typed workflow reads it in one streamed pass ([`Workflow::view_at`]),
    /// holding one state instead of the session.
    async fn view_at(&self, session: &SessionId, position: u64) -> Result<PositionView, HostError> {
        let mut tape = self.tape(session).await?;
        let position = tape.step_to(position);
        let current = position.checked_sub(1).and_then(|seq| {
            tape.current()
                .map(|event| openharness_core::adapter::Recorded {
                    seq,
                    event: event.clone(),
                })
        });
        Ok(PositionView {
            position,
            len: tape.len(),
            current,
            state: tape.state()?,
            skipped: tape.skipped().clone(),
        })
    }
}

impl dyn Hosted {
    /// The handle of a typed workflow.
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) {
    /// let hosted = <dyn openharness_host::Hosted>::of(workflow);
    /// println!("{}", hosted.name());
    /// # }
    /// ```
    pub fn of<S: WorkflowState>(workflow: Workflow<S>) -> Arc<dyn Hosted> {
        Arc::new(Handle(workflow))
    }
}

/// A [`Tape`] whose states come out as JSON: steps, jumps, the current event and diffs.
pub trait JsonTape: Send {
    /// The current position.
    fn position(&self) -> u64;
    /// The session's length.
    fn len(&self) -> u64;
    /// Whether the session has no events.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Moves to `position` (clamped); returns the new position.
    fn step_to(&mut self, position: u64) -> u64;
    /// The event that led to the current position.
    fn current(&self) -> Option<&openharness_core::Envelope>;
    /// Every event of the session.
    fn events(&self) -> &[openharness_core::Envelope];
    /// The state at the current position.
    fn state(&self) -> Result<Value, HostError>;
    /// The JSON patch from the state at `a` to the state at `b`.
    fn diff(&self, a: u64, b: u64) -> Result<json_patch::Patch, HostError>;
    /// What folding the session skipped (unknown names, undecodable payloads), with seqs.
    fn skipped(&self) -> &openharness_core::adapter::Skipped;
}

struct Handle<S: WorkflowState>(Workflow<S>);

/// A wire fork point as the tape's [`At`].
fn typed_at<S>(at: ForkPoint) -> At<S> {
    match at {
        ForkPoint::Position { position } => At::position(position),
        ForkPoint::Nth { name, n } => At::nth(name, n),
    }
}

struct TypedTape<S: WorkflowState>(Tape<S>);

impl<S: WorkflowState> JsonTape for TypedTape<S> {
    fn position(&self) -> u64 {
        self.0.position()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
    fn step_to(&mut self, position: u64) -> u64 {
        self.0.step_to(position)
    }
    fn current(&self) -> Option<&openharness_core::Envelope> {
        self.0.current()
    }
    fn events(&self) -> &[openharness_core::Envelope] {
        self.0.events()
    }
    fn state(&self) -> Result<Value, HostError> {
        serde_json::to_value(self.0.state()).map_err(|source| HostError::Encode {
            session: self.0.session().clone(),
            position: self.0.position(),
            source,
        })
    }
    fn diff(&self, a: u64, b: u64) -> Result<json_patch::Patch, HostError> {
        Ok(self.0.diff(a, b)?)
    }
    fn skipped(&self) -> &openharness_core::adapter::Skipped {
        self.0.skipped()
    }
}

#[async_trait]
impl<S: WorkflowState> Hosted for Handle<S> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn agents(&self) -> Vec<AgentSpec> {
        self.0.agents()
    }

    fn code(&self) -> openharness_core::adapter::CodeIdentity {
        self.0.code().clone()
    }

    fn initial_state(&self) -> Result<Value, HostError> {
        encode(&SessionId::new(), 0, self.0.initial_state())
    }

    fn with_store(&self, store: Arc<dyn Store>) -> Arc<dyn Hosted> {
        <dyn Hosted>::of(self.0.with_shared_store(store))
    }

    fn with_provider(&self, provider: BoxedProvider) -> Arc<dyn Hosted> {
        <dyn Hosted>::of(self.0.with_provider(provider))
    }

    fn provider_name(&self) -> Option<&str> {
        self.0.provider_name()
    }

    async fn run(
        &self,
        input: Option<String>,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let options = match input {
            Some(text) => options.input(text),
            None => options,
        };
        outcome(self.0.run(options).await)
    }

    async fn send(
        &self,
        session: &SessionId,
        input: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        outcome(self.0.send(session, input, options).await)
    }

    async fn respond(
        &self,
        session: &SessionId,
        request: EventId,
        answer: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        outcome(self.0.respond(session, request, answer, options).await)
    }

    async fn resume(
        &self,
        session: &SessionId,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        outcome(self.0.resume(session, options).await)
    }

    async fn unfinished(&self, session: &SessionId) -> Result<Unfinished, HostError> {
        Ok(self.0.unfinished(session).await?)
    }

    async fn state_at(&self, session: &SessionId, position: u64) -> Result<Value, HostError> {
        let state = self.0.load_state_at(session, position).await?;
        encode(session, position, &state)
    }

    async fn check_state(&self, session: &SessionId) -> Result<StateCheck, HostError> {
        Ok(self.0.check_state(session).await?)
    }

    async fn states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> Result<Vec<StateAt>, HostError> {
        self.0
            .load_states_at(session, positions)
            .await?
            .into_iter()
            .map(|(position, state)| {
                Ok(StateAt {
                    position,
                    state: encode(session, position, &state)?,
                })
            })
            .collect()
    }

    async fn fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let fork = self.0.fork(session, typed_at(at)).await?;
        let outcome = fork.run(options).await?;
        let (session, position) = (outcome.session.clone(), outcome.len);
        TurnOutcome::of(outcome).map_err(|source| HostError::Encode {
            session,
            position,
            source,
        })
    }

    async fn prepare_fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
    ) -> Result<Box<dyn PreparedFork>, HostError> {
        let fork = self.0.fork(session, typed_at(at)).await?;
        Ok(Box::new(TypedFork(fork)))
    }

    async fn replay_into(
        &self,
        session: &SessionId,
        store: Arc<dyn Store>,
        into: &SessionId,
        options: RunOptions,
    ) -> Result<Option<openharness_tape::Divergence>, HostError> {
        crate::replay::replay_into(&self.0, session, store, into, options).await
    }

    fn fold_from(&self, state: Value) -> Option<Box<dyn JsonFold>> {
        TypedFold::<S>::from_json(state).map(|fold| Box::new(fold) as Box<dyn JsonFold>)
    }

    async fn tape(&self, session: &SessionId) -> Result<Box<dyn JsonTape>, HostError> {
        Ok(Box::new(TypedTape(self.0.load(session).await?)))
    }

    async fn view_at(&self, session: &SessionId, position: u64) -> Result<PositionView, HostError> {
        let view = self.0.view_at(session, position).await?;
        Ok(PositionView {
            position: view.position,
            len: view.len,
            current: view.current,
            state: encode(session, view.position, &view.state)?,
            skipped: view.skipped,
        })
    }
}
