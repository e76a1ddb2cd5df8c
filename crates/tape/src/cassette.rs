//! Cassette re-execution: run a workflow again with every agent answered from a recorded
//! session, and stop at the first place where the new run does something the recording did
//! not.
//!
//! This is how a handler or prompt change is regression-tested without a model: record a
//! session once (with a real or scripted provider), then re-execute it after the change.
//! Each agent call is answered with what the recording's call streamed and returned
//! (`agent:completed` keeps the accepted output); no provider is called. Every event of the
//! new run is compared, in order, with the recording's, ignoring ids and timestamps (ids
//! inside payloads and causes are compared as the seq of the event they name; the text of
//! `error:occurred` is not compared, only its source). The first difference, such as an
//! agent prompted differently or a handler emitting other events, ends the run with
//! [`TapeError::Diverged`].
//!
//! Agents that run concurrently may record their events in another order on each run;
//! the comparison is strict, so such workflows re-execute reliably only when their agents'
//! events do not interleave. A forked session re-executes as a fork of the same parent at
//! the same position (the parent must be in the workflow's store).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use openharness_core::builtin::Builtin;
use openharness_core::{
    CancellationToken, ChatMessage, Envelope, EventId, Provider, ProviderError, ProviderEvent,
    ProviderRequest, ProviderResponse, ProviderSink, Renderer, RunOptions, RunOutcome, SessionId,
    Usage, Workflow, WorkflowState,
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
    pub fn provider(&self) -> impl Provider + use<> {
        CassetteProvider {
            calls: Mutex::new(recorded_calls(&self.events)),
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
        let checker = Arc::new(Mutex::new(Checker {
            session: self.session.clone(),
            recorded: Arc::clone(&self.events),
            recorded_ids: ids(&self.events),
            seen_ids: HashMap::new(),
            next: 0,
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
        let replaying = workflow.with_provider(self.provider());
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
                    system: started.system,
                    messages: started.messages,
                    prompt: started.prompt,
                    ..RecordedCall::default()
                });
                open.insert((started.agent, event.caused_by), queue.len() - 1);
                continue;
            }
            Builtin::TextDelta(d) => (d.agent, ProviderEvent::TextDelta(d.delta)),
            Builtin::ToolCalled(c) => (
                c.agent,
                ProviderEvent::ToolCalled {
                    id: c.tool_call_id,
                    tool: c.tool,
                    input: c.input,
                    server: c.server,
                },
            ),
            Builtin::ToolResult(r) => (
                r.agent,
                ProviderEvent::ToolResult {
                    id: r.tool_call_id,
                    tool: r.tool,
                    output: r.output,
                    is_error: r.is_error,
                },
            ),
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
            _ => continue,
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
        let call = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&request.agent)
            .and_then(VecDeque::pop_front)
            .ok_or_else(|| ProviderError::NoResponse {
                agent: request.agent.clone(),
                message: "the recording has no further call of this agent".to_owned(),
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

/// Compares the new run's events with the recording, in order.
struct Checker {
    session: SessionId,
    recorded: Arc<Vec<Envelope>>,
    recorded_ids: HashMap<EventId, u64>,
    seen_ids: HashMap<EventId, u64>,
    next: u64,
    divergence: Arc<Mutex<Option<Divergence>>>,
    cancel: CancellationToken,
    done: bool,
}

impl Checker {
    fn diverge(&mut self, expected: Option<EventShape>, actual: Option<EventShape>) {
        *self
            .divergence
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Divergence {
            session: self.session.clone(),
            seq: self.next,
            expected,
            actual,
        });
        self.done = true;
        self.cancel.cancel();
    }
}

impl Checker {
    fn render(&mut self, event: &Envelope) {
        if self.done {
            return;
        }
        self.seen_ids.insert(event.id, self.next);
        let actual = shape(event, &self.seen_ids);
        let expected = usize::try_from(self.next)
            .ok()
            .and_then(|i| self.recorded.get(i))
            .map(|e| shape(e, &self.recorded_ids));
        if expected.as_ref() != Some(&actual) {
            self.diverge(expected, Some(actual));
            return;
        }
        self.next += 1;
    }

    /// The re-execution is over: a recording that goes on further diverges there.
    fn finish_recording(&mut self) {
        if !self.done && self.next < self.recorded.len() as u64 {
            let expected = usize::try_from(self.next)
                .ok()
                .and_then(|i| self.recorded.get(i))
                .map(|e| shape(e, &self.recorded_ids));
            self.diverge(expected, None);
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
        // Where the reply is in the output tells chat clients what to show, not what ran;
        // recordings made before it was recorded replay the same.
        Some(Ok(Builtin::AgentStarted(mut started))) => {
            started.reply = None;
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
