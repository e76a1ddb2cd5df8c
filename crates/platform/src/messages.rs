//! Messages: a projection of a platform session's log. Each message is one recorded event —
//! `user:input` (user), `assistant:replied` (assistant), `tool:called` (tool_call),
//! `tool:result` (tool_result) — its `id` the event's id and its `sequence` the event's seq,
//! so every read, on every replica, gives the same messages. What can be posted
//! ([`NewMessage`]) is a user message of text parts.

use chrono::{DateTime, Utc};
use openharness_core::{Envelope, Event};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::AssistantReplied;
use crate::error::PlatformError;

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// A person.
    User,
    /// The agent.
    Assistant,
    /// The agent calling a tool.
    ToolCall,
    /// A tool's answer.
    ToolResult,
    /// The platform.
    System,
}

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, by `url` or as `base64` data with its `media_type`.
    Image {
        /// Where the image is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// The image's bytes, base64.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base64: Option<String>,
        /// Its media type, such as `image/png`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// A tool call.
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// A tool's result.
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// What the tool returned.
        result: serde_json::Value,
        /// Whether it failed.
        is_error: bool,
    },
}

/// A message of a session, projected from one event of its log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    /// The id of the event it is.
    pub id: Uuid,
    /// The session.
    pub session_id: Uuid,
    /// The event's seq in the session's log.
    pub sequence: u64,
    /// Who it is from.
    pub role: MessageRole,
    /// What it says.
    pub content: Vec<ContentPart>,
    /// The model and reasoning a user message asked for, as posted (null when it asked for
    /// none, and on other messages).
    pub controls: Option<serde_json::Value>,
    /// The data posted with a user message (null when none, and on other messages).
    pub metadata: Option<serde_json::Value>,
    /// The labels posted with a user message (empty on other messages).
    pub tags: Vec<String>,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

/// The model and reasoning a posted message asks for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Controls {
    /// The model for this turn (an LLM model's id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_id: Option<Uuid>,
    /// Reasoning settings (recorded with the message, not used by the model call yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<serde_json::Value>,
}

/// `POST /v1/agents/{a}/sessions/{s}/messages`: a user message.
///
/// ```
/// use openharness_platform::NewMessage;
/// let new: NewMessage = serde_json::from_str(r#"{"content":[{"type":"text","text":"Hi"}]}"#)?;
/// assert_eq!(new.text().unwrap(), "Hi");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user` (the only role that can be posted; the default).
    #[serde(default)]
    pub role: Option<MessageRole>,
    /// Text parts.
    pub content: Vec<ContentPart>,
    /// The model for this turn (recorded with the message).
    #[serde(default)]
    pub controls: Option<Controls>,
    /// Data to keep with the message: a JSON object (recorded with it, returned as posted).
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// Labels to keep with the message (at most 100, each 1 to 100 characters).
    #[serde(default)]
    pub tags: Vec<String>,
}

impl NewMessage {
    /// The message's text: its text parts, joined by blank lines. Anything but a user message
    /// of text parts is `422`.
    pub fn text(&self) -> Result<String, PlatformError> {
        if self.role.is_some_and(|role| role != MessageRole::User) {
            return Err(PlatformError::Invalid(
                "only user messages can be posted".into(),
            ));
        }
        let mut texts = Vec::new();
        for part in &self.content {
            match part {
                ContentPart::Text { text } => texts.push(text.as_str()),
                ContentPart::Image { .. } => {
                    return Err(PlatformError::Invalid(
                        "image parts are not supported yet: post text parts".into(),
                    ));
                }
                _ => {
                    return Err(PlatformError::Invalid(
                        "a user message holds text parts only".into(),
                    ));
                }
            }
        }
        let text = texts.join("\n\n");
        if text.trim().is_empty() {
            return Err(PlatformError::Invalid(
                "`content` must hold at least one non-empty text part".into(),
            ));
        }
        Ok(text)
    }
}

impl NewMessage {
    /// What is recorded with the message beside its text (in its `user:input` event's
    /// payload): `controls`, `metadata` and `tags`, each when given. Metadata that is not a
    /// JSON object is `422`.
    pub(crate) fn recorded_fields(
        &self,
        tags: Vec<String>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, PlatformError> {
        let mut fields = serde_json::Map::new();
        if let Some(controls) = &self.controls {
            let controls = serde_json::to_value(controls)
                .map_err(|err| PlatformError::Invalid(format!("`controls`: {err}")))?;
            fields.insert("controls".into(), controls);
        }
        match &self.metadata {
            None | Some(serde_json::Value::Null) => {}
            Some(serde_json::Value::Object(metadata)) => {
                fields.insert("metadata".into(), metadata.clone().into());
            }
            Some(_) => {
                return Err(PlatformError::Invalid(
                    "`metadata` must be a JSON object".into(),
                ));
            }
        }
        if !tags.is_empty() {
            fields.insert("tags".into(), tags.into());
        }
        Ok(fields)
    }
}

/// The message an event is, if it is one.
pub(crate) fn project(session: Uuid, seq: u64, event: &Envelope) -> Option<Message> {
    let payload = &event.payload;
    let text = |field: &str| payload[field].as_str().map(str::to_owned);
    let (role, part) = match event.name.as_ref() {
        "user:input" => (
            MessageRole::User,
            ContentPart::Text {
                text: text("text")?,
            },
        ),
        AssistantReplied::NAME => (
            MessageRole::Assistant,
            ContentPart::Text {
                text: text("text")?,
            },
        ),
        "tool:called" => (
            MessageRole::ToolCall,
            ContentPart::ToolCall {
                id: text("toolId")?,
                name: text("toolName")?,
                arguments: payload["input"].clone(),
            },
        ),
        "tool:result" => (
            MessageRole::ToolResult,
            ContentPart::ToolResult {
                tool_call_id: text("toolId")?,
                result: payload["output"].clone(),
                is_error: payload["isError"].as_bool().unwrap_or(false),
            },
        ),
        _ => return None,
    };
    Some(Message {
        id: *event.id.as_uuid(),
        session_id: session,
        sequence: seq,
        role,
        content: vec![part],
        // Kept with user messages (see `NewMessage::recorded_fields`).
        controls: payload.get("controls").filter(|v| !v.is_null()).cloned(),
        metadata: payload.get("metadata").filter(|v| !v.is_null()).cloned(),
        tags: payload
            .get("tags")
            .and_then(|tags| tags.as_array())
            .map(|tags| {
                tags.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        created_at: event.timestamp,
    })
}
