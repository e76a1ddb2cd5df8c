//! The platform's resources as the `/v1` API writes them (snake_case JSON, UUID v7 ids,
//! RFC 3339 UTC timestamps), field by field as the Everruns seed has them: [`AgentResource`],
//! [`LlmProvider`], [`LlmModel`], [`Capability`] and [`AgentCapability`], and the one
//! pagination envelope, [`Page`].

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::keys::SealedKey;

/// An agent: a system prompt, a default model and tags. Archived agents stay readable.
///
/// ```
/// use openharness_platform::{AgentResource, AgentStatus};
/// let json = serde_json::json!({
///     "id": "0190f0f0-0000-7000-8000-000000000001", "name": "helper", "description": null,
///     "system_prompt": "Be brief.", "default_model_id": null, "tags": ["demo"],
///     "status": "active", "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"
/// });
/// let agent: AgentResource = serde_json::from_value(json)?;
/// assert_eq!(agent.status, AgentStatus::Active);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "Agent")]
pub struct AgentResource {
    /// Its id (UUID v7).
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// The system prompt its sessions start from (capabilities add to it).
    pub system_prompt: String,
    /// The model its sessions use unless a session or message names another.
    pub default_model_id: Option<Uuid>,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// `active` or `archived`.
    pub status: AgentStatus,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Whether an agent is in use or archived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// In use.
    Active,
    /// Archived: readable, not changed until unarchived.
    Archived,
}

/// The API a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderType {
    /// OpenAI (or an OpenAI-compatible server at `base_url`).
    Openai,
    /// Anthropic's Messages API.
    Anthropic,
    /// Azure OpenAI.
    AzureOpenai,
}

/// Whether a provider or model may be used.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ResourceStatus {
    /// Usable.
    #[default]
    Active,
    /// Kept but not used.
    Disabled,
}

/// An LLM provider as the API returns it: the key itself is never part of it, only whether
/// one is set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlmProvider {
    /// Its id (UUID v7).
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// The API it speaks.
    pub provider_type: ProviderType,
    /// Where its API is, if not the provider's own default.
    pub base_url: Option<String>,
    /// Whether an API key is stored for it (encrypted; never returned).
    pub api_key_set: bool,
    /// Whether it is the platform's default provider (at most one is).
    pub is_default: bool,
    /// `active` or `disabled`.
    pub status: ResourceStatus,
    /// Provider-specific settings (a JSON object).
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// A provider as the platform log records it: its fields and its sealed key, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct ProviderRecord {
    pub(crate) id: Uuid,
    pub(crate) name: String,
    pub(crate) provider_type: ProviderType,
    pub(crate) base_url: Option<String>,
    #[schemars(with = "Option<serde_json::Value>")]
    pub(crate) api_key: Option<SealedKey>,
    pub(crate) is_default: bool,
    pub(crate) status: ResourceStatus,
    pub(crate) settings: serde_json::Map<String, serde_json::Value>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
}

impl ProviderRecord {
    /// The provider as the API shows it.
    pub(crate) fn public(&self) -> LlmProvider {
        LlmProvider {
            id: self.id,
            name: self.name.clone(),
            provider_type: self.provider_type,
            base_url: self.base_url.clone(),
            api_key_set: self.api_key.is_some(),
            is_default: self.is_default,
            status: self.status,
            settings: self.settings.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A model a provider serves; at most one per provider is its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LlmModel {
    /// Its id (UUID v7).
    pub id: Uuid,
    /// The provider that serves it.
    pub provider_id: Uuid,
    /// The provider's name for it, such as `claude-sonnet-4-5`.
    pub model_id: String,
    /// The name people see.
    pub display_name: String,
    /// What it can do, such as `streaming`, `tools`, `vision`.
    pub features: Vec<String>,
    /// Its context window in tokens, if known.
    pub context_window: Option<u32>,
    /// Whether it is its provider's default model (at most one per provider is).
    pub is_default: bool,
    /// `active` or `disabled`.
    pub status: ResourceStatus,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// Whether a capability can be given to agents yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityStatus {
    /// Agents can have it.
    Available,
    /// Announced; agents cannot have it yet.
    ComingSoon,
}

/// A capability from the built-in registry: what it adds to an agent's system prompt and the
/// tools it gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Capability {
    /// Its id, such as `current_time`.
    pub id: String,
    /// The name people see.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `available` or `coming_soon`.
    pub status: CapabilityStatus,
    /// What it adds to the system prompt of agents that have it.
    pub system_prompt_addition: Option<String>,
    /// The names of the tools it gives.
    pub tools: Vec<String>,
}

/// One capability of one agent, at a position in the agent's ordered list (unique per agent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentCapability {
    /// The agent.
    pub agent_id: Uuid,
    /// The capability's id.
    pub capability_id: String,
    /// Its place in the agent's list, from 0.
    pub position: u32,
    /// When the agent was given it.
    pub created_at: DateTime<Utc>,
}

/// The one pagination envelope of every list: a page of `data`, the `total` matching, and the
/// `offset` and `limit` the page was read with.
///
/// ```
/// use openharness_platform::Page;
/// let page = Page::of(vec![1, 2, 3, 4, 5], 1, 2);
/// assert_eq!((page.data, page.total, page.offset, page.limit), (vec![2, 3], 5, 1, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Page<T> {
    /// The items of this page.
    pub data: Vec<T>,
    /// How many items match in all.
    pub total: usize,
    /// How many items precede this page.
    pub offset: usize,
    /// The most items a page holds, as asked: a page of notifications holds one more when it
    /// would otherwise end between two notifications of one event, so go on from `offset` plus
    /// the length of `data` (or, for notifications, `?after=` the last one's `sequence`).
    pub limit: usize,
}

impl<T> Page<T> {
    /// The page of `items` from `offset`, at most `limit` long.
    pub fn of(items: Vec<T>, offset: usize, limit: usize) -> Self {
        let total = items.len();
        let data = items.into_iter().skip(offset).take(limit).collect();
        Self {
            data,
            total,
            offset,
            limit,
        }
    }
}

/// A conversation with an agent: an Open Harness session whose id it shares. Its status and
/// times are read from that session's log, so every replica tells the same.
///
/// ```
/// use openharness_platform::{Session, SessionPhase};
/// let json = serde_json::json!({
///     "id": "0190f0f0-0000-7000-8000-000000000002",
///     "agent_id": "0190f0f0-0000-7000-8000-000000000001", "title": null, "tags": [],
///     "model_id": null, "status": "pending", "created_at": "2026-01-01T00:00:00Z",
///     "started_at": null, "finished_at": null
/// });
/// let session: Session = serde_json::from_value(json)?;
/// assert_eq!(session.status, SessionPhase::Pending);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Session {
    /// Its id (UUID v7), also the id of its Open Harness session (its event log).
    pub id: Uuid,
    /// The agent it talks to.
    pub agent_id: Uuid,
    /// Its title.
    pub title: Option<String>,
    /// Free-form labels.
    pub tags: Vec<String>,
    /// The model its messages use unless a message names another (else the agent's).
    pub model_id: Option<Uuid>,
    /// `pending` (nothing running), `running` (a turn is under way) or `failed` (the last
    /// turn failed).
    pub status: SessionPhase,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its first turn started, if one has.
    pub started_at: Option<DateTime<Utc>>,
    /// When its last turn ended (none while one runs, or before the first).
    pub finished_at: Option<DateTime<Utc>>,
}

/// What a session is doing: pending → running → pending, or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "SessionStatus")]
pub enum SessionPhase {
    /// Waiting for a message.
    Pending,
    /// A turn is under way.
    Running,
    /// The last turn failed; a new message continues it.
    Failed,
}

/// A session as the platform log records it: what its log does not tell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub(crate) struct SessionRecord {
    pub(crate) id: Uuid,
    pub(crate) agent_id: Uuid,
    pub(crate) title: Option<String>,
    pub(crate) tags: Vec<String>,
    pub(crate) model_id: Option<Uuid>,
    pub(crate) created_at: DateTime<Utc>,
}
