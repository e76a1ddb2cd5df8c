//! The event loop behind [`crate::Workflow::run`] and the turns of a living session.
//!
//! One event at a time: take the next queued event, fold it through the handlers (queueing
//! what they emit), check `until`, and queue the `agent:started` of the agents it activates.
//! Everything one event causes is recorded with it in one all-or-nothing append, made when the
//! queue runs dry (or a batch grows large): only once that append is durable do the renderers
//! see the events and the agents start. So the log never holds an event without what its
//! handlers made of it, and a crash can lose only work no one was told of. Agents run as tokio
//! tasks and send what they produce back through a channel; the loop records it in arrival
//! order, so the log is the exact history and replays need no agent.
//!
//! The loop keeps no copy of the log: the fold's restore window (the events since its last
//! checkpoint) and the batch not yet appended are all it holds, so a turn on a session of a
//! million events needs no more memory than one on a short session.
//!
//! Snapshots: a turn saves the state at its end when the tail since the session's latest
//! snapshot is long (`SNAPSHOT_TAIL` events), so the next turn folds a short tail. A long turn
//! also saves them as it goes, spaced by the state's size: once the events it recorded since
//! the latest snapshot reach `SNAPSHOT_SPACING` times that snapshot's JSON in bytes (and at
//! least `MIN_SNAPSHOT_EVENTS` events). So snapshots add about `1 / SNAPSHOT_SPACING` of the
//! events' bytes to the store (plus a state or two per long turn: the last one saved mid-turn
//! and the one at its end), and a read at any position (`load_state_at` on a store opened
//! afresh) folds at most that many snapshots' worth of events past the nearest one instead of
//! the whole turn.
//! While the session's snapshot size is unknown (no snapshot yet, or one the turn did not
//! start from), the first is due after `SNAPSHOT_TAIL` events. A snapshot is taken only right
//! after an append is durable, when the fold's state is exactly the state after the recorded
//! events, and the state is serialized only when one is due. An event counts the JSON of its
//! payload and name plus `ENVELOPE_BYTES`.
//!
//! Where things are: this file holds the loop ([`run`], `Run::drive`) and its state; where
//! the loop runs (a worker thread, beside its agents) is `on_worker`; how a turn begins
//! (fresh, resumed, at a fork point, restarting cut work) is in `begin`; staging,
//! appending and snapshots in `record` (when snapshots are due, in `snapshots`); agents'
//! activation and launch in `activate`; an agent call as a task, and the provider events it
//! sends back, in `agent_task`; the renderers' workers in `renderers`.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{Activation, ErasedAgent, OutputRejected, activations};
use crate::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, Outcome,
    OutputRejected as Rejected, TextComplete, UserInput, WorkflowCompleted, WorkflowStarted,
};
use crate::contained::panic_message;
use crate::control::{Answer, CommandRecorded, TurnCommand, TurnInbox};
use crate::definition::{Inner, WorkflowState};
use crate::emit::{Emit, Pending};
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::{Applied, Fold};
use crate::locks::SessionGuard;
use crate::open_requests::OpenRequests;
use crate::pattern::Pattern;
use crate::provider::{
    ChatMessage, Provider, ProviderError, ProviderRequest, ProviderSink, Steers, Usage,
};
use crate::queued::QueuedInputs;
use crate::recover::{Derived, OpenCall, Unrecorded, Window};
use crate::renderer::Renderer;
use crate::run::{Continuation, ForkUnfinished, RunOptions, RunOutcome, StopReason};
use crate::store::{StoreError, json_len};

/// What an agent task sends back to the loop.
enum AgentMessage {
    /// A streamed event to record (text delta, tool call, tool result), caused by the agent's
    /// trigger.
    Event(Pending, EventId),
    /// The agent call is over: its final events (`text:complete`, its output events or an
    /// `error:occurred`, then `agent:completed`), recorded back to back in one append.
    Finished {
        call: u64,
        trigger: EventId,
        events: Vec<Pending>,
    },
}

/// What to do once a queued event is recorded.
enum AfterRecord<S> {
    /// Start this agent call (the event is its `agent:started`).
    Launch(Box<AgentTask<S>>),
    /// This agent call is over (the event is its `agent:completed`).
    Finish(u64),
}

/// How long a finished run waits for its renderers to drain.
const RENDERER_DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// The most events one append holds; a longer chain of consequences is split.
const MAX_BATCH: u64 = 1024;

/// A turn saves a snapshot at its end when at least this many events were recorded since the
/// session's latest snapshot (or when it saved one mid-turn), so continuing a session folds
/// only a short tail. Also when a turn saves its first snapshot mid-turn if the size of the
/// session's snapshots is not known yet.
const SNAPSHOT_TAIL: u64 = 64;

/// A turn saves a snapshot mid-turn once the bytes of the events it recorded since the latest
/// snapshot reach this many times the size of that snapshot's JSON: snapshots then add at most
/// about `1 / SNAPSHOT_SPACING` to the store, and reading a state folds at most this many
/// snapshots' worth of events. A byte of events costs a read about twice what a byte of
/// snapshot does, so the slowest read (at the end of a stretch) costs about
/// `2 × SNAPSHOT_SPACING + 1` snapshot decodes. With 8 the race bench's slowest cold read at
/// 5,000 tasks took 7.5–8.0 ms, with 4 5.0–5.9 ms, for a file 12% larger (8.4 MB → 9.4 MB).
const SNAPSHOT_SPACING: u64 = 4;

/// The fewest events between snapshots a turn saves mid-turn, so a tiny state is not saved
/// every few events.
const MIN_SNAPSHOT_EVENTS: u64 = 256;

/// About what an event's envelope (id, timestamp, cause, keys) adds in JSON to its payload and
/// name: an event counts this many bytes towards the next snapshot beyond those.
const ENVELOPE_BYTES: u64 = 160;

/// How a run begins.
pub(crate) enum Start<S> {
    /// A new session: `workflow:started`, then the options' input.
    Fresh,
    /// A fork: a new session from another's state (see [`Continuation`]).
    Fork(Box<Continuation<S>>),
    /// A turn on a recorded session.
    Turn(Box<Turn<S>>),
}

/// A turn on a recorded session: its derived state and how the turn begins.
pub(crate) struct Turn<S> {
    pub(crate) session: SessionId,
    pub(crate) derived: Derived<S>,
    pub(crate) begin: TurnBegin,
}

/// What a turn on a recorded session begins with.
pub(crate) enum TurnBegin {
    /// New input: `user:input`.
    Input(String),
    /// An answer to an open `input:requested`: `input:received`.
    Answer { request: EventId, text: String },
    /// Finish what a killed process left: close its open agent calls as interrupted and run
    /// them again, record what it had not recorded; or, with nothing cut off, answer the
    /// oldest input queued during an earlier turn.
    Resume,
}

/// How a run begins, once its state is in hand.
enum Begin {
    Fresh,
    Fork {
        first: Pending,
        queued: Vec<Pending>,
        redeliver: Option<Envelope>,
        unfinished: Option<Box<ForkUnfinished>>,
    },
    Input(String),
    Answer {
        request: EventId,
        text: String,
    },
    Resume {
        unrecorded: Vec<Unrecorded>,
        open_calls: Vec<OpenCall>,
        /// The inputs queued and not answered, oldest first (their `input:queued` events).
        queued: Vec<Envelope>,
    },
}

/// The guards of one run.
struct Limits {
    cancel: CancellationToken,
    deadline: Option<Instant>,
    max_events: u64,
    max_agent_calls: u64,
    max_cost: Option<f64>,
}

/// Runs a turn of `wf` to its end: on a worker thread of the runtime (see [`on_worker`]),
/// returning when the loop does.
pub(crate) async fn run<S: WorkflowState>(
    wf: &Arc<Inner<S>>,
    options: RunOptions,
    start: Start<S>,
    guard: SessionGuard,
) -> Result<RunOutcome<S>, Error> {
    let wf = Arc::clone(wf);
    on_worker::on_worker(async move { run_here(&wf, options, start, guard).await }).await
}

/// Runs a turn of `wf` to its end, in the caller's task.
async fn run_here<S: WorkflowState>(
    wf: &Inner<S>,
    options: RunOptions,
    start: Start<S>,
    guard: SessionGuard,
) -> Result<RunOutcome<S>, Error> {
    let RunOptions {
        input,
        input_fields,
        input_id,
        session,
        cancel,
        max_events,
        max_agent_calls,
        max_cost,
        deadline,
        renderers,
        control,
        acknowledge,
        agents,
        client_tools,
        scheduled,
        ..
    } = options;
    let limits = Limits {
        deadline: deadline.map(|d| Instant::now() + d),
        cancel,
        max_events,
        max_agent_calls,
        max_cost,
    };
    let (tx, mut rx) = unbounded_channel();
    let (initial, session, len, snapshots, open_requests, queued, begin) = match start {
        Start::Fresh => (
            wf.initial.clone(),
            session.unwrap_or_default(),
            0,
            Snapshots::after(0, None, 0),
            Vec::new(),
            QueuedInputs::default(),
            Begin::Fresh,
        ),
        Start::Fork(from) => {
            let Continuation {
                state,
                first,
                queued,
                redeliver,
                open_requests,
                unfinished,
            } = *from;
            let begin = Begin::Fork {
                first,
                queued,
                redeliver,
                unfinished,
            };
            let snapshots = Snapshots::after(0, None, 0);
            (
                state,
                session.unwrap_or_default(),
                0,
                snapshots,
                open_requests,
                QueuedInputs::default(),
                begin,
            )
        }
        Start::Turn(turn) => {
            let Turn {
                session,
                derived,
                begin,
            } = *turn;
            let Derived {
                state,
                len,
                snapshot_at,
                snapshot_bytes,
                open_requests,
                unrecorded,
                open_calls,
                queued,
                ..
            } = derived;
            let queued_events = queued.events();
            let begin = match begin {
                TurnBegin::Input(text) => Begin::Input(text),
                TurnBegin::Answer { request, text } => Begin::Answer { request, text },
                TurnBegin::Resume => Begin::Resume {
                    unrecorded,
                    open_calls,
                    queued: queued_events,
                },
            };
            let snapshots = Snapshots::after(snapshot_at, snapshot_bytes, len);
            (state, session, len, snapshots, open_requests, queued, begin)
        }
    };
    let mut run = Run {
        wf,
        session,
        len,
        staged: len,
        first_seq: len,
        fold: Fold::at(initial, len).restoring(),
        window: Window::new(len),
        queue: VecDeque::new(),
        launches: Vec::new(),
        renderers: RendererPool::start(renderers),
        running: HashMap::new(),
        tasks: JoinSet::new(),
        tx,
        agents_cancel: limits.cancel.child_token(),
        agent_calls: 0,
        usage: Usage::default(),
        cost: 0.0,
        open_requests: OpenRequests::from_ids(open_requests),
        errors: 0,
        state_hashes: StateHashes::new(wf.state_hashes),
        snapshots,
        input_id,
        queued,
        control,
        scheduled: scheduled.into(),
        acknowledge,
        steers: Steers::default(),
        answers: Vec::new(),
        next_id: None,
        settings: agents,
        client_tools,
        _guard: guard,
    };
    let result = match run.begin(begin, input, &input_fields, &limits) {
        Some(reason) => Ok(reason),
        None => run.drive(&limits, &mut rx).await,
    };
    match result {
        Ok(reason) => {
            if matches!(
                reason,
                StopReason::MaxEvents
                    | StopReason::MaxAgentCalls
                    | StopReason::MaxCost
                    | StopReason::Deadline
            ) {
                tracing::warn!(session = %run.session, reason = reason.as_str(), "a guard stopped the turn before its work was done");
            }
            run.finish(reason, &mut rx).await
        }
        Err(err) => {
            run.refuse_unrecorded(&err);
            if let Some(inbox) = run.control.as_mut() {
                for command in inbox.close() {
                    command.refuse(format!("the turn failed: {err}"));
                }
            }
            run.stop_agents().await;
            run.renderers.finish().await;
            Err(err)
        }
    }
}

/// What woke a turn waiting for its agents.
enum Woke {
    Command(TurnCommand),
    Agent(Option<AgentMessage>),
}

/// The next command of `inbox`; never, without one (or once its senders are gone).
async fn next_command(inbox: Option<&mut TurnInbox>) -> TurnCommand {
    match inbox {
        Some(inbox) => match inbox.next().await {
            Some(command) => command,
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Events folded together before any agent they activate is started (one queued event, or
/// the final events of one agent call), each with its cause.
type Unit = Vec<(Pending, Option<EventId>)>;

/// What cut a turn's work short, to be finished by the turn that runs now.
enum Cut {
    /// The process running it was killed: a resume finishes it.
    Crash,
    /// A fork was made at `position` of `parent`, inside it.
    Fork { parent: SessionId, position: u64 },
}

impl Cut {
    /// The `error` of the `agent:completed` that closes a cut call as interrupted.
    fn why_closed(&self) -> String {
        match self {
            Self::Crash => {
                "the process running this call stopped before it completed; it runs again"
                    .to_owned()
            }
            Self::Fork { parent, position } => format!(
                "the fork of session {parent} at position {position} cut this call before it completed; the fork runs it again from its start"
            ),
        }
    }

    /// The code and message of the error recorded for a cut call of `agent` whose trigger is
    /// not in the turn, so it cannot run again.
    fn why_not_again(&self, agent: &str) -> (&'static str, String) {
        match self {
            Self::Crash => (
                "resume",
                format!(
                    "agent `{agent}` was interrupted, and the event that started it is not in the turn being resumed; it is not run again"
                ),
            ),
            Self::Fork { .. } => (
                "fork",
                format!(
                    "agent `{agent}` was working at the fork point, and the event that started it is not in the turn being forked; it is not run again"
                ),
            ),
        }
    }
}

/// An event waiting to be recorded: what, caused by what, and what to do once it is durable.
type Queued<S> = (Pending, Option<EventId>, Option<AfterRecord<S>>);

struct Run<'w, S> {
    wf: &'w Inner<S>,
    session: SessionId,
    /// How many events are durable in the store.
    len: u64,
    /// How many events are folded: `len` plus the batch not appended yet.
    staged: u64,
    /// The seq of the turn's first event.
    first_seq: u64,
    fold: Fold<S>,
    /// The events the fold may need after a panic, and the batch not appended yet.
    window: Window,
    /// Events waiting to be folded, with their cause and, for `agent:started`, the agent call
    /// to start once that event is durable.
    queue: VecDeque<Queued<S>>,
    /// Agent calls to start once the batch holding their `agent:started` is durable.
    launches: Vec<AgentTask<S>>,
    renderers: RendererPool,
    /// Agent calls in flight: call number -> (agent name, trigger).
    running: HashMap<u64, (&'static str, EventId)>,
    tasks: JoinSet<()>,
    tx: UnboundedSender<AgentMessage>,
    agents_cancel: CancellationToken,
    agent_calls: u64,
    usage: Usage,
    cost: f64,
    /// `input:requested` events not answered yet.
    open_requests: OpenRequests,
    /// `error:occurred` events this turn recorded.
    errors: u64,
    /// When the batch's last event records the state's hash (`Envelope::state_hash`).
    state_hashes: StateHashes,
    /// When the session's snapshots were saved and when the next is due.
    snapshots: Snapshots,
    /// The id the turn's `user:input` is recorded with, until it is staged
    /// ([`RunOptions::input_id`]).
    input_id: Option<EventId>,
    /// Inputs queued during this turn or before it and not answered yet.
    queued: QueuedInputs,
    /// Where commands reach the turn ([`RunOptions::control`]).
    control: Option<TurnInbox>,
    /// Commands given at the safe point where the turn has staged their seq's events, in
    /// order ([`RunOptions::commands_at`]).
    scheduled: VecDeque<(u64, TurnCommand)>,
    /// Told the turn's first event once it is durable ([`RunOptions::acknowledge`]).
    acknowledge: Option<crate::run::Acknowledge>,
    /// Inputs steered into the running agent calls, until one takes them.
    steers: Steers,
    /// Commands recorded in the batch being staged, told once it is durable: each sender,
    /// its event's seq, and whether it is a steer to offer the running calls first.
    answers: Vec<(Answer, u64, bool)>,
    /// The id the next staged event is recorded with (a command's, chosen by its sender).
    next_id: Option<EventId>,
    /// What the run gives its agents instead of their own, by agent ([`RunOptions::agent`]).
    settings: HashMap<String, crate::run::AgentSettings>,
    /// The client's tools, offered to every agent call ([`RunOptions::client_tools`]).
    client_tools: Vec<Arc<dyn crate::Tool>>,
    /// One writer per session: held until the run is over.
    _guard: SessionGuard,
}

impl<S: WorkflowState> Run<'_, S> {
    /// Runs the loop until a stop reason.
    async fn drive(
        &mut self,
        limits: &Limits,
        rx: &mut UnboundedReceiver<AgentMessage>,
    ) -> Result<StopReason, Error> {
        loop {
            if limits.cancel.is_cancelled() {
                return Ok(StopReason::Cancelled);
            }
            if limits.deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(StopReason::Deadline);
            }
            if self.staged - self.first_seq >= limits.max_events {
                return Ok(StopReason::MaxEvents);
            }
            let (unit, after) = match self.queue.pop_front() {
                Some((pending, caused_by, after)) => (vec![(pending, caused_by)], after),
                None => {
                    // Nothing queued: a safe point for a command (a second input, a stop).
                    let due = self
                        .scheduled
                        .front()
                        .is_some_and(|(seq, _)| *seq <= self.staged);
                    let scheduled = due
                        .then(|| self.scheduled.pop_front().map(|(_, command)| command))
                        .flatten();
                    if let Some(command) =
                        scheduled.or_else(|| self.control.as_mut().and_then(TurnInbox::try_next))
                    {
                        match self.command(command).await? {
                            Some(reason) => return Ok(reason),
                            None => continue,
                        }
                    }
                    // Take what agents have already sent into this batch, else make the batch
                    // durable and wait for them.
                    let message = match rx.try_recv() {
                        Ok(message) if self.staged - self.len < MAX_BATCH => Some(message),
                        Ok(message) => {
                            self.flush(true).await?;
                            Some(message)
                        }
                        Err(_) => {
                            self.flush(true).await?;
                            if self.running.is_empty() {
                                return Ok(if self.open_requests.is_empty() {
                                    StopReason::Idle
                                } else {
                                    StopReason::WaitingForInput
                                });
                            }
                            let woke = tokio::select! {
                                biased;
                                () = limits.cancel.cancelled() => return Ok(StopReason::Cancelled),
                                () = sleep_until(limits.deadline) => return Ok(StopReason::Deadline),
                                command = next_command(self.control.as_mut()) => Woke::Command(command),
                                message = rx.recv() => Woke::Agent(message),
                            };
                            match woke {
                                Woke::Command(command) => match self.command(command).await? {
                                    Some(reason) => return Ok(reason),
                                    None => continue,
                                },
                                Woke::Agent(message) => message,
                            }
                        }
                    };
                    match message {
                        Some(message) => unit_of(message),
                        None => return Ok(StopReason::Idle),
                    }
                }
            };
            let staged = self.stage(unit);
            match after {
                Some(AfterRecord::Launch(task)) => self.launches.push(*task),
                Some(AfterRecord::Finish(call)) => {
                    self.running.remove(&call);
                }
                None => {}
            }
            if self.until_holds() {
                return Ok(StopReason::Until);
            }
            if limits.max_cost.is_some_and(|max| self.cost > max) {
                return Ok(StopReason::MaxCost);
            }
            for seq in staged {
                if let Some(reason) = self.activate_agents(seq, limits.max_agent_calls) {
                    return Ok(reason);
                }
            }
            if self.staged - self.len >= MAX_BATCH {
                self.flush(true).await?;
            }
        }
    }

    fn until_holds(&self) -> bool {
        self.wf
            .until
            .as_ref()
            .is_some_and(|until| until(self.fold.state()))
    }

    /// Ends a turn that did not fail: records the batch and what agents had already sent,
    /// marks the agents still running as interrupted, records `workflow:completed`, saves a
    /// snapshot when the tail since the last one is long, and drains the renderers.
    async fn finish(
        mut self,
        reason: StopReason,
        rx: &mut UnboundedReceiver<AgentMessage>,
    ) -> Result<RunOutcome<S>, Error> {
        self.stop_agents().await;
        let mut result = self.record_leftovers(reason, rx).await;
        if let Err(err) = &result {
            self.refuse_unrecorded(err);
        }
        if result.is_ok() {
            // A store that defers durability makes the turn durable here.
            let store = &self.wf.store;
            result = store
                .sync()
                .await
                .map_err(|err| Error::store(store.as_ref(), Some(&self.session), err));
        }
        if result.is_ok() && self.snapshots.turn_end_due(self.len) {
            self.save_snapshot(false).await;
        }
        self.renderers.finish().await;
        result?;
        Ok(RunOutcome {
            session: self.session,
            len: self.len,
            first_seq: self.first_seq,
            state: self.fold.into_state(),
            reason,
            usage: self.usage,
            cost: self.cost,
            open_requests: self.open_requests.into_ids(),
            errors: self.errors,
            queued: self.queued.refs(),
        })
    }
}

mod activate;
mod agent_task;
mod begin;
mod commands;
mod on_worker;
mod record;
mod renderers;
mod snapshots;
mod state_hashes;
#[cfg(test)]
mod tests;

use agent_task::{AgentTask, unit_of};
use renderers::RendererPool;
use snapshots::Snapshots;
use state_hashes::StateHashes;
