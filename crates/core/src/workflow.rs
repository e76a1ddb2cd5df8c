//! [`Workflow`]: a state with its handlers, a set of agents, a stop condition, a store and a
//! provider, assembled by [`Workflow::builder`] and run with [`Workflow::run`].

use std::fmt;
use std::sync::Arc;

use crate::agent::{Agent, AgentSpec, Erased, ErasedAgent};
use crate::builtin::{SessionForked, WorkflowStarted};
use crate::definition::{Inner, Until, WorkflowState};
use crate::emit::Pending;
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::Fold;
use crate::locks::SessionGuard;
use crate::provider::{Provider, Usage};
use crate::recover::derive;
use crate::run::{Continuation, RunOptions, RunOutcome, StopReason, Unfinished};
use crate::runtime::{Start, Turn, TurnBegin};
use crate::store::Store;

/// A runnable workflow. Cheap to clone; clones share agents, store and provider.
///
/// ```
/// use openharness_core::{Workflow, adapter::WorkflowBuilder};
/// fn assemble<S: openharness_core::WorkflowState + Default>(store: impl openharness_core::Store) -> Result<Workflow<S>, openharness_core::Error> {
///     Workflow::builder("my-workflow").initial_state(S::default()).store(store).build()
/// }
/// ```
pub struct Workflow<S: WorkflowState> {
    pub(crate) inner: Arc<Inner<S>>,
}

impl<S: WorkflowState> Clone for Workflow<S> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S: WorkflowState> fmt::Debug for Workflow<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("name", &self.inner.name)
            .field("agents", &self.agents())
            .field("store", &self.inner.store.describe())
            .field(
                "provider",
                &self.inner.provider.as_ref().map(|p| p.name().to_owned()),
            )
            .finish_non_exhaustive()
    }
}

impl<S: WorkflowState> Workflow<S> {
    /// Starts building a workflow called `name` (recorded in `workflow:started`).
    pub fn builder(name: impl Into<String>) -> WorkflowBuilder<S> {
        WorkflowBuilder {
            name: name.into(),
            reads: Vec::new(),
            version: None,
            commit: None,
            initial: None,
            agents: Vec::new(),
            until: None,
            store: None,
            provider: None,
            max_output_attempts: 3,
            state_hashes: true,
        }
    }

    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The state every run starts from.
    pub fn initial_state(&self) -> &S {
        &self.inner.initial
    }

    /// The agents, in registration order.
    pub fn agents(&self) -> Vec<AgentSpec> {
        self.inner.agents.iter().map(|a| a.spec()).collect()
    }

    /// The store runs are recorded to.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.inner.store)
    }

    /// The name of the provider its agents ask ([`crate::Provider::name`]: `anthropic`,
    /// `openai`, `scripted`, ...), as their `agent:started` records it; `None` without one.
    pub fn provider_name(&self) -> Option<&str> {
        self.inner.provider.as_ref().map(|provider| provider.name())
    }

    /// Whether `until` holds for `state` (false when no `until` was set).
    pub fn is_done(&self, state: &S) -> bool {
        self.inner.until.as_ref().is_some_and(|until| until(state))
    }

    /// A copy of this workflow using another provider (to compare models on a fork, or to
    /// replay with a cassette).
    #[must_use]
    pub fn with_provider(&self, provider: impl Provider) -> Self {
        self.rebuild(|inner| inner.provider = Some(Arc::new(provider)))
    }

    /// A copy of this workflow recording to another store.
    #[must_use]
    pub fn with_store(&self, store: impl Store) -> Self {
        self.rebuild(|inner| inner.store = Arc::new(store))
    }

    /// Which code this workflow is, as its `workflow:started` records it: a fingerprint of
    /// its name, state type, handled events and agents (names, triggers, events, output
    /// schemas), and the version and commit it was built with.
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) {
    /// println!("code {} ({:?})", workflow.code().code, workflow.code().version);
    /// # }
    /// ```
    pub fn code(&self) -> &crate::adapter::CodeIdentity {
        &self.inner.code
    }

    /// Whether this workflow folds and forks sessions recorded by workflow `recorded`: its
    /// own, and those of the workflows it [`reads`](WorkflowBuilder::reads).
    pub fn folds_sessions_of(&self, recorded: &str) -> bool {
        self.inner.reads(recorded)
    }

    /// A copy of this workflow recording to a store shared with other owners (a host that
    /// runs several workflows on one store).
    #[must_use]
    pub fn with_shared_store(&self, store: Arc<dyn Store>) -> Self {
        self.rebuild(|inner| inner.store = store)
    }

    fn rebuild(&self, change: impl FnOnce(&mut Inner<S>)) -> Self {
        let mut inner = Inner {
            name: self.inner.name.clone(),
            reads: self.inner.reads.clone(),
            code: self.inner.code.clone(),
            initial: self.inner.initial.clone(),
            agents: self.inner.agents.clone(),
            until: self.inner.until.clone(),
            store: Arc::clone(&self.inner.store),
            provider: self.inner.provider.clone(),
            max_output_attempts: self.inner.max_output_attempts,
            state_hashes: self.inner.state_hashes,
            locks: Arc::clone(&self.inner.locks),
        };
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Folds `events` (a session's log from seq 0) through the handlers, with no agent and no
    /// network: the state at position `events.len()`.
    pub fn fold(&self, events: &[Envelope]) -> S {
        let mut fold = Fold::new(self.inner.initial.clone()).restoring();
        for event in events {
            fold.apply(event, events);
        }
        fold.into_state()
    }

    /// Runs the workflow to completion, recording every event to the store.
    ///
    /// The run ends when `until` holds, when nothing is left to do, on cancellation, or when a
    /// guard trips; the reason is in [`RunOutcome::reason`]. A store failure ends it with
    /// [`Error::Store`].
    pub async fn run(&self, options: RunOptions) -> Result<RunOutcome<S>, Error> {
        let mut options = options;
        let session = options.session.get_or_insert_with(SessionId::new).clone();
        let guard = self.lock(&session, options.refuses_if_busy()).await?;
        crate::runtime::run(&self.inner, options, Start::Fresh, guard).await
    }

    /// Runs the workflow on from `from` instead of its initial state: the new session's
    /// first event is [`Continuation::new`]'s `first` (a `session:forked`), and no
    /// `workflow:started` is recorded. This is how a fork continues; most users call
    /// `workflow.fork(..)` from `openharness-tape` rather than this.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, state: S, parent: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_core::{RunOptions, builtin::SessionForked, adapter::{Continuation, Pending}};
    /// let first = Pending::of(&SessionForked { parent, position: 0, workflow: Some(workflow.name().to_owned()), open_requests: Vec::new(), state_hash: None, state_edit: None });
    /// let outcome = workflow.run_from(Continuation::new(state, first), RunOptions::new()).await?;
    /// # let _ = outcome; Ok(()) }
    /// ```
    pub async fn run_from(
        &self,
        from: Continuation<S>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, Error> {
        let mut options = options;
        let session = options.session.get_or_insert_with(SessionId::new).clone();
        let guard = self.lock(&session, options.refuses_if_busy()).await?;
        crate::runtime::run(&self.inner, options, Start::Fork(Box::new(from)), guard).await
    }

    /// Where a fork of `session` at `position` (clamped to its length) continues from, for
    /// [`run_from`](Self::run_from): the state there, and what the session had under way there
    /// derived as a resume derives a cut-off turn. The fork finishes it: the events handlers
    /// had emitted and not recorded yet are recorded, an agent call started and not completed
    /// is closed as `interrupted` and run again from its start, a call whose `agent:completed`
    /// (with its output) lies before the fork point is kept and never sent to a model again,
    /// and the requests open there stay open. A position inside a call's final record (the
    /// events made from its output and its `agent:completed`, which the runtime records in one
    /// append) keeps the output too: the fork records the rest of that record first, as the
    /// parent recorded it. Its first event is the `session:forked` it records.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, parent: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_core::RunOptions;
    /// let from = workflow.continuation_at(&parent, 7).await?;
    /// println!("{} calls cut at the fork point run again", from.cut_calls());
    /// let outcome = workflow.run_from(from, RunOptions::new()).await?;
    /// # let _ = outcome; Ok(()) }
    /// ```
    pub async fn continuation_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<Continuation<S>, Error> {
        let crate::recover::ForkFrom {
            derived,
            completing,
        } = crate::recover::derive_fork(&self.inner, session, position).await?;
        let first = Pending::of(&SessionForked {
            parent: session.clone(),
            position: derived.len,
            workflow: Some(self.inner.name.clone()),
            open_requests: derived.open_requests.clone(),
            state_hash: None,
            state_edit: None,
        });
        let mut from = Continuation::new(derived.state, first);
        from.open_requests = derived.open_requests;
        from.unfinished = Some(Box::new(crate::run::ForkUnfinished {
            parent: session.clone(),
            position: derived.len,
            completing,
            unrecorded: derived.unrecorded,
            open_calls: derived.open_calls,
            queued: derived.queued.events(),
        }));
        Ok(from)
    }

    /// Continues a recorded session with new input: a turn that records `user:input` and runs
    /// until `until`, idle, waiting for a person, a guard or cancellation
    /// ([`RunOutcome::reason`] says which).
    ///
    /// The state is derived from the session's latest snapshot and the events after it (each
    /// turn saves one at its end when the tail grew long), never by folding a long session
    /// whole. Any recorded session can be continued: forks and imported sessions too.
    ///
    /// One turn at a time per session: a second `send` in this process waits for the first
    /// (or fails with [`Error::SessionBusy`] under [`RunOptions::refuse_if_busy`]); a turn in
    /// another process makes this one fail with [`Error::SessionBusy`] before any model is
    /// called. A session whose last turn a crash cut off is busy until
    /// [`resume`](Self::resume)d. The input is the argument; [`RunOptions::input`] is ignored.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) -> Result<(), openharness_core::Error> {
    /// use openharness_core::RunOptions;
    /// let first = workflow.run(RunOptions::new().input("hello")).await?;
    /// let second = workflow.send(&first.session, "and one more thing", RunOptions::new()).await?;
    /// assert_eq!(second.first_seq, first.len);
    /// # Ok(()) }
    /// ```
    pub async fn send(
        &self,
        session: &SessionId,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, Error> {
        self.turn(session, TurnBegin::Input(input.into()), options)
            .await
    }

    /// Answers an open `input:requested` (by its event id): records `input:received`, caused
    /// by the request, and continues the session as [`send`](Self::send) does. Answering a
    /// request the session does not have open (unknown, or answered already) fails with
    /// [`Error::RequestNotOpen`] and records nothing.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_core::{RunOptions, StopReason};
    /// let waiting = workflow.resume(&session, RunOptions::new()).await?;
    /// if waiting.reason == StopReason::WaitingForInput {
    ///     let request = waiting.open_requests[0];
    ///     workflow.respond(&session, request, "approved", RunOptions::new()).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn respond(
        &self,
        session: &SessionId,
        request: EventId,
        answer: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, Error> {
        let begin = TurnBegin::Answer {
            request,
            text: answer.into(),
        };
        self.turn(session, begin, options).await
    }

    /// Finishes a turn that a killed process left unfinished, from the log alone: events its
    /// handlers emitted that were not recorded are derived again, agent calls with
    /// `agent:started` and no `agent:completed` are closed as `interrupted` and run again,
    /// agents an event activated that never started are started. A call whose
    /// `agent:completed` is recorded is never sent to a model again.
    ///
    /// A session with nothing unfinished is left as it is: the outcome's reason is
    /// [`StopReason::NothingUnfinished`] and nothing is recorded.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_core::{RunOptions, StopReason};
    /// let outcome = workflow.resume(&session, RunOptions::new()).await?;
    /// if outcome.reason == StopReason::NothingUnfinished {
    ///     println!("nothing to do: the session ended its last turn");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn resume(
        &self,
        session: &SessionId,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, Error> {
        self.turn(session, TurnBegin::Resume, options).await
    }

    /// The state of a recorded session at `position` (clamped to its length), from the
    /// latest snapshot at or before it and the events between (streamed, so memory does not
    /// grow with the session). A fork starts from its parent's state at the fork point.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// let state = workflow.state_at(&session, u64::MAX).await?; // the latest state
    /// # let _ = state; Ok(()) }
    /// ```
    pub async fn state_at(&self, session: &SessionId, position: u64) -> Result<S, Error> {
        crate::recover::state_at(&self.inner, session, position, 0).await
    }

    /// The states of `session` at several positions (each clamped to the session's length),
    /// in the order asked, as `(position, state)`: one pass from the latest snapshot at or
    /// before the smallest position through the events up to the largest.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// for (position, state) in workflow.states_at(&session, &[99, 100, 101]).await? {
    ///     # let _ = (position, state);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> Result<Vec<(u64, S)>, Error> {
        crate::recover::states_at(&self.inner, session, positions).await
    }

    /// `session` at `position` (clamped): the state there, the event that led there, the
    /// session's length and what folding its whole log skips, from one streamed pass that
    /// holds one state and the fold's window, never the log (for debuggers that show one
    /// position of a long session). A session with no events is
    /// [`Error::SessionNotFound`].
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState + std::fmt::Debug>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// let view = workflow.view_at(&session, 10).await?;
    /// println!("{} of {}: {:?} ({} events skipped)", view.position, view.len, view.state, view.skipped.total());
    /// # Ok(()) }
    /// ```
    pub async fn view_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<crate::recover::ViewAt<S>, Error> {
        crate::recover::view_at(&self.inner, session, position).await
    }

    /// Folds a recorded session through today's handlers from its first event and compares
    /// the state with the hash the live run recorded after each batch that changed it
    /// ([`Envelope::state_hash`](crate::Envelope::state_hash)): the first position where they
    /// part, today's state there and, when a snapshot of the live run's state is stored there,
    /// the patch between the two. A handler changed so that it emits the same events but
    /// computes another state is caught here, and only here. Nothing is recorded.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// let check = workflow.check_state(&session).await?;
    /// match &check.divergence {
    ///     None => println!("today's handlers give the recorded state ({} hashes)", check.checked),
    ///     Some(d) => println!("the state parts after seq {} ({})", d.seq, d.event),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn check_state(&self, session: &SessionId) -> Result<crate::StateCheck, Error> {
        crate::recover::check_state(&self.inner, session).await
    }

    /// What a recorded session is doing and what [`resume`](Self::resume) would finish, derived
    /// from its latest snapshot and the events after it; nothing is recorded and no model is
    /// called.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, session: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// let report = workflow.unfinished(&session).await?;
    /// for call in &report.open_calls {
    ///     println!("agent `{}` was cut off; resume runs it again", call.agent);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn unfinished(&self, session: &SessionId) -> Result<Unfinished, Error> {
        let derived = derive(&self.inner, session).await?;
        Ok(Unfinished::of(session, &derived))
    }

    async fn lock(&self, session: &SessionId, refuse_if_busy: bool) -> Result<SessionGuard, Error> {
        if refuse_if_busy {
            self.inner
                .locks
                .try_lock(session)
                .ok_or_else(|| Error::SessionBusy {
                    session: session.clone(),
                    reason: "a turn of this process is running on it".to_owned(),
                })
        } else {
            Ok(self.inner.locks.lock(session).await)
        }
    }

    async fn turn(
        &self,
        session: &SessionId,
        begin: TurnBegin,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, Error> {
        let guard = self.lock(session, options.refuses_if_busy()).await?;
        let derived = derive(&self.inner, session).await?;
        let running = derived.status.is_running();
        match &begin {
            TurnBegin::Resume if !running => {
                return Ok(RunOutcome {
                    session: session.clone(),
                    len: derived.len,
                    first_seq: derived.len,
                    state: derived.state,
                    reason: StopReason::NothingUnfinished,
                    usage: Usage::default(),
                    cost: 0.0,
                    open_requests: derived.open_requests,
                    errors: 0,
                    queued: Vec::new(),
                });
            }
            TurnBegin::Resume => {}
            _ if running => {
                return Err(Error::SessionBusy {
                    session: session.clone(),
                    reason: "its last turn has not ended: it is running in another process, or a crash cut it off (then `resume` it)".to_owned(),
                });
            }
            TurnBegin::Answer { request, .. } if !derived.open_requests.contains(request) => {
                return Err(Error::RequestNotOpen {
                    session: session.clone(),
                    request: *request,
                    open: derived.open_requests,
                });
            }
            _ => {}
        }
        let turn = Turn {
            session: session.clone(),
            derived,
            begin,
        };
        crate::runtime::run(&self.inner, options, Start::Turn(Box::new(turn)), guard).await
    }

    /// Reads a session's events from the store, checking that this workflow recorded it.
    pub async fn session_events(&self, session: &SessionId) -> Result<Vec<Envelope>, Error> {
        let store = &self.inner.store;
        let events = store
            .all_events(session)
            .await
            .map_err(|e| Error::store(store.as_ref(), Some(session), e))?;
        if events.is_empty() {
            return Err(Error::SessionNotFound(session.clone()));
        }
        let recorded = events
            .iter()
            .find(|e| e.name == WorkflowStarted::NAME)
            .and_then(|e| e.payload["workflow"].as_str());
        if let Some(recorded) = recorded
            && !self.inner.reads(recorded)
        {
            return Err(Error::WrongWorkflow {
                session: session.clone(),
                recorded: recorded.to_owned(),
                workflow: self.inner.name.clone(),
            });
        }
        Ok(events)
    }
}

/// Assembles a [`Workflow`]; see [`Workflow::builder`].
#[must_use]
pub struct WorkflowBuilder<S: WorkflowState> {
    name: String,
    reads: Vec<String>,
    version: Option<String>,
    commit: Option<String>,
    initial: Option<S>,
    agents: Vec<Arc<dyn ErasedAgent<S>>>,
    until: Option<Until<S>>,
    store: Option<Arc<dyn Store>>,
    provider: Option<Arc<dyn Provider>>,
    max_output_attempts: u32,
    state_hashes: bool,
}

impl<S: WorkflowState> WorkflowBuilder<S> {
    /// The state every run starts from (required).
    pub fn initial_state(mut self, state: S) -> Self {
        self.initial = Some(state);
        self
    }

    /// Lets this workflow fold, fork and continue sessions recorded by workflow `name` — an
    /// earlier version of it, or the one an eval's variant is compared with — which are
    /// otherwise refused with [`Error::WrongWorkflow`]. Their events must decode into this
    /// workflow's state (events it does not know are skipped, as in any replay).
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>(initial: S, store: impl openharness_core::Store) -> Result<(), openharness_core::Error> {
    /// let v2 = openharness_core::Workflow::builder("planner-executor-v2")
    ///     .reads("planner-executor")
    ///     .initial_state(initial)
    ///     .store(store)
    ///     .build()?;
    /// # let _ = v2;
    /// # Ok(()) }
    /// ```
    pub fn reads(mut self, name: impl Into<String>) -> Self {
        self.reads.push(name.into());
        self
    }

    /// The version this code is (recorded in every `workflow:started`, so a tape or a replay
    /// can say that a session was recorded by another version): `env!("CARGO_PKG_VERSION")`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// The source commit this code was built from, when the build knows it (recorded like
    /// [`version`](Self::version)): `option_env!("GIT_COMMIT")` set by a build script, say.
    pub fn commit(mut self, commit: impl Into<String>) -> Self {
        self.commit = Some(commit.into());
        self
    }

    /// Adds an agent.
    pub fn agent<A: Agent<State = S>>(mut self, agent: A) -> Self {
        self.agents.push(Arc::new(Erased::new(agent)));
        self
    }

    /// Ends a run as soon as `until(state)` holds after an event.
    pub fn until(mut self, until: impl Fn(&S) -> bool + Send + Sync + 'static) -> Self {
        self.until = Some(Arc::new(until));
        self
    }

    /// Where runs are recorded (required).
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Where runs are recorded, shared with other owners.
    pub fn shared_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// The model backend (required when there are agents).
    pub fn provider(mut self, provider: impl Provider) -> Self {
        self.provider = Some(Arc::new(provider));
        self
    }

    /// Whether each committed batch that changes the state records the state's hash
    /// ([`Envelope::state_hash`](crate::Envelope::state_hash)), so that
    /// [`Workflow::check_state`] and `openharness replay` can tell a handler that now computes
    /// another state (default: yes). Each hash serializes the state once per batch that changed
    /// it; turn it off only for a state so large that this shows in a profile (the race bench
    /// measures the cost).
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>() {
    /// let builder = openharness_core::Workflow::<S>::builder("bulk").state_hashes(false);
    /// # let _ = builder; }
    /// ```
    pub fn state_hashes(mut self, record: bool) -> Self {
        self.state_hashes = record;
        self
    }

    /// How many times an agent is asked for output that matches its schema before it fails
    /// (default 3, at least 1).
    pub fn max_output_attempts(mut self, attempts: u32) -> Self {
        self.max_output_attempts = attempts.max(1);
        self
    }

    /// Checks the configuration and builds the workflow.
    pub fn build(self) -> Result<Workflow<S>, Error> {
        let config = |message: &str| Error::Config {
            workflow: self.name.clone(),
            message: message.to_owned(),
        };
        if self.name.trim().is_empty() {
            return Err(config(
                "the name is empty: pass a name to `Workflow::builder`",
            ));
        }
        let initial = self
            .initial
            .clone()
            .ok_or_else(|| config("no initial state: call `.initial_state(...)`"))?;
        let store = self.store.clone().ok_or_else(|| {
            config("no store: call `.store(...)`, e.g. with `MemoryStore::new()`")
        })?;
        if !self.agents.is_empty() && self.provider.is_none() {
            return Err(config(
                "it has agents but no provider: call `.provider(...)`",
            ));
        }
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = self
            .agents
            .iter()
            .map(|a| a.spec().name)
            .find(|name| !seen.insert(*name))
        {
            return Err(config(&format!("two agents are named `{dup}`")));
        }
        if let Some((agent, why)) = self
            .agents
            .iter()
            .find_map(|a| a.reply().err().map(|why| (a.spec().name, why)))
        {
            return Err(config(&format!("agent `{agent}`: {why}")));
        }
        Ok(Workflow {
            inner: Arc::new(Inner {
                code: crate::definition::CodeIdentity {
                    code: fingerprint::<S>(&self.name, &self.agents),
                    version: self.version,
                    commit: self.commit,
                    state_shape: serde_json::to_value(&initial)
                        .ok()
                        .map(|state| crate::state_hash::state_shape(&state)),
                },
                name: self.name,
                reads: self.reads,
                initial,
                agents: self.agents,
                until: self.until,
                store,
                provider: self.provider,
                max_output_attempts: self.max_output_attempts,
                state_hashes: self.state_hashes,
                locks: Arc::default(),
            }),
        })
    }
}

/// The fingerprint of a workflow's code: SHA-256 over its name, state type, the event names
/// its handlers take and their code (`Handler::CODE`), and each agent's spec, output schema and
/// code (`Agent::CODE`) (first 16 hex digits).
fn fingerprint<S: WorkflowState>(
    name: &str,
    agents: &[Arc<dyn crate::agent::ErasedAgent<S>>],
) -> String {
    use sha2::{Digest, Sha256};
    let agents: Vec<serde_json::Value> = agents
        .iter()
        .map(|agent| {
            let spec = agent.spec();
            serde_json::json!({
                "name": spec.name,
                "trigger": spec.trigger,
                "emits": spec.emits,
                "output": *agent.schema(),
                "code": agent.code(),
            })
        })
        .collect();
    let described = serde_json::json!({
        "workflow": name,
        "state": std::any::type_name::<S>(),
        "handles": <S::Events as crate::EventSet>::NAMES,
        "handlers": S::CODE,
        "agents": agents,
    });
    let digest = Sha256::digest(described.to_string().as_bytes());
    digest
        .iter()
        .take(8)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
