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
use crate::assembled::{Inner, WorkflowState};
use crate::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, Outcome,
    OutputRejected as Rejected, TextComplete, TextDelta, ToolCalled, ToolResult, UserInput,
    WorkflowCompleted, WorkflowStarted,
};
use crate::derive::{Derived, OpenCall, Unrecorded, Window};
use crate::emit::{Emit, Pending};
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::{Applied, Fold, panic_message};
use crate::locks::SessionGuard;
use crate::pattern::Pattern;
use crate::provider::{
    ChatMessage, Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderSink, Usage,
};
use crate::renderer::Renderer;
use crate::run::{Continuation, ForkUnfinished, RunOptions, RunOutcome, StopReason};
use crate::store::{Snapshot, StoreError, json_len};

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
/// snapshots' worth of events.
const SNAPSHOT_SPACING: u64 = 8;

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
    /// them again, record what it had not recorded.
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

pub(crate) async fn run<S: WorkflowState>(
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
    let (initial, session, len, snapshots, open_requests, begin) = match start {
        Start::Fresh => (
            wf.initial.clone(),
            session.unwrap_or_default(),
            0,
            Snapshots::after(0, None, 0),
            Vec::new(),
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
                ..
            } = derived;
            let begin = match begin {
                TurnBegin::Input(text) => Begin::Input(text),
                TurnBegin::Answer { request, text } => Begin::Answer { request, text },
                TurnBegin::Resume => Begin::Resume {
                    unrecorded,
                    open_calls,
                },
            };
            let snapshots = Snapshots::after(snapshot_at, snapshot_bytes, len);
            (state, session, len, snapshots, open_requests, begin)
        }
    };
    let mut run = Run {
        wf,
        session,
        len,
        staged: len,
        first_seq: len,
        fold: Fold::at(initial, len),
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
        open_requests,
        errors: 0,
        snapshots,
        input_id,
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
            run.stop_agents().await;
            run.renderers.finish().await;
            Err(err)
        }
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
    open_requests: Vec<EventId>,
    /// `error:occurred` events this turn recorded.
    errors: u64,
    /// When the session's snapshots were saved and when the next is due.
    snapshots: Snapshots,
    /// The id the turn's `user:input` is recorded with, until it is staged
    /// ([`RunOptions::input_id`]).
    input_id: Option<EventId>,
    /// One writer per session: held until the run is over.
    _guard: SessionGuard,
}

impl<S: WorkflowState> Run<'_, S> {
    /// Queues the run's first events. Returns a stop reason when the run is over before the
    /// loop starts (a resumed turn whose `until` already holds).
    fn begin(
        &mut self,
        begin: Begin,
        input: Option<String>,
        input_fields: &serde_json::Map<String, serde_json::Value>,
        limits: &Limits,
    ) -> Option<StopReason> {
        let user_input = |text: String| {
            let mut pending = Pending::of(&UserInput { text });
            if let serde_json::Value::Object(payload) = &mut pending.payload {
                for (name, value) in input_fields {
                    payload.entry(name.clone()).or_insert_with(|| value.clone());
                }
            }
            pending
        };
        match begin {
            Begin::Fresh => {
                let started = Pending::of(&WorkflowStarted {
                    workflow: self.wf.name.clone(),
                    code: Some(self.wf.code.code.clone()),
                    version: self.wf.code.version.clone(),
                    commit: self.wf.code.commit.clone(),
                });
                self.queue.push_back((started, None, None));
                if let Some(text) = input {
                    self.queue.push_back((user_input(text), None, None));
                }
                None
            }
            Begin::Fork {
                first,
                queued,
                redeliver,
                unfinished,
            } => {
                // The first event is folded: queue what follows it.
                let first = self.stage(vec![(first, None)]);
                if let Some(unfinished) = unfinished {
                    if let Some(reason) = self.finish_fork_point(*unfinished, limits) {
                        return Some(reason);
                    }
                    if let Some(text) = input {
                        self.queue.push_back((user_input(text), None, None));
                    }
                    return None;
                }
                let cause = self.window.get(first.start).map(|e| e.id)?;
                self.queue
                    .extend(queued.into_iter().map(|p| (p, Some(cause), None)));
                if let Some(text) = input {
                    self.queue.push_back((user_input(text), None, None));
                }
                let event = redeliver?;
                self.activate(&Envelope { id: cause, ..event }, limits.max_agent_calls)
            }
            Begin::Input(text) => {
                self.queue.push_back((user_input(text), None, None));
                None
            }
            Begin::Answer { request, text } => {
                let answer = InputReceived {
                    request_id: request,
                    text,
                };
                let mut pending = Pending::of(&answer);
                if let serde_json::Value::Object(payload) = &mut pending.payload {
                    for (name, value) in input_fields {
                        payload.entry(name.clone()).or_insert_with(|| value.clone());
                    }
                }
                self.queue.push_back((pending, Some(request), None));
                None
            }
            Begin::Resume {
                unrecorded,
                open_calls,
            } => self.resume(unrecorded, open_calls, limits),
        }
    }

    /// Closes a killed process's open agent calls as interrupted (one append), then queues what
    /// it had not recorded and runs the closed calls again.
    fn resume(
        &mut self,
        unrecorded: Vec<Unrecorded>,
        open_calls: Vec<OpenCall>,
        limits: &Limits,
    ) -> Option<StopReason> {
        self.finish_cut_work(Cut::Crash, Vec::new(), unrecorded, open_calls, limits)
    }

    /// A fork's start: finishes what its parent had under way at the fork point, as
    /// [`Run::resume`] finishes a cut-off turn. The rest of a final record the fork point cut
    /// is recorded first (keeping that call's output); calls cut at the fork point are closed
    /// as interrupted and run again from their start with this workflow's agents (a variant's
    /// prompts and models), as are agents the parent had not started yet.
    fn finish_fork_point(
        &mut self,
        unfinished: ForkUnfinished,
        limits: &Limits,
    ) -> Option<StopReason> {
        let ForkUnfinished {
            parent,
            position,
            completing,
            unrecorded,
            open_calls,
        } = unfinished;
        let cut = Cut::Fork { parent, position };
        self.finish_cut_work(cut, completing, unrecorded, open_calls, limits)
    }

    /// What [`Run::resume`] and [`Run::finish_fork_point`] share: closes the calls `cut`
    /// left open as interrupted (one append), queues what was not recorded, records the rest
    /// of a cut final record (`completing`) and runs the closed calls again.
    fn finish_cut_work(
        &mut self,
        cut: Cut,
        completing: Unit,
        unrecorded: Vec<Unrecorded>,
        open_calls: Vec<OpenCall>,
        limits: &Limits,
    ) -> Option<StopReason> {
        let closes: Unit = open_calls
            .iter()
            .map(|call| {
                let closed = AgentCompleted {
                    agent: call.started.agent.clone(),
                    outcome: Outcome::Interrupted,
                    usage: Usage::default(),
                    cost: None,
                    error: Some(cut.why_closed()),
                    output: None,
                };
                (Pending::of(&closed), call.trigger_id)
            })
            .collect();
        if !closes.is_empty() {
            self.stage(closes);
        }
        if self.until_holds() {
            return Some(StopReason::Until);
        }
        for item in unrecorded {
            match item {
                Unrecorded::Event(pending, cause) => {
                    self.queue.push_back((pending, Some(cause), None));
                }
                Unrecorded::Start {
                    agent,
                    started,
                    trigger,
                } => {
                    if let Some(reason) = self.start_again(&cut, &agent, *started, trigger, limits)
                    {
                        return Some(reason);
                    }
                }
            }
        }
        if !completing.is_empty() {
            let staged = self.stage(completing);
            if self.until_holds() {
                return Some(StopReason::Until);
            }
            for seq in staged {
                if let Some(reason) = self.activate_agents(seq, limits.max_agent_calls) {
                    return Some(reason);
                }
            }
        }
        for call in open_calls {
            let agent = call.started.agent.clone();
            match call.trigger {
                Some(trigger) => {
                    if let Some(reason) =
                        self.start_again(&cut, &agent, call.started, trigger, limits)
                    {
                        return Some(reason);
                    }
                }
                None => {
                    let (code, message) = cut.why_not_again(&agent);
                    let error = ErrorOccurred::recoverable(code, message, call.trigger_id);
                    self.queue
                        .push_back((Pending::of(&error), call.trigger_id, None));
                }
            }
        }
        None
    }

    /// Runs a cut call again: after a crash as it was started ([`Run::rerun`]); in a fork as
    /// this workflow starts it now ([`Run::restart`]).
    fn start_again(
        &mut self,
        cut: &Cut,
        agent: &str,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        match cut {
            Cut::Crash => self.rerun(agent, started, trigger, limits),
            Cut::Fork { .. } => self.restart(agent, started, trigger, limits),
        }
    }

    /// Starts an agent call of a fork again from its trigger, activated by this workflow in
    /// the fork's state (so a variant's prompt and model apply); when the agent does not
    /// activate there (its `when` no longer holds), with the prompt and model it was first
    /// started with.
    fn restart(
        &mut self,
        agent: &str,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        let fresh = self
            .wf
            .agents
            .iter()
            .find(|a| a.spec().name == agent)
            .and_then(|erased| {
                Some((
                    Arc::clone(erased),
                    erased.activate(self.fold.state(), &trigger)?,
                ))
            });
        match fresh {
            Some((erased, Ok(activation))) => {
                self.queue_call(erased, trigger, activation, limits.max_agent_calls)
            }
            Some((_, Err(message))) => {
                let error = ErrorOccurred::recoverable("agent", message, Some(trigger.id));
                self.queue
                    .push_back((Pending::of(&error), Some(trigger.id), None));
                None
            }
            None => self.rerun(agent, started, trigger, limits),
        }
    }

    /// Queues an agent call again, with the prompt and model it was first started with.
    fn rerun(
        &mut self,
        agent: &str,
        started: AgentStarted,
        trigger: Envelope,
        limits: &Limits,
    ) -> Option<StopReason> {
        let Some(erased) = self.wf.agents.iter().find(|a| a.spec().name == agent) else {
            self.queue.push_back((
                Pending::of(&ErrorOccurred::recoverable("resume", format!(
                        "agent `{agent}` is not part of workflow `{}` any more; its interrupted call is not run again",
                        self.wf.name
                    ), Some(trigger.id))),
                Some(trigger.id),
                None,
            ));
            return None;
        };
        let activation = erased.reactivate(self.fold.state(), &trigger, &started);
        self.queue_call(
            Arc::clone(erased),
            trigger,
            activation,
            limits.max_agent_calls,
        )
    }

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
                    // Nothing queued: take what agents have already sent into this batch,
                    // else make the batch durable and wait for them.
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
                            tokio::select! {
                                biased;
                                () = limits.cancel.cancelled() => return Ok(StopReason::Cancelled),
                                () = sleep_until(limits.deadline) => return Ok(StopReason::Deadline),
                                message = rx.recv() => message,
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

    /// Folds events into the batch (not durable yet): for each in order, folds it, queues what
    /// its handler emits and follows requests, errors and usage. Returns their seqs.
    fn stage(&mut self, unit: Unit) -> std::ops::Range<u64> {
        let first = self.staged;
        for (pending, caused_by) in unit {
            let mut event = Envelope::new(pending.name, pending.payload, caused_by);
            if event.name == UserInput::NAME
                && let Some(id) = self.input_id.take()
            {
                event.id = id;
            }
            let (applied, event) = self.window.apply_kept(&mut self.fold, event);
            match applied {
                Applied::Handled(emit) => {
                    self.queue.extend(
                        emit.into_pending()
                            .into_iter()
                            .map(|p| (p, Some(event.id), None)),
                    );
                }
                Applied::Panicked(message) => {
                    let error = ErrorOccurred::recoverable(
                        "handler",
                        format!("the handler for `{}` panicked: {message}", event.name),
                        Some(event.id),
                    );
                    self.queue
                        .push_back((Pending::of(&error), Some(event.id), None));
                }
                Applied::Skipped | Applied::Undecodable(_) => {}
            }
            match event.name.as_ref() {
                AgentCompleted::NAME => {
                    if let Ok(completed) = event.decode::<AgentCompleted>() {
                        self.usage += completed.usage;
                        self.cost += completed.cost.unwrap_or(0.0);
                    }
                }
                ErrorOccurred::NAME => self.errors += 1,
                InputRequested::NAME => self.open_requests.push(event.id),
                InputReceived::NAME => {
                    if let Ok(received) = event.decode::<InputReceived>() {
                        self.open_requests.retain(|id| *id != received.request_id);
                    }
                }
                _ => {}
            }
            self.staged += 1;
        }
        first..self.staged
    }

    /// Appends the batch in one all-or-nothing append; once it is durable, shows it to the
    /// renderers and starts the agent calls it holds (or, when `launch` is false because the
    /// run is ending, counts them as running so they are closed as interrupted).
    async fn flush(&mut self, launch: bool) -> Result<(), Error> {
        if self.staged > self.len {
            let events = self.window.from(self.len);
            let store = &self.wf.store;
            store
                .append(&self.session, events, self.len)
                .await
                .map_err(|err| match err {
                    StoreError::Conflict {
                        expected, actual, ..
                    } => Error::SessionBusy {
                        session: self.session.clone(),
                        reason: format!(
                            "another writer recorded into it: this turn expected it at seq {expected} but it is at seq {actual}; nothing of this batch was recorded"
                        ),
                    },
                    StoreError::Fenced { token, current, .. } => Error::SessionBusy {
                        session: self.session.clone(),
                        reason: format!(
                            "this process's claim on it (claim {token}) was taken over by another process (claim {current}), which runs it now; nothing of this batch was recorded"
                        ),
                    },
                    err => Error::store(store.as_ref(), Some(&self.session), err),
                })?;
            for event in events {
                self.renderers.send(event);
            }
            self.snapshots.recorded(events);
            self.len = self.staged;
        }
        for task in std::mem::take(&mut self.launches) {
            if launch {
                self.launch(task);
            } else {
                self.running
                    .insert(task.call, (task.agent.spec().name, task.trigger.id));
            }
        }
        let keep_from = self.fold.checkpoint_position().min(self.len);
        self.window.trim(keep_from);
        // Every folded event is recorded: the state is the state after `len` events. (A
        // turn that is ending saves its snapshot once `workflow:completed` is recorded.)
        if launch && self.snapshots.mid_turn_due(self.len) {
            self.save_snapshot(true).await;
        }
        Ok(())
    }

    /// Starts every agent the event at `seq` activates. Returns a stop reason if the agent
    /// call limit would be exceeded.
    fn activate_agents(&mut self, seq: u64, max_agent_calls: u64) -> Option<StopReason> {
        let event = self.window.get(seq)?;
        if !self
            .wf
            .agents
            .iter()
            .any(|a| a.spec().trigger == event.name)
        {
            return None;
        }
        let event = event.clone();
        self.activate(&event, max_agent_calls)
    }

    /// Starts every agent `event` activates in the current state.
    fn activate(&mut self, event: &Envelope, max_agent_calls: u64) -> Option<StopReason> {
        for (agent, activation) in activations(&self.wf.agents, self.fold.state(), event) {
            match activation {
                Err(message) => {
                    let error = ErrorOccurred::recoverable("agent", message, Some(event.id));
                    self.queue
                        .push_back((Pending::of(&error), Some(event.id), None));
                }
                Ok(activation) => {
                    if let Some(reason) =
                        self.queue_call(agent, event.clone(), activation, max_agent_calls)
                    {
                        return Some(reason);
                    }
                }
            }
        }
        None
    }

    /// Queues an agent call's `agent:started`; the call starts once that event is durable.
    fn queue_call(
        &mut self,
        agent: Arc<dyn ErasedAgent<S>>,
        trigger: Envelope,
        activation: Activation,
        max_agent_calls: u64,
    ) -> Option<StopReason> {
        if self.agent_calls >= max_agent_calls {
            return Some(StopReason::MaxAgentCalls);
        }
        let provider = self.wf.provider.clone()?; // `build` rejects agents without a provider
        self.agent_calls += 1;
        let started = AgentStarted {
            agent: agent.spec().name.to_owned(),
            model: activation.model.clone(),
            provider: Some(provider.name().to_owned()),
            system: activation.system.clone(),
            messages: activation
                .messages
                .iter()
                .map(ChatMessage::recorded)
                .collect(),
            prompt: activation.prompt.clone(),
            reply: activation.reply.clone(),
        };
        let cause = trigger.id;
        let task = AgentTask {
            agent,
            provider,
            trigger,
            activation,
            call: self.agent_calls,
            attempts: self.wf.max_output_attempts,
            tx: self.tx.clone(),
        };
        self.queue.push_back((
            Pending::of(&started),
            Some(cause),
            Some(AfterRecord::Launch(Box::new(task))),
        ));
        None
    }

    /// Starts an agent call, now that its `agent:started` is recorded.
    fn launch(&mut self, task: AgentTask<S>) {
        self.running
            .insert(task.call, (task.agent.spec().name, task.trigger.id));
        let cancel = self.agents_cancel.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {}
                () = task.run() => {}
            }
        });
    }

    /// Cancels the agents still running and waits for their tasks to end.
    async fn stop_agents(&mut self) {
        self.agents_cancel.cancel();
        while self.tasks.join_next().await.is_some() {}
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
            open_requests: self.open_requests,
            errors: self.errors,
        })
    }

    async fn record_leftovers(
        &mut self,
        reason: StopReason,
        rx: &mut UnboundedReceiver<AgentMessage>,
    ) -> Result<(), Error> {
        self.flush(false).await?;
        while let Ok(message) = rx.try_recv() {
            let (unit, after) = unit_of::<S>(message);
            self.stage(unit);
            if let Some(AfterRecord::Finish(call)) = after {
                self.running.remove(&call);
            }
        }
        let mut interrupted: Vec<_> = self.running.drain().collect();
        interrupted.sort_unstable_by_key(|(call, _)| *call);
        let closes = interrupted
            .into_iter()
            .map(|(_, (agent, trigger))| {
                let completed = AgentCompleted {
                    agent: agent.to_owned(),
                    outcome: Outcome::Interrupted,
                    usage: Usage::default(),
                    cost: None,
                    error: Some(format!(
                        "the run ended ({}) while the agent was working",
                        reason.as_str()
                    )),
                    output: None,
                };
                (Pending::of(&completed), Some(trigger))
            })
            .collect();
        self.stage(closes);
        self.flush(false).await?;
        // Counted before it is staged: `workflow:completed` itself is no error.
        let completed = WorkflowCompleted {
            reason: reason.as_str().to_owned(),
            open_requests: self.open_requests.clone(),
            errors: self.errors,
        };
        self.stage(vec![(Pending::of(&completed), None)]);
        self.flush(false).await
    }

    /// Saves the state as a snapshot at `len`, mid-turn or at the turn's end; only called when
    /// every folded event is recorded, so the state is the state after `len` events. A snapshot
    /// is derived data: failing to save one is a warning.
    async fn save_snapshot(&mut self, mid_turn: bool) {
        debug_assert_eq!(
            self.fold.position(),
            self.len,
            "a snapshot of a state not recorded"
        );
        let state = match serde_json::to_value(self.fold.state()) {
            Ok(state) => state,
            Err(err) => {
                tracing::warn!(session = %self.session, error = %err, "the state does not serialize; no snapshot saved");
                self.snapshots.off = true;
                return;
            }
        };
        let bytes = json_len(&state);
        let snapshot = Snapshot::new(self.len, state);
        let saved = self.wf.store.snapshot(&self.session, &snapshot).await;
        self.snapshots.tried(self.len, bytes);
        match saved {
            Ok(()) => {
                self.snapshots.at = self.len;
                self.snapshots.saved_mid_turn |= mid_turn;
            }
            Err(err) if mid_turn => {
                tracing::warn!(session = %self.session, error = %crate::ErrorChain(&err), "could not save a snapshot mid-turn; reads of this turn fold a longer tail");
            }
            Err(err) => {
                tracing::warn!(session = %self.session, error = %crate::ErrorChain(&err), "could not save the turn's snapshot; the next turn folds a longer tail");
            }
        }
    }
}

mod agent_task;
mod renderers;
mod snapshots;
#[cfg(test)]
mod tests;

use agent_task::{AgentTask, unit_of};
use renderers::RendererPool;
use snapshots::Snapshots;
