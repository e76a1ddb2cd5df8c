//! The platform log's changes (one per write, each a whole record) and the index folded from
//! them.

use super::*;

/// One change of the platform log.
#[derive(Debug, Clone)]
pub(super) enum Change {
    AgentSaved(AgentResource),
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
pub(super) struct Deleted {
    pub(super) id: Uuid,
}

#[derive(Serialize, Deserialize)]
pub(super) struct CapabilitiesSet {
    pub(super) agent_id: Uuid,
    pub(super) capabilities: Vec<AgentCapability>,
}

impl Change {
    pub(super) fn envelope(&self) -> Result<Envelope, serde_json::Error> {
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
    pub(super) fn decode(event: &Envelope) -> Result<Option<Self>, serde_json::Error> {
        let payload = &event.payload;
        let deleted = || Deleted::deserialize(payload).map(|d| d.id);
        Ok(Some(match event.name.as_ref() {
            "agent:saved" => Self::AgentSaved(AgentResource::deserialize(payload)?),
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
pub(super) struct Index {
    /// How many events of the log are folded in.
    pub(super) seq: u64,
    /// The tick of [`Inner::clock`] at which the last catch-up began (0: never): every change
    /// recorded before it is folded in.
    pub(super) caught_up_at: u64,
    /// Whether a live tail of the log keeps the index current (see `live_index`).
    pub(super) followed: bool,
    pub(super) agents: BTreeMap<Uuid, AgentResource>,
    pub(super) agent_capabilities: BTreeMap<Uuid, Vec<AgentCapability>>,
    pub(super) providers: BTreeMap<Uuid, ProviderRecord>,
    pub(super) models: BTreeMap<Uuid, LlmModel>,
    pub(super) sessions: BTreeMap<Uuid, SessionRecord>,
}

impl Index {
    /// Folds in the log's event at `seq`, the next one.
    pub(super) fn fold(&mut self, log: &SessionId, event: &Envelope) -> Result<(), PlatformError> {
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

    pub(super) fn apply(&mut self, change: Change) {
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

    pub(super) fn agent(&self, id: Uuid) -> Result<&AgentResource, PlatformError> {
        self.agents.get(&id).ok_or_else(|| not_found("agent", id))
    }

    pub(super) fn provider(&self, id: Uuid) -> Result<&ProviderRecord, PlatformError> {
        self.providers
            .get(&id)
            .ok_or_else(|| not_found("llm_provider", id))
    }

    pub(super) fn model(&self, id: Uuid) -> Result<&LlmModel, PlatformError> {
        self.models
            .get(&id)
            .ok_or_else(|| not_found("llm_model", id))
    }

    /// The session `id` of `agent` (a session of another agent is not found here).
    pub(super) fn session(&self, agent: Uuid, id: Uuid) -> Result<&SessionRecord, PlatformError> {
        self.agent(agent)?;
        self.sessions
            .get(&id)
            .filter(|s| s.agent_id == agent)
            .ok_or_else(|| not_found("session", id))
    }

    /// `agent`'s capabilities set to `ids`, in order: those it had keep their `created_at`.
    pub(super) fn capabilities_of(&self, agent: Uuid, ids: &[String]) -> Vec<AgentCapability> {
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
    pub(super) fn active_agent_named(
        &self,
        name: &str,
    ) -> Result<Option<&AgentResource>, PlatformError> {
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
    pub(super) fn check_session_model(&self, id: Option<Uuid>) -> Result<(), PlatformError> {
        match id {
            Some(id) if !self.models.contains_key(&id) => Err(PlatformError::Invalid(format!(
                "`model_id` {id} names no LLM model"
            ))),
            _ => Ok(()),
        }
    }

    /// Refuses a default model that does not exist.
    pub(super) fn check_model_exists(&self, id: Option<Uuid>) -> Result<(), PlatformError> {
        match id {
            Some(id) if !self.models.contains_key(&id) => Err(PlatformError::Invalid(format!(
                "`default_model_id` {id} names no LLM model"
            ))),
            _ => Ok(()),
        }
    }

    /// The other default providers, made non-default (when `new_default` becomes it).
    pub(super) fn undefault_providers(&self, new_default: Uuid) -> Vec<Change> {
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
    pub(super) fn undefault_models(&self, provider: Uuid, new_default: Uuid) -> Vec<Change> {
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
    pub(super) fn check_model_unique(
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
