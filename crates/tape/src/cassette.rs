//! Cassette re-execution: run a workflow again with every agent answered from a recorded
//! session, and stop at the first place where the new run does something the recording did
//! not.
//!
//! This is how a handler or prompt change is regression-tested without a model: record a
//! session once (with a real or scripted provider), then re-execute it after the change.
//! Each agent call is answered with what the recording's call streamed and returned
//! (`agent:completed` keeps the accepted output); no provider is called. A call is matched
//! with the recorded call of the same agent activated by the same event (the event matched
//! with the recording's event at the same seq); an agent activated twice by one event takes
//! that event's recorded calls in order.
//!
//! # What is compared
//!
//! Every event of the new run is compared with the recording's, ignoring ids and timestamps
//! (ids inside payloads and causes are compared as the recording's seq of the event they
//! name: for the new run, the seq of the recorded event it was matched with; the text of
//! `error:occurred` is not compared, only its source). Agents run concurrently, so the
//! events of several agent calls interleave differently on each run; the comparison is
//! strict about everything else. Each event belongs to one *stream*:
//!
//! - an agent call's stream holds what the call recorded (its `text:delta`, `tool:called`,
//!   `tool:result`, `output:rejected`, `text:complete`, the events its `on_output` emitted or
//!   its `error:occurred`, and its `agent:completed`), and everything those events caused
//!   in turn (what handlers emitted for them, the `agent:started` of the agents they
//!   activated, and so on down);
//! - the main stream holds the events that no agent call caused (`workflow:started`,
//!   `user:input`, what handlers made of them, ..., `workflow:completed`).
//!
//! An event caused by another event belongs to that event's stream; an `agent:started`
//! belongs to the stream of the event that activated the agent, while the call it starts
//! opens a stream of its own, named by the agent, the seq of that event and, for an agent
//! activated twice by one event, which call it is. Within each stream the new run must
//! record the recording's events in the recording's order; streams may interleave in any
//! order. A changed prompt, another event from a handler, a missing or an extra call are
//! still reported, at the first event (in the new run's order) that differs from what its
//! stream expects: [`TapeError::Diverged`] gives the recording's seq of the expected event
//! (or, for an event the recording does not have, the new run's seq of it).
//!
//! One order remains significant: a handler whose events depend on the order in which
//! concurrent calls finished (one that reacts to the last of several agents, say) records
//! them in the stream of whichever call came last, so it re-executes only when the same call
//! finishes last. A forked session re-executes as a fork of the same parent at the same
//! position (the parent must be in the workflow's store).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use openharness_core::builtin::{AgentCompleted, Builtin, ErrorOccurred, Outcome};
use openharness_core::{
    CancellationToken, ChatMessage, Envelope, Event, EventId, Provider, ProviderError, Renderer,
    RunOptions, RunOutcome, SessionId, Workflow, WorkflowState,
    adapter::{ProviderEvent, ProviderRequest, ProviderResponse, ProviderSink, Usage},
};
use serde_json::Value;

use crate::error::{Divergence, EventShape, TapeError};
use crate::fork::{At, ForkSession};

/// The name the cassette reports as a provider.
const NAME: &str = "cassette";

/// A recorded session, ready to answer a re-execution of its workflow.
///
/// ```
/// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, recorded: openharness_core::SessionId) -> Result<(), openharness_tape::TapeError> {
/// use openharness_core::RunOptions;
/// use openharness_tape::{Cassette, TapeError};
/// let cassette = Cassette::load(&workflow, &recorded).await?;
/// match cassette.replay(&workflow, RunOptions::new()).await {
///     Ok(outcome) => println!("same flow, {} events", outcome.len),
///     Err(TapeError::Diverged(d)) => println!("changed at seq {}: {d}", d.seq),
///     Err(other) => return Err(other),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Cassette {
    session: SessionId,
    events: Arc<Vec<Envelope>>,
}

impl Cassette {
    /// Reads `session` from the workflow's store.
    pub async fn load<S: WorkflowState>(
        workflow: &Workflow<S>,
        session: &SessionId,
    ) -> Result<Self, TapeError> {
        let events = workflow.session_events(session).await?;
        Ok(Self::from_events(session.clone(), events))
    }

    /// A cassette over a session's events (from seq 0).
    pub fn from_events(session: SessionId, events: Vec<Envelope>) -> Self {
        Self {
            session,
            events: Arc::new(events),
        }
    }

    /// The recorded session.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The recorded agent calls, as a provider that serves them in order per agent.
    /// ([`Cassette::replay`] serves each call by its agent and the event that activated it.)
    pub fn provider(&self) -> impl Provider + use<> {
        CassetteProvider {
            calls: Mutex::new(recorded_calls(&self.events)),
            matched: None,
        }
    }

    /// Runs `workflow` again, with its agents answered from the recording, into a new
    /// session of the workflow's store (or `options`' session). The input is the recording's
    /// `user:input`; `options`' cancellation token is replaced by the cassette's own.
    ///
    /// A session of several turns re-executes turn by turn: each later turn begins as the
    /// recording's did, with [`Workflow::send`] for a `user:input` and [`Workflow::respond`]
    /// for an `input:received` (answering the new session's request at the same seq).
    /// `options` apply to the first turn; later turns run with default options.
    ///
    /// Returns the last turn's outcome when every event matches the recording, and
    /// [`TapeError::Diverged`] naming the seq of the first event where they part.
    pub async fn replay<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
        options: RunOptions,
    ) -> Result<RunOutcome<S>, TapeError> {
        let cancel = CancellationToken::new();
        let divergence = Arc::new(Mutex::new(None));
        let matched = Arc::new(Matched::default());
        let recorded_ids = ids(&self.events);
        let checker = Arc::new(Mutex::new(Checker {
            session: self.session.clone(),
            expected: recorded_streams(&self.events, &recorded_ids),
            recorded: Arc::clone(&self.events),
            recorded_ids,
            streams: Streams::default(),
            matched: Arc::clone(&matched),
            seen: 0,
            divergence: Arc::clone(&divergence),
            cancel: cancel.clone(),
            done: false,
        }));
        let diverged = || {
            divergence
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
                .map(|d| TapeError::Diverged(Box::new(d)))
        };
        let decoded = |event: &Envelope| Builtin::decode(event).and_then(Result::ok);
        let first_turn_end = self
            .events
            .iter()
            .position(|e| matches!(decoded(e), Some(Builtin::WorkflowCompleted(_))))
            .map_or(self.events.len(), |end| end + 1);
        let mut options = options
            .cancel_token(cancel.clone())
            .renderer(TurnChecker(Arc::clone(&checker)));
        if let Some(input) = self.events[..first_turn_end]
            .iter()
            .find_map(|e| match decoded(e) {
                Some(Builtin::UserInput(input)) => Some(input),
                _ => None,
            })
        {
            options = options.input(input.text);
        }
        let replaying = workflow.with_provider(CassetteProvider {
            calls: Mutex::new(recorded_calls(&self.events)),
            matched: Some(matched),
        });
        let forked = match self.events.first().and_then(decoded) {
            Some(Builtin::SessionForked(forked)) => Some(forked),
            _ => None,
        };
        let mut outcome = match forked {
            // A fork re-executes as a fork of the same parent at the same position.
            Some(forked) => {
                let fork = replaying
                    .fork(&forked.parent, At::position(forked.position))
                    .await?;
                // A fork that changed the state it started from replays from the same change.
                let fork = match &forked.state_edit {
                    Some(patch) => fork.edit_state(patch)?,
                    None => fork,
                };
                fork.run(options).await?
            }
            None => replaying.run(options).await?,
        };
        // Later turns, each begun as the recording's was.
        while let Some(next) = usize::try_from(outcome.len)
            .ok()
            .and_then(|seq| self.events.get(seq))
        {
            if let Some(diverged) = diverged() {
                return Err(diverged);
            }
            let options = RunOptions::new()
                .cancel_token(cancel.clone())
                .renderer(TurnChecker(Arc::clone(&checker)));
            let session = outcome.session.clone();
            outcome = match decoded(next) {
                Some(Builtin::UserInput(input)) => {
                    replaying.send(&session, input.text, options).await?
                }
                Some(Builtin::InputReceived(answer)) => {
                    let request = self
                        .request_in(&replaying, &session, answer.request_id)
                        .await?;
                    replaying
                        .respond(&session, request, answer.text, options)
                        .await?
                }
                _ => {
                    // A turn that did not begin with input (a resume after a crash) cannot be
                    // re-executed: report where the recording goes on.
                    checker
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .finish_recording();
                    break;
                }
            };
        }
        checker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .finish_recording();
        match diverged() {
            Some(diverged) => Err(diverged),
            None => Ok(outcome),
        }
    }

    /// The id, in the re-executed `session`, of the event at the seq the recording's
    /// `request` has (the re-execution has matched the recording up to here).
    async fn request_in<S: WorkflowState>(
        &self,
        workflow: &Workflow<S>,
        session: &SessionId,
        request: EventId,
    ) -> Result<EventId, TapeError> {
        let Some(seq) = self.events.iter().position(|e| e.id == request) else {
            // Not asked in the recording: a fork's request inherited from its parent (listed
            // by its `session:forked`), which the re-execution, a fork of the same parent at
            // the same position, inherits too. Any other is refused as not open.
            return Ok(request);
        };
        let seq = seq as u64;
        let store = workflow.store();
        let events = store
            .events(session, seq..seq + 1)
            .await
            .map_err(|source| openharness_core::Error::Store {
                store: store.describe(),
                session: Some(session.clone()),
                source,
            })?;
        // A request the re-execution did not make where the recording did answers a fresh id,
        // which the re-execution refuses as not open.
        Ok(events.first().map_or_else(EventId::new, |e| e.id))
    }
}

/// The renderer each turn of a re-execution compares its events with.
struct TurnChecker(Arc<Mutex<Checker>>);

impl Renderer for TurnChecker {
    fn render(&mut self, event: &Envelope) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render(event);
    }
}

/// One recorded agent call.
#[derive(Debug, Clone, Default)]
struct RecordedCall {
    /// The seq of the event that activated the agent (`None`: an event outside the session,
    /// such as a fork's parent's, which keeps its id in a re-execution).
    trigger: Option<u64>,
    /// The id of the event that activated the agent.
    trigger_id: Option<EventId>,
    system: Option<String>,
    messages: Vec<ChatMessage>,
    prompt: String,
    stream: Vec<ProviderEvent>,
    output: Option<Value>,
    usage: Usage,
    cost: Option<f64>,
    error: Option<String>,
}

/// The recorded calls per agent, in the order they started.
fn recorded_calls(events: &[Envelope]) -> HashMap<String, VecDeque<RecordedCall>> {
    let seqs = ids(events);
    let mut calls: HashMap<String, VecDeque<RecordedCall>> = HashMap::new();
    // (agent, trigger) -> index of the open call in that agent's queue.
    let mut open: HashMap<(String, Option<EventId>), usize> = HashMap::new();
    for event in events {
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            continue;
        };
        let (agent, streamed) = match builtin {
            Builtin::AgentStarted(started) => {
                let queue = calls.entry(started.agent.clone()).or_default();
                queue.push_back(RecordedCall {
                    trigger: event.caused_by.and_then(|id| seqs.get(&id).copied()),
                    trigger_id: event.caused_by,
                    system: started.system,
                    messages: started.messages,
                    prompt: started.prompt,
                    ..RecordedCall::default()
                });
                open.insert((started.agent, event.caused_by), queue.len() - 1);
                continue;
            }
            Builtin::AgentCompleted(c) => {
                if let Some(index) = open.remove(&(c.agent.clone(), event.caused_by))
                    && let Some(call) = calls.get_mut(&c.agent).and_then(|q| q.get_mut(index))
                {
                    call.output = c.output;
                    call.usage = c.usage;
                    call.cost = c.cost;
                    call.error = c.error;
                }
                continue;
            }
            other => match ProviderEvent::from_recorded(other) {
                Some(streamed) => streamed,
                None => continue,
            },
        };
        if let Some(&index) = open.get(&(agent.clone(), event.caused_by))
            && let Some(call) = calls.get_mut(&agent).and_then(|q| q.get_mut(index))
        {
            call.stream.push(streamed);
        }
    }
    calls
}

/// Serves recorded calls; never calls a model.
struct CassetteProvider {
    calls: Mutex<HashMap<String, VecDeque<RecordedCall>>>,
    /// During a re-execution, which recorded event each of its events was matched with: a
    /// call is then served the recorded call of its agent and trigger. `None`: in order per
    /// agent.
    matched: Option<Arc<Matched>>,
}

/// How long a call waits for the re-execution's checker to match the event that activated it
/// (the checker sees events on a renderer's thread, possibly after the call has begun)
/// before it is served in order instead.
const TRIGGER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The events of a re-execution matched so far, each with the recording's seq of its match.
#[derive(Default)]
struct Matched {
    state: Mutex<MatchedState>,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct MatchedState {
    seqs: HashMap<EventId, u64>,
    /// The comparison is over (diverged or finished): nothing more will be matched.
    over: bool,
}

impl Matched {
    fn lock(&self) -> std::sync::MutexGuard<'_, MatchedState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The recording's seq of the event `id` was matched with, once it is; `None` when it is
    /// not matched in time or the comparison is over.
    async fn seq_of(&self, id: EventId) -> Option<u64> {
        let deadline = tokio::time::Instant::now() + TRIGGER_WAIT;
        loop {
            let notified = self.changed.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if let Some(seq) = state.seqs.get(&id) {
                    return Some(*seq);
                }
                if state.over {
                    return None;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::warn!(event = %id, "a re-executed agent call's trigger was not matched in time; it is served the recording's next call of its agent");
                return None;
            }
        }
    }

    fn over(&self) {
        self.lock().over = true;
        self.changed.notify_waiters();
    }
}

#[async_trait]
impl Provider for CassetteProvider {
    fn name(&self) -> &str {
        NAME
    }

    async fn complete(
        &self,
        request: ProviderRequest,
        sink: ProviderSink,
    ) -> Result<ProviderResponse, ProviderError> {
        let failed = |message: String| ProviderError::Failed {
            provider: NAME.to_owned(),
            message,
        };
        if request.attempt > 1 {
            return Err(failed(format!(
                "agent `{}` rejected the recorded output: {}",
                request.agent,
                request.previous_error.unwrap_or_default()
            )));
        }
        // A call activated by an event outside the recorded session (a fork's parent's) is
        // told by that event's id; any other by the recorded seq of its trigger, once known.
        let outside =
            |call: &RecordedCall| call.trigger.is_none() && call.trigger_id == request.trigger;
        let inherited = request.trigger.is_some()
            && self
                .calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&request.agent)
                .is_some_and(|queue| queue.iter().any(outside));
        let trigger = match (&self.matched, request.trigger) {
            (Some(matched), Some(id)) if !inherited => matched.seq_of(id).await,
            _ => None,
        };
        let call = {
            let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
            calls.get_mut(&request.agent).and_then(|queue| {
                let index = match trigger {
                    _ if inherited => queue.iter().position(outside)?,
                    Some(seq) => queue.iter().position(|call| call.trigger == Some(seq))?,
                    None => 0,
                };
                queue.remove(index)
            })
        }
        .ok_or_else(|| ProviderError::NoResponse {
            agent: request.agent.clone(),
            message: match trigger {
                Some(seq) => format!(
                    "the recording has no further call of this agent activated by the event at seq {seq}"
                ),
                None => "the recording has no further call of this agent".to_owned(),
            },
        })?;
        if call.prompt != request.prompt {
            return Err(failed(format!(
                "agent `{}` was prompted differently from the recording",
                request.agent
            )));
        }
        // Messages are recorded without image bytes: compare them so.
        let messages: Vec<ChatMessage> =
            request.messages.iter().map(ChatMessage::recorded).collect();
        if call.system != request.system || call.messages != messages {
            return Err(failed(format!(
                "agent `{}` was given another system prompt or conversation than the recording's",
                request.agent
            )));
        }
        for event in call.stream {
            sink.emit(event);
        }
        match call.output {
            Some(output) => Ok(ProviderResponse {
                output,
                usage: call.usage,
                cost: call.cost,
            }),
            None => Err(failed(
                call.error
                    .unwrap_or_else(|| "the recorded call failed".to_owned()),
            )),
        }
    }
}

/// Which stream of a session an event belongs to (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Stream {
    /// Events no agent call caused.
    Main,
    /// One agent call and what it caused.
    Call {
        agent: String,
        /// The seq (in the recording) of the event that activated the agent.
        trigger: Option<u64>,
        /// Which call of this agent by this trigger (0 for the first).
        nth: u32,
    },
}

/// Who an event belongs to, as told by the events around it.
enum Owner {
    /// To the stream of the event that caused it (an `agent:started` included).
    Cause,
    /// To the open call of this agent activated by this event.
    Call(String, Option<EventId>),
}

/// Assigns a session's events, in the order they were recorded, to their streams.
///
/// An agent call's last events (`text:complete`, what its `on_output` emitted or its
/// `error:occurred`, and `agent:completed`) are recorded back to back, all caused by the
/// event that activated the agent, just as the events that event's handlers emitted are
/// caused by it. The two are told apart by what follows: events caused by an event with
/// an open call are held until the next event, and those just before that call's
/// `agent:completed` are its own (for a call that succeeded, those after the last
/// `error:occurred`, which only activating another agent can have recorded there; for one
/// that failed, its `error:occurred`).
#[derive(Default)]
struct Streams {
    /// The stream of every event assigned.
    of: HashMap<EventId, Stream>,
    /// The calls open per agent and trigger seq, oldest first, by `nth`.
    open: HashMap<(String, Option<u64>), VecDeque<u32>>,
    /// How many calls each agent and trigger seq started.
    started: HashMap<(String, Option<u64>), u32>,
    /// How many calls are open per trigger.
    open_by_trigger: HashMap<EventId, u32>,
    /// Events that may be an open call's last events, all caused by one event, with their
    /// seq in their session.
    held: Vec<(Envelope, u64)>,
}

impl Streams {
    /// Takes the next event (at `seq` in its session) and returns those whose owner is now
    /// known, in order; assign each with [`Streams::assign`] before the next push.
    fn push(&mut self, event: Envelope, seq: u64) -> Vec<(Envelope, u64, Owner)> {
        let mut released = Vec::new();
        let called_by = |agent: &str| Owner::Call(agent.to_owned(), event.caused_by);
        let owner = match Builtin::decode(&event) {
            Some(Ok(Builtin::TextDelta(d))) => Some(called_by(&d.agent)),
            Some(Ok(Builtin::ToolCalled(c))) => Some(called_by(&c.agent)),
            Some(Ok(Builtin::ToolResult(r))) => Some(called_by(&r.agent)),
            Some(Ok(Builtin::OutputRejected(r))) => Some(called_by(&r.agent)),
            Some(Ok(Builtin::TextComplete(t))) => Some(called_by(&t.agent)),
            Some(Ok(Builtin::AgentCompleted(completed))) => {
                // The held events just before it, caused by its trigger, are its call's.
                let held = std::mem::take(&mut self.held);
                let same_trigger = held.first().is_some_and(|(e, _)| {
                    e.caused_by == event.caused_by && event.caused_by.is_some()
                });
                let split = if !same_trigger {
                    held.len()
                } else if completed.outcome == Outcome::Success {
                    held.iter()
                        .rposition(|(e, _)| e.name == ErrorOccurred::NAME)
                        .map_or(0, |i| i + 1)
                } else {
                    match held.last() {
                        Some((e, _)) if e.name == ErrorOccurred::NAME => held.len() - 1,
                        _ => held.len(),
                    }
                };
                let agent = completed.agent;
                for (index, (e, seq)) in held.into_iter().enumerate() {
                    let owner = if index < split {
                        Owner::Cause
                    } else {
                        called_by(&agent)
                    };
                    released.push((e, seq, owner));
                }
                Some(called_by(&agent))
            }
            Some(Ok(Builtin::AgentStarted(_))) => Some(Owner::Cause),
            _ => None,
        };
        if let Some(owner) = owner {
            released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
            released.push((event, seq, owner));
            return released;
        }
        // Caused by an event with an open call: perhaps that call's last events.
        if let Some(cause) = event.caused_by
            && self.open_by_trigger.get(&cause).is_some_and(|n| *n > 0)
        {
            if self
                .held
                .first()
                .is_some_and(|(e, _)| e.caused_by != Some(cause))
            {
                released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
            }
            self.held.push((event, seq));
            return released;
        }
        released.extend(self.held.drain(..).map(|(e, seq)| (e, seq, Owner::Cause)));
        released.push((event, seq, Owner::Cause));
        released
    }

    /// Releases the events still held: the session is over.
    fn flush(&mut self) -> Vec<(Envelope, u64, Owner)> {
        self.held
            .drain(..)
            .map(|(e, seq)| (e, seq, Owner::Cause))
            .collect()
    }

    /// The stream of a released event; `seqs` gives the recording's seq of the events before
    /// it (its trigger's, for an agent call).
    fn assign(&mut self, event: &Envelope, owner: Owner, seqs: &HashMap<EventId, u64>) -> Stream {
        let stream = match owner {
            Owner::Call(agent, trigger) => {
                let key = (agent, trigger.and_then(|id| seqs.get(&id).copied()));
                let open = self.open.get_mut(&key);
                let nth = open.as_ref().and_then(|o| o.front().copied()).unwrap_or(0);
                if event.name == AgentCompleted::NAME
                    && let Some(open) = open
                    && open.pop_front().is_some()
                    && let Some(n) = trigger.and_then(|id| self.open_by_trigger.get_mut(&id))
                {
                    *n = n.saturating_sub(1);
                }
                let (agent, trigger) = key;
                Stream::Call {
                    agent,
                    trigger,
                    nth,
                }
            }
            Owner::Cause => {
                if let Some(Ok(Builtin::AgentStarted(started))) = Builtin::decode(event)
                    && let Some(trigger) = event.caused_by
                {
                    let key = (started.agent, seqs.get(&trigger).copied());
                    let count = self.started.entry(key.clone()).or_default();
                    self.open.entry(key).or_default().push_back(*count);
                    *count += 1;
                    *self.open_by_trigger.entry(trigger).or_default() += 1;
                }
                event
                    .caused_by
                    .and_then(|cause| self.of.get(&cause).cloned())
                    .unwrap_or(Stream::Main)
            }
        };
        self.of.insert(event.id, stream.clone());
        stream
    }
}

/// The recording's seqs per stream, in order.
fn recorded_streams(
    events: &[Envelope],
    seqs: &HashMap<EventId, u64>,
) -> HashMap<Stream, VecDeque<u64>> {
    let mut streams = Streams::default();
    let mut expected: HashMap<Stream, VecDeque<u64>> = HashMap::new();
    let mut assign = |released: Vec<(Envelope, u64, Owner)>, streams: &mut Streams| {
        for (event, seq, owner) in released {
            let stream = streams.assign(&event, owner, seqs);
            expected.entry(stream).or_default().push_back(seq);
        }
    };
    for (event, seq) in events.iter().zip(0..) {
        let released = streams.push(event.clone(), seq);
        assign(released, &mut streams);
    }
    let released = streams.flush();
    assign(released, &mut streams);
    expected
}

/// Compares the new run's events with the recording, stream by stream (see the module docs).
struct Checker {
    session: SessionId,
    recorded: Arc<Vec<Envelope>>,
    recorded_ids: HashMap<EventId, u64>,
    /// The recording's seqs per stream not matched yet, in order.
    expected: HashMap<Stream, VecDeque<u64>>,
    /// The new run's streams.
    streams: Streams,
    /// The new run's events matched so far.
    matched: Arc<Matched>,
    /// How many events the new run recorded so far.
    seen: u64,
    divergence: Arc<Mutex<Option<Divergence>>>,
    cancel: CancellationToken,
    done: bool,
}

impl Checker {
    fn diverge(&mut self, seq: u64, expected: Option<EventShape>, actual: Option<EventShape>) {
        *self
            .divergence
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Divergence {
            session: self.session.clone(),
            seq,
            expected,
            actual,
        });
        self.done = true;
        self.matched.over();
        self.cancel.cancel();
    }

    fn render(&mut self, event: &Envelope) {
        if self.done {
            return;
        }
        let seq = self.seen;
        self.seen += 1;
        let released = self.streams.push(event.clone(), seq);
        self.check(released);
    }

    /// Matches released events of the new run with the next recorded event of their stream.
    fn check(&mut self, released: Vec<(Envelope, u64, Owner)>) {
        for (event, seq, owner) in released {
            if self.done {
                return;
            }
            let (stream, actual) = {
                let matched = self.matched.lock();
                let stream = self.streams.assign(&event, owner, &matched.seqs);
                (stream, shape(&event, &matched.seqs))
            };
            let next = self.expected.get_mut(&stream).and_then(VecDeque::pop_front);
            let expected = next
                .and_then(|seq| usize::try_from(seq).ok())
                .and_then(|i| self.recorded.get(i))
                .map(|e| shape(e, &self.recorded_ids));
            match next {
                Some(recorded_seq) if expected.as_ref() == Some(&actual) => {
                    self.matched.lock().seqs.insert(event.id, recorded_seq);
                    self.matched.changed.notify_waiters();
                }
                _ => {
                    self.diverge(next.unwrap_or(seq), expected, Some(actual));
                    return;
                }
            }
        }
    }

    /// The re-execution is over: a recording that goes on further diverges at its first
    /// event not matched.
    fn finish_recording(&mut self) {
        let released = self.streams.flush();
        self.check(released);
        if self.done {
            return;
        }
        let first = self
            .expected
            .values()
            .filter_map(|q| q.front().copied())
            .min();
        match first {
            Some(seq) => {
                let expected = usize::try_from(seq)
                    .ok()
                    .and_then(|i| self.recorded.get(i))
                    .map(|e| shape(e, &self.recorded_ids));
                self.diverge(seq, expected, None);
            }
            None => self.matched.over(),
        }
    }
}

fn ids(events: &[Envelope]) -> HashMap<EventId, u64> {
    events.iter().zip(0..).map(|(e, seq)| (e.id, seq)).collect()
}

/// An event as a re-execution must reproduce it. A built-in event is compared as today's wire
/// carries it, so a recording of an older format re-executes; of an `error:occurred`, only
/// its code; of a `session:forked`, its parent and position; of a `workflow:started`, the
/// workflow's name (not which code of it).
fn shape(event: &Envelope, ids: &HashMap<EventId, u64>) -> EventShape {
    let payload = match Builtin::decode(event) {
        Some(Ok(Builtin::ErrorOccurred(error))) => serde_json::json!({ "code": error.source }),
        // Format-1 forks do not name their workflow; the parent and the position are the fork.
        Some(Ok(Builtin::SessionForked(forked))) => {
            serde_json::json!({ "parentSessionId": forked.parent, "forkIndex": forked.position })
        }
        // Which code recorded it is what a replay compares against, not something to match:
        // a session recorded by another version replays the same when it behaves the same.
        Some(Ok(Builtin::WorkflowStarted(started))) => {
            serde_json::json!({ "workflow": started.workflow })
        }
        // Where the reply is in the output tells chat clients what to show, not what ran, and
        // a re-execution's calls are answered by the cassette, not by the provider that was
        // recorded; recordings made before either was recorded replay the same.
        Some(Ok(Builtin::AgentStarted(mut started))) => {
            started.reply = None;
            started.provider = None;
            serde_json::to_value(&started).map_or_else(
                |_| ids_as_seqs(&event.payload, ids),
                |p| ids_as_seqs(&p, ids),
            )
        }
        Some(Ok(builtin)) => builtin.to_payload().map_or_else(
            |_| ids_as_seqs(&event.payload, ids),
            |p| ids_as_seqs(&p, ids),
        ),
        _ => ids_as_seqs(&event.payload, ids),
    };
    EventShape {
        name: event.name.to_string(),
        payload,
        caused_by: event.caused_by.and_then(|id| ids.get(&id).copied()),
    }
}

/// `value` with every string that is the id of an event in `ids` replaced by `"#seq"`.
pub(crate) fn ids_as_seqs(value: &Value, ids: &HashMap<EventId, u64>) -> Value {
    match value {
        Value::String(s) => match s.parse::<EventId>().ok().and_then(|id| ids.get(&id)) {
            Some(seq) => Value::String(format!("#{seq}")),
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(|v| ids_as_seqs(v, ids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), ids_as_seqs(v, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn each_event_belongs_to_its_calls_stream_or_the_main_one() {
        let mut log: Vec<Envelope> = Vec::new();
        let mut push = |name: &'static str, payload: Value, cause: Option<usize>| {
            let caused_by = cause.map(|i: usize| log[i].id);
            log.push(Envelope::new(name, payload, caused_by));
        };
        let completed = |agent: &str, outcome: &str| json!({ "agentName": agent, "outcome": outcome, "usage": { "inputTokens": 0, "outputTokens": 0 } });
        push("workflow:started", json!({ "workflow": "w" }), None); // 0
        push("user:input", json!({ "text": "hi" }), None); // 1
        push("note:made", json!({}), Some(1)); // 2: a handler's event
        push(
            "agent:started",
            json!({ "agentName": "a", "prompt": "p" }),
            Some(1),
        ); // 3
        push(
            "agent:started",
            json!({ "agentName": "b", "prompt": "p" }),
            Some(1),
        ); // 4
        // Another agent could not be activated: recorded with the trigger's consequences.
        push("error:occurred", json!({ "code": "agent" }), Some(1)); // 5
        push("review:written", json!({}), Some(1)); // 6: a's `on_output`
        push("agent:completed", completed("a", "success"), Some(1)); // 7
        push("review:filed", json!({}), Some(6)); // 8: a handler's event for a's output
        push(
            "text:delta",
            json!({ "agentName": "b", "delta": "x" }),
            Some(1),
        ); // 9
        push("error:occurred", json!({ "code": "agent" }), Some(1)); // 10: b failed
        push("agent:completed", completed("b", "failure"), Some(1)); // 11
        push("workflow:completed", json!({ "reason": "idle" }), None); // 12
        let streams = recorded_streams(&log, &ids(&log));
        let call = |agent: &str| Stream::Call {
            agent: agent.to_owned(),
            trigger: Some(1),
            nth: 0,
        };
        let seqs = |stream: &Stream| Vec::from(streams[stream].clone());
        assert_eq!(seqs(&Stream::Main), [0, 1, 2, 3, 4, 5, 12]);
        assert_eq!(seqs(&call("a")), [6, 7, 8]);
        assert_eq!(seqs(&call("b")), [9, 10, 11]);
        assert_eq!(streams.len(), 3);
    }
}
