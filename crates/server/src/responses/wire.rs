//! What the Open Responses routes read and answer beside the projection: the request body,
//! response ids (`resp_<seq>_<session>`: the request's event in its session), the fields a
//! response keeps in the log, and the specification's error shape.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openharness_core::builtin::ClientToolResult;
use openharness_core::{ClientTool, Envelope, SessionId};
use openharness_projection::ResponseHead;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// The payload field of a response's input event holding what the response echoes (`model`,
/// `previous_response_id`, `instructions`, `metadata`, `tools`, `store`, `background`), so a
/// response read back is the response that streamed.
pub(crate) const RESPONSE_FIELD: &str = "openResponses";

/// The payload field naming the protocol that started a turn, on its input event.
pub(crate) const VIA_FIELD: &str = "via";

/// This protocol's name in [`VIA_FIELD`].
pub(crate) const VIA: &str = "open-responses";

/// The body of `POST /v1/responses` (the fields this server reads; others are ignored, as
/// clients send many).
#[derive(Debug, Deserialize)]
pub(crate) struct CreateResponse {
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default)]
    pub(crate) input: Option<Value>,
    #[serde(default)]
    pub(crate) instructions: Option<String>,
    #[serde(default)]
    pub(crate) previous_response_id: Option<String>,
    #[serde(default)]
    pub(crate) conversation: Option<Value>,
    #[serde(default)]
    pub(crate) store: Option<bool>,
    #[serde(default)]
    pub(crate) stream: Option<bool>,
    #[serde(default)]
    pub(crate) tools: Option<Vec<Value>>,
    #[serde(default)]
    pub(crate) metadata: Option<Map<String, Value>>,
    #[serde(default)]
    pub(crate) background: Option<bool>,
}

/// A response's id: the seq of its request's event in `session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResponseId {
    pub(crate) seq: u64,
    pub(crate) session: SessionId,
}

impl ResponseId {
    /// Reads `resp_<seq>_<session>`; anything else names no response (`404`).
    pub(crate) fn parse(text: &str) -> Result<Self, OpenError> {
        let not_found = || {
            OpenError::not_found(format!(
                "no response `{text}`: a response id is `resp_<seq>_<session>`, as this server gave it"
            ))
        };
        let rest = text.strip_prefix("resp_").ok_or_else(not_found)?;
        let (seq, session) = rest.split_once('_').ok_or_else(not_found)?;
        let seq = seq.parse().map_err(|_| not_found())?;
        let session = session.parse().map_err(|_| not_found())?;
        Ok(Self { seq, session })
    }
}

impl std::fmt::Display for ResponseId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "resp_{}_{}", self.seq, self.session)
    }
}

/// What a request's `input` brings: the user's text, and the results of client tools
/// (`function_call_output` items) the previous response ended by calling.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Input {
    /// The newest user message's text (empty when the input is only tool results).
    pub(crate) text: String,
    /// The client tools' results, in order.
    pub(crate) tool_results: Vec<ClientToolResult>,
}

/// A request's `input`: a string, or items — the newest `user` message (its string content, or
/// its `input_text` parts joined) unless it comes before the newest tool output, and every
/// `function_call_output` (its `output` a string, or `input_text` parts joined). Earlier
/// messages are the client's copy of the conversation, which the session already holds.
pub(crate) fn input_of(input: Option<&Value>) -> Result<Input, OpenError> {
    let missing = || {
        OpenError::invalid(
            "input",
            "`input` must hold a user message with text, or `function_call_output` items",
        )
    };
    let items = match input {
        Some(Value::String(text)) if !text.is_empty() => {
            return Ok(Input {
                text: text.clone(),
                tool_results: Vec::new(),
            });
        }
        Some(Value::Array(items)) => items,
        _ => return Err(missing()),
    };
    let mut tool_results = Vec::new();
    let mut last_output = None;
    for (at, item) in items.iter().enumerate() {
        if item["type"] != "function_call_output" {
            continue;
        }
        let call_id = item["call_id"]
            .as_str()
            .filter(|id| !id.is_empty())
            .ok_or_else(|| {
                OpenError::invalid(
                    "input",
                    "a `function_call_output` needs the `call_id` it answers",
                )
            })?;
        let output = match &item["output"] {
            Value::String(text) => text.clone(),
            Value::Array(parts) => joined_text(parts, "input_text"),
            _ => {
                return Err(OpenError::invalid(
                    "input",
                    format!(
                        "the `function_call_output` of call `{call_id}` needs an `output` string"
                    ),
                ));
            }
        };
        tool_results.push(ClientToolResult::new(call_id, Value::String(output)));
        last_output = Some(at);
    }
    let newest = items
        .iter()
        .enumerate()
        .rev()
        .find(|(_, item)| item["role"] == "user");
    let text = match newest {
        Some((at, item)) if last_output.is_none_or(|output| at > output) => {
            match &item["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => joined_text(parts, "input_text"),
                _ => String::new(),
            }
        }
        _ => String::new(),
    };
    if text.is_empty() && tool_results.is_empty() {
        return Err(missing());
    }
    Ok(Input { text, tool_results })
}

/// The text of the parts of type `kind`, joined by newlines.
fn joined_text(parts: &[Value], kind: &str) -> String {
    parts
        .iter()
        .filter(|part| part["type"] == kind)
        .filter_map(|part| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The client tools a request's `tools` declares: `function` tools, each with a `name` and
/// optionally a `description` and `parameters` (a JSON Schema object). Any other kind of tool
/// is refused (`400`, `param: tools`): this server hosts no built-in tools for clients.
pub(crate) fn client_tools(tools: &[Value]) -> Result<Vec<ClientTool>, OpenError> {
    tools
        .iter()
        .map(|tool| {
            let kind = tool["type"].as_str().unwrap_or("?");
            if kind != "function" {
                return Err(OpenError::invalid(
                    "tools",
                    format!("tools of type `{kind}` are not served: declare `function` tools, which the client runs"),
                ));
            }
            let name = tool["name"].as_str().filter(|name| !name.is_empty()).ok_or_else(|| {
                OpenError::invalid("tools", "a `function` tool needs a `name`")
            })?;
            let description = tool["description"].as_str().unwrap_or_default();
            Ok(ClientTool::new(name, description, tool["parameters"].clone()))
        })
        .collect()
}

/// The conversation a request names (`"conversation": "<id>"` or `{"id": "<id>"}`).
pub(crate) fn conversation_of(
    conversation: Option<&Value>,
) -> Result<Option<SessionId>, OpenError> {
    let id = match conversation {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(id)) => id.as_str(),
        Some(Value::Object(fields)) => fields.get("id").and_then(Value::as_str).unwrap_or(""),
        Some(_) => "",
    };
    id.parse().map(Some).map_err(|err| {
        OpenError::invalid(
            "conversation",
            format!("`conversation` names no conversation: {err}"),
        )
    })
}

/// What a response records of its request, to echo it when read back.
pub(crate) fn recorded_head(request: &CreateResponse, model: &str) -> Value {
    let mut head = json!({ "model": model, "store": request.store.unwrap_or(true) });
    if let Some(previous) = &request.previous_response_id {
        head["previous_response_id"] = json!(previous);
    }
    if let Some(instructions) = &request.instructions {
        head["instructions"] = json!(instructions);
    }
    if let Some(metadata) = request.metadata.as_ref().filter(|m| !m.is_empty()) {
        head["metadata"] = Value::Object(metadata.clone());
    }
    if let Some(tools) = request.tools.as_ref().filter(|t| !t.is_empty()) {
        head["tools"] = json!(tools);
    }
    if request.background == Some(true) {
        head["background"] = json!(true);
    }
    head
}

/// The head of response `id` from its input event (`input`): what its request recorded, or,
/// for a turn started elsewhere, the session's workflow as its model.
pub(crate) fn head_of(id: &ResponseId, input: Option<&Envelope>, workflow: &str) -> ResponseHead {
    let mut head = ResponseHead::new(id.to_string(), workflow, id.session.to_string());
    let Some(recorded) = input.map(|event| &event.payload[RESPONSE_FIELD]) else {
        return head;
    };
    if let Some(model) = recorded["model"].as_str() {
        head.model = model.to_owned();
    }
    head.previous_response_id = recorded["previous_response_id"].as_str().map(str::to_owned);
    head.instructions = recorded["instructions"].as_str().map(str::to_owned);
    if let Some(metadata) = recorded["metadata"].as_object() {
        head.metadata = metadata.clone();
    }
    if let Some(tools) = recorded["tools"].as_array() {
        head.tools = tools.clone();
    }
    head.store = recorded["store"].as_bool().unwrap_or(true);
    head.background = recorded["background"].as_bool().unwrap_or(false);
    head
}

/// An error answer in the specification's shape: `{"error": {"message", "type", "param",
/// "code"}}` (`type` from the status: `invalid_request_error`, `not_found`,
/// `too_many_requests`, `server_error`).
#[derive(Debug)]
pub(crate) struct OpenError {
    pub(crate) error: ApiError,
    pub(crate) param: Option<&'static str>,
}

impl OpenError {
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::not_found(message).into()
    }

    pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> Self {
        Self {
            error: ApiError::bad_request(message),
            param: Some(param),
        }
    }
}

impl<E: Into<ApiError>> From<E> for OpenError {
    fn from(error: E) -> Self {
        Self {
            error: error.into(),
            param: None,
        }
    }
}

impl IntoResponse for OpenError {
    fn into_response(self) -> Response {
        let status = self.error.status;
        let kind = match status {
            StatusCode::NOT_FOUND => "not_found",
            StatusCode::TOO_MANY_REQUESTS => "too_many_requests",
            status if status.is_server_error() => "server_error",
            _ => "invalid_request_error",
        };
        let body = json!({ "error": {
            "message": self.error.message,
            "type": kind,
            "param": self.param,
            "code": self.error.code,
        } });
        (status, Json(body)).into_response()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use openharness_core::Tool as _;

    #[test]
    fn response_ids_round_trip_and_strangers_are_not_found() {
        let id = ResponseId {
            seq: 12,
            session: "chat_1".parse().unwrap(),
        };
        assert_eq!(id.to_string(), "resp_12_chat_1");
        assert_eq!(ResponseId::parse("resp_12_chat_1").unwrap(), id);
        for stranger in ["resp_x_s", "resp_12", "msg_1_s", "resp__s", "resp_1_"] {
            let err = ResponseId::parse(stranger).unwrap_err();
            assert_eq!(err.error.status, StatusCode::NOT_FOUND, "{stranger}");
        }
    }

    #[test]
    fn the_input_is_the_newest_user_message_and_the_tool_outputs() {
        let text = |input: Value| input_of(Some(&input)).unwrap().text;
        assert_eq!(text(json!("Hi")), "Hi");
        let items = json!([
            { "type": "message", "role": "user", "content": "first" },
            { "type": "message", "role": "assistant", "content": "ok" },
            { "type": "message", "role": "user", "content": [
                { "type": "input_text", "text": "second" },
                { "type": "input_image", "image_url": "data:image/png;base64,AA==" } ] },
        ]);
        assert_eq!(text(items), "second");
        for wrong in [
            json!(""),
            json!([]),
            json!(3),
            json!([{ "role": "system", "content": "x" }]),
            json!([{ "type": "function_call_output", "output": "64" }]),
            json!([{ "type": "function_call_output", "call_id": "c1", "output": 64 }]),
        ] {
            assert_eq!(
                input_of(Some(&wrong)).unwrap_err().param,
                Some("input"),
                "{wrong}"
            );
        }
        assert!(input_of(None).is_err());
        // The client's copy of the conversation, then the output: only the output is new.
        let roundtrip = json!([
            { "type": "message", "role": "user", "content": "Weather?" },
            { "type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}" },
            { "type": "function_call_output", "call_id": "c1", "output": "64 degrees" },
        ]);
        let input = input_of(Some(&roundtrip)).unwrap();
        assert_eq!(input.text, "");
        assert_eq!(
            input.tool_results,
            [ClientToolResult::new("c1", json!("64 degrees"))]
        );
        let then_said = json!([
            { "type": "function_call_output", "call_id": "c1", "output": [{ "type": "input_text", "text": "64" }] },
            { "type": "message", "role": "user", "content": "Thanks" },
        ]);
        let input = input_of(Some(&then_said)).unwrap();
        assert_eq!(
            (input.text.as_str(), input.tool_results.len()),
            ("Thanks", 1)
        );
    }

    #[test]
    fn function_tools_are_client_tools_and_nothing_else_is() {
        let tools = client_tools(&[json!({ "type": "function", "name": "get_weather",
            "description": "Weather.", "parameters": { "type": "object" } })])
        .unwrap();
        assert_eq!(tools[0].name(), "get_weather");
        for wrong in [
            json!({ "type": "web_search" }),
            json!({ "type": "function" }),
        ] {
            assert_eq!(client_tools(&[wrong]).unwrap_err().param, Some("tools"));
        }
    }
}
