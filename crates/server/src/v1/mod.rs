//! The platform's Everruns-shaped `/v1` API (feature `platform`), served on the server's one
//! HTTP layer: the same errors ([`crate::ApiError`]), request parser, API keys, SSE writer
//! (stream cap, heartbeat, `error` frame) and OpenAPI document as the native routes. Each
//! handler reads its input, asks the [`Platform`] (the HTTP-free domain, `openharness-platform`)
//! and answers JSON. The routes the Everruns SDK calls beside these, and the shapes its models
//! read, are [`everruns`]; the notification pages and streams are [`events`].
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /v1/agents?status=&search=&offset=&limit=` | agents, oldest first, in the page envelope |
//! | `POST /v1/agents` | creates one (`201`), or updates one (`200`): an upsert by `id`, else by the name of an active agent |
//! | `GET`, `PATCH`, `DELETE /v1/agents/{id}` | reads, changes (`409 agent_archived` when archived), archives (`204`; with `?permanent=true` deletes, `409 agent_has_sessions` while it has sessions) one |
//! | `POST /v1/agents/{id}/archive`, `…/unarchive` | archives it, makes it active again |
//! | `GET`, `POST /v1/agents/{a}/sessions` | an agent's sessions; a new one is `pending` (`409 agent_archived` for an archived agent) |
//! | `GET`, `PATCH`, `DELETE /v1/agents/{a}/sessions/{s}` | one session (title, tags, model); delete removes its log too (`409 session_busy` during a turn) |
//! | `GET`, `POST /v1/agents/{a}/sessions/{s}/messages` | its messages by sequence; `POST {content: [{type: text, text}], controls?, metadata?, tags?}` records a user message, answers it (`201`) once it is durably recorded and runs the turn on; while a turn runs, the busy policy (`x-openharness-on-busy`, else `serve --on-busy`) says: `409 session_busy` under `reject`, else `201` once it is recorded as `input:queued` (`503 no_provider` when no model is found) |
//! | `POST /v1/agents/{a}/sessions/{s}/cancel` | cancels its running turn |
//! | `GET /v1/agents/{a}/sessions/{s}/events?after=&since_id=&types=&exclude=`, `…/sse` | its notifications as a JSON page; with `Accept: text/event-stream` (always on `…/sse`), SSE that goes on live and resumes after `Last-Event-ID` |
//! | `GET`, `PUT /v1/agents/{id}/capabilities` | its capabilities by position; `PUT {capabilities: [ids]}` sets them in order |
//! | `GET /v1/capabilities`, `GET /v1/capabilities/{id}` | the built-in registry |
//! | `GET`, `POST /v1/llm-providers` | providers; `api_key` is write-only, `api_key_set` tells whether one is stored |
//! | `GET`, `PATCH`, `DELETE /v1/llm-providers/{id}` | one provider (`409 provider_in_use` while it has models) |
//! | `GET`, `POST /v1/llm-providers/{id}/models` | its models |
//! | `GET /v1/llm-models?provider_id=`, `POST /v1/llm-models` | models (`409 duplicate_model` for a repeated `model_id` at one provider) |
//! | `GET`, `PATCH`, `DELETE /v1/llm-models/{id}` | one model (`409 model_in_use` while an agent's default) |
//! | the Everruns SDK's routes | see [`everruns`] |
//!
//! Lists answer `{"data": [...], "total", "offset", "limit"}` (`limit` 1 to 100, default 20).
//! Ids that are not UUIDs name nothing (`404`).

pub(crate) mod events;
pub(crate) mod everruns;
pub(crate) mod openapi;

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openharness_platform::{
    AgentStatus, Capability, NewModel, Notification, Page, Platform, PlatformError,
};
use serde::Deserialize;
use uuid::Uuid;

use crate::error::ApiError;
use crate::request::{Body, MAX_SAFE, QueryOf, body, query};

pub(crate) type Shared = State<Arc<V1>>;
pub(crate) type Answer = Result<Response, ApiError>;

/// What the `/v1` handlers share: the platform, and the server's state (its options and its
/// cap of streams per session).
pub(crate) struct V1 {
    pub(crate) platform: Platform,
    pub(crate) server: Arc<crate::AppState>,
}

/// The default and largest page sizes.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 100;

/// The `/v1` routes over `platform`; the server adds its layers (keys, body limit, CORS,
/// fallbacks) around them with its own routes. Every route but the notification streams has
/// the server's request timeout.
pub(crate) fn routes(
    platform: Platform,
    server: Arc<crate::AppState>,
) -> Router<Arc<crate::AppState>> {
    let timeout = server.options.request_timeout;
    let state = Arc::new(V1 { platform, server });
    let timed = Router::new()
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
        .merge(everruns::timed_routes())
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ));
    // Notification streams live as long as their client: no timeout.
    let streaming = Router::new()
        .route(
            "/v1/agents/{id}/sessions/{session}/events",
            get(events::nested::<false>),
        )
        .route(
            "/v1/agents/{id}/sessions/{session}/sse",
            get(events::nested::<true>),
        )
        .merge(everruns::streaming_routes());
    timed.merge(streaming).with_state(state)
}

/// An id from the path: one that is not a UUID names nothing (an agent's may also be spelt
/// `agent_` and its 32 hex digits, as Everruns clients write it).
pub(crate) fn id(kind: &'static str, text: &str) -> Result<Uuid, ApiError> {
    let parsed = if kind == "agent" {
        openharness_platform::everruns::agent_id(text)
    } else {
        text.parse().ok()
    };
    parsed.ok_or_else(|| {
        PlatformError::NotFound {
            kind,
            id: text.to_owned(),
        }
        .into()
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

/// The paging query of a list, checked.
pub(crate) fn read_paging(paging: QueryOf<Paging>) -> Result<Paging, ApiError> {
    query(paging)?.check()
}

impl Paging {
    /// Refuses an `offset` beyond [`MAX_SAFE`].
    fn check(self) -> Result<Self, ApiError> {
        let offset = u64::try_from(self.offset).unwrap_or(u64::MAX);
        for (name, value) in [("offset", Some(offset))] {
            if let Some(value) = value
                && value > MAX_SAFE
            {
                return Err(ApiError::bad_request(format!(
                    "`{name}` is {value}, beyond the largest the API takes ({MAX_SAFE})"
                )));
            }
        }
        Ok(self)
    }

    /// The page length asked for, or the default; refuses one out of range.
    fn limit(&self) -> Result<usize, ApiError> {
        let limit = self.limit.unwrap_or(DEFAULT_LIMIT);
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(ApiError::bad_request(format!(
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

async fn list_agents(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    let paging = read_paging(paging)?;
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
        views.push(everruns::agent_view(&s.platform, agent).await?);
    }
    paging.page(views)
}

/// `POST /v1/agents`: creates (`201`) or, as an upsert, updates (`200`) an agent.
async fn create_agent(State(s): Shared, new: Body) -> Answer {
    let (agent, new) = s.platform.apply_agent(body(new)?).await?;
    let view = everruns::agent_view(&s.platform, agent).await?;
    if new { created(view) } else { ok(view) }
}

async fn get_agent(State(s): Shared, Path(agent): Path<String>) -> Answer {
    let agent = s.platform.agent(id("agent", &agent)?).await?;
    ok(everruns::agent_view(&s.platform, agent).await?)
}

async fn update_agent(State(s): Shared, Path(agent): Path<String>, patch: Body) -> Answer {
    let agent = id("agent", &agent)?;
    let agent = s.platform.update_agent(agent, body(patch)?).await?;
    ok(everruns::agent_view(&s.platform, agent).await?)
}

/// `DELETE /v1/agents/{id}` archives the agent (what Everruns clients mean by delete);
/// `?permanent=true` deletes it for good (`409 agent_has_sessions` while it has sessions).
async fn delete_agent(
    State(s): Shared,
    Path(agent): Path<String>,
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
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
    ok(everruns::agent_view(&s.platform, agent).await?)
}

async fn unarchive_agent(State(s): Shared, Path(agent): Path<String>) -> Answer {
    let agent = id("agent", &agent)?;
    let agent = s
        .platform
        .set_agent_status(agent, AgentStatus::Active)
        .await?;
    ok(everruns::agent_view(&s.platform, agent).await?)
}

async fn list_agent_capabilities(
    State(s): Shared,
    Path(agent): Path<String>,
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
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
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
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
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    paging.page(s.platform.messages(agent, session).await?)
}

async fn post_message(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    headers: HeaderMap,
    new: Body,
) -> Answer {
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    let policy = crate::request::busy_policy(&headers, None, s.server.options.on_busy)?;
    let new = body(new)?;
    created(
        s.platform
            .post_message_on_busy(agent, session, new, policy)
            .await?,
    )
}

// ----- capabilities -----

async fn list_capabilities(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    let paging = read_paging(paging)?;
    let mut all = s.platform.capabilities();
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

async fn get_capability(State(s): Shared, Path(id): Path<String>) -> Answer {
    let found: Option<Capability> = s.platform.capability(&id);
    let found = found.ok_or(PlatformError::NotFound {
        kind: "capability",
        id,
    })?;
    ok(found)
}

// ----- providers -----

async fn list_providers(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    read_paging(paging)?.page(s.platform.providers().await?)
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
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
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
        return Err(ApiError::invalid(
            "`provider_id` differs from the provider in the path",
        ));
    }
    // The path's provider must exist: a 404, not the 422 of a body naming no provider.
    s.platform.provider(provider).await?;
    new.provider_id = Some(provider);
    created(s.platform.create_model(new).await?)
}

// ----- models -----

async fn list_models(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    let paging = read_paging(paging)?;
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
