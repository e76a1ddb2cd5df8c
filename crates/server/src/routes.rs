//! The routes and their handlers: each reads its input (a typed error for anything malformed),
//! asks the host, and answers JSON (or SSE for event streams, JSONL for a session's export).

use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openharness_core::{BusyPolicy, EventId, RunOptions, SessionId};
use openharness_host::{ForkPoint, ForkStart, HostError, SessionQueryWords, Started, TurnStart};
use openharness_store::jsonl;
use serde::Deserialize;
use serde_json::json;
use tower_http::timeout::TimeoutLayer;

use crate::AppState;
use crate::error::ApiError;
use crate::request::{MAX_SAFE, body, busy_policy, query, session_id};

type Shared = State<Arc<AppState>>;
type Answer = Result<Response, ApiError>;

/// Refuses a number beyond [`MAX_SAFE`].
fn bounded(name: &str, value: Option<u64>) -> Result<(), ApiError> {
    match value {
        Some(value) if value > MAX_SAFE => Err(ApiError::bad_request(format!(
            "`{name}` is {value}, beyond the largest position the API takes ({MAX_SAFE})"
        ))),
        _ => Ok(()),
    }
}

/// The most events one JSON page holds.
const MAX_PAGE: usize = 1000;
/// The most positions one `states` request asks for.
const MAX_POSITIONS: usize = 1000;

pub(crate) fn build(state: Arc<AppState>) -> Router {
    let timed = Router::new()
        .route("/health", get(health))
        .route("/openapi.json", get(crate::openapi::serve))
        .route("/sessions", get(list).post(create))
        .route("/sessions/{id}", get(one).delete(remove))
        .route("/sessions/{id}/input", post(input))
        .route("/sessions/{id}/answer", post(answer))
        .route("/sessions/{id}/resume", post(resume))
        .route("/sessions/{id}/cancel", post(cancel))
        .route("/sessions/{id}/state", get(state_at))
        .route("/sessions/{id}/states", get(states_at))
        .route("/sessions/{id}/diff", get(diff))
        .route("/sessions/{id}/compare", get(compare))
        .route("/sessions/{id}/state-check", get(state_check))
        .route("/sessions/{id}/export", get(export))
        .route("/sessions/{id}/messages", get(messages))
        .route("/sessions/{id}/fork", post(fork))
        .route("/providers", get(providers))
        .merge(crate::feedback::routes());
    // The store's experiments are ordinary requests too: under the same timeout.
    #[cfg(feature = "eval")]
    let timed = timed
        .merge(crate::experiments::routes())
        .merge(crate::datasets::routes());
    let timed = timed.layer(TimeoutLayer::with_status_code(
        StatusCode::REQUEST_TIMEOUT,
        state.options.request_timeout,
    ));
    // Event streams live as long as their client: no timeout.
    let streaming = Router::new()
        .route("/sessions/{id}/events", get(events))
        .route("/api/chat", post(crate::chat::post))
        .route("/api/chat/{id}/stream", get(crate::chat::resume))
        .route("/api/chat/{id}/stop", post(crate::chat::stop))
        .route("/api/workflow", post(crate::frames::post))
        .merge(crate::responses::routes())
        .merge(crate::ag_ui::routes())
        .merge(crate::a2a::routes());
    // An experiment's progress, as long as its client follows it.
    #[cfg(feature = "eval")]
    let streaming = streaming.merge(crate::experiments::streams());
    let router = timed.merge(streaming);
    #[cfg(feature = "platform")]
    let router = match &state.options.platform {
        Some(platform) => router.merge(crate::v1::routes(platform.clone(), Arc::clone(&state))),
        None => router,
    };
    let router = router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::auth::require_key,
        ))
        // The inspector's page and assets, outside the key check (they hold no data).
        .merge(crate::inspector::routes())
        .layer(DefaultBodyLimit::max(state.options.body_limit))
        // Before anything answers: a keyless server refuses other hosts and other sites.
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::origin::check,
        ));
    // Outermost, so preflights skip the key check and refusals carry the CORS headers too.
    let router = match &state.options.cors {
        Some(origins) => router.layer(crate::cors::layer(origins)),
        None => router,
    };
    router.with_state(state)
}

/// Every path no route has, on every family: `404` saying where the routes are listed.
async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route is `{method} {}`: GET /openapi.json lists the routes",
        uri.path()
    ))
}

/// A method a path does not take, on every family: `405` saying where the methods are listed.
async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "`{}` does not take {method}: GET /openapi.json lists the methods each path takes",
            uri.path()
        ),
    )
}

/// `202`: the request's event is recorded (its seq and id, when it recorded one) and the turn
/// runs on.
fn accepted(started: &Started) -> Response {
    let mut answer = json!({ "session": started.session, "status": "running" });
    if let Some(recorded) = started.recorded {
        answer["recorded"] = json!({ "seq": recorded.seq, "id": recorded.id });
    }
    (StatusCode::ACCEPTED, Json(answer)).into_response()
}

async fn health() -> Response {
    Json(json!({ "status": "ok" })).into_response()
}

/// `GET /sessions`: the query's words checked by the host (the same rules as the CLI's
/// `sessions`), and the page size bounded.
async fn list(State(state): Shared, asked: crate::request::QueryOf<SessionQueryWords>) -> Answer {
    let words = query(asked)?;
    if let Some(limit) = words.limit
        && !(1..=openharness_host::MAX_SESSIONS_PAGE).contains(&limit)
    {
        return Err(ApiError::bad_request(format!(
            "`limit` is 1 to {} sessions a page, not {limit}",
            openharness_host::MAX_SESSIONS_PAGE
        )));
    }
    let asked = words
        .into_query()
        .map_err(|err| ApiError::bad_request(err.to_string()))?;
    Ok(Json(state.host.query_sessions(&asked).await?).into_response())
}

async fn one(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    let summary = match state.host.session(&session).await {
        // A session whose first turn this server has just started, before its first append.
        Err(HostError::SessionNotFound(_)) if state.host.is_running(&session) => {
            return Ok(Json(json!({
                "id": session,
                "status": "running",
                "len": 0,
                "runningHere": true,
            }))
            .into_response());
        }
        other => other?,
    };
    let mut value =
        serde_json::to_value(summary).map_err(|err| ApiError::internal(err.to_string()))?;
    value["runningHere"] = json!(state.host.is_running(&session));
    // When the code that recorded it is not the code registered here now (a workflow not
    // registered here has no code to compare: nothing is said).
    if let Ok(Some(change)) = state.host.code_changed(&session).await {
        value["codeChange"] =
            serde_json::to_value(change).map_err(|err| ApiError::internal(err.to_string()))?;
    }
    Ok(Json(value).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    workflow: String,
    #[serde(default)]
    input: Option<String>,
}

async fn create(State(state): Shared, request: crate::request::Body) -> Answer {
    let Create { workflow, input } = body(request)?;
    state.host.hosted(&workflow)?;
    let session = SessionId::new();
    let start = TurnStart::New { workflow, input };
    let started = state.host.start(&session, start, RunOptions::new()).await?;
    Ok(accepted(&started))
}

async fn remove(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    state.host.session(&session).await?;
    if state.host.is_running(&session) {
        return Err(HostError::busy(&session, "a turn is running on it (cancel it first)").into());
    }
    // Its forks start from its state: deleting it would leave them unable to fold.
    let forks: Vec<String> = state
        .host
        .sessions()
        .await?
        .into_iter()
        .filter(|s| s.parent.as_ref() == Some(&session))
        .map(|s| s.id.to_string())
        .collect();
    if !forks.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "has_forks",
            format!(
                "session {session} has forks ({}); delete them first",
                forks.join(", ")
            ),
        ));
    }
    state
        .host
        .store()
        .clear(&session)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    // What was said about it goes with it.
    if let Ok(log) = openharness_host::feedback::feedback_log(&session) {
        state
            .host
            .store()
            .clear(&log)
            .await
            .map_err(|err| ApiError::internal(err.to_string()))?;
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Input {
    text: String,
    /// What this input gets while a turn runs (else the header, else the server's default).
    #[serde(default)]
    on_busy: Option<BusyPolicy>,
    /// Who wrote it, recorded as the input's `by` (traces show it).
    #[serde(default)]
    by: Option<String>,
}

async fn input(
    State(state): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    request: crate::request::Body,
) -> Answer {
    let session = session_id(&id)?;
    let Input { text, on_busy, by } = body(request)?;
    let policy = busy_policy(&headers, on_busy, state.options.on_busy)?;
    let options = with_by(RunOptions::new().on_busy(policy), by);
    let started = state
        .host
        .start(&session, TurnStart::Input(text), options)
        .await?;
    Ok(accepted(&started))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AnswerBody {
    request: EventId,
    text: String,
    /// Who answered, recorded as the answer's `by` (traces show it).
    #[serde(default)]
    by: Option<String>,
}

/// `options` recording who gave the input, when the client said.
fn with_by(options: RunOptions, by: Option<String>) -> RunOptions {
    match by {
        Some(by) => options.by(by),
        None => options,
    }
}

async fn answer(
    State(state): Shared,
    Path(id): Path<String>,
    request: crate::request::Body,
) -> Answer {
    let session = session_id(&id)?;
    let AnswerBody { request, text, by } = body(request)?;
    let start = TurnStart::Answer { request, text };
    let options = with_by(RunOptions::new(), by);
    let started = state.host.start(&session, start, options).await?;
    Ok(accepted(&started))
}

async fn resume(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    state.host.workflow_of(&session).await?;
    let started = state
        .host
        .start(&session, TurnStart::Resume, RunOptions::new())
        .await?;
    Ok(accepted(&started))
}

async fn cancel(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    state.host.session(&session).await?;
    let cancelled = state.host.cancel(&session).await;
    Ok(Json(json!({ "cancelled": cancelled })).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    after: Option<u64>,
    limit: Option<usize>,
}

async fn events(
    State(state): Shared,
    Path(id): Path<String>,
    headers: HeaderMap,
    page: crate::request::QueryOf<Page>,
) -> Answer {
    let session = session_id(&id)?;
    let Page { after, limit } = query(page)?;
    bounded("after", after)?;
    bounded("limit", limit.map(|l| l as u64))?;
    if crate::sse::wanted(&headers) {
        // Resume after the last event the client saw: `Last-Event-ID` wins over `?after=`.
        let last_seen = match crate::sse::last_event_id(&headers)? {
            Some(id) => Some(id.parse::<u64>().map_err(|_| {
                ApiError::bad_request(format!("Last-Event-ID `{id}` is not an event seq"))
            })?),
            None => after,
        };
        let from = last_seen.map_or(0, |seq| seq.saturating_add(1));
        return crate::sse::events(&state, session, from).await;
    }
    let limit = limit.unwrap_or(100).clamp(1, MAX_PAGE);
    match state.host.events(&session, after, limit).await {
        // A session whose first turn this server has just started, before its first append:
        // no events yet, as its stream would say.
        Err(HostError::SessionNotFound(_)) if state.host.is_running(&session) => {
            Ok(Json(json!({ "events": [], "len": 0, "nextAfter": null })).into_response())
        }
        page => Ok(Json(page?).into_response()),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct At {
    at: Option<u64>,
}

async fn state_at(
    State(state): Shared,
    Path(id): Path<String>,
    at: crate::request::QueryOf<At>,
) -> Answer {
    let session = session_id(&id)?;
    let At { at } = query(at)?;
    bounded("at", at)?;
    let states = state
        .host
        .states_at(&session, &[at.unwrap_or(u64::MAX)])
        .await?;
    Ok(Json(states.into_iter().next()).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Positions {
    at: String,
}

async fn states_at(
    State(state): Shared,
    Path(id): Path<String>,
    positions: crate::request::QueryOf<Positions>,
) -> Answer {
    let session = session_id(&id)?;
    let Positions { at } = query(positions)?;
    let positions = at
        .split(',')
        .map(|p| {
            p.trim()
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("`{p}` is not a position")))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    if positions.is_empty() || positions.len() > MAX_POSITIONS {
        return Err(ApiError::bad_request(format!(
            "ask for 1 to {MAX_POSITIONS} positions, comma-separated"
        )));
    }
    Ok(Json(state.host.states_at(&session, &positions).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Between {
    from: u64,
    to: u64,
}

async fn diff(
    State(state): Shared,
    Path(id): Path<String>,
    between: crate::request::QueryOf<Between>,
) -> Answer {
    let session = session_id(&id)?;
    let Between { from, to } = query(between)?;
    bounded("from", Some(from))?;
    bounded("to", Some(to))?;
    Ok(Json(state.host.diff(&session, from, to).await?).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct With {
    with: String,
}

/// `GET /sessions/{id}/compare?with=OTHER`: where two sessions part (a fork and its parent,
/// two forks, or any two), with the patches between the events and the states there.
async fn compare(
    State(state): Shared,
    Path(id): Path<String>,
    other: crate::request::QueryOf<With>,
) -> Answer {
    let session = session_id(&id)?;
    let other = session_id(&query(other)?.with)?;
    Ok(Json(state.host.compare(&session, &other).await?).into_response())
}

/// The session folded through this server's handlers, compared with the state hashes its
/// live run recorded (`Host::check_state`): the first position where the state parts.
async fn state_check(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    Ok(Json(state.host.check_state(&session).await?).into_response())
}

/// `GET /sessions/{id}/export`: the session as `openharness export` writes it — JSONL whose
/// blocks are SHA-256 chains, a fork's ancestors first, oldest first
/// ([`jsonl::export_with_ancestors`], `docs/export-format.md`) — so `openharness verify` and
/// `openharness import` take the file as they take the CLI's.
///
/// Buffered, not streamed: the export is written through a synchronous [`std::io::Write`]
/// while the store is read page by page, so a stream would need a channel with no back
/// pressure (as much memory as the buffer) and a failure found part way — a store error, a
/// fork whose parent is gone — would reach the client as a `200` cut short (which its end line
/// would give away on import, but which a browser would save as a success). Buffered, every
/// failure is its status in the error shape of every route, and the answer has its length.
/// The export costs its size in memory while it is sent, and it is an ordinary request, under
/// the request timeout.
async fn export(State(state): Shared, Path(id): Path<String>) -> Answer {
    let session = session_id(&id)?;
    let mut body = Vec::new();
    let store = state.host.store();
    if let Err(err) = jsonl::export_with_ancestors(&**store, &session, &mut body).await {
        let message = openharness_core::adapter::ErrorChain(&err).to_string();
        return Err(match err {
            // As every route says it of an unknown session.
            jsonl::TransferError::NotFound { .. } => HostError::SessionNotFound(session).into(),
            jsonl::TransferError::MissingParent { .. } => {
                ApiError::new(StatusCode::CONFLICT, "missing_parent", message)
            }
            _ => ApiError::internal(message),
        });
    }
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(NDJSON)),
        (header::CONTENT_DISPOSITION, attachment(&session)),
    ];
    Ok((headers, body).into_response())
}

/// The media type of JSONL exports.
const NDJSON: &str = "application/x-ndjson";

/// `Content-Disposition` of a session's export: saved as `<id>.jsonl`, any character of the
/// id that is not safe in a file name (or a header) as `_`.
fn attachment(session: &SessionId) -> HeaderValue {
    let name: String = session
        .as_str()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~') {
                c
            } else {
                '_'
            }
        })
        .collect();
    HeaderValue::from_str(&format!("attachment; filename=\"{name}.jsonl\""))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessagesAt {
    at: Option<u64>,
    shape: Option<String>,
    /// With `shape=ui`: how approvals show (`data`, `tool`; see `crate::chat`).
    approvals: Option<String>,
}

async fn messages(
    State(state): Shared,
    Path(id): Path<String>,
    at: crate::request::QueryOf<MessagesAt>,
) -> Answer {
    let session = session_id(&id)?;
    let MessagesAt {
        at,
        shape,
        approvals,
    } = query(at)?;
    bounded("at", at)?;
    let at = at.unwrap_or(u64::MAX);
    // How `shape=ui` shows approvals; the other shapes show none as tools, so it changes
    // nothing there (a value that is neither `data` nor `tool` is still refused).
    let approvals = match approvals {
        None => openharness_projection::Approvals::Data,
        Some(approvals) => approvals.parse().map_err(ApiError::bad_request)?,
    };
    match shape.as_deref() {
        None | Some("v4") => Ok(Json(state.host.messages_at(&session, at).await?).into_response()),
        Some("ui") => Ok(Json(
            state
                .host
                .ui_messages_at_with(&session, at, approvals)
                .await?,
        )
        .into_response()),
        Some("calls") => {
            let messages = state.host.messages_at(&session, at).await?;
            Ok(Json(openharness_projection::to_ui_messages(&messages)).into_response())
        }
        Some(other) => Err(ApiError::bad_request(format!(
            "shape `{other}` is not one of `v4`, `ui`, `calls`"
        ))),
    }
}

/// `GET /providers`: the names of the providers a fork may run with.
async fn providers(State(state): Shared) -> Answer {
    let names: Vec<_> = state
        .options
        .fork_providers
        .names()
        .map(|name| json!({ "name": name }))
        .collect();
    Ok(Json(json!({ "providers": names })).into_response())
}

async fn fork(
    State(state): Shared,
    Path(id): Path<String>,
    request: crate::request::Body,
) -> Answer {
    let parent = session_id(&id)?;
    // The fork point, with what the fork changes: `input` (a new turn once it is forked) and
    // `stateEdit` (a JSON merge patch on the state it starts from).
    let mut asked: serde_json::Value = body(request)?;
    let (input, edit, provider, answer) = match asked.as_object_mut() {
        Some(fields) => (
            fields.remove("input"),
            fields.remove("stateEdit"),
            fields.remove("provider"),
            fields.remove("answer"),
        ),
        None => (None, None, None, None),
    };
    let answer = fork_answer(answer)?;
    let provider = match provider {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(name)) => match state.options.fork_providers.get(&name) {
            Some(provider) => Some(std::sync::Arc::clone(provider)),
            None => {
                // Like an unknown session: nothing by that name here.
                let offered: Vec<&str> = state.options.fork_providers.names().collect();
                return Err(ApiError::not_found(if offered.is_empty() {
                    format!("no provider named `{name}`: this server offers none to forks")
                } else {
                    format!(
                        "no provider named `{name}`: this server offers {}",
                        offered.join(", ")
                    )
                }));
            }
        },
        Some(_) => return Err(ApiError::bad_request("`provider` is a provider's name")),
    };
    let input = match input {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(text)) => Some(text),
        Some(_) => return Err(ApiError::bad_request("`input` is a string")),
    };
    let edit = match edit {
        None | Some(serde_json::Value::Null) => None,
        Some(patch @ serde_json::Value::Object(_)) => Some(patch),
        Some(_) => {
            return Err(ApiError::bad_request(
                "`stateEdit` is a JSON merge patch: an object",
            ));
        }
    };
    let at: ForkPoint = serde_json::from_value(asked)
        .map_err(|err| ApiError::bad_request(format!("not a fork point: {err}")))?;
    match &at {
        ForkPoint::Position { position } => bounded("position", Some(*position))?,
        ForkPoint::Nth { n, .. } if *n == 0 || *n > 1_000_000_000 => {
            return Err(ApiError::bad_request(
                "`n` counts occurrences from 1 (to 10^9)",
            ));
        }
        _ => {}
    }
    state.host.workflow_of(&parent).await?;
    let child = SessionId::new();
    let start = TurnStart::Fork(Box::new(ForkStart {
        parent,
        at,
        state_edit: edit,
        input,
        answer,
        provider,
    }));
    let started = state.host.start(&child, start, RunOptions::new()).await?;
    Ok(accepted(&started))
}

/// A fork's `answer`: its text (answering the only request open at the fork point), or
/// `{"text", "request"}` naming the request.
fn fork_answer(
    answer: Option<serde_json::Value>,
) -> Result<Option<openharness_host::ForkAnswer>, ApiError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Named {
        text: String,
        #[serde(default)]
        request: Option<EventId>,
    }
    match answer {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(text)) => Ok(Some(openharness_host::ForkAnswer {
            request: None,
            text,
        })),
        Some(named) => {
            let Named { text, request } = serde_json::from_value(named).map_err(|err| {
                ApiError::bad_request(format!(
                    "`answer` is a text, or `{{\"text\", \"request\"}}`: {err}"
                ))
            })?;
            Ok(Some(openharness_host::ForkAnswer { request, text }))
        }
    }
}
