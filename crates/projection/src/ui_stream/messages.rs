//! [`ui_messages`]: a whole log replayed through [`UiStream`] into the `UIMessage`s the AI
//! SDK builds from its chunks (see the module docs of `ui_stream`).

use super::*;

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
/// let mut input = Envelope::typed(&UserInput::new("Hi"), None).unwrap();
/// input.payload["messageId"] = "client-1".into();
/// let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(),
///     open_requests: vec![], errors: 0, queued: vec![] }, None).unwrap();
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
///     open_requests: vec![asked.id], errors: 0, queued: vec![] }, None).unwrap();
/// let mut yes = Envelope::typed(&InputReceived::new(asked.id, "yes"),
///     Some(asked.id)).unwrap();
/// yes.payload[APPROVED_FIELD] = true.into();
/// let done = Envelope::typed(&WorkflowCompleted { reason: "idle".into(),
///     open_requests: vec![], errors: 0, queued: vec![] }, None).unwrap();
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
pub(super) struct UiChatBuilder {
    pub(super) stream: UiStream,
    pub(super) messages: Vec<UiMessage>,
    /// The assistant message the turn under way streams into.
    pub(super) current: Option<usize>,
    /// The message an approval's decision continues (its `start` has no id).
    pub(super) continuing: Option<usize>,
    /// Its text parts by their stream id (calls running at once stream into parts of their own).
    pub(super) texts: HashMap<String, usize>,
}

impl UiChatBuilder {
    pub(super) fn apply(&mut self, event: &Envelope) {
        match Builtin::decode(event) {
            Some(Ok(Builtin::UserInput(input))) => self.user(event, input.text),
            Some(Ok(Builtin::InputReceived(received))) => self.answer(event, received),
            _ => {}
        }
        let (chunks, _) = self.stream.chunks(event);
        for chunk in chunks {
            match chunk {
                UiChunk::TextDelta(delta) => self.text_delta(&delta),
                UiChunk::Json(chunk) => self.chunk(&chunk),
            }
        }
    }

    /// A `text-delta`: its text added to its part.
    fn text_delta(&mut self, delta: &UiTextDelta) {
        let Some(message) = self.current.and_then(|i| self.messages.get_mut(i)) else {
            return;
        };
        if let Some(UiPart::Text { text, .. }) = self
            .texts
            .get(&*delta.id)
            .and_then(|&i| message.parts.get_mut(i))
        {
            text.push_str(&delta.delta);
        }
    }

    /// An answer: a user message, except for an approval's decision in a chat showing
    /// approvals as tool parts, which the client gave on the request's part (as
    /// `addToolApprovalResponse` does) and which continues that part's message.
    pub(super) fn answer(&mut self, event: &Envelope, received: InputReceived) {
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
                        if let UiPart::DynamicTool(UiToolCall {
                            approval: Some(approval),
                            ..
                        }) = part
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
                    UiPart::DynamicTool(UiToolCall {
                        state: state @ ToolState::ApprovalRequested,
                        output,
                        approval,
                        ..
                    }),
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

    pub(super) fn user(&mut self, event: &Envelope, text: String) {
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

    pub(super) fn chunk(&mut self, chunk: &Value) {
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
            "text-end" => {
                if let Some(UiPart::Text { state, .. }) =
                    self.texts.get(text_id).and_then(|&i| parts.get_mut(i))
                {
                    *state = Some(TextState::Done);
                }
            }
            "tool-input-start" => {
                let tool_name = chunk["toolName"].as_str().unwrap_or_default();
                // `input-streaming` in the SDK until the next chunk, which the same event sends
                let call = UiToolCall::new(tool_name, call_id, Value::Null);
                parts.push(if chunk["dynamic"] == true {
                    UiPart::DynamicTool(call)
                } else {
                    UiPart::Tool(call)
                });
            }
            "tool-input-available" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(UiPart::tool_call_mut) {
                    tool.state = ToolState::InputAvailable;
                    tool.input = chunk["input"].clone();
                }
            }
            "tool-approval-request" => {
                if let Some(UiPart::DynamicTool(call)) = tool_part(parts, call_id) {
                    call.state = ToolState::ApprovalRequested;
                    call.approval = Some(ToolApproval {
                        id: chunk["approvalId"].as_str().unwrap_or_default().to_owned(),
                        approved: None,
                        reason: None,
                    });
                }
            }
            "tool-output-available" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(UiPart::tool_call_mut) {
                    tool.state = ToolState::OutputAvailable;
                    tool.output = Some(chunk["output"].clone());
                }
            }
            "tool-output-denied" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(UiPart::tool_call_mut) {
                    tool.state = ToolState::OutputDenied;
                }
            }
            "tool-output-error" => {
                if let Some(tool) = tool_part(parts, call_id).and_then(UiPart::tool_call_mut) {
                    tool.state = ToolState::OutputError;
                    tool.error_text =
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
pub(super) fn tool_part<'a>(parts: &'a mut [UiPart], call_id: &str) -> Option<&'a mut UiPart> {
    parts.iter_mut().rev().find(|part| {
        part.tool_call()
            .is_some_and(|call| call.tool_call_id == call_id)
    })
}
