//! The host owns turns: one registry of the sessions whose turns this host runs, one call that
//! starts a turn and returns once its input is recorded ([`Host::start`]), one policy for a
//! second input while a turn runs ([`BusyPolicy`]), stop as an event ([`Host::cancel`]), and
//! recovery of turns a crash cut off ([`Host::recover`]). The CLI, the server and the platform
//! all start turns here; nothing else keeps a list of running turns.
//!
//! # A session's turns
//!
//! The first request for a session that runs nothing here claims it through the store
//! ([`Store::claim`](openharness_core::Store::claim): on PostgreSQL a fenced, session-level
//! advisory lock; other stores grant it), registers it, and starts its *driver*: a task that
//! runs the session's turns one after another while it holds the claim. A session whose log
//! says a turn is under way while nobody holds its claim was cut off by a crash: its driver
//! first finishes that turn ([`TurnStart::Resume`]), then runs what was asked. After each
//! turn the driver answers the inputs still queued, one turn each, then the requests handed
//! to it, then gives the session up.
//!
//! A request for a session whose driver runs gets what its [`BusyPolicy`] says: `reject` is
//! [`HostError::busy`], anything else is sent to the running turn as a
//! [`TurnCommand`], which records it (`input:queued`) at its next safe point. A command that
//! arrives as the turn ends comes back and becomes the driver's next turn; either way the
//! request is answered once its event is recorded.
//!
//! # Acknowledged once recorded
//!
//! [`Host::start`] returns once the request's event is durable: the turn's first event (its
//! `user:input`, `input:received`, a new session's `workflow:started`, a fork's
//! `session:forked`, a resume's first record) or the `input:queued` the running turn recorded.
//! A turn that fails before recording anything returns its error instead; a resume with
//! nothing to finish returns with nothing recorded. [`Started::done`] then resolves with the
//! outcome of the turn that answered the request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use openharness_core::adapter::{CommandRecorded, TurnCommand, TurnControl, turn_control};
use openharness_core::builtin::InputQueued;
use openharness_core::{
    BoxedProvider, BusyPolicy, CancellationToken, EventId, RunOptions, SessionId, Store,
};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::{Host, Hosted};

use crate::error::HostError;
use crate::wire::{ForkPoint, TurnOutcome};

mod driver;
mod recovery;

/// What a turn begins with.
#[non_exhaustive]
pub enum TurnStart {
    /// A new session of `workflow` (the session [`Host::start`] names, which must hold no
    /// events yet), with `input` recorded as its `user:input`. A session whose first turn runs
    /// here already takes `input` as a second input instead.
    New {
        /// The registered workflow to run.
        workflow: String,
        /// The first input.
        input: Option<String>,
    },
    /// New input on a recorded session (`user:input`).
    Input(String),
    /// The answer to the open request `request` (`input:received`).
    Answer {
        /// The `input:requested` event answered.
        request: EventId,
        /// The answer.
        text: String,
    },
    /// Finishes what a crash cut off, or answers the oldest input still queued.
    Resume,
    /// A fork of another session, run on in the session [`Host::start`] names.
    Fork(Box<ForkStart>),
}

/// Where a fork starts and what it changes (see [`TurnStart::Fork`]).
pub struct ForkStart {
    /// The session forked from.
    pub parent: SessionId,
    /// Where.
    pub at: ForkPoint,
    /// A JSON merge patch on the state the fork starts from.
    pub state_edit: Option<Value>,
    /// A new turn once forked.
    pub input: Option<String>,
    /// An answer to a request open at the fork point, once forked (another answer than the
    /// parent got): checked before anything is recorded.
    pub answer: Option<ForkAnswer>,
    /// Another model for the fork (and its `input`'s turn).
    pub provider: Option<BoxedProvider>,
}

/// The answer a fork gives to a request open at its fork point ([`ForkStart::answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkAnswer {
    /// The request answered (an `input:requested` event's id); `None`: the only one open.
    pub request: Option<EventId>,
    /// The answer.
    pub text: String,
}

impl std::fmt::Debug for TurnStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::New { workflow, .. } => write!(f, "New({workflow})"),
            Self::Input(_) => f.write_str("Input"),
            Self::Answer { request, .. } => write!(f, "Answer({request})"),
            Self::Resume => f.write_str("Resume"),
            Self::Fork(fork) => write!(f, "Fork({})", fork.parent),
        }
    }
}

/// A request [`Host::start`] took: where its event is, and the outcome to come.
#[derive(Debug)]
#[non_exhaustive]
pub struct Started {
    /// The session.
    pub session: SessionId,
    /// The request's event, durable: the turn's first event, or the `input:queued` a running
    /// turn recorded (the turn that answers it begins with a `user:input` caused by it).
    /// `None` when nothing was recorded (a resume with nothing to finish).
    pub recorded: Option<CommandRecorded>,
    /// The outcome of the turn that answers the request.
    pub done: TurnDone,
}

/// The outcome of the turn that answers a request, once it has ended.
#[derive(Debug)]
pub struct TurnDone(oneshot::Receiver<Result<TurnOutcome, HostError>>);

impl TurnDone {
    /// Waits for the turn to end.
    pub async fn wait(self) -> Result<TurnOutcome, HostError> {
        self.0.await.unwrap_or_else(|_| {
            Err(HostError::TurnFailed(
                "the host stopped before the turn ended".to_owned(),
            ))
        })
    }
}

/// What happens to a session's turn: the turn running, and what comes after it.
pub(crate) struct Slot {
    /// The running turn's control (replaced for each turn of the session). From the moment
    /// the session is registered it takes commands: those sent before the first turn's loop
    /// starts wait in [`Slot::inbox`] for it.
    control: TurnControl,
    /// The inbox of the turn about to run, made with the slot so that nothing sent before
    /// the turn starts is refused; taken by that turn.
    inbox: Option<openharness_core::adapter::TurnInbox>,
    /// Whether the driver has more turns to run after the running one (inputs still queued):
    /// a request refused under `reject` while it does.
    draining: bool,
    /// Whether the slot was made for a resume that has not yet found a turn to finish: a
    /// request meanwhile runs after it instead of being refused. (Recovery's scan may resume
    /// a session whose turn ended just after it was listed; a client answering the question
    /// that turn asked must not hear "busy" from a resume with nothing to do.) Should the
    /// resume find a cut-off turn after all, what came meanwhile waits for that turn to end,
    /// whatever its busy policy.
    probing: bool,
    /// Cancels the running turn (a stop that cannot wait for a safe point).
    cancel: CancellationToken,
    /// The seq the running turn started at, once known.
    first_seq: Option<u64>,
    /// Requests for the driver to run once the running turn is over, in order.
    next: VecDeque<Job>,
    /// Who waits for the turn that answers a queued input (by the input's event id).
    waiters: HashMap<EventId, oneshot::Sender<Result<TurnOutcome, HostError>>>,
}

/// How many ended turns [`Host::turn_ends`] keeps for a listener that falls behind.
const TURN_ENDS: usize = 1_024;

/// The registry: the sessions whose turns this host runs. Shared by every clone of the host.
pub(crate) struct Registry {
    slots: Mutex<HashMap<SessionId, Slot>>,
    /// Every turn this host's drivers finish, for whoever listens ([`Host::turn_ends`]).
    ended: tokio::sync::broadcast::Sender<Arc<TurnOutcome>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self {
            slots: Mutex::default(),
            ended: tokio::sync::broadcast::channel(TURN_ENDS).0,
        }
    }
}

impl Registry {
    /// Tells the listeners (when there are any) that a turn ended.
    fn ended(&self, outcome: &TurnOutcome) {
        if self.ended.receiver_count() > 0 {
            let _ = self.ended.send(Arc::new(outcome.clone()));
        }
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request the driver runs as a turn of its own.
pub(crate) struct Job {
    start: TurnStart,
    options: RunOptions,
    recorded: oneshot::Sender<Result<Option<CommandRecorded>, HostError>>,
    done: oneshot::Sender<Result<TurnOutcome, HostError>>,
}

/// Where a host gets the options of the turns it starts by itself on a workflow's sessions
/// (finishing a cut-off turn, answering a queued input, a fork's input): given the session,
/// the options to run its turn with ([`Host::turn_options`]).
pub type TurnOptions = Arc<
    dyn Fn(
            SessionId,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<RunOptions, HostError>> + Send>,
        > + Send
        + Sync,
>;

/// A running turn's information for readers ([`Host::running_turn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunningTurn {
    /// The seq the turn started at (`None` until its first event is recorded).
    pub first_seq: Option<u64>,
}

impl Host {
    /// This host answering a second input with `policy` when a request does not say
    /// ([`RunOptions::on_busy`]); `reject` unless set.
    ///
    /// ```
    /// use openharness_core::BusyPolicy;
    /// use openharness_host::Host;
    /// let host = Host::new(openharness_store::MemoryStore::new()).on_busy(BusyPolicy::Enqueue);
    /// assert_eq!(host.busy_policy(), BusyPolicy::Enqueue);
    /// ```
    #[must_use]
    pub fn on_busy(mut self, policy: BusyPolicy) -> Self {
        self.on_busy = policy;
        self
    }

    /// The policy a second input gets when its request does not say.
    pub fn busy_policy(&self) -> BusyPolicy {
        self.on_busy
    }

    /// This host asking `options` for the options of the turns it starts by itself on
    /// sessions of workflow `workflow` (finishing a turn a crash cut off, answering an input
    /// queued during a turn, a fork's input): for a workflow whose turns need what only its
    /// owner knows (the platform gives each turn of its agent-chat sessions the agent's model,
    /// instructions, tools and provider). Without it such turns run with default options.
    ///
    /// ```
    /// use openharness_core::{AgentSettings, RunOptions};
    /// use openharness_host::Host;
    /// let host = Host::new(openharness_store::MemoryStore::new()).turn_options("chat", |_session| {
    ///     Box::pin(async { Ok(RunOptions::new().agent("assistant", AgentSettings::new().model("small"))) })
    /// });
    /// # let _ = host;
    /// ```
    #[must_use]
    pub fn turn_options(
        mut self,
        workflow: &str,
        options: impl Fn(
            SessionId,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<RunOptions, HostError>> + Send>,
        > + Send
        + Sync
        + 'static,
    ) -> Self {
        let mut all = (*self.turn_options).clone();
        all.insert(workflow.to_owned(), Arc::new(options));
        self.turn_options = Arc::new(all);
        self
    }

    /// The options the owner of `start`'s workflow gives a turn on `session` (see
    /// [`Host::turn_options`]), or `None` when that workflow has no owner options: a new
    /// session's by the workflow it names, a fork's by its parent's, any other by the
    /// session's (`known`, when the caller has it, spares a read).
    pub(crate) async fn owner_options(
        &self,
        session: &SessionId,
        start: &TurnStart,
        known: Option<&dyn Hosted>,
    ) -> Result<Option<RunOptions>, HostError> {
        if self.turn_options.is_empty() {
            return Ok(None);
        }
        let (of, workflow) = match start {
            TurnStart::New { workflow, .. } => (session, Some(workflow.as_str())),
            TurnStart::Fork(fork) => (&fork.parent, None),
            _ => (session, known.map(Hosted::name)),
        };
        let workflow = match workflow {
            Some(name) => name.to_owned(),
            None => self.workflow_of(of).await?.name().to_owned(),
        };
        match self.turn_options.get(&workflow) {
            Some(options) => options(of.clone()).await.map(Some),
            None => Ok(None),
        }
    }

    /// The options of a turn this host starts by itself on `session`.
    pub(crate) async fn own_turn_options(
        &self,
        session: &SessionId,
    ) -> Result<RunOptions, HostError> {
        let hosted = self.workflow_of(session).await?;
        match self.turn_options.get(hosted.name()) {
            Some(options) => options(session.clone()).await,
            None => Ok(RunOptions::new()),
        }
    }

    /// Starts `start` on `session` and returns once its event is recorded (see the module
    /// docs); the turn runs on in the background, whatever the caller does next.
    /// `options` apply to that turn (its guards, renderers, input fields, cancellation); a
    /// second input takes only its fields and the policy ([`RunOptions::on_busy`], else
    /// [`Host::busy_policy`]).
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host, session: openharness_core::SessionId) -> Result<(), openharness_host::HostError> {
    /// use openharness_core::{BusyPolicy, RunOptions};
    /// use openharness_host::TurnStart;
    /// let started = host
    ///     .start(&session, TurnStart::Input("and in Porto?".into()), RunOptions::new().on_busy(BusyPolicy::Enqueue))
    ///     .await?;
    /// println!("recorded at {:?}", started.recorded.map(|r| r.seq));
    /// let outcome = started.done.wait().await?;
    /// println!("answered: {}", outcome.reason.as_str());
    /// # Ok(()) }
    /// ```
    pub async fn start(
        &self,
        session: &SessionId,
        start: TurnStart,
        options: RunOptions,
    ) -> Result<Started, HostError> {
        let policy = options.busy_policy().unwrap_or(self.on_busy);
        let (done_tx, done) = oneshot::channel();
        // A session whose driver runs: the request goes to the running turn, or after it.
        let route = {
            let mut slots = self.turns.slots();
            match slots.get_mut(session) {
                Some(slot) => Route::Second(second_request(
                    session, slot, start, options, policy, done_tx,
                )?),
                None => {
                    let mut slot = Slot::new();
                    slot.probing = matches!(start, TurnStart::Resume);
                    slots.insert(session.clone(), slot);
                    Route::First(Box::new(Job {
                        start,
                        options,
                        recorded: oneshot::channel().0,
                        done: done_tx,
                    }))
                }
            }
        };
        let recorded = match route {
            Route::Second(Heard::Queued(heard)) => {
                let recorded = heard.await.map_err(|_| {
                    HostError::TurnFailed("the running turn ended without a word".to_owned())
                })?;
                Some(recorded.map_err(|err| HostError::TurnFailed(err.0))?)
            }
            Route::Second(Heard::Next(heard)) => wait_recorded(heard).await?,
            Route::First(mut job) => {
                let (recorded, heard) = oneshot::channel();
                job.recorded = recorded;
                self.drive(session, *job).await?;
                wait_recorded(heard).await?
            }
        };
        Ok(Started {
            session: session.clone(),
            recorded,
            done: TurnDone(done),
        })
    }

    /// Stops the turn this host runs on `session`: `stop:requested` is recorded and the turn
    /// ends `cancelled` at its next safe point (its agents end `interrupted`), whoever reads
    /// its stream. Inputs queued after it are still answered. Returns whether a turn was
    /// running here.
    pub async fn cancel(&self, session: &SessionId) -> bool {
        let (command, heard) = TurnCommand::stop(None);
        let sent = {
            let slots = self.turns.slots();
            match slots.get(session) {
                Some(slot) => match slot.control.send(command) {
                    Ok(()) => true,
                    // Ending on its own: the token stops whatever is left of it.
                    Err(_) => {
                        slot.cancel.cancel();
                        return true;
                    }
                },
                None => return false,
            }
        };
        if sent && !matches!(heard.await, Ok(Ok(_))) {
            // Not recorded (the turn ended meanwhile, or its store failed): stop it anyway.
            if let Some(slot) = self.turns.slots().get(session) {
                slot.cancel.cancel();
            }
        }
        sent
    }

    /// Every turn this host runs from now on, as it ends (its outcome, once its events are
    /// recorded): what online scorers and other after-the-turn work listen to. Sending costs
    /// a turn nothing while nobody listens; a listener that falls more than 1,024 turns
    /// behind is told how many it missed (`RecvError::Lagged`) and goes on from there.
    ///
    /// ```
    /// # async fn demo(host: openharness_host::Host) {
    /// let mut ends = host.turn_ends();
    /// while let Ok(outcome) = ends.recv().await {
    ///     println!("{} ended at {} ({:?})", outcome.session, outcome.len, outcome.reason);
    /// }
    /// # }
    /// ```
    pub fn turn_ends(&self) -> tokio::sync::broadcast::Receiver<Arc<TurnOutcome>> {
        self.turns.ended.subscribe()
    }

    /// Whether this host runs a turn on `session` (or is about to).
    pub fn is_running(&self, session: &SessionId) -> bool {
        self.turns.slots().contains_key(session)
    }

    /// The turn this host runs on `session`, if any.
    pub fn running_turn(&self, session: &SessionId) -> Option<RunningTurn> {
        self.turns.slots().get(session).map(|slot| RunningTurn {
            first_seq: slot.first_seq,
        })
    }

    /// The sessions whose turns this host runs.
    pub fn running_sessions(&self) -> Vec<SessionId> {
        self.turns.slots().keys().cloned().collect()
    }
}

impl Slot {
    fn new() -> Self {
        let (control, inbox) = turn_control();
        Self {
            control,
            inbox: Some(inbox),
            draining: false,
            probing: false,
            cancel: CancellationToken::new(),
            first_seq: None,
            next: VecDeque::new(),
            waiters: HashMap::new(),
        }
    }
}

/// Where a request goes: to the driver of a session that runs, or to a new driver.
enum Route {
    Second(Heard),
    First(Box<Job>),
}

/// Where a second request hears that it is recorded.
enum Heard {
    /// The running turn records it (`input:queued`).
    Queued(openharness_core::adapter::Acknowledgement),
    /// The driver runs it next, as a turn of its own.
    Next(oneshot::Receiver<Result<Option<CommandRecorded>, HostError>>),
}

/// A request for a session whose driver runs (the registry locked): sent to the running turn
/// as `policy` says, or handed to the driver when the turn takes no more commands.
fn second_request(
    session: &SessionId,
    slot: &mut Slot,
    start: TurnStart,
    options: RunOptions,
    policy: BusyPolicy,
    done: oneshot::Sender<Result<TurnOutcome, HostError>>,
) -> Result<Heard, HostError> {
    // A resume that may have nothing to finish: whatever comes runs after it.
    if slot.probing && !matches!(start, TurnStart::Resume) {
        return Ok(Heard::Next(slot.queue_next(start, options, done)));
    }
    let ending = slot.control.is_closed();
    let text = match start {
        TurnStart::Input(text)
        | TurnStart::New {
            input: Some(text), ..
        } => text,
        // A session whose turns this host runs has nothing to resume, even as a turn ends:
        // its driver answers what is queued. (Queued behind the ending turn, a resume from
        // recovery's scan would hold the session while a client answers the question the
        // turn just asked, and the answer would be refused.)
        TurnStart::Resume => {
            return Err(HostError::busy(
                session,
                "a turn is running on it here: nothing to resume",
            ));
        }
        // Only an input can be queued; anything else waits for a turn that is ending.
        other if ending => return Ok(Heard::Next(slot.queue_next(other, options, done))),
        _ => return Err(HostError::busy(session, "a turn is running on it")),
    };
    let mode = match policy.mode() {
        Some(mode) => mode,
        // The running turn has recorded its end and nothing is queued after it: no
        // conflict, it is next (a client that posts as soon as its stream ended).
        None if ending && !slot.draining => {
            return Ok(Heard::Next(slot.queue_next(
                TurnStart::Input(text),
                options,
                done,
            )));
        }
        None => return Err(HostError::busy(session, "a turn is running on it")),
    };
    let (command, heard) = TurnCommand::queue_with(
        InputQueued::new(text, mode),
        options.recorded_fields().clone(),
    );
    let Some(id) = command.id() else {
        return Err(HostError::TurnFailed("a queued input has an id".to_owned()));
    };
    slot.waiters.insert(id, done);
    match slot.control.send(command).map_err(|returned| *returned) {
        Ok(()) => Ok(Heard::Queued(heard)),
        // The turn took no more commands: the driver runs it next, under the same id.
        Err(TurnCommand::Queue {
            input, mut fields, ..
        }) => {
            let done = slot.waiters.remove(&id).ok_or_else(|| {
                HostError::TurnFailed("a queued input lost its waiter".to_owned())
            })?;
            queued_fields(&input, &mut fields);
            let options = RunOptions::new().input_fields(fields).input_id(id);
            Ok(Heard::Next(slot.queue_next(
                TurnStart::Input(input.text),
                options,
                done,
            )))
        }
        Err(other) => {
            other.refuse("not a queued input");
            Err(HostError::TurnFailed(
                "a command came back changed".to_owned(),
            ))
        }
    }
}

/// The fields of a queued input that a `user:input` carries beside its text.
fn queued_fields(input: &InputQueued, fields: &mut Map<String, Value>) {
    if !input.images.is_empty()
        && let Ok(images) = serde_json::to_value(&input.images)
    {
        fields.insert("images".to_owned(), images);
    }
    if let Some(controls) = &input.controls {
        fields.insert("controls".to_owned(), controls.clone());
    }
}

impl Slot {
    /// Queues `start` for the driver to run after the running turn.
    fn queue_next(
        &mut self,
        start: TurnStart,
        options: RunOptions,
        done: oneshot::Sender<Result<TurnOutcome, HostError>>,
    ) -> oneshot::Receiver<Result<Option<CommandRecorded>, HostError>> {
        let (recorded, heard) = oneshot::channel();
        self.next.push_back(Job {
            start,
            options,
            recorded,
            done,
        });
        heard
    }
}

/// Waits until a job's first event is recorded (or the job failed first).
async fn wait_recorded(
    heard: oneshot::Receiver<Result<Option<CommandRecorded>, HostError>>,
) -> Result<Option<CommandRecorded>, HostError> {
    heard.await.unwrap_or_else(|_| {
        Err(HostError::TurnFailed(
            "the turn stopped before recording anything".to_owned(),
        ))
    })
}

/// What [`Host::start`] needs of the store to claim a session.
pub(crate) async fn claim(
    store: &Arc<dyn Store>,
    session: &SessionId,
) -> Result<Option<openharness_core::adapter::Claim>, HostError> {
    store
        .claim(session)
        .await
        .map_err(|source| HostError::store(store.as_ref(), source))
}
