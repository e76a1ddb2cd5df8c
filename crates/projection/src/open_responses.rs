//! A turn as an Open Responses response (OpenAI's Responses shape, the open specification of
//! 2026-04-24): [`ResponseStream`] turns the recorded events of the turn that answers one
//! request, one at a time, into the streaming events an Open Responses client reads, and keeps
//! the response resource those events describe ([`ResponseStream::resource`]), so a streamed
//! response, a non-streamed one and one read back later are the same response.
//!
//! The events of one text reply, in order: `response.created` and `response.in_progress` (the
//! resource, `status: "in_progress"`), then per agent call that replies with text a `message`
//! item: `response.output_item.added`, `response.content_part.added`,
//! `response.output_text.delta`…, `response.output_text.done`, `response.content_part.done`,
//! `response.output_item.done`; and at the turn's end `response.completed` (or
//! `response.incomplete` for a turn that was stopped or cut short, with
//! `incomplete_details.reason` the turn's recorded reason; or `error` then `response.failed`
//! for a turn that failed). Every event carries `sequence_number`, counted from 0 within the
//! response, so a client that resumes after event `n` gets exactly the events after it.
//!
//! **What the client sees of a workflow.** Each agent call whose reply is text (an agent with
//! a reply pointer, as chat clients show it) is one `message` item, in the order their text
//! starts; a question or an approval the turn asks a person is a `message` item whose text is
//! the question (the next input answers it). A model's call of a tool the client runs (a
//! `tool:called` with `client: true`) is a `function_call` item (`call_id` is the recorded
//! `toolId`): the client runs it and sends a `function_call_output`. A workflow's other work
//! (agents that only return structured output, server-side tool calls, handlers' events) is
//! not an item: no client has to run or render it, and the session's log holds it all
//! (`GET /sessions/{id}/events`).
//!
//! ```
//! use openharness_core::Envelope;
//! use openharness_core::builtin::{AgentCompleted, AgentStarted, Outcome, UserInput, WorkflowCompleted};
//! use openharness_projection::{ResponseHead, ResponseStream};
//! use serde_json::json;
//! let input = Envelope::typed(&UserInput::new("Hi"), None).unwrap();
//! let started = Envelope::typed(&AgentStarted { agent: "assistant".into(),
//!     reply: Some("/reply".into()), ..AgentStarted::default() }, Some(input.id)).unwrap();
//! let completed = Envelope::typed(&AgentCompleted { agent: "assistant".into(),
//!     outcome: Outcome::Success, usage: Default::default(), cost: None, error: None,
//!     output: Some(json!({ "reply": "Hello!" })) }, Some(input.id)).unwrap();
//! let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(), ..Default::default() }, None).unwrap();
//!
//! let mut stream = ResponseStream::new(ResponseHead::new("resp_0_chat-1", "chat", "chat-1"));
//! let kinds: Vec<&str> = [&input, &started, &completed, &done].into_iter()
//!     .flat_map(|event| stream.step(event))
//!     .map(|event| event.kind)
//!     .collect();
//! assert_eq!(kinds, ["response.created", "response.in_progress", "response.output_item.added",
//!     "response.content_part.added", "response.output_text.delta", "response.output_text.done",
//!     "response.content_part.done", "response.output_item.done", "response.completed"]);
//! let resource = stream.resource();
//! assert_eq!(resource["status"], "completed");
//! assert_eq!(resource["output"][0]["content"][0]["text"], "Hello!");
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use openharness_core::Envelope;
use openharness_core::adapter::CallKey;
use openharness_core::builtin::{Builtin, Outcome};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::reply::ReplyProgress;

/// What a response is, beyond its events: its id, the `model` it was asked of, the
/// conversation (session) it is in, and the request's fields it echoes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResponseHead {
    /// The response's id (`resp_<seq>_<session>`: the request's event in its session).
    pub id: String,
    /// The `model` the request named (a served workflow).
    pub model: String,
    /// The conversation: the session the response is in.
    pub conversation: String,
    /// The response it continues, when the request named one.
    pub previous_response_id: Option<String>,
    /// The request's `instructions`, echoed.
    pub instructions: Option<String>,
    /// The request's `metadata` (an object), echoed.
    pub metadata: Map<String, Value>,
    /// The request's `tools`, echoed.
    pub tools: Vec<Value>,
    /// Whether the response is kept (readable later): the request's `store`, default true.
    pub store: bool,
    /// Whether the request asked for the response in the background.
    pub background: bool,
}

impl ResponseHead {
    /// A stored response `id` of `model` in the conversation `conversation`, echoing nothing
    /// else.
    pub fn new(
        id: impl Into<String>,
        model: impl Into<String>,
        conversation: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            model: model.into(),
            conversation: conversation.into(),
            store: true,
            ..Self::default()
        }
    }
}

/// One streaming event: its type (the SSE `event:` name, also the data's `type`), its
/// sequence number and its data. Its JSON text is [`ResponseEvent::to_json`] (the event
/// serialises as its data, `type` and `sequence_number` included).
#[derive(Debug, Clone, PartialEq)]
pub struct ResponseEvent {
    /// The event's type, such as `response.output_text.delta`.
    pub kind: &'static str,
    /// The event's `sequence_number`, counted from 0 within the response.
    pub sequence_number: u64,
    /// The event's data.
    pub data: ResponseData,
}

/// The data of a [`ResponseEvent`]: typed for the event of every streamed delta, JSON for
/// the others.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseData {
    /// A `response.output_text.delta`: serialised straight from its fields, with no JSON
    /// map built per delta.
    TextDelta(OutputTextDelta),
    /// Any other event's JSON, `type` and `sequence_number` included.
    Json(Value),
}

/// The fields of a `response.output_text.delta` event (besides `type` and
/// `sequence_number`; `content_index` is always 0 and `logprobs` always empty).
#[derive(Debug, Clone, PartialEq)]
pub struct OutputTextDelta {
    /// The id of the `message` item the text is added to (shared by its item's deltas).
    pub item_id: Arc<str>,
    /// The item's index in the response's `output`.
    pub output_index: usize,
    /// The text added.
    pub delta: String,
}

/// `response.output_text.delta` on the wire: the fields in the order the JSON map of the
/// other events writes them (sorted), so the bytes are the same as a `json!` object's.
#[derive(Serialize)]
struct OutputTextDeltaWire<'a> {
    content_index: u8,
    delta: &'a str,
    item_id: &'a str,
    logprobs: [(); 0],
    output_index: usize,
    sequence_number: u64,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Serialize for ResponseEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.data {
            ResponseData::Json(value) => value.serialize(serializer),
            ResponseData::TextDelta(delta) => OutputTextDeltaWire {
                content_index: 0,
                delta: &delta.delta,
                item_id: &delta.item_id,
                logprobs: [],
                output_index: delta.output_index,
                sequence_number: self.sequence_number,
                kind: self.kind,
            }
            .serialize(serializer),
        }
    }
}

impl ResponseEvent {
    /// The event's data as JSON text (an SSE frame's `data:`), serialised once.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The event's data as a JSON value (to inspect it; [`to_json`](Self::to_json) writes
    /// it).
    pub fn to_value(&self) -> Value {
        match &self.data {
            ResponseData::Json(value) => value.clone(),
            ResponseData::TextDelta(_) => serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

/// The status of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    InProgress,
    Completed,
    Incomplete,
    Failed,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
        }
    }
}

/// A `message` item under way: one agent call's text.
#[derive(Debug)]
struct OpenItem {
    index: usize,
    id: Arc<str>,
    text: String,
}

/// One agent call: its reply so far, and its message item under way.
#[derive(Debug)]
struct Call {
    reply: ReplyProgress,
    item: Option<OpenItem>,
}

impl Call {
    fn new(pointer: Option<String>) -> Self {
        Self {
            reply: ReplyProgress::new(pointer),
            item: None,
        }
    }
}

/// The turn answering one request as an Open Responses response, one recorded event at a time
/// (see the module docs). Feed it the turn's events from the request's own (or from the
/// `user:input` that answers a queued request); it ignores what comes after the turn's end.
#[derive(Debug)]
pub struct ResponseStream {
    head: ResponseHead,
    next_sequence: u64,
    started: bool,
    status: Status,
    incomplete_reason: Option<String>,
    error: Option<Value>,
    created_at: i64,
    completed_at: Option<i64>,
    output: Vec<Value>,
    calls: HashMap<CallKey, Call>,
    usage: Tokens,
}

#[derive(Debug, Default)]
struct Tokens {
    seen: bool,
    input: u64,
    cached: u64,
    output: u64,
}

impl ResponseStream {
    /// A response with `head`, before any event.
    pub fn new(head: ResponseHead) -> Self {
        Self {
            head,
            next_sequence: 0,
            started: false,
            status: Status::InProgress,
            incomplete_reason: None,
            error: None,
            created_at: 0,
            completed_at: None,
            output: Vec::new(),
            calls: HashMap::new(),
            usage: Tokens::default(),
        }
    }

    /// Whether the response has ended (completed, incomplete or failed): later events are
    /// not its own.
    pub fn ended(&self) -> bool {
        self.status != Status::InProgress
    }

    /// The events `event` adds to the response.
    pub fn step(&mut self, event: &Envelope) -> Vec<ResponseEvent> {
        let mut out = Vec::new();
        if self.ended() {
            return out;
        }
        if !self.started {
            self.start(event.timestamp.timestamp(), &mut out);
        }
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            return out;
        };
        match builtin {
            Builtin::AgentStarted(started) => {
                let key = CallKey::new(started.agent, event.caused_by);
                if let Some(mut earlier) = self.calls.insert(key, Call::new(started.reply)) {
                    // A call run again after an interruption: what it showed stays shown.
                    self.close_item(&mut earlier, &mut out);
                }
            }
            Builtin::TextDelta(delta) => {
                let key = CallKey::new(delta.agent, event.caused_by);
                let mut call = self.calls.remove(&key).unwrap_or_else(|| Call::new(None));
                let (restarted, text) = call.reply.push(&delta.delta, delta.attempt);
                if restarted {
                    // A re-asked attempt: its text is a new item (a stream takes nothing back).
                    self.close_item(&mut call, &mut out);
                }
                if !text.is_empty() {
                    self.text(&mut call, event, &text, &mut out);
                }
                self.calls.insert(key, call);
            }
            Builtin::ToolCalled(called) => {
                // The model's text before a tool call is one response; what follows, another.
                let key = CallKey::new(called.agent.as_str(), event.caused_by);
                if let Some(call) = self.calls.get_mut(&key) {
                    call.reply.next_response();
                }
                if called.client {
                    // The client runs it: a `function_call` item, after the text before it.
                    if let Some(mut call) = self.calls.remove(&key) {
                        self.close_item(&mut call, &mut out);
                        self.calls.insert(key, call);
                    }
                    self.function_call(event, &called, &mut out);
                }
            }
            Builtin::AgentCompleted(completed) => {
                self.usage.seen = true;
                let usage = &completed.usage;
                self.usage.input +=
                    usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens;
                self.usage.cached += usage.cache_read_tokens;
                self.usage.output += usage.output_tokens;
                let key = CallKey::new(completed.agent.as_str(), event.caused_by);
                let mut call = self.calls.remove(&key).unwrap_or_else(|| Call::new(None));
                if completed.outcome == Outcome::Success
                    && let Some(rest) = completed.output.as_ref().and_then(|o| call.reply.rest(o))
                {
                    self.text(&mut call, event, &rest, &mut out);
                }
                self.close_item(&mut call, &mut out);
            }
            Builtin::InputRequested(request) => {
                let mut asked = Call::new(None);
                self.text(&mut asked, event, &request.prompt, &mut out);
                self.close_item(&mut asked, &mut out);
            }
            Builtin::WorkflowCompleted(completed) => {
                let reason = completed.reason;
                let cut_short = matches!(
                    reason.as_str(),
                    "cancelled" | "interrupted" | "rolled_back" | "max_events" | "deadline"
                );
                // What a stopped turn was saying stays, as an item cut short.
                self.close_all(if cut_short { "incomplete" } else { "completed" }, &mut out);
                self.completed_at = Some(event.timestamp.timestamp());
                if cut_short {
                    self.status = Status::Incomplete;
                    self.incomplete_reason = Some(reason);
                    self.emit("response.incomplete", self.wrapped(), &mut out);
                } else {
                    self.status = Status::Completed;
                    self.emit("response.completed", self.wrapped(), &mut out);
                }
            }
            _ => {}
        }
        out
    }

    /// The events of a turn that failed before it could end (`error`, then
    /// `response.failed`): `code` and `message` say why.
    pub fn fail(&mut self, code: &str, message: &str) -> Vec<ResponseEvent> {
        let mut out = Vec::new();
        if self.ended() {
            return out;
        }
        if !self.started {
            self.start(0, &mut out);
        }
        self.close_all("incomplete", &mut out);
        self.status = Status::Failed;
        self.error = Some(json!({ "code": code, "message": message }));
        let error = json!({ "code": code, "message": message, "param": null });
        self.emit("error", error, &mut out);
        self.emit("response.failed", self.wrapped(), &mut out);
        out
    }

    /// The response resource as the events so far describe it (`in_progress` until the turn
    /// ends), with every field the specification requires.
    pub fn resource(&self) -> Value {
        let usage = self.usage.seen.then(|| {
            json!({
                "input_tokens": self.usage.input,
                "input_tokens_details": { "cached_tokens": self.usage.cached },
                "output_tokens": self.usage.output,
                "output_tokens_details": { "reasoning_tokens": 0 },
                "total_tokens": self.usage.input + self.usage.output,
            })
        });
        // Items under way show their text so far.
        let mut output = self.output.clone();
        for item in self.calls.values().filter_map(|call| call.item.as_ref()) {
            if let Some(slot) = output.get_mut(item.index) {
                slot["content"] = json!([output_text(&item.text)]);
            }
        }
        let head = &self.head;
        json!({
            "id": head.id,
            "object": "response",
            "created_at": self.created_at,
            "completed_at": self.completed_at,
            "status": self.status.as_str(),
            "incomplete_details": self.incomplete_reason.as_ref().map(|reason| json!({ "reason": reason })),
            "model": head.model,
            "previous_response_id": head.previous_response_id,
            "instructions": head.instructions,
            "output": output,
            "error": self.error,
            "tools": head.tools,
            "tool_choice": "auto",
            "truncation": "disabled",
            "parallel_tool_calls": true,
            "text": { "format": { "type": "text" } },
            "top_p": 1.0,
            "presence_penalty": 0.0,
            "frequency_penalty": 0.0,
            "top_logprobs": 0,
            "temperature": 1.0,
            "reasoning": null,
            "user": null,
            "usage": usage,
            "max_output_tokens": null,
            "max_tool_calls": null,
            "store": head.store,
            "background": head.background,
            "service_tier": "default",
            "metadata": head.metadata,
            "safety_identifier": null,
            "prompt_cache_key": null,
            "conversation": { "id": head.conversation },
        })
    }

    fn start(&mut self, created_at: i64, out: &mut Vec<ResponseEvent>) {
        self.started = true;
        self.created_at = created_at;
        self.emit("response.created", self.wrapped(), out);
        self.emit("response.in_progress", self.wrapped(), out);
    }

    /// `{"response": <the resource>}`, the data of the lifecycle events.
    fn wrapped(&self) -> Value {
        json!({ "response": self.resource() })
    }

    fn emit(&mut self, kind: &'static str, mut data: Value, out: &mut Vec<ResponseEvent>) {
        if let Value::Object(fields) = &mut data {
            fields.insert("type".to_owned(), Value::from(kind));
            fields.insert(
                "sequence_number".to_owned(),
                Value::from(self.next_sequence),
            );
        }
        out.push(ResponseEvent {
            kind,
            sequence_number: self.next_sequence,
            data: ResponseData::Json(data),
        });
        self.next_sequence += 1;
    }

    /// Adds `text` to `call`'s message item, opening the item (named after `event`) first.
    fn text(
        &mut self,
        call: &mut Call,
        event: &Envelope,
        text: &str,
        out: &mut Vec<ResponseEvent>,
    ) {
        let item = match &mut call.item {
            Some(item) => item,
            None => {
                let index = self.output.len();
                let id = format!("msg_{}", event.id);
                let added = json!({ "type": "message", "id": id, "status": "in_progress",
                    "role": "assistant", "content": [] });
                self.output.push(added.clone());
                self.emit(
                    "response.output_item.added",
                    json!({ "output_index": index, "item": added }),
                    out,
                );
                self.emit(
                    "response.content_part.added",
                    json!({ "item_id": id, "output_index": index, "content_index": 0,
                        "part": output_text("") }),
                    out,
                );
                call.item.insert(OpenItem {
                    index,
                    id: id.into(),
                    text: String::new(),
                })
            }
        };
        item.text.push_str(text);
        out.push(ResponseEvent {
            kind: "response.output_text.delta",
            sequence_number: self.next_sequence,
            data: ResponseData::TextDelta(OutputTextDelta {
                item_id: Arc::clone(&item.id),
                output_index: item.index,
                delta: text.to_owned(),
            }),
        });
        self.next_sequence += 1;
    }

    /// A `function_call` item for a call of a client's tool (named after its `tool:called`
    /// event), added and done at once: its arguments are whole when recorded.
    fn function_call(
        &mut self,
        event: &Envelope,
        called: &openharness_core::builtin::ToolCalled,
        out: &mut Vec<ResponseEvent>,
    ) {
        let index = self.output.len();
        let id = format!("fc_{}", event.id);
        let arguments = called.input.to_string();
        let item = |status: &str, arguments: &str| {
            json!({ "type": "function_call", "id": id, "call_id": called.tool_call_id,
                "name": called.tool, "arguments": arguments, "status": status })
        };
        self.output.push(item("completed", &arguments));
        self.emit(
            "response.output_item.added",
            json!({ "output_index": index, "item": item("in_progress", "") }),
            out,
        );
        self.emit(
            "response.function_call_arguments.delta",
            json!({ "item_id": id, "output_index": index, "delta": arguments }),
            out,
        );
        self.emit(
            "response.function_call_arguments.done",
            json!({ "item_id": id, "output_index": index, "name": called.tool,
                "arguments": arguments }),
            out,
        );
        self.emit(
            "response.output_item.done",
            json!({ "output_index": index, "item": item("completed", &arguments) }),
            out,
        );
    }

    /// Ends `call`'s message item, if one is open.
    fn close_item(&mut self, call: &mut Call, out: &mut Vec<ResponseEvent>) {
        self.close_item_as(call, "completed", out);
    }

    /// Ends `call`'s message item, if one is open, with the item status `status`.
    fn close_item_as(&mut self, call: &mut Call, status: &str, out: &mut Vec<ResponseEvent>) {
        let Some(OpenItem { index, id, text }) = call.item.take() else {
            return;
        };
        let id: &str = &id;
        self.emit(
            "response.output_text.done",
            json!({ "item_id": id, "output_index": index, "content_index": 0, "text": text,
                "logprobs": [] }),
            out,
        );
        self.emit(
            "response.content_part.done",
            json!({ "item_id": id, "output_index": index, "content_index": 0,
                "part": output_text(&text) }),
            out,
        );
        let item = json!({ "type": "message", "id": id, "status": status,
            "role": "assistant", "content": [output_text(&text)] });
        if let Some(slot) = self.output.get_mut(index) {
            *slot = item.clone();
        }
        self.emit(
            "response.output_item.done",
            json!({ "output_index": index, "item": item }),
            out,
        );
    }

    /// Ends every item still open (the turn ended, or failed), as `status`.
    fn close_all(&mut self, status: &str, out: &mut Vec<ResponseEvent>) {
        let mut calls: Vec<Call> = std::mem::take(&mut self.calls).into_values().collect();
        calls.sort_by_key(|call| call.item.as_ref().map_or(usize::MAX, |item| item.index));
        for mut call in calls {
            self.close_item_as(&mut call, status, out);
        }
    }
}

/// An `output_text` content part.
fn output_text(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

#[cfg(test)]
mod tests;
