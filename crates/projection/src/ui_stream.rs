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

use openharness_core::builtin::{Builtin, InputReceived, Outcome};
use openharness_core::{Envelope, Event, EventId};
use serde_json::{Value, json};

use crate::message::{Role, TextState, ToolState};
use crate::reply::{ReplyDecoder, reply_text};
use crate::ui::{ToolApproval, UiMessage, UiPart};

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
/// let input = Envelope::typed(&UserInput { text: "go".into() }, None).unwrap();
/// let request = EventId::new();
/// let mut decided = Envelope::typed(&InputReceived { request_id: request, text: "yes".into() }, Some(request)).unwrap();
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
///     for chunk in chunks.iter().filter(|c| c["type"] == "text-delta") {
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

/// An agent call: its agent and the event that triggered it (its events' `causedBy`).
type CallKey = (String, Option<EventId>);

/// What one agent call has streamed of its reply.
#[derive(Debug)]
struct CallText {
    pointer: Option<String>,
    decoder: ReplyDecoder,
    attempt: u32,
    /// The reply characters the current model response streamed.
    streamed: String,
    /// The call's open text part, if one is open.
    open_text: Option<String>,
}

impl CallText {
    fn new(pointer: Option<String>) -> Self {
        Self {
            decoder: ReplyDecoder::new(pointer.as_deref()),
            pointer,
            attempt: 1,
            streamed: String::new(),
            open_text: None,
        }
    }

    /// A new model response (after tool calls, or a re-asked attempt): its text is a new part.
    fn next_response(&mut self, out: &mut Vec<Value>) {
        self.decoder.reset();
        self.streamed.clear();
        self.close_text(out);
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.open_text.take() {
            out.push(json!({ "type": "text-end", "id": id }));
        }
    }

    /// The id of the call's open text part, opening one (named after `event`) first.
    fn open_text(&mut self, event: &Envelope, out: &mut Vec<Value>) -> String {
        self.open_text
            .get_or_insert_with(|| {
                let id = format!("text-{}", event.id);
                out.push(json!({ "type": "text-start", "id": id }));
                id
            })
            .clone()
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
    ///     open_requests: vec![asked.id], errors: 0 }, None).unwrap();
    /// let kinds = |approvals| {
    ///     let mut stream = UiStream::with_approvals(approvals);
    ///     [&asked, &done].into_iter()
    ///         .flat_map(|event| stream.chunks(event).0)
    ///         .map(|chunk| chunk["type"].as_str().unwrap().to_owned())
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
    pub fn chunks(&mut self, event: &Envelope) -> (Vec<Value>, bool) {
        let mut out = Vec::new();
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            return (out, false);
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
                let key = (started.agent, event.caused_by);
                if let Some(mut earlier) = self.calls.insert(key, CallText::new(started.reply)) {
                    earlier.close_text(&mut out); // a call run again after an interruption
                }
            }
            Builtin::TextDelta(delta) => {
                let call = self
                    .calls
                    .entry((delta.agent, event.caused_by))
                    .or_insert_with(|| CallText::new(None));
                if delta.attempt > call.attempt {
                    call.attempt = delta.attempt;
                    call.next_response(&mut out);
                }
                let text = call.decoder.push(&delta.delta);
                if !text.is_empty() {
                    call.streamed.push_str(&text);
                    if !std::mem::replace(&mut self.in_step, true) {
                        out.push(json!({ "type": "start-step" }));
                    }
                    let id = call.open_text(event, &mut out);
                    out.push(json!({ "type": "text-delta", "id": id, "delta": text }));
                }
            }
            Builtin::ToolCalled(call) => {
                self.ensure_step(&mut out);
                if let Some(text) = self.calls.get_mut(&(call.agent.clone(), event.caused_by)) {
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
                let key = (completed.agent.clone(), event.caused_by);
                let mut call = self
                    .calls
                    .remove(&key)
                    .unwrap_or_else(|| CallText::new(None));
                if completed.outcome == Outcome::Success
                    && let Some(output) = &completed.output
                    && let Some(reply) = reply_text(output, call.pointer.as_deref())
                    // What the stream has not shown yet: all of it, or the rest of it.
                    && let Some(rest) = reply.strip_prefix(call.streamed.as_str())
                    && !rest.is_empty()
                {
                    let id = call.open_text(event, &mut out);
                    out.push(json!({ "type": "text-delta", "id": id, "delta": rest }));
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
                return (out, true);
            }
            _ => {}
        }
        (out, false)
    }

    /// `start`: of a new message named after `event`, or of more of the message the client
    /// has (`continues`: no `messageId`, so the AI SDK keeps the one it continues).
    fn start(&mut self, event: &Envelope, continues: bool, out: &mut Vec<Value>) {
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
    fn end_turn(&mut self, out: &mut Vec<Value>) {
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

    fn ensure_step(&mut self, out: &mut Vec<Value>) {
        if !self.in_step {
            self.in_step = true;
            out.push(json!({ "type": "start-step" }));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Value>) {
        if std::mem::take(&mut self.in_step) {
            out.push(json!({ "type": "finish-step" }));
        }
    }
}

/// The chat of a session as AI SDK `UIMessage`s, built from the same chunks
/// [`UiStream`] streams (so a reloaded chat equals the streamed one, ids included): a user
/// message per `user:input` and `input:received` (id: the payload's `messageId`, else
/// `msg-<event id>`), an assistant message per turn. A user message recorded again under an
/// id already in the view (a message the client edited, or the question `regenerate()` asks
/// again) replaces it and what followed it, as the AI SDK does on its side; the log keeps
/// both.
///
/// ```
/// use openharness_core::{Envelope, EventId};
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
    ui_messages_with(events, Approvals::Data)
}

/// [`ui_messages`] for a chat that shows approval requests as `approvals` says: with
/// [`Approvals::Tool`], the messages an AI SDK 6+ client builds from the
/// [`UiStream::with_approvals`] stream and its own approval responses (see the module docs).
///
/// ```
/// use openharness_core::Envelope;
/// use openharness_core::builtin::{InputReceived, InputRequested, WorkflowCompleted};
/// use openharness_projection::{APPROVED_FIELD, Approvals, ui_messages_with};
/// let asked = Envelope::typed(&InputRequested::approval("Publish?"), None).unwrap();
/// let waiting = Envelope::typed(&WorkflowCompleted { reason: "waiting_for_input".into(),
///     open_requests: vec![asked.id], errors: 0 }, None).unwrap();
/// let mut yes = Envelope::typed(&InputReceived { request_id: asked.id, text: "yes".into() },
///     Some(asked.id)).unwrap();
/// yes.payload[APPROVED_FIELD] = true.into();
/// let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(),
///     open_requests: vec![], errors: 0 }, None).unwrap();
/// let chat = serde_json::to_value(ui_messages_with(&[asked.clone(), waiting, yes, done],
///     Approvals::Tool)).unwrap();
/// // One assistant message: the decision continued it.
/// assert_eq!(chat.as_array().unwrap().len(), 1);
/// let part = &chat[0]["parts"][1];
/// assert_eq!(part["type"], "dynamic-tool");
/// assert_eq!(part["state"], "output-available");
/// assert_eq!(part["approval"], serde_json::json!({ "id": asked.id, "approved": true }));
/// ```
pub fn ui_messages_with(events: &[Envelope], approvals: Approvals) -> Vec<UiMessage> {
    let mut builder = UiChatBuilder {
        stream: UiStream::with_approvals(approvals),
        ..UiChatBuilder::default()
    };
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
    /// The message an approval's decision continues (its `start` has no id).
    continuing: Option<usize>,
    /// Its text parts by their stream id (calls running at once stream into parts of their own).
    texts: HashMap<String, usize>,
}

impl UiChatBuilder {
    fn apply(&mut self, event: &Envelope) {
        match Builtin::decode(event) {
            Some(Ok(Builtin::UserInput(input))) => self.user(event, input.text),
            Some(Ok(Builtin::InputReceived(received))) => self.answer(event, received),
            _ => {}
        }
        let (chunks, _) = self.stream.chunks(event);
        for chunk in chunks {
            self.chunk(&chunk);
        }
    }

    /// An answer: a user message, except for an approval's decision in a chat showing
    /// approvals as tool parts, which the client gave on the request's part (as
    /// `addToolApprovalResponse` does) and which continues that part's message.
    fn answer(&mut self, event: &Envelope, received: InputReceived) {
        if self.stream.approvals != Approvals::Tool {
            return self.user(event, received.text);
        }
        let call_id = approval_tool_call_id(&received.request_id);
        let found = self
            .messages
            .iter_mut()
            .enumerate()
            .rev()
            .find_map(|(i, m)| {
                let part = tool_part(&mut m.parts, &call_id)?;
                Some((i, part))
            });
        match decision(event) {
            Some(approved) => {
                let index = match found {
                    Some((index, part)) => {
                        if let UiPart::DynamicTool {
                            approval: Some(approval),
                            ..
                        } = part
                        {
                            approval.approved = Some(approved);
                            approval.reason =
                                event.payload[REASON_FIELD].as_str().map(str::to_owned);
                        }
                        index
                    }
                    // A decision on a request this chat never showed as one: its turn goes
                    // into a message of its own.
                    None => {
                        self.messages.push(UiMessage {
                            id: format!("msg-{}", event.id),
                            role: Role::Assistant,
                            metadata: None,
                            parts: Vec::new(),
                        });
                        self.messages.len() - 1
                    }
                };
                self.continuing = Some(index);
            }
            None => {
                // Answered with text instead: the request is settled, its answer that text.
                if let Some((
                    _,
                    UiPart::DynamicTool {
                        state: state @ ToolState::ApprovalRequested,
                        output,
                        approval,
                        ..
                    },
                )) = found
                {
                    *state = ToolState::OutputAvailable;
                    *output = Some(json!({ "answer": received.text }));
                    *approval = None;
                }
                self.user(event, received.text);
            }
        }
    }

    fn user(&mut self, event: &Envelope, text: String) {
        let id = event.payload[MESSAGE_ID_FIELD]
            .as_str()
            .map_or_else(|| format!("msg-{}", event.id), str::to_owned);
        // A message already in the view under this id was edited (`sendMessage` with its
        // `messageId`) or asked again (`regenerate()`): it and what followed it are replaced.
        if let Some(earlier) = self.messages.iter().rposition(|m| m.id == id) {
            self.messages.truncate(earlier);
        } else if let Some(named) = event.payload[REGENERATES_FIELD]
            .as_str()
            .and_then(|named| self.messages.iter().position(|m| m.id == named))
        {
            self.messages.truncate(named);
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
            self.texts.clear();
            if let Some(id) = chunk["messageId"].as_str() {
                self.messages.push(UiMessage {
                    id: id.to_owned(),
                    role: Role::Assistant,
                    metadata: None,
                    parts: Vec::new(),
                });
                self.current = Some(self.messages.len() - 1);
            } else {
                // More of a message the client has: an approval's decision continues it.
                self.current = self.continuing.take();
            }
            return;
        }
        let Some(message) = self.current.and_then(|i| self.messages.get_mut(i)) else {
            return;
        };
        let parts = &mut message.parts;
        let call_id = chunk["toolCallId"].as_str().unwrap_or_default();
        let text_id = chunk["id"].as_str().unwrap_or_default();
        match kind {
            "start-step" => parts.push(UiPart::StepStart),
            "text-start" => {
                self.texts.insert(text_id.to_owned(), parts.len());
                parts.push(UiPart::Text {
                    text: String::new(),
                    state: Some(TextState::Streaming),
                });
            }
            "text-delta" => {
                if let Some(UiPart::Text { text, .. }) =
                    self.texts.get(text_id).and_then(|&i| parts.get_mut(i))
                {
                    text.push_str(chunk["delta"].as_str().unwrap_or_default());
                }
            }
            "text-end" => {
                if let Some(UiPart::Text { state, .. }) =
                    self.texts.get(text_id).and_then(|&i| parts.get_mut(i))
                {
                    *state = Some(TextState::Done);
                }
            }
            "tool-input-start" => {
                let tool_name = chunk["toolName"].as_str().unwrap_or_default().to_owned();
                let tool_call_id = call_id.to_owned();
                // `input-streaming` in the SDK until the next chunk, which the same event sends
                let (state, input) = (ToolState::InputAvailable, Value::Null);
                parts.push(if chunk["dynamic"] == true {
                    UiPart::DynamicTool {
                        tool_name,
                        tool_call_id,
                        state,
                        input,
                        output: None,
                        error_text: None,
                        approval: None,
                    }
                } else {
                    UiPart::Tool {
                        tool_name,
                        tool_call_id,
                        state,
                        input,
                        output: None,
                        error_text: None,
                    }
                });
            }
            "tool-input-available" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(ToolFields::of) {
                    *tool.state = ToolState::InputAvailable;
                    *tool.input = chunk["input"].clone();
                }
            }
            "tool-approval-request" => {
                if let Some(UiPart::DynamicTool {
                    state, approval, ..
                }) = tool_part(parts, call_id)
                {
                    *state = ToolState::ApprovalRequested;
                    *approval = Some(ToolApproval {
                        id: chunk["approvalId"].as_str().unwrap_or_default().to_owned(),
                        approved: None,
                        reason: None,
                    });
                }
            }
            "tool-output-available" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(ToolFields::of) {
                    *tool.state = ToolState::OutputAvailable;
                    *tool.output = Some(chunk["output"].clone());
                }
            }
            "tool-output-denied" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(ToolFields::of) {
                    *tool.state = ToolState::OutputDenied;
                }
            }
            "tool-output-error" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(ToolFields::of) {
                    *tool.state = ToolState::OutputError;
                    *tool.error_text =
                        Some(chunk["errorText"].as_str().unwrap_or_default().to_owned());
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

/// The tool part (static or dynamic) of call `call_id`, the latest if there are several.
fn tool_part<'a>(parts: &'a mut [UiPart], call_id: &str) -> Option<&'a mut UiPart> {
    parts.iter_mut().rev().find(|part| {
        matches!(part, UiPart::Tool { tool_call_id, .. } | UiPart::DynamicTool { tool_call_id, .. }
            if tool_call_id == call_id)
    })
}

/// The fields a tool chunk changes, in a static or a dynamic tool part.
struct ToolFields<'a> {
    state: &'a mut ToolState,
    input: &'a mut Value,
    output: &'a mut Option<Value>,
    error_text: &'a mut Option<String>,
}

impl<'a> ToolFields<'a> {
    fn of(part: &'a mut UiPart) -> Option<Self> {
        match part {
            UiPart::Tool {
                state,
                input,
                output,
                error_text,
                ..
            }
            | UiPart::DynamicTool {
                state,
                input,
                output,
                error_text,
                ..
            } => Some(Self {
                state,
                input,
                output,
                error_text,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use openharness_core::builtin::{
        AgentCompleted, AgentStarted, TextDelta, UserInput, WorkflowCompleted, WorkflowStarted,
    };
    use openharness_core::{Event, adapter::Usage};

    use super::*;

    fn ev<E: Event>(event: &E, cause: Option<EventId>) -> Envelope {
        Envelope::typed(event, cause).unwrap()
    }

    fn started(agent: &str, cause: Option<EventId>) -> Envelope {
        let started = AgentStarted {
            agent: agent.into(),
            reply: Some("/reply".into()),
            ..AgentStarted::default()
        };
        ev(&started, cause)
    }

    fn delta(agent: &str, text: &str, attempt: u32, cause: Option<EventId>) -> Envelope {
        let delta = TextDelta {
            agent: agent.into(),
            delta: text.into(),
            attempt,
        };
        ev(&delta, cause)
    }

    fn completed(agent: &str, reply: &str, cause: Option<EventId>) -> Envelope {
        let completed = AgentCompleted {
            agent: agent.into(),
            outcome: Outcome::Success,
            usage: Usage::default(),
            cost: None,
            error: None,
            output: Some(json!({ "reply": reply })),
        };
        ev(&completed, cause)
    }

    fn done() -> Envelope {
        let done = WorkflowCompleted {
            reason: "idle".into(),
            open_requests: Vec::new(),
            errors: 0,
        };
        ev(&done, None)
    }

    fn texts(events: &[Envelope]) -> Vec<String> {
        let chat = serde_json::to_value(ui_messages(events)).unwrap();
        chat.as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["parts"].as_array().unwrap().clone())
            .filter(|p| p["type"] == "text")
            .map(|p| p["text"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn calls_running_at_once_stream_into_parts_of_their_own() {
        let input = ev(&UserInput { text: "go".into() }, None);
        let (a, b) = (Some(input.id), Some(input.id));
        let events = [
            input.clone(),
            started("alpha", a),
            started("beta", b),
            delta("alpha", "{\"reply\": \"Al", 1, a),
            delta("beta", "{\"reply\": \"Be", 1, b),
            delta("alpha", "pha\"}", 1, a),
            completed("alpha", "Alpha", a),
            delta("beta", "ta\"}", 1, b),
            completed("beta", "Beta", b),
            done(),
        ];
        assert_eq!(texts(&events), ["go", "Alpha", "Beta"]);
        // One step for the two calls: it ends once neither runs.
        let mut stream = UiStream::new();
        let kinds: Vec<String> = events
            .iter()
            .flat_map(|e| stream.chunks(e).0)
            .map(|c| c["type"].as_str().unwrap().to_owned())
            .filter(|k| k.ends_with("-step"))
            .collect();
        assert_eq!(kinds, ["start-step", "finish-step"]);
    }

    #[test]
    fn approvals_asked_mid_turn_come_last_in_a_step_of_their_own() {
        use openharness_core::builtin::InputRequested;
        let input = ev(&UserInput { text: "go".into() }, None);
        let cause = Some(input.id);
        let asked = ev(&InputRequested::approval("Ship?"), cause);
        let question = ev(&InputRequested::new("Which city?"), cause);
        let events = [
            input.clone(),
            started("a", cause),
            asked.clone(),
            question,
            delta("a", "{\"reply\": \"Working", 1, cause),
            completed("a", "Working", cause),
            done(),
        ];
        let kinds = |approvals| {
            let mut stream = UiStream::with_approvals(approvals);
            events
                .iter()
                .flat_map(|e| stream.chunks(e).0)
                .map(|c| c["type"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        // The AI SDK looks for approvals in the message's last step: after the agent's.
        assert_eq!(
            kinds(Approvals::Tool),
            [
                "start",
                "start-step",
                "data-input-requested",
                "text-start",
                "text-delta",
                "text-end",
                "data-output",
                "finish-step",
                "start-step",
                "tool-input-start",
                "tool-input-available",
                "tool-approval-request",
                "finish-step",
                "finish"
            ]
        );
        // Without approvals as tool parts, both requests are data parts, where they were asked.
        let data = kinds(Approvals::Data);
        assert_eq!(
            data.iter().filter(|k| *k == "data-input-requested").count(),
            2
        );
        assert!(data.iter().all(|k| !k.starts_with("tool-")), "{data:?}");
        let chat = serde_json::to_value(ui_messages_with(&events, Approvals::Tool)).unwrap();
        let parts = chat[1]["parts"].as_array().unwrap();
        assert_eq!(parts[parts.len() - 2], json!({ "type": "step-start" }));
        assert_eq!(parts[parts.len() - 1]["state"], "approval-requested");
        assert_eq!(parts[parts.len() - 1]["approval"]["id"], json!(asked.id));
    }

    #[test]
    fn an_edited_message_replaces_itself_and_what_followed() {
        let mut first = ev(
            &UserInput {
                text: "Lisbon?".into(),
            },
            None,
        );
        first.payload["messageId"] = "m1".into();
        let mut edited = ev(
            &UserInput {
                text: "Porto?".into(),
            },
            None,
        );
        edited.payload["messageId"] = "m1".into();
        let events = [
            first.clone(),
            started("a", Some(first.id)),
            completed("a", "Lisbon!", Some(first.id)),
            done(),
            edited.clone(),
            started("a", Some(edited.id)),
            completed("a", "Porto!", Some(edited.id)),
            done(),
        ];
        assert_eq!(texts(&events), ["Porto?", "Porto!"]);
    }

    #[test]
    fn a_re_asked_attempt_streams_a_new_part() {
        let input = ev(&UserInput { text: "go".into() }, None);
        let cause = Some(input.id);
        let events = [
            input.clone(),
            started("a", cause),
            delta("a", "{\"reply\": \"Sunny", 1, cause),
            delta("a", "{\"reply\": \"Sunny, 20", 2, cause),
            completed("a", "Sunny, 20", cause),
            done(),
        ];
        assert_eq!(texts(&events), ["go", "Sunny", "Sunny, 20"]);
    }

    #[test]
    fn a_turn_cut_off_before_its_end_does_not_swallow_the_next() {
        let first = ev(&UserInput { text: "one".into() }, None);
        let second = ev(&UserInput { text: "two".into() }, None);
        let events = [
            ev(
                &WorkflowStarted {
                    workflow: "chat".into(),
                    code: None,
                    version: None,
                    commit: None,
                },
                None,
            ),
            first.clone(),
            started("a", Some(first.id)),
            second.clone(),
            started("a", Some(second.id)),
            completed("a", "Answer two", Some(second.id)),
            done(),
        ];
        let chat = serde_json::to_value(ui_messages(&events)).unwrap();
        let roles: Vec<&str> = chat
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
        assert_eq!(chat[3]["parts"][1]["text"], "Answer two");
    }
}
