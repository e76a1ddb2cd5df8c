//! Open Harness platform: the Everruns-shaped `/v1` API — agents, their capabilities, LLM
//! providers (API keys sealed with AES-256-GCM) and models — as an axum [`Router`] to serve
//! beside the server's routes (`openharness serve` does) or in your own app.
//!
//! The resources live on the same [`Store`](openharness_core::Store) as the sessions, as events
//! of one dedicated session, the platform log ([`PLATFORM_LOG`]; see [`Platform`]): one command
//! runs it on the embedded store, and replicas on PostgreSQL see each other's changes and
//! conflict instead of overwriting them.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /v1/agents?status=&offset=&limit=` | agents, oldest first, in the page envelope |
//! | `POST /v1/agents` | creates one (`201`), or updates one (`200`): an upsert by `id`, else by the name of an active agent |
//! | `GET`, `PATCH`, `DELETE /v1/agents/{id}` | reads, changes (`409 agent_archived` when archived), archives (`204`; with `?permanent=true` deletes, `409 agent_has_sessions` while it has sessions) one |
//! | `POST /v1/agents/{id}/archive`, `…/unarchive` | archives it, makes it active again |
//! | `GET`, `POST /v1/agents/{a}/sessions` | an agent's sessions; a new one is `pending` (`409 agent_archived` for an archived agent) |
//! | `GET`, `PATCH`, `DELETE /v1/agents/{a}/sessions/{s}` | one session (title, tags, model); delete removes its log too (`409 session_busy` during a turn) |
//! | `GET`, `POST /v1/agents/{a}/sessions/{s}/messages` | its messages by sequence (a projection of its log); `POST {content: [{type: text, text}], controls?: {model_id, reasoning}, metadata?, tags?}` records a user message (controls, metadata and tags kept with it), answers it (`201`) once it is durably recorded and runs the turn on (`409 session_busy` while one runs, in this process or another sharing the store; a turn a dead process cut off is resumed first); the model (message's `controls`, the session's, the agent's, else the default provider's default model) is asked through its LLM provider row with the row's key opened (`Platform::with_provider` overrides, e.g. with a scripted model; `503 no_provider` when no model is found) |
//! | `POST /v1/agents/{a}/sessions/{s}/cancel` | cancels its running turn |
//! | `GET /v1/agents/{a}/sessions/{s}/events?after=&since_id=&types=&exclude=`, `…/sse` | its notifications (`message.created`, `message.delta`, `step.started`, `step.generating` (a model response's first text began), `step.generated`, `step.error`, `tool.*`, `session.*`) as a JSON page; with `Accept: text/event-stream`, SSE (`event:` the type, `id:` the sequence, `sequence.0` for a `step.generating`, which shares its event with a `message.delta`) that goes on live and resumes after `Last-Event-ID` |
//! | `GET`, `PUT /v1/agents/{id}/capabilities` | its capabilities by position; `PUT {capabilities: [ids]}` sets them in order |
//! | `GET /v1/capabilities`, `GET /v1/capabilities/{id}` | the built-in registry |
//! | `GET`, `POST /v1/llm-providers` | providers; `api_key` is write-only, `api_key_set` tells whether one is stored |
//! | `GET`, `PATCH`, `DELETE /v1/llm-providers/{id}` | one provider (`409 provider_in_use` while it has models) |
//! | `GET`, `POST /v1/llm-providers/{id}/models` | its models |
//! | `GET /v1/llm-models?provider_id=`, `POST /v1/llm-models` | models (`409 duplicate_model` for a repeated `model_id` at one provider) |
//! | `GET`, `PATCH`, `DELETE /v1/llm-models/{id}` | one model (`409 model_in_use` while an agent's default) |
//!
//! Who runs a session's turn is decided through the store ([`Store::claim`]: on PostgreSQL an
//! advisory lock the database frees when the holding replica dies), and
//! [`Platform::spawn_recovery`] (which `openharness serve` runs) resumes the sessions a dead
//! replica left mid-turn, from their logs, without asking a model again for a recorded answer.
//!
//! [`Store::claim`]: openharness_core::Store::claim
//!
//! The official Everruns SDK runs against these routes unmodified: the routes, fields, shapes
//! and header it needs beside them are in [`everruns`], which also states the policy for
//! unknown fields (refused with `422` naming them; the fields the SDK always sends accepted
//! with a documented meaning).
//!
//! Lists answer `{"data": [...], "total", "offset", "limit"}` (`limit` 1 to 100, default 20).
//! Errors are the server's shape, `{"error": {"code", "message"}}`: `400` unreadable input,
//! `401` no key, `404` unknown ids (and ids that are not UUIDs) and paths, `405` a method a
//! path does not take, `409` conflicts (`session_busy` for a session whose turn runs, as the
//! server says it), `422` invalid input (unknown fields included), `503` when provider keys
//! cannot be sealed or opened here.
//! [`openapi_document`] describes all of it as OpenAPI 3.1 (`openharness serve` merges it into
//! its `GET /openapi.json`). [`Platform::rotate_keys`] (`openharness platform rotate-keys`)
//! re-seals every provider key under the newest master key.
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn openharness_core::Store>) -> Result<(), Box<dyn std::error::Error>> {
//! use openharness_platform::{MasterKeys, Platform, PlatformOptions, router};
//! let platform = Platform::new(store, MasterKeys::from_env()?);
//! let app = router(platform, PlatformOptions::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await?;
//! # Ok(()) }
//! ```

mod capabilities;
mod chat;
mod error;
mod events;
pub mod everruns;
mod keys;
mod messages;
mod openapi;
mod platform;
mod requests;
mod resources;
mod routes;

use std::sync::Arc;

use axum::Router;

pub use capabilities::{capabilities, capability};
pub use chat::{
    AssistantReplied, ChatAgent, ChatEvent, ChatLine, ChatState, ChatTool, MAX_IMAGES_PER_REQUEST,
    UserMessage, WORKFLOW_NAME, for_reading as agent_chat_for_reading,
    workflow as agent_chat_workflow,
};
pub use error::PlatformError;
pub use events::Notification;
pub use keys::{KeyError, MASTER_KEYS_ENV, MASTER_KEYS_FILE_ENV, MasterKeys, SealedKey};
pub use messages::{
    ContentPart, Controls, MAX_IMAGES_PER_MESSAGE, Message, MessageInput, MessageRole, NewMessage,
    Posted, Reasoning,
};
pub use openapi::openapi_document;
pub use platform::rotate::Rotation;
pub use platform::{PLATFORM_LOG, Platform};
pub use requests::{
    AgentPatch, CapabilityRef, ModelPatch, NewAgent, NewModel, NewProvider, NewSession,
    ProviderPatch, SessionPatch, SetCapabilities,
};
pub use resources::{
    Agent, AgentCapability, AgentStatus, Capability, CapabilityStatus, LlmModel, LlmProvider, Page,
    ProviderType, ResourceStatus, Session, SessionStatus,
};

/// Checks an API key presented to a `/v1` route.
pub type ApiKeyCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How the `/v1` routes behave; [`Default`] gives the documented defaults.
#[derive(Clone)]
#[non_exhaustive]
pub struct PlatformOptions {
    /// The largest request body, in bytes (default 1 MiB); a larger one is `413`.
    pub body_limit: usize,
    /// When set, every `/v1` route requires an API key this accepts (`401` otherwise).
    pub api_key_check: Option<ApiKeyCheck>,
    /// The comment heartbeat of event streams (default 15 s).
    pub heartbeat: std::time::Duration,
}

impl std::fmt::Debug for PlatformOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlatformOptions")
            .field("body_limit", &self.body_limit)
            .field("api_keys", &self.api_key_check.is_some())
            .finish()
    }
}

impl Default for PlatformOptions {
    fn default() -> Self {
        Self {
            body_limit: 1024 * 1024,
            api_key_check: None,
            heartbeat: std::time::Duration::from_secs(15),
        }
    }
}

impl PlatformOptions {
    /// Requires an API key that `check` accepts on every `/v1` route (the server passes the
    /// same hashed keys as its own routes check, compared in constant time).
    ///
    /// ```
    /// use openharness_platform::PlatformOptions;
    /// let options = PlatformOptions::default().require_api_key(|key| key == "s3cret");
    /// assert!(options.api_key_check.is_some());
    /// ```
    #[must_use]
    pub fn require_api_key(mut self, check: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.api_key_check = Some(Arc::new(check));
        self
    }

    /// Sets [`PlatformOptions::body_limit`].
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }
}

/// The `/v1` routes over `platform`, to serve as is or merge into your own axum app (their
/// paths start with `/v1`, and they have no fallback, so merging never clashes).
pub fn router(platform: Platform, options: PlatformOptions) -> Router {
    routes::build(Arc::new(routes::AppState { platform, options }))
}
