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
//!
//! Where things are: this file holds the [`Platform`] and how it reads and writes the log
//! (catch up, decide, append); the log's changes and index are in `log`, the checks of a
//! request's fields in `validation`; one file per resource (`agents`, `providers`, `models`,
//! `sessions`), a session's messages and notifications in `conversation`, turns in `turns`,
//! the live index in `live_index`, key rotation in `rotate`. A new resource is a file here
//! with its `impl Platform` block, its change in `log`, and its routes in the server.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::Utc;
use openharness_core::adapter::Decoded;
use openharness_core::{BoxedProvider, Envelope, EventSet, SessionId, Store, StoreError};
use openharness_host::Host;

use crate::events::{Notification, Projector, Resume};
use crate::messages::{SessionMessage, project};
use uuid::Uuid;

use openharness_mcp::McpClient;

use crate::error::PlatformError;
use crate::keys::MasterKeys;
use crate::requests::{
    AgentPatch, ModelPatch, NewAgent, NewModel, NewProvider, NewSession, ProviderPatch,
    SessionPatch, SetCapabilities,
};
use crate::resources::{
    AgentCapability, AgentResource, AgentStatus, Capability, CapabilityStatus, LlmModel,
    LlmProvider, ProviderRecord, Session, SessionPhase, SessionRecord,
};

mod agents;
mod conversation;
pub use conversation::Notifier;
mod live_index;
mod log;
mod models;
mod providers;
mod sessions;
mod turns;
mod validation;

use log::{Change, Index};
use validation::*;

pub(crate) mod rotate;

/// The id of the session that holds the platform log.
pub const PLATFORM_LOG: &str = "openharness-platform";

/// How many times a write is decided again after losing a race to another writer.
const MAX_ATTEMPTS: u32 = 32;
/// How many events one catch-up read asks for.
const CATCH_UP_PAGE: u64 = 1024;

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
    /// The host that runs every session's turns, with the agent-chat workflow registered.
    host: Host,
    log: SessionId,
    keys: Option<MasterKeys>,
    provider: Option<BoxedProvider>,
    /// MCP servers offered to agents as the capabilities `mcp:<name>`.
    mcp: Vec<McpClient>,
    index: tokio::sync::Mutex<Index>,
    /// Ticks taken by each read as it arrives and by each catch-up as it begins, in one order,
    /// so a read can tell that a catch-up began after it arrived (see [`Platform::read`]).
    clock: AtomicU64,
    /// Where the host's turn options find the newest platform built on it (see
    /// [`Platform::turn_options`]).
    current: Current,
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

/// The newest platform built on a host, for the host's turn options (a weak reference: the
/// host the platform holds must not keep the platform alive).
type Current = Arc<std::sync::RwLock<std::sync::Weak<Inner>>>;

impl Platform {
    /// The platform over `store`, its log in the session [`PLATFORM_LOG`]; provider keys are
    /// sealed with `keys` (without them a provider can have no key). Its sessions' turns run
    /// in a host of its own over `store` ([`Platform::host`]); [`Platform::with_host`] shares
    /// one with the native sessions instead.
    pub fn new(store: Arc<dyn Store>, keys: Option<MasterKeys>) -> Self {
        let log = match PLATFORM_LOG.parse() {
            Ok(log) => log,
            // The constant is a valid session id; a test pins that.
            Err(_) => SessionId::new(),
        };
        let current = Current::default();
        // A host of its own has no agent-chat workflow yet: registering it cannot clash.
        let host = hosting(
            Host::shared(Arc::clone(&store)).unlisted(log.clone()),
            &current,
        )
        .unwrap_or_else(|_| Host::shared(Arc::clone(&store)));
        Self::built(Inner {
            store,
            host,
            log,
            keys,
            provider: None,
            mcp: Vec::new(),
            index: tokio::sync::Mutex::default(),
            clock: AtomicU64::new(1),
            current,
            follower: std::sync::OnceLock::new(),
        })
    }

    /// `inner` as the platform its host's turn options reach.
    fn built(inner: Inner) -> Self {
        let inner = Arc::new(inner);
        *inner
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::downgrade(&inner);
        Self { inner }
    }

    /// This platform with another part of its setup, sharing its host and its store.
    fn rebuilt(&self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Inner {
            store: Arc::clone(&self.inner.store),
            host: self.inner.host.clone(),
            log: self.inner.log.clone(),
            keys: self.inner.keys.clone(),
            provider: self.inner.provider.clone(),
            mcp: self.inner.mcp.clone(),
            index: tokio::sync::Mutex::default(),
            clock: AtomicU64::new(1),
            current: Arc::clone(&self.inner.current),
            follower: std::sync::OnceLock::new(),
        };
        change(&mut inner);
        Self::built(inner)
    }

    /// This platform running its sessions' turns in `host` (which must be over the same
    /// store, and have no `agent-chat` workflow of its own): the agent-chat workflow is
    /// registered there once, with this platform giving the options of the turns the host
    /// starts by itself, and the platform log is left out of its session lists. Serve
    /// [`Platform::host`] afterwards: it reads and runs native and platform sessions alike.
    ///
    /// ```
    /// use openharness_platform::Platform;
    /// let store: std::sync::Arc<dyn openharness_core::Store> = std::sync::Arc::new(openharness_store::MemoryStore::new());
    /// let host = openharness_host::Host::shared(store.clone());
    /// let platform = Platform::new(store, None).with_host(host)?;
    /// assert!(platform.host().runs_turns_of(openharness_platform::WORKFLOW_NAME));
    /// # Ok::<(), openharness_platform::PlatformError>(())
    /// ```
    pub fn with_host(self, host: Host) -> Result<Self, PlatformError> {
        let host = hosting(host.unlisted(self.inner.log.clone()), &self.inner.current)?;
        Ok(self.rebuilt(|inner| inner.host = host))
    }

    /// The host that runs this platform's sessions' turns (and recovers them: run
    /// [`Host::spawn_recovery`] on it, as `openharness serve` does).
    pub fn host(&self) -> &Host {
        &self.inner.host
    }

    /// This platform answering messages with `provider` (its sessions' model calls go to it,
    /// naming the model the message, session or agent chose).
    #[must_use]
    pub fn with_provider(self, provider: BoxedProvider) -> Self {
        self.rebuilt(|inner| inner.provider = Some(provider))
    }

    /// This platform offering each of `servers` to agents as the capability `mcp:<name>`:
    /// an agent given it has the server's tools (as last listed), and their calls are recorded
    /// with the server's name. The servers are the operator's (started or reached by this
    /// process with the operator's credentials); an API client can only choose among them.
    #[must_use]
    pub fn with_mcp_servers(self, servers: Vec<McpClient>) -> Self {
        self.rebuilt(|inner| inner.mcp = servers)
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
}

/// `host` with the agent-chat workflow registered, its turns' options given by the platform
/// `current` points at.
fn hosting(host: Host, current: &Current) -> Result<Host, PlatformError> {
    let workflow = crate::chat::registered(Arc::clone(host.store()))?;
    let current = Arc::clone(current);
    let host = host.workflow(workflow)?;
    Ok(
        host.turn_options(crate::chat::WORKFLOW_NAME, move |session| {
            let platform = current
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .upgrade()
                .map(|inner| Platform { inner });
            Box::pin(async move {
                let platform = platform.ok_or_else(|| {
                    openharness_host::HostError::TurnFailed(
                        "the platform that runs this session is gone".to_owned(),
                    )
                })?;
                platform.turn_options(&session).await.map_err(|err| {
                    openharness_host::HostError::TurnFailed(
                        openharness_core::adapter::ErrorChain(&err).to_string(),
                    )
                })
            })
        }),
    )
}

/// The Open Harness session that holds a platform session's log (the same id).
fn session_log(id: Uuid) -> SessionId {
    match id.to_string().parse() {
        Ok(log) => log,
        // A UUID's text is always a valid session id.
        Err(_) => SessionId::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use log::AgentSaved;

    #[test]
    fn the_log_id_is_a_valid_session_id() {
        assert!(PLATFORM_LOG.parse::<SessionId>().is_ok());
    }

    #[test]
    fn every_change_round_trips_through_its_event() {
        let now = Utc::now();
        let agent = AgentResource {
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
            Change::agent_saved(agent.clone()),
            Change::agent_deleted(agent.id),
            Change::capabilities_set(agent.id, vec![]),
            Change::provider_deleted(agent.id),
            Change::model_deleted(agent.id),
        ] {
            let event = change.envelope().unwrap();
            let Decoded::Known(back) = Change::decode(&event.name, &event.payload).unwrap() else {
                panic!("`{}` is not a platform change", event.name);
            };
            assert_eq!(format!("{back:?}"), format!("{change:?}"));
        }
        let unknown = Envelope::new("agent:renamed", serde_json::json!({}), None);
        assert!(matches!(
            Change::decode(&unknown.name, &unknown.payload).unwrap(),
            Decoded::Unknown
        ));
    }

    /// The payloads keep the shape logs were written with: a saved record's fields at the top
    /// level, a deletion as `{"id": …}`, capabilities as `agent_id` and `capabilities`.
    #[test]
    fn recorded_payloads_keep_their_shape() {
        let id = Uuid::now_v7();
        let saved = serde_json::json!({
            "id": id, "name": "a", "description": null, "system_prompt": "",
            "default_model_id": null, "tags": [], "status": "active",
            "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        });
        let Decoded::Known(Change::AgentSaved(AgentSaved { agent })) =
            Change::decode("agent:saved", &saved).unwrap()
        else {
            panic!("`agent:saved` did not decode as a saved agent");
        };
        assert_eq!(agent.id, id);
        let encoded = Change::agent_saved(agent).envelope().unwrap();
        assert_eq!(encoded.name, "agent:saved");
        assert_eq!(encoded.payload["id"], serde_json::json!(id));
        assert_eq!(encoded.payload["name"], "a");

        let deleted = Change::session_deleted(id).envelope().unwrap();
        assert_eq!(deleted.name, "session:deleted");
        assert_eq!(deleted.payload, serde_json::json!({ "id": id }));

        let set = Change::capabilities_set(id, vec![]).envelope().unwrap();
        assert_eq!(set.name, "agent_capabilities:set");
        assert_eq!(
            set.payload,
            serde_json::json!({ "agent_id": id, "capabilities": [] })
        );
    }
}
