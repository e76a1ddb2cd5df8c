//! The `/v1` routes and their handlers: each reads its input (a typed error for anything
//! malformed), asks the [`Platform`], and answers JSON. The routes the Everruns SDK calls
//! beside these (top-level `/v1/sessions…`, `/v1/models`, `…/sse`, `…/cancel`) and the shapes
//! it reads are in [`crate::everruns`], which answers through the handlers here.

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use uuid::Uuid;

use crate::capabilities::{capabilities, capability};
use crate::error::PlatformError;
use crate::events::{Notification, Projector, Resume};
use crate::platform::Platform;
use crate::requests::NewModel;
use crate::resources::{AgentStatus, Page};
use crate::{PlatformOptions, resources::Capability};

pub(crate) type Shared = State<Arc<AppState>>;
pub(crate) type Answer = Result<Response, PlatformError>;

pub(crate) struct AppState {
    pub(crate) platform: Platform,
    pub(crate) options: PlatformOptions,
}

/// The default and largest page sizes.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;
/// The largest `offset` or `after` the routes take: the largest integer JSON carries exactly
/// (JavaScript's safe integers), so an answer that echoes it stays exact.
const MAX_SAFE: u64 = 9_007_199_254_740_991;

pub(crate) fn build(state: Arc<AppState>) -> Router {
    let body_limit = state.options.body_limit;
    Router::new()
        .route("/v1/agents", get(list_agents).post(create_agent))
        .route(
            "/v1/agents/{id}",
            get(get_agent).patch(update_agent).delete(delete_agent),
        )
        .route(
            "/v1/agents/{id}/sessions",
            get(list_sessions).post(create_session),
        )
        .route(
            "/v1/agents/{id}/sessions/{session}",
            get(get_session)
                .patch(update_session)
                .delete(delete_session),
        )
        .route(
            "/v1/agents/{id}/sessions/{session}/messages",
            get(list_messages).post(post_message),
        )
        .route(
            "/v1/agents/{id}/sessions/{session}/events",
            get(session_events),
        )
        .route("/v1/agents/{id}/sessions/{session}/sse", get(session_sse))
        .route(
            "/v1/agents/{id}/sessions/{session}/cancel",
            post(cancel_session),
        )
        .route("/v1/agents/{id}/archive", post(archive_agent))
        .route("/v1/agents/{id}/unarchive", post(unarchive_agent))
        .route(
            "/v1/agents/{id}/capabilities",
            get(list_agent_capabilities).put(set_agent_capabilities),
        )
        .route("/v1/capabilities", get(list_capabilities))
        .route("/v1/capabilities/{id}", get(get_capability))
        .route(
            "/v1/llm-providers",
            get(list_providers).post(create_provider),
        )
        .route(
            "/v1/llm-providers/{id}",
            get(get_provider)
                .patch(update_provider)
                .delete(delete_provider),
        )
        .route(
            "/v1/llm-providers/{id}/models",
            get(list_provider_models).post(create_provider_model),
        )
        .route("/v1/llm-models", get(list_models).post(create_model))
        .route(
            "/v1/llm-models/{id}",
            get(get_model).patch(update_model).delete(delete_model),
        )
        .merge(crate::everruns::routes())
        .route("/v1", axum::routing::any(no_route))
        .route("/v1/{*rest}", axum::routing::any(no_route))
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            require_key,
        ))
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state)
}

async fn no_route(method: axum::http::Method, uri: axum::http::Uri) -> PlatformError {
    PlatformError::NoRoute {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> PlatformError {
    PlatformError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}

/// With a key check configured, every `/v1` route requires the key: `Authorization: Bearer
/// <key>`, the bare key in `Authorization` (as the Everruns SDK's management client sends
/// it), or `x-api-key: <key>`.
async fn require_key(State(state): Shared, request: Request, next: Next) -> Response {
    let Some(check) = &state.options.api_key_check else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(crate::everruns::bearer_or_bare)
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
    if presented.is_some_and(|key| check(key)) {
        return next.run(request).await;
    }
    PlatformError::Unauthorized.into_response()
}

/// A request body: JSON, read into the route's type by [`body`].
pub(crate) type Body = Result<Json<serde_json::Value>, JsonRejection>;

/// The body as `T`: JSON that does not parse is `400`; anything but an object, or an object
/// of the wrong shape, is `422` (serde would read a struct from an array too).
pub(crate) fn body<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, PlatformError> {
    let value = body
        .map(|Json(value)| value)
        .map_err(|rejection| PlatformError::BadRequest(rejection.body_text()))?;
    if !value.is_object() {
        return Err(PlatformError::Invalid(
            "the body must be a JSON object".into(),
        ));
    }
    serde_json::from_value(value).map_err(|err| PlatformError::Invalid(err.to_string()))
}

pub(crate) fn query(query: Result<Query<Paging>, QueryRejection>) -> Result<Paging, PlatformError> {
    query
        .map(|Query(value)| value)
        .map_err(|rejection| PlatformError::BadRequest(rejection.body_text()))?
        .check()
}

/// An id from the path: one that is not a UUID names nothing (an agent's may also be spelt
/// `agent_` and its 32 hex digits, as Everruns clients write it).
pub(crate) fn id(kind: &'static str, text: &str) -> Result<Uuid, PlatformError> {
    let parsed = if kind == "agent" {
        crate::everruns::agent_id(text)
    } else {
        text.parse().ok()
    };
    parsed.ok_or_else(|| PlatformError::NotFound {
        kind,
        id: text.to_owned(),
    })
}

/// `?offset=&limit=` of every list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Paging {
    #[serde(default)]
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
    /// Agents only: `active` or `archived`.
    status: Option<AgentStatus>,
    /// Models only: one provider's.
    pub(crate) provider_id: Option<Uuid>,
    /// Agents, capabilities and sessions: a case-insensitive search of names and descriptions
    /// (titles, for sessions).
    pub(crate) search: Option<String>,
    /// Sessions (`GET /v1/sessions`) only: one agent's.
    pub(crate) agent_id: Option<String>,
    /// Agents only: `true` with `DELETE` deletes an agent for good instead of archiving it.
    permanent: Option<bool>,
}

impl Paging {
    /// Refuses an `offset` beyond [`MAX_SAFE`].
    fn check(self) -> Result<Self, PlatformError> {
        let offset = u64::try_from(self.offset).unwrap_or(u64::MAX);
        for (name, value) in [("offset", Some(offset))] {
            if let Some(value) = value
                && value > MAX_SAFE
            {
                return Err(PlatformError::BadRequest(format!(
                    "`{name}` is {value}, beyond the largest the API takes ({MAX_SAFE})"
                )));
            }
        }
        Ok(self)
    }

    /// The page length asked for, or the default; refuses one out of range.
    fn limit(&self) -> Result<usize, PlatformError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(PlatformError::BadRequest(format!(
                "`limit` must be 1 to {MAX_LIMIT}, not {limit}"
            )));
        }
        Ok(limit)
    }

    pub(crate) fn page<T: serde::Serialize>(&self, items: Vec<T>) -> Answer {
        ok(Page::of(items, self.offset, self.limit()?))
    }

    /// [`Paging::page`] for notifications, never ending a page between two notifications of one
    /// event (a `step.generating` and its `message.delta`): such a page holds one more than
    /// `limit`, so a reader that goes on from its last `sequence` (`?after=`) misses nothing.
    pub(crate) fn page_whole_events(&self, notes: Vec<Notification>) -> Answer {
        let limit = self.limit()?;
        let mut end = self.offset.saturating_add(limit).min(notes.len());
        while end > self.offset
            && end < notes.len()
            && notes[end].sequence == notes[end - 1].sequence
        {
            end += 1;
        }
        let total = notes.len();
        let data = notes
            .into_iter()
            .skip(self.offset)
            .take(end.saturating_sub(self.offset))
            .collect();
        ok(Page {
            data,
            total,
            offset: self.offset,
            limit,
        })
    }
}

pub(crate) fn ok<T: serde::Serialize>(value: T) -> Answer {
    Ok(Json(value).into_response())
}

pub(crate) fn created<T: serde::Serialize>(value: T) -> Answer {
    Ok((StatusCode::CREATED, Json(value)).into_response())
}

pub(crate) fn deleted() -> Answer {
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ----- agents -----

async fn list_agents(State(s): Shared, paging: Result<Query<Paging>, QueryRejection>) -> Answer {
    let paging = query(paging)?;
    let mut agents = s.platform.agents(paging.status).await?;
    if let Some(search) = &paging.search {
        let search = search.to_lowercase();
        agents.retain(|a| {
            a.name.to_lowercase().contains(&search)
                || a.description
                    .as_deref()
                    .is_some_and(|d| d.to_lowercase().contains(&search))
        });
    }
    let mut views = Vec::with_capacity(agents.len());
    for agent in agents {
        views.push(crate::everruns::agent_view(&s.platform, agent).await?);
    }
    paging.page(views)
}

/// `POST /v1/agents`: creates (`201`) or, as an upsert, updates (`200`) an agent.
async fn create_agent(State(s): Shared, new: Body) -> Answer {
    let (agent, new) = s.platform.apply_agent(body(new)?).await?;
    let view = crate::everruns::agent_view(&s.platform, agent).await?;
    if new { created(view) } else { ok(view) }
}

async fn get_agent(State(s): Shared, Path(agent): Path<String>) -> Answer {
    let agent = s.platform.agent(id("agent", &agent)?).await?;
    ok(crate::everruns::agent_view(&s.platform, agent).await?)
}

async fn update_agent(State(s): Shared, Path(agent): Path<String>, patch: Body) -> Answer {
    let agent = id("agent", &agent)?;
    let agent = s.platform.update_agent(agent, body(patch)?).await?;
    ok(crate::everruns::agent_view(&s.platform, agent).await?)
}

/// `DELETE /v1/agents/{id}` archives the agent (what Everruns clients mean by delete);
/// `?permanent=true` deletes it for good (`409 agent_has_sessions` while it has sessions).
async fn delete_agent(
    State(s): Shared,
    Path(agent): Path<String>,
    paging: Result<Query<Paging>, QueryRejection>,
) -> Answer {
    let paging = query(paging)?;
    let agent = id("agent", &agent)?;
    if paging.permanent == Some(true) {
        s.platform.delete_agent(agent).await?;
    } else {
        s.platform
            .set_agent_status(agent, AgentStatus::Archived)
            .await?;
    }
    deleted()
}

async fn archive_agent(State(s): Shared, Path(agent): Path<String>) -> Answer {
    let agent = id("agent", &agent)?;
    let agent = s
        .platform
        .set_agent_status(agent, AgentStatus::Archived)
        .await?;
    ok(crate::everruns::agent_view(&s.platform, agent).await?)
}

async fn unarchive_agent(State(s): Shared, Path(agent): Path<String>) -> Answer {
    let agent = id("agent", &agent)?;
    let agent = s
        .platform
        .set_agent_status(agent, AgentStatus::Active)
        .await?;
    ok(crate::everruns::agent_view(&s.platform, agent).await?)
}

async fn list_agent_capabilities(
    State(s): Shared,
    Path(agent): Path<String>,
    paging: Result<Query<Paging>, QueryRejection>,
) -> Answer {
    let paging = query(paging)?;
    let agent = id("agent", &agent)?;
    paging.page(s.platform.agent_capabilities(agent).await?)
}

async fn set_agent_capabilities(State(s): Shared, Path(agent): Path<String>, set: Body) -> Answer {
    let agent = id("agent", &agent)?;
    let set = body(set)?;
    let capabilities = s.platform.set_agent_capabilities(agent, set).await?;
    ok(Page::of(capabilities, 0, MAX_LIMIT))
}

// ----- sessions -----

async fn list_sessions(
    State(s): Shared,
    Path(agent): Path<String>,
    paging: Result<Query<Paging>, QueryRejection>,
) -> Answer {
    let paging = query(paging)?;
    let agent = id("agent", &agent)?;
    paging.page(s.platform.sessions(agent).await?)
}

async fn create_session(State(s): Shared, Path(agent): Path<String>, new: Body) -> Answer {
    let agent = id("agent", &agent)?;
    created(s.platform.create_session(agent, body(new)?).await?)
}

async fn get_session(State(s): Shared, Path((agent, session)): Path<(String, String)>) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    ok(s.platform.session(agent, session).await?)
}

async fn update_session(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    patch: Body,
) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    ok(s.platform
        .update_session(agent, session, body(patch)?)
        .await?)
}

async fn delete_session(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    s.platform.delete_session(agent, session).await?;
    deleted()
}

/// `POST …/cancel`: cancels the session's running turn (nothing when none runs) and answers
/// the session.
async fn cancel_session(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    s.platform.cancel(agent, session).await?;
    ok(s.platform.session(agent, session).await?)
}

async fn list_messages(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    paging: Result<Query<Paging>, QueryRejection>,
) -> Answer {
    let paging = query(paging)?;
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    paging.page(s.platform.messages(agent, session).await?)
}

async fn post_message(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    new: Body,
) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    created(s.platform.post_message(agent, session, body(new)?).await?)
}

/// The query of a session's notifications, read from its pairs (`types` and `exclude` may
/// repeat, or list types separated by commas).
#[derive(Debug, Default)]
pub(crate) struct EventsQuery {
    /// `offset` and `limit` of a JSON page.
    paging: Paging,
    /// Only notifications after this sequence (`after`, or `after_sequence`).
    after: Option<u64>,
    /// Only notifications after the one with this id.
    since_id: Option<Uuid>,
    /// Only notifications of these types (all when empty).
    types: Vec<String>,
    /// No notifications of these types.
    exclude: Vec<String>,
}

impl EventsQuery {
    /// Reads the query's pairs: a name not listed here, a number that is not one, or a
    /// `since_id` that is not a UUID is `400`. Cursors given together all hold: the page starts
    /// after the latest of them.
    pub(crate) fn read(
        pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
    ) -> Result<Self, PlatformError> {
        let Query(pairs) =
            pairs.map_err(|rejection| PlatformError::BadRequest(rejection.body_text()))?;
        let number = |name: &str, value: &str| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= MAX_SAFE)
                .ok_or_else(|| {
                    PlatformError::BadRequest(format!(
                        "`{name}` must be a whole number from 0 to {MAX_SAFE}, not {value:?}"
                    ))
                })
        };
        let mut query = Self::default();
        for (name, value) in &pairs {
            match name.as_str() {
                "offset" => {
                    query.paging.offset = usize::try_from(number(name, value)?)
                        .map_err(|_| PlatformError::BadRequest("`offset` is too large".into()))?;
                }
                "limit" => {
                    query.paging.limit =
                        Some(usize::try_from(number(name, value)?).map_err(|_| {
                            PlatformError::BadRequest("`limit` is too large".into())
                        })?);
                }
                "after" | "after_sequence" => {
                    // Both (or one repeated): after all of them.
                    let after = number(name, value)?;
                    query.after = Some(query.after.map_or(after, |a| a.max(after)));
                }
                "since_id" => {
                    let id = value.trim().parse().map_err(|_| {
                        PlatformError::BadRequest(format!(
                            "`since_id` must be the id (a UUID) of one of the session's events, not {value:?}"
                        ))
                    })?;
                    query.since_id = Some(id);
                }
                "types" | "exclude" => {
                    let list = if name == "types" {
                        &mut query.types
                    } else {
                        &mut query.exclude
                    };
                    list.extend(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|t| !t.is_empty())
                            .map(|t| crate::everruns::notification_type(t).to_owned()),
                    );
                }
                other => {
                    return Err(PlatformError::BadRequest(format!(
                        "unknown query parameter `{other}`: a session's events take offset, limit, after (or after_sequence), since_id, types and exclude"
                    )));
                }
            }
        }
        Ok(query)
    }

    /// Whether a notification of type `kind` is asked for.
    fn wants(&self, kind: &str) -> bool {
        (self.types.is_empty() || self.types.iter().any(|t| t == kind))
            && !self.exclude.iter().any(|t| t == kind)
    }
}

async fn session_events(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Answer {
    let query = EventsQuery::read(pairs)?;
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    let wants_stream = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    events(&s, agent, session, &headers, query, wants_stream).await
}

async fn session_sse(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    headers: axum::http::HeaderMap,
    pairs: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Answer {
    let query = EventsQuery::read(pairs)?;
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    events(&s, agent, session, &headers, query, true).await
}

/// A session's notifications after the query's cursors (`Last-Event-ID` wins over them;
/// `since_id` and `after` together: after the later), of the types it asks for: a JSON page, or (`stream`) an SSE
/// stream that goes on live (`event:` the type, `id:` the frame id, `data:` the notification).
pub(crate) async fn events(
    s: &AppState,
    agent: Uuid,
    session: Uuid,
    headers: &axum::http::HeaderMap,
    query: EventsQuery,
    stream: bool,
) -> Answer {
    let last_event_id = match headers.get("last-event-id").map(|v| v.to_str()) {
        Some(Ok(text)) if stream => Some(Resume::parse(text).ok_or_else(|| {
            PlatformError::BadRequest(format!(
                "Last-Event-ID `{text}` is not a sequence (such as `41`, or `41.0`)"
            ))
        })?),
        Some(Err(_)) if stream => {
            return Err(PlatformError::BadRequest(
                "Last-Event-ID is not text".into(),
            ));
        }
        _ => None,
    };
    let resume = match (last_event_id, query.since_id) {
        (Some(resume), _) => Some(resume),
        (None, Some(seen)) => {
            let since = s.platform.resume_after_id(agent, session, seen).await?;
            Some(
                query
                    .after
                    .map_or(since, |after| since.max(Resume::after(after))),
            )
        }
        (None, None) => query.after.map(Resume::after),
    };
    if !stream {
        let mut notes = s
            .platform
            .notifications_after(agent, session, resume)
            .await?;
        notes.retain(|note| query.wants(&note.kind));
        return query.paging.page_whole_events(notes);
    }
    let mut projector = Projector::new(session, resume);
    let tail = s
        .platform
        .tail(agent, session, projector.read_from())
        .await?;
    let frames = futures_util::StreamExt::flat_map(tail, move |item| {
        let frames: Vec<_> = match item {
            Ok(recorded) => projector
                .project(recorded.seq, &recorded.event)
                .into_iter()
                .filter(|(_, note)| query.wants(&note.kind))
                .filter_map(|(id, note)| {
                    let data = serde_json::to_string(&note).ok()?;
                    Some(Ok::<_, std::convert::Infallible>(
                        axum::response::sse::Event::default()
                            .event(note.kind)
                            .id(id)
                            .data(data),
                    ))
                })
                .collect(),
            Err(err) => {
                tracing::warn!(error = %err, "a platform event stream's tail failed");
                Vec::new()
            }
        };
        futures_util::stream::iter(frames)
    });
    let sse = axum::response::sse::Sse::new(frames)
        .keep_alive(axum::response::sse::KeepAlive::new().interval(s.options.heartbeat));
    Ok(([("x-accel-buffering", "no")], sse).into_response())
}

// ----- capabilities -----

async fn list_capabilities(paging: Result<Query<Paging>, QueryRejection>) -> Answer {
    let paging = query(paging)?;
    let mut all = capabilities();
    if let Some(search) = &paging.search {
        let search = search.to_lowercase();
        all.retain(|c| {
            c.id.contains(&search)
                || c.name.to_lowercase().contains(&search)
                || c.description.to_lowercase().contains(&search)
        });
    }
    paging.page(all)
}

async fn get_capability(Path(id): Path<String>) -> Answer {
    let found: Option<Capability> = capability(&id);
    ok(found.ok_or(PlatformError::NotFound {
        kind: "capability",
        id,
    })?)
}

// ----- providers -----

async fn list_providers(State(s): Shared, paging: Result<Query<Paging>, QueryRejection>) -> Answer {
    query(paging)?.page(s.platform.providers().await?)
}

async fn create_provider(State(s): Shared, new: Body) -> Answer {
    created(s.platform.create_provider(body(new)?).await?)
}

async fn get_provider(State(s): Shared, Path(provider): Path<String>) -> Answer {
    ok(s.platform.provider(id("llm_provider", &provider)?).await?)
}

async fn update_provider(State(s): Shared, Path(provider): Path<String>, patch: Body) -> Answer {
    let provider = id("llm_provider", &provider)?;
    ok(s.platform.update_provider(provider, body(patch)?).await?)
}

async fn delete_provider(State(s): Shared, Path(provider): Path<String>) -> Answer {
    s.platform
        .delete_provider(id("llm_provider", &provider)?)
        .await?;
    deleted()
}

async fn list_provider_models(
    State(s): Shared,
    Path(provider): Path<String>,
    paging: Result<Query<Paging>, QueryRejection>,
) -> Answer {
    let paging = query(paging)?;
    let provider = id("llm_provider", &provider)?;
    paging.page(s.platform.models(Some(provider)).await?)
}

async fn create_provider_model(
    State(s): Shared,
    Path(provider): Path<String>,
    new: Body,
) -> Answer {
    let provider = id("llm_provider", &provider)?;
    let mut new: NewModel = body(new)?;
    if new.provider_id.is_some_and(|p| p != provider) {
        return Err(PlatformError::Invalid(
            "`provider_id` differs from the provider in the path".into(),
        ));
    }
    // The path's provider must exist: a 404, not the 422 of a body naming no provider.
    s.platform.provider(provider).await?;
    new.provider_id = Some(provider);
    created(s.platform.create_model(new).await?)
}

// ----- models -----

async fn list_models(State(s): Shared, paging: Result<Query<Paging>, QueryRejection>) -> Answer {
    let paging = query(paging)?;
    paging.page(s.platform.models(paging.provider_id).await?)
}

async fn create_model(State(s): Shared, new: Body) -> Answer {
    created(s.platform.create_model(body(new)?).await?)
}

async fn get_model(State(s): Shared, Path(model): Path<String>) -> Answer {
    ok(s.platform.model(id("llm_model", &model)?).await?)
}

async fn update_model(State(s): Shared, Path(model): Path<String>, patch: Body) -> Answer {
    let model = id("llm_model", &model)?;
    ok(s.platform.update_model(model, body(patch)?).await?)
}

async fn delete_model(State(s): Shared, Path(model): Path<String>) -> Answer {
    s.platform.delete_model(id("llm_model", &model)?).await?;
    deleted()
}
