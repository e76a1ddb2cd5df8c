//! Open Harness host: any number of workflows behind one type-erased handle each, registered by
//! name over one store, so a CLI, a server or a debugger works on every session of every
//! registered workflow without knowing their state types.
//!
//! A [`Host`] answers in JSON-ready types ([`TurnOutcome`], [`SessionSummary`], [`EventsPage`],
//! [`PositionView`], [`StateAt`]): it starts sessions and turns (run, send, respond, resume), cancels
//! a turn it runs, derives states at positions (one or many in one pass), diffs, forks, lists
//! sessions with their lineage and status, pages through events and projects chat messages at a
//! position. Sessions of workflows it does not have can still be listed and read.
//! [`Host::register`] takes handles built before the store was known (a CLI's), and
//! [`Host::with_provider`] runs turns and forks with another model.
//!
//! # Modules
//!
//! This file holds [`Host`] itself: registration, turns, states, tape views, forks, messages.
//!
//! - `hosted`: [`Hosted`], one workflow behind a handle that knows nothing of its state type.
//! - `json_fold`: [`JsonFold`], a workflow's fold with its state type erased, read back as JSON.
//! - `wire`: the host's answers as the wire carries them (camelCase JSON).
//! - `schema`: [`wire_schemas`], the JSON Schema of everything Open Harness puts on the wire.
//! - `catalog`: [`Host::query_sessions`], the session list searched, filtered, sorted and paged.
//! - [`feedback`]: a session's annotations and online scores, on a log beside it
//!   ([`Host::annotate`], [`Host::feedback`]).
//! - `ancestry`: a session and the sessions it is forked from, up to its lineage's root.
//! - `compare` (`compare/`): [`Host::compare`], two sessions side by side and where they part.
//! - `bisect` (`bisect/`): [`Host::bisect`], where two runs (two sessions, or a session and its
//!   re-execution) first part, in their events or their states, and why: what produced it, its
//!   chain of causes, the state field by field.
//! - `replay`: [`Host::replay`], a recorded session re-executed with today's code, no model called;
//!   `replayer`: [`Replayer`], many at once, with a report CI reads (JUnit XML).
//! - `code`: [`Host::code_changed`], whether the code that recorded a session is this host's.
//! - `prepared`: [`PreparedFork`], a fork point derived once and run any number of times.
//! - `error`: [`HostError`], what a host operation can fail with.
//!
//! ```
//! # use openharness_core::{Workflow, WorkflowState, Store};
//! # async fn demo<A: WorkflowState, B: WorkflowState>(store: impl Store, triage: Workflow<A>, chat: Workflow<B>) -> Result<(), openharness_host::HostError> {
//! use openharness_core::RunOptions;
//! use openharness_host::Host;
//!
//! let host = Host::new(store).workflow(triage)?.workflow(chat)?;
//! let first = host.run("chat", Some("hello".into()), RunOptions::new()).await?;
//! let next = host.send(&first.session, "and then?".into(), RunOptions::new()).await?;
//! let states = host.states_at(&first.session, &[0, first.len, next.len]).await?;
//! println!("{} states; the session is {:?}", states.len(), host.session(&first.session).await?.status);
//! # Ok(()) }
//! ```

mod ancestry;
mod bisect;
mod catalog;
mod causes;
mod code;
mod compare;
mod error;
pub mod feedback;
mod hosted;
mod json_fold;
mod prepared;
mod query_words;
mod replay;
mod replayer;
mod schema;
mod turns;
pub mod whole;
mod wire;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use openharness_core::{
    BoxedProvider, BusyPolicy, EventId, RunOptions, SessionId, SessionInfo, Store, Workflow,
    WorkflowState, adapter::Unfinished,
};
use openharness_projection::{
    Approvals, Message, UiMessage, project_messages, ui_messages, ui_messages_with,
};

pub use bisect::{Bisection, EventAt, FieldChange, HandlerRun, PartKind, Parting, Producer};
pub use catalog::{MAX_SESSIONS_PAGE, SessionQuery, SessionSort, SessionsPage};
pub use causes::Cause;
pub use code::CodeChange;
pub use compare::{Ancestor, EventPlace, SessionComparison, SessionDivergence};
pub use error::{HostError, list_names};
pub use hosted::{Hosted, JsonTape};
pub use json_fold::JsonFold;
pub use prepared::PreparedFork;
pub use query_words::{SessionQueryError, SessionQueryWords};
pub use replay::{FirstDivergence, ReplayDivergence, Replayed};
pub use replayer::{FailedReplay, PartedSession, ReplayReport, Replayer, SkippedSession};
pub use schema::{WireSchema, wire_schemas};
pub use turns::{ForkAnswer, ForkStart, RunningTurn, Started, TurnDone, TurnOptions, TurnStart};
pub use wire::{
    AnnotationSummary, EventsPage, ForkPoint, PositionView, SessionSummary, StateAt, TurnOutcome,
};

/// How deep a chain of forks is followed to find the workflow that owns a session.
const MAX_LINEAGE: usize = 64;

/// Workflows by name over one store. Cheap to clone; clones share the registry, the store and
/// the turns in flight.
#[derive(Clone)]
pub struct Host {
    store: Arc<dyn Store>,
    workflows: BTreeMap<String, Arc<dyn Hosted>>,
    /// Workflows registered to read their sessions only (see [`Host::reader`]).
    readers: Arc<HashSet<String>>,
    /// The sessions whose turns this host runs (see `turns`).
    turns: Arc<turns::Registry>,
    /// What a second input gets when its request does not say.
    on_busy: BusyPolicy,
    /// The options of the turns this host starts by itself, by workflow (see
    /// [`Host::turn_options`]).
    turn_options: Arc<HashMap<String, TurnOptions>>,
    /// Sessions [`Host::sessions`] leaves out (see [`Host::unlisted`]).
    unlisted: Arc<std::collections::HashSet<SessionId>>,
    /// Id prefixes of sessions [`Host::sessions`] leaves out (see [`Host::unlisted_prefix`]).
    unlisted_prefixes: Arc<Vec<String>>,
    /// What each session's events say about it, for session lists ([`Host::query_sessions`]).
    catalog: Arc<catalog::Catalog>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("store", &self.store.describe())
            .field("workflows", &self.workflows.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Host {
    /// A host over `store`, with no workflow yet.
    pub fn new(store: impl Store) -> Self {
        Self::shared(Arc::new(store))
    }

    /// A host over a store shared with other owners.
    pub fn shared(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            workflows: BTreeMap::new(),
            readers: Arc::default(),
            turns: Arc::default(),
            on_busy: BusyPolicy::default(),
            turn_options: Arc::default(),
            unlisted: Arc::default(),
            unlisted_prefixes: Arc::default(),
            catalog: Arc::default(),
        }
    }

    /// This host leaving `session` out of [`Host::sessions`]: for a store's internal sessions,
    /// such as the platform's log of its resources, which are not conversations to list. The
    /// session is still read by id.
    ///
    /// ```
    /// use openharness_host::Host;
    /// use openharness_store::MemoryStore;
    /// let log: openharness_core::SessionId = "openharness-platform".parse().unwrap();
    /// let host = Host::new(MemoryStore::new()).unlisted(log);
    /// # let _ = host;
    /// ```
    #[must_use]
    pub fn unlisted(mut self, session: SessionId) -> Self {
        let mut unlisted = (*self.unlisted).clone();
        unlisted.insert(session);
        self.unlisted = Arc::new(unlisted);
        self
    }

    /// This host leaving out of [`Host::sessions`] every session whose id starts with
    /// `prefix`: a family of a store's internal sessions, such as experiments' logs
    /// (`eval:<name>`). They are still read by id.
    ///
    /// ```
    /// use openharness_host::Host;
    /// use openharness_store::MemoryStore;
    /// let host = Host::new(MemoryStore::new()).unlisted_prefix("eval:");
    /// # let _ = host;
    /// ```
    #[must_use]
    pub fn unlisted_prefix(mut self, prefix: impl Into<String>) -> Self {
        let mut prefixes = (*self.unlisted_prefixes).clone();
        prefixes.push(prefix.into());
        self.unlisted_prefixes = Arc::new(prefixes);
        self
    }

    /// Whether [`Host::sessions`] leaves `session` out.
    fn is_unlisted(&self, session: &SessionId) -> bool {
        session.as_str().starts_with(feedback::FEEDBACK_PREFIX)
            || self.unlisted.contains(session)
            || self
                .unlisted_prefixes
                .iter()
                .any(|prefix| session.as_str().starts_with(prefix.as_str()))
    }

    /// Registers `workflow` under its name; it records to the host's store. Two workflows
    /// with one name are refused with [`HostError::DuplicateWorkflow`].
    pub fn workflow<S: WorkflowState>(self, workflow: Workflow<S>) -> Result<Self, HostError> {
        self.register(<dyn Hosted>::of(workflow))
    }

    /// Registers an already type-erased workflow under its name, re-targeted to the host's
    /// store (a CLI collects handles before it knows which store it opens). Two workflows with
    /// one name are refused with [`HostError::DuplicateWorkflow`].
    pub fn register(mut self, workflow: Arc<dyn Hosted>) -> Result<Self, HostError> {
        let name = workflow.name().to_owned();
        if self.workflows.contains_key(&name) {
            return Err(HostError::DuplicateWorkflow(name));
        }
        let workflow = workflow.with_store(Arc::clone(&self.store));
        self.workflows.insert(name, workflow);
        Ok(self)
    }

    /// Registers `workflow` to read its sessions only: listed, stepped through, diffed and
    /// compared as any other, but never run here (a turn on one is refused, and recovery leaves
    /// them to whoever runs them). For a program that shows sessions another program runs.
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>(chat: openharness_core::Workflow<S>) -> Result<(), openharness_host::HostError> {
    /// let host = openharness_host::Host::new(openharness_store::MemoryStore::new()).reader(chat)?;
    /// # let _ = host; Ok(()) }
    /// ```
    pub fn reader<S: WorkflowState>(self, workflow: Workflow<S>) -> Result<Self, HostError> {
        let name = workflow.name().to_owned();
        let mut host = self.workflow(workflow)?;
        let mut readers = (*host.readers).clone();
        readers.insert(name);
        host.readers = Arc::new(readers);
        Ok(host)
    }

    /// Whether this host runs turns of workflow `name` (registered, and not only to read).
    pub fn runs_turns_of(&self, name: &str) -> bool {
        self.workflows.contains_key(name) && !self.readers.contains(name)
    }

    /// The workflow registered as `name`, to run a turn of.
    fn runnable(&self, name: &str) -> Result<&Arc<dyn Hosted>, HostError> {
        let hosted = self.hosted(name)?;
        if self.readers.contains(name) {
            return Err(HostError::ReadOnly(name.to_owned()));
        }
        Ok(hosted)
    }

    /// The workflow that owns `session`, to run a turn of.
    pub(crate) async fn runnable_of(
        &self,
        session: &SessionId,
    ) -> Result<&Arc<dyn Hosted>, HostError> {
        let hosted = self.workflow_of(session).await?;
        if self.readers.contains(hosted.name()) {
            return Err(HostError::ReadOnly(hosted.name().to_owned()));
        }
        Ok(hosted)
    }

    /// This host with every workflow asking `provider` instead of its own (a CLI's
    /// `--provider` flag). The copy shares the store and the turns in flight, so
    /// [`Host::cancel`] on either stops a turn the other runs.
    #[must_use]
    pub fn with_provider(&self, provider: BoxedProvider) -> Self {
        Self {
            store: Arc::clone(&self.store),
            workflows: self
                .workflows
                .iter()
                .map(|(name, w)| (name.clone(), w.with_provider(Arc::clone(&provider))))
                .collect(),
            readers: Arc::clone(&self.readers),
            turns: Arc::clone(&self.turns),
            on_busy: self.on_busy,
            turn_options: Arc::clone(&self.turn_options),
            unlisted: Arc::clone(&self.unlisted),
            unlisted_prefixes: Arc::clone(&self.unlisted_prefixes),
            catalog: Arc::clone(&self.catalog),
        }
    }

    /// This host's workflows — with their turn options, readers and busy policy — over another
    /// store: a host of its own (no turn in flight, its own session list) for what that store
    /// holds. `replay --all --from` re-executes exports read into memory through it, so their
    /// turns run as this host's would.
    ///
    /// ```
    /// # fn demo(host: openharness_host::Host) {
    /// let exports: std::sync::Arc<dyn openharness_core::Store> =
    ///     std::sync::Arc::new(openharness_store::MemoryStore::new());
    /// let replaying = host.over_store(exports);
    /// assert_eq!(replaying.workflow_names(), host.workflow_names());
    /// # }
    /// ```
    #[must_use]
    pub fn over_store(&self, store: Arc<dyn Store>) -> Self {
        Self {
            workflows: self
                .workflows
                .iter()
                .map(|(name, w)| (name.clone(), w.with_store(Arc::clone(&store))))
                .collect(),
            store,
            readers: Arc::clone(&self.readers),
            turns: Arc::default(),
            on_busy: self.on_busy,
            turn_options: Arc::clone(&self.turn_options),
            unlisted: Arc::clone(&self.unlisted),
            unlisted_prefixes: Arc::clone(&self.unlisted_prefixes),
            catalog: Arc::default(),
        }
    }

    /// The store sessions are recorded to.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The registered workflows' names, in order.
    pub fn workflow_names(&self) -> Vec<String> {
        self.workflows.keys().cloned().collect()
    }

    /// The workflow registered as `name`.
    pub fn hosted(&self, name: &str) -> Result<&Arc<dyn Hosted>, HostError> {
        self.workflows
            .get(name)
            .ok_or_else(|| HostError::UnknownWorkflow {
                name: name.to_owned(),
                known: self.workflow_names(),
            })
    }

    fn store_error(&self) -> impl Fn(openharness_core::StoreError) -> HostError + '_ {
        |source| HostError::store(self.store.as_ref(), source)
    }

    async fn info(&self, session: &SessionId) -> Result<SessionInfo, HostError> {
        self.store
            .session(session)
            .await
            .map_err(self.store_error())?
            .filter(|info| info.count > 0)
            .ok_or_else(|| HostError::SessionNotFound(session.clone()))
    }

    /// The workflow that owns `session`: the one that recorded it, or for a fork the one that
    /// recorded the session it descends from.
    pub(crate) async fn owner(&self, info: &SessionInfo) -> Result<Option<String>, HostError> {
        let mut info = info.clone();
        for _ in 0..MAX_LINEAGE {
            if let Some(workflow) = info.workflow {
                return Ok(Some(workflow));
            }
            let Some(parent) = info.parent else {
                return Ok(None);
            };
            match self
                .store
                .session(&parent)
                .await
                .map_err(self.store_error())?
            {
                Some(parent) => info = parent,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The registered workflow that can fold `session`.
    pub async fn workflow_of(&self, session: &SessionId) -> Result<&Arc<dyn Hosted>, HostError> {
        let info = self.info(session).await?;
        let owner = self.owner(&info).await?;
        owner
            .as_deref()
            .and_then(|name| self.workflows.get(name))
            .ok_or_else(|| HostError::Unhosted {
                session: session.clone(),
                recorded: owner.clone(),
                known: self.workflow_names(),
            })
    }

    /// Every session of the store, oldest first, with its owner and whether this host folds it
    /// (without what its events say: [`Host::query_sessions`] adds titles, agents, tokens,
    /// cost and open requests, and searches, filters and pages).
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>, HostError> {
        let infos = self.store.sessions().await.map_err(self.store_error())?;
        Ok(self.summaries(&infos))
    }

    /// `infos` as summaries, those [`Host::unlisted`] left out, with their owners.
    fn summaries(&self, infos: &[SessionInfo]) -> Vec<SessionSummary> {
        let by_id: HashMap<&SessionId, &SessionInfo> = infos.iter().map(|i| (&i.id, i)).collect();
        let owner_of = |info: &SessionInfo| {
            let mut current = info;
            for _ in 0..MAX_LINEAGE {
                if let Some(workflow) = &current.workflow {
                    return Some(workflow.clone());
                }
                current = by_id.get(current.parent.as_ref()?)?;
            }
            None
        };
        infos
            .iter()
            .filter(|info| !self.is_unlisted(&info.id))
            .map(|info| {
                let owner = owner_of(info);
                let hosted = owner
                    .as_deref()
                    .is_some_and(|w| self.workflows.contains_key(w));
                SessionSummary::of(info.clone(), owner, hosted)
            })
            .collect()
    }

    /// One session, with its owner, status, title, agents, tokens, cost and open requests.
    pub async fn session(&self, session: &SessionId) -> Result<SessionSummary, HostError> {
        let info = self.info(session).await?;
        let owner = self.owner(&info).await?;
        let hosted = owner
            .as_deref()
            .is_some_and(|w| self.workflows.contains_key(w));
        let digest = self.digest_of(&info).await?;
        let feedback = self.feedback_digest_of(session).await?;
        Ok(catalog::with_digest(
            SessionSummary::of(info, owner, hosted),
            &digest,
            feedback.as_ref(),
        ))
    }

    /// Up to `limit` events of `session` after seq `after` (from the start when `None`).
    /// Works for every session, hosted or not.
    pub async fn events(
        &self,
        session: &SessionId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<EventsPage, HostError> {
        let info = self.info(session).await?;
        let from = after.map_or(0, |seq| seq.saturating_add(1));
        let to = from.saturating_add(limit as u64).min(info.count);
        let events = self
            .store
            .events(session, from..to)
            .await
            .map_err(self.store_error())?;
        let events: Vec<openharness_core::adapter::Recorded> = (from..)
            .zip(events)
            .map(|(seq, event)| openharness_core::adapter::Recorded { seq, event })
            .collect();
        let next_after = (to < info.count && !events.is_empty()).then(|| to - 1);
        Ok(EventsPage {
            events,
            len: info.count,
            next_after,
        })
    }

    /// Starts a new session of workflow `workflow`, recording `input` as `user:input`, and
    /// waits for its first turn to end ([`Host::start`] returns as soon as it is recorded).
    pub async fn run(
        &self,
        workflow: &str,
        input: Option<String>,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        self.runnable(workflow)?;
        let session = options.session_id().cloned().unwrap_or_default();
        let start = TurnStart::New {
            workflow: workflow.to_owned(),
            input,
        };
        self.start(&session, start, options)
            .await?
            .done
            .wait()
            .await
    }

    /// A turn with new input on `session`, waited for to its end. While a turn runs on the
    /// session, the input gets what [`RunOptions::on_busy`] (or [`Host::busy_policy`]) says,
    /// and this waits for the turn that answers it.
    pub async fn send(
        &self,
        session: &SessionId,
        input: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let start = TurnStart::Input(input);
        self.start(session, start, options).await?.done.wait().await
    }

    /// Answers the open request `request` of `session`, waited for to the turn's end.
    pub async fn respond(
        &self,
        session: &SessionId,
        request: EventId,
        answer: String,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let start = TurnStart::Answer {
            request,
            text: answer,
        };
        self.start(session, start, options).await?.done.wait().await
    }

    /// Finishes a turn of `session` that a crash cut off (or answers its oldest queued input),
    /// waited for to its end.
    pub async fn resume(
        &self,
        session: &SessionId,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        self.start(session, TurnStart::Resume, options)
            .await?
            .done
            .wait()
            .await
    }

    /// What a resume of `session` would finish.
    pub async fn unfinished(&self, session: &SessionId) -> Result<Unfinished, HostError> {
        self.workflow_of(session).await?.unfinished(session).await
    }

    /// The state of `session` at `position` (clamped), as JSON.
    pub async fn state_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<serde_json::Value, HostError> {
        self.workflow_of(session)
            .await?
            .state_at(session, position)
            .await
    }

    /// The states of `session` at several positions, in one pass, in the order asked.
    pub async fn states_at(
        &self,
        session: &SessionId,
        positions: &[u64],
    ) -> Result<Vec<StateAt>, HostError> {
        self.workflow_of(session)
            .await?
            .states_at(session, positions)
            .await
    }

    /// `session` at `position`: the event that led there, the state and what a fold of the
    /// whole session skips, read in one streamed pass (memory: one state, not the session).
    pub async fn tape_view(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<PositionView, HostError> {
        self.workflow_of(session)
            .await?
            .view_at(session, position)
            .await
    }

    /// The JSON patch (RFC 6902) from the state of `session` at `a` to its state at `b`.
    pub async fn diff(
        &self,
        session: &SessionId,
        a: u64,
        b: u64,
    ) -> Result<json_patch::Patch, HostError> {
        let states = self.states_at(session, &[a, b]).await?;
        match states.as_slice() {
            [from, to] => Ok(json_patch::diff(&from.state, &to.state)),
            _ => Ok(json_patch::Patch(Vec::new())),
        }
    }

    /// Forks `session` at `at` and runs the fork on; the new session is in the outcome.
    pub async fn fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
        options: RunOptions,
    ) -> Result<TurnOutcome, HostError> {
        let child = options.session_id().cloned().unwrap_or_default();
        let start = TurnStart::Fork(Box::new(ForkStart {
            parent: session.clone(),
            at,
            state_edit: None,
            input: None,
            answer: None,
            provider: None,
        }));
        self.start(&child, start, options).await?.done.wait().await
    }

    /// Finds the fork point `at` in `session` and derives the state there once, with the
    /// workflow that owns the session: run it as often as needed ([`PreparedFork::run`]).
    /// Runs of a prepared fork are not turns of this host's registry (an eval runs many at
    /// once); pass a cancellation token in their options to stop one.
    pub async fn prepare_fork(
        &self,
        session: &SessionId,
        at: ForkPoint,
    ) -> Result<Box<dyn PreparedFork>, HostError> {
        self.workflow_of(session)
            .await?
            .prepare_fork(session, at)
            .await
    }

    /// The chat messages of `session` at `position` (clamped): a projection of its first
    /// `position` events. Works for every session, hosted or not.
    pub async fn messages_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<Vec<Message>, HostError> {
        Ok(project_messages(&self.prefix(session, position).await?))
    }

    /// The chat of `session` at `position` (clamped) as AI SDK `UIMessage`s: the messages
    /// `POST /api/chat` streamed, with the same ids and parts (see
    /// [`openharness_projection::ui_messages`]). Works for every session, hosted or not.
    pub async fn ui_messages_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<Vec<UiMessage>, HostError> {
        Ok(ui_messages(&self.prefix(session, position).await?))
    }

    /// [`ui_messages_at`](Self::ui_messages_at) for a chat that shows approval requests as
    /// `approvals` says (see [`openharness_projection::ui_messages_with`]):
    /// [`Approvals::Tool`] for clients that asked for the AI SDK 6+ tool approvals.
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// use openharness_projection::Approvals;
    /// let chat = host.ui_messages_at_with(&session, u64::MAX, Approvals::Tool).await?;
    /// # let _ = chat; Ok(()) }
    /// ```
    pub async fn ui_messages_at_with(
        &self,
        session: &SessionId,
        position: u64,
        approvals: Approvals,
    ) -> Result<Vec<UiMessage>, HostError> {
        Ok(ui_messages_with(
            &self.prefix(session, position).await?,
            approvals,
        ))
    }

    /// The first `position` events of `session` (clamped to its length).
    async fn prefix(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<Vec<openharness_core::Envelope>, HostError> {
        let info = self.info(session).await?;
        self.store
            .events(session, 0..position.min(info.count))
            .await
            .map_err(self.store_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openharness_core::RunOptions;
    use openharness_store::MemoryStore;

    #[test]
    fn a_host_over_another_store_keeps_its_turn_options_and_readers_not_its_turns() {
        let host = Host::new(MemoryStore::new())
            .turn_options("chat", |_session| Box::pin(async { Ok(RunOptions::new()) }));
        let mut readers = HashSet::new();
        readers.insert("chat".to_owned());
        let host = Host {
            readers: Arc::new(readers),
            ..host
        };
        let exports: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let over = host.over_store(Arc::clone(&exports));
        assert!(over.turn_options.contains_key("chat"));
        assert!(over.readers.contains("chat"));
        assert!(Arc::ptr_eq(over.store(), &exports));
        assert!(
            !Arc::ptr_eq(&over.turns, &host.turns),
            "turns in flight are not shared"
        );
    }
}
