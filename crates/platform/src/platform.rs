//! [`Platform`]: the platform's resources kept as events in one dedicated session of the
//! store, the *platform log* ([`PLATFORM_LOG`]), next to the sessions themselves.
//!
//! Every change is one append of `agent:saved`, `llm_provider:deleted`, ... events (a whole
//! record each, so folding is a replace), all-or-nothing. The platform folds the log into an
//! in-memory index; every read and every write first catches the index up with the store, so a
//! replica sees what another wrote. A write computes its events against the caught-up index and
//! appends them at the log's length it saw (the store's optimistic concurrency): if another
//! writer got there first the store answers `Conflict`, and the write catches up and is
//! decided again against the new state — it never overwrites what it did not see. Checks that
//! span records (one default model per provider, a model still in use) therefore hold across
//! replicas too.
//!
//! The log holds provider keys only sealed ([`SealedKey`](crate::SealedKey)); the plain key
//! is in no event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use openharness_core::{BoxedProvider, Envelope, SessionId, Store, StoreError};

use crate::events::{Notification, Projector, Resume};
use crate::messages::{Message, project};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use openharness_mcp::McpClient;

use crate::error::PlatformError;
use crate::keys::MasterKeys;
use crate::requests::{
    AgentPatch, ModelPatch, NewAgent, NewModel, NewProvider, NewSession, ProviderPatch,
    SessionPatch, SetCapabilities,
};
use crate::resources::{
    Agent, AgentCapability, AgentStatus, Capability, CapabilityStatus, LlmModel, LlmProvider,
    ProviderRecord, Session, SessionRecord, SessionStatus,
};

mod live_index;
mod turns;

pub(crate) mod rotate;

/// The id of the session that holds the platform log.
pub const PLATFORM_LOG: &str = "openharness-platform";

/// How many times a write is decided again after losing a race to another writer.
const MAX_ATTEMPTS: u32 = 32;
/// How many events one catch-up read asks for.
const CATCH_UP_PAGE: u64 = 1024;

/// One change of the platform log.
#[derive(Debug, Clone)]
enum Change {
    AgentSaved(Agent),
    AgentDeleted(Uuid),
    AgentCapabilitiesSet {
        agent_id: Uuid,
        capabilities: Vec<AgentCapability>,
    },
    ProviderSaved(ProviderRecord),
    ProviderDeleted(Uuid),
    ModelSaved(LlmModel),
    ModelDeleted(Uuid),
    SessionSaved(SessionRecord),
    SessionDeleted(Uuid),
}

#[derive(Serialize, Deserialize)]
struct Deleted {
    id: Uuid,
}

#[derive(Serialize, Deserialize)]
struct CapabilitiesSet {
    agent_id: Uuid,
    capabilities: Vec<AgentCapability>,
}

impl Change {
    fn envelope(&self) -> Result<Envelope, serde_json::Error> {
        let (name, payload) = match self {
            Self::AgentSaved(agent) => ("agent:saved", serde_json::to_value(agent)?),
            Self::AgentDeleted(id) => ("agent:deleted", serde_json::to_value(Deleted { id: *id })?),
            Self::AgentCapabilitiesSet {
                agent_id,
                capabilities,
            } => (
                "agent_capabilities:set",
                serde_json::to_value(CapabilitiesSet {
                    agent_id: *agent_id,
                    capabilities: capabilities.clone(),
                })?,
            ),
            Self::ProviderSaved(record) => ("llm_provider:saved", serde_json::to_value(record)?),
            Self::ProviderDeleted(id) => (
                "llm_provider:deleted",
                serde_json::to_value(Deleted { id: *id })?,
            ),
            Self::ModelSaved(model) => ("llm_model:saved", serde_json::to_value(model)?),
            Self::ModelDeleted(id) => (
                "llm_model:deleted",
                serde_json::to_value(Deleted { id: *id })?,
            ),
            Self::SessionSaved(record) => ("session:saved", serde_json::to_value(record)?),
            Self::SessionDeleted(id) => (
                "session:deleted",
                serde_json::to_value(Deleted { id: *id })?,
            ),
        };
        Ok(Envelope::new(name, payload, None))
    }

    /// The change an event records; `None` for a name this version does not know.
    fn decode(event: &Envelope) -> Result<Option<Self>, serde_json::Error> {
        let payload = &event.payload;
        let deleted = || Deleted::deserialize(payload).map(|d| d.id);
        Ok(Some(match event.name.as_ref() {
            "agent:saved" => Self::AgentSaved(Agent::deserialize(payload)?),
            "agent:deleted" => Self::AgentDeleted(deleted()?),
            "agent_capabilities:set" => {
                let set = CapabilitiesSet::deserialize(payload)?;
                Self::AgentCapabilitiesSet {
                    agent_id: set.agent_id,
                    capabilities: set.capabilities,
                }
            }
            "llm_provider:saved" => Self::ProviderSaved(ProviderRecord::deserialize(payload)?),
            "llm_provider:deleted" => Self::ProviderDeleted(deleted()?),
            "llm_model:saved" => Self::ModelSaved(LlmModel::deserialize(payload)?),
            "llm_model:deleted" => Self::ModelDeleted(deleted()?),
            "session:saved" => Self::SessionSaved(SessionRecord::deserialize(payload)?),
            "session:deleted" => Self::SessionDeleted(deleted()?),
            _ => return Ok(None),
        }))
    }
}

/// The platform's resources, folded from the log up to `seq`.
#[derive(Debug, Default)]
struct Index {
    /// How many events of the log are folded in.
    seq: u64,
    /// The tick of [`Inner::clock`] at which the last catch-up began (0: never): every change
    /// recorded before it is folded in.
    caught_up_at: u64,
    /// Whether a live tail of the log keeps the index current (see `live_index`).
    followed: bool,
    agents: BTreeMap<Uuid, Agent>,
    agent_capabilities: BTreeMap<Uuid, Vec<AgentCapability>>,
    providers: BTreeMap<Uuid, ProviderRecord>,
    models: BTreeMap<Uuid, LlmModel>,
    sessions: BTreeMap<Uuid, SessionRecord>,
}

impl Index {
    /// Folds in the log's event at `seq`, the next one.
    fn fold(&mut self, log: &SessionId, event: &Envelope) -> Result<(), PlatformError> {
        let seq = self.seq;
        match Change::decode(event) {
            Ok(Some(change)) => self.apply(change),
            Ok(None) => tracing::warn!(
                seq,
                name = %event.name,
                "skipping an event of the platform log this version does not know"
            ),
            Err(err) => {
                return Err(PlatformError::Corrupt {
                    log: log.to_string(),
                    seq,
                    message: err.to_string(),
                });
            }
        }
        self.seq += 1;
        Ok(())
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::AgentSaved(agent) => {
                self.agents.insert(agent.id, agent);
            }
            Change::AgentDeleted(id) => {
                self.agents.remove(&id);
                self.agent_capabilities.remove(&id);
            }
            Change::AgentCapabilitiesSet {
                agent_id,
                capabilities,
            } => {
                self.agent_capabilities.insert(agent_id, capabilities);
            }
            Change::ProviderSaved(record) => {
                self.providers.insert(record.id, record);
            }
            Change::ProviderDeleted(id) => {
                self.providers.remove(&id);
            }
            Change::ModelSaved(model) => {
                self.models.insert(model.id, model);
            }
            Change::ModelDeleted(id) => {
                self.models.remove(&id);
            }
            Change::SessionSaved(record) => {
                self.sessions.insert(record.id, record);
            }
            Change::SessionDeleted(id) => {
                self.sessions.remove(&id);
            }
        }
    }

    fn agent(&self, id: Uuid) -> Result<&Agent, PlatformError> {
        self.agents.get(&id).ok_or_else(|| not_found("agent", id))
    }

    fn provider(&self, id: Uuid) -> Result<&ProviderRecord, PlatformError> {
        self.providers
            .get(&id)
            .ok_or_else(|| not_found("llm_provider", id))
    }

    fn model(&self, id: Uuid) -> Result<&LlmModel, PlatformError> {
        self.models
            .get(&id)
            .ok_or_else(|| not_found("llm_model", id))
    }

    /// The session `id` of `agent` (a session of another agent is not found here).
    fn session(&self, agent: Uuid, id: Uuid) -> Result<&SessionRecord, PlatformError> {
        self.agent(agent)?;
        self.sessions
            .get(&id)
            .filter(|s| s.agent_id == agent)
            .ok_or_else(|| not_found("session", id))
    }

    /// `agent`'s capabilities set to `ids`, in order: those it had keep their `created_at`.
    fn capabilities_of(&self, agent: Uuid, ids: &[String]) -> Vec<AgentCapability> {
        let before = self.agent_capabilities.get(&agent);
        let now = Utc::now();
        ids.iter()
            .zip(0u32..)
            .map(|(id, position)| AgentCapability {
                agent_id: agent,
                capability_id: id.clone(),
                position,
                created_at: before
                    .and_then(|b| b.iter().find(|c| c.capability_id == *id))
                    .map_or(now, |c| c.created_at),
            })
            .collect()
    }

    /// The one active agent named `name`: `None` when there is none, `409 ambiguous_name`
    /// when several are.
    fn active_agent_named(&self, name: &str) -> Result<Option<&Agent>, PlatformError> {
        let mut named = self
            .agents
            .values()
            .filter(|a| a.status == AgentStatus::Active && a.name == name);
        let first = named.next();
        if first.is_some() && named.next().is_some() {
            return Err(PlatformError::conflict(
                "ambiguous_name",
                format!("several active agents are named {name:?}: name the agent by its id"),
            ));
        }
        Ok(first)
    }

    /// Refuses a model that does not exist.
    fn check_session_model(&self, id: Option<Uuid>) -> Result<(), PlatformError> {
        match id {
            Some(id) if !self.models.contains_key(&id) => Err(PlatformError::Invalid(format!(
                "`model_id` {id} names no LLM model"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a default model that does not exist.
    fn check_model_exists(&self, id: Option<Uuid>) -> Result<(), PlatformError> {
        match id {
            Some(id) if !self.models.contains_key(&id) => Err(PlatformError::Invalid(format!(
                "`default_model_id` {id} names no LLM model"
            ))),
            _ => Ok(()),
        }
    }

    /// The other default providers, made non-default (when `new_default` becomes it).
    fn undefault_providers(&self, new_default: Uuid) -> Vec<Change> {
        let now = Utc::now();
        self.providers
            .values()
            .filter(|p| p.is_default && p.id != new_default)
            .map(|p| {
                let mut p = p.clone();
                p.is_default = false;
                p.updated_at = now;
                Change::ProviderSaved(p)
            })
            .collect()
    }

    /// The provider's other default models, made non-default (when `new_default` becomes it).
    fn undefault_models(&self, provider: Uuid, new_default: Uuid) -> Vec<Change> {
        let now = Utc::now();
        self.models
            .values()
            .filter(|m| m.provider_id == provider && m.is_default && m.id != new_default)
            .map(|m| {
                let mut m = m.clone();
                m.is_default = false;
                m.updated_at = now;
                Change::ModelSaved(m)
            })
            .collect()
    }

    /// Refuses a second model with the same `model_id` at one provider.
    fn check_model_unique(
        &self,
        provider: Uuid,
        model_id: &str,
        except: Option<Uuid>,
    ) -> Result<(), PlatformError> {
        let taken = self
            .models
            .values()
            .any(|m| m.provider_id == provider && m.model_id == model_id && Some(m.id) != except);
        if taken {
            return Err(PlatformError::conflict(
                "duplicate_model",
                format!("provider {provider} already has a model {model_id:?}"),
            ));
        }
        Ok(())
    }
}

/// Refuses capability ids that are unknown, coming soon, or listed twice (`422`).
fn check_capabilities(platform: &Platform, ids: &[String]) -> Result<(), PlatformError> {
    for (i, id) in ids.iter().enumerate() {
        match platform.capability(id) {
            None => {
                return Err(PlatformError::Invalid(format!(
                    "no capability {id:?} (GET /v1/capabilities lists them)"
                )));
            }
            Some(c) if c.status == CapabilityStatus::ComingSoon => {
                return Err(PlatformError::Invalid(format!(
                    "capability {id:?} is coming soon and cannot be given to agents yet"
                )));
            }
            Some(_) => {}
        }
        if ids[..i].contains(id) {
            return Err(PlatformError::Invalid(format!(
                "capability {id:?} is listed twice: each is given to an agent once"
            )));
        }
    }
    Ok(())
}

fn not_found(kind: &'static str, id: Uuid) -> PlatformError {
    PlatformError::NotFound {
        kind,
        id: id.to_string(),
    }
}

/// A required text field: trimmed, 1 to `max` characters.
fn required(field: &str, value: String, max: usize) -> Result<String, PlatformError> {
    let value = value.trim().to_owned();
    if value.is_empty() {
        return Err(PlatformError::Invalid(format!(
            "`{field}` must not be empty"
        )));
    }
    if value.chars().count() > max {
        return Err(PlatformError::Invalid(format!(
            "`{field}` is longer than {max} characters"
        )));
    }
    Ok(value)
}

/// An optional text field: empty counts as none.
fn optional(
    field: &str,
    value: Option<String>,
    max: usize,
) -> Result<Option<String>, PlatformError> {
    match value {
        Some(value) if !value.trim().is_empty() => required(field, value, max).map(Some),
        _ => Ok(None),
    }
}

fn tags(field: &str, tags: Vec<String>) -> Result<Vec<String>, PlatformError> {
    if tags.len() > 100 {
        return Err(PlatformError::Invalid(format!(
            "`{field}` holds more than 100 items"
        )));
    }
    tags.into_iter()
        .map(|tag| required(field, tag, 100))
        .collect()
}

/// The longest system prompt, in characters.
const MAX_PROMPT: usize = 100_000;

fn base_url(value: Option<String>) -> Result<Option<String>, PlatformError> {
    let value = optional("base_url", value, 2000)?;
    if let Some(url) = &value
        && !(url.starts_with("http://") || url.starts_with("https://"))
    {
        return Err(PlatformError::Invalid(format!(
            "`base_url` must start with http:// or https://, not {url:?}"
        )));
    }
    Ok(value)
}

fn api_key(value: String) -> Result<String, PlatformError> {
    if value.trim().is_empty() || value.len() > 4096 {
        return Err(PlatformError::Invalid(
            "`api_key` must be 1 to 4096 bytes (or null to remove the key)".into(),
        ));
    }
    Ok(value)
}

fn context_window(value: Option<u32>) -> Result<Option<u32>, PlatformError> {
    if value == Some(0) {
        return Err(PlatformError::Invalid(
            "`context_window` must be positive".into(),
        ));
    }
    Ok(value)
}

/// The platform's resources over a store: agents, their capabilities, LLM providers (keys
/// sealed with [`MasterKeys`]) and models. Cheap to clone; clones share one index.
///
/// ```
/// use openharness_platform::{NewAgent, Platform};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let platform = Platform::new(std::sync::Arc::new(openharness_store::MemoryStore::new()), None);
/// let agent = platform
///     .create_agent(serde_json::from_str::<NewAgent>(r#"{"name":"helper","system_prompt":"Be brief."}"#)?)
///     .await?;
/// assert_eq!(platform.agent(agent.id).await?.name, "helper");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Platform {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn Store>,
    log: SessionId,
    keys: Option<MasterKeys>,
    provider: Option<BoxedProvider>,
    /// MCP servers offered to agents as the capabilities `mcp:<name>`.
    mcp: Vec<McpClient>,
    index: tokio::sync::Mutex<Index>,
    /// Ticks taken by each read as it arrives and by each catch-up as it begins, in one order,
    /// so a read can tell that a catch-up began after it arrived (see [`Platform::read`]).
    clock: AtomicU64,
    /// The sessions whose turns this process runs (see `turns`).
    running: turns::Running,
    /// The task following the log (see `live_index`), once started; `None` when the first
    /// read found no runtime to start it on.
    follower: std::sync::OnceLock<Option<tokio::task::AbortHandle>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(Some(follower)) = self.follower.get() {
            follower.abort();
        }
    }
}

impl std::fmt::Debug for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Platform")
            .field("store", &self.inner.store.describe())
            .field("log", &self.inner.log)
            .field("keys", &self.inner.keys)
            .finish_non_exhaustive()
    }
}

impl Platform {
    /// The platform over `store`, its log in the session [`PLATFORM_LOG`]; provider keys are
    /// sealed with `keys` (without them a provider can have no key).
    pub fn new(store: Arc<dyn Store>, keys: Option<MasterKeys>) -> Self {
        let log = match PLATFORM_LOG.parse() {
            Ok(log) => log,
            // The constant is a valid session id; a test pins that.
            Err(_) => SessionId::new(),
        };
        Self {
            inner: Arc::new(Inner {
                store,
                log,
                keys,
                provider: None,
                mcp: Vec::new(),
                index: tokio::sync::Mutex::default(),
                clock: AtomicU64::new(1),
                running: turns::Running::default(),
                follower: std::sync::OnceLock::new(),
            }),
        }
    }

    /// This platform answering messages with `provider` (its sessions' model calls go to it,
    /// naming the model the message, session or agent chose).
    #[must_use]
    pub fn with_provider(self, provider: BoxedProvider) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: Arc::clone(&self.inner.store),
                log: self.inner.log.clone(),
                keys: self.inner.keys.clone(),
                provider: Some(provider),
                mcp: self.inner.mcp.clone(),
                index: tokio::sync::Mutex::default(),
                clock: AtomicU64::new(1),
                running: Arc::clone(&self.inner.running),
                follower: std::sync::OnceLock::new(),
            }),
        }
    }

    /// This platform offering each of `servers` to agents as the capability `mcp:<name>`:
    /// an agent given it has the server's tools (as last listed), and their calls are recorded
    /// with the server's name. The servers are the operator's (started or reached by this
    /// process with the operator's credentials); an API client can only choose among them.
    #[must_use]
    pub fn with_mcp_servers(self, servers: Vec<McpClient>) -> Self {
        Self {
            inner: Arc::new(Inner {
                store: Arc::clone(&self.inner.store),
                log: self.inner.log.clone(),
                keys: self.inner.keys.clone(),
                provider: self.inner.provider.clone(),
                mcp: servers,
                index: tokio::sync::Mutex::default(),
                clock: AtomicU64::new(1),
                running: Arc::clone(&self.inner.running),
                follower: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Every capability agents can be given here, in the order `GET /v1/capabilities` lists
    /// them: the built-in ones, then one per MCP server ([`Platform::with_mcp_servers`]).
    pub fn capabilities(&self) -> Vec<Capability> {
        let mut all = crate::capabilities::capabilities();
        all.extend(
            self.inner
                .mcp
                .iter()
                .map(crate::capabilities::mcp_capability),
        );
        all
    }

    /// The capability with this id, if there is one here.
    pub fn capability(&self, id: &str) -> Option<Capability> {
        self.capabilities().into_iter().find(|c| c.id == id)
    }

    /// The tools of the MCP capabilities among `ids`.
    pub(crate) fn mcp_tools(&self, ids: &[String]) -> Vec<Arc<dyn openharness_core::Tool>> {
        self.inner
            .mcp
            .iter()
            .filter(|server| {
                ids.iter().any(|id| {
                    id.strip_prefix(crate::capabilities::MCP_PREFIX) == Some(server.name())
                })
            })
            .flat_map(McpClient::tools)
            .collect()
    }

    /// The store the platform log lives in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// Folds whatever the log gained since `index` was last caught up.
    async fn catch_up(&self, index: &mut Index) -> Result<(), PlatformError> {
        let began = self.tick();
        loop {
            let events = self
                .inner
                .store
                .events(&self.inner.log, index.seq..index.seq + CATCH_UP_PAGE)
                .await?;
            let read = events.len() as u64;
            for event in events {
                index.fold(&self.inner.log, &event)?;
            }
            if read < CATCH_UP_PAGE {
                index.caught_up_at = began;
                return Ok(());
            }
        }
    }

    /// The next tick of the index's clock.
    fn tick(&self) -> u64 {
        self.inner.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Reads the caught-up index: caught up with every change recorded before this call. A
    /// catch-up that began after the call did that, so reads queued behind one (many messages
    /// posted at once) share it rather than each asking the store again in turn.
    async fn read<T>(&self, read: impl FnOnce(&Index) -> T) -> Result<T, PlatformError> {
        let arrived = self.tick();
        let mut index = self.inner.index.lock().await;
        if index.caught_up_at <= arrived {
            self.catch_up(&mut index).await?;
        }
        Ok(read(&index))
    }

    /// Decides a change against the caught-up index and appends it at the length it saw;
    /// when another writer got there first, catches up and decides again.
    async fn write<T>(
        &self,
        mut decide: impl FnMut(&Index) -> Result<(Vec<Change>, T), PlatformError>,
    ) -> Result<T, PlatformError> {
        let mut index = self.inner.index.lock().await;
        for _ in 0..MAX_ATTEMPTS {
            self.catch_up(&mut index).await?;
            let (changes, answer) = decide(&index)?;
            let events = changes
                .iter()
                .map(Change::envelope)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| PlatformError::Store(StoreError::Invalid(err.to_string())))?;
            match self
                .inner
                .store
                .append(&self.inner.log, &events, index.seq)
                .await
            {
                Ok(_) => {
                    index.seq += events.len() as u64;
                    for change in changes {
                        index.apply(change);
                    }
                    return Ok(answer);
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(err) => return Err(err.into()),
            }
        }
        Err(PlatformError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }

    // ----- agents -----

    /// Every agent, oldest first; with `status`, only those.
    pub async fn agents(&self, status: Option<AgentStatus>) -> Result<Vec<Agent>, PlatformError> {
        self.read(|index| {
            index
                .agents
                .values()
                .filter(|a| status.is_none_or(|s| a.status == s))
                .cloned()
                .collect()
        })
        .await
    }

    /// One agent.
    pub async fn agent(&self, id: Uuid) -> Result<Agent, PlatformError> {
        self.read(|index| index.agent(id).cloned()).await?
    }

    /// Creates an agent (`active`), or updates one (an upsert, as the Everruns SDK's `apply`
    /// and `apply_by_name` mean it): the agent `new.id` names if it exists, else, without an
    /// id, the one active agent named `new.name`. Returns the agent and whether it is new.
    /// Its `capabilities` (each available) are set in the same change; `tools`,
    /// `initial_files` and a harness other than `agent-chat` are `422` (see
    /// [`crate::everruns`]); updating an archived agent is `409 agent_archived`.
    pub async fn apply_agent(&self, new: NewAgent) -> Result<(Agent, bool), PlatformError> {
        crate::everruns::check_agent_extras(&new)?;
        let wanted = new
            .id
            .as_deref()
            .map(|id| {
                crate::everruns::agent_id(id).ok_or_else(|| {
                    PlatformError::Invalid(format!(
                        "`id` {id:?} is neither a UUID nor `agent_` and 32 hex digits"
                    ))
                })
            })
            .transpose()?;
        let name = required("name", new.name, 200)?;
        let description = optional("description", new.description, 10_000)?;
        let system_prompt = prompt(new.system_prompt)?;
        let tags = tags("tags", new.tags)?;
        let capabilities: Vec<String> = new.capabilities.into_iter().map(|c| c.id).collect();
        check_capabilities(self, &capabilities)?;
        self.write(|index| {
            index.check_model_exists(new.default_model_id)?;
            let now = Utc::now();
            let existing = match wanted {
                Some(id) => index.agents.get(&id),
                None => index.active_agent_named(&name)?,
            };
            let agent = match existing {
                Some(old) if old.status == AgentStatus::Archived => {
                    return Err(PlatformError::conflict(
                        "agent_archived",
                        format!("agent {} is archived: unarchive it to change it", old.id),
                    ));
                }
                Some(old) => Agent {
                    name: name.clone(),
                    description: description.clone(),
                    system_prompt: system_prompt.clone(),
                    default_model_id: new.default_model_id,
                    tags: tags.clone(),
                    updated_at: now,
                    ..old.clone()
                },
                None => Agent {
                    id: wanted.unwrap_or_else(Uuid::now_v7),
                    name: name.clone(),
                    description: description.clone(),
                    system_prompt: system_prompt.clone(),
                    default_model_id: new.default_model_id,
                    tags: tags.clone(),
                    status: AgentStatus::Active,
                    created_at: now,
                    updated_at: now,
                },
            };
            let mut changes = vec![Change::AgentSaved(agent.clone())];
            let had = index
                .agent_capabilities
                .get(&agent.id)
                .is_some_and(|c| !c.is_empty());
            if !capabilities.is_empty() || had {
                changes.push(Change::AgentCapabilitiesSet {
                    agent_id: agent.id,
                    capabilities: index.capabilities_of(agent.id, &capabilities),
                });
            }
            Ok((changes, (agent, existing.is_none())))
        })
        .await
    }

    /// Creates an agent, or updates one as [`Platform::apply_agent`] does.
    pub async fn create_agent(&self, new: NewAgent) -> Result<Agent, PlatformError> {
        self.apply_agent(new).await.map(|(agent, _)| agent)
    }

    /// Changes an active agent (an archived one is `409 agent_archived`).
    pub async fn update_agent(&self, id: Uuid, patch: AgentPatch) -> Result<Agent, PlatformError> {
        let name = patch.name.map(|n| required("name", n, 200)).transpose()?;
        let description = patch
            .description
            .map(|d| optional("description", d, 10_000))
            .transpose()?;
        let system_prompt = patch.system_prompt.map(prompt).transpose()?;
        let new_tags = patch.tags.map(|t| tags("tags", t)).transpose()?;
        self.write(|index| {
            let mut agent = index.agent(id)?.clone();
            if agent.status == AgentStatus::Archived {
                return Err(PlatformError::conflict(
                    "agent_archived",
                    format!("agent {id} is archived: unarchive it to change it"),
                ));
            }
            if let Some(model) = patch.default_model_id {
                index.check_model_exists(model)?;
                agent.default_model_id = model;
            }
            if let Some(name) = &name {
                agent.name.clone_from(name);
            }
            if let Some(description) = &description {
                agent.description.clone_from(description);
            }
            if let Some(prompt) = &system_prompt {
                agent.system_prompt.clone_from(prompt);
            }
            if let Some(tags) = &new_tags {
                agent.tags.clone_from(tags);
            }
            agent.updated_at = Utc::now();
            Ok((vec![Change::AgentSaved(agent.clone())], agent))
        })
        .await
    }

    /// Sets an agent's status (archiving an archived agent changes nothing).
    pub async fn set_agent_status(
        &self,
        id: Uuid,
        status: AgentStatus,
    ) -> Result<Agent, PlatformError> {
        self.write(|index| {
            let mut agent = index.agent(id)?.clone();
            if agent.status == status {
                return Ok((Vec::new(), agent));
            }
            agent.status = status;
            agent.updated_at = Utc::now();
            Ok((vec![Change::AgentSaved(agent.clone())], agent))
        })
        .await
    }

    /// Deletes an agent and its capabilities; one with sessions is `409 agent_has_sessions`
    /// (archive it instead, or delete its sessions first).
    pub async fn delete_agent(&self, id: Uuid) -> Result<(), PlatformError> {
        self.write(|index| {
            index.agent(id)?;
            let sessions = index.sessions.values().filter(|s| s.agent_id == id).count();
            if sessions > 0 {
                return Err(PlatformError::conflict(
                    "agent_has_sessions",
                    format!(
                        "agent {id} has {sessions} session(s): archive it, or delete them first"
                    ),
                ));
            }
            Ok((vec![Change::AgentDeleted(id)], ()))
        })
        .await
    }

    /// An agent's capabilities, by position.
    pub async fn agent_capabilities(
        &self,
        agent: Uuid,
    ) -> Result<Vec<AgentCapability>, PlatformError> {
        self.read(|index| {
            index.agent(agent)?;
            Ok(index
                .agent_capabilities
                .get(&agent)
                .cloned()
                .unwrap_or_default())
        })
        .await?
    }

    /// Replaces an agent's capabilities with `set`, in its order: each must be available and
    /// listed once (`422` otherwise). Capabilities the agent had keep their `created_at`.
    pub async fn set_agent_capabilities(
        &self,
        agent: Uuid,
        set: SetCapabilities,
    ) -> Result<Vec<AgentCapability>, PlatformError> {
        check_capabilities(self, &set.capabilities)?;
        self.write(|index| {
            let current = index.agent(agent)?;
            if current.status == AgentStatus::Archived {
                return Err(PlatformError::conflict(
                    "agent_archived",
                    format!("agent {agent} is archived: unarchive it to change it"),
                ));
            }
            let capabilities = index.capabilities_of(agent, &set.capabilities);
            Ok((
                vec![Change::AgentCapabilitiesSet {
                    agent_id: agent,
                    capabilities: capabilities.clone(),
                }],
                capabilities,
            ))
        })
        .await
    }

    // ----- providers -----

    /// Every LLM provider, oldest first.
    pub async fn providers(&self) -> Result<Vec<LlmProvider>, PlatformError> {
        self.read(|index| {
            index
                .providers
                .values()
                .map(ProviderRecord::public)
                .collect()
        })
        .await
    }

    /// One LLM provider.
    pub async fn provider(&self, id: Uuid) -> Result<LlmProvider, PlatformError> {
        self.read(|index| index.provider(id).map(ProviderRecord::public))
            .await?
    }

    fn keys(&self) -> Result<&MasterKeys, PlatformError> {
        self.inner
            .keys
            .as_ref()
            .ok_or(PlatformError::Keys(crate::KeyError::NoMasterKey))
    }

    /// Creates a provider; its key, if any, is sealed under the newest master key.
    pub async fn create_provider(&self, new: NewProvider) -> Result<LlmProvider, PlatformError> {
        let name = required("name", new.name, 200)?;
        let url = base_url(new.base_url)?;
        let key = new.api_key.map(api_key).transpose()?;
        if key.is_some() {
            self.keys()?;
        }
        self.write(|index| {
            let now = Utc::now();
            let id = Uuid::now_v7();
            let sealed = match &key {
                Some(key) => Some(self.keys()?.seal(id, key)?),
                None => None,
            };
            let record = ProviderRecord {
                id,
                name: name.clone(),
                provider_type: new.provider_type,
                base_url: url.clone(),
                api_key: sealed,
                is_default: new.is_default,
                status: new.status,
                settings: new.settings.clone(),
                created_at: now,
                updated_at: now,
            };
            let mut changes = if new.is_default {
                index.undefault_providers(id)
            } else {
                Vec::new()
            };
            let public = record.public();
            changes.push(Change::ProviderSaved(record));
            Ok((changes, public))
        })
        .await
    }

    /// Changes a provider; a new key is sealed afresh, `null` removes it.
    pub async fn update_provider(
        &self,
        id: Uuid,
        patch: ProviderPatch,
    ) -> Result<LlmProvider, PlatformError> {
        let name = patch.name.map(|n| required("name", n, 200)).transpose()?;
        let url = patch.base_url.map(base_url).transpose()?;
        let key = patch
            .api_key
            .map(|key| key.map(api_key).transpose())
            .transpose()?;
        if matches!(key, Some(Some(_))) {
            self.keys()?;
        }
        self.write(|index| {
            let mut record = index.provider(id)?.clone();
            if let Some(name) = &name {
                record.name.clone_from(name);
            }
            if let Some(provider_type) = patch.provider_type {
                record.provider_type = provider_type;
            }
            if let Some(url) = &url {
                record.base_url.clone_from(url);
            }
            match &key {
                Some(Some(key)) => record.api_key = Some(self.keys()?.seal(id, key)?),
                Some(None) => record.api_key = None,
                None => {}
            }
            if let Some(status) = patch.status {
                record.status = status;
            }
            if let Some(settings) = &patch.settings {
                record.settings.clone_from(settings);
            }
            let mut changes = Vec::new();
            if let Some(is_default) = patch.is_default {
                if is_default {
                    changes = index.undefault_providers(id);
                }
                record.is_default = is_default;
            }
            record.updated_at = Utc::now();
            let public = record.public();
            changes.push(Change::ProviderSaved(record));
            Ok((changes, public))
        })
        .await
    }

    /// Deletes a provider that serves no model (`409 provider_in_use` otherwise).
    pub async fn delete_provider(&self, id: Uuid) -> Result<(), PlatformError> {
        self.write(|index| {
            index.provider(id)?;
            let models = index
                .models
                .values()
                .filter(|m| m.provider_id == id)
                .count();
            if models > 0 {
                return Err(PlatformError::conflict(
                    "provider_in_use",
                    format!("provider {id} still has {models} model(s): delete them first"),
                ));
            }
            Ok((vec![Change::ProviderDeleted(id)], ()))
        })
        .await
    }

    /// The API key of a provider, opened: for calling the provider, never for an answer.
    /// `None` when the provider has no key.
    pub async fn provider_key(&self, id: Uuid) -> Result<Option<String>, PlatformError> {
        let sealed = self
            .read(|index| index.provider(id).map(|p| p.api_key.clone()))
            .await??;
        match sealed {
            Some(sealed) => Ok(Some(self.keys()?.open(id, &sealed)?)),
            None => Ok(None),
        }
    }

    // ----- models -----

    /// Every LLM model, oldest first; with `provider`, only that provider's (which must exist).
    pub async fn models(&self, provider: Option<Uuid>) -> Result<Vec<LlmModel>, PlatformError> {
        self.read(|index| {
            if let Some(provider) = provider {
                index.provider(provider)?;
            }
            Ok(index
                .models
                .values()
                .filter(|m| provider.is_none_or(|p| m.provider_id == p))
                .cloned()
                .collect())
        })
        .await?
    }

    /// One LLM model.
    pub async fn model(&self, id: Uuid) -> Result<LlmModel, PlatformError> {
        self.read(|index| index.model(id).cloned()).await?
    }

    /// Creates a model of an existing provider; with `is_default` the provider's previous
    /// default stops being it, in the same append.
    pub async fn create_model(&self, new: NewModel) -> Result<LlmModel, PlatformError> {
        let provider = new
            .provider_id
            .ok_or_else(|| PlatformError::Invalid("`provider_id` is required".into()))?;
        let model_id = required("model_id", new.model_id, 200)?;
        let display_name = match new.display_name {
            Some(name) => required("display_name", name, 200)?,
            None => model_id.clone(),
        };
        let features = tags("features", new.features)?;
        let window = context_window(new.context_window)?;
        self.write(|index| {
            if !index.providers.contains_key(&provider) {
                return Err(PlatformError::Invalid(format!(
                    "`provider_id` {provider} names no LLM provider"
                )));
            }
            index.check_model_unique(provider, &model_id, None)?;
            let now = Utc::now();
            let model = LlmModel {
                id: Uuid::now_v7(),
                provider_id: provider,
                model_id: model_id.clone(),
                display_name: display_name.clone(),
                features: features.clone(),
                context_window: window,
                is_default: new.is_default,
                status: new.status,
                created_at: now,
                updated_at: now,
            };
            let mut changes = if new.is_default {
                index.undefault_models(provider, model.id)
            } else {
                Vec::new()
            };
            changes.push(Change::ModelSaved(model.clone()));
            Ok((changes, model))
        })
        .await
    }

    /// Changes a model.
    pub async fn update_model(
        &self,
        id: Uuid,
        patch: ModelPatch,
    ) -> Result<LlmModel, PlatformError> {
        let model_id = patch
            .model_id
            .map(|m| required("model_id", m, 200))
            .transpose()?;
        let display_name = patch
            .display_name
            .map(|d| required("display_name", d, 200))
            .transpose()?;
        let features = patch.features.map(|f| tags("features", f)).transpose()?;
        let window = patch.context_window.map(context_window).transpose()?;
        self.write(|index| {
            let mut model = index.model(id)?.clone();
            if let Some(model_id) = &model_id {
                index.check_model_unique(model.provider_id, model_id, Some(id))?;
                model.model_id.clone_from(model_id);
            }
            if let Some(display_name) = &display_name {
                model.display_name.clone_from(display_name);
            }
            if let Some(features) = &features {
                model.features.clone_from(features);
            }
            if let Some(window) = window {
                model.context_window = window;
            }
            if let Some(status) = patch.status {
                model.status = status;
            }
            let mut changes = Vec::new();
            if let Some(is_default) = patch.is_default {
                if is_default {
                    changes = index.undefault_models(model.provider_id, id);
                }
                model.is_default = is_default;
            }
            model.updated_at = Utc::now();
            changes.push(Change::ModelSaved(model.clone()));
            Ok((changes, model))
        })
        .await
    }

    /// Deletes a model no agent has as its default (`409 model_in_use` otherwise).
    pub async fn delete_model(&self, id: Uuid) -> Result<(), PlatformError> {
        self.write(|index| {
            index.model(id)?;
            if let Some(agent) = index
                .agents
                .values()
                .find(|a| a.default_model_id == Some(id))
            {
                return Err(PlatformError::conflict(
                    "model_in_use",
                    format!(
                        "model {id} is the default model of agent {} ({}): change that first",
                        agent.id, agent.name
                    ),
                ));
            }
            if let Some(session) = index.sessions.values().find(|s| s.model_id == Some(id)) {
                return Err(PlatformError::conflict(
                    "model_in_use",
                    format!(
                        "model {id} is the model of session {}: change that first",
                        session.id
                    ),
                ));
            }
            Ok((vec![Change::ModelDeleted(id)], ()))
        })
        .await
    }
}

impl Platform {
    // ----- sessions -----

    /// A session as the API shows it: its record, with status and times read from its log.
    async fn session_of(&self, record: SessionRecord) -> Result<Session, PlatformError> {
        let info = self.inner.store.session(&session_log(record.id)).await?;
        let (status, started_at, finished_at) = match info {
            None => (SessionStatus::Pending, None, None),
            Some(info) => {
                let status = match info.status {
                    openharness_core::SessionStatus::Running => SessionStatus::Running,
                    openharness_core::SessionStatus::Failed => SessionStatus::Failed,
                    _ => SessionStatus::Pending,
                };
                let finished = (status != SessionStatus::Running).then_some(info.last_event);
                (status, Some(info.created), finished)
            }
        };
        Ok(Session {
            id: record.id,
            agent_id: record.agent_id,
            title: record.title,
            tags: record.tags,
            model_id: record.model_id,
            status,
            created_at: record.created_at,
            started_at,
            finished_at,
        })
    }

    /// The sessions of `agent`, oldest first.
    pub async fn sessions(&self, agent: Uuid) -> Result<Vec<Session>, PlatformError> {
        let records = self
            .read(|index| {
                index.agent(agent)?;
                Ok::<_, PlatformError>(
                    index
                        .sessions
                        .values()
                        .filter(|s| s.agent_id == agent)
                        .cloned()
                        .collect::<Vec<_>>(),
                )
            })
            .await??;
        let mut sessions = Vec::with_capacity(records.len());
        for record in records {
            sessions.push(self.session_of(record).await?);
        }
        Ok(sessions)
    }

    /// One session of `agent`.
    pub async fn session(&self, agent: Uuid, id: Uuid) -> Result<Session, PlatformError> {
        let record = self
            .read(|index| index.session(agent, id).cloned())
            .await??;
        self.session_of(record).await
    }

    /// Starts a session with an active agent (`409 agent_archived` otherwise); it is
    /// `pending` until its first message.
    pub async fn create_session(
        &self,
        agent: Uuid,
        new: NewSession,
    ) -> Result<Session, PlatformError> {
        crate::everruns::check_session_extras(&new)?;
        if let Some(named) = new.agent_id.as_deref()
            && crate::everruns::agent_id(named) != Some(agent)
        {
            return Err(PlatformError::Invalid(format!(
                "`agent_id` {named:?} is not the agent {agent} the path names"
            )));
        }
        let title = optional("title", new.title, 500)?;
        let tags = tags("tags", new.tags)?;
        let record = self
            .write(|index| {
                if let Some(name) = &new.agent_name
                    && index.agent(agent)?.name != *name
                {
                    return Err(PlatformError::Invalid(format!(
                        "`agent_name` {name:?} is not the name of the agent {agent} the path names"
                    )));
                }
                if index.agent(agent)?.status == AgentStatus::Archived {
                    return Err(PlatformError::conflict(
                        "agent_archived",
                        format!("agent {agent} is archived: unarchive it to start sessions"),
                    ));
                }
                index.check_session_model(new.model_id)?;
                let record = SessionRecord {
                    id: Uuid::now_v7(),
                    agent_id: agent,
                    title: title.clone(),
                    tags: tags.clone(),
                    model_id: new.model_id,
                    created_at: Utc::now(),
                };
                Ok((vec![Change::SessionSaved(record.clone())], record))
            })
            .await?;
        self.session_of(record).await
    }

    /// The agent a new session without one in its path is for: `agent_id` (a UUID, or
    /// `agent_` and 32 hex digits) or `agent_name` (its one active agent of that name), one of
    /// them (`422` otherwise; `404` for an agent that does not exist).
    pub async fn agent_of_new_session(&self, new: &NewSession) -> Result<Uuid, PlatformError> {
        match (new.agent_id.as_deref(), new.agent_name.as_deref()) {
            (Some(_), Some(_)) => Err(PlatformError::Invalid(
                "give `agent_id` or `agent_name`, not both".into(),
            )),
            (None, None) => Err(PlatformError::Invalid(
                "name the session's agent: `agent_id` or `agent_name`".into(),
            )),
            (Some(text), None) => {
                let id =
                    crate::everruns::agent_id(text).ok_or_else(|| PlatformError::NotFound {
                        kind: "agent",
                        id: text.to_owned(),
                    })?;
                self.read(|index| index.agent(id).map(|a| a.id)).await?
            }
            (None, Some(name)) => {
                let name = name.to_owned();
                self.read(move |index| {
                    index
                        .active_agent_named(&name)?
                        .map(|a| a.id)
                        .ok_or(PlatformError::NotFound {
                            kind: "active agent named",
                            id: name.clone(),
                        })
                })
                .await?
            }
        }
    }

    /// The agent session `id` belongs to (`404` for a session that does not exist).
    pub async fn agent_of_session(&self, id: Uuid) -> Result<Uuid, PlatformError> {
        // A session's agent never changes: the live index answers for any session it holds.
        self.read_current(|index| {
            index
                .sessions
                .get(&id)
                .map(|s| s.agent_id)
                .ok_or_else(|| not_found("session", id))
        })
        .await
    }

    /// Every session, oldest first; with `agent`, only its.
    pub async fn all_sessions(&self, agent: Option<Uuid>) -> Result<Vec<Session>, PlatformError> {
        let records = self
            .read(|index| {
                if let Some(agent) = agent {
                    index.agent(agent)?;
                }
                Ok::<_, PlatformError>(
                    index
                        .sessions
                        .values()
                        .filter(|s| agent.is_none_or(|a| s.agent_id == a))
                        .cloned()
                        .collect::<Vec<_>>(),
                )
            })
            .await??;
        let mut sessions = Vec::with_capacity(records.len());
        for record in records {
            sessions.push(self.session_of(record).await?);
        }
        Ok(sessions)
    }

    /// Changes a session's title, tags or model.
    pub async fn update_session(
        &self,
        agent: Uuid,
        id: Uuid,
        patch: SessionPatch,
    ) -> Result<Session, PlatformError> {
        let title = patch.title.map(|t| optional("title", t, 500)).transpose()?;
        let new_tags = patch.tags.map(|t| tags("tags", t)).transpose()?;
        let record = self
            .write(|index| {
                let mut record = index.session(agent, id)?.clone();
                if let Some(model) = patch.model_id {
                    index.check_session_model(model)?;
                    record.model_id = model;
                }
                if let Some(title) = &title {
                    record.title.clone_from(title);
                }
                if let Some(tags) = &new_tags {
                    record.tags.clone_from(tags);
                }
                Ok((vec![Change::SessionSaved(record.clone())], record))
            })
            .await?;
        self.session_of(record).await
    }

    /// Deletes a session and its log; one whose turn runs is `409 session_busy`.
    pub async fn delete_session(&self, agent: Uuid, id: Uuid) -> Result<(), PlatformError> {
        let session = self.session(agent, id).await?;
        if session.status == SessionStatus::Running {
            return Err(PlatformError::conflict(
                "session_busy",
                format!("session {id} is running a turn: wait for it to end"),
            ));
        }
        self.write(|index| {
            index.session(agent, id)?;
            Ok((vec![Change::SessionDeleted(id)], ()))
        })
        .await?;
        self.inner.store.clear(&session_log(id)).await?;
        Ok(())
    }
}

impl Platform {
    // ----- messages -----

    /// The messages of a session, oldest first: a projection of its log.
    pub async fn messages(&self, agent: Uuid, id: Uuid) -> Result<Vec<Message>, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        let log = session_log(id);
        let mut events = self.inner.store.stream_events(&log, 0..u64::MAX);
        let mut messages = Vec::new();
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            if let Some(message) = project(id, recorded.seq, &recorded.event) {
                messages.push(message);
            }
        }
        Ok(messages)
    }

    /// The notifications of a session with a sequence above `after`, oldest first.
    pub async fn notifications(
        &self,
        agent: Uuid,
        id: Uuid,
        after: Option<u64>,
    ) -> Result<Vec<Notification>, PlatformError> {
        self.notifications_after(agent, id, after.map(Resume::after))
            .await
    }

    /// Where a reader that last saw the notification `seen` (its id) resumes: right after it
    /// ([`PlatformError::NotFound`] when the session has no notification of that id).
    pub async fn resume_after_id(
        &self,
        agent: Uuid,
        id: Uuid,
        seen: Uuid,
    ) -> Result<Resume, PlatformError> {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, None);
        let mut events = self.inner.store.stream_events(&log, 0..u64::MAX);
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            let notes = projector.project(recorded.seq, &recorded.event);
            if let Some((frame, _)) = notes.iter().find(|(_, note)| note.id == seen)
                && let Some(resume) = Resume::parse(frame)
            {
                return Ok(resume);
            }
        }
        Err(PlatformError::NotFound {
            kind: "event",
            id: format!("{seen} in session {id}"),
        })
    }

    /// The notifications of a session after `resume` (all without it), oldest first.
    pub async fn notifications_after(
        &self,
        agent: Uuid,
        id: Uuid,
        resume: Option<Resume>,
    ) -> Result<Vec<Notification>, PlatformError> {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, resume);
        let mut events = self
            .inner
            .store
            .stream_events(&log, projector.read_from()..u64::MAX);
        let mut notifications = Vec::new();
        while let Some(recorded) = events.next().await {
            let recorded = recorded?;
            let notes = projector.project(recorded.seq, &recorded.event);
            notifications.extend(notes.into_iter().map(|(_, note)| note));
        }
        Ok(notifications)
    }

    /// The model provider a provider row describes, with its key opened, asking `model`.
    fn row_provider(
        &self,
        row: &ProviderRecord,
        model: &str,
    ) -> Result<BoxedProvider, PlatformError> {
        use openharness_provider::{AnthropicProvider, ApiKey, OpenAiProvider};
        if row.status != crate::resources::ResourceStatus::Active {
            return Err(PlatformError::Invalid(format!(
                "LLM provider {} is disabled",
                row.id
            )));
        }
        let sealed = row.api_key.as_ref().ok_or_else(|| {
            PlatformError::Invalid(format!("LLM provider {} has no API key", row.id))
        })?;
        let key = ApiKey::new(self.keys()?.open(row.id, sealed)?);
        let invalid = |err: openharness_provider::ConfigError| {
            PlatformError::Invalid(format!("LLM provider {}: {err}", row.id))
        };
        let provider: BoxedProvider = match row.provider_type {
            crate::resources::ProviderType::Anthropic => {
                let mut builder = AnthropicProvider::builder(key).model(model);
                if let Some(url) = &row.base_url {
                    builder = builder.base_url(url);
                }
                Arc::new(builder.build().map_err(invalid)?)
            }
            // Azure OpenAI's v1 API is the Chat Completions API at the resource's
            // `/openai/v1` address, taking the resource's key as a bearer token; the model id
            // names the deployment. Its address has no default.
            crate::resources::ProviderType::AzureOpenai if row.base_url.is_none() => {
                return Err(PlatformError::Invalid(format!(
                    "LLM provider {}: an azure_openai provider needs its base_url, \
                     https://RESOURCE.openai.azure.com/openai/v1",
                    row.id
                )));
            }
            crate::resources::ProviderType::Openai
            | crate::resources::ProviderType::AzureOpenai => {
                let mut builder = OpenAiProvider::builder(key).model(model);
                if let Some(url) = &row.base_url {
                    builder = builder.base_url(url);
                }
                Arc::new(builder.build().map_err(invalid)?)
            }
        };
        Ok(provider)
    }

    /// A session's notifications after `resume` (all without it), history and then live, each
    /// with its SSE frame id (the sequence, or `seq.index` for the first of an event's two
    /// notifications; [`Resume::parse`] reads it back). The stream ends only with an error
    /// (the store's tail failed); it waits for new events otherwise.
    pub async fn follow(
        &self,
        agent: Uuid,
        id: Uuid,
        resume: Option<Resume>,
    ) -> Result<
        impl futures_util::Stream<Item = Result<(String, Notification), PlatformError>> + Send + 'static,
        PlatformError,
    > {
        let log = self.log_of(agent, id).await?;
        let mut projector = Projector::new(id, resume);
        let tail = self
            .inner
            .store
            .subscribe(&log, projector.read_from())
            .await?;
        Ok(futures_util::StreamExt::flat_map(tail, move |item| {
            let notes: Vec<_> = match item {
                Ok(recorded) => projector
                    .project(recorded.seq, &recorded.event)
                    .into_iter()
                    .map(Ok)
                    .collect(),
                Err(err) => vec![Err(PlatformError::Store(err))],
            };
            futures_util::stream::iter(notes)
        }))
    }

    /// The log of a session of `agent` that exists.
    async fn log_of(&self, agent: Uuid, id: Uuid) -> Result<SessionId, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        Ok(session_log(id))
    }
}

/// The Open Harness session that holds a platform session's log (the same id).
fn session_log(id: Uuid) -> SessionId {
    match id.to_string().parse() {
        Ok(log) => log,
        // A UUID's text is always a valid session id.
        Err(_) => SessionId::new(),
    }
}

fn prompt(value: String) -> Result<String, PlatformError> {
    if value.chars().count() > MAX_PROMPT {
        return Err(PlatformError::Invalid(format!(
            "`system_prompt` is longer than {MAX_PROMPT} characters"
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_log_id_is_a_valid_session_id() {
        assert!(PLATFORM_LOG.parse::<SessionId>().is_ok());
    }

    #[test]
    fn every_change_round_trips_through_its_event() {
        let now = Utc::now();
        let agent = Agent {
            id: Uuid::now_v7(),
            name: "a".into(),
            description: None,
            system_prompt: String::new(),
            default_model_id: None,
            tags: vec![],
            status: AgentStatus::Active,
            created_at: now,
            updated_at: now,
        };
        for change in [
            Change::AgentSaved(agent.clone()),
            Change::AgentDeleted(agent.id),
            Change::AgentCapabilitiesSet {
                agent_id: agent.id,
                capabilities: vec![],
            },
            Change::ProviderDeleted(agent.id),
            Change::ModelDeleted(agent.id),
        ] {
            let event = change.envelope().unwrap();
            let back = Change::decode(&event).unwrap().unwrap();
            assert_eq!(format!("{back:?}"), format!("{change:?}"));
        }
        let unknown = Envelope::new("agent:renamed", serde_json::json!({}), None);
        assert!(Change::decode(&unknown).unwrap().is_none());
    }
}
