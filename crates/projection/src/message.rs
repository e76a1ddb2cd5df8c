//! The chat message model the projection produces: [`Message`], its [`Part`]s and their states.

use openharness_core::EventId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One chat message derived from a session's events.
///
/// Serialized with the field names `id`, `role`, `name` (omitted when absent), `content`,
/// `parts` and `_events`.
///
/// ```
/// use openharness_projection::{Message, Part, Role, TextState};
/// let message = Message {
///     id: "msg-1".into(),
///     role: Role::User,
///     name: None,
///     content: "hi".into(),
///     parts: vec![Part::Text { text: "hi".into(), state: TextState::Done }],
///     events: vec![],
/// };
/// let json = serde_json::to_value(&message).unwrap();
/// assert_eq!(json["parts"][0]["type"], "text");
/// assert!(json.get("_events").is_some());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// `msg-<id of the event that opened the message>`.
    pub id: String,
    /// Who speaks.
    pub role: Role,
    /// The agent's name, for assistant messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The text of every text part, concatenated.
    pub content: String,
    /// Text, tool and output parts, in the order they happened.
    pub parts: Vec<Part>,
    /// The ids of the events the message was built from, in log order.
    #[serde(rename = "_events")]
    pub events: Vec<EventId>,
}

impl Message {
    /// The concatenated text of the message's text parts.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|part| match part {
                Part::Text { text, .. } => Some(text.as_str()),
                Part::Tool { .. } | Part::Output { .. } => None,
            })
            .collect()
    }
}

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model (never produced by the projection today).
    System,
    /// The person running the workflow.
    User,
    /// An agent.
    Assistant,
}

/// One piece of a message, tagged by `type` (`text`, `tool` or `output`) with camelCase fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Part {
    /// Text, streamed or complete.
    Text {
        /// The text so far.
        text: String,
        /// Whether more may arrive.
        state: TextState,
    },
    /// A tool call and, once it returned, its result.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The provider's id for the call.
        tool_call_id: String,
        /// The tool's name.
        tool_name: String,
        /// The arguments (`null` when only the result was recorded).
        input: Value,
        /// What the tool returned, once it succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// Why the tool failed, if it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error_text: Option<String>,
        /// Where the call is.
        state: ToolState,
    },
    /// The structured output the agent returned, once its call completed (`{type: "output",
    /// agent, output}`): what a non-streaming agent said.
    Output {
        /// The agent that returned it.
        agent: String,
        /// The output, as the model returned it and the agent accepted it.
        output: Value,
    },
}

/// Whether a text part is still streaming (serialized `streaming` / `done`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TextState {
    /// Deltas may still arrive.
    Streaming,
    /// The text is final.
    Done,
}

/// Where a tool call is (serialized as in the AI SDK: `input-available`, ...).
///
/// `approval-requested` and `output-denied` are the AI SDK 6 states of a tool call waiting for
/// (or refused by) a person's approval: only a chat whose client asked for approvals as tool
/// parts ([`Approvals::Tool`](crate::Approvals::Tool)) has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ToolState {
    /// Called, no result yet.
    InputAvailable,
    /// The tool returned.
    OutputAvailable,
    /// The tool failed.
    OutputError,
    /// Waiting for a person to approve or deny it (AI SDK 6+).
    ApprovalRequested,
    /// A person denied it (AI SDK 6+).
    OutputDenied,
}
