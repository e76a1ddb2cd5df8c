//! Turns of platform sessions. Every platform session is a session of the one agent-chat
//! workflow registered in the platform's host ([`Platform::host`]), and the host runs its
//! turns: a message is [`Host::start`](openharness_host::Host::start)ed with what this
//! platform's index says the turn needs ([`TurnPlan`]: the agent's instructions with its
//! capabilities' additions, the model the message, session or agent chose, the tools of its
//! capabilities and the provider that serves that model), given to the agent as
//! [`AgentSettings`]. The host claims the session through the store (on PostgreSQL a fenced
//! advisory lock the database frees when its holder dies), runs a session's turns one after
//! another, answers a message once its `user:input` is durably recorded, and resumes what a
//! crash cut off (asking this platform for those turns' options too, through
//! [`Platform::turn_options`]). Resuming never asks a model again for a response that is
//! recorded: only calls cut off before their `agent:completed` run again.

use std::sync::Arc;

use openharness_core::builtin::SessionForked;
use openharness_core::{AgentSettings, BusyPolicy, RunOptions, SessionId, StoreError};
use openharness_host::TurnStart;
use uuid::Uuid;

use super::{Index, Platform, session_log};
use crate::chat::{ChatAgent, WORKFLOW_NAME};
use crate::error::PlatformError;
use crate::messages::{NewMessage, SessionMessage, project};
use crate::resources::{AgentStatus, ProviderRecord};
use openharness_core::Agent as _;

/// How many forks deep a session's platform ancestor is looked for (deeper is taken for a
/// cycle).
const MAX_FORK_DEPTH: usize = 64;

/// What a turn of a session needs, read from the index: the agent's prompt and capabilities,
/// and the model (with its provider row) the message, session or agent chose.
pub(super) struct TurnPlan {
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
        self.post_message_on_busy(agent, id, new, BusyPolicy::Reject)
            .await
    }

    /// [`Platform::post_message`], with what the message gets while a turn runs on the
    /// session (`reject` is `409 session_busy`; `enqueue`, `interrupt`, `rollback` and `steer`
    /// record it at once as `input:queued`, which is then the message: its id and sequence).
    ///
    /// ```no_run
    /// # async fn demo(platform: openharness_platform::Platform, agent: uuid::Uuid, session: uuid::Uuid, new: openharness_platform::NewMessage) -> Result<(), openharness_platform::PlatformError> {
    /// use openharness_core::BusyPolicy;
    /// let message = platform.post_message_on_busy(agent, session, new, BusyPolicy::Enqueue).await?;
    /// println!("recorded at {}", message.sequence);
    /// # Ok(()) }
    /// ```
    pub async fn post_message_on_busy(
        &self,
        agent: Uuid,
        id: Uuid,
        new: NewMessage,
        policy: BusyPolicy,
    ) -> Result<SessionMessage, PlatformError> {
        let posted = new.posted()?;
        let fields = new.recorded_fields(&posted.images, super::tags("tags", new.tags.clone())?)?;
        let wanted = new.controls.and_then(|c| c.model_id);
        let plan = self
            .read_current(|index| {
                index.session(agent, id)?;
                if index.agent(agent)?.status == AgentStatus::Archived {
                    return Err(PlatformError::conflict(
                        "agent_archived",
                        format!("agent {agent} is archived: unarchive it to continue its sessions"),
                    ));
                }
                index.turn_plan(agent, id, wanted)
            })
            .await?;
        let settings = self.settings(plan)?;
        let log = session_log(id);
        let store = Arc::clone(&self.inner.store);
        let recorded_before = store
            .session(&log)
            .await?
            .is_some_and(|info| info.count > 0);
        let start = if recorded_before {
            TurnStart::Input(posted.text)
        } else {
            TurnStart::New {
                workflow: WORKFLOW_NAME.to_owned(),
                input: Some(posted.text),
            }
        };
        let options = RunOptions::new()
            .input_fields(fields)
            .agent(ChatAgent::NAME, settings)
            .on_busy(policy);
        let started = self.inner.host.start(&log, start, options).await?;
        let recorded = started.recorded.ok_or_else(|| {
            PlatformError::Store(StoreError::Invalid(
                "the message's turn recorded nothing".into(),
            ))
        })?;
        // The message is the recorded event, or right after it the `user:input` of a new
        // session (whose first event is its `workflow:started`).
        let events = store.events(&log, recorded.seq..recorded.seq + 2).await?;
        (recorded.seq..)
            .zip(&events)
            .find_map(|(seq, event)| {
                project(id, seq, event).filter(|m| m.role == crate::messages::MessageRole::User)
            })
            .ok_or_else(|| {
                PlatformError::Store(StoreError::Invalid(format!(
                    "the message recorded at seq {} of session {id} does not read back",
                    recorded.seq
                )))
            })
    }

    /// The options of a turn the host starts by itself on the session logged as `log`
    /// (finishing a cut-off turn, answering a queued message, a fork's turns): the session's
    /// plan as its agent, session and provider rows say now. A fork of a platform session
    /// (made through the native API or the inspector, so not in the index) runs with the
    /// plan of the platform session it descends from.
    pub(crate) async fn turn_options(&self, log: &SessionId) -> Result<RunOptions, PlatformError> {
        let not_found = || PlatformError::NotFound {
            kind: "session",
            id: log.to_string(),
        };
        let mut current = log.clone();
        for _ in 0..MAX_FORK_DEPTH {
            let id = Uuid::parse_str(current.as_str()).map_err(|_| not_found())?;
            let plan = self
                .read(|index| {
                    let agent = index.sessions.get(&id).map(|session| session.agent_id)?;
                    Some(index.turn_plan(agent, id, None))
                })
                .await?;
            if let Some(plan) = plan {
                return Ok(RunOptions::new().agent(ChatAgent::NAME, self.settings(plan?)?));
            }
            current = self.forked_from(&current).await?.ok_or_else(not_found)?;
        }
        Err(not_found())
    }

    /// The session `log` is forked from, when its first event is a `session:forked`.
    async fn forked_from(&self, log: &SessionId) -> Result<Option<SessionId>, PlatformError> {
        let first = self.inner.store.events(log, 0..1).await?;
        Ok(first
            .first()
            .and_then(|event| event.decode::<SessionForked>().ok())
            .map(|forked| forked.parent))
    }

    /// What the assistant of a turn of `plan` is given: the agent's instructions, model,
    /// tools, and the provider that serves the model.
    fn settings(&self, plan: TurnPlan) -> Result<AgentSettings, PlatformError> {
        let (provider, model) = match (&self.inner.provider, plan.model) {
            (Some(provider), model) => (Arc::clone(provider), model.map(|(name, _)| name)),
            (None, Some((name, Some(row)))) => (self.row_provider(&row, &name)?, Some(name)),
            (None, _) => return Err(PlatformError::NoProvider),
        };
        let assistant = ChatAgent::new(&plan.system_prompt, model.clone(), &plan.capabilities);
        let mut tools = openharness_core::Agent::tools(&assistant);
        tools.extend(self.mcp_tools(&plan.capabilities));
        let mut settings = AgentSettings::new()
            .system(assistant.system_prompt())
            .tools(tools)
            .provider(provider);
        if let Some(model) = model {
            settings = settings.model(model);
        }
        Ok(settings)
    }

    /// Cancels the turn of session `id` of `agent` that runs in this process, if one does:
    /// `stop:requested` is recorded, its agents end `interrupted` and the turn records
    /// `workflow:completed` with reason `cancelled` (a `turn.failed` notification with
    /// `error_code: cancelled`). Returns whether a turn was cancelled; a session with no turn
    /// running here is left as it is.
    pub async fn cancel(&self, agent: Uuid, id: Uuid) -> Result<bool, PlatformError> {
        self.read(|index| index.session(agent, id).map(|_| ()))
            .await??;
        Ok(self.inner.host.cancel(&session_log(id)).await)
    }

    /// Whether this process runs a turn of session `id`.
    pub(super) fn runs_here(&self, id: Uuid) -> bool {
        self.inner.host.is_running(&session_log(id))
    }
}
