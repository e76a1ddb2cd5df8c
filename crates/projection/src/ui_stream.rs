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
//! **Approvals** (requests made with `InputRequested::approval`) are shown the same way unless
//! the stream is made with [`Approvals::Tool`], for clients that understand the AI SDK 6 tool
//! approvals (an AI SDK 5 client fails on their chunks): each approval a turn asked becomes, in
//! the last step of the turn's message, a dynamic tool call named [`APPROVAL_TOOL`] with the
//! input `{prompt}` and the id [`approval_tool_call_id`], followed by `tool-approval-request`
//! whose `approvalId` is the request's id. An answer given as a decision (an `input:received`
//! with [`APPROVED_FIELD`] in its payload) continues that message instead of opening a new
//! one: `start` without a `messageId`, then `tool-output-available` (output `{answer}`) when
//! approved or `tool-output-denied` when denied, then the turn as usual.
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
//! [`ui_messages_with`] does the same for a chat with [`Approvals::Tool`]: there an answer
//! given as a decision adds no user message; its request's part ends `output-available` (with
//! `approval: {id, approved: true, reason?}`) or `output-denied`, as the AI SDK leaves it, and
//! a request answered with text instead ends `output-available` with the text as its answer.

use std::collections::HashMap;
use std::sync::Arc;

use openharness_core::adapter::CallKey;
use openharness_core::builtin::{Builtin, InputReceived, Outcome};
use openharness_core::{Envelope, Event, EventId};
use serde::Serialize;
use serde_json::{Value, json};

use crate::message::{Role, TextState, ToolState};
use crate::reply::ReplyProgress;
use crate::ui::{ToolApproval, UiMessage, UiPart, UiToolCall};

mod messages;

pub use messages::{ui_messages, ui_messages_with};

/// The payload field of `user:input` / `input:received` holding the client's message id.
pub const MESSAGE_ID_FIELD: &str = "messageId";

/// The payload field of a `user:input` that regenerates an answer: the id of the assistant
/// message it replaces in the chat view (or `true` when the client named none: the answers
/// after the question asked again are replaced). The log keeps both.
pub const REGENERATES_FIELD: &str = "regenerates";

/// The payload field of an `input:received` given as a decision on an approval (the AI SDK's
/// `addToolApprovalResponse`): `true` when approved, `false` when denied. Its text is then
/// [`approval_text`] of it.
pub const APPROVED_FIELD: &str = "approved";

/// The payload field of an `input:received` given as a decision on an approval holding the
/// reason the person gave, if any.
pub const REASON_FIELD: &str = "reason";

/// The tool name of an approval request shown as a tool call ([`Approvals::Tool`]).
pub const APPROVAL_TOOL: &str = "approval";

/// The tool call id of the approval request `request` (an `input:requested` event's id) when
/// shown as a tool call: `approval-<request>`, the same in every stream and every reload.
///
/// ```
/// use openharness_core::EventId;
/// use openharness_projection::approval_tool_call_id;
/// let request: EventId = "0190f5d2-8c2a-7a00-8000-000000000001".parse().unwrap();
/// assert_eq!(approval_tool_call_id(&request), "approval-0190f5d2-8c2a-7a00-8000-000000000001");
/// ```
pub fn approval_tool_call_id(request: &EventId) -> String {
    format!("{APPROVAL_TOOL}-{request}")
}

/// The text an approval decision is recorded with: `yes` when approved, `no` when denied.
///
/// ```
/// assert_eq!(openharness_projection::approval_text(true), "yes");
/// assert_eq!(openharness_projection::approval_text(false), "no");
/// ```
pub fn approval_text(approved: bool) -> &'static str {
    if approved { "yes" } else { "no" }
}

/// How a chat shows a workflow's approval requests (`InputRequested::approval`).
///
/// ```
/// use openharness_projection::Approvals;
/// assert_eq!("tool".parse::<Approvals>(), Ok(Approvals::Tool));
/// assert_eq!(Approvals::default(), Approvals::Data);
/// assert!("tools".parse::<Approvals>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Approvals {
    /// As every request to a person: a `data-input-requested` part `{requestId, prompt}`,
    /// answered by a user message. Every AI SDK 5+ client reads it.
    #[default]
    Data,
    /// As the AI SDK 6+'s tool approvals (see the module docs), answered with
    /// `addToolApprovalResponse` (or a user message). Only for clients that said they
    /// understand them: an AI SDK 5 client fails on these chunks.
    Tool,
}

impl Approvals {
    /// The name a client uses for this (`data`, `tool`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::Tool => "tool",
        }
    }
}

impl std::fmt::Display for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Approvals {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "data" => Ok(Self::Data),
            "tool" => Ok(Self::Tool),
            other => Err(format!("approvals `{other}` is not one of `data`, `tool`")),
        }
    }
}

/// The decision an `input:received` records, when it was given as one: `Some(approved)` for
/// an answer with [`APPROVED_FIELD`] in its payload, `None` for a typed answer (and every other
/// event).
fn decision(event: &Envelope) -> Option<bool> {
    (event.name == InputReceived::NAME)
        .then(|| event.payload[APPROVED_FIELD].as_bool())
        .flatten()
}

/// Whether a chat's assistant message can start at `event`: a chat replayed from here (through
/// [`UiStream`] with `approvals`) gives whole messages. A turn's first event opens one, except
/// an approval's decision in a chat with [`Approvals::Tool`], which continues its request's.
///
/// ```
/// use openharness_core::{Envelope, EventId};
/// use openharness_core::builtin::{InputReceived, UserInput};
/// use openharness_projection::{APPROVED_FIELD, Approvals, opens_message};
/// let input = Envelope::typed(&UserInput::new("go"), None).unwrap();
/// let request = EventId::new();
/// let mut decided = Envelope::typed(&InputReceived::new(request, "yes"), Some(request)).unwrap();
/// decided.payload[APPROVED_FIELD] = true.into();
/// assert!(opens_message(&input, Approvals::Tool));
/// assert!(opens_message(&decided, Approvals::Data));
/// assert!(!opens_message(&decided, Approvals::Tool));
/// ```
pub fn opens_message(event: &Envelope, approvals: Approvals) -> bool {
    match Builtin::decode(event) {
        Some(Ok(
            Builtin::UserInput(_) | Builtin::WorkflowStarted(_) | Builtin::SessionForked(_),
        )) => true,
        Some(Ok(Builtin::InputReceived(_))) => {
            approvals != Approvals::Tool || decision(event).is_none()
        }
        _ => false,
    }
}

/// One chunk of the UI message stream: typed for `text-delta` (the chunk of every streamed
/// delta), JSON for the others. It serialises as the chunk's JSON ([`UiChunk::to_value`]
/// gives it as a value).
#[derive(Debug, Clone, PartialEq)]
pub enum UiChunk {
    /// `{"type": "text-delta", "id", "delta"}`: serialised straight from its fields, with no
    /// JSON map built per delta.
    TextDelta(UiTextDelta),
    /// Any other chunk's JSON, `type` included.
    Json(Value),
}

/// The fields of a `text-delta` chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct UiTextDelta {
    /// The id of the text part the text is added to (shared by its part's chunks).
    pub id: Arc<str>,
    /// The text added.
    pub delta: String,
}

/// `text-delta` on the wire: the fields in the order a JSON map writes them (sorted), so the
/// bytes are the same as a `json!` object's.
#[derive(Serialize)]
struct UiTextDeltaWire<'a> {
    delta: &'a str,
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Serialize for UiChunk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Json(value) => value.serialize(serializer),
            Self::TextDelta(text) => UiTextDeltaWire {
                delta: &text.delta,
                id: &text.id,
                kind: "text-delta",
            }
            .serialize(serializer),
        }
    }
}

impl UiChunk {
    /// The chunk as a JSON value (to inspect it; serialising it writes it directly).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Json(value) => value.clone(),
            Self::TextDelta(_) => serde_json::to_value(self).unwrap_or_default(),
        }
    }
}

impl From<Value> for UiChunk {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

/// The chunks an event makes, in order.
#[derive(Debug, Default)]
struct Chunks(Vec<UiChunk>);

impl Chunks {
    fn push(&mut self, chunk: impl Into<UiChunk>) {
        self.0.push(chunk.into());
    }
}

/// Turns a session's recorded events into UI message stream chunks, one event at a time
/// (see the module docs). One value follows one turn, or a whole log turn after turn.
///
/// ```
/// use openharness_core::{Envelope, EventId};
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
///     for chunk in chunks.iter().map(|c| c.to_value()).filter(|c| c["type"] == "text-delta") {
///         text.push_str(chunk["delta"].as_str().unwrap());
///     }
/// }
/// assert_eq!(text, "Hi\nthere");
/// ```
#[derive(Debug, Default)]
pub struct UiStream {
    /// How approval requests are shown.
    approvals: Approvals,
    /// Whether a turn's message is under way (`start` was sent).
    in_message: bool,
    /// The approvals the turn under way asked (request id, prompt), shown at its end
    /// ([`Approvals::Tool`]).
    asked: Vec<(EventId, String)>,
    in_step: bool,
    /// Tool calls whose input was sent, so their results can be.
    tools: std::collections::HashSet<String>,
    /// The agent calls under way, by agent and trigger (several run at once).
    calls: HashMap<CallKey, CallText>,
}

/// What one agent call has streamed of its reply, and its open text part.
#[derive(Debug)]
struct CallText {
    reply: ReplyProgress,
    /// The call's open text part, if one is open.
    open_text: Option<Arc<str>>,
}

impl CallText {
    fn new(pointer: Option<String>) -> Self {
        Self {
            reply: ReplyProgress::new(pointer),
            open_text: None,
        }
    }

    /// A new model response (after tool calls): its text is a new part.
    fn next_response(&mut self, out: &mut Chunks) {
        self.reply.next_response();
        self.close_text(out);
    }

    fn close_text(&mut self, out: &mut Chunks) {
        if let Some(id) = self.open_text.take() {
            out.push(json!({ "type": "text-end", "id": &*id }));
        }
    }

    /// The id of the call's open text part, opening one (named after `event`) first.
    fn open_text(&mut self, event: &Envelope, out: &mut Chunks) -> Arc<str> {
        let id = self.open_text.get_or_insert_with(|| {
            let id = format!("text-{}", event.id);
            out.push(json!({ "type": "text-start", "id": id }));
            id.into()
        });
        Arc::clone(id)
    }
}

impl UiStream {
    /// A stream before any event, showing approval requests as `data-input-requested` parts.
    pub fn new() -> Self {
        Self::default()
    }

    /// A stream before any event, showing approval requests as `approvals` says.
    ///
    /// ```
    /// use openharness_core::Envelope;
    /// use openharness_core::builtin::{InputRequested, WorkflowCompleted};
    /// use openharness_projection::{Approvals, UiStream};
    /// let asked = Envelope::typed(&InputRequested::approval("Publish?"), None).unwrap();
    /// let done = Envelope::typed(&WorkflowCompleted { reason: "waiting_for_input".into(),
    ///     open_requests: vec![asked.id], errors: 0, queued: vec![] }, None).unwrap();
    /// let kinds = |approvals| {
    ///     let mut stream = UiStream::with_approvals(approvals);
    ///     [&asked, &done].into_iter()
    ///         .flat_map(|event| stream.chunks(event).0)
    ///         .map(|chunk| chunk.to_value()["type"].as_str().unwrap().to_owned())
    ///         .collect::<Vec<_>>()
    /// };
    /// assert_eq!(kinds(Approvals::Data), ["start", "data-input-requested", "finish"]);
    /// assert_eq!(kinds(Approvals::Tool), ["start", "start-step", "tool-input-start",
    ///     "tool-input-available", "tool-approval-request", "finish-step", "finish"]);
    /// ```
    pub fn with_approvals(approvals: Approvals) -> Self {
        Self {
            approvals,
            ..Self::default()
        }
    }

    /// The chunks `event` adds, and whether it ended a turn (`finish` was sent; the next
    /// event starts a new assistant message).
    ///
    /// Agent calls that run at once share a step: each streams into a text part of its own,
    /// and the step ends when none is left under way. A re-asked attempt's text starts a new
    /// part (a stream cannot take back what the rejected attempt showed).
    pub fn chunks(&mut self, event: &Envelope) -> (Vec<UiChunk>, bool) {
        let mut out = Chunks::default();
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            return (out.0, false);
        };
        let opens_turn = matches!(
            builtin,
            Builtin::UserInput(_)
                | Builtin::WorkflowStarted(_)
                | Builtin::InputReceived(_)
                | Builtin::SessionForked(_)
        );
        // An approval's decision continues the message that asked it (a new turn, same message).
        let decided = decision(event).filter(|_| self.approvals == Approvals::Tool);
        if opens_turn && self.in_message {
            // The turn before ended without `workflow:completed` (a crash, a store failure):
            // its message ends here, as its live stream did.
            self.end_turn(&mut out);
        }
        if !self.in_message && (!opens_turn || decided.is_some()) {
            self.start(event, decided.is_some(), &mut out);
        }
        match builtin {
            Builtin::AgentStarted(started) => {
                self.ensure_step(&mut out);
                let key = CallKey::new(started.agent, event.caused_by);
                if let Some(mut earlier) = self.calls.insert(key, CallText::new(started.reply)) {
                    earlier.close_text(&mut out); // a call run again after an interruption
                }
            }
            Builtin::TextDelta(delta) => {
                let call = self
                    .calls
                    .entry(CallKey::new(delta.agent, event.caused_by))
                    .or_insert_with(|| CallText::new(None));
                let (restarted, text) = call.reply.push(&delta.delta, delta.attempt);
                if restarted {
                    // A re-asked attempt: its text is a new part.
                    call.close_text(&mut out);
                }
                if !text.is_empty() {
                    if !std::mem::replace(&mut self.in_step, true) {
                        out.push(json!({ "type": "start-step" }));
                    }
                    let id = call.open_text(event, &mut out);
                    out.push(UiChunk::TextDelta(UiTextDelta { id, delta: text }));
                }
            }
            Builtin::ToolCalled(call) => {
                self.ensure_step(&mut out);
                if let Some(text) = self
                    .calls
                    .get_mut(&CallKey::new(call.agent.as_str(), event.caused_by))
                {
                    text.next_response(&mut out);
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
                let key = CallKey::new(completed.agent.as_str(), event.caused_by);
                let mut call = self
                    .calls
                    .remove(&key)
                    .unwrap_or_else(|| CallText::new(None));
                if completed.outcome == Outcome::Success
                    && let Some(rest) = completed.output.as_ref().and_then(|o| call.reply.rest(o))
                {
                    let id = call.open_text(event, &mut out);
                    out.push(UiChunk::TextDelta(UiTextDelta { id, delta: rest }));
                }
                call.close_text(&mut out);
                if let Some(output) = completed.output {
                    out.push(json!({ "type": "data-output", "data": { "agent": completed.agent, "output": output } }));
                }
                if self.calls.is_empty() {
                    self.close_step(&mut out);
                }
            }
            Builtin::ErrorOccurred(error) => {
                out.push(json!({ "type": "error", "errorText": error.message }));
            }
            Builtin::InputRequested(request)
                if request.approval && self.approvals == Approvals::Tool =>
            {
                self.asked.push((event.id, request.prompt));
            }
            Builtin::InputRequested(request) => {
                out.push(json!({ "type": "data-input-requested", "data": { "requestId": event.id, "prompt": request.prompt } }));
            }
            Builtin::InputReceived(received) => {
                if let Some(approved) = decided {
                    let id = approval_tool_call_id(&received.request_id);
                    if approved {
                        out.push(json!({ "type": "tool-output-available", "toolCallId": id, "output": { "answer": received.text } }));
                    } else {
                        out.push(json!({ "type": "tool-output-denied", "toolCallId": id }));
                    }
                }
            }
            Builtin::WorkflowCompleted(_) => {
                self.end_turn(&mut out);
                return (out.0, true);
            }
            _ => {}
        }
        (out.0, false)
    }

    /// `start`: of a new message named after `event`, or of more of the message the client
    /// has (`continues`: no `messageId`, so the AI SDK keeps the one it continues).
    fn start(&mut self, event: &Envelope, continues: bool, out: &mut Chunks) {
        if continues {
            out.push(json!({ "type": "start" }));
        } else {
            out.push(json!({ "type": "start", "messageId": format!("msg-{}", event.id) }));
        }
        self.in_message = true;
    }

    /// Closes what is open, shows the approvals the turn asked in a last step of their own
    /// (where the AI SDK looks for them) and sends `finish`: the next event starts a new
    /// message.
    fn end_turn(&mut self, out: &mut Chunks) {
        for call in self.calls.values_mut() {
            call.close_text(out);
        }
        self.calls.clear();
        self.close_step(out);
        if !self.asked.is_empty() {
            self.ensure_step(out);
            for (request, prompt) in std::mem::take(&mut self.asked) {
                let id = approval_tool_call_id(&request);
                out.push(json!({ "type": "tool-input-start", "toolCallId": id, "toolName": APPROVAL_TOOL, "dynamic": true }));
                out.push(json!({ "type": "tool-input-available", "toolCallId": id, "toolName": APPROVAL_TOOL, "input": { "prompt": prompt }, "dynamic": true }));
                out.push(json!({ "type": "tool-approval-request", "approvalId": request, "toolCallId": id }));
            }
            self.close_step(out);
        }
        out.push(json!({ "type": "finish" }));
        self.in_message = false;
        self.tools.clear();
    }

    fn ensure_step(&mut self, out: &mut Chunks) {
        if !self.in_step {
            self.in_step = true;
            out.push(json!({ "type": "start-step" }));
        }
    }

    fn close_step(&mut self, out: &mut Chunks) {
        if std::mem::take(&mut self.in_step) {
            out.push(json!({ "type": "finish-step" }));
        }
    }
}

#[cfg(test)]
mod tests;
