//! A turn as an AG-UI run (protocol 1.0, `@ag-ui/core` 1.0.0): [`AgUiStream`] turns the recorded
//! events of the turn that answers one input, one at a time, into the AG-UI events an
//! `HttpAgent` applies, and keeps the conversation those events describe
//! ([`AgUiStream::messages`]) for `MESSAGES_SNAPSHOT`.
//!
//! | recorded | AG-UI |
//! |---|---|
//! | the turn's first event | `RUN_STARTED {threadId, runId}`, then `STATE_SNAPSHOT` of the state the turn starts from |
//! | an event that changes the folded state | `STATE_DELTA`, the JSON Patch (RFC 6902) from the state before to the state after |
//! | `agent:started` | `STEP_STARTED {stepName: "<agent>:<event id>"}` |
//! | the reply's characters (decoded from the model's streamed output) | `TEXT_MESSAGE_START {messageId, role: "assistant", name: agent}`, `TEXT_MESSAGE_CONTENT`, `TEXT_MESSAGE_END` |
//! | `tool:called` / `tool:result` | `TOOL_CALL_START`, `TOOL_CALL_ARGS` (the input as JSON text), `TOOL_CALL_END` / `TOOL_CALL_RESULT` |
//! | `agent:completed` | the rest of the reply, `TEXT_MESSAGE_END`, `CUSTOM openharness.output {agent, output}`, `STEP_FINISHED` |
//! | `error:occurred` | `CUSTOM openharness.error {code, message}` (the run goes on) |
//! | `input:requested` | an interrupt: `{id: <request id>, reason: "input_required"` (or `"confirmation"` for an approval)`, message, responseSchema}` |
//! | `workflow:completed` | `MESSAGES_SNAPSHOT` then `RUN_FINISHED` with `outcome` `interrupt` (the questions asked), `cancelled` (a stopped turn) or `success` (and `result`: the last agent output) |
//! | the turn failing | `RUN_ERROR {message, code}` |
//!
//! No optional field is ever `null` (the 1.0 client refuses nulls: absent fields are left out).
//!
//! ```
//! use openharness_core::Envelope;
//! use openharness_core::builtin::{AgentCompleted, AgentStarted, Outcome, UserInput, WorkflowCompleted};
//! use openharness_projection::AgUiStream;
//! use serde_json::json;
//! let input = Envelope::typed(&UserInput::new("Hi"), None).unwrap();
//! let started = Envelope::typed(&AgentStarted { agent: "assistant".into(),
//!     reply: Some("/reply".into()), ..AgentStarted::default() }, Some(input.id)).unwrap();
//! let completed = Envelope::typed(&AgentCompleted { agent: "assistant".into(),
//!     outcome: Outcome::Success, usage: Default::default(), cost: None, error: None,
//!     output: Some(json!({ "reply": "Hello!" })) }, Some(input.id)).unwrap();
//! let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(), ..Default::default() }, None).unwrap();
//!
//! let mut run = AgUiStream::new("thread-1", "run-1", Vec::new(), Some(json!({})));
//! let kinds: Vec<String> = [&input, &started, &completed, &done].into_iter()
//!     .flat_map(|event| run.step(event, None))
//!     .map(|event| event.to_value()["type"].as_str().unwrap().to_owned())
//!     .collect();
//! assert_eq!(kinds, ["RUN_STARTED", "STATE_SNAPSHOT", "STEP_STARTED", "TEXT_MESSAGE_START",
//!     "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "CUSTOM", "STEP_FINISHED",
//!     "MESSAGES_SNAPSHOT", "RUN_FINISHED"]);
//! assert_eq!(run.messages()[1]["content"], "Hello!");
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use openharness_core::adapter::CallKey;
use openharness_core::builtin::{Builtin, Outcome};
use openharness_core::{Envelope, EventId};
use serde::Serialize;
use serde_json::{Value, json};

use crate::reply::ReplyProgress;
use crate::ui_stream::MESSAGE_ID_FIELD;

/// The payload field of a `user:input` bringing frontend tools' results (`toolResults`) that
/// holds the ids the client gave their `tool` messages, in the same order.
pub const TOOL_MESSAGE_IDS_FIELD: &str = "toolMessageIds";

/// One AG-UI event: typed for `TEXT_MESSAGE_CONTENT` (the event of every streamed delta),
/// JSON for the others. It serialises as the event's JSON ([`AgUiEvent::to_value`] gives it
/// as a value).
#[derive(Debug, Clone, PartialEq)]
pub enum AgUiEvent {
    /// `{"type": "TEXT_MESSAGE_CONTENT", "messageId", "delta"}`: serialised straight from its
    /// fields, with no JSON map built per delta.
    TextContent(TextMessageContent),
    /// Any other event's JSON, `type` included.
    Json(Value),
}

/// The fields of a `TEXT_MESSAGE_CONTENT` event.
#[derive(Debug, Clone, PartialEq)]
pub struct TextMessageContent {
    /// The id of the message the text is added to (shared by its message's events).
    pub message_id: Arc<str>,
    /// The text added.
    pub delta: String,
}

/// `TEXT_MESSAGE_CONTENT` on the wire: the fields in the order a JSON map writes them
/// (sorted), so the bytes are the same as a `json!` object's.
#[derive(Serialize)]
struct TextMessageContentWire<'a> {
    delta: &'a str,
    #[serde(rename = "messageId")]
    message_id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Serialize for AgUiEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(value) => value.serialize(serializer),
            Self::TextContent(content) => TextMessageContentWire {
                delta: &content.delta,
                message_id: &content.message_id,
                kind: "TEXT_MESSAGE_CONTENT",
            }
            .serialize(serializer),
        }
    }
}

impl AgUiEvent {
    /// The event as a JSON value (to inspect it; serialising it writes it directly).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Json(value) => value.clone(),
            Self::TextContent(_) => serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

impl From<Value> for AgUiEvent {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

/// The events a step makes, in order.
#[derive(Debug, Default)]
struct Events(Vec<AgUiEvent>);

impl Events {
    fn push(&mut self, event: impl Into<AgUiEvent>) {
        self.0.push(event.into());
    }
}

/// One agent call: its reply so far, its step and its text message under way.
#[derive(Debug)]
struct Call {
    reply: ReplyProgress,
    /// The step this call opened (`<agent>:<event id>`), when it opened one.
    step: Option<String>,
    /// The id of its text message under way.
    message: Option<Arc<str>>,
}

impl Call {
    fn new(pointer: Option<String>, step: Option<String>) -> Self {
        Self {
            reply: ReplyProgress::new(pointer),
            step,
            message: None,
        }
    }
}

/// A turn as an AG-UI run, one recorded event at a time (see the module docs).
#[derive(Debug)]
pub struct AgUiStream {
    thread_id: String,
    run_id: String,
    started: bool,
    ended: bool,
    /// The state the run starts from (`STATE_SNAPSHOT`), then the latest state sent.
    state: Option<Value>,
    calls: HashMap<CallKey, Call>,
    /// The questions the turn asked, as interrupts.
    interrupts: Vec<(EventId, Value)>,
    messages: Vec<Value>,
    last_output: Option<Value>,
    /// The `RUN_FINISHED` the run ended with.
    finished: Option<Value>,
    /// Whether the client reads the `cancelled` outcome (protocol 1.0 and later).
    cancelled_outcome: bool,
}

impl AgUiStream {
    /// The run `run_id` of thread `thread_id`, continuing the conversation `history` (AG-UI
    /// messages, as [`messages`](Self::messages) gives them), from the state `state` (JSON;
    /// `None` when the state is not known: no `STATE_*` events are sent).
    pub fn new(
        thread_id: impl Into<String>,
        run_id: impl Into<String>,
        history: Vec<Value>,
        state: Option<Value>,
    ) -> Self {
        Self {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            started: false,
            ended: false,
            state,
            calls: HashMap::new(),
            interrupts: Vec::new(),
            messages: history,
            last_output: None,
            finished: None,
            cancelled_outcome: true,
        }
    }

    /// This run for a client older than protocol 1.0 (its `RunAgentInput` carries no
    /// `protocolVersion`), whose schema has no `cancelled` outcome and fails on one: a stopped
    /// run ends with `CUSTOM openharness.cancelled` and a `RUN_FINISHED` without an outcome.
    ///
    /// ```
    /// use openharness_core::Envelope;
    /// use openharness_core::builtin::{UserInput, WorkflowCompleted};
    /// use openharness_projection::AgUiStream;
    /// let input = Envelope::typed(&UserInput::new("Hi"), None).unwrap();
    /// let stopped = Envelope::typed(&WorkflowCompleted { reason: "cancelled".into(), ..Default::default() }, None).unwrap();
    /// let mut run = AgUiStream::new("t", "r", Vec::new(), None).before_protocol_1();
    /// let events: Vec<_> = [&input, &stopped].into_iter().flat_map(|e| run.step(e, None))
    ///     .map(|e| e.to_value()).collect();
    /// assert_eq!(events[events.len() - 2]["name"], "openharness.cancelled");
    /// assert!(events[events.len() - 1].get("outcome").is_none());
    /// ```
    pub fn before_protocol_1(mut self) -> Self {
        self.cancelled_outcome = false;
        self
    }

    /// The conversation so far, as AG-UI messages (`user`, `assistant` with text or
    /// `toolCalls`, `tool`).
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// Whether the run has ended (`RUN_FINISHED` or `RUN_ERROR` was sent).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// The events `event` adds to the run; `state`, when given, is the workflow's state after
    /// it (a `STATE_DELTA` is sent when it differs from the state before).
    pub fn step(&mut self, event: &Envelope, state: Option<Value>) -> Vec<AgUiEvent> {
        let mut out = Events::default();
        if self.ended {
            return out.0;
        }
        if !self.started {
            self.start(&mut out);
        }
        if let Some(Ok(builtin)) = Builtin::decode(event) {
            self.apply(builtin, event, &mut out);
        }
        if let Some(after) = state
            && !self.ended
        {
            self.delta(after, &mut out);
        }
        out.0
    }

    /// What a client that joins the run while it is under way (a resumed connection) needs
    /// before the live events that follow: `RUN_STARTED`, the state and the conversation so
    /// far, and a `STEP_STARTED` and `TEXT_MESSAGE_START` for each step and message still
    /// open (the client keeps the text it has of a message it knows; it has the rest in the
    /// snapshot). Call it after stepping (and discarding) the run's events so far. A run that
    /// has ended is rejoined whole: the snapshots, then how it finished.
    pub fn rejoin(&mut self) -> Vec<AgUiEvent> {
        let mut out = Events::default();
        self.started = true;
        out.push(self.run_started());
        if let Some(state) = &self.state {
            out.push(json!({ "type": "STATE_SNAPSHOT", "snapshot": state }));
        }
        out.push(json!({ "type": "MESSAGES_SNAPSHOT", "messages": self.messages }));
        if let Some(finished) = &self.finished {
            out.push(finished.clone());
            return out.0;
        }
        let mut open: Vec<&Call> = self.calls.values().collect();
        open.sort_by(|a, b| a.step.cmp(&b.step));
        for call in open {
            if let Some(step) = &call.step {
                out.push(json!({ "type": "STEP_STARTED", "stepName": step }));
            }
            if let Some(id) = call.message.as_deref() {
                out.push(
                    json!({ "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant" }),
                );
            }
        }
        out.0
    }

    /// The events of a turn that failed before it could end: `RUN_ERROR`.
    pub fn fail(&mut self, code: &str, message: &str) -> Vec<AgUiEvent> {
        if self.ended {
            return Vec::new();
        }
        let mut out = Events::default();
        if !self.started {
            self.start(&mut out);
        }
        self.ended = true;
        let error = json!({ "type": "RUN_ERROR", "message": message, "code": code });
        self.finished = Some(error.clone());
        out.push(error);
        out.0
    }

    fn run_started(&self) -> Value {
        json!({ "type": "RUN_STARTED", "threadId": self.thread_id, "runId": self.run_id })
    }

    fn start(&mut self, out: &mut Events) {
        self.started = true;
        out.push(self.run_started());
        if let Some(state) = &self.state {
            out.push(json!({ "type": "STATE_SNAPSHOT", "snapshot": state }));
        }
    }

    fn delta(&mut self, after: Value, out: &mut Events) {
        let Some(before) = &self.state else {
            return;
        };
        if *before == after {
            return;
        }
        let patch = json_patch::diff(before, &after);
        if let Ok(ops) = serde_json::to_value(&patch)
            && ops.as_array().is_some_and(|ops| !ops.is_empty())
        {
            out.push(json!({ "type": "STATE_DELTA", "delta": ops }));
        }
        self.state = Some(after);
    }

    fn apply(&mut self, builtin: Builtin, event: &Envelope, out: &mut Events) {
        match builtin {
            Builtin::UserInput(input) => {
                // The results of frontend tools it brings (under the ids the client gave their
                // messages, so its list keeps its order), then what the person said.
                for (n, result) in input.tool_results.iter().enumerate() {
                    let content = tool_content(&result.output);
                    let id = event.payload[TOOL_MESSAGE_IDS_FIELD][n]
                        .as_str()
                        .map_or_else(|| format!("tool-{}-{n}", event.id), str::to_owned);
                    self.push_message(json!({ "id": id, "role": "tool", "content": content,
                        "toolCallId": result.tool_call_id }));
                }
                if input.tool_results.is_empty() || !input.text.is_empty() {
                    let id = event.payload[MESSAGE_ID_FIELD]
                        .as_str()
                        .map_or_else(|| format!("msg-{}", event.id), str::to_owned);
                    self.push_message(json!({ "id": id, "role": "user", "content": input.text }));
                }
            }
            Builtin::InputReceived(answer) => {
                let id = event.payload[MESSAGE_ID_FIELD]
                    .as_str()
                    .map_or_else(|| format!("msg-{}", event.id), str::to_owned);
                self.push_message(json!({ "id": id, "role": "user", "content": answer.text }));
            }
            Builtin::AgentStarted(started) => {
                let step = format!("{}:{}", started.agent, event.id);
                out.push(json!({ "type": "STEP_STARTED", "stepName": step }));
                let key = CallKey::new(started.agent, event.caused_by);
                if let Some(earlier) = self.calls.insert(key, Call::new(started.reply, Some(step)))
                {
                    // A call run again after an interruption: close what it opened.
                    self.close_call(earlier, out);
                }
            }
            Builtin::TextDelta(delta) => {
                let name = delta.agent.clone();
                let key = CallKey::new(delta.agent, event.caused_by);
                let mut call = self
                    .calls
                    .remove(&key)
                    .unwrap_or_else(|| Call::new(None, None));
                let (restarted, text) = call.reply.push(&delta.delta, delta.attempt);
                if restarted {
                    self.end_text(&mut call, out);
                }
                if !text.is_empty() {
                    self.text(&mut call, &name, event, &text, out);
                }
                self.calls.insert(key, call);
            }
            Builtin::ToolCalled(called) => {
                if let Some(mut call) = self
                    .calls
                    .remove(&CallKey::new(called.agent.as_str(), event.caused_by))
                {
                    call.reply.next_response();
                    self.end_text(&mut call, out);
                    self.calls
                        .insert(CallKey::new(called.agent.as_str(), event.caused_by), call);
                }
                let arguments = called.input.to_string();
                let id = called.tool_call_id;
                out.push(json!({ "type": "TOOL_CALL_START", "toolCallId": id, "toolCallName": called.tool }));
                out.push(json!({ "type": "TOOL_CALL_ARGS", "toolCallId": id, "delta": arguments }));
                out.push(json!({ "type": "TOOL_CALL_END", "toolCallId": id }));
                self.push_message(json!({ "id": id, "role": "assistant", "toolCalls": [
                    { "id": id, "type": "function", "function": { "name": called.tool, "arguments": arguments } }
                ] }));
            }
            Builtin::ToolResult(result) => {
                let content = tool_content(&result.output);
                let id = format!("tool-{}", event.id);
                out.push(json!({ "type": "TOOL_CALL_RESULT", "messageId": id,
                    "toolCallId": result.tool_call_id, "content": content, "role": "tool" }));
                let mut message = json!({ "id": id, "role": "tool", "content": content,
                    "toolCallId": result.tool_call_id });
                if result.is_error {
                    message["error"] = json!(content);
                }
                // After the call's assistant message and the results already there, as the
                // client puts it.
                let call = self.messages.iter().position(|m| {
                    m["role"] == "assistant"
                        && m["toolCalls"].as_array().is_some_and(|calls| {
                            calls
                                .iter()
                                .any(|c| c["id"] == result.tool_call_id.as_str())
                        })
                });
                match call {
                    Some(mut at) => {
                        at += 1;
                        while self.messages.get(at).is_some_and(|m| m["role"] == "tool") {
                            at += 1;
                        }
                        self.messages.insert(at, message);
                    }
                    None => self.messages.push(message),
                }
            }
            Builtin::AgentCompleted(completed) => {
                let key = CallKey::new(completed.agent.as_str(), event.caused_by);
                let mut call = self
                    .calls
                    .remove(&key)
                    .unwrap_or_else(|| Call::new(None, None));
                if completed.outcome == Outcome::Success
                    && let Some(rest) = completed.output.as_ref().and_then(|o| call.reply.rest(o))
                {
                    self.text(&mut call, &completed.agent, event, &rest, out);
                }
                self.end_text(&mut call, out);
                if let Some(output) = completed.output {
                    out.push(json!({ "type": "CUSTOM", "name": "openharness.output",
                        "value": { "agent": completed.agent, "output": output } }));
                    self.last_output = Some(output);
                }
                if let Some(step) = call.step.take() {
                    out.push(json!({ "type": "STEP_FINISHED", "stepName": step }));
                }
            }
            Builtin::ErrorOccurred(error) => {
                out.push(json!({ "type": "CUSTOM", "name": "openharness.error",
                    "value": { "code": error.source, "message": error.message } }));
            }
            Builtin::InputRequested(request) => {
                let interrupt = if request.approval {
                    json!({ "id": event.id, "reason": "confirmation", "message": request.prompt,
                        "responseSchema": { "type": "object", "properties": {
                            "approved": { "type": "boolean" }, "reason": { "type": "string" } },
                            "required": ["approved"] } })
                } else {
                    json!({ "id": event.id, "reason": "input_required", "message": request.prompt,
                        "responseSchema": { "type": "object", "properties": {
                            "text": { "type": "string" } }, "required": ["text"] } })
                };
                self.interrupts.push((event.id, interrupt));
            }
            Builtin::WorkflowCompleted(completed) => {
                let calls: Vec<Call> = std::mem::take(&mut self.calls).into_values().collect();
                for call in calls {
                    self.close_call(call, out);
                }
                let open: Vec<Value> = std::mem::take(&mut self.interrupts)
                    .into_iter()
                    .filter(|(id, _)| completed.open_requests.contains(id))
                    .map(|(_, interrupt)| interrupt)
                    .collect();
                out.push(json!({ "type": "MESSAGES_SNAPSHOT", "messages": self.messages }));
                let mut finished = json!({ "type": "RUN_FINISHED", "threadId": self.thread_id,
                    "runId": self.run_id });
                if !open.is_empty() {
                    finished["outcome"] = json!({ "type": "interrupt", "interrupts": open });
                } else if completed.reason == "cancelled" {
                    if self.cancelled_outcome {
                        finished["outcome"] = json!({ "type": "cancelled" });
                    } else {
                        out.push(json!({ "type": "CUSTOM", "name": "openharness.cancelled",
                            "value": { "reason": completed.reason } }));
                    }
                } else {
                    finished["outcome"] = json!({ "type": "success" });
                    if let Some(result) = self.last_output.take() {
                        finished["result"] = result;
                    }
                }
                self.finished = Some(finished.clone());
                out.push(finished);
                self.ended = true;
            }
            _ => {}
        }
    }

    /// Adds `text` to `call`'s message, opening it (named after `event`) first.
    fn text(
        &mut self,
        call: &mut Call,
        agent: &str,
        event: &Envelope,
        text: &str,
        out: &mut Events,
    ) {
        let id = match &call.message {
            Some(id) => Arc::clone(id),
            None => {
                let id = format!("msg-{}", event.id);
                out.push(
                    json!({ "type": "TEXT_MESSAGE_START", "messageId": id, "role": "assistant",
                    "name": agent }),
                );
                self.push_message(
                    json!({ "id": id, "role": "assistant", "content": "", "name": agent }),
                );
                let id: Arc<str> = id.into();
                call.message = Some(Arc::clone(&id));
                id
            }
        };
        if let Some(message) = self.messages.iter_mut().rev().find(|m| m["id"] == *id)
            && let Value::String(content) = &mut message["content"]
        {
            content.push_str(text);
        }
        out.push(AgUiEvent::TextContent(TextMessageContent {
            message_id: id,
            delta: text.to_owned(),
        }));
    }

    fn end_text(&mut self, call: &mut Call, out: &mut Events) {
        if let Some(id) = call.message.take() {
            out.push(json!({ "type": "TEXT_MESSAGE_END", "messageId": &*id }));
        }
    }

    /// Closes what `call` left open (its message, its step).
    fn close_call(&mut self, mut call: Call, out: &mut Events) {
        self.end_text(&mut call, out);
        if let Some(step) = call.step.take() {
            out.push(json!({ "type": "STEP_FINISHED", "stepName": step }));
        }
    }

    /// Adds `message` to the conversation, replacing one with its id.
    fn push_message(&mut self, message: Value) {
        match self.messages.iter_mut().find(|m| m["id"] == message["id"]) {
            Some(known) => *known = message,
            None => self.messages.push(message),
        }
    }
}

/// A tool's output as a `tool` message's content: a string as it is, anything else as JSON.
fn tool_content(output: &Value) -> String {
    match output {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
