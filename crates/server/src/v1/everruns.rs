//! Compatibility with the official Everruns SDKs (`everruns-sdk` on PyPI, tested with 0.3.1),
//! on the wire: the routes they call beside the seed's, the shapes their models read and the
//! header they authenticate with, in this one module, mapped onto the platform's domain (what
//! the fields they send mean there is `openharness_platform::everruns`).
//!
//! | the SDK calls | here |
//! |---|---|
//! | `GET`, `POST /v1/sessions` (`?agent_id=`, `?search=`; a body naming `agent_id` or `agent_name`) | an agent's sessions, without the agent in the path |
//! | `GET`, `DELETE /v1/sessions/{id}`, `POST …/cancel` | one session; cancel its running turn |
//! | `GET`, `POST /v1/sessions/{id}/messages` | its messages; `{message: {role, content}}` posts one |
//! | `GET /v1/sessions/{id}/events`, `GET …/sse` | its notifications as a page, or as SSE |
//! | `GET /v1/agents/{a}/sessions/{s}/sse`, `POST …/cancel` | the same for the agent client (`AgentClient`), rooted at the agent |
//! | `GET /v1/models`, `GET /v1/models/{id}` | the LLM models with their provider (`ModelWithProvider`) |
//!
//! What the SDK's models read and the routes write for it:
//! - **agents** (every `/v1` route): the agent and `harness_id` (`agent-chat`: the workflow
//!   every session runs), `capabilities` as `[{"ref": id}]`, `tools: []`,
//!   `initial_files: []`. `DELETE /v1/agents/{id}` archives (`?permanent=true` deletes for
//!   good). `POST /v1/agents` is an upsert: by `id` (a UUID or `agent_<32 hex>`, the SDK's
//!   `apply`), else by the name of an active agent (`apply_by_name`), else a new agent. An
//!   agent's id in a path may be spelt `agent_<32 hex>` too.
//! - **sessions** (top-level routes): the seed's session with `status` in the SDK's words
//!   (`started` before the first message, `active` while a turn runs, `idle` between turns;
//!   `last_turn_failed` tells a failed turn), `harness_id`, `organization_id` (`default`:
//!   one organization per server) and `updated_at`.
//! - **messages** (top-level routes): role `agent` for the assistant's replies and tool calls
//!   (the seed's nested routes say `assistant` and `tool_call`).
//! - **events**: every notification has `ts`; `assistant:replied` is also
//!   `output.message.completed` and a turn's end `turn.completed` / `turn.failed` (see
//!   [`crate::Notification`]), which `AgentClient.run` waits for. A page or stream takes
//!   `since_id` (a notification's id), `after_sequence` (as `after`), `types` and `exclude`
//!   (repeated, or comma-separated; `output.message.delta` names `message.delta`).
//! - **auth**: the management client sends its key bare in `Authorization`; the server's one
//!   key check (`crate::auth`) takes it like `Bearer <key>` on every route.
//!
//! **Unknown fields.** A body field no route documents is refused with `422` naming it, so a
//! misspelt or unsupported field is never silently dropped. The fields the SDK sends on every
//! create are accepted with the meaning above when empty: `capabilities` (available ones are
//! given to the agent; a session's must be `[]`), `tools: []`, `initial_files: []`,
//! `harness_id`/`harness_name` of `agent-chat`. A value this server cannot honour (a
//! client-side tool, an initial file, a capability it lacks or that is coming soon, a capability
//! `config`, another harness) is `422` naming it. Query parameters no route documents are `400`.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::{get, post};
use chrono::{DateTime, Utc};
use openharness_platform::everruns::{HARNESS, ORGANIZATION};
use openharness_platform::{
    AgentResource, CapabilityRef, ContentPart, MessageRole, NewSession, Platform, PlatformError,
    ProviderType, ResourceStatus, Session, SessionMessage, SessionPhase,
};
use serde::Serialize;
use uuid::Uuid;

use super::events::EventsQuery;
use super::{Answer, Paging, Shared, V1, created, deleted, id, ok, read_paging};
use crate::error::ApiError;
use crate::request::{Body, QueryOf, body};

/// The Everruns SDK's routes beside the seed's that answer at once (see the module docs).
pub(crate) fn timed_routes() -> Router<Arc<V1>> {
    Router::new()
        .route("/v1/sessions", get(list_sessions).post(create_session))
        .route("/v1/sessions/{id}", get(get_session).delete(delete_session))
        .route("/v1/sessions/{id}/cancel", post(cancel_session))
        .route(
            "/v1/sessions/{id}/messages",
            get(list_messages).post(post_message),
        )
        .route("/v1/models", get(list_models))
        .route("/v1/models/{id}", get(get_model))
}

/// The Everruns SDK's notification routes, which may stream for as long as their client stays.
pub(crate) fn streaming_routes() -> Router<Arc<V1>> {
    Router::new()
        .route("/v1/sessions/{id}/events", get(session_events::<false>))
        .route("/v1/sessions/{id}/sse", get(session_events::<true>))
}

// ----- shapes -----

/// An agent as every `/v1` route writes it: the agent, with what the Everruns SDK's `Agent`
/// requires beside it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "Agent")]
pub(crate) struct AgentView {
    /// The agent.
    #[serde(flatten)]
    pub(crate) agent: AgentResource,
    /// `agent-chat`: the workflow its sessions run.
    pub(crate) harness_id: String,
    /// Its capabilities, in order, as `{"ref": id}`.
    pub(crate) capabilities: Vec<CapabilityRef>,
    /// Always empty: no client-side tools here.
    pub(crate) tools: Vec<serde_json::Value>,
    /// Always empty: no starter files here.
    pub(crate) initial_files: Vec<serde_json::Value>,
}

/// `agent` as the routes write it.
pub(crate) async fn agent_view(
    platform: &Platform,
    agent: AgentResource,
) -> Result<AgentView, PlatformError> {
    let capabilities = platform
        .agent_capabilities(agent.id)
        .await?
        .into_iter()
        .map(|c| CapabilityRef {
            id: c.capability_id,
            config: None,
        })
        .collect();
    Ok(AgentView {
        agent,
        harness_id: HARNESS.to_owned(),
        capabilities,
        tools: Vec::new(),
        initial_files: Vec::new(),
    })
}

/// What a session is doing, in the Everruns SDK's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EverrunsStatus {
    /// No message yet.
    Started,
    /// A turn is under way.
    Active,
    /// Waiting for a message (after a turn, failed or not).
    Idle,
}

/// A session as the top-level `/v1/sessions` routes write it (the Everruns SDK's `Session`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "EverrunsSession")]
pub(crate) struct SessionView {
    /// Its id (UUID v7), also the id of its Open Harness session.
    id: Uuid,
    /// The agent it talks to.
    agent_id: Uuid,
    /// Its title.
    title: Option<String>,
    /// Free-form labels.
    tags: Vec<String>,
    /// The model its messages use unless a message names another.
    model_id: Option<Uuid>,
    /// `started`, `active` or `idle`.
    status: EverrunsStatus,
    /// Whether its last turn failed (its status is then `idle`).
    last_turn_failed: bool,
    /// `agent-chat`.
    harness_id: String,
    /// `default`: one organization per server.
    organization_id: String,
    /// When it was created.
    created_at: DateTime<Utc>,
    /// When it last changed: its last turn's end, its first turn's start, or its creation.
    updated_at: DateTime<Utc>,
    /// When its first turn started, if one has.
    started_at: Option<DateTime<Utc>>,
    /// When its last turn ended.
    finished_at: Option<DateTime<Utc>>,
    /// Always empty: a session has its agent's capabilities.
    capabilities: Vec<CapabilityRef>,
    /// Always empty.
    tools: Vec<serde_json::Value>,
    /// Always empty.
    initial_files: Vec<serde_json::Value>,
}

impl From<Session> for SessionView {
    fn from(session: Session) -> Self {
        let status = match session.status {
            SessionPhase::Running => EverrunsStatus::Active,
            _ if session.started_at.is_none() => EverrunsStatus::Started,
            _ => EverrunsStatus::Idle,
        };
        Self {
            id: session.id,
            agent_id: session.agent_id,
            title: session.title,
            tags: session.tags,
            model_id: session.model_id,
            status,
            last_turn_failed: session.status == SessionPhase::Failed,
            harness_id: HARNESS.to_owned(),
            organization_id: ORGANIZATION.to_owned(),
            created_at: session.created_at,
            updated_at: session
                .finished_at
                .or(session.started_at)
                .unwrap_or(session.created_at),
            started_at: session.started_at,
            finished_at: session.finished_at,
            capabilities: Vec::new(),
            tools: Vec::new(),
            initial_files: Vec::new(),
        }
    }
}

/// Who a message is from, in the Everruns SDK's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EverrunsRole {
    /// The platform.
    System,
    /// A person.
    User,
    /// The agent: its replies and its tool calls.
    Agent,
    /// A tool's answer.
    ToolResult,
}

/// A message as the top-level `/v1/sessions/{id}/messages` routes write it (the Everruns
/// SDK's `Message`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "EverrunsMessage")]
pub(crate) struct MessageView {
    /// The id of the event it is.
    id: Uuid,
    /// The session.
    session_id: Uuid,
    /// The event's seq in the session's log.
    sequence: u64,
    /// Who it is from.
    role: EverrunsRole,
    /// What it says.
    content: Vec<ContentPart>,
    /// The controls posted with a user message.
    controls: Option<serde_json::Value>,
    /// The data posted with a user message.
    metadata: Option<serde_json::Value>,
    /// The labels posted with a user message.
    tags: Vec<String>,
    /// When it was recorded.
    created_at: DateTime<Utc>,
}

impl From<SessionMessage> for MessageView {
    fn from(message: SessionMessage) -> Self {
        let role = match message.role {
            MessageRole::System => EverrunsRole::System,
            MessageRole::User => EverrunsRole::User,
            MessageRole::Assistant | MessageRole::ToolCall => EverrunsRole::Agent,
            MessageRole::ToolResult => EverrunsRole::ToolResult,
        };
        Self {
            id: message.id,
            session_id: message.session_id,
            sequence: message.sequence,
            role,
            content: message.content,
            controls: message.controls,
            metadata: message.metadata,
            tags: message.tags,
            created_at: message.created_at,
        }
    }
}

/// An LLM model with its provider, as `GET /v1/models` writes it (the Everruns SDK's
/// `ModelWithProvider`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "ModelWithProvider")]
pub(crate) struct ModelView {
    /// Its id (UUID v7).
    id: Uuid,
    /// The provider's name for it.
    model_id: String,
    /// The name people see.
    display_name: String,
    /// What it can do (its `features`).
    capabilities: Vec<String>,
    /// Its context window in tokens, if known.
    context_window: Option<u32>,
    /// Whether it may be used (`status` is `active`, and so is its provider's).
    enabled: bool,
    /// Always `true`: no health checks run here.
    healthy: bool,
    /// Always `false`: no favourites here.
    is_favorite: bool,
    /// Whether it is its provider's default.
    is_default: bool,
    /// The provider that serves it.
    provider_id: Uuid,
    /// The provider's name.
    provider_name: String,
    /// The API the provider speaks (`openai`, `anthropic`, `azure_openai`).
    provider_type: ProviderType,
    /// `manual`: models here are created through the API.
    source: String,
    /// When it was created.
    created_at: DateTime<Utc>,
    /// When it last changed.
    updated_at: DateTime<Utc>,
}

async fn model_views(platform: &Platform) -> Result<Vec<ModelView>, PlatformError> {
    let providers = platform.providers().await?;
    let models = platform.models(None).await?;
    Ok(models
        .into_iter()
        .filter_map(|model| {
            let provider = providers.iter().find(|p| p.id == model.provider_id)?;
            Some(ModelView {
                id: model.id,
                model_id: model.model_id,
                display_name: model.display_name,
                capabilities: model.features,
                context_window: model.context_window,
                enabled: model.status == ResourceStatus::Active
                    && provider.status == ResourceStatus::Active,
                healthy: true,
                is_favorite: false,
                is_default: model.is_default,
                provider_id: provider.id,
                provider_name: provider.name.clone(),
                provider_type: provider.provider_type,
                source: "manual".to_owned(),
                created_at: model.created_at,
                updated_at: model.updated_at,
            })
        })
        .collect())
}

// ----- handlers -----

/// The agent of session `text` (a `404` for one that is not a UUID or does not exist).
async fn owner(s: &V1, text: &str) -> Result<(Uuid, Uuid), ApiError> {
    let session = id("session", text)?;
    Ok((s.platform.agent_of_session(session).await?, session))
}

async fn list_sessions(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    let paging = read_paging(paging)?;
    let agent = paging
        .agent_id
        .as_deref()
        .map(|a| id("agent", a))
        .transpose()?;
    let mut sessions = s.platform.all_sessions(agent).await?;
    if let Some(search) = &paging.search {
        let search = search.to_lowercase();
        sessions.retain(|session| {
            session
                .title
                .as_deref()
                .is_some_and(|t| t.to_lowercase().contains(&search))
        });
    }
    paging.page(sessions.into_iter().map(SessionView::from).collect())
}

async fn create_session(State(s): Shared, new: Body) -> Answer {
    let new: NewSession = body(new)?;
    let agent = s.platform.agent_of_new_session(&new).await?;
    let session = s.platform.create_session(agent, new).await?;
    created(SessionView::from(session))
}

async fn get_session(State(s): Shared, Path(session): Path<String>) -> Answer {
    let (agent, session) = owner(&s, &session).await?;
    ok(SessionView::from(s.platform.session(agent, session).await?))
}

async fn delete_session(State(s): Shared, Path(session): Path<String>) -> Answer {
    let (agent, session) = owner(&s, &session).await?;
    s.platform.delete_session(agent, session).await?;
    deleted()
}

async fn cancel_session(State(s): Shared, Path(session): Path<String>) -> Answer {
    let (agent, session) = owner(&s, &session).await?;
    s.platform.cancel(agent, session).await?;
    ok(SessionView::from(s.platform.session(agent, session).await?))
}

async fn list_messages(
    State(s): Shared,
    Path(session): Path<String>,
    paging: QueryOf<Paging>,
) -> Answer {
    let paging = read_paging(paging)?;
    let (agent, session) = owner(&s, &session).await?;
    let messages = s.platform.messages(agent, session).await?;
    paging.page(messages.into_iter().map(MessageView::from).collect())
}

async fn post_message(
    State(s): Shared,
    Path(session): Path<String>,
    headers: HeaderMap,
    new: Body,
) -> Answer {
    let (agent, session) = owner(&s, &session).await?;
    let policy = crate::request::busy_policy(&headers, None, s.server.options.on_busy)?;
    let new = body(new)?;
    let message = s
        .platform
        .post_message_on_busy(agent, session, new, policy)
        .await?;
    created(MessageView::from(message))
}

/// `GET /v1/sessions/{id}/events` (`SSE` false: a JSON page, or a stream when the `Accept`
/// header asks for one) and `GET /v1/sessions/{id}/sse` (`SSE` true: always a stream).
async fn session_events<const SSE: bool>(
    State(s): Shared,
    Path(session): Path<String>,
    headers: HeaderMap,
    pairs: QueryOf<Vec<(String, String)>>,
) -> Answer {
    let query = EventsQuery::read(pairs)?;
    let (agent, session) = owner(&s, &session).await?;
    let stream = SSE || crate::sse::wanted(&headers);
    super::events::answer(&s, agent, session, &headers, query, stream).await
}

async fn list_models(State(s): Shared, paging: QueryOf<Paging>) -> Answer {
    let paging = read_paging(paging)?;
    let mut models = model_views(&s.platform).await?;
    if let Some(provider) = paging.provider_id {
        models.retain(|m| m.provider_id == provider);
    }
    paging.page(models)
}

async fn get_model(State(s): Shared, Path(model): Path<String>) -> Answer {
    let wanted = id("llm_model", &model)?;
    let found = model_views(&s.platform)
        .await?
        .into_iter()
        .find(|m| m.id == wanted);
    let found = found.ok_or(PlatformError::NotFound {
        kind: "llm_model",
        id: model,
    })?;
    ok(found)
}
