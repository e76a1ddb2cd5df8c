//! Sessions of an agent: their records in the platform log, each with a log of its own.

use super::*;

impl Platform {
    /// A session as the API shows it: its record, with status and times read from its log.
    pub(super) async fn session_of(&self, record: SessionRecord) -> Result<Session, PlatformError> {
        let info = self.inner.store.session(&session_log(record.id)).await?;
        let (status, started_at, finished_at) = match info {
            None => (SessionPhase::Pending, None, None),
            Some(info) => {
                let status = match info.status {
                    openharness_core::SessionStatus::Running => SessionPhase::Running,
                    openharness_core::SessionStatus::Failed => SessionPhase::Failed,
                    _ => SessionPhase::Pending,
                };
                let finished = (status != SessionPhase::Running).then_some(info.last_event);
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

    /// The sessions of `agent`, oldest first (a `404` error for an agent that does not exist).
    pub async fn sessions(&self, agent: Uuid) -> Result<Vec<Session>, PlatformError> {
        self.all_sessions(Some(agent)).await
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
                Ok((vec![Change::session_saved(record.clone())], record))
            })
            .await?;
        self.session_of(record).await
    }

    /// Starts a session with the active agent `agent` for a client of another protocol (Open
    /// Responses, AG-UI, A2A) and returns its log: under `id` when the client chose the
    /// session's id (an AG-UI thread, an A2A context), else under a new one. Its turns then run
    /// through the host like any other: the host gives each the agent's model, instructions,
    /// tools and provider (the platform's turn options), whoever starts it. `409
    /// agent_archived` for an archived agent, `409 session_exists` for an id another agent's
    /// session has (the same agent's is that session: a client's retry).
    ///
    /// ```no_run
    /// # async fn demo(platform: openharness_platform::Platform, agent: uuid::Uuid) -> Result<(), Box<dyn std::error::Error>> {
    /// use openharness_host::TurnStart;
    /// let log = platform.start_session(agent, None).await?;
    /// let start = TurnStart::New { workflow: openharness_platform::WORKFLOW_NAME.into(), input: Some("Hi!".into()) };
    /// platform.host().start(&log, start, openharness_core::RunOptions::new()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_session(
        &self,
        agent: Uuid,
        id: Option<Uuid>,
    ) -> Result<SessionId, PlatformError> {
        let record = self
            .write(|index| {
                if index.agent(agent)?.status == AgentStatus::Archived {
                    return Err(PlatformError::conflict(
                        "agent_archived",
                        format!("agent {agent} is archived: unarchive it to start sessions"),
                    ));
                }
                let id = id.unwrap_or_else(Uuid::now_v7);
                match index.sessions.get(&id) {
                    // Started before (a client's retry): the same session.
                    Some(known) if known.agent_id == agent => {
                        return Ok((Vec::new(), known.clone()));
                    }
                    Some(known) => {
                        return Err(PlatformError::conflict(
                            "session_exists",
                            format!(
                                "session {id} is a session of agent {}, not {agent}",
                                known.agent_id
                            ),
                        ));
                    }
                    None => {}
                }
                let record = SessionRecord {
                    id,
                    agent_id: agent,
                    title: None,
                    tags: Vec::new(),
                    model_id: None,
                    created_at: Utc::now(),
                };
                Ok((vec![Change::session_saved(record.clone())], record))
            })
            .await?;
        Ok(session_log(record.id))
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
                Ok((vec![Change::session_saved(record.clone())], record))
            })
            .await?;
        self.session_of(record).await
    }

    /// Deletes a session and its log; one whose turn runs is `409 session_busy`.
    pub async fn delete_session(&self, agent: Uuid, id: Uuid) -> Result<(), PlatformError> {
        let session = self.session(agent, id).await?;
        if self.runs_here(id) || session.status == SessionPhase::Running {
            let why = "a turn is running on it (here, in another process, or cut off and not resumed yet): wait for it to end";
            return Err(openharness_host::HostError::busy(&session_log(id), why).into());
        }
        self.write(|index| {
            index.session(agent, id)?;
            Ok((vec![Change::session_deleted(id)], ()))
        })
        .await?;
        self.inner.store.clear(&session_log(id)).await?;
        Ok(())
    }
}
