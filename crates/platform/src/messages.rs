//! Messages: a projection of a platform session's log. Each message is one recorded event —
//! `user:input` (user), `assistant:replied` (assistant), `tool:called` (tool_call),
//! `tool:result` (tool_result) — its `id` the event's id and its `sequence` the event's seq,
//! so every read, on every replica, gives the same messages. What can be posted
//! ([`NewMessage`]) is a user message of text and image parts.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use openharness_core::{Envelope, Event, Image, ReasoningEffort};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::AssistantReplied;
use crate::error::PlatformError;
use openharness_core::builtin::{InputQueued, ToolCalled, ToolResult, UserInput};

/// A posted message holds at most this many image parts.
pub const MAX_IMAGES_PER_MESSAGE: usize = 20;

/// The media types an inline (`base64`) image may have: the ones both Anthropic and OpenAI
/// take.
const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

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
#[schemars(rename = "Message")]
pub struct SessionMessage {
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
    /// How hard the model should think on this turn (sent to the model: OpenAI's
    /// `reasoning_effort`, Anthropic's `output_config.effort`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// The reasoning a posted message asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reasoning {
    /// `low`, `medium` or `high`.
    pub effort: ReasoningEffort,
}

/// What a posted message says: its text (its text parts joined by blank lines; empty for a
/// message of images only) and its images, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Posted {
    /// The text.
    pub text: String,
    /// The images.
    pub images: Vec<Image>,
}

/// `POST /v1/agents/{a}/sessions/{s}/messages` (and `POST /v1/sessions/{s}/messages`): a
/// user message, either as `{content, role?}` or, as the Everruns SDK sends it, wrapped:
/// `{message: {role, content}}` (not both).
///
/// ```
/// use openharness_platform::NewMessage;
/// let new: NewMessage = serde_json::from_str(r#"{"content":[
///     {"type":"text","text":"What is this?"},
///     {"type":"image","url":"https://example.com/cat.png"}
/// ]}"#)?;
/// let posted = new.posted().unwrap();
/// assert_eq!((posted.text.as_str(), posted.images.len()), ("What is this?", 1));
/// let wrapped: NewMessage = serde_json::from_str(
///     r#"{"message":{"role":"user","content":[{"type":"text","text":"Hi"}]}}"#,
/// )?;
/// assert_eq!(wrapped.posted().unwrap().text, "Hi");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewMessage {
    /// `user` (the only role that can be posted; the default).
    #[serde(default)]
    pub role: Option<MessageRole>,
    /// Text and image parts (required unless `message` holds them).
    #[serde(default)]
    pub content: Vec<ContentPart>,
    /// The message wrapped, as the Everruns SDK sends it: `{role: "user", content}`.
    #[serde(default)]
    pub message: Option<MessageInput>,
    /// The model and reasoning effort for this turn (recorded with the message).
    #[serde(default)]
    pub controls: Option<Controls>,
    /// Data to keep with the message: a JSON object (recorded with it, returned as posted).
    #[serde(default)]
    pub metadata: Option<serde_json::Value>,
    /// Labels to keep with the message (at most 100, each 1 to 100 characters).
    #[serde(default)]
    pub tags: Vec<String>,
}

/// A message wrapped in `{message: …}`, as the Everruns SDK posts it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageInput {
    /// `user` (the only role that can be posted).
    pub role: MessageRole,
    /// Text and image parts.
    pub content: Vec<ContentPart>,
}

impl NewMessage {
    /// What the message says: its text parts, joined by blank lines, and its image parts,
    /// each checked. Anything but a user message of text and image parts, a message with
    /// neither text nor an image, a malformed image part, or `message` beside `role` or
    /// `content` is `422`.
    pub fn posted(&self) -> Result<Posted, PlatformError> {
        let (role, content) = match &self.message {
            Some(_) if self.role.is_some() || !self.content.is_empty() => {
                return Err(PlatformError::Invalid(
                    "give the message as `message: {role, content}` or as `content`, not both"
                        .into(),
                ));
            }
            Some(message) => (Some(message.role), &message.content),
            None => (self.role, &self.content),
        };
        if role.is_some_and(|role| role != MessageRole::User) {
            return Err(PlatformError::Invalid(
                "only user messages can be posted".into(),
            ));
        }
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for (index, part) in content.iter().enumerate() {
            match part {
                ContentPart::Text { text } => texts.push(text.as_str()),
                ContentPart::Image {
                    url,
                    base64,
                    media_type,
                } => images.push(
                    image(url.as_deref(), base64.as_deref(), media_type.as_deref()).map_err(
                        |problem| PlatformError::Invalid(format!("`content[{index}]`: {problem}")),
                    )?,
                ),
                _ => {
                    return Err(PlatformError::Invalid(
                        "a user message holds text and image parts only".into(),
                    ));
                }
            }
        }
        if images.len() > MAX_IMAGES_PER_MESSAGE {
            return Err(PlatformError::Invalid(format!(
                "a message holds at most {MAX_IMAGES_PER_MESSAGE} images; this one has {}",
                images.len()
            )));
        }
        let text = texts.join("\n\n");
        if text.trim().is_empty() && images.is_empty() {
            return Err(PlatformError::Invalid(
                "`content` must hold a non-empty text part or an image".into(),
            ));
        }
        Ok(Posted { text, images })
    }
}

/// An image part, checked: a `url` (`https://` or `http://`, or a `data:` URL of an image,
/// which becomes inline bytes), or `base64` bytes with their `media_type`.
fn image(
    url: Option<&str>,
    base64: Option<&str>,
    media_type: Option<&str>,
) -> Result<Image, String> {
    match (url, base64) {
        (Some(_), Some(_)) => Err("an image part gives `url` or `base64`, not both".into()),
        (None, None) => Err("an image part needs `url` or `base64` (with `media_type`)".into()),
        (Some(url), None) => {
            if let Some(data_url) = url.strip_prefix("data:") {
                let Some((media_type, data)) = data_url.split_once(";base64,") else {
                    return Err("a `data:` URL must be `data:<media type>;base64,<bytes>`".into());
                };
                return inline_image(media_type, data);
            }
            let web = url.starts_with("https://") || url.starts_with("http://");
            if !web || url.len() <= "https://".len() || url.chars().any(char::is_whitespace) {
                return Err(format!(
                    "`url` must be an http(s) or `data:` URL, got {:?}",
                    truncated(url)
                ));
            }
            Ok(Image::url(url))
        }
        (None, Some(data)) => {
            let Some(media_type) = media_type else {
                return Err("a `base64` image needs its `media_type`, such as `image/png`".into());
            };
            inline_image(media_type, data)
        }
    }
}

/// Inline image bytes, checked: a media type both providers take, and base64 that decodes.
fn inline_image(media_type: &str, data: &str) -> Result<Image, String> {
    if !IMAGE_MEDIA_TYPES.contains(&media_type) {
        return Err(format!(
            "`media_type` must be one of {}, got {:?}",
            IMAGE_MEDIA_TYPES.join(", "),
            truncated(media_type)
        ));
    }
    if data.is_empty() {
        return Err("the image's `base64` is empty".into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|err| format!("the image's `base64` does not decode: {err}"))?;
    Ok(Image::base64(media_type, data))
}

/// At most the first 80 characters of `text`, for an error message.
fn truncated(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

impl NewMessage {
    /// What is recorded with the message beside its text (in its `user:input` event's
    /// payload): `images`, `controls`, `metadata` and `tags`, each when given. Metadata that
    /// is not a JSON object is `422`.
    pub(crate) fn recorded_fields(
        &self,
        images: &[Image],
        tags: Vec<String>,
    ) -> Result<serde_json::Map<String, serde_json::Value>, PlatformError> {
        let mut fields = serde_json::Map::new();
        if !images.is_empty() {
            let images = serde_json::to_value(images)
                .map_err(|err| PlatformError::Invalid(format!("`content`: {err}")))?;
            fields.insert("images".into(), images);
        }
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
pub(crate) fn project(session: Uuid, seq: u64, event: &Envelope) -> Option<SessionMessage> {
    let payload = &event.payload;
    let text = |field: &str| payload[field].as_str().map(str::to_owned);
    let (role, part) = match event.name.as_ref() {
        // A message that answers one queued while a turn ran: the queued one is the message.
        UserInput::NAME if event.caused_by.is_some() => return None,
        UserInput::NAME | InputQueued::NAME => (MessageRole::User, user_content(event)?),
        AssistantReplied::NAME => (
            MessageRole::Assistant,
            vec![ContentPart::Text {
                text: text("text")?,
            }],
        ),
        ToolCalled::NAME => {
            let called = event.decode::<ToolCalled>().ok()?;
            let call = ContentPart::ToolCall {
                id: called.tool_call_id,
                name: called.tool,
                arguments: called.input,
            };
            (MessageRole::ToolCall, vec![call])
        }
        ToolResult::NAME => {
            let returned = event.decode::<ToolResult>().ok()?;
            let result = ContentPart::ToolResult {
                tool_call_id: returned.tool_call_id,
                result: returned.output,
                is_error: returned.is_error,
            };
            (MessageRole::ToolResult, vec![result])
        }
        _ => return None,
    };
    Some(SessionMessage {
        id: *event.id.as_uuid(),
        session_id: session,
        sequence: seq,
        role,
        content: part,
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

/// A user message's parts from its `user:input` event: the text (left out when empty and
/// images were posted) and then each recorded image, as posted. A payload whose images do not
/// decode still shows its text.
fn user_content(event: &Envelope) -> Option<Vec<ContentPart>> {
    let UserInput { text, images, .. } = match event.decode::<UserInput>() {
        Ok(input) => input,
        Err(_) => UserInput::new(event.payload["text"].as_str()?),
    };
    let mut parts = Vec::with_capacity(1 + images.len());
    if !text.is_empty() || images.is_empty() {
        parts.push(ContentPart::Text { text });
    }
    parts.extend(images.into_iter().map(|image| match image {
        Image::Url { url } => ContentPart::Image {
            url: Some(url),
            base64: None,
            media_type: None,
        },
        Image::Base64 { media_type, data } => ContentPart::Image {
            url: None,
            base64: Some(data),
            media_type: Some(media_type),
        },
    }));
    Some(parts)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_and_results_are_messages_whatever_spelling_they_were_recorded_with() {
        // The current spelling, and the older one (`agent`, `toolCallId`, `tool`).
        for (agent, id, name) in [
            ("agentName", "toolId", "toolName"),
            ("agent", "toolCallId", "tool"),
        ] {
            let called = Envelope::new(
                ToolCalled::NAME,
                json!({ agent: "a", id: "t1", name: "search", "input": { "q": 1 } }),
                None,
            );
            let message = project(Uuid::nil(), 3, &called).unwrap();
            assert_eq!(message.role, MessageRole::ToolCall);
            assert_eq!(
                message.content,
                [ContentPart::ToolCall {
                    id: "t1".into(),
                    name: "search".into(),
                    arguments: json!({ "q": 1 }),
                }]
            );
            let returned = Envelope::new(
                ToolResult::NAME,
                json!({ agent: "a", id: "t1", name: "search", "output": 2, "isError": true }),
                None,
            );
            let message = project(Uuid::nil(), 4, &returned).unwrap();
            assert_eq!(
                message.content,
                [ContentPart::ToolResult {
                    tool_call_id: "t1".into(),
                    result: json!(2),
                    is_error: true,
                }]
            );
        }
    }
}
