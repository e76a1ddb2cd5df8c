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
//!
//! # Approvals as AI SDK tool approvals (opt-in)
//!
//! A workflow's approval requests (`InputRequested::approval`) stream as `data-input-requested`
//! too, unless the client says it understands the AI SDK 6+ tool approvals with the request
//! header **`x-openharness-approvals: tool`** (`new DefaultChatTransport({ headers:
//! { "x-openharness-approvals": "tool" } })` sends it on the `POST` and on the resume `GET`;
//! the stored chat is `GET /sessions/{id}/messages?shape=ui&approvals=tool`). `data` is the
//! default; any other value is refused (`400`). Never send the header from an AI SDK 5 client:
//! its strict chunk schemas fail on these chunks. With it, the approvals a turn asked come at
//! the turn's end, in a step of their own (the one `lastAssistantMessageIsCompleteWithApprovalResponses`
//! reads), each as a dynamic tool call: `tool-input-start` / `tool-input-available` with
//! `toolCallId: "approval-<request id>"`, `toolName: "approval"`, `input: {prompt}`,
//! `dynamic: true`, then `tool-approval-request {approvalId: <request id>, toolCallId}`.
//!
//! The client answers with `addToolApprovalResponse({id, approved, reason?})`; with
//! `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses` it posts the
//! chat whose last message is that assistant message, its part now `approval-responded`
//! with `approval: {id, approved, reason?}` and no new user message. Each such part answers its
//! request: `input:received` with the text `yes` (approved) or `no` (denied), and
//! `approved: bool` and the `reason` (when given) beside it in the payload. Several decisions in
//! one post are recorded in their parts' order, a turn each, and streamed as one answer. A
//! decision on a request that is not open (unknown, answered already, or not one this server
//! asked as an approval) is refused with `409 request_not_open` and nothing is recorded. The
//! answer's stream continues the client's assistant message: `start` without a `messageId`,
//! `tool-output-available {toolCallId, output: {answer: "yes"}}` or `tool-output-denied
//! {toolCallId}`, then the turn; the stored chat shows the part the same way (`output-available`
//! with `approval: {id, approved: true, reason?}`, or `output-denied`). Only a client shown tool
//! approvals can answer with them, so a post of decisions streams this way with or without the
//! header. A resume `GET` during
//! such a turn replays the whole message, from the turn that asked. A text message still
//! answers an approval as it answers any request (see [`answer_for`]), as `data` clients do;
//! the stored chat then shows the request settled with that text as its answer.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::builtin::{InputQueued, InputSteered, UserInput, WorkflowCompleted};
use openharness_core::{Event as _, EventId, RunOptions, SessionId, adapter::Recorded};
use openharness_host::{TurnDone, TurnStart};
use openharness_projection::{
    APPROVED_FIELD, Approvals, MESSAGE_ID_FIELD, REASON_FIELD, REGENERATES_FIELD, UiStream,
    approval_text, approval_tool_call_id, opens_message,
};
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

/// The request header with which a client asks for approvals as AI SDK tool approvals
/// (`tool`; see the module docs).
pub(crate) const APPROVALS_HEADER: &str = "x-openharness-approvals";

/// How the client of a chat request wants approvals shown: [`APPROVALS_HEADER`], else `data`.
fn approvals_of(headers: &HeaderMap) -> Result<Approvals, ApiError> {
    let Some(value) = headers.get(APPROVALS_HEADER) else {
        return Ok(Approvals::Data);
    };
    value
        .to_str()
        .ok()
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "header `{APPROVALS_HEADER}: {}` is not one of `tool`, `data`",
                String::from_utf8_lossy(value.as_bytes())
            ))
        })
}

/// A person's decision on an approval, as the AI SDK posts it: a tool part of the chat's last
/// (assistant) message in state `approval-responded`.
struct Decision {
    /// The approval's id: the `input:requested` event's id.
    request: EventId,
    approved: bool,
    reason: Option<String>,
}

/// The decisions a post gives: the `approval-responded` tool parts of its last message, when
/// that is an assistant message (a post from `addToolApprovalResponse`), in order, each
/// request once. A part that is not an approval this server asked (its id is not an event
/// id, or its `toolCallId` is not `approval-<id>`) is `409 request_not_open`; one without
/// `approval.approved` is `400`.
fn decisions(session: &SessionId, messages: &[ChatMessage]) -> Result<Vec<Decision>, ApiError> {
    let Some(last) = messages.last().filter(|m| m.role == "assistant") else {
        return Ok(Vec::new());
    };
    let mut decisions: Vec<Decision> = Vec::new();
    for part in last
        .parts
        .iter()
        .filter(|p| p["state"] == "approval-responded")
    {
        let approval = &part["approval"];
        let id = approval["id"].as_str().unwrap_or_default();
        let request = id
            .parse::<EventId>()
            .ok()
            .filter(|request| part["toolCallId"] == approval_tool_call_id(request).as_str())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::CONFLICT,
                    "request_not_open",
                    format!(
                        "approval `{id}` (tool call {}) is not an approval session {session} asked: nothing was recorded",
                        part["toolCallId"]
                    ),
                )
            })?;
        let approved = approval["approved"].as_bool().ok_or_else(|| {
            ApiError::bad_request(format!(
                "the approval-responded part of approval `{id}` has no boolean `approval.approved`"
            ))
        })?;
        if decisions.iter().all(|d| d.request != request) {
            decisions.push(Decision {
                request,
                approved,
                reason: approval["reason"].as_str().map(str::to_owned),
            });
        }
    }
    Ok(decisions)
}

/// What a chat post asks for.
enum Trigger {
    /// A new message (`submit-message`).
    Submit,
    /// A new answer to the newest user message (`regenerate-message`), replacing this
    /// assistant message in the chat view.
    Regenerate(Option<String>),
}

/// Where a chat stream starts and when it ends.
struct Span {
    /// The seq it starts at.
    from: u64,
    /// How many turns it follows: it ends with the `turns`-th turn that ends at or after seq
    /// `ends_after` (the turns before it, replayed for a whole message, do not end it).
    turns: usize,
    ends_after: u64,
    /// The event of the request the stream answers, when the stream waits for the turn that
    /// answers it: the request's own event (a turn's first), or an `input:queued` recorded by
    /// the running turn, answered later by a `user:input` caused by it (or taken by a running
    /// call as `input:steered`). Everything before that is passed over.
    answering: Option<EventId>,
}

impl Span {
    /// The turn that answers the request recorded as `recorded`, from its start.
    fn answering(recorded: openharness_core::adapter::CommandRecorded) -> Self {
        Self {
            from: recorded.seq,
            turns: 1,
            ends_after: recorded.seq,
            answering: Some(recorded.id),
        }
    }
}

/// Where a stream that waits for the answer to `request` stands after `event`.
pub(crate) enum Answering {
    /// Still passing over the running turn.
    Waiting,
    /// `event` begins the turn that answers it.
    Begins,
    /// A running agent call took the input (`input:steered`): its answer is that call's.
    Steered,
}

pub(crate) fn answering(request: EventId, event: &openharness_core::Envelope) -> Answering {
    let name = event.name.as_ref();
    if event.id == request && name != InputQueued::NAME {
        return Answering::Begins;
    }
    if name == UserInput::NAME && event.caused_by == Some(request) {
        return Answering::Begins;
    }
    if name == InputSteered::NAME && event.payload["queued"] == serde_json::json!(request) {
        return Answering::Steered;
    }
    Answering::Waiting
}

/// The UI message stream of `session` over `span`, showing approvals as `approvals` says.
async fn ui_stream(
    state: &AppState,
    session: &SessionId,
    span: Span,
    approvals: Approvals,
    failed: Option<Failure>,
    counted: crate::sse::Counted,
) -> Result<Response, ApiError> {
    let subscription = crate::sse::subscribe(state, session, span.from).await?;
    // The turn that answers the request failed: nothing more comes, the stream says why.
    let failures = stream::iter(failed)
        .then(|failed| failed)
        .filter_map(|why| std::future::ready(why.map(TurnItem::Failed)));
    let items = stream::select(subscription.map(TurnItem::Event), Box::pin(failures));
    let mut converter = UiStream::with_approvals(approvals);
    let mut turns_left = span.turns;
    let mut ends_after = span.ends_after;
    let mut waiting = span.answering;
    let mut steered = false;
    let chunks = until_turn_end(items, move |item| {
        let (events, finished) = match item {
            TurnItem::Failed(why) => (ending_with_error(&format!("the turn failed: {why}")), true),
            TurnItem::Event(Ok(recorded)) => 'event: {
                if let Some(request) = waiting {
                    match answering(request, &recorded.event) {
                        Answering::Waiting => break 'event (Vec::new(), false),
                        Answering::Begins => {
                            waiting = None;
                            ends_after = recorded.seq;
                        }
                        Answering::Steered => {
                            // Answered by the call that took it: this message says so and
                            // ends with the turn (the reply streams in the running message).
                            waiting = None;
                            steered = true;
                            let start = json!({ "type": "start" }).to_string();
                            break 'event (vec![crate::sse::frame(None, None, &start)], false);
                        }
                    }
                }
                if steered {
                    if recorded.event.name != WorkflowCompleted::NAME {
                        break 'event (Vec::new(), false);
                    }
                    let finish = json!({ "type": "finish" }).to_string();
                    let frames = vec![
                        crate::sse::frame(None, None, &finish),
                        crate::sse::frame(None, None, "[DONE]"),
                    ];
                    break 'event (frames, true);
                }
                let (chunks, turn_ended) = converter.chunks(&recorded.event);
                if turn_ended && recorded.seq >= ends_after {
                    turns_left = turns_left.saturating_sub(1);
                }
                let finished = turns_left == 0;
                let seq = recorded.seq.to_string();
                let mut events: Vec<Bytes> = chunks
                    .into_iter()
                    .map(|chunk| crate::sse::json_frame(None, Some(&seq), &chunk))
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

/// Resolves with why the turn a stream follows failed, or with nothing when it did not.
pub(crate) type Failure =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>>;

/// The failure of the turn `done` waits for.
pub(crate) fn failure_of(done: TurnDone) -> Failure {
    Box::pin(async move { done.wait().await.err().map(|err| err.to_string()) })
}

/// What a chat stream follows: the session's events, or the news that its turn failed before
/// it could end (nothing more will be recorded, so the stream must end instead of waiting).
pub(crate) enum TurnItem {
    Event(Result<Recorded, openharness_core::StoreError>),
    Failed(String),
}

/// `POST /api/chat`: a new chat (the chat id becomes the session id), a message that
/// continues one, the answer to the request a waiting session asked (see [`answer_for`]), or a
/// regenerated answer: the newest user message sent again as a new turn, recorded with
/// `regenerates: <assistant message id>` (the log keeps both answers; the chat view,
/// `?shape=ui`, shows the new one in place of the old).
pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let approvals = approvals_of(&headers)?;
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
    if matches!(trigger, Trigger::Submit) {
        let decisions = decisions(&session, &messages)?;
        if !decisions.is_empty() {
            // Only a client shown tool approvals answers with them: its stream continues in
            // that form, header or not.
            return decide(&state, session, decisions, Approvals::Tool, counted).await;
        }
    }
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
    let policy = crate::request::busy_policy(&headers, None, state.options.chat_on_busy)?;
    let options = RunOptions::new().input_fields(fields).on_busy(policy);
    let exists = state
        .host
        .store()
        .session(&session)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    let start = match exists.filter(|info| info.count > 0) {
        Some(info) => {
            // While a turn runs the message is a second input (the running turn decides what
            // its open requests are); otherwise it may answer the request the session waits on.
            let open = answerable(&state, &session, info.count)
                .await?
                .unwrap_or_default();
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
            match request {
                Some(request) => TurnStart::Answer { request, text },
                None => TurnStart::Input(text),
            }
        }
        None => TurnStart::New {
            workflow: default_workflow(&state)?,
            input: Some(text),
        },
    };
    let started = state.host.start(&session, start, options).await?;
    let recorded = started
        .recorded
        .ok_or_else(|| ApiError::internal("the chat's turn recorded nothing"))?;
    ui_stream(
        &state,
        &session,
        Span::answering(recorded),
        approvals,
        Some(failure_of(started.done)),
        counted,
    )
    .await
}

/// Records `decisions` (a post from `addToolApprovalResponse`), each as the answer to its
/// request, a turn each in order, and streams those turns as one answer (see the module docs).
async fn decide(
    state: &Arc<AppState>,
    session: SessionId,
    decisions: Vec<Decision>,
    approvals: Approvals,
    counted: crate::sse::Counted,
) -> Result<Response, ApiError> {
    let open = state.host.unfinished(&session).await?.open_requests;
    if let Some(closed) = decisions.iter().find(|d| !open.contains(&d.request)) {
        return Err(openharness_core::Error::RequestNotOpen {
            session,
            request: closed.request,
            open,
        }
        .into());
    }
    let turns = decisions.len();
    let mut queue = decisions.into_iter();
    let Some(first) = queue.next() else {
        return Err(ApiError::bad_request("the post decides no approval"));
    };
    let (start, options) = decided(first);
    let started = state.host.start(&session, start, options).await?;
    let recorded = started
        .recorded
        .ok_or_else(|| ApiError::internal("the decision's turn recorded nothing"))?;
    // The other decisions, a turn each, once the one before has ended.
    let (failed_tx, failed) = tokio::sync::oneshot::channel();
    let host = state.host.clone();
    let turn = session.clone();
    tokio::spawn(async move {
        let mut done = started.done;
        for decision in queue {
            let next = match done.wait().await {
                Ok(_) => {
                    let (start, options) = decided(decision);
                    host.start(&turn, start, options).await
                }
                Err(err) => Err(err),
            };
            match next {
                Ok(next) => done = next.done,
                Err(err) => {
                    let _ = failed_tx.send(err.to_string());
                    return;
                }
            }
        }
        if let Err(err) = done.wait().await {
            let _ = failed_tx.send(err.to_string());
        }
    });
    let failed: Failure = Box::pin(async move { failed.await.ok() });
    let span = Span {
        from: recorded.seq,
        turns,
        ends_after: recorded.seq,
        answering: None,
    };
    ui_stream(state, &session, span, approvals, Some(failed), counted).await
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
    request_answered(session, named, open, "in its metadata as `requestId`")
}

/// The requests a new input on `session` (`count` events long) may answer, read from its last
/// event: `None` while a turn runs (the input is then a second input, which the busy policy
/// decides), else those the session waits on. A turn that has recorded its `workflow:completed`
/// has ended, whether or not its host has let go of the session yet: its open requests are
/// the ones that event lists (a host asked to start something on a session whose turn is
/// ending runs it next), unless it left inputs queued, whose turns run first. Only a session
/// whose last turn did not end here (a crash cut it off) is derived to find them.
pub(crate) async fn answerable(
    state: &AppState,
    session: &SessionId,
    count: u64,
) -> Result<Option<Vec<EventId>>, ApiError> {
    let last = state
        .host
        .store()
        .events(session, count.saturating_sub(1)..count)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    let ended = last
        .first()
        .filter(|event| event.name == WorkflowCompleted::NAME)
        .and_then(|event| event.decode::<WorkflowCompleted>().ok());
    match ended {
        Some(ended) if ended.queued.is_empty() => return Ok(Some(ended.open_requests)),
        _ if state.host.is_running(session) => return Ok(None),
        _ => {}
    }
    Ok(Some(state.host.unfinished(session).await?.open_requests))
}

/// The open request (of `open`, `session`'s) an input answers: `named`, when the input names
/// one (`409 request_not_open` unless it is open), else the only one open; none when nothing
/// is open. Several open and none named is `409 ambiguous_request`, listing them and saying
/// where the input names one (`naming`). Every surface that takes input decides this way.
pub(crate) fn request_answered(
    session: &SessionId,
    named: Option<EventId>,
    open: Vec<EventId>,
    naming: &str,
) -> Result<Option<EventId>, ApiError> {
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
                "session {session} waits for answers to {} requests ({}): name the one this input answers {naming}; nothing was recorded",
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

/// The turn that records `decision` as the answer to its request: `input:received` with the
/// text `yes` or `no`, and `approved` and `reason` in its payload.
fn decided(decision: Decision) -> (TurnStart, RunOptions) {
    let Decision {
        request,
        approved,
        reason,
    } = decision;
    let mut fields = serde_json::Map::new();
    fields.insert(APPROVED_FIELD.to_owned(), Value::Bool(approved));
    if let Some(reason) = reason {
        fields.insert(REASON_FIELD.to_owned(), Value::String(reason));
    }
    let start = TurnStart::Answer {
        request,
        text: approval_text(approved).to_owned(),
    };
    (start, RunOptions::new().input_fields(fields))
}

/// `POST /api/chat/{id}/stop`: stops the chat's running turn as an event (`stop:requested`,
/// then the turn ends `cancelled` at its next safe point), so every reader of its stream, a
/// resumed one included, sees it end. The AI SDK's `stop()` only closes the socket of the
/// stream it reads (which a server cannot tell from a reload, and which never reaches a turn
/// a resumed stream follows): call this beside it. `{"cancelled": false}` when no turn runs.
pub(crate) async fn stop(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session: SessionId = id
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a chat id: {err}")))?;
    let cancelled = state.host.cancel(&session).await;
    Ok(axum::Json(json!({ "cancelled": cancelled })).into_response())
}

/// `GET /api/chat/{id}/stream`: the running turn from its start, or 204.
pub(crate) async fn resume(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let approvals = approvals_of(&headers)?;
    let session: SessionId = id
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a chat id: {err}")))?;
    let Some(running) = state.host.running_turn(&session) else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    // Before its first event is recorded, the turn starts where the session ends.
    let turn = match running.first_seq {
        Some(seq) => seq,
        None => state
            .host
            .store()
            .session(&session)
            .await
            .map_err(|err| ApiError::internal(err.to_string()))?
            .map_or(0, |info| info.count),
    };
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    let span = Span {
        from: message_start(&state, &session, turn, approvals).await?,
        turns: 1,
        ends_after: turn,
        answering: None,
    };
    ui_stream(&state, &session, span, approvals, None, counted).await
}

/// The seq the assistant message of the turn starting at `turn` starts at: `turn`, or, for a
/// turn that continues a message (an approval's decision, with [`Approvals::Tool`]), the start
/// of the turn that opened that message, so a resumed client gets the whole message.
async fn message_start(
    state: &AppState,
    session: &SessionId,
    turn: u64,
    approvals: Approvals,
) -> Result<u64, ApiError> {
    const PAGE: u64 = 256;
    let store = state.host.store();
    let internal = |err: openharness_core::StoreError| ApiError::internal(err.to_string());
    let first = store
        .events(session, turn..turn + 1)
        .await
        .map_err(internal)?;
    // Not recorded yet, or a turn of its own: the message starts with the turn.
    if first
        .first()
        .is_none_or(|event| opens_message(event, approvals))
    {
        return Ok(turn);
    }
    let mut end = turn;
    while end > 0 {
        let start = end.saturating_sub(PAGE);
        let events = store.events(session, start..end).await.map_err(internal)?;
        let opener = (start..end)
            .zip(&events)
            .filter(|(_, event)| opens_message(event, approvals))
            .last();
        if let Some((seq, _)) = opener {
            return Ok(seq);
        }
        end = start;
    }
    Ok(turn)
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
