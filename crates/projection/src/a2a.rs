//! A client's message as an A2A v1.0 task (the Agent2Agent protocol of the Linux Foundation,
//! specification v1.0.1): [`TaskStream`] turns the recorded events of a session, from the
//! event a client's message was recorded as, one at a time, into the stream responses an A2A
//! client reads (`{"task": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`, in the proto
//! JSON shape: camelCase fields, enums as `TASK_STATE_*` and `ROLE_*` strings), and keeps the
//! `Task` those responses describe ([`TaskStream::task`]), so a streamed task, one answered
//! whole and one read back later are the same task.
//!
//! **What a task is.** The turn a message started, and the turns that answer the questions it
//! asked: a turn that ends waiting for an answer (`workflow:completed` with reason
//! `waiting_for_input`) leaves the task `TASK_STATE_INPUT_REQUIRED`, its status message the
//! question (`metadata.requestId` names the request, `metadata.approval` says whether it is an
//! approval); the `input:received` that answers one of its questions takes it back to
//! `TASK_STATE_WORKING`. Everything else the session records while the task waits belongs to
//! other tasks. A message recorded while another turn ran (`input:queued`) is
//! `TASK_STATE_SUBMITTED` until the turn that answers it begins.
//!
//! **What the client sees of a workflow.** Each agent call whose reply is text is an artifact
//! (`artifact-<agent:started id>`, named after the agent), streamed as `artifactUpdate`s: the
//! first chunk with `append: false`, the next ones with `append: true`, the last one with
//! `lastChunk: true`. An agent call that returns structured output and no text is an artifact
//! with one `data` part. Tool calls and recorded errors are `TASK_STATE_WORKING` status
//! updates whose message says what happened (`metadata.openharness`: `tool_call`, `error`).
//!
//! **How a turn's end reads.** Reasons `until`, `idle` (and `waiting_for_input` with nothing
//! open) are `TASK_STATE_COMPLETED`; `cancelled`, `interrupted` and `rolled_back` (the turn was
//! stopped, or superseded by a second input) are `TASK_STATE_CANCELED` (the reason in the
//! update's `metadata.openharness`); a turn with recorded errors, or cut by a limit
//! (`max_events`, `max_agent_calls`, `max_cost`, `deadline`), is `TASK_STATE_FAILED`.
//!
//! ```
//! use openharness_core::Envelope;
//! use openharness_core::builtin::{AgentCompleted, AgentStarted, Outcome, UserInput, WorkflowCompleted};
//! use openharness_projection::{TaskHead, TaskState, TaskStream};
//! use serde_json::json;
//! let input = Envelope::typed(&UserInput::new("Hi"), None).unwrap();
//! let started = Envelope::typed(&AgentStarted { agent: "assistant".into(),
//!     reply: Some("/reply".into()), ..AgentStarted::default() }, Some(input.id)).unwrap();
//! let completed = Envelope::typed(&AgentCompleted { agent: "assistant".into(),
//!     outcome: Outcome::Success, usage: Default::default(), cost: None, error: None,
//!     output: Some(json!({ "reply": "Hello!" })) }, Some(input.id)).unwrap();
//! let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(), ..Default::default() }, None).unwrap();
//!
//! let mut stream = TaskStream::new(TaskHead::new("task_1_chat-1", "chat-1"));
//! let kinds: Vec<String> = [&input, &started, &completed, &done].into_iter()
//!     .flat_map(|event| stream.step(event))
//!     .filter_map(|response| response.to_value().as_object()?.keys().next().cloned())
//!     .collect();
//! // Nothing streamed: the reply is one last chunk.
//! assert_eq!(kinds, ["task", "artifactUpdate", "statusUpdate"]);
//! assert_eq!(stream.state(), TaskState::Completed);
//! let task = stream.task();
//! assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
//! assert_eq!(task["artifacts"][0]["parts"][0]["text"], "Hello!");
//! assert_eq!(task["history"][0]["role"], "ROLE_USER");
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use openharness_core::adapter::CallKey;
use openharness_core::builtin::{Builtin, Outcome};
use openharness_core::{Envelope, EventId};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::reply::{ReplyProgress, reply_text};

/// The input-event field holding the client's own id of the message it was recorded from
/// (A2A `messageId`), as the chat routes record theirs.
const MESSAGE_ID_FIELD: &str = crate::MESSAGE_ID_FIELD;

/// Which task a stream describes: its id and its context (the session).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskHead {
    /// The task's id (`task_<seq>_<session>`: the message's event in its session).
    pub id: String,
    /// The task's context: the session it is in.
    pub context_id: String,
}

impl TaskHead {
    /// The task `id` in the context `context_id`.
    pub fn new(id: impl Into<String>, context_id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            context_id: context_id.into(),
        }
    }
}

/// One stream response of a task (A2A `StreamResponse`): typed for a chunk of an agent
/// call's text (the response of every streamed delta), JSON for the others. It serialises as
/// the response's JSON ([`TaskResponse::to_value`] gives it as a value).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskResponse {
    /// `{"artifactUpdate": …}` with one text part: serialised straight from its fields, with
    /// no JSON map built per delta.
    ArtifactText(ArtifactText),
    /// Any other response: `{"task": …}`, `{"statusUpdate": …}`, or a data artifact's
    /// `{"artifactUpdate": …}`.
    Json(Value),
}

/// A chunk of a text artifact, `{"artifactUpdate": {"taskId", "contextId", "artifact":
/// {"artifactId", "name", "parts": [{"text"}]}, "append", "lastChunk"}}`. The ids are shared
/// by the chunks of one artifact.
#[derive(Debug, Clone, PartialEq)]
pub struct ArtifactText {
    /// The task's id.
    pub task_id: Arc<str>,
    /// The task's context (its session).
    pub context_id: Arc<str>,
    /// The artifact's id (`artifact-<agent:started id>`).
    pub artifact_id: Arc<str>,
    /// The artifact's name: the agent's.
    pub name: Arc<str>,
    /// The text the chunk adds.
    pub text: String,
    /// Whether the chunk follows an earlier one of the artifact.
    pub append: bool,
    /// Whether it is the artifact's last chunk.
    pub last_chunk: bool,
}

/// `{"artifactUpdate": …}` of a text chunk on the wire: every map's fields in the order a
/// JSON map writes them (sorted), so the bytes are the same as a `json!` object's.
#[derive(Serialize)]
struct ArtifactUpdateWire<'a> {
    #[serde(rename = "artifactUpdate")]
    artifact_update: UpdateWire<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UpdateWire<'a> {
    append: bool,
    artifact: ArtifactWire<'a>,
    context_id: &'a str,
    last_chunk: bool,
    task_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactWire<'a> {
    artifact_id: &'a str,
    name: &'a str,
    parts: [TextPartWire<'a>; 1],
}

#[derive(Serialize)]
struct TextPartWire<'a> {
    text: &'a str,
}

impl Serialize for TaskResponse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(value) => value.serialize(serializer),
            Self::ArtifactText(chunk) => ArtifactUpdateWire {
                artifact_update: UpdateWire {
                    append: chunk.append,
                    artifact: ArtifactWire {
                        artifact_id: &chunk.artifact_id,
                        name: &chunk.name,
                        parts: [TextPartWire { text: &chunk.text }],
                    },
                    context_id: &chunk.context_id,
                    last_chunk: chunk.last_chunk,
                    task_id: &chunk.task_id,
                },
            }
            .serialize(serializer),
        }
    }
}

impl TaskResponse {
    /// The response as a JSON value (to inspect it; serialising it writes it directly).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Json(value) => value.clone(),
            Self::ArtifactText(_) => serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

impl From<Value> for TaskResponse {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

/// The state of a task (the `TaskState` enum of the specification, less the states this
/// server never enters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// Recorded while another turn ran; its turn has not begun.
    Submitted,
    /// Its turn runs.
    Working,
    /// Its turn ended waiting for an answer: the next message with its id answers.
    InputRequired,
    /// Its turn ended.
    Completed,
    /// Its turn was stopped (or superseded by a second input).
    Canceled,
    /// Its turn failed, or was cut by a limit.
    Failed,
}

impl TaskState {
    /// The state's wire name (`TASK_STATE_WORKING`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Submitted => "TASK_STATE_SUBMITTED",
            Self::Working => "TASK_STATE_WORKING",
            Self::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            Self::Completed => "TASK_STATE_COMPLETED",
            Self::Canceled => "TASK_STATE_CANCELED",
            Self::Failed => "TASK_STATE_FAILED",
        }
    }

    /// Whether the task is over: it takes no more messages and changes no more.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Canceled | Self::Failed)
    }

    /// The state a wire name names (`None` for a name this server never uses).
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::Submitted,
            Self::Working,
            Self::InputRequired,
            Self::Completed,
            Self::Canceled,
            Self::Failed,
        ]
        .into_iter()
        .find(|state| state.as_str() == name)
    }
}

/// Where the stream stands in the session's events.
#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// No event yet: the first one is the message's.
    Before,
    /// The message was queued as this `input:queued`: waiting for the turn that answers it.
    Queued(EventId),
    /// Its turn runs.
    Running,
    /// Its turn ended waiting for answers to these requests.
    Waiting(Vec<EventId>),
    /// Over.
    Ended,
}

/// One agent call: its reply so far, and its text artifact under way.
#[derive(Debug)]
struct Call {
    /// Its `agent:started` (or first text) event: its artifact's id.
    event: EventId,
    agent: String,
    /// Its reply pointer (`None`: no text reply, or recorded before replies were named).
    pointer: Option<String>,
    reply: ReplyProgress,
    /// The index of its text artifact in [`TaskStream::artifacts`], once text came.
    artifact: Option<usize>,
    /// Its artifact's id and name, shared by its chunks (made with its first one).
    names: Option<(Arc<str>, Arc<str>)>,
}

impl Call {
    fn new(event: EventId, agent: String, pointer: Option<String>) -> Self {
        Self {
            event,
            agent,
            reply: ReplyProgress::new(pointer.clone()),
            pointer,
            artifact: None,
            names: None,
        }
    }
}

/// A client's message as an A2A task, one recorded event at a time (see the module docs).
/// Feed it the session's events from the message's own on; it picks those of its task.
#[derive(Debug)]
pub struct TaskStream {
    head: TaskHead,
    /// The head's ids, shared by the text chunks.
    ids: (Arc<str>, Arc<str>),
    phase: Phase,
    state: TaskState,
    /// The task's status (`state`, `message`, `timestamp`), as the latest update gave it.
    status: Value,
    history: Vec<Value>,
    artifacts: Vec<Value>,
    calls: HashMap<CallKey, Call>,
    /// The questions the task asked: request id → (prompt, approval).
    asked: HashMap<EventId, (String, bool)>,
    /// The newest recorded error's message.
    last_error: Option<String>,
    /// Whether the `{"task": …}` response opened the stream.
    announced: bool,
}

impl TaskStream {
    /// The task `head`, before any event.
    pub fn new(head: TaskHead) -> Self {
        Self {
            ids: (head.id.as_str().into(), head.context_id.as_str().into()),
            head,
            phase: Phase::Before,
            state: TaskState::Submitted,
            status: json!({ "state": TaskState::Submitted.as_str() }),
            history: Vec::new(),
            artifacts: Vec::new(),
            calls: HashMap::new(),
            asked: HashMap::new(),
            last_error: None,
            announced: false,
        }
    }

    /// The task's state now.
    pub fn state(&self) -> TaskState {
        self.state
    }

    /// Whether a stream of the task ends here: the task is over, or waits for an answer.
    pub fn ended(&self) -> bool {
        self.state.is_terminal() || self.state == TaskState::InputRequired
    }

    /// Whether the task has seen its message's event (a task read from a position that
    /// holds none has not).
    pub fn begun(&self) -> bool {
        self.phase != Phase::Before
    }

    /// The requests the task waits for answers to (empty unless it is
    /// `TASK_STATE_INPUT_REQUIRED`), oldest first.
    pub fn waiting_for(&self) -> &[EventId] {
        match &self.phase {
            Phase::Waiting(open) => open,
            _ => &[],
        }
    }

    /// The stream's opening response, `{"task": <the task now>}`; the responses of later
    /// events follow it (a stream that replayed events silently opens with this).
    pub fn announce(&mut self) -> Value {
        self.announced = true;
        json!({ "task": self.task() })
    }

    /// The stream responses `event` adds to the task.
    pub fn step(&mut self, event: &Envelope) -> Vec<TaskResponse> {
        let mut out = Vec::new();
        let decoded = match Builtin::decode(event) {
            Some(Ok(builtin)) => Some(builtin),
            _ => None,
        };
        match self.phase.clone() {
            Phase::Ended => {}
            Phase::Before => {
                if let Some(Builtin::InputQueued(queued)) = &decoded {
                    self.phase = Phase::Queued(event.id);
                    self.history
                        .push(self.user_message(event, &queued.text, None));
                    self.status = self.status_of(TaskState::Submitted, event, None);
                    out.push(self.announce().into());
                } else {
                    self.phase = Phase::Running;
                    self.state = TaskState::Working;
                    self.status = self.status_of(TaskState::Working, event, None);
                    self.run(event, decoded, &mut out);
                }
            }
            Phase::Queued(queued) => match decoded {
                Some(Builtin::UserInput(_)) if event.caused_by == Some(queued) => {
                    self.working(event, &mut out);
                }
                Some(Builtin::InputSteered(steered)) if steered.queued == queued => {
                    // A running call took the message: that call's reply answers it.
                    self.working(event, &mut out);
                }
                _ => {}
            },
            Phase::Waiting(open) => {
                if let Some(Builtin::InputReceived(answer)) = &decoded
                    && open.contains(&answer.request_id)
                {
                    self.history.push(self.user_message(
                        event,
                        &answer.text,
                        Some(answer.request_id),
                    ));
                    self.working(event, &mut out);
                }
            }
            Phase::Running => self.run(event, decoded, &mut out),
        }
        out
    }

    /// The responses of a task whose turn failed before it could end: its status becomes
    /// `TASK_STATE_FAILED` with `message` as the status message.
    pub fn fail(&mut self, message: &str, at: Option<&Envelope>) -> Vec<TaskResponse> {
        let mut out = Vec::new();
        if self.state.is_terminal() {
            return out;
        }
        if !self.announced {
            out.push(self.announce().into());
        }
        self.close_all(&mut out);
        self.phase = Phase::Ended;
        self.state = TaskState::Failed;
        let text = self.agent_message(message, json!({ "openharness": "error" }));
        self.status = match at {
            Some(event) => self.status_of(TaskState::Failed, event, Some(text)),
            None => json!({ "state": TaskState::Failed.as_str(), "message": text }),
        };
        out.push(self.status_update(None).into());
        out
    }

    /// The `Task` as the events so far describe it.
    pub fn task(&self) -> Value {
        // Artifacts under way show their text so far.
        json!({
            "id": self.head.id,
            "contextId": self.head.context_id,
            "status": self.status,
            "artifacts": self.artifacts,
            "history": self.history,
        })
    }

    /// The task's turn (re)begins at `event`.
    fn working(&mut self, event: &Envelope, out: &mut Vec<TaskResponse>) {
        self.phase = Phase::Running;
        self.state = TaskState::Working;
        self.status = self.status_of(TaskState::Working, event, None);
        if self.announced {
            out.push(self.status_update(None).into());
        } else {
            out.push(self.announce().into());
        }
    }

    /// An event of the task's running turn.
    fn run(&mut self, event: &Envelope, decoded: Option<Builtin>, out: &mut Vec<TaskResponse>) {
        let is_start = matches!(decoded, Some(Builtin::WorkflowStarted(_)));
        if let Some(Builtin::UserInput(input)) = &decoded
            && self.history.is_empty()
        {
            self.history
                .push(self.user_message(event, &input.text, None));
        }
        if let Some(Builtin::InputReceived(answer)) = &decoded
            && self.history.is_empty()
        {
            self.history
                .push(self.user_message(event, &answer.text, Some(answer.request_id)));
        }
        if !self.announced && !is_start {
            out.push(self.announce().into());
        }
        let Some(builtin) = decoded else {
            return;
        };
        match builtin {
            Builtin::AgentStarted(started) => {
                let key = CallKey::new(started.agent.as_str(), event.caused_by);
                let call = Call::new(event.id, started.agent, started.reply);
                if let Some(mut earlier) = self.calls.insert(key, call) {
                    // A call run again after an interruption: what it showed stays shown.
                    self.close(&mut earlier, "", out);
                }
            }
            Builtin::TextDelta(delta) => {
                // One look-up, the key made of the delta's own agent name.
                let call = self
                    .calls
                    .entry(CallKey::new(delta.agent, event.caused_by))
                    .or_insert_with_key(|key| Call::new(event.id, key.agent.clone(), None));
                // A re-asked attempt's text follows what the rejected one showed (a stream
                // takes nothing back).
                let (_, text) = call.reply.push(&delta.delta, delta.attempt);
                if !text.is_empty() {
                    text_chunk(&mut self.artifacts, &self.ids, call, text, false, out);
                }
            }
            Builtin::ToolCalled(called) => {
                // The model's text before a tool call is one response; what follows, another.
                if let Some(call) = self
                    .calls
                    .get_mut(&CallKey::new(called.agent.as_str(), event.caused_by))
                {
                    call.reply.next_response();
                }
                let message = self.message(
                    "ROLE_AGENT",
                    &format!("msg-{}", event.id),
                    vec![
                        json!({ "data": { "toolName": called.tool, "input": called.input },
                        "mediaType": "application/json" }),
                    ],
                    json!({ "openharness": "tool_call", "agentName": called.agent }),
                );
                self.status = self.status_of(TaskState::Working, event, Some(message));
                out.push(self.status_update(None).into());
            }
            Builtin::ErrorOccurred(error) => {
                self.last_error = Some(error.message.clone());
                let message = self.agent_message_at(
                    event,
                    &error.message,
                    json!({ "openharness": "error", "code": error.source }),
                );
                self.status = self.status_of(TaskState::Working, event, Some(message));
                out.push(self.status_update(None).into());
            }
            Builtin::AgentCompleted(completed) => {
                let key = CallKey::new(completed.agent.as_str(), event.caused_by);
                let mut call = self
                    .calls
                    .remove(&key)
                    .unwrap_or_else(|| Call::new(event.id, completed.agent.clone(), None));
                let mut rest = String::new();
                let mut data = None;
                if completed.outcome == Outcome::Success
                    && let Some(output) = &completed.output
                {
                    if let Some(tail) = call.reply.rest(output) {
                        // What the stream has not shown yet: all of it, or the rest of it.
                        rest = tail;
                    } else if call.artifact.is_none()
                        && !output.is_null()
                        && reply_text(output, call.pointer.as_deref()).is_none()
                    {
                        // No text reply: the structured output is the artifact.
                        data = Some(output.clone());
                    }
                }
                if let Some(output) = data {
                    self.data_artifact(&call, output, out);
                } else {
                    self.close(&mut call, &rest, out);
                }
            }
            Builtin::InputRequested(request) => {
                self.asked
                    .insert(event.id, (request.prompt, request.approval));
            }
            Builtin::WorkflowCompleted(completed) => {
                self.close_all(out);
                let reason = completed.reason.as_str();
                let (state, message, metadata) =
                    if reason == "waiting_for_input" && !completed.open_requests.is_empty() {
                        // The questions this task asked; else (a turn that asked nothing
                        // while older questions stay open) those.
                        let own: Vec<EventId> = completed
                            .open_requests
                            .iter()
                            .filter(|request| self.asked.contains_key(request))
                            .copied()
                            .collect();
                        let waiting = if own.is_empty() {
                            completed.open_requests.clone()
                        } else {
                            own
                        };
                        let request = waiting[0];
                        let (prompt, approval) =
                            self.asked.get(&request).cloned().unwrap_or_else(|| {
                                ("The task waits for an answer.".to_owned(), false)
                            });
                        let question = self.agent_message_at(
                            event,
                            &prompt,
                            json!({ "requestId": request.to_string(), "approval": approval,
                            "openRequests": waiting.iter()
                                .map(ToString::to_string).collect::<Vec<_>>() }),
                        );
                        self.history.push(question.clone());
                        self.phase = Phase::Waiting(waiting);
                        (TaskState::InputRequired, Some(question), None)
                    } else {
                        self.phase = Phase::Ended;
                        match reason {
                            "cancelled" | "interrupted" | "rolled_back" => (
                                TaskState::Canceled,
                                None,
                                Some(json!({ "openharness": reason })),
                            ),
                            "max_events" | "max_agent_calls" | "max_cost" | "deadline" => {
                                let why = format!("the turn was cut short: {reason}");
                                let message = self.agent_message_at(
                                    event,
                                    &why,
                                    json!({ "openharness": reason }),
                                );
                                (TaskState::Failed, Some(message), None)
                            }
                            _ if completed.errors > 0 => {
                                let why = self.last_error.clone().unwrap_or_else(|| {
                                    format!("the turn recorded {} errors", completed.errors)
                                });
                                let message = self.agent_message_at(
                                    event,
                                    &why,
                                    json!({ "openharness": "error" }),
                                );
                                (TaskState::Failed, Some(message), None)
                            }
                            _ => (TaskState::Completed, None, None),
                        }
                    };
                self.state = state;
                self.status = self.status_of(state, event, message);
                out.push(self.status_update(metadata).into());
            }
            _ => {}
        }
    }

    /// Adds `text` to `call`'s text artifact, opening it first.
    fn text(&mut self, call: &mut Call, text: &str, last: bool, out: &mut Vec<TaskResponse>) {
        text_chunk(
            &mut self.artifacts,
            &self.ids,
            call,
            text.to_owned(),
            last,
            out,
        );
    }

    /// Ends `call`'s text artifact with `rest` (the reply's characters not streamed yet), if
    /// it has one or `rest` opens one.
    fn close(&mut self, call: &mut Call, rest: &str, out: &mut Vec<TaskResponse>) {
        if call.artifact.is_some() || !rest.is_empty() {
            self.text(call, rest, true, out);
        }
        call.artifact = None;
    }

    /// `call`'s structured output as an artifact of one `data` part.
    fn data_artifact(&mut self, call: &Call, output: Value, out: &mut Vec<TaskResponse>) {
        let artifact = json!({
            "artifactId": format!("artifact-{}", call.event),
            "name": call.agent,
            "parts": [{ "data": output, "mediaType": "application/json" }],
        });
        self.artifacts.push(artifact.clone());
        out.push(
            json!({ "artifactUpdate": {
                "taskId": self.head.id,
                "contextId": self.head.context_id,
                "artifact": artifact,
                "append": false,
                "lastChunk": true,
            } })
            .into(),
        );
    }

    /// Ends every artifact still open (the turn ended, or failed), in the order they opened.
    fn close_all(&mut self, out: &mut Vec<TaskResponse>) {
        let mut calls: Vec<Call> = std::mem::take(&mut self.calls).into_values().collect();
        calls.sort_by_key(|call| call.artifact.unwrap_or(usize::MAX));
        for mut call in calls {
            self.close(&mut call, "", out);
        }
    }

    /// A `statusUpdate` response with the task's status now.
    fn status_update(&self, metadata: Option<Value>) -> Value {
        let mut update = json!({
            "taskId": self.head.id,
            "contextId": self.head.context_id,
            "status": self.status,
        });
        if let Some(metadata) = metadata {
            update["metadata"] = metadata;
        }
        json!({ "statusUpdate": update })
    }

    /// A status in `state` as of `event`, with `message`.
    fn status_of(&self, state: TaskState, event: &Envelope, message: Option<Value>) -> Value {
        let mut status = json!({
            "state": state.as_str(),
            "timestamp": serde_json::to_value(event.timestamp).unwrap_or(Value::Null),
        });
        if let Some(message) = message {
            status["message"] = message;
        }
        status
    }

    /// The user's message recorded as `event` (an answer to `answers`, when it is one): its
    /// id is the client's own (`messageId` in the payload), else one made of the event's.
    fn user_message(&self, event: &Envelope, text: &str, answers: Option<EventId>) -> Value {
        let id = event.payload[MESSAGE_ID_FIELD]
            .as_str()
            .map_or_else(|| format!("msg-{}", event.id), str::to_owned);
        let metadata = answers.map_or(
            Value::Null,
            |request| json!({ "requestId": request.to_string() }),
        );
        self.message("ROLE_USER", &id, vec![json!({ "text": text })], metadata)
    }

    /// An agent message `text`, made at `event`.
    fn agent_message_at(&self, event: &Envelope, text: &str, metadata: Value) -> Value {
        self.message(
            "ROLE_AGENT",
            &format!("msg-{}", event.id),
            vec![json!({ "text": text })],
            metadata,
        )
    }

    /// An agent message `text` that no event made (a failure the log does not hold).
    fn agent_message(&self, text: &str, metadata: Value) -> Value {
        self.message(
            "ROLE_AGENT",
            &format!("msg-{}-failed", self.head.id),
            vec![json!({ "text": text })],
            metadata,
        )
    }

    fn message(&self, role: &str, id: &str, parts: Vec<Value>, metadata: Value) -> Value {
        let mut message = Map::new();
        message.insert("messageId".to_owned(), json!(id));
        message.insert("contextId".to_owned(), json!(self.head.context_id));
        message.insert("taskId".to_owned(), json!(self.head.id));
        message.insert("role".to_owned(), json!(role));
        message.insert("parts".to_owned(), Value::Array(parts));
        if !metadata.is_null() {
            message.insert("metadata".to_owned(), metadata);
        }
        Value::Object(message)
    }
}

/// Adds `text` to `call`'s text artifact in `artifacts`, opening it first, and streams it as a
/// chunk of the task `ids` (its id, its context).
fn text_chunk(
    artifacts: &mut Vec<Value>,
    ids: &(Arc<str>, Arc<str>),
    call: &mut Call,
    text: String,
    last: bool,
    out: &mut Vec<TaskResponse>,
) {
    let append = match call.artifact {
        Some(index) => {
            // The artifact's text grows in place (no copy of what it holds).
            if let Some(Value::String(whole)) = artifacts.get_mut(index).and_then(|a| {
                a.get_mut("parts")
                    .and_then(|parts| parts.get_mut(0))
                    .and_then(|part| part.get_mut("text"))
            }) {
                whole.push_str(&text);
            }
            true
        }
        None => {
            call.artifact = Some(artifacts.len());
            artifacts.push(json!({
                "artifactId": format!("artifact-{}", call.event),
                "name": call.agent,
                "parts": [{ "text": text }],
            }));
            false
        }
    };
    let (artifact_id, name) = call.names.get_or_insert_with(|| {
        (
            format!("artifact-{}", call.event).into(),
            call.agent.as_str().into(),
        )
    });
    out.push(TaskResponse::ArtifactText(ArtifactText {
        task_id: Arc::clone(&ids.0),
        context_id: Arc::clone(&ids.1),
        artifact_id: Arc::clone(artifact_id),
        name: Arc::clone(name),
        text,
        append,
        last_chunk: last,
    }));
}

#[cfg(test)]
mod tests;
