//! Conversion of [`Message`]s into the Vercel AI SDK 5 `UIMessage` shape.
//!
//! The field set is exactly AI SDK 5's (its stream validation rejects unknown keys):
//! `{id, role, metadata?, parts}`, text parts `{type: "text", text, state}` and static tool
//! parts `{type: "tool-<toolName>", toolCallId, state, input, output?, errorText?}`. The
//! message's agent travels in `metadata` as `{"agent": name}`; the `_events` links and the
//! `content` summary are not part of the shape and are left out.

use std::borrow::Cow;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use crate::message::{Message, Part, Role, TextState, ToolState};

/// An AI SDK 5 `UIMessage`.
///
/// ```
/// use openharness_projection::{Message, Part, Role, TextState, ToolState, UiMessage};
/// use serde_json::json;
/// let message = Message {
///     id: "msg-1".into(),
///     role: Role::Assistant,
///     name: Some("researcher".into()),
///     content: "Sunny.".into(),
///     parts: vec![
///         Part::Tool {
///             tool_call_id: "c1".into(),
///             tool_name: "weather".into(),
///             input: json!({ "city": "Lisbon" }),
///             output: Some(json!({ "tempC": 24 })),
///             error_text: None,
///             state: ToolState::OutputAvailable,
///         },
///         Part::Text { text: "Sunny.".into(), state: TextState::Done },
///     ],
///     events: vec![],
/// };
/// assert_eq!(
///     serde_json::to_value(UiMessage::from(&message)).unwrap(),
///     json!({
///         "id": "msg-1",
///         "role": "assistant",
///         "metadata": { "agent": "researcher" },
///         "parts": [
///             {
///                 "type": "tool-weather",
///                 "toolCallId": "c1",
///                 "state": "output-available",
///                 "input": { "city": "Lisbon" },
///                 "output": { "tempC": 24 }
///             },
///             { "type": "text", "text": "Sunny.", "state": "done" }
///         ]
///     })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, schemars::JsonSchema)]
pub struct UiMessage {
    /// The message id.
    pub id: String,
    /// `system`, `user` or `assistant`.
    pub role: Role,
    /// Free-form metadata: `{"agent": name}` for agents' messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The parts, in order.
    pub parts: Vec<UiPart>,
}

/// A part of a [`UiMessage`]. Serialized with a `type` of `text` or `tool-<toolName>`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum UiPart {
    /// `{type: "text", text, state?}`.
    Text {
        /// The text.
        text: String,
        /// `streaming` or `done`; none on a user's message (as the AI SDK sends it).
        state: Option<TextState>,
    },
    /// `{type: "tool-<toolName>", toolCallId, state, input, output?, errorText?}`, and
    /// `approval?` in AI SDK 6+ (the chats here never set it on a static part).
    Tool(UiToolCall),
    /// `{type: "dynamic-tool", toolName, toolCallId, state, input, output?, errorText?,
    /// approval?}`: a tool call the client has no definition of. A workflow's approval request
    /// ([`InputRequested::approval`](openharness_core::builtin::InputRequested::approval)) is
    /// one, named `approval` with the input `{prompt}`, in a chat whose client asked for
    /// approvals as tool parts ([`Approvals::Tool`](crate::Approvals::Tool)); AI SDK 6+ only.
    ///
    /// ```
    /// use openharness_projection::{ToolApproval, ToolState, UiPart, UiToolCall};
    /// use serde_json::json;
    /// let mut call = UiToolCall::new("approval", "approval-1", json!({ "prompt": "Publish?" }));
    /// call.state = ToolState::ApprovalRequested;
    /// call.approval = Some(ToolApproval { id: "1".into(), approved: None, reason: None });
    /// assert_eq!(
    ///     serde_json::to_value(&UiPart::DynamicTool(call)).unwrap(),
    ///     json!({ "type": "dynamic-tool", "toolName": "approval", "toolCallId": "approval-1",
    ///             "state": "approval-requested", "input": { "prompt": "Publish?" },
    ///             "approval": { "id": "1" } })
    /// );
    /// ```
    DynamicTool(UiToolCall),
    /// `{type: "step-start"}`: the start of an agent call (a step) in an assistant message.
    StepStart,
    /// `{type: "data-<name>", data}`: an agent's structured output is `data-output` with
    /// `data: {agent, output}`, as the chat stream's `data-output` chunk.
    Data {
        /// The part's name (after `data-` in the `type`).
        name: String,
        /// The data.
        data: Value,
    },
}

/// A tool call as a static or a dynamic [`UiPart`] shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct UiToolCall {
    /// The tool's name (in a static part, the end of its `type`).
    pub tool_name: String,
    /// The call id.
    pub tool_call_id: String,
    /// Where the call is.
    pub state: ToolState,
    /// The arguments.
    pub input: Value,
    /// The result, when `state` is `output-available`.
    pub output: Option<Value>,
    /// The error, when `state` is `output-error`.
    pub error_text: Option<String>,
    /// The approval asked for the call, and the person's decision once given (AI SDK 6+; the
    /// chats here ask for approvals only as dynamic tool parts).
    pub approval: Option<ToolApproval>,
}

impl UiToolCall {
    /// A call of `tool_name` with `input`, its input available and nothing more known yet.
    ///
    /// ```
    /// use openharness_projection::{ToolState, UiPart, UiToolCall};
    /// use serde_json::json;
    /// let call = UiToolCall::new("weather", "c1", json!({ "city": "Lisbon" }));
    /// assert_eq!(call.state, ToolState::InputAvailable);
    /// assert_eq!(
    ///     serde_json::to_value(&UiPart::Tool(call)).unwrap(),
    ///     json!({ "type": "tool-weather", "toolCallId": "c1", "state": "input-available",
    ///             "input": { "city": "Lisbon" } })
    /// );
    /// ```
    pub fn new(
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
        input: Value,
    ) -> Self {
        Self {
            tool_name: tool_name.into(),
            tool_call_id: tool_call_id.into(),
            state: ToolState::InputAvailable,
            input,
            output: None,
            error_text: None,
            approval: None,
        }
    }

    /// How many entries [`UiToolCall::serialize_entries`] writes.
    fn entries(&self) -> usize {
        3 + usize::from(self.output.is_some())
            + usize::from(self.error_text.is_some())
            + usize::from(self.approval.is_some())
    }

    /// The entries a static and a dynamic tool part share: `toolCallId`, `state`, `input`, and
    /// `output`, `errorText` and `approval` when present.
    fn serialize_entries<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        map.serialize_entry("toolCallId", &self.tool_call_id)?;
        map.serialize_entry("state", &self.state)?;
        map.serialize_entry("input", &self.input)?;
        if let Some(output) = &self.output {
            map.serialize_entry("output", output)?;
        }
        if let Some(error_text) = &self.error_text {
            map.serialize_entry("errorText", error_text)?;
        }
        if let Some(approval) = &self.approval {
            map.serialize_entry("approval", approval)?;
        }
        Ok(())
    }
}

impl UiPart {
    /// The tool call of a static or a dynamic tool part.
    pub fn tool_call(&self) -> Option<&UiToolCall> {
        match self {
            Self::Tool(call) | Self::DynamicTool(call) => Some(call),
            _ => None,
        }
    }

    /// The tool call of a static or a dynamic tool part, to change.
    pub fn tool_call_mut(&mut self) -> Option<&mut UiToolCall> {
        match self {
            Self::Tool(call) | Self::DynamicTool(call) => Some(call),
            _ => None,
        }
    }
}

/// The `approval` of an AI SDK 6 tool part: `{id, approved?, reason?}`. `id` is the approval's
/// id (for a workflow's approval request, the `input:requested` event's id); `approved` and
/// `reason` are the person's decision, once given.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ToolApproval {
    /// The approval's id.
    pub id: String,
    /// Whether it was approved (absent until decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved: Option<bool>,
    /// Why, when the person said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Serialize for UiPart {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Text { text, state } => {
                let mut map = serializer.serialize_map(Some(2 + usize::from(state.is_some())))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", text)?;
                if let Some(state) = state {
                    map.serialize_entry("state", state)?;
                }
                map.end()
            }
            Self::Tool(call) => {
                let mut map = serializer.serialize_map(Some(1 + call.entries()))?;
                map.serialize_entry("type", &format!("tool-{}", call.tool_name))?;
                call.serialize_entries(&mut map)?;
                map.end()
            }
            Self::DynamicTool(call) => {
                let mut map = serializer.serialize_map(Some(2 + call.entries()))?;
                map.serialize_entry("type", "dynamic-tool")?;
                map.serialize_entry("toolName", &call.tool_name)?;
                call.serialize_entries(&mut map)?;
                map.end()
            }
            Self::StepStart => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("type", "step-start")?;
                map.end()
            }
            Self::Data { name, data } => {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", &format!("data-{name}"))?;
                map.serialize_entry("data", data)?;
                map.end()
            }
        }
    }
}

/// The schema of what [`UiPart`]'s `Serialize` writes: a text part, a tool part whose `type`
/// is `tool-` and the tool's name, a `dynamic-tool` part (AI SDK 6+: only in a chat whose
/// client asked for approvals as tool parts), or a data part whose `type` is `data-` and its
/// name; no other keys (AI SDK 5 rejects unknown ones).
impl schemars::JsonSchema for UiPart {
    fn schema_name() -> Cow<'static, str> {
        "UiPart".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let text_state = generator.subschema_for::<TextState>();
        let tool_state = generator.subschema_for::<ToolState>();
        let approval = generator.subschema_for::<ToolApproval>();
        // A tool part: its `type`, `toolName` when the type does not hold it, and the call.
        let tool_part = |kind: Value, named: bool| {
            let mut properties = json!({
                "type": kind,
                "toolCallId": { "type": "string" },
                "state": tool_state,
                "input": true,
                "output": true,
                "errorText": { "type": "string" },
                "approval": approval,
            });
            let mut required = vec!["type", "toolCallId", "state", "input"];
            if named {
                properties["toolName"] = json!({ "type": "string" });
                required.insert(1, "toolName");
            }
            json!({
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": false,
            })
        };
        let static_tool = tool_part(json!({ "type": "string", "pattern": "^tool-" }), false);
        let dynamic_tool = tool_part(json!({ "const": "dynamic-tool" }), true);
        schemars::json_schema!({
            "description": "A part of an AI SDK 5 `UIMessage`: `{type: \"text\", text, state?}`, `{type: \"tool-<toolName>\", toolCallId, state, input, output?, errorText?}` (with `approval?` in AI SDK 6+), `{type: \"data-<name>\", data}` or `{type: \"step-start\"}`; or, in a chat whose client asked for approvals as tool parts (AI SDK 6+), `{type: \"dynamic-tool\", toolName, toolCallId, state, input, output?, errorText?, approval?}`.",
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "type": { "const": "text" },
                        "text": { "type": "string" },
                        "state": text_state,
                    },
                    "required": ["type", "text"],
                    "additionalProperties": false,
                },
                static_tool,
                dynamic_tool,
                {
                    "type": "object",
                    "properties": {
                        "type": { "type": "string", "pattern": "^data-" },
                        "data": true,
                    },
                    "required": ["type", "data"],
                    "additionalProperties": false,
                },
                {
                    "type": "object",
                    "properties": { "type": { "const": "step-start" } },
                    "required": ["type"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

impl From<&Message> for UiMessage {
    fn from(message: &Message) -> Self {
        Self {
            id: message.id.clone(),
            role: message.role,
            metadata: message.name.as_ref().map(|agent| json!({ "agent": agent })),
            parts: message.parts.iter().map(UiPart::from).collect(),
        }
    }
}

impl From<&Part> for UiPart {
    fn from(part: &Part) -> Self {
        match part {
            Part::Text { text, state } => Self::Text {
                text: text.clone(),
                state: Some(*state),
            },
            Part::Tool {
                tool_call_id,
                tool_name,
                input,
                output,
                error_text,
                state,
            } => Self::Tool(UiToolCall {
                tool_name: tool_name.clone(),
                tool_call_id: tool_call_id.clone(),
                state: *state,
                input: input.clone(),
                output: output
                    .clone()
                    .filter(|_| *state == ToolState::OutputAvailable),
                error_text: error_text
                    .clone()
                    .filter(|_| *state == ToolState::OutputError),
                approval: None,
            }),
            Part::Output { agent, output } => Self::Data {
                name: "output".into(),
                data: json!({ "agent": agent, "output": output }),
            },
        }
    }
}

/// Converts messages into AI SDK 5 `UIMessage`s (serialize them with serde).
///
/// ```
/// use openharness_core::{Envelope, builtin::UserInput};
/// use openharness_projection::{project_messages, to_ui_messages};
/// let input = Envelope::typed(&UserInput::new("hi"), None).unwrap();
/// let ui = to_ui_messages(&project_messages(&[input]));
/// let json = serde_json::to_value(&ui).unwrap();
/// assert_eq!(json[0]["parts"][0], serde_json::json!({ "type": "text", "text": "hi", "state": "done" }));
/// assert!(json[0].get("metadata").is_none());
/// ```
pub fn to_ui_messages(messages: &[Message]) -> Vec<UiMessage> {
    messages.iter().map(UiMessage::from).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn tool(state: ToolState, output: Option<Value>, error_text: Option<&str>) -> Part {
        Part::Tool {
            tool_call_id: "c1".into(),
            tool_name: "getWeather".into(),
            input: json!({ "city": "SF" }),
            output,
            error_text: error_text.map(Into::into),
            state,
        }
    }

    fn ui(part: &Part) -> Value {
        serde_json::to_value(UiPart::from(part)).unwrap()
    }

    #[test]
    fn text_parts_keep_their_state() {
        let part = Part::Text {
            text: "Hel".into(),
            state: TextState::Streaming,
        };
        assert_eq!(
            ui(&part),
            json!({ "type": "text", "text": "Hel", "state": "streaming" })
        );
    }

    #[test]
    fn tool_parts_carry_only_the_fields_of_their_state() {
        assert_eq!(
            ui(&tool(ToolState::InputAvailable, None, None)),
            json!({
                "type": "tool-getWeather",
                "toolCallId": "c1",
                "state": "input-available",
                "input": { "city": "SF" }
            })
        );
        assert_eq!(
            ui(&tool(ToolState::OutputAvailable, Some(json!(15)), None)),
            json!({
                "type": "tool-getWeather",
                "toolCallId": "c1",
                "state": "output-available",
                "input": { "city": "SF" },
                "output": 15
            })
        );
        // Inconsistent parts built by hand never show fields their state does not allow.
        assert_eq!(
            ui(&tool(ToolState::OutputError, Some(json!(15)), Some("down"))),
            json!({
                "type": "tool-getWeather",
                "toolCallId": "c1",
                "state": "output-error",
                "input": { "city": "SF" },
                "errorText": "down"
            })
        );
    }

    #[test]
    fn messages_have_exactly_the_ai_sdk_5_fields() {
        let messages = [
            Message {
                id: "msg-1".into(),
                role: Role::User,
                name: None,
                content: "hi".into(),
                parts: vec![Part::Text {
                    text: "hi".into(),
                    state: TextState::Done,
                }],
                events: vec![],
            },
            Message {
                id: "msg-2".into(),
                role: Role::Assistant,
                name: Some("planner".into()),
                content: String::new(),
                parts: vec![],
                events: vec![],
            },
        ];
        let json = serde_json::to_value(to_ui_messages(&messages)).unwrap();
        assert_eq!(
            json,
            json!([
                {
                    "id": "msg-1",
                    "role": "user",
                    "parts": [{ "type": "text", "text": "hi", "state": "done" }]
                },
                {
                    "id": "msg-2",
                    "role": "assistant",
                    "metadata": { "agent": "planner" },
                    "parts": []
                }
            ])
        );
    }
}
