//! The AI SDK 5 chat endpoint: `POST /api/chat` takes the body `useChat`'s default transport
//! sends (`{id, messages, trigger, messageId?}`; the chat id is the session id; only the newest
//! user message is new input) and answers with the UI message stream of the turn it starts;
//! `GET /api/chat/{id}/stream` replays the turn this server is running from its `start` and
//! follows it live, or answers `204`.
//!
//! A turn's events become chunks of the AI SDK 5.0.0 field set (no field newer than the oldest
//! v5 release, whose chunk schemas are strict): `start`, then per agent call `start-step`,
//! `text-start`/`text-delta`/`text-end`, `tool-input-start`/`tool-input-available`,
//! `tool-output-available`/`tool-output-error`, a `data-output` part with its structured
//! output, `finish-step` (every text part closed before it); `error` for `error:occurred`;
//! `data-input-requested` for a request to a person; `finish` and `[DONE]` at the turn's end.
//! Each chunk also carries an `id:` line with the event's seq, which `useChat` ignores.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::builtin::Builtin;
use openharness_core::{Recorded, RunOptions, SessionId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

/// The body of `useChat`'s default transport.
#[derive(Deserialize)]
pub(crate) struct ChatRequest {
    id: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    trigger: Option<String>,
}

#[derive(Deserialize)]
struct ChatMessage {
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
}

/// Turns a turn's recorded events into UI message stream chunks, one event at a time.
#[derive(Debug, Default)]
pub(crate) struct UiStream {
    started: bool,
    in_step: bool,
    open_text: Option<String>,
    tools: HashSet<String>,
}

impl UiStream {
    /// The chunks `recorded` adds; `done` once the turn's end is reached.
    pub(crate) fn chunks(&mut self, recorded: &Recorded) -> (Vec<Value>, bool) {
        let mut out = Vec::new();
        let event = &recorded.event;
        let Some(Ok(builtin)) = Builtin::decode(event) else {
            return (out, false);
        };
        if !self.started
            && !matches!(
                builtin,
                Builtin::UserInput(_) | Builtin::WorkflowStarted(_) | Builtin::InputReceived(_)
            )
        {
            self.started = true;
            out.push(json!({ "type": "start", "messageId": format!("msg-{}", event.id) }));
        }
        match builtin {
            Builtin::AgentStarted(_) => {
                self.close_step(&mut out);
                self.in_step = true;
                out.push(json!({ "type": "start-step" }));
            }
            Builtin::TextDelta(delta) => {
                self.ensure_step(&mut out);
                if self.open_text.is_none() {
                    let id = format!("text-{}", event.id);
                    out.push(json!({ "type": "text-start", "id": id }));
                    self.open_text = Some(id);
                }
                if let Some(id) = &self.open_text {
                    out.push(json!({ "type": "text-delta", "id": id, "delta": delta.delta }));
                }
            }
            Builtin::TextComplete(_) => self.close_text(&mut out),
            Builtin::ToolCalled(call) => {
                self.ensure_step(&mut out);
                self.close_text(&mut out);
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
                self.close_text(&mut out);
                if let Some(output) = completed.output {
                    out.push(json!({ "type": "data-output", "data": { "agent": completed.agent, "output": output } }));
                }
                self.close_step(&mut out);
            }
            Builtin::ErrorOccurred(error) => {
                out.push(json!({ "type": "error", "errorText": error.message }));
            }
            Builtin::InputRequested(request) => {
                out.push(json!({ "type": "data-input-requested", "data": { "requestId": event.id, "prompt": request.prompt } }));
            }
            Builtin::WorkflowCompleted(_) => {
                if !self.started {
                    self.started = true;
                    out.push(json!({ "type": "start", "messageId": format!("msg-{}", event.id) }));
                }
                self.close_text(&mut out);
                self.close_step(&mut out);
                out.push(json!({ "type": "finish" }));
                return (out, true);
            }
            _ => {}
        }
        (out, false)
    }

    fn ensure_step(&mut self, out: &mut Vec<Value>) {
        if !self.in_step {
            self.in_step = true;
            out.push(json!({ "type": "start-step" }));
        }
    }

    fn close_text(&mut self, out: &mut Vec<Value>) {
        if let Some(id) = self.open_text.take() {
            out.push(json!({ "type": "text-end", "id": id }));
        }
    }

    fn close_step(&mut self, out: &mut Vec<Value>) {
        self.close_text(out);
        if std::mem::take(&mut self.in_step) {
            out.push(json!({ "type": "finish-step" }));
        }
    }
}

/// The UI message stream of `session` from seq `from` to the end of that turn.
async fn ui_stream(state: &AppState, session: &SessionId, from: u64) -> Result<Response, ApiError> {
    let subscription = crate::sse::subscribe(state, session, from).await?;
    let mut converter = UiStream::default();
    let chunks = until_turn_end(subscription, move |item| {
        let (events, finished) = match item {
            Ok(recorded) => {
                let (chunks, finished) = converter.chunks(&recorded);
                let seq = recorded.seq.to_string();
                let mut events: Vec<Event> = chunks
                    .into_iter()
                    .map(|chunk| Event::default().id(seq.clone()).data(chunk.to_string()))
                    .collect();
                if finished {
                    events.push(Event::default().data("[DONE]"));
                }
                (events, finished)
            }
            Err(err) => (
                vec![
                    Event::default()
                        .data(json!({ "type": "error", "errorText": err.to_string() }).to_string()),
                    Event::default().data("[DONE]"),
                ],
                true,
            ),
        };
        std::future::ready((events, finished))
    });
    let mut response = crate::sse::answer(chunks, state.options.heartbeat, "");
    response.headers_mut().insert(
        "x-vercel-ai-ui-message-stream",
        HeaderValue::from_static("v1"),
    );
    Ok(response)
}

/// The SSE events `convert` makes of a live tail's items, ending right after the batch that
/// `convert` says finishes the turn (the tail itself would wait for more).
pub(crate) fn until_turn_end<C, F>(
    subscription: openharness_core::Subscription,
    convert: C,
) -> impl futures_util::Stream<Item = Result<Event, Infallible>> + Send
where
    C: FnMut(Result<Recorded, openharness_core::StoreError>) -> F + Send + 'static,
    F: std::future::Future<Output = (Vec<Event>, bool)> + Send,
{
    stream::unfold(Some((subscription, convert)), |state| async move {
        let (mut subscription, mut convert) = state?;
        let item = subscription.next().await?;
        let (events, finished) = convert(item).await;
        Some((events, (!finished).then_some((subscription, convert))))
    })
    .flat_map(|events| stream::iter(events.into_iter().map(Ok::<_, Infallible>)))
}

/// `POST /api/chat`.
pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    request: Result<Json<ChatRequest>, JsonRejection>,
) -> Result<Response, ApiError> {
    let ChatRequest {
        id,
        messages,
        trigger,
    } = crate::routes::body(request)?;
    if trigger.as_deref().is_some_and(|t| t != "submit-message") {
        return Err(ApiError::bad_request(format!(
            "trigger `{}` is not supported: send the message again instead",
            trigger.unwrap_or_default()
        )));
    }
    let session: SessionId = id
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a chat id: {err}")))?;
    let text = messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map(|m| {
            m.parts
                .iter()
                .filter(|p| p["type"] == "text")
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .filter(|text| !text.is_empty())
        .ok_or_else(|| ApiError::bad_request("the newest user message has no text"))?;
    let exists = state.host.store().session(&session).await.map_err(|err| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            err.to_string(),
        )
    })?;
    let from = match exists.filter(|info| info.count > 0) {
        Some(_) => {
            let len = crate::routes::check_free(&state, &session).await?;
            let host = state.host.clone();
            let turn = session.clone();
            crate::routes::spawn_turn(&state, session.clone(), len, async move {
                host.send(&turn, text, RunOptions::new()).await
            });
            len
        }
        None => {
            let workflow = default_workflow(&state)?;
            let host = state.host.clone();
            let options = RunOptions::new().session(session.clone());
            crate::routes::spawn_turn(&state, session.clone(), 0, async move {
                host.run(&workflow, Some(text), options).await
            });
            0
        }
    };
    ui_stream(&state, &session, from).await
}

/// `GET /api/chat/{id}/stream`: the running turn from its start, or 204.
pub(crate) async fn resume(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session: SessionId = id
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a chat id: {err}")))?;
    match crate::routes::turn_start(&state, &session) {
        Some(from) => ui_stream(&state, &session, from).await,
        None => Ok(StatusCode::NO_CONTENT.into_response()),
    }
}

/// The workflow a new chat (or a new session of the workflow handler) runs:
/// [`crate::ServerOptions::chat_workflow`], else the host's only workflow.
pub(crate) fn default_workflow(state: &AppState) -> Result<String, ApiError> {
    if let Some(name) = &state.options.chat_workflow {
        return Ok(name.clone());
    }
    match state.host.workflow_names().as_slice() {
        [only] => Ok(only.clone()),
        names => Err(ApiError::bad_request(format!(
            "this server hosts {} workflows ({}): configure which one new chats run (ServerOptions::chat_workflow, or serve --chat-workflow)",
            names.len(),
            names.join(", ")
        ))),
    }
}
