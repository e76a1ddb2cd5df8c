//! Agents: listed, read, created (or applied by name), updated, paused and deleted, and the
//! capabilities they are given.

use super::*;

impl Platform {
    /// Every agent, oldest first; with `status`, only those.
    pub async fn agents(
        &self,
        status: Option<AgentStatus>,
    ) -> Result<Vec<AgentResource>, PlatformError> {
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
    pub async fn agent(&self, id: Uuid) -> Result<AgentResource, PlatformError> {
        self.read(|index| index.agent(id).cloned()).await?
    }

    /// Creates an agent (`active`), or updates one (an upsert, as the Everruns SDK's `apply`
    /// and `apply_by_name` mean it): the agent `new.id` names if it exists, else, without an
    /// id, the one active agent named `new.name`. Returns the agent and whether it is new.
    /// Its `capabilities` (each available) are set in the same change; `tools`,
    /// `initial_files` and a harness other than `agent-chat` are `422` (see
    /// [`crate::everruns`]); updating an archived agent is `409 agent_archived`.
    pub async fn apply_agent(&self, new: NewAgent) -> Result<(AgentResource, bool), PlatformError> {
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
                Some(old) => AgentResource {
                    name: name.clone(),
                    description: description.clone(),
                    system_prompt: system_prompt.clone(),
                    default_model_id: new.default_model_id,
                    tags: tags.clone(),
                    updated_at: now,
                    ..old.clone()
                },
                None => AgentResource {
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
            let mut changes = vec![Change::agent_saved(agent.clone())];
            let had = index
                .agent_capabilities
                .get(&agent.id)
                .is_some_and(|c| !c.is_empty());
            if !capabilities.is_empty() || had {
                changes.push(Change::capabilities_set(
                    agent.id,
                    index.capabilities_of(agent.id, &capabilities),
                ));
            }
            Ok((changes, (agent, existing.is_none())))
        })
        .await
    }

    /// Creates an agent, or updates one as [`Platform::apply_agent`] does.
    pub async fn create_agent(&self, new: NewAgent) -> Result<AgentResource, PlatformError> {
        self.apply_agent(new).await.map(|(agent, _)| agent)
    }

    /// Changes an active agent (an archived one is `409 agent_archived`).
    pub async fn update_agent(
        &self,
        id: Uuid,
        patch: AgentPatch,
    ) -> Result<AgentResource, PlatformError> {
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
            Ok((vec![Change::agent_saved(agent.clone())], agent))
        })
        .await
    }

    /// Sets an agent's status (archiving an archived agent changes nothing).
    pub async fn set_agent_status(
        &self,
        id: Uuid,
        status: AgentStatus,
    ) -> Result<AgentResource, PlatformError> {
        self.write(|index| {
            let mut agent = index.agent(id)?.clone();
            if agent.status == status {
                return Ok((Vec::new(), agent));
            }
            agent.status = status;
            agent.updated_at = Utc::now();
            Ok((vec![Change::agent_saved(agent.clone())], agent))
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
            Ok((vec![Change::agent_deleted(id)], ()))
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
                vec![Change::capabilities_set(agent, capabilities.clone())],
                capabilities,
            ))
        })
        .await
    }
}
