//! The event loop behind [`crate::Workflow::run`].
//!
//! One event at a time: take the next queued event, append it to the store (it must be durable
//! before anything else sees it), fold it through the handlers, queue what they emit, hand it
//! to the renderers, check `until`, then start the agents it activates. Agents run as tokio
//! tasks and send what they produce back through a channel; the loop records it in arrival
//! order, so the log is the exact history and replays need no agent.

use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::agent::{Activation, ErasedAgent, OutputRejected};
use crate::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, Outcome, TextComplete, TextDelta, ToolCalled,
    ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use crate::emit::{Emit, Pending};
use crate::error::Error;
use crate::event::{Envelope, Event, EventId, SessionId};
use crate::fold::{Applied, Fold, panic_message};
use crate::pattern::Pattern;
use crate::provider::{Provider, ProviderEvent, ProviderRequest, ProviderSink, Usage};
use crate::renderer::Renderer;
use crate::workflow::{Continuation, Inner, RunOptions, RunOutcome, StopReason, WorkflowState};

/// What an agent task sends back to the loop.
enum AgentMessage {
    /// A streamed event to record (text delta, tool call, tool result), caused by the agent's
    /// trigger.
    Event(Pending, EventId),
    /// The agent call is over: its final events (`text:complete`, its output events or an
    /// `error:occurred`, then `agent:completed`), recorded back to back.
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

pub(crate) async fn run<S: WorkflowState>(
    wf: &Inner<S>,
    options: RunOptions,
    from: Option<Continuation<S>>,
) -> Result<RunOutcome<S>, Error> {
    let RunOptions {
        input,
        session,
        cancel,
        max_events,
        max_agent_calls,
        max_cost,
        deadline,
        renderers,
    } = options;
    let deadline = deadline.map(|d| Instant::now() + d);
    let (tx, mut rx) = unbounded_channel();
    // A continued run (a fork) records its first event, then what follows it (see
    // `Continuation`); a fresh run records `workflow:started`, then the input.
    let (initial, first, mut resume, input) = match from {
        Some(from) => (
            from.state,
            from.first,
            Some((from.queued, from.redeliver, input)),
            None,
        ),
        None => {
            let started = Pending::of(&WorkflowStarted {
                workflow: wf.name.clone(),
            });
            (wf.initial.clone(), started, None, input)
        }
    };
    let mut run = Run {
        wf,
        session: session.unwrap_or_default(),
        log: Vec::new(),
        fold: Fold::new(initial),
        queue: VecDeque::new(),
        renderers: RendererPool::start(renderers),
        running: HashMap::new(),
        tasks: JoinSet::new(),
        tx,
        agents_cancel: cancel.child_token(),
        agent_calls: 0,
        usage: Usage::default(),
        cost: 0.0,
    };
    run.queue.push_back((first, None, None));
    if let Some(text) = input {
        run.queue
            .push_back((Pending::of(&UserInput { text }), None, None));
    }

    let reason = loop {
        if cancel.is_cancelled() {
            break StopReason::Cancelled;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break StopReason::Deadline;
        }
        if run.log.len() as u64 >= max_events {
            break StopReason::MaxEvents;
        }
        let (batch, after) = match run.queue.pop_front() {
            Some((pending, caused_by, after)) => (vec![(pending, caused_by)], after),
            None if run.running.is_empty() => break StopReason::Idle,
            None => {
                let message = tokio::select! {
                    biased;
                    () = cancel.cancelled() => break StopReason::Cancelled,
                    () = sleep_until(deadline) => break StopReason::Deadline,
                    message = rx.recv() => message,
                };
                match message {
                    Some(AgentMessage::Event(pending, trigger)) => {
                        (vec![(pending, Some(trigger))], None)
                    }
                    Some(AgentMessage::Finished {
                        call,
                        trigger,
                        events,
                    }) => (
                        events.into_iter().map(|p| (p, Some(trigger))).collect(),
                        Some(AfterRecord::Finish(call)),
                    ),
                    None => break StopReason::Idle,
                }
            }
        };
        let recorded = match run.record(batch).await {
            Ok(recorded) => recorded,
            Err(err) => {
                run.stop_agents().await;
                run.renderers.finish().await;
                return Err(err);
            }
        };
        if let Some((queued, redeliver, input)) = resume.take() {
            // The first event is recorded: queue what follows it.
            let cause = run.log[recorded.start].id;
            run.queue
                .extend(queued.into_iter().map(|p| (p, Some(cause), None)));
            if let Some(text) = input {
                run.queue
                    .push_back((Pending::of(&UserInput { text }), None, None));
            }
            if let Some(event) = redeliver
                && let Some(reason) =
                    run.activate(&Envelope { id: cause, ..event }, max_agent_calls)
            {
                break reason;
            }
        }
        match after {
            Some(AfterRecord::Launch(task)) => run.launch(*task),
            Some(AfterRecord::Finish(call)) => {
                run.running.remove(&call);
            }
            None => {}
        }
        if wf
            .until
            .as_ref()
            .is_some_and(|until| until(run.fold.state()))
        {
            break StopReason::Until;
        }
        if max_cost.is_some_and(|max| run.cost > max) {
            break StopReason::MaxCost;
        }
        if let Some(reason) = recorded
            .into_iter()
            .find_map(|index| run.activate_agents(index, max_agent_calls))
        {
            break reason;
        }
    };

    run.finish(reason, &mut rx).await
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

struct Run<'w, S> {
    wf: &'w Inner<S>,
    session: SessionId,
    log: Vec<Envelope>,
    fold: Fold<S>,
    /// Events waiting to be recorded, with their cause and, for `agent:started`, the agent call
    /// to start once that event is durable.
    queue: VecDeque<(Pending, Option<EventId>, Option<AfterRecord<S>>)>,
    renderers: RendererPool,
    /// Agent calls in flight: call number -> agent name.
    running: HashMap<u64, &'static str>,
    tasks: JoinSet<()>,
    tx: UnboundedSender<AgentMessage>,
    agents_cancel: CancellationToken,
    agent_calls: u64,
    usage: Usage,
    cost: f64,
}

impl<S: WorkflowState> Run<'_, S> {
    /// Appends events durably in one all-or-nothing append, then, for each in order, folds
    /// it, queues what its handler emits and shows it to the renderers. Returns the events'
    /// indexes in the log.
    async fn record(
        &mut self,
        batch: Vec<(Pending, Option<EventId>)>,
    ) -> Result<std::ops::Range<usize>, Error> {
        let events: Vec<Envelope> = batch
            .into_iter()
            .map(|(pending, caused_by)| Envelope::new(pending.name, pending.payload, caused_by))
            .collect();
        let seq = self.log.len() as u64;
        let store = &self.wf.store;
        store
            .append(&self.session, &events, seq)
            .await
            .map_err(|err| Error::store(store.as_ref(), Some(&self.session), err))?;
        let first = self.log.len();
        self.log.extend(events);
        for index in first..self.log.len() {
            self.absorb(index);
        }
        Ok(first..self.log.len())
    }

    /// Folds the recorded event at `index`, queues what its handler emits, tracks usage and
    /// shows it to the renderers.
    fn absorb(&mut self, index: usize) {
        let event = &self.log[index];
        match self.fold.apply(event, &self.log) {
            Applied::Handled(emit) => {
                self.queue.extend(
                    emit.into_pending()
                        .into_iter()
                        .map(|p| (p, Some(event.id), None)),
                );
            }
            Applied::Panicked(message) => {
                let error = ErrorOccurred {
                    source: "handler".into(),
                    message: format!("the handler for `{}` panicked: {message}", event.name),
                    event: Some(event.id),
                };
                self.queue
                    .push_back((Pending::of(&error), Some(event.id), None));
            }
            Applied::Skipped | Applied::Undecodable(_) => {}
        }
        if event.name == AgentCompleted::NAME
            && let Ok(completed) = event.decode::<AgentCompleted>()
        {
            self.usage += completed.usage;
            self.cost += completed.cost.unwrap_or(0.0);
        }
        self.renderers.send(event);
    }

    /// Starts every agent the event at `index` activates. Returns a stop reason if the agent
    /// call limit would be exceeded.
    fn activate_agents(&mut self, index: usize, max_agent_calls: u64) -> Option<StopReason> {
        let name = &self.log[index].name;
        if !self.wf.agents.iter().any(|a| a.spec().trigger == name) {
            return None;
        }
        let event = self.log[index].clone();
        self.activate(&event, max_agent_calls)
    }

    /// Starts every agent `event` activates in the current state.
    fn activate(&mut self, event: &Envelope, max_agent_calls: u64) -> Option<StopReason> {
        for agent in &self.wf.agents {
            let spec = agent.spec();
            if spec.trigger != event.name {
                continue;
            }
            match agent.activate(self.fold.state(), event) {
                None => {}
                Some(Err(message)) => {
                    let error = ErrorOccurred {
                        source: "agent".into(),
                        message,
                        event: Some(event.id),
                    };
                    self.queue
                        .push_back((Pending::of(&error), Some(event.id), None));
                }
                Some(Ok(activation)) => {
                    if self.agent_calls >= max_agent_calls {
                        return Some(StopReason::MaxAgentCalls);
                    }
                    let Some(provider) = self.wf.provider.clone() else {
                        continue; // `build` rejects agents without a provider
                    };
                    self.agent_calls += 1;
                    let call = self.agent_calls;
                    let started = AgentStarted {
                        agent: spec.name.to_owned(),
                        model: activation.model.clone(),
                        prompt: activation.prompt.clone(),
                    };
                    let task = AgentTask {
                        agent: Arc::clone(agent),
                        provider,
                        trigger: event.clone(),
                        activation,
                        call,
                        attempts: self.wf.max_output_attempts,
                        tx: self.tx.clone(),
                    };
                    self.queue.push_back((
                        Pending::of(&started),
                        Some(event.id),
                        Some(AfterRecord::Launch(Box::new(task))),
                    ));
                }
            }
        }
        None
    }

    /// Starts an agent call, now that its `agent:started` is recorded.
    fn launch(&mut self, task: AgentTask<S>) {
        self.running.insert(task.call, task.agent.spec().name);
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

    /// Ends a run that did not fail: records what agents had already sent, marks the agents
    /// still running as interrupted, records `workflow:completed` and drains the renderers.
    async fn finish(
        mut self,
        reason: StopReason,
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentMessage>,
    ) -> Result<RunOutcome<S>, Error> {
        self.stop_agents().await;
        let result = self.record_leftovers(reason, rx).await;
        self.renderers.finish().await;
        result?;
        Ok(RunOutcome {
            session: self.session,
            len: self.log.len() as u64,
            state: self.fold.into_state(),
            reason,
            usage: self.usage,
            cost: self.cost,
        })
    }

    async fn record_leftovers(
        &mut self,
        reason: StopReason,
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<AgentMessage>,
    ) -> Result<(), Error> {
        while let Ok(message) = rx.try_recv() {
            match message {
                AgentMessage::Event(pending, trigger) => {
                    self.record(vec![(pending, Some(trigger))]).await?;
                }
                AgentMessage::Finished {
                    call,
                    trigger,
                    events,
                } => {
                    self.record(events.into_iter().map(|p| (p, Some(trigger))).collect())
                        .await?;
                    self.running.remove(&call);
                }
            }
        }
        let mut interrupted: Vec<_> = self.running.drain().collect();
        interrupted.sort_unstable();
        for (_, agent) in interrupted {
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
            self.record(vec![(Pending::of(&completed), None)]).await?;
        }
        let completed = WorkflowCompleted {
            reason: reason.as_str().to_owned(),
        };
        self.record(vec![(Pending::of(&completed), None)]).await?;
        Ok(())
    }
}

/// One agent call, run as a tokio task.
struct AgentTask<S> {
    agent: Arc<dyn ErasedAgent<S>>,
    provider: Arc<dyn Provider>,
    trigger: Envelope,
    activation: Activation,
    call: u64,
    attempts: u32,
    tx: UnboundedSender<AgentMessage>,
}

impl<S> AgentTask<S> {
    async fn run(self) {
        let name = self.agent.spec().name;
        let trigger_id = self.trigger.id;
        let mut finals = Vec::with_capacity(4);
        let sink = {
            let tx = self.tx.clone();
            ProviderSink::new(move |event| {
                let _ = tx.send(AgentMessage::Event(provider_event(name, event), trigger_id));
            })
        };
        let mut usage = Usage::default();
        let mut cost = None::<f64>;
        let mut previous_error = None;
        let mut accepted = None;
        let mut result: Result<Emit, String> = Err("no attempt was made".into());
        for attempt in 1..=self.attempts {
            let mut request =
                ProviderRequest::new(name, self.activation.prompt.clone(), self.agent.schema())
                    .with_model(self.activation.model.clone())
                    .with_tools(self.activation.tools.clone())
                    .with_max_turns(self.activation.max_turns);
            request.attempt = attempt;
            request.previous_error = previous_error.take();
            match self.provider.complete(request, sink.clone()).await {
                Err(err) => {
                    result = Err(err.to_string());
                    break;
                }
                Ok(response) => {
                    usage += response.usage;
                    if let Some(c) = response.cost {
                        *cost.get_or_insert(0.0) += c;
                    }
                    let output = response.output;
                    match self.agent.finish(output.clone(), &self.trigger) {
                        Ok(emit) => {
                            result = Ok(emit);
                            accepted = Some(output);
                            break;
                        }
                        Err(OutputRejected::Invalid(message)) => {
                            result = Err(format!("{message} (after {attempt} attempts)"));
                            previous_error = Some(message);
                        }
                        Err(OutputRejected::Failed(message)) => {
                            result = Err(message);
                            break;
                        }
                    }
                }
            }
        }
        let text = sink.text();
        if !text.is_empty() {
            finals.push(Pending::of(&TextComplete {
                agent: name.to_owned(),
                text,
            }));
        }
        let (outcome, error) = match result {
            Ok(emit) => {
                finals.extend(emit.into_pending());
                (Outcome::Success, None)
            }
            Err(message) => {
                let message = format!("agent `{name}` failed: {message}");
                finals.push(Pending::of(&ErrorOccurred {
                    source: "agent".into(),
                    message: message.clone(),
                    event: Some(trigger_id),
                }));
                (Outcome::Failure, Some(message))
            }
        };
        finals.push(Pending::of(&AgentCompleted {
            agent: name.to_owned(),
            outcome,
            usage,
            cost,
            error,
            output: accepted,
        }));
        let _ = self.tx.send(AgentMessage::Finished {
            call: self.call,
            trigger: trigger_id,
            events: finals,
        });
    }
}

fn provider_event(agent: &str, event: ProviderEvent) -> Pending {
    let agent = agent.to_owned();
    match event {
        ProviderEvent::TextDelta(delta) => Pending::of(&TextDelta { agent, delta }),
        ProviderEvent::ToolCalled { id, tool, input } => Pending::of(&ToolCalled {
            agent,
            tool_call_id: id,
            tool,
            input,
        }),
        ProviderEvent::ToolResult {
            id,
            tool,
            output,
            is_error,
        } => Pending::of(&ToolResult {
            agent,
            tool_call_id: id,
            tool,
            output,
            is_error,
        }),
    }
}

/// Renderers, each on a thread of its own behind a channel.
struct RendererPool {
    workers: Vec<RendererWorker>,
}

struct RendererWorker {
    patterns: Vec<Pattern>,
    tx: std::sync::mpsc::Sender<Arc<Envelope>>,
    done: oneshot::Receiver<()>,
}

impl RendererPool {
    fn start(renderers: Vec<Box<dyn Renderer>>) -> Self {
        let mut workers = Vec::with_capacity(renderers.len());
        for (index, mut renderer) in renderers.into_iter().enumerate() {
            let patterns = renderer.patterns();
            let (tx, rx) = std::sync::mpsc::channel::<Arc<Envelope>>();
            let (done_tx, done) = oneshot::channel();
            let spawned = std::thread::Builder::new().name(format!("openharness-renderer-{index}")).spawn(move || {
                let mut warned = false;
                for event in rx {
                    if let Err(panic) = catch_unwind(AssertUnwindSafe(|| renderer.render(&event)))
                        && !std::mem::replace(&mut warned, true)
                    {
                        tracing::error!(renderer = index, event = %event.name, panic = %panic_message(panic.as_ref()), "a renderer panicked; it keeps receiving events");
                    }
                }
                let _ = catch_unwind(AssertUnwindSafe(|| renderer.finish()));
                let _ = done_tx.send(());
            });
            match spawned {
                Ok(_) => workers.push(RendererWorker { patterns, tx, done }),
                Err(err) => {
                    tracing::error!(renderer = index, error = %err, "could not start a renderer thread; it will see no events")
                }
            }
        }
        Self { workers }
    }

    fn send(&self, event: &Envelope) {
        let mut shared: Option<Arc<Envelope>> = None;
        for worker in &self.workers {
            if worker.patterns.iter().any(|p| p.matches(&event.name)) {
                let event = shared.get_or_insert_with(|| Arc::new(event.clone()));
                let _ = worker.tx.send(Arc::clone(event));
            }
        }
    }

    /// Closes the channels and waits (boundedly) for every renderer to finish.
    async fn finish(&mut self) {
        let limit = Instant::now() + RENDERER_DRAIN_LIMIT;
        for worker in self.workers.drain(..) {
            let RendererWorker { tx, done, .. } = worker;
            drop(tx);
            if tokio::time::timeout_at(limit, done).await.is_err() {
                tracing::warn!(
                    "a renderer did not finish within {RENDERER_DRAIN_LIMIT:?}; not waiting for it"
                );
            }
        }
    }
}
