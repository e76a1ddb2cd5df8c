//! The AI SDK UI message stream of a session's turns, and the chat's stored messages built
//! from that same stream, so that what a client streamed and what it reloads are equal.
//!
//! [`UiStream`] turns recorded events, one at a time, into the chunks `useChat` reads: per turn
//! `start` (with the assistant message's id), per agent call `start-step`, the reply as
//! `text-start`/`text-delta`/`text-end`, tool calls as `tool-input-start`/
//! `tool-input-available` and `tool-output-available`/`tool-output-error`, the structured
//! output as a `data-output` part, `finish-step`; `error` for `error:occurred`;
//! `data-input-requested` for a request to a person; `finish` at the turn's end. Only fields of
//! the AI SDK 5.0.0 chunk set are used (its schemas are strict).
//!
//! The reply is text, never JSON: each agent call's `text:delta`s go through a
//! [`ReplyDecoder`] for the reply pointer its `agent:started` recorded, so a model streaming
//! `{"reply": "Hi\n…"}` streams `Hi`, a newline, `…`. When the call ends, whatever of the
//! reply was not streamed (all of it, for a model that streams nothing) is sent before the
//! step ends.
//!
//! [`ui_messages`] replays a whole log through [`UiStream`] and builds the `UIMessage`s the AI
//! SDK builds from those chunks: a user message per `user:input` (or `input:received`), with
//! the id the client gave it (`messageId` in the event's payload) or `msg-<event id>`, and an
//! assistant message per turn with `step-start` parts, under the `start` chunk's id.

use std::collections::HashMap;

use openharness_core::Envelope;
use openharness_core::builtin::{Builtin, Outcome};
use serde_json::{Value, json};

use crate::message::{Role, TextState, ToolState};
use crate::reply::{ReplyDecoder, reply_text};
use crate::ui::{UiMessage, UiPart};

/// The payload field of `user:input` / `input:received` holding the client's message id.
pub const MESSAGE_ID_FIELD: &str = "messageId";

/// The payload field of a `user:input` that regenerates an answer: the id of the assistant
/// message it replaces in the chat view (or `true` when the client named none: the answers
/// after the question asked again are replaced). The log keeps both.
pub const REGENERATES_FIELD: &str = "regenerates";

/// Turns a session's recorded events into UI message stream chunks, one event at a time
/// (see the module docs). One value follows one turn, or a whole log turn after turn.
///
/// ```
/// use openharness_core::Envelope;
/// use openharness_core::builtin::{AgentCompleted, AgentStarted, Outcome, TextDelta, WorkflowCompleted};
/// use openharness_projection::UiStream;
/// use serde_json::json;
/// let started = Envelope::typed(&AgentStarted { agent: "assistant".into(),
///     reply: Some("/reply".into()), ..AgentStarted::default() }, None).unwrap();
/// let delta = |text: &str| Envelope::typed(&TextDelta { agent: "assistant".into(),
///     delta: text.into(), attempt: 1 }, None).unwrap();
/// let completed = Envelope::typed(&AgentCompleted { agent: "assistant".into(),
///     outcome: Outcome::Success, usage: Default::default(), cost: None, error: None,
///     output: Some(json!({ "reply": "Hi\nthere" })) }, None).unwrap();
/// let mut stream = UiStream::new();
/// let mut text = String::new();
/// for event in [started, delta("{\"reply\": \"Hi\\n"), delta("there\"}"), completed] {
///     let (chunks, _) = stream.chunks(&event);
///     for chunk in chunks.iter().filter(|c| c["type"] == "text-delta") {
///         text.push_str(chunk["delta"].as_str().unwrap());
///     }
/// }
/// assert_eq!(text, "Hi\nthere");
/// ```
#[derive(Debug, Default)]
pub struct UiStream {
    /// The assistant message of the turn under way, once `start` was sent.
    message_id: Option<String>,
    in_step: bool,
    open_text: Option<String>,
    /// Tool calls whose input was sent, so their results can be.
    tools: std::collections::HashSet<String>,
    /// The reply text of each agent's call under way.
    calls: HashMap<String, CallText>,
}

/// What one agent call has streamed of its reply.
#[derive(Debug)]
struct CallText {
    pointer: Option<String>,
    decoder: ReplyDecoder,
    attempt: u32,
    /// The reply characters the current model response streamed.
    streamed: String,
}

impl CallText {
    fn new(pointer: Option<String>) -> Self {
        Self {
            decoder: ReplyDecoder::new(pointer.as_deref()),
            pointer,
            attempt: 1,
            streamed: String::new(),
        }
    }

    /// A new model response (after tool calls, or a re-asked attempt).
    fn next_response(&mut self) {
        self.decoder.reset();
        self.streamed.clear();
    }
}

impl UiStream {
    /// A stream before any event.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of the assistant message the turn under way streams into, once it started.
    pub fn message_id(&self) -> Option<&str> {
        self.message_id.as_deref()
    }

    /// The chunks `event` adds, and whether it ended a turn (`finish` was sent; the next
    /// event starts a new assistant message).
    pub fn chunks(&mut self, event: &Envelope) -> (Vec<Value>, bool) {
        let mut out = Vec::new();
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            return (out, false);
        };
        if self.message_id.is_none()
            && !matches!(
                builtin,
                Builtin::UserInput(_)
                    | Builtin::WorkflowStarted(_)
                    | Builtin::InputReceived(_)
                    | Builtin::SessionForked(_)
            )
        {
            self.start(event, &mut out);
        }
        match builtin {
            Builtin::AgentStarted(started) => {
                self.close_step(&mut out);
                self.in_step = true;
                out.push(json!({ "type": "start-step" }));
                self.calls
                    .insert(started.agent, CallText::new(started.reply));
            }
            Builtin::TextDelta(delta) => {
                let call = self
                    .calls
                    .entry(delta.agent)
                    .or_insert_with(|| CallText::new(None));
                if delta.attempt > call.attempt {
                    call.attempt = delta.attempt;
                    call.next_response();
                }
                let text = call.decoder.push(&delta.delta);
                call.streamed.push_str(&text);
                self.text(event, text, &mut out);
            }
            Builtin::ToolCalled(call) => {
                self.ensure_step(&mut out);
                self.close_text(&mut out);
                if let Some(text) = self.calls.get_mut(&call.agent) {
                    text.next_response();
                }
                self.tools.insert(call.tool_call_id.clone());
                out.push(json!({ "type": "tool-input-start", "toolCallId": call.tool_call_id, "toolName": call.tool }));
                out.push(json!({ "type": "tool-input-available", "toolCallId": call.tool_call_id, "toolName": call.tool, "input": call.input }));
            }
            Builtin::ToolResult(result) if self.tools.contains(&result.tool_call_id) => {
                if result.is_error {
                    let error = match &result.output {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    out.push(json!({ "type": "tool-output-error", "toolCallId": result.tool_call_id, "errorText": error }));
                } else {
                    out.push(json!({ "type": "tool-output-available", "toolCallId": result.tool_call_id, "output": result.output }));
                }
            }
            Builtin::AgentCompleted(completed) => {
                self.ensure_step(&mut out);
                let call = self.calls.remove(&completed.agent);
                if completed.outcome == Outcome::Success
                    && let Some(output) = &completed.output
                {
                    let pointer = call.as_ref().and_then(|call| call.pointer.as_deref());
                    let streamed = call.as_ref().map_or("", |call| call.streamed.as_str());
                    let reply = reply_text(output, pointer);
                    // What the stream has not shown yet: all of it, or the rest of it.
                    if let Some(rest) = reply
                        .as_deref()
                        .and_then(|reply| reply.strip_prefix(streamed))
                    {
                        self.text(event, rest.to_owned(), &mut out);
                    }
                }
                self.close_text(&mut out);
                if let Some(output) = completed.output {
                    out.push(json!({ "type": "data-output", "data": { "agent": completed.agent, "output": output } }));
                }
                self.close_step(&mut out);
            }
            Builtin::ErrorOccurred(error) => {
                out.push(json!({ "type": "error", "errorText": error.message }));
            }
            Builtin::InputRequested(request) => {
                out.push(json!({ "type": "data-input-requested", "data": { "requestId": event.id, "prompt": request.prompt } }));
            }
            Builtin::WorkflowCompleted(_) => {
                if self.message_id.is_none() {
                    self.start(event, &mut out);
                }
                self.close_step(&mut out);
                out.push(json!({ "type": "finish" }));
                self.message_id = None;
                self.calls.clear();
                self.tools.clear();
                return (out, true);
            }
            _ => {}
        }
        (out, false)
    }

    fn start(&mut self, event: &Envelope, out: &mut Vec<Value>) {
        let id = format!("msg-{}", event.id);
        out.push(json!({ "type": "start", "messageId": id }));
        self.message_id = Some(id);
    }

    /// Streams `text` (if any) into the open text part, opening one first.
    fn text(&mut self, event: &Envelope, text: String, out: &mut Vec<Value>) {
        if text.is_empty() {
            return;
        }
        self.ensure_step(out);
        let id = match &self.open_text {
            Some(id) => id.clone(),
            None => {
                let id = format!("text-{}", event.id);
                out.push(json!({ "type": "text-start", "id": id }));
                self.open_text = Some(id.clone());
                id
            }
        };
        out.push(json!({ "type": "text-delta", "id": id, "delta": text }));
    }

    fn ensure_step(&mut self, out: &mut Vec<Value>) {
        if !self.in_step {
            self.in_step = true;
            out.push(json!({ "type": "start-step" }));
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.open_text.take() {
            out.push(json!({ "type": "text-end", "id": id }));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        if std::mem::take(&mut self.in_step) {
            out.push(json!({ "type": "finish-step" }));
        }
    }
}

/// The chat of a session as AI SDK `UIMessage`s, built from the same chunks
/// [`UiStream`] streams (so a reloaded chat equals the streamed one, ids included): a user
/// message per `user:input` and `input:received` (id: the payload's `messageId`, else
/// `msg-<event id>`), an assistant message per turn. A `user:input` marked `regenerates`
/// asks its question again: what followed the question in this view is replaced by the new
/// answer.
///
/// ```
/// use openharness_core::Envelope;
/// use openharness_core::builtin::{UserInput, WorkflowCompleted};
/// use openharness_projection::ui_messages;
/// let mut input = Envelope::typed(&UserInput { text: "Hi".into() }, None).unwrap();
/// input.payload["messageId"] = "client-1".into();
/// let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(),
///     open_requests: vec![], errors: 0 }, None).unwrap();
/// let chat = serde_json::to_value(ui_messages(&[input, done.clone()])).unwrap();
/// assert_eq!(chat[0]["id"], "client-1");
/// assert_eq!(chat[1]["id"], format!("msg-{}", done.id));
/// ```
pub fn ui_messages(events: &[Envelope]) -> Vec<UiMessage> {
    let mut builder = UiChatBuilder::default();
    for event in events {
        builder.apply(event);
    }
    builder.messages
}

/// Builds `UIMessage`s from events, as the AI SDK builds them from chunks.
#[derive(Debug, Default)]
struct UiChatBuilder {
    stream: UiStream,
    messages: Vec<UiMessage>,
    /// The assistant message the turn under way streams into.
    current: Option<usize>,
}

impl UiChatBuilder {
    fn apply(&mut self, event: &Envelope) {
        match Builtin::decode(event) {
            Some(Ok(Builtin::UserInput(input))) => self.user(event, input.text),
            Some(Ok(Builtin::InputReceived(received))) => self.user(event, received.text),
            _ => {}
        }
        let (chunks, _) = self.stream.chunks(event);
        for chunk in chunks {
            self.chunk(&chunk);
        }
    }

    fn user(&mut self, event: &Envelope, text: String) {
        let id = event.payload[MESSAGE_ID_FIELD]
            .as_str()
            .map_or_else(|| format!("msg-{}", event.id), str::to_owned);
        let regenerates = &event.payload[REGENERATES_FIELD];
        if !regenerates.is_null() {
            // The answers after the question being asked again leave the view (or, when the
            // question is not in the view, the message named and what follows it).
            let question = self.messages.iter().rposition(|m| m.id == id);
            let named = regenerates
                .as_str()
                .and_then(|named| self.messages.iter().position(|m| m.id == named));
            match (question, named) {
                (Some(question), _) => {
                    self.messages.truncate(question + 1);
                    return; // the question is already there
                }
                (None, Some(named)) => self.messages.truncate(named),
                (None, None) => {}
            }
        }
        self.messages.push(UiMessage {
            id,
            role: Role::User,
            metadata: None,
            parts: vec![UiPart::Text { text, state: None }],
        });
    }

    fn chunk(&mut self, chunk: &Value) {
        let kind = chunk["type"].as_str().unwrap_or_default();
        if kind == "start" {
            self.messages.push(UiMessage {
                id: chunk["messageId"].as_str().unwrap_or_default().to_owned(),
                role: Role::Assistant,
                metadata: None,
                parts: Vec::new(),
            });
            self.current = Some(self.messages.len() - 1);
            return;
        }
        let Some(message) = self.current.and_then(|i| self.messages.get_mut(i)) else {
            return;
        };
        let parts = &mut message.parts;
        let call_id = chunk["toolCallId"].as_str().unwrap_or_default();
        match kind {
            "start-step" => parts.push(UiPart::StepStart),
            "text-start" => parts.push(UiPart::Text {
                text: String::new(),
                state: Some(TextState::Streaming),
            }),
            "text-delta" => {
                if let Some(UiPart::Text { text, .. }) = parts
                    .iter_mut()
                    .rev()
                    .find(|p| matches!(p, UiPart::Text { .. }))
                {
                    text.push_str(chunk["delta"].as_str().unwrap_or_default());
                }
            }
            "text-end" => {
                if let Some(UiPart::Text { state, .. }) = parts
                    .iter_mut()
                    .rev()
                    .find(|p| matches!(p, UiPart::Text { .. }))
                {
                    *state = Some(TextState::Done);
                }
            }
            "tool-input-start" => parts.push(UiPart::Tool {
                tool_name: chunk["toolName"].as_str().unwrap_or_default().to_owned(),
                tool_call_id: call_id.to_owned(),
                // `input-streaming` in the SDK until the next chunk, which the same event sends
                state: ToolState::InputAvailable,
                input: Value::Null,
                output: None,
                error_text: None,
            }),
            "tool-input-available" => {
                if let Some(UiPart::Tool { state, input, .. }) = tool_part(parts, call_id) {
                    *state = ToolState::InputAvailable;
                    *input = chunk["input"].clone();
                }
            }
            "tool-output-available" => {
                if let Some(UiPart::Tool { state, output, .. }) = tool_part(parts, call_id) {
                    *state = ToolState::OutputAvailable;
                    *output = Some(chunk["output"].clone());
                }
            }
            "tool-output-error" => {
                if let Some(UiPart::Tool {
                    state, error_text, ..
                }) = tool_part(parts, call_id)
                {
                    *state = ToolState::OutputError;
                    *error_text = Some(chunk["errorText"].as_str().unwrap_or_default().to_owned());
                }
            }
            data if data.starts_with("data-") => parts.push(UiPart::Data {
                name: data["data-".len()..].to_owned(),
                data: chunk["data"].clone(),
            }),
            "finish" => self.current = None,
            _ => {}
        }
    }
}

/// The tool part of call `call_id`, the latest if there are several.
fn tool_part<'a>(parts: &'a mut [UiPart], call_id: &str) -> Option<&'a mut UiPart> {
    parts
        .iter_mut()
        .rev()
        .find(|part| matches!(part, UiPart::Tool { tool_call_id, .. } if tool_call_id == call_id))
}
