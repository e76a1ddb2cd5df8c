//! Open Responses (`/v1/responses`): the specification of 2026-04-24 that OpenAI's Responses
//! API, OpenRouter, Ollama, vLLM and others serve, as a projection of the session's log. The
//! official `openai` SDKs work unmodified with `base_url` set to this server's `/v1`.
//!
//! - `POST /v1/responses`: `model` names a served workflow or a `/v1` agent
//!   (`agent:<name-or-id>`, or its plain name; see `targets`); `input` is the user's message (a
//!   string, or items whose newest `user` message is the new input) and the outputs of client
//!   tools (`function_call_output`). Without
//!   `previous_response_id` or `conversation` it starts a new session; with
//!   `previous_response_id` it continues from that exact response: when it is the session's
//!   latest turn the session goes on, and when the session has moved on since, the new
//!   response runs in a fork made right after that response (so an older response id continues
//!   a fork, and the original stays as it was); with `conversation` (a session id) it continues
//!   that session. A session waiting for an answer takes the input as the answer. `stream: true`
//!   answers the response's events as SSE (`event:` = type, `sequence_number` on each, `data:
//!   [DONE]` last); otherwise the response once the turn has ended (the connection is kept
//!   alive with spaces before the JSON while it runs), or at once with `background: true`.
//! - `GET /v1/responses/{id}`: the response as the log has it now (`in_progress` while its turn
//!   runs); `?stream=true&starting_after=N` replays its events after sequence number `N` and
//!   follows it live to its end.
//! - `POST /v1/responses/{id}/cancel`: stops the response's turn as an event
//!   (`stop:requested`); the response ends `incomplete` with `incomplete_details.reason:
//!   "cancelled"`. A response queued behind another turn is `409 response_queued`.
//! - `GET /v1/responses/{id}/input_items`: the user message the response answered.
//! - `/v1/conversations`: a conversation is a session; its items, the turns as responses show
//!   them (see `conversations`).
//!
//! A response's id is `resp_<seq>_<session>`: the seq of the request's recorded event, so it
//! names one exact position of one session. Nothing is kept beside the log: the request's
//! echoed fields are recorded on its input event (`openResponses`, with `via:
//! "open-responses"`), and every read projects the turn again ([`ResponseStream`]).
//!
//! **Function tools** run on the client: a `/v1` agent's turn is offered the request's `function`
//! tools ([`ClientTool`](openharness_core::ClientTool)); when its model calls one, the response
//! ends `completed` with a `function_call` item, and the next request brings the output
//! (`function_call_output` with `previous_response_id`), recorded on its `user:input`
//! (`toolResults`) for the agent to continue from. A workflow of its own code takes no client
//! tools (its handlers know nothing of them).
//!
//! Not served (each refused with a `400` naming the parameter): `tools` of another type than
//! `function`, function tools for a workflow that is no `/v1` agent, a `function_call_output`
//! that answers no open call, `store: false` with `background: true`.
//!
//! `store: false`: the response is answered once and then not kept for this API (reading it
//! back, continuing it by `previous_response_id` or cancelling it is `404`); its turn is in the
//! session's log like every other, which is never rewritten.

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::{Envelope, EventId, RunOptions, SessionId};
use openharness_host::{ForkPoint, ForkStart, TurnStart};
use openharness_projection::{ResponseHead, ResponseStream};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::chat::{TurnItem, failure_of, until_turn_end};

mod conversations;

pub(crate) use conversations::Made;
pub(crate) mod openapi;
pub(crate) mod read;
pub(crate) mod wire;

use read::{Awaiting, Turn, read_turn};
use wire::{CreateResponse, OpenError, RESPONSE_FIELD, ResponseId, VIA, VIA_FIELD};

type Shared = State<Arc<AppState>>;
type Answer = Result<Response, OpenError>;

/// The routes, all without the request timeout (a response lasts as long as its turn).
pub(crate) fn routes() -> axum::Router<Arc<AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/v1/responses", post(create))
        .route("/v1/responses/{id}", get(retrieve))
        .route("/v1/responses/{id}/cancel", post(cancel))
        .route("/v1/responses/{id}/input_items", get(input_items))
        .route("/v1/conversations", post(conversations::create))
        .route(
            "/v1/conversations/{id}",
            get(conversations::retrieve).delete(conversations::delete),
        )
        .route("/v1/conversations/{id}/items", get(conversations::items))
}

/// Where a request's turn runs, and how it starts.
struct Plan {
    session: SessionId,
    start: TurnStart,
    model: String,
    /// The workflow the session runs.
    workflow: String,
}

/// The field of `user:input` that carries the client tools' results
/// ([`UserInput::tool_results`](openharness_core::builtin::UserInput)).
const TOOL_RESULTS_FIELD: &str = "toolResults";

/// Refuses tool outputs that answer no open call of a client tool in the session the request
/// continues (`400`, `param: input`): each must answer a `function_call` of its latest
/// response, once.
async fn check_tool_results(
    state: &AppState,
    plan: &Plan,
    results: &[openharness_core::builtin::ClientToolResult],
) -> Result<(), OpenError> {
    let open = match &plan.start {
        TurnStart::Input(_) | TurnStart::Answer { .. } => {
            let len = state.host.session(&plan.session).await?.len;
            crate::targets::open_client_calls(&read::events(state, &plan.session, 0, len).await?)
        }
        _ => Vec::new(),
    };
    for result in results {
        if !open.contains(&result.tool_call_id) {
            return Err(OpenError::invalid(
                "input",
                format!(
                    "`function_call_output` for call `{}`: no call of a client tool waits for it in this conversation (continue the response that made the call, with `previous_response_id`)",
                    result.tool_call_id
                ),
            ));
        }
    }
    Ok(())
}

/// `POST /v1/responses`.
async fn create(State(state): Shared, headers: HeaderMap, request: crate::request::Body) -> Answer {
    let request: CreateResponse = crate::request::body(request)?;
    let tools = wire::client_tools(request.tools.as_deref().unwrap_or_default())?;
    if request.store == Some(false) && request.background == Some(true) {
        return Err(OpenError::invalid(
            "store",
            "`background: true` needs `store: true`: a background response is read back later",
        ));
    }
    let input = wire::input_of(request.input.as_ref())?;
    let plan = plan(&state, &request, input.text.clone()).await?;
    if !tools.is_empty() && !crate::targets::runs_client_tools(&plan.workflow) {
        return Err(OpenError::invalid(
            "tools",
            format!(
                "client tools (`function` tools) are served by `/v1` agents (`model: \"agent:<name>\"`), whose conversation keeps the calls and their outputs; `{}` runs its own tools",
                plan.model
            ),
        ));
    }
    let mut fields = serde_json::Map::new();
    if !input.tool_results.is_empty() {
        check_tool_results(&state, &plan, &input.tool_results).await?;
        fields.insert(TOOL_RESULTS_FIELD.to_owned(), json!(input.tool_results));
    }
    fields.insert(VIA_FIELD.to_owned(), json!(VIA));
    fields.insert(
        RESPONSE_FIELD.to_owned(),
        wire::recorded_head(&request, &plan.model),
    );
    let policy = crate::request::busy_policy(&headers, None, state.options.on_busy)?;
    let options = RunOptions::new()
        .input_fields(fields)
        .on_busy(policy)
        .client_tools(tools);
    let counted = match request.stream {
        Some(true) => Some(
            state
                .streams
                .open(&plan.session, state.options.max_streams_per_session)?,
        ),
        _ => None,
    };
    let plan_forks = matches!(plan.start, TurnStart::Fork(_));
    let started = state.host.start(&plan.session, plan.start, options).await?;
    let recorded = started
        .recorded
        .ok_or_else(|| crate::error::ApiError::internal("the response's turn recorded nothing"))?;
    let id = ResponseId {
        seq: recorded.seq,
        session: started.session.clone(),
    };
    let mut head = ResponseHead::new(id.to_string(), plan.model, id.session.to_string());
    head.previous_response_id = request.previous_response_id.clone();
    head.instructions = request.instructions.clone();
    head.metadata = request.metadata.clone().unwrap_or_default();
    head.background = request.background == Some(true);
    head.store = request.store != Some(false);
    if let Some(counted) = counted {
        let follow = Follow {
            id,
            head,
            waiting: Some(if plan_forks {
                Awaiting::ForkInput
            } else {
                Awaiting::Answer(recorded.id)
            }),
            after: None,
        };
        return Ok(live(&state, follow, Some(failure_of(started.done)), counted).await?);
    }
    if head.background {
        let turn = read_turn(&state, &id).await?;
        return Ok(Json(turn.project(head).resource()).into_response());
    }
    // The response once its turn has ended (the connection kept alive until then).
    let done = started.done;
    let reader = Arc::clone(&state);
    let answer = async move {
        let outcome = done.wait().await;
        let resource = match read_turn(&reader, &id).await {
            Ok(turn) => {
                let mut projected = turn.project(head);
                if let Err(err) = outcome {
                    projected.fail("turn_failed", &err.to_string());
                }
                projected.resource()
            }
            Err(err) => {
                json!({ "error": { "message": err.error.message, "code": err.error.code } })
            }
        };
        resource.to_string()
    };
    Ok(crate::keep_alive::json_when_ready(
        answer,
        state.options.heartbeat,
    ))
}

/// Where the request's turn runs: a new session, the session it continues, or a fork right
/// after an older response.
async fn plan(state: &AppState, request: &CreateResponse, text: String) -> Result<Plan, OpenError> {
    let conversation = wire::conversation_of(request.conversation.as_ref())?;
    let previous = request
        .previous_response_id
        .as_deref()
        .map(ResponseId::parse)
        .transpose()?;
    let session = match (&previous, conversation) {
        (Some(_), Some(_)) => {
            return Err(OpenError::invalid(
                "conversation",
                "give `previous_response_id` or `conversation`, not both",
            ));
        }
        (Some(previous), None) => previous.session.clone(),
        (None, Some(conversation)) => conversation,
        (None, None) => {
            let (target, model) = target_of(state, request.model.as_deref()).await?;
            return Ok(Plan {
                session: target.new_session(state, None).await?,
                model,
                workflow: target.workflow().to_owned(),
                start: TurnStart::New {
                    workflow: target.workflow().to_owned(),
                    input: Some(text),
                },
            });
        }
    };
    let summary = match state.host.session(&session).await {
        Ok(summary) => summary,
        // A conversation made by `POST /v1/conversations` holds nothing until its first turn.
        Err(openharness_host::HostError::SessionNotFound(_)) if previous.is_none() => {
            let (target, model) = target_of(state, request.model.as_deref()).await?;
            return Ok(Plan {
                session: target.new_session(state, Some(session)).await?,
                model,
                workflow: target.workflow().to_owned(),
                start: TurnStart::New {
                    workflow: target.workflow().to_owned(),
                    input: Some(text),
                },
            });
        }
        Err(err) => return Err(err.into()),
    };
    let workflow = summary.workflow.clone().unwrap_or_default();
    let model = match request.model.as_deref() {
        Some(model) if !model.is_empty() => {
            let (target, model) = target_of(state, Some(model)).await?;
            target
                .owns(state, &session, summary.workflow.as_deref())
                .await
                .map_err(|error| {
                    OpenError::invalid(
                        "model",
                        format!(
                            "{}: continue it with the model it runs (or leave `model` out)",
                            error.message
                        ),
                    )
                })?;
            model
        }
        _ => workflow.clone(),
    };
    if let Some(previous) = &previous {
        let turn = read_stored_turn(state, previous).await?;
        if let Some(end) = turn.end
            && end + 1 < summary.len
        {
            // The session has moved on: continue from that exact response, in a fork.
            let fork = ForkStart {
                parent: session,
                at: ForkPoint::Position { position: end + 1 },
                state_edit: None,
                input: Some(text),
                answer: None,
                provider: None,
            };
            return Ok(Plan {
                session: SessionId::new(),
                model,
                workflow,
                start: TurnStart::Fork(Box::new(fork)),
            });
        }
    }
    let start = match answer_for(state, &session, summary.len, request).await? {
        Some(request) => TurnStart::Answer { request, text },
        None => TurnStart::Input(text),
    };
    Ok(Plan {
        session,
        start,
        model,
        workflow,
    })
}

/// The target `model` names (a served workflow or a `/v1` agent, see [`crate::targets`]) and
/// the name responses echo (`404 model_not_found` naming what is served otherwise).
async fn target_of(
    state: &AppState,
    model: Option<&str>,
) -> Result<(crate::targets::Target, String), OpenError> {
    let name = model.unwrap_or_default();
    match crate::targets::resolve(state, name).await {
        Ok(target) => Ok((target, name.to_owned())),
        Err(mut error) => {
            if error.status == StatusCode::NOT_FOUND {
                error.code = "model_not_found";
            }
            Err(OpenError {
                error,
                param: Some("model"),
            })
        }
    }
}

/// The open request a new input on `session` answers: the one named in the request's
/// `metadata["openharness.requestId"]`, else the only one open; none while a turn runs (the
/// input is then a second input, which the busy policy decides). `len`: the session's length.
async fn answer_for(
    state: &AppState,
    session: &SessionId,
    len: u64,
    request: &CreateResponse,
) -> Result<Option<EventId>, OpenError> {
    let Some(open) = crate::chat::answerable(state, session, len).await? else {
        return Ok(None);
    };
    let named = request
        .metadata
        .as_ref()
        .and_then(|metadata| metadata.get("openharness.requestId"))
        .map(|id| {
            id.as_str()
                .and_then(|id| id.parse::<EventId>().ok())
                .ok_or_else(|| {
                    OpenError::invalid("metadata", "`openharness.requestId` is not an event id")
                })
        })
        .transpose()?;
    crate::chat::request_answered(
        session,
        named,
        open,
        "as `metadata[\"openharness.requestId\"]`",
    )
    .map_err(|error| OpenError {
        error,
        param: Some("metadata"),
    })
}

#[derive(Debug, Deserialize)]
struct Retrieve {
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    starting_after: Option<u64>,
}

/// The turn of response `id` for a later read: `404` for one created with `store: false`,
/// which is answered once and not kept for the Responses API (its turn stays in the log).
async fn read_stored_turn(state: &AppState, id: &ResponseId) -> Result<Turn, OpenError> {
    let turn = read_turn(state, id).await?;
    if turn.head(id).store {
        Ok(turn)
    } else {
        Err(OpenError::not_found(format!(
            "response {id} was created with `store: false`: it is not kept for reading or continuing (its turn is in the session's log, GET /sessions/{}/events)",
            id.session
        )))
    }
}

/// `GET /v1/responses/{id}`: the response as the log has it, or its events as SSE.
async fn retrieve(
    State(state): Shared,
    Path(id): Path<String>,
    query: Result<Query<Retrieve>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let query = crate::request::query(query)?;
    let id = ResponseId::parse(&id)?;
    let turn = read_stored_turn(&state, &id).await?;
    let head = turn.head(&id);
    if query.stream != Some(true) {
        return Ok(Json(turn.project(head).resource()).into_response());
    }
    let counted = state
        .streams
        .open(&id.session, state.options.max_streams_per_session)?;
    if turn.end.is_some() || !state.host.is_running(&id.session) {
        // Ended (or cut off by a crash, with no turn to wait for): the recorded events.
        let mut projected = ResponseStream::new(head);
        let mut frames: Vec<Bytes> = turn
            .events
            .iter()
            .flat_map(|event| projected.step(event))
            .filter(|event| after(event, query.starting_after))
            .map(|event| frame(&event))
            .collect();
        frames.push(crate::sse::frame(None, None, "[DONE]"));
        return Ok(crate::sse::respond_without_retry(
            stream::iter(frames),
            Some(counted),
            state.options.heartbeat,
        ));
    }
    let follow = Follow {
        waiting: turn.waiting,
        head,
        after: query.starting_after,
        id,
    };
    Ok(live(&state, follow, None, counted).await?)
}

/// `POST /v1/responses/{id}/cancel`: stops the response's turn, then answers the response.
async fn cancel(State(state): Shared, Path(id): Path<String>) -> Answer {
    let id = ResponseId::parse(&id)?;
    let turn = read_stored_turn(&state, &id).await?;
    if turn.waiting.is_some() && state.host.is_running(&id.session) {
        // Queued behind another turn: stopping the running turn would stop someone else's.
        return Err(OpenError {
            error: crate::error::ApiError::new(
                StatusCode::CONFLICT,
                "response_queued",
                format!(
                    "response {id} waits for the turn running on its conversation to end; it cannot be cancelled before it starts"
                ),
            ),
            param: None,
        });
    }
    if turn.end.is_none() && state.host.is_running(&id.session) {
        state.host.cancel(&id.session).await;
        // The turn ends at its next safe point: answer the response as it ended.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let turn = read_turn(&state, &id).await?;
            if turn.end.is_some() || tokio::time::Instant::now() >= deadline {
                let head = turn.head(&id);
                return Ok(Json(turn.project(head).resource()).into_response());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let head = turn.head(&id);
    Ok(Json(turn.project(head).resource()).into_response())
}

/// `GET /v1/responses/{id}/input_items`: the user message the response answered.
async fn input_items(State(state): Shared, Path(id): Path<String>) -> Answer {
    let id = ResponseId::parse(&id)?;
    let turn = read_stored_turn(&state, &id).await?;
    let data: Vec<Value> = turn.input.iter().filter_map(user_item).collect();
    let first = data.first().map(|item| item["id"].clone());
    let last = data.last().map(|item| item["id"].clone());
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "first_id": first,
        "last_id": last,
        "has_more": false,
    }))
    .into_response())
}

/// A user's input event as a `message` item.
pub(crate) fn user_item(event: &Envelope) -> Option<Value> {
    let text = event.payload["text"].as_str()?;
    Some(json!({
        "type": "message",
        "id": format!("msg_{}", event.id),
        "status": "completed",
        "role": "user",
        "content": [{ "type": "input_text", "text": text }],
    }))
}

/// What a live response stream follows.
struct Follow {
    id: ResponseId,
    head: ResponseHead,
    /// What the response waits for, when its turn may not have begun (a queued input, a
    /// fork's).
    waiting: Option<Awaiting>,
    /// The sequence number after which the client wants events (`starting_after`).
    after: Option<u64>,
}

/// Whether a client that asked for events after `after` wants `event`.
fn after(event: &openharness_projection::ResponseEvent, after: Option<u64>) -> bool {
    after.is_none_or(|after| event.sequence_number > after)
}

/// One streaming event as an SSE frame.
fn frame(event: &openharness_projection::ResponseEvent) -> Bytes {
    crate::sse::json_frame(Some(event.kind), None, event)
}

/// The response's events, live from its request's seq to its turn's end, then `[DONE]`.
async fn live(
    state: &AppState,
    follow: Follow,
    failed: Option<crate::chat::Failure>,
    counted: crate::sse::Counted,
) -> Result<Response, crate::error::ApiError> {
    let Follow {
        id,
        head,
        mut waiting,
        after: skip,
    } = follow;
    let subscription = crate::sse::subscribe(state, &id.session, id.seq).await?;
    let failures = stream::iter(failed)
        .then(|failed| failed)
        .filter_map(|why| std::future::ready(why.map(TurnItem::Failed)));
    let items = stream::select(subscription.map(TurnItem::Event), Box::pin(failures));
    let mut projected = ResponseStream::new(head);
    let frames = until_turn_end(items, move |item| {
        let events = match item {
            TurnItem::Failed(why) => {
                projected.fail("turn_failed", &format!("the turn failed: {why}"))
            }
            TurnItem::Event(Ok(recorded)) => {
                if let Some(awaiting) = waiting
                    && !awaiting.begins(&recorded.event)
                {
                    Vec::new()
                } else {
                    waiting = None;
                    projected.step(&recorded.event)
                }
            }
            TurnItem::Event(Err(err)) => projected.fail("stream_failed", &err.to_string()),
        };
        let mut frames: Vec<Bytes> = events
            .iter()
            .filter(|event| after(event, skip))
            .map(frame)
            .collect();
        let ended = projected.ended();
        if ended {
            frames.push(crate::sse::frame(None, None, "[DONE]"));
        }
        std::future::ready((frames, ended))
    });
    Ok(crate::sse::respond_without_retry(
        frames,
        Some(counted),
        state.options.heartbeat,
    ))
}

impl Turn {
    /// The response's head, from what its request recorded.
    fn head(&self, id: &ResponseId) -> ResponseHead {
        wire::head_of(id, self.input.as_ref(), &self.workflow)
    }

    /// The turn's recorded events through a fresh projection.
    fn project(&self, head: ResponseHead) -> ResponseStream {
        let mut projected = ResponseStream::new(head);
        for event in &self.events {
            projected.step(event);
        }
        projected
    }
}
