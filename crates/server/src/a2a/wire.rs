//! What the A2A routes read and answer beside the projection: the JSON-RPC 2.0 envelope and
//! the specification's error codes, task ids (`task_<seq>_<session>`: the message's event in
//! its session), a client's message, and a task read back from the store.

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use openharness_core::builtin::{InputQueued, UserInput, WorkflowStarted};
use openharness_core::{Envelope, Event as _, EventId, SessionId};
use openharness_projection::{TaskHead, TaskStream};
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

/// The protocol version this server speaks, in the `A2A-Version` header and the card.
pub(crate) const VERSION: &str = "1.0";

/// The header a client names its protocol version in.
pub(crate) const VERSION_HEADER: &str = "a2a-version";

/// This protocol's name in the input event's `via` field.
pub(crate) const VIA: &str = "a2a";

/// A JSON-RPC error of the specification (§5.4, §9.5): its code, a sentence, and the
/// `google.rpc.ErrorInfo` reason the answer's `data` carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RpcError {
    pub(crate) code: i64,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl RpcError {
    fn new(code: i64, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
        }
    }

    /// `-32700`: the body is not JSON.
    pub(crate) fn parse(message: impl Into<String>) -> Self {
        Self::new(-32700, "PARSE_ERROR", message)
    }

    /// `-32600`: not a JSON-RPC 2.0 request.
    pub(crate) fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, "INVALID_REQUEST", message)
    }

    /// `-32601`: no such method.
    pub(crate) fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            "METHOD_NOT_FOUND",
            format!(
                "no method `{method}`: this server speaks A2A 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask, ListTasks)"
            ),
        )
    }

    /// `-32602`: the params cannot be used.
    pub(crate) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, "INVALID_PARAMS", message)
    }

    /// `-32603`: this server failed.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, "INTERNAL_ERROR", message)
    }

    /// `-32001`: no such task.
    pub(crate) fn task_not_found(message: impl Into<String>) -> Self {
        Self::new(-32001, "TASK_NOT_FOUND", message)
    }

    /// `-32002`: the task cannot be canceled (over, or waiting for an answer).
    pub(crate) fn not_cancelable(message: impl Into<String>) -> Self {
        Self::new(-32002, "TASK_NOT_CANCELABLE", message)
    }

    /// `-32003`: push notifications are not served.
    pub(crate) fn push_not_supported() -> Self {
        Self::new(
            -32003,
            "PUSH_NOTIFICATION_NOT_SUPPORTED",
            "push notifications are not served: stream the task (SendStreamingMessage, SubscribeToTask) or poll it (GetTask)",
        )
    }

    /// `-32004`: the operation is not served in this case.
    pub(crate) fn unsupported(message: impl Into<String>) -> Self {
        Self::new(-32004, "UNSUPPORTED_OPERATION", message)
    }

    /// `-32007`: there is no extended card.
    pub(crate) fn no_extended_card() -> Self {
        Self::new(
            -32007,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            "this agent has no extended card: its public card is all there is",
        )
    }

    /// `-32009`: a protocol version this server does not speak.
    pub(crate) fn version(asked: Option<&str>) -> Self {
        Self::new(
            -32009,
            "VERSION_NOT_SUPPORTED",
            format!(
                "this server speaks A2A {VERSION}, not {}: send the header `A2A-Version: {VERSION}` (a missing header means 0.3)",
                asked.map_or_else(
                    || "0.3 (no `A2A-Version` header)".to_owned(),
                    |v| format!("`{v}`")
                )
            ),
        )
    }

    /// The `error` member of an answer.
    pub(crate) fn body(&self) -> Value {
        json!({
            "code": self.code,
            "message": self.message,
            "data": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": self.reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }],
        })
    }
}

impl From<ApiError> for RpcError {
    fn from(error: ApiError) -> Self {
        match error.status {
            StatusCode::NOT_FOUND => Self::task_not_found(error.message),
            StatusCode::BAD_REQUEST | StatusCode::UNPROCESSABLE_ENTITY => {
                Self::invalid_params(error.message)
            }
            StatusCode::CONFLICT | StatusCode::TOO_MANY_REQUESTS => {
                Self::unsupported(error.message)
            }
            _ => Self::internal(error.message),
        }
    }
}

impl From<openharness_host::HostError> for RpcError {
    fn from(error: openharness_host::HostError) -> Self {
        ApiError::from(error).into()
    }
}

/// A JSON-RPC answer to the request `id`: its result, or its error.
pub(crate) fn answer(id: &Value, result: Result<Value, RpcError>) -> Value {
    match result {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.body() }),
    }
}

/// An answer as an HTTP response: always `200 application/json` (JSON-RPC errors are not
/// HTTP errors).
pub(crate) fn respond(body: &Value) -> Response {
    let mut response = (StatusCode::OK, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A JSON-RPC success answer, serialised at once with its `result` (fields in the order a
/// JSON map writes them, so the bytes are those of `{"jsonrpc", "id", "result"}` as a map).
#[derive(serde::Serialize)]
struct Success<'a, R> {
    id: &'a Value,
    jsonrpc: &'static str,
    result: &'a R,
}

/// One stream response of the request `id` as an SSE frame, with the frame id `frame_id`
/// (`<seq>.<n>`) when it has one: the envelope and the response serialised at once, straight
/// into the frame.
pub(crate) fn frame<R: serde::Serialize>(id: &Value, frame_id: Option<&str>, result: &R) -> Bytes {
    let data = Success {
        id,
        jsonrpc: "2.0",
        result,
    };
    crate::sse::json_frame(None, frame_id, &data)
}

/// The `event: error` frame a stream ends with when it cannot go on.
pub(crate) fn error_frame(id: &Value, error: &RpcError) -> Bytes {
    crate::sse::frame(
        Some("error"),
        None,
        &answer(id, Err(error.clone())).to_string(),
    )
}

/// A task's id: the seq of its message's event in `session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TaskId {
    pub(crate) seq: u64,
    pub(crate) session: SessionId,
}

impl TaskId {
    /// Reads `task_<seq>_<session>`; anything else names no task (`-32001`).
    pub(crate) fn parse(text: &str) -> Result<Self, RpcError> {
        let not_found = || {
            RpcError::task_not_found(format!(
                "no task `{text}`: a task id is `task_<seq>_<session>`, as this server gave it"
            ))
        };
        let rest = text.strip_prefix("task_").ok_or_else(not_found)?;
        let (seq, session) = rest.split_once('_').ok_or_else(not_found)?;
        let seq = seq.parse().map_err(|_| not_found())?;
        let session = session.parse().map_err(|_| not_found())?;
        Ok(Self { seq, session })
    }

    /// The projection's head for this task.
    pub(crate) fn head(&self) -> TaskHead {
        TaskHead::new(self.to_string(), self.session.to_string())
    }
}

impl std::fmt::Display for TaskId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task_{}_{}", self.seq, self.session)
    }
}

/// A client's message, as this server reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Incoming {
    /// The client's id of the message.
    pub(crate) message_id: Option<String>,
    /// Its text parts, joined by line breaks.
    pub(crate) text: String,
    /// A decision on an approval: a `data` part `{"approved": bool, "reason"?: string}`.
    pub(crate) approved: Option<(bool, Option<String>)>,
    pub(crate) context_id: Option<String>,
    pub(crate) task_id: Option<String>,
    /// `metadata.requestId`: the question it answers, when the task waits on several.
    pub(crate) request_id: Option<String>,
}

/// Reads `params.message` (`-32602` when it is missing, has no role `ROLE_USER`, or holds
/// neither text nor a decision).
pub(crate) fn incoming(params: &Value) -> Result<Incoming, RpcError> {
    let message = params
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| RpcError::invalid_params("`message` is required"))?;
    match message.get("role").and_then(Value::as_str) {
        None | Some("ROLE_USER") => {}
        Some(role) => {
            return Err(RpcError::invalid_params(format!(
                "`message.role` is `{role}`: a client sends `ROLE_USER` messages"
            )));
        }
    }
    let parts = message
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| RpcError::invalid_params("`message.parts` must be a list"))?;
    let text = parts
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let approved = parts
        .iter()
        .filter_map(|part| part.get("data"))
        .find_map(|data| {
            let approved = data.get("approved")?.as_bool()?;
            let reason = data
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Some((approved, reason))
        });
    if text.is_empty() && approved.is_none() {
        return Err(RpcError::invalid_params(
            "`message.parts` holds no text: send a `text` part (or, to answer an approval, a `data` part `{\"approved\": true}`)",
        ));
    }
    let string = |name: &str| {
        message
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(Incoming {
        message_id: string("messageId"),
        text,
        approved,
        context_id: string("contextId"),
        task_id: string("taskId"),
        request_id: message
            .get("metadata")
            .and_then(|m| m.get("requestId"))
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The request a message answers among `open` (the task's open questions, in `session`): the
/// one its `metadata.requestId` names, else the only one, by the rule every surface that takes
/// input follows (`crate::chat::request_answered`); `-32602` otherwise.
pub(crate) fn answered(
    session: &SessionId,
    incoming: &Incoming,
    open: &[EventId],
) -> Result<EventId, RpcError> {
    let named = incoming
        .request_id
        .as_deref()
        .map(|id| {
            id.parse::<EventId>().map_err(|_| {
                RpcError::invalid_params(format!(
                    "`metadata.requestId` `{id}` is not a request id: give the `requestId` of the task's status message"
                ))
            })
        })
        .transpose()?;
    crate::chat::request_answered(session, named, open.to_vec(), "as `metadata.requestId`")
        .map_err(|err| RpcError::invalid_params(err.message))?
        .ok_or_else(|| RpcError::invalid_params("the task waits for no answer"))
}

/// Whether a task can start at `event`: a new session's first event, an input, or an input
/// queued behind a running turn.
pub(crate) fn opens_task(event: &Envelope) -> bool {
    [WorkflowStarted::NAME, UserInput::NAME, InputQueued::NAME].contains(&event.name.as_ref())
}

/// How many events one read of the store takes.
const PAGE: u64 = 256;

/// A task as the store has it now: the projection fed every event from the task's message
/// on (up to its end), and the seq after the last event read (where a live tail goes on).
pub(crate) async fn read_task(
    state: &AppState,
    id: &TaskId,
) -> Result<(TaskStream, u64), RpcError> {
    let store = state.host.store();
    let internal = |err: openharness_core::StoreError| RpcError::internal(err.to_string());
    let first = store
        .events(&id.session, id.seq..id.seq + 1)
        .await
        .map_err(internal)?;
    if !first.first().is_some_and(opens_task) {
        return Err(RpcError::task_not_found(format!(
            "no task `{id}`: position {} of session {} holds no message",
            id.seq, id.session
        )));
    }
    let mut projected = TaskStream::new(id.head());
    let mut from = id.seq;
    loop {
        let page = store
            .events(&id.session, from..from + PAGE)
            .await
            .map_err(internal)?;
        if page.is_empty() {
            break;
        }
        for event in &page {
            projected.step(event);
        }
        from += page.len() as u64;
        if projected.state().is_terminal() {
            break;
        }
    }
    Ok((projected, from))
}

/// Keeps the newest `length` messages of `task`'s history (`historyLength`).
pub(crate) fn trim_history(task: &mut Value, length: Option<u64>) {
    let Some(length) = length else {
        return;
    };
    if let Some(history) = task.get_mut("history").and_then(Value::as_array_mut) {
        let keep = usize::try_from(length).unwrap_or(usize::MAX);
        let drop = history.len().saturating_sub(keep);
        history.drain(..drop);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_the_envelope_as_a_map_would_write_it() {
        let chunk = openharness_projection::TaskResponse::ArtifactText(
            openharness_projection::ArtifactText {
                task_id: "task_3_s".into(),
                context_id: "s".into(),
                artifact_id: "artifact-1".into(),
                name: "assistant".into(),
                text: "say \"hi\"\n日本 🎉".into(),
                append: true,
                last_chunk: false,
            },
        );
        let status = json!({ "statusUpdate": { "taskId": "task_3_s", "status": { "state": "TASK_STATE_WORKING" } } });
        for id in [json!(7), json!("req-\"1\""), Value::Null] {
            for result in [chunk.to_value(), status.clone()] {
                let map = json!({ "jsonrpc": "2.0", "id": id, "result": result });
                let expected = crate::sse::frame(None, Some("4.1"), &map.to_string());
                assert_eq!(frame(&id, Some("4.1"), &result), expected);
            }
            let map = json!({ "jsonrpc": "2.0", "id": id, "result": chunk.to_value() });
            let expected = crate::sse::frame(None, Some("4.1"), &map.to_string());
            assert_eq!(frame(&id, Some("4.1"), &chunk), expected);
        }
    }

    #[test]
    fn task_ids_round_trip_and_strangers_are_not_found() {
        let id = TaskId {
            seq: 3,
            session: "chat_1".parse().unwrap(),
        };
        assert_eq!(id.to_string(), "task_3_chat_1");
        assert_eq!(TaskId::parse("task_3_chat_1").unwrap(), id);
        for stranger in ["task_x_s", "task_3", "resp_3_s", "task__s", "task_1_"] {
            assert_eq!(
                TaskId::parse(stranger).unwrap_err().code,
                -32001,
                "{stranger}"
            );
        }
    }

    #[test]
    fn a_message_is_its_text_parts_or_a_decision() {
        let params = json!({ "message": { "messageId": "m1", "role": "ROLE_USER",
            "contextId": "c1", "taskId": "", "metadata": { "requestId": "r1" },
            "parts": [{ "text": "one" }, { "url": "https://x" }, { "text": "two" }] } });
        let message = incoming(&params).unwrap();
        assert_eq!(message.text, "one\ntwo");
        assert_eq!(message.message_id.as_deref(), Some("m1"));
        assert_eq!(message.context_id.as_deref(), Some("c1"));
        assert_eq!(message.task_id, None);
        assert_eq!(message.request_id.as_deref(), Some("r1"));
        let decision = json!({ "message": { "messageId": "m2", "role": "ROLE_USER",
            "parts": [{ "data": { "approved": false, "reason": "not yet" } }] } });
        assert_eq!(
            incoming(&decision).unwrap().approved,
            Some((false, Some("not yet".to_owned())))
        );
        for wrong in [
            json!({}),
            json!({ "message": { "role": "ROLE_AGENT", "parts": [{ "text": "x" }] } }),
            json!({ "message": { "parts": [] } }),
            json!({ "message": { "parts": "x" } }),
        ] {
            assert_eq!(incoming(&wrong).unwrap_err().code, -32602, "{wrong}");
        }
    }

    #[test]
    fn errors_carry_their_code_and_reason() {
        let body = RpcError::version(Some("0.3")).body();
        assert_eq!(body["code"], -32009);
        assert_eq!(body["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
        let answer = answer(&json!(7), Err(RpcError::task_not_found("gone")));
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], -32001);
        let missing: RpcError = ApiError::not_found("x").into();
        assert_eq!(missing.code, -32001);
    }
}
