//! Turns of platform sessions: posting a message, and finishing turns whose process died.
//!
//! Who runs a session's turn is decided by a claim: this process keeps the set of sessions it
//! runs, and the store excludes other processes ([`Store::claim`]; on PostgreSQL a
//! session-level advisory lock, which the database frees when the holder's connection dies
//! with it). A message is answered once its `user:input` is durably recorded; the turn runs on
//! while the claim is held, and the claim is given up when the turn ends.
//!
//! A session whose log says `running` while nobody holds its claim lost its process mid-turn.
//! [`Platform::recover`] (run every so often by [`Platform::spawn_recovery`], as `openharness
//! serve` does) claims such sessions and resumes them from their logs; a message posted to
//! one resumes it first. Resuming never asks a model again for a response that is recorded:
//! only calls cut off before their `agent:completed` run again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use openharness_core::{
    CancellationToken, EventId, RunOptions, Store, StoreError, Workflow, adapter::Claim,
};
use uuid::Uuid;

use super::{Index, Platform, session_log};
use crate::chat::{self, ChatAgent, ChatState};
use crate::error::PlatformError;
use crate::messages::{NewMessage, SessionMessage, project};
use crate::resources::{AgentStatus, ProviderRecord};

/// The sessions whose turns this process runs, each with the token that cancels its turn.
pub(super) type Running = Arc<Mutex<HashMap<Uuid, CancellationToken>>>;

/// The right to run one session's turn here, released (in this process and in the store)
/// when dropped.
struct TurnClaim {
    local: LocalClaim,
    _store: Claim,
}

/// What a turn of a session needs, read from the index: the agent's prompt and capabilities,
/// and the model (with its provider row) the message, session or agent chose.
struct TurnPlan {
    system_prompt: String,
    model: Option<(String, Option<ProviderRecord>)>,
    capabilities: Vec<String>,
}

impl Index {
    /// The plan of a turn of session `id` of `agent`, asking `wanted` if given, else the
    /// session's model, the agent's, or the default provider's default model.
    fn turn_plan(
        &self,
        agent: Uuid,
        id: Uuid,
        wanted: Option<Uuid>,
    ) -> Result<TurnPlan, PlatformError> {
        let session = self.session(agent, id)?;
        let owner = self.agent(agent)?;
        let chosen = wanted.or(session.model_id).or(owner.default_model_id);
        let model = match chosen {
            Some(model) => Some(self.models.get(&model).ok_or_else(|| {
                PlatformError::Invalid(format!("model {model} names no LLM model"))
            })?),
            None => self
                .providers
                .values()
                .find(|p| p.is_default)
                .and_then(|p| {
                    self.models
                        .values()
                        .find(|m| m.provider_id == p.id && m.is_default)
                }),
        };
        let model = model.map(|m| {
            let row = self.providers.get(&m.provider_id).cloned();
            (m.model_id.clone(), row)
        });
        let capabilities = self
            .agent_capabilities
            .get(&agent)
            .map(|list| list.iter().map(|c| c.capability_id.clone()).collect())
            .unwrap_or_default();
        Ok(TurnPlan {
            system_prompt: owner.system_prompt.clone(),
            model,
            capabilities,
        })
    }
}

impl Platform {
    /// Posts a user message: starts a turn of the session's agent-chat workflow and answers
    /// the message once its `user:input` is recorded (durably, before the model is asked);
    /// the turn runs on. A session whose turn runs, here or in another process sharing the
    /// store, is `409 session_busy`. A session whose last turn was cut off (its process
    /// died) is resumed first, then the message is recorded.
    pub async fn post_message(
        &self,
        agent: Uuid,
        id: Uuid,
        new: NewMessage,
    ) -> Result<SessionMessage, PlatformError> {
        let posted = new.posted()?;
        let fields = new.recorded_fields(&posted.images, super::tags("tags", new.tags.clone())?)?;
        let text = posted.text;
        let wanted = new.controls.and_then(|c| c.model_id);
        let log = session_log(id);
        let store = Arc::clone(&self.inner.store);
        // At once, not one after another: the index (as the log's live tail keeps it; caught
        // up from the store only for what it does not hold), the claim, and the session's log.
        // A claim of a session the index then refuses is dropped (released).
        let (plan, claim, info) = tokio::join!(
            self.read_current(|index| {
                index.session(agent, id)?;
                if index.agent(agent)?.status == AgentStatus::Archived {
                    return Err(PlatformError::conflict(
                        "agent_archived",
                        format!("agent {agent} is archived: unarchive it to continue its sessions"),
                    ));
                }
                index.turn_plan(agent, id, wanted)
            }),
            self.claim_turn(id),
            store.session(&log),
        );
        let chat = self.chat(plan?)?;
        let Some(claim) = claim? else {
            return Err(busy(id));
        };
        // Read before the claim was granted: a session whose log said a turn was running (it
        // may have ended since) or that had no log yet is read again, now that it is ours.
        let info = match info? {
            Some(info) if !info.status.is_running() => Some(info),
            _ => store.session(&log).await?,
        };
        let cut_off = info.as_ref().is_some_and(|i| i.status.is_running());
        let len = info.map_or(0, |i| i.count);
        let mut recorded = store.subscribe(&log, len).await?;
        // The id the turn records its `user:input` with, chosen here: the message is answered
        // when the tail delivers that event. The tail may first deliver another `user:input`:
        // one a killed process had sent to the database just before it died, landing after
        // its claim was freed. Answering with that one would acknowledge a message that is
        // never recorded (this turn then finds the session busy).
        let input_id = EventId::new();
        let session = log.clone();
        let mut turn = tokio::spawn(async move {
            let cancel = claim.local.cancel.clone();
            let _claim = claim;
            let outcome = async {
                if cut_off {
                    // Its process died mid-turn: finish that turn from its log first.
                    chat.resume(&session, RunOptions::new().cancel_token(cancel.clone()))
                        .await?;
                }
                let options = RunOptions::new()
                    .cancel_token(cancel)
                    .refuse_if_busy()
                    .input_fields(fields)
                    .input_id(input_id);
                if len == 0 {
                    chat.run(options.session(session).input(text)).await
                } else {
                    chat.send(&session, text, options).await
                }
            }
            .await;
            if let Err(err) = &outcome {
                tracing::warn!(error = %openharness_core::adapter::ErrorChain(err), "a platform session's turn failed");
            }
            outcome.map(|_| ())
        });
        let mut turn_over = false;
        loop {
            tokio::select! {
                item = recorded.next() => match item {
                    Some(Ok(event)) => {
                        if event.event.id == input_id
                            && let Some(message) = project(id, event.seq, &event.event)
                        {
                            return Ok(message);
                        }
                    }
                    Some(Err(err)) => return Err(err.into()),
                    None => return Err(PlatformError::Store(StoreError::Invalid(
                        "the session's live tail ended before the message was recorded".into(),
                    ))),
                },
                ended = &mut turn, if !turn_over => {
                    turn_over = true;
                    match ended {
                        // It may have ended before the tail delivered the input: read on.
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => return Err(err.into()),
                        Err(join) => return Err(PlatformError::Store(StoreError::Invalid(
                            format!("the turn stopped: {join}"),
                        ))),
                    }
                }
            }
        }
    }

    /// Finds the sessions whose last turn was cut off (their log says `running`, nobody holds
    /// their claim: the process running them died) and resumes each from its log, in the
    /// background, holding its claim. Returns the sessions it started resuming.
    ///
    /// ```no_run
    /// # async fn demo(platform: openharness_platform::Platform) -> Result<(), openharness_platform::PlatformError> {
    /// for session in platform.recover().await? {
    ///     println!("resuming {session}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn recover(&self) -> Result<Vec<Uuid>, PlatformError> {
        let sessions: Vec<(Uuid, Uuid)> = self
            .read(|index| {
                index
                    .sessions
                    .values()
                    .map(|s| (s.agent_id, s.id))
                    .collect()
            })
            .await?;
        let store = &self.inner.store;
        let mut resumed = Vec::new();
        for (agent, id) in sessions {
            if self.runs_here(id) {
                continue;
            }
            let log = session_log(id);
            let cut_off = |info: Option<openharness_core::SessionInfo>| {
                info.is_some_and(|i| i.status.is_running())
            };
            if !cut_off(store.session(&log).await?) {
                continue;
            }
            // Its process is alive when its claim is held.
            let Some(claim) = self.claim_turn(id).await? else {
                continue;
            };
            // The turn may have ended between the read and the claim.
            if !cut_off(store.session(&log).await?) {
                continue;
            }
            let chat = match self
                .read(|index| index.turn_plan(agent, id, None))
                .await?
                .and_then(|plan| self.chat(plan))
            {
                Ok(chat) => chat,
                Err(err) => {
                    tracing::warn!(session = %id, error = %err, "a cut-off platform session cannot be resumed");
                    continue;
                }
            };
            tracing::info!(session = %id, "resuming a platform session whose turn was cut off");
            tokio::spawn(async move {
                let options = RunOptions::new().cancel_token(claim.local.cancel.clone());
                let _claim = claim;
                if let Err(err) = chat.resume(&log, options).await {
                    tracing::warn!(session = %id, error = %openharness_core::adapter::ErrorChain(&err), "resuming a platform session failed");
                }
            });
            resumed.push(id);
        }
        Ok(resumed)
    }

    /// Runs [`Platform::recover`] every `every` (and at once) until the returned task is
    /// aborted; failures are logged and the next round tries again. A replica that dies
    /// mid-turn is thereby replaced within about `every` of the database noticing its
    /// connection closed.
    ///
    /// ```no_run
    /// # async fn demo(platform: openharness_platform::Platform) {
    /// let recovery = platform.spawn_recovery(std::time::Duration::from_millis(500));
    /// // … serve …
    /// recovery.abort();
    /// # }
    /// ```
    pub fn spawn_recovery(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let platform = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(err) = platform.recover().await {
                    tracing::warn!(error = %err, "looking for cut-off platform sessions failed");
                }
            }
        })
    }

    /// The agent-chat workflow a turn of `plan` runs.
    fn chat(&self, plan: TurnPlan) -> Result<Workflow<ChatState>, PlatformError> {
        let (provider, model) = match (&self.inner.provider, plan.model) {
            (Some(provider), model) => (Arc::clone(provider), model.map(|(name, _)| name)),
            (None, Some((name, Some(row)))) => (self.row_provider(&row, &name)?, Some(name)),
            (None, _) => return Err(PlatformError::NoProvider),
        };
        Ok(chat::workflow(
            Arc::clone(&self.inner.store),
            provider,
            ChatAgent::new(&plan.system_prompt, model, &plan.capabilities)
                .with_tools(self.mcp_tools(&plan.capabilities)),
        )?)
    }

    /// Whether this process runs a turn of session `id`.
    fn runs_here(&self, id: Uuid) -> bool {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&id)
    }

    /// Cancels the turn of session `id` of `agent` that runs in this process, if one does:
    /// its agents end `interrupted` and the turn records `workflow:completed` with reason
    /// `cancelled` (a `turn.failed` notification with `error_code: cancelled`). Returns whether
    /// a turn was cancelled; a session with no turn running here is left as it is.
    pub async fn cancel(&self, agent: Uuid, id: Uuid) -> Result<bool, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        let token = self
            .inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned();
        Ok(token.is_some_and(|token| {
            token.cancel();
            true
        }))
    }

    /// Claims session `id`'s turns for this process: `None` when a turn of it runs here or
    /// in another process sharing the store.
    async fn claim_turn(&self, id: Uuid) -> Result<Option<TurnClaim>, PlatformError> {
        let cancel = CancellationToken::new();
        {
            let mut running = self
                .inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if running.contains_key(&id) {
                return Ok(None);
            }
            running.insert(id, cancel.clone());
        }
        // From here on, dropping `local` gives the session up in this process.
        let local = LocalClaim {
            running: Arc::clone(&self.inner.running),
            id,
            cancel,
        };
        let claimed = self.inner.store.claim(&session_log(id)).await?;
        Ok(claimed.map(|store| TurnClaim {
            local,
            _store: store,
        }))
    }
}

/// A session taken in this process's set: given up when dropped.
struct LocalClaim {
    running: Running,
    id: Uuid,
    /// Cancels the turn run under this claim.
    cancel: CancellationToken,
}

impl Drop for LocalClaim {
    fn drop(&mut self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

/// The answer to a message posted while a turn of the session runs.
fn busy(id: Uuid) -> PlatformError {
    PlatformError::conflict(
        "session_busy",
        format!(
            "session {id} is running a turn (in this process or another sharing the store): post when it has ended"
        ),
    )
}
