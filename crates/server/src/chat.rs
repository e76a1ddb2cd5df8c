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

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::{EventId, Recorded, RunOptions, SessionId};
use openharness_projection::{MESSAGE_ID_FIELD, REGENERATES_FIELD, UiStream};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::error::ApiError;

/// The body of `useChat`'s default transport.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ChatRequest {
    id: String,
    messages: Vec<ChatMessage>,
    #[serde(default)]
    trigger: Option<String>,
    /// For `regenerate-message`: the assistant message to regenerate.
    #[serde(default)]
    message_id: Option<String>,
}

#[derive(Deserialize)]
struct ChatMessage {
    #[serde(default)]
    id: Option<String>,
    role: String,
    #[serde(default)]
    parts: Vec<Value>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// What a chat post asks for.
enum Trigger {
    /// A new message (`submit-message`).
    Submit,
    /// A new answer to the newest user message (`regenerate-message`), replacing this
    /// assistant message in the chat view.
    Regenerate(Option<String>),
}

/// The UI message stream of `session` from seq `from` to the end of that turn.
async fn ui_stream(
    state: &AppState,
    session: &SessionId,
    from: u64,
    failed: Option<tokio::sync::oneshot::Receiver<String>>,
    counted: crate::sse::Counted,
) -> Result<Response, ApiError> {
    let subscription = crate::sse::subscribe(state, session, from).await?;
    let failures = stream::iter(failed)
        .then(|failed| async move { failed.await.ok() })
        .filter_map(|why| std::future::ready(why.map(TurnItem::Failed)));
    let items = stream::select(subscription.map(TurnItem::Event), Box::pin(failures));
    let mut converter = UiStream::new();
    let chunks = until_turn_end(items, move |item| {
        let (events, finished) = match item {
            TurnItem::Failed(why) => (ending_with_error(&format!("the turn failed: {why}")), true),
            TurnItem::Event(Ok(recorded)) => {
                let (chunks, finished) = converter.chunks(&recorded.event);
                let seq = recorded.seq.to_string();
                let mut events: Vec<Bytes> = chunks
                    .into_iter()
                    .map(|chunk| crate::sse::frame(None, Some(&seq), &chunk.to_string()))
                    .collect();
                if finished {
                    events.push(crate::sse::frame(None, None, "[DONE]"));
                }
                (events, finished)
            }
            TurnItem::Event(Err(err)) => (ending_with_error(&err.to_string()), true),
        };
        std::future::ready((events, finished))
    });
    let mut response = crate::sse::respond(chunks, Some(counted), state.options.heartbeat);
    response.headers_mut().insert(
        "x-vercel-ai-ui-message-stream",
        HeaderValue::from_static("v1"),
    );
    Ok(response)
}

/// The last events of a stream that cannot go on: an `error` chunk saying why, then `[DONE]`.
fn ending_with_error(why: &str) -> Vec<Bytes> {
    vec![
        crate::sse::frame(
            None,
            None,
            &json!({ "type": "error", "errorText": why }).to_string(),
        ),
        crate::sse::frame(None, None, "[DONE]"),
    ]
}

/// The SSE frames `convert` makes of a live tail's items, ending right after the batch that
/// `convert` says finishes the turn (the tail itself would wait for more).
pub(crate) fn until_turn_end<S, T, C, F>(
    items: S,
    convert: C,
) -> impl futures_util::Stream<Item = Bytes> + Send
where
    S: futures_util::Stream<Item = T> + Send + Unpin,
    C: FnMut(T) -> F + Send + 'static,
    F: std::future::Future<Output = (Vec<Bytes>, bool)> + Send,
{
    stream::unfold(Some((items, convert)), |state| async move {
        let (mut items, mut convert) = state?;
        let item = items.next().await?;
        let (events, finished) = convert(item).await;
        Some((events, (!finished).then_some((items, convert))))
    })
    .flat_map(stream::iter)
}

/// What a chat stream follows: the session's events, or the news that its turn failed before
/// it could end (nothing more will be recorded, so the stream must end instead of waiting).
enum TurnItem {
    Event(Result<Recorded, openharness_core::StoreError>),
    Failed(String),
}

/// `turn`, telling `failed` why if it fails.
async fn reporting(
    turn: impl std::future::Future<
        Output = Result<openharness_host::TurnOutcome, openharness_host::HostError>,
    >,
    failed: tokio::sync::oneshot::Sender<String>,
) -> Result<openharness_host::TurnOutcome, openharness_host::HostError> {
    let result = turn.await;
    if let Err(err) = &result {
        let _ = failed.send(err.to_string());
    }
    result
}

/// `POST /api/chat`: a new chat (the chat id becomes the session id), a message that
/// continues one, the answer to the request a waiting session asked (see [`answer_for`]), or a
/// regenerated answer: the newest user message sent again as a new turn, recorded with
/// `regenerates: <assistant message id>` (the log keeps both answers; the chat view,
/// `?shape=ui`, shows the new one in place of the old).
pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let ChatRequest {
        id,
        messages,
        trigger,
        message_id,
    } = crate::request::body(request)?;
    let trigger = match trigger.as_deref() {
        None | Some("submit-message") => Trigger::Submit,
        Some("regenerate-message") => Trigger::Regenerate(message_id),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "trigger `{other}` is not one of `submit-message`, `regenerate-message`"
            )));
        }
    };
    let session: SessionId = id
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a chat id: {err}")))?;
    // Counted before the turn starts: a chat over its cap of streams starts nothing.
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    let newest = messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .ok_or_else(|| ApiError::bad_request("the chat has no user message to answer"))?;
    let text = newest
        .parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("");
    if text.is_empty() {
        return Err(ApiError::bad_request(
            "the newest user message has no text part",
        ));
    }
    let mut fields = serde_json::Map::new();
    if let Some(id) = newest.id.as_ref().filter(|id| !id.is_empty()) {
        fields.insert(MESSAGE_ID_FIELD.to_owned(), Value::String(id.clone()));
    }
    if let Trigger::Regenerate(replaced) = &trigger {
        let replaced = replaced.clone().map_or(Value::Bool(true), Value::String);
        fields.insert(REGENERATES_FIELD.to_owned(), replaced);
    }
    let options = RunOptions::new().input_fields(fields);
    let exists = state.host.store().session(&session).await.map_err(|err| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            err.to_string(),
        )
    })?;
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel();
    let from = match exists.filter(|info| info.count > 0) {
        Some(_) => {
            let len = crate::routes::check_free(&state, &session).await?;
            let open = state.host.unfinished(&session).await?.open_requests;
            let request = match trigger {
                Trigger::Submit => answer_for(&session, newest, open)?,
                Trigger::Regenerate(_) => {
                    if !open.is_empty() {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            "session_waiting",
                            format!(
                                "session {session} waits for an answer to {} request(s): answer it before regenerating; nothing was recorded",
                                open.len()
                            ),
                        ));
                    }
                    None
                }
            };
            let host = state.host.clone();
            let turn = session.clone();
            let run = async move {
                match request {
                    Some(request) => host.respond(&turn, request, text, options).await,
                    None => host.send(&turn, text, options).await,
                }
            };
            crate::routes::spawn_turn(&state, session.clone(), len, reporting(run, failed_tx));
            len
        }
        None => {
            let workflow = default_workflow(&state)?;
            let host = state.host.clone();
            let options = options.session(session.clone());
            let run = async move { host.run(&workflow, Some(text), options).await };
            crate::routes::spawn_turn(&state, session.clone(), 0, reporting(run, failed_tx));
            0
        }
    };
    ui_stream(&state, &session, from, Some(failed_rx), counted).await
}

/// The open request (of `open`, the session's) a chat message answers: the one the
/// message names (`metadata.requestId`, the `requestId` of a `data-input-requested` part),
/// else the only one open. A message to a session waiting on several requests that names
/// none of them is refused (`409 ambiguous_request`, listing them); naming a request that is
/// not open is `409 request_not_open`. A session that waits for nothing takes the message as
/// new input.
fn answer_for(
    session: &SessionId,
    message: &ChatMessage,
    open: Vec<EventId>,
) -> Result<Option<EventId>, ApiError> {
    let named = message
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get("requestId"))
        .map(|id| {
            id.as_str()
                .and_then(|id| id.parse::<EventId>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "metadata.requestId `{id}` is not an event id: give the `requestId` of the `data-input-requested` part"
                    ))
                })
        })
        .transpose()?;
    match (named, open.as_slice()) {
        (Some(request), open) if open.contains(&request) => Ok(Some(request)),
        (Some(request), _) => Err(openharness_core::Error::RequestNotOpen {
            session: session.clone(),
            request,
            open,
        }
        .into()),
        (None, []) => Ok(None),
        (None, [only]) => Ok(Some(*only)),
        (None, several) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "ambiguous_request",
            format!(
                "session {session} waits for answers to {} requests ({}): name the one this message answers in its metadata as `requestId`; nothing was recorded",
                several.len(),
                several
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
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
        Some(from) => {
            let counted = state
                .streams
                .open(&session, state.options.max_streams_per_session)?;
            ui_stream(&state, &session, from, None, counted).await
        }
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
