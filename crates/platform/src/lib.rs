//! Open Harness platform: the Everruns-shaped `/v1` API — agents, their capabilities, LLM
//! providers (API keys sealed with AES-256-GCM), models, and the sessions of an agent chat —
//! as a domain over a store: [`Platform`].
//!
//! The resources live on the same [`Store`](openharness_core::Store) as the sessions, as events
//! of one dedicated session, the platform log ([`PLATFORM_LOG`]; see [`Platform`]): one command
//! runs it on the embedded store, and replicas on PostgreSQL see each other's changes and
//! conflict instead of overwriting them.
//!
//! The HTTP routes of all of it (`/v1/agents…`, `/v1/sessions…`, `/v1/llm-providers…`, the
//! notifications as pages and SSE) are served by `openharness-server` with its `platform`
//! feature, on the same HTTP layer (errors, SSE, keys, OpenAPI) as the native routes:
//! `openharness serve` serves them. This crate is the domain, free of HTTP.
//!
//! Every platform session is a session of the one agent-chat workflow registered in the
//! platform's host ([`Platform::host`], shared with the native sessions by
//! [`Platform::with_host`]), and the host runs its turns: it decides who runs a session's turn
//! through the store ([`Store::claim`]: on PostgreSQL an advisory lock the database frees when
//! the holding replica dies), answers a second message as its busy policy says, and its
//! recovery ([`Host::spawn_recovery`], which `openharness serve` runs) resumes the sessions a
//! dead replica left mid-turn, from their logs, without asking a model again for a recorded
//! answer. The platform gives each turn its agent's model, instructions, tools and provider.
//!
//! [`Store::claim`]: openharness_core::Store::claim
//! [`Host::spawn_recovery`]: openharness_host::Host::spawn_recovery
//!
//! The official Everruns SDK runs against the routes unmodified; what the fields it sends
//! mean here is in [`everruns`] (unknown fields are refused with a `422` naming them; the
//! fields the SDK always sends are accepted with a documented meaning).
//! [`Platform::rotate_keys`] (`openharness platform rotate-keys`) re-seals every provider key
//! under the newest master key.
//!
//! # Modules
//!
//! - `platform` (`platform/`): [`Platform`] over the platform log; one file per resource or job.
//! - `chat`: the built-in agent-chat workflow every platform session runs.
//! - `messages`: a session's messages, a projection of its log; what can be posted.
//! - `events`: a session's notifications ([`Notification`]), a projection of its log.
//! - `resources`: the resources as the `/v1` API writes them, and the one [`Page`] envelope.
//! - `requests`: the bodies the `/v1` API reads, unknown fields refused.
//! - `capabilities`: the built-in capability registry, and one `mcp:<name>` per MCP server.
//! - `keys`: provider API keys at rest, AES-256-GCM under versioned [`MasterKeys`].
//! - [`everruns`]: what the fields the official Everruns SDKs send mean here.
//! - `error`: [`PlatformError`], each answered by the server's one error table.
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn openharness_core::Store>) -> Result<(), Box<dyn std::error::Error>> {
//! use openharness_platform::{MasterKeys, Platform};
//! let platform = Platform::new(store, MasterKeys::from_env()?);
//! let agents = platform.agents(None).await?;
//! println!("{} agents", agents.len());
//! # Ok(()) }
//! ```

mod capabilities;
mod chat;
mod error;
mod events;
pub mod everruns;
mod keys;
mod messages;
mod platform;
mod requests;
mod resources;

pub use capabilities::{MCP_PREFIX, capabilities, capability, mcp_capability};
pub use chat::{
    AssistantReplied, ChatAgent, ChatEvent, ChatLine, ChatState, ChatTool, MAX_IMAGES_PER_REQUEST,
    WORKFLOW_NAME, for_reading as agent_chat_for_reading, workflow as agent_chat_workflow,
};
pub use error::PlatformError;
pub use events::{Notification, Resume};
pub use keys::{KeyError, MASTER_KEYS_ENV, MASTER_KEYS_FILE_ENV, MasterKeys, SealedKey};
pub use messages::{
    ContentPart, Controls, MAX_IMAGES_PER_MESSAGE, MessageInput, MessageRole, NewMessage, Posted,
    Reasoning, SessionMessage,
};
pub use platform::rotate::Rotation;
pub use platform::{Notifier, PLATFORM_LOG, Platform};
pub use requests::{
    AgentPatch, CapabilityRef, ModelPatch, NewAgent, NewModel, NewProvider, NewSession,
    ProviderPatch, SessionPatch, SetCapabilities,
};
pub use resources::{
    AgentCapability, AgentResource, AgentStatus, Capability, CapabilityStatus, LlmModel,
    LlmProvider, Page, ProviderType, ResourceStatus, Session, SessionPhase,
};
