//! Byte-exact Anthropic Messages streams and errors for [`FakeServer::anthropic`].
//!
//! Events are written as `event: <type>\ndata: <json>\n\n` with the JSON carrying the same
//! `type`, a `ping` after `message_start`, text split into several `text_delta`s, tool input
//! split at arbitrary points into `input_json_delta` fragments starting with `""`, and
//! cumulative usage in `message_delta` (protocols.md §1.4).

use serde_json::{Value, json};

use super::server::{FakeResponse, FakeServer, RecordedRequest};

/// The key the fake Anthropic server accepts unless told otherwise.
pub const KEY: &str = "sk-ant-test-0123456789";

impl FakeServer {
    /// A fake Anthropic API accepting `key`. It answers 401 `authentication_error` for a wrong
    /// `x-api-key`, 400 without `anthropic-version`, 404 off `/v1/messages`, and 400
    /// `invalid_request_error` for a structured-output schema outside Anthropic's subset (or
    /// the beta `output_format` without its header), a malformed `system`, and messages the
    /// API refuses (a role other than `user`/`assistant`, a first message not the user's,
    /// roles not alternating, empty content, a `tool_result` without its `tool_use` in the
    /// message before or a `tool_use` without its `tool_result` in the message after, a
    /// prefill with structured output).
    pub async fn anthropic(key: &str) -> std::io::Result<Self> {
        Self::start("", key.to_owned(), check).await
    }
}

fn check(request: &RecordedRequest, key: &str) -> Result<(), FakeResponse> {
    if request.method != "POST" || request.path != "/v1/messages" {
        return Err(error(
            404,
            "not_found_error",
            "The requested resource could not be found.",
        ));
    }
    if request.header("x-api-key") != Some(key) {
        return Err(error(401, "authentication_error", "invalid x-api-key"));
    }
    if request.header("anthropic-version").is_none() {
        return Err(error(
            400,
            "invalid_request_error",
            "anthropic-version: header is required",
        ));
    }
    let body = &request.body;
    for field in ["model", "max_tokens", "messages"] {
        if body.get(field).is_none() {
            return Err(error(
                400,
                "invalid_request_error",
                &format!("{field}: Field required"),
            ));
        }
    }
    if body.get("output_format").is_some()
        && !request
            .header("anthropic-beta")
            .is_some_and(|b| b.contains("structured-outputs-2025-11-13"))
    {
        return Err(error(
            400,
            "invalid_request_error",
            "output_format: Extra inputs are not permitted",
        ));
    }
    if let Some(effort) = body.pointer("/output_config/effort")
        && !["low", "medium", "high", "xhigh", "max"].contains(&effort.as_str().unwrap_or(""))
    {
        return Err(error(
            400,
            "invalid_request_error",
            &format!(
                "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got {effort}"
            ),
        ));
    }
    if let Some(problem) = system_problem(body).or_else(|| messages_problem(body)) {
        return Err(error(400, "invalid_request_error", &problem));
    }
    if let Some(problem) = image_problem(body) {
        return Err(error(400, "invalid_request_error", &problem));
    }
    let schema = body
        .pointer("/output_config/format/schema")
        .or_else(|| body.pointer("/output_format/schema"));
    if let Some(schema) = schema {
        let problems = subset_violations(schema);
        if !problems.is_empty() {
            return Err(error(
                400,
                "invalid_request_error",
                &format!("output_config.format.schema: {}", problems.join("; ")),
            ));
        }
    }
    Ok(())
}

/// What is wrong with `system`, if it is there and malformed: it is a string or an array of
/// `text` blocks (protocols.md §1.2).
fn system_problem(body: &Value) -> Option<String> {
    match body.get("system")? {
        Value::String(_) => None,
        Value::Array(blocks)
            if blocks
                .iter()
                .all(|b| b["type"] == "text" && b["text"].is_string()) =>
        {
            None
        }
        other => Some(format!(
            "system: Input should be a valid string or a list of text blocks, got {other}"
        )),
    }
}

/// What is wrong with the roles and blocks of `body`'s messages, if anything, with the API's
/// messages: roles `user` or `assistant` only (the system prompt is the top-level `system`),
/// the first message the user's, roles alternating, no empty message or text block (an empty
/// final assistant message aside), each `tool_result` answering a `tool_use` of the message
/// just before, each `tool_use` answered in the message just after, `tool_result` blocks before
/// anything else in their message, and no final assistant message (a prefill) with structured
/// output.
fn messages_problem(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let blocks_of = |message: &Value| -> Vec<Value> {
        match &message["content"] {
            Value::String(text) => vec![json!({ "type": "text", "text": text })],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        }
    };
    let ids = |blocks: &[Value], kind: &str, field: &str| -> Vec<String> {
        blocks
            .iter()
            .filter(|b| b["type"] == kind)
            .filter_map(|b| b[field].as_str().map(str::to_owned))
            .collect()
    };
    let last = messages.len().saturating_sub(1);
    for (m, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if role != "user" && role != "assistant" {
            return Some(format!(
                "messages.{m}.role: Input should be 'user' or 'assistant'"
            ));
        }
        if m == 0 && role != "user" {
            return Some("messages: first message must use the \"user\" role".into());
        }
        if m > 0 && messages[m - 1]["role"] == role {
            return Some(format!(
                "messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"{role}\" roles in a row"
            ));
        }
        let blocks = blocks_of(message);
        let final_assistant = m == last && role == "assistant";
        if blocks.is_empty() && !final_assistant {
            return Some(format!(
                "messages.{m}: all messages must have non-empty content except for the optional final assistant message"
            ));
        }
        if blocks
            .iter()
            .any(|b| b["type"] == "text" && b["text"].as_str().is_none_or(str::is_empty))
            && !(final_assistant || messages.len() == 1)
        {
            return Some("messages: text content blocks must be non-empty".into());
        }
        let results = ids(&blocks, "tool_result", "tool_use_id");
        if !results.is_empty() {
            let first_other = blocks.iter().position(|b| b["type"] != "tool_result");
            let last_result = blocks.iter().rposition(|b| b["type"] == "tool_result");
            if let (Some(other), Some(result)) = (first_other, last_result)
                && other < result
            {
                return Some(format!(
                    "messages.{m}: `tool_result` blocks must come first in the message's content, before any other block"
                ));
            }
            let previous = m
                .checked_sub(1)
                .map(|p| blocks_of(&messages[p]))
                .unwrap_or_default();
            let asked = ids(&previous, "tool_use", "id");
            if let Some(stray) = results.iter().find(|id| !asked.contains(id)) {
                return Some(format!(
                    "messages.{m}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                ));
            }
        }
        let uses = ids(&blocks, "tool_use", "id");
        if !uses.is_empty() {
            let next = messages.get(m + 1).map(blocks_of).unwrap_or_default();
            let answered = ids(&next, "tool_result", "tool_use_id");
            let missing: Vec<&String> = uses.iter().filter(|id| !answered.contains(id)).collect();
            if !missing.is_empty() && m != last {
                return Some(format!(
                    "messages.{m}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
    }
    let structured =
        body.pointer("/output_config/format").is_some() || body.get("output_format").is_some();
    if structured && messages.last().is_some_and(|m| m["role"] == "assistant") {
        return Some(
            "Prefilling assistant messages is not supported when using structured outputs".into(),
        );
    }
    None
}

/// What is wrong with the first malformed `image` block of `body`'s messages, if one is
/// (protocols.md §1.2: `source` is `{type:"base64",media_type,data}` or `{type:"url",url}`).
fn image_problem(body: &Value) -> Option<String> {
    const MEDIA: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    let messages = body["messages"].as_array()?;
    for (m, message) in messages.iter().enumerate() {
        let Some(blocks) = message["content"].as_array() else {
            continue;
        };
        for (b, block) in blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b["type"] == "image")
        {
            let at = format!("messages.{m}.content.{b}.image.source");
            let source = &block["source"];
            let fine = match source["type"].as_str() {
                Some("base64") => {
                    MEDIA.contains(&source["media_type"].as_str().unwrap_or(""))
                        && source["data"].as_str().is_some_and(|d| !d.is_empty())
                }
                Some("url") => source["url"].as_str().is_some_and(|u| !u.is_empty()),
                _ => false,
            };
            if !fine {
                return Some(format!("{at}: invalid image source {source}"));
            }
        }
    }
    None
}

/// What in `schema` Anthropic's structured outputs reject (protocols.md §1.7), independently
/// of the transformation under test.
pub fn subset_violations(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if crate::schema::is_recursive(schema) {
        problems.push("Too many recursive definitions in schema".to_owned());
    }
    visit(schema, "", &mut problems);
    problems
}

fn visit(node: &Value, path: &str, problems: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            let is_object = map.get("type") == Some(&json!("object"))
                || map
                    .get("type")
                    .and_then(Value::as_array)
                    .is_some_and(|t| t.contains(&json!("object")))
                || map.contains_key("properties");
            if is_object && map.get("additionalProperties") != Some(&json!(false)) {
                problems.push(format!(
                    "{path}: additionalProperties must be false for object types"
                ));
            }
            for key in [
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minLength",
                "maxLength",
                "maxItems",
                "uniqueItems",
                "oneOf",
            ] {
                if map.contains_key(key) && !path.ends_with("/properties") {
                    problems.push(format!("{path}: `{key}` is not supported"));
                }
            }
            if map
                .get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 1)
            {
                problems.push(format!(
                    "{path}: minItems values other than 0 or 1 are not supported"
                ));
            }
            if let Some(format) = map.get("format").and_then(Value::as_str)
                && ![
                    "date-time",
                    "time",
                    "date",
                    "duration",
                    "email",
                    "hostname",
                    "uri",
                    "ipv4",
                    "ipv6",
                    "uuid",
                ]
                .contains(&format)
            {
                problems.push(format!("{path}: format `{format}` is not supported"));
            }
            for (key, child) in map {
                if key != "enum" && key != "const" && key != "default" {
                    visit(child, &format!("{path}/{key}"), problems);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                visit(item, &format!("{path}/{i}"), problems);
            }
        }
        _ => {}
    }
}

/// An Anthropic error response: `{"type":"error","error":{…},"request_id":…}`.
pub fn error(status: u16, kind: &str, message: &str) -> FakeResponse {
    FakeResponse::json(
        status,
        json!({ "type": "error", "error": { "type": kind, "message": message }, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy" }),
    )
    .header("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
}

/// 429 `rate_limit_error` with a `retry-after` header (seconds).
pub fn rate_limited(retry_after: &str) -> FakeResponse {
    error(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
    )
    .header("retry-after", retry_after)
}

/// 529 `overloaded_error`.
pub fn overloaded() -> FakeResponse {
    error(529, "overloaded_error", "Overloaded")
}

/// A content block of a scripted message.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text, streamed in several deltas.
    Text(String),
    /// A tool call, its input streamed as JSON fragments.
    ToolUse {
        /// `toolu_…`.
        id: String,
        /// The tool.
        name: String,
        /// Its input object.
        input: Value,
    },
}

/// Builds the SSE events of one streamed message.
///
/// ```
/// use openharness_provider::testing::anthropic::{Block, message_events};
/// let events = message_events(&[Block::Text("Hi".into())], "end_turn", 12, 3);
/// assert_eq!(events[0].lines().next(), Some("event: message_start"));
/// assert!(events.last().unwrap().starts_with("event: message_stop\ndata: {\"type\":\"message_stop\"}"));
/// ```
pub fn message_events(
    blocks: &[Block],
    stop_reason: &str,
    input_tokens: u64,
    output_tokens: u64,
) -> Vec<String> {
    let mut events = vec![
        event(&json!({
            "type": "message_start",
            "message": {
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": [],
                "model": "claude-sonnet-4-5", "stop_reason": null, "stop_sequence": null,
                "usage": { "input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1 }
            }
        })),
        event(&json!({ "type": "ping" })),
    ];
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Text(text) => {
                events.push(event(&json!({ "type": "content_block_start", "index": index, "content_block": { "type": "text", "text": "" } })));
                for piece in pieces(text, 7) {
                    events.push(event(&json!({ "type": "content_block_delta", "index": index, "delta": { "type": "text_delta", "text": piece } })));
                }
            }
            Block::ToolUse { id, name, input } => {
                events.push(event(&json!({ "type": "content_block_start", "index": index, "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } })));
                let mut fragments = vec![String::new()];
                fragments.extend(pieces(&input.to_string(), 5));
                for fragment in fragments {
                    events.push(event(&json!({ "type": "content_block_delta", "index": index, "delta": { "type": "input_json_delta", "partial_json": fragment } })));
                }
            }
        }
        events.push(event(
            &json!({ "type": "content_block_stop", "index": index }),
        ));
    }
    events.push(event(&json!({
        "type": "message_delta",
        "delta": { "stop_reason": stop_reason, "stop_sequence": null },
        "usage": { "output_tokens": output_tokens }
    })));
    events.push(event(&json!({ "type": "message_stop" })));
    events
}

/// One SSE event as Anthropic writes it.
pub fn event(data: &Value) -> String {
    let kind = data["type"].as_str().unwrap_or("message");
    format!("event: {kind}\ndata: {data}\n\n")
}

/// Splits `text` into pieces of about `size` characters (never inside a character).
pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// A streamed text answer.
pub fn text(text: &str) -> FakeResponse {
    FakeResponse::stream(message_events(
        &[Block::Text(text.into())],
        "end_turn",
        25,
        10,
    ))
}

/// A refusal: whatever text the model wrote, then `stop_reason: "refusal"`.
pub fn refusal(text: &str) -> FakeResponse {
    FakeResponse::stream(message_events(
        &[Block::Text(text.into())],
        "refusal",
        25,
        4,
    ))
}

/// A structured answer: `output` as JSON text (the `output_config.format` way).
pub fn json_output(output: &Value) -> FakeResponse {
    text(&output.to_string())
}

/// A structured answer through the forced tool.
pub fn tool_output(output: &Value) -> FakeResponse {
    tool_calls(&[(
        "toolu_01Output",
        crate::anthropic::OUTPUT_TOOL,
        output.clone(),
    )])
}

/// A turn calling these tools (`(id, name, input)`), after a short text.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> FakeResponse {
    let mut blocks = vec![Block::Text("Let me check.".into())];
    blocks.extend(calls.iter().map(|(id, name, input)| Block::ToolUse {
        id: (*id).to_owned(),
        name: (*name).to_owned(),
        input: input.clone(),
    }));
    FakeResponse::stream(message_events(&blocks, "tool_use", 40, 30))
}

/// A 200 stream that starts a text answer and then reports `overloaded_error` in an `error`
/// event.
pub fn error_in_stream(partial_text: &str) -> FakeResponse {
    let mut events = message_events(&[Block::Text(partial_text.into())], "end_turn", 10, 2);
    // Keep message_start, ping, the block start and its deltas; drop the block stop onwards.
    events.truncate(events.len() - 3);
    events.push(event(&json!({ "type": "error", "error": { "type": "overloaded_error", "message": "Overloaded" } })));
    FakeResponse::stream(events)
}
