//! The platform log's changes (one per write, each a whole record) and the index folded from
//! them.

use openharness_macros::event;

use super::*;

/// `agent:saved`: an agent as it now is (the whole resource, at the payload's top level).
#[event("agent:saved", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct AgentSaved {
    #[serde(flatten)]
    pub(super) agent: AgentResource,
}

/// `agent:deleted`: an agent and its capabilities are gone.
#[event("agent:deleted", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct AgentDeleted {
    pub(super) id: Uuid,
}

/// `agent_capabilities:set`: an agent's capabilities, in order, replacing the ones it had.
#[event("agent_capabilities:set", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct AgentCapabilitiesSet {
    pub(super) agent_id: Uuid,
    pub(super) capabilities: Vec<AgentCapability>,
}

/// `llm_provider:saved`: a provider as it now is, with its sealed key.
#[event("llm_provider:saved", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct ProviderSaved {
    #[serde(flatten)]
    pub(super) provider: ProviderRecord,
}

/// `llm_provider:deleted`.
#[event("llm_provider:deleted", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct ProviderDeleted {
    pub(super) id: Uuid,
}

/// `llm_model:saved`: a model as it now is.
#[event("llm_model:saved", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct ModelSaved {
    #[serde(flatten)]
    pub(super) model: LlmModel,
}

/// `llm_model:deleted`.
#[event("llm_model:deleted", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct ModelDeleted {
    pub(super) id: Uuid,
}

/// `session:saved`: what the platform keeps of a session beside its own log.
#[event("session:saved", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct SessionSaved {
    #[serde(flatten)]
    pub(super) session: SessionRecord,
}

/// `session:deleted`.
#[event("session:deleted", crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) struct SessionDeleted {
    pub(super) id: Uuid,
}

/// One change of the platform log: one event, each a whole record, folded into the [`Index`]
/// like any workflow's events into its state.
#[event(crate = openharness_core)]
#[derive(Debug, Clone)]
pub(super) enum Change {
    AgentSaved,
    AgentDeleted,
    AgentCapabilitiesSet,
    ProviderSaved,
    ProviderDeleted,
    ModelSaved,
    ModelDeleted,
    SessionSaved,
    SessionDeleted,
}

impl Change {
    pub(super) fn agent_saved(agent: AgentResource) -> Self {
        Self::AgentSaved(AgentSaved { agent })
    }

    pub(super) fn agent_deleted(id: Uuid) -> Self {
        Self::AgentDeleted(AgentDeleted { id })
    }

    pub(super) fn capabilities_set(agent_id: Uuid, capabilities: Vec<AgentCapability>) -> Self {
        Self::AgentCapabilitiesSet(AgentCapabilitiesSet {
            agent_id,
            capabilities,
        })
    }

    pub(super) fn provider_saved(provider: ProviderRecord) -> Self {
        Self::ProviderSaved(ProviderSaved { provider })
    }

    pub(super) fn provider_deleted(id: Uuid) -> Self {
        Self::ProviderDeleted(ProviderDeleted { id })
    }

    pub(super) fn model_saved(model: LlmModel) -> Self {
        Self::ModelSaved(ModelSaved { model })
    }

    pub(super) fn model_deleted(id: Uuid) -> Self {
        Self::ModelDeleted(ModelDeleted { id })
    }

    pub(super) fn session_saved(session: SessionRecord) -> Self {
        Self::SessionSaved(SessionSaved { session })
    }

    pub(super) fn session_deleted(id: Uuid) -> Self {
        Self::SessionDeleted(SessionDeleted { id })
    }

    pub(super) fn envelope(&self) -> Result<Envelope, serde_json::Error> {
        Ok(Envelope::new(self.name(), self.to_payload()?, None))
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
        match Change::decode_envelope(event) {
            Ok(Decoded::Known(change)) => self.apply(change),
            Ok(Decoded::Several(changes)) => {
                changes.into_iter().for_each(|change| self.apply(change))
            }
            Ok(Decoded::Unknown) => tracing::warn!(
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
            Change::AgentSaved(AgentSaved { agent }) => {
                self.agents.insert(agent.id, agent);
            }
            Change::AgentDeleted(AgentDeleted { id }) => {
                self.agents.remove(&id);
                self.agent_capabilities.remove(&id);
            }
            Change::AgentCapabilitiesSet(AgentCapabilitiesSet {
                agent_id,
                capabilities,
            }) => {
                self.agent_capabilities.insert(agent_id, capabilities);
            }
            Change::ProviderSaved(ProviderSaved { provider }) => {
                self.providers.insert(provider.id, provider);
            }
            Change::ProviderDeleted(ProviderDeleted { id }) => {
                self.providers.remove(&id);
            }
            Change::ModelSaved(ModelSaved { model }) => {
                self.models.insert(model.id, model);
            }
            Change::ModelDeleted(ModelDeleted { id }) => {
                self.models.remove(&id);
            }
            Change::SessionSaved(SessionSaved { session }) => {
                self.sessions.insert(session.id, session);
            }
            Change::SessionDeleted(SessionDeleted { id }) => {
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
                Change::provider_saved(p)
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
                Change::model_saved(m)
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
