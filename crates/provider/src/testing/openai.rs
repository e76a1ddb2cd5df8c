//! Byte-exact Chat Completions streams and errors for [`FakeServer::openai`].
//!
//! `data: <chunk>\n\n` lines without `event:`, every chunk with the same `id`, `created` and
//! `model`; tool-call fragments keyed by `index` with `id`/`name` only on the first; a finish
//! chunk; the `include_usage` chunk with `choices: []`; then `data: [DONE]` (protocols.md §2.1).

use serde_json::{Value, json};

use super::anthropic::pieces;
use super::server::{FakeResponse, FakeServer, RecordedRequest};

/// The key the fake OpenAI server accepts unless told otherwise.
pub const KEY: &str = "sk-proj-test-0123456789";

impl FakeServer {
    /// A fake Chat Completions API at `{base_url}` = `http://127.0.0.1:PORT/v1` accepting
    /// `Authorization: Bearer <key>`. It answers 401 for a wrong key, 404 off
    /// `/v1/chat/completions`, 400 for a `strict` schema that breaks the strict rules, and 400
    /// for messages the API refuses (an unknown role, an assistant message without content or
    /// `tool_calls`, a `tool` message that answers no call, a call left unanswered).
    pub async fn openai(key: &str) -> std::io::Result<Self> {
        Self::start("/v1", key.to_owned(), check).await
    }
}

fn check(request: &RecordedRequest, key: &str) -> Result<(), FakeResponse> {
    if request.method != "POST" || request.path != "/v1/chat/completions" {
        return Err(error(404, "invalid_request_error", "Unknown request URL"));
    }
    if request.header("authorization") != Some(&format!("Bearer {key}")) {
        return Err(error(
            401,
            "invalid_request_error",
            "Incorrect API key provided",
        ));
    }
    if let Some(effort) = request.body.get("reasoning_effort")
        && !["minimal", "low", "medium", "high"].contains(&effort.as_str().unwrap_or(""))
    {
        return Err(error(
            400,
            "invalid_request_error",
            &format!("Invalid value for 'reasoning_effort': {effort}"),
        ));
    }
    if let Some(problem) = messages_problem(&request.body) {
        return Err(error(400, "invalid_request_error", &problem));
    }
    let images = request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "image_url");
    for part in images {
        let url = part["image_url"]["url"].as_str().unwrap_or("");
        if !(url.starts_with("https://")
            || url.starts_with("http://")
            || url.starts_with("data:image/"))
        {
            return Err(error(
                400,
                "invalid_request_error",
                &format!("Invalid image_url: {}", part["image_url"]),
            ));
        }
    }
    let format = &request.body["response_format"]["json_schema"];
    if format["strict"] == json!(true) {
        let problems = strict_violations(&format["schema"]);
        if !problems.is_empty() {
            return Err(error(
                400,
                "invalid_request_error",
                &format!(
                    "Invalid schema for response_format: {}",
                    problems.join("; ")
                ),
            ));
        }
    }
    Ok(())
}

/// What is wrong with the roles of `body`'s messages, if anything, in the API's words: roles
/// `system`, `developer`, `user`, `assistant` or `tool`; an assistant's `content` a string
/// unless it has `tool_calls`; each `tool` message answering a call of the assistant message
/// before its run of tool messages; each call answered before the next other message.
fn messages_problem(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    if messages.is_empty() {
        return Some("[] is too short - 'messages'".into());
    }
    // The calls of the latest assistant message with `tool_calls` not yet answered.
    let mut open: Vec<String> = Vec::new();
    let mut answering = false;
    for (m, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        if !["system", "developer", "user", "assistant", "tool"].contains(&role) {
            return Some(format!(
                "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function' and 'developer'."
            ));
        }
        if role == "tool" {
            let id = message["tool_call_id"].as_str().unwrap_or("");
            if !answering || !open.iter().any(|call| call == id) {
                return Some(format!(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{m}], tool_call_id {id:?})"
                ));
            }
            open.retain(|call| call != id);
            continue;
        }
        if !open.is_empty() {
            return Some(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                open.join(", ")
            ));
        }
        answering = false;
        if role == "assistant" {
            let calls: Vec<String> = message["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|call| call["id"].as_str().map(str::to_owned))
                .collect();
            if calls.is_empty() && !message["content"].is_string() {
                return Some(format!(
                    "Invalid value for 'messages[{m}].content': expected a string, got {}.",
                    message["content"]
                ));
            }
            answering = !calls.is_empty();
            open = calls;
        }
    }
    if !open.is_empty() {
        return Some(format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            open.join(", ")
        ));
    }
    None
}

/// What in `schema` OpenAI's strict mode rejects (protocols.md §2.2).
pub fn strict_violations(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if schema["type"] != json!("object") || schema.get("anyOf").is_some() {
        problems.push("the root must be an object and not anyOf".to_owned());
    }
    visit(schema, "", &mut problems);
    problems
}

fn visit(node: &Value, path: &str, problems: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let Some(properties) = map.get("properties").and_then(Value::as_object) {
                if map.get("additionalProperties") != Some(&json!(false)) {
                    problems.push(format!("{path}: additionalProperties must be false"));
                }
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                for name in properties.keys() {
                    if !required.contains(&name.as_str()) {
                        problems.push(format!("{path}: `{name}` must be in required"));
                    }
                }
            }
            for key in ["allOf", "not", "if", "then", "else", "oneOf"] {
                if map.contains_key(key) && !path.ends_with("/properties") {
                    problems.push(format!("{path}: `{key}` is not permitted"));
                }
            }
            for (key, child) in map {
                if key != "enum" && key != "const" {
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

/// An OpenAI error response: `{"error":{"message","type","param","code"}}`.
pub fn error(status: u16, kind: &str, message: &str) -> FakeResponse {
    FakeResponse::json(
        status,
        json!({ "error": { "message": message, "type": kind, "param": null, "code": null } }),
    )
    .header("x-request-id", "req_7c1b0e6f0a")
}

/// 429 with `retry-after-ms`.
pub fn rate_limited(retry_after_ms: &str) -> FakeResponse {
    error(429, "requests", "Rate limit reached for requests")
        .header("retry-after-ms", retry_after_ms)
}

fn chunk(choices: Value, usage: Value) -> String {
    let chunk = json!({
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1745678496,
        "model": "gpt-4.1-nano-2025-04-14",
        "service_tier": "default",
        "system_fingerprint": "fp_eede8f0d45",
        "choices": choices,
        "usage": usage,
    });
    format!("data: {chunk}\n\n")
}

fn delta(delta: Value, finish: Option<&str>) -> String {
    chunk(
        json!([{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }]),
        Value::Null,
    )
}

fn ending(finish: &str, prompt: u64, completion: u64) -> Vec<String> {
    vec![
        delta(json!({}), Some(finish)),
        chunk(
            json!([]),
            json!({
                "prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                "prompt_tokens_details": { "cached_tokens": 0, "audio_tokens": 0 },
                "completion_tokens_details": { "reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0 }
            }),
        ),
        "data: [DONE]\n\n".to_owned(),
    ]
}

/// The chunks of a streamed text answer.
pub fn text_chunks(text: &str) -> Vec<String> {
    let mut chunks = vec![delta(
        json!({ "role": "assistant", "content": "", "refusal": null }),
        None,
    )];
    chunks.extend(
        pieces(text, 6)
            .into_iter()
            .map(|p| delta(json!({ "content": p }), None)),
    );
    chunks.extend(ending("stop", 67, 31));
    chunks
}

/// A refusal: the model streams `message` in `delta.refusal` (not `content`) and stops.
pub fn refusal(message: &str) -> FakeResponse {
    let mut chunks = vec![delta(
        json!({ "role": "assistant", "content": null, "refusal": "" }),
        None,
    )];
    chunks.extend(
        pieces(message, 6)
            .into_iter()
            .map(|p| delta(json!({ "refusal": p }), None)),
    );
    chunks.extend(ending("stop", 67, 12));
    FakeResponse::stream(chunks)
}

/// A streamed text answer.
pub fn text(text: &str) -> FakeResponse {
    FakeResponse::stream(text_chunks(text))
}

/// A structured answer: `output` as JSON text.
pub fn json_output(output: &Value) -> FakeResponse {
    text(&output.to_string())
}

/// A turn calling these tools (`(id, name, arguments)`), arguments streamed in fragments.
pub fn tool_calls(calls: &[(&str, &str, Value)]) -> FakeResponse {
    let mut chunks = vec![delta(
        json!({ "role": "assistant", "content": null, "refusal": null }),
        None,
    )];
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        chunks.push(delta(json!({ "tool_calls": [{ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }] }), None));
        for piece in pieces(&arguments.to_string(), 4) {
            chunks.push(delta(
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                None,
            ));
        }
    }
    chunks.extend(ending("tool_calls", 80, 40));
    FakeResponse::stream(chunks)
}

/// Like [`tool_calls`], as some OpenAI-compatible servers stream it: every fragment repeats
/// the function's whole name.
pub fn tool_calls_repeating_names(calls: &[(&str, &str, Value)]) -> FakeResponse {
    let mut chunks = vec![delta(json!({ "role": "assistant", "content": null }), None)];
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        chunks.push(delta(json!({ "tool_calls": [{ "index": index, "id": id, "type": "function", "function": { "name": name, "arguments": "" } }] }), None));
        for piece in pieces(&arguments.to_string(), 4) {
            chunks.push(delta(
                json!({ "tool_calls": [{ "index": index, "function": { "name": name, "arguments": piece } }] }),
                None,
            ));
        }
    }
    chunks.extend(ending("tool_calls", 80, 40));
    FakeResponse::stream(chunks)
}

/// A 200 stream that starts a text answer and then sends a `data: {"error": …}` line and
/// closes.
pub fn error_in_stream(partial_text: &str) -> FakeResponse {
    let mut chunks = vec![delta(json!({ "role": "assistant", "content": "" }), None)];
    chunks.push(delta(json!({ "content": partial_text }), None));
    chunks.push(format!("data: {}\n\n", json!({ "error": { "message": "The server had an error while processing your request.", "type": "server_error", "param": null, "code": null } })));
    FakeResponse::stream(chunks)
}
