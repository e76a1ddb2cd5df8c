//! What a protocol request names as its agent (an Open Responses `model`, an AG-UI path, an
//! A2A card), resolved the same way by all three: a served workflow by its name, or, with a
//! platform (feature `platform`), a `/v1` agent — `agent:<name-or-id>`, or a plain name that is
//! no workflow but names one active agent, or its id (a UUID, or `agent_` and 32 hex digits).
//!
//! A workflow's new session starts under the workflow's name; an agent's is first made a
//! session of that agent in the platform's index ([`Platform::start_session`]), so the host
//! gives every one of its turns the agent's model, instructions, tools and provider, whichever
//! surface starts it.
//!
//! [`Platform::start_session`]: openharness_platform::Platform::start_session

use openharness_core::SessionId;

use crate::AppState;
use crate::error::ApiError;

/// The prefix that names a `/v1` agent explicitly (`agent:support`, `agent:<uuid>`).
pub(crate) const AGENT_PREFIX: &str = "agent:";

/// A resolved target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A registered workflow, by name.
    Workflow(String),
    /// A `/v1` agent of the platform.
    #[cfg(feature = "platform")]
    Agent {
        /// Its id.
        id: uuid::Uuid,
        /// Its name.
        name: String,
    },
}

impl Target {
    /// The workflow its sessions run.
    pub(crate) fn workflow(&self) -> &str {
        match self {
            Self::Workflow(name) => name,
            #[cfg(feature = "platform")]
            Self::Agent { .. } => openharness_platform::WORKFLOW_NAME,
        }
    }

    /// Whether `session`, recorded by `workflow`, is a session of this target: a workflow's
    /// by its name, an agent's when the platform lists it as that agent's (or it forks one).
    pub(crate) async fn owns(
        &self,
        state: &AppState,
        session: &SessionId,
        workflow: Option<&str>,
    ) -> Result<(), ApiError> {
        #[cfg(not(feature = "platform"))]
        let _ = state;
        let recorded = workflow.unwrap_or_default();
        match self {
            Self::Workflow(name) if name == recorded => Ok(()),
            Self::Workflow(name) => Err(ApiError::bad_request(format!(
                "session {session} runs workflow `{recorded}`, not `{name}`"
            ))),
            #[cfg(feature = "platform")]
            Self::Agent { id, name } => {
                let owner = match (
                    &state.options.platform,
                    uuid::Uuid::parse_str(session.as_str()),
                ) {
                    (Some(platform), Ok(uuid)) => platform.agent_of_session(uuid).await.ok(),
                    _ => None,
                };
                match owner {
                    Some(owner) if owner == *id => Ok(()),
                    // A fork of an agent's session (made through the native API or the
                    // inspector) runs as the agent-chat workflow it forked.
                    None if recorded == openharness_platform::WORKFLOW_NAME => Ok(()),
                    _ => Err(ApiError::bad_request(format!(
                        "session {session} is not a session of agent `{name}` ({id})"
                    ))),
                }
            }
        }
    }

    /// A new session of this target: `wanted` when the client chose its id, else a new id.
    pub(crate) async fn new_session(
        &self,
        state: &AppState,
        wanted: Option<SessionId>,
    ) -> Result<SessionId, ApiError> {
        #[cfg(not(feature = "platform"))]
        let _ = state;
        match self {
            Self::Workflow(_) => Ok(wanted.unwrap_or_default()),
            #[cfg(feature = "platform")]
            Self::Agent { id, name } => {
                let platform = platform(state)?;
                let chosen = match &wanted {
                    Some(session) => Some(uuid::Uuid::parse_str(session.as_str()).map_err(|_| {
                        ApiError::bad_request(format!(
                            "`{session}` cannot be a session of agent `{name}`: an agent's sessions are UUIDs"
                        ))
                    })?),
                    None => None,
                };
                Ok(platform.start_session(*id, chosen).await?)
            }
        }
    }
}

/// Whether sessions of `workflow` take client tools ([`openharness_core::ClientTool`]): the
/// platform's agent chat does, its conversation keeping the calls and the outputs the client
/// sends back; a workflow's own code knows nothing of tools it did not declare.
pub(crate) fn runs_client_tools(workflow: &str) -> bool {
    #[cfg(feature = "platform")]
    {
        workflow == openharness_platform::WORKFLOW_NAME
    }
    #[cfg(not(feature = "platform"))]
    {
        let _ = workflow;
        false
    }
}

/// The calls of client tools in `events` that no `user:input` has brought the result of yet.
pub(crate) fn open_client_calls(events: &[openharness_core::Envelope]) -> Vec<String> {
    use openharness_core::builtin::{Builtin, ToolCalled, UserInput};
    let mut open = Vec::new();
    for event in events {
        match Builtin::decode(event) {
            Some(Ok(Builtin::ToolCalled(ToolCalled {
                client: true,
                tool_call_id,
                ..
            }))) => {
                open.push(tool_call_id);
            }
            Some(Ok(Builtin::UserInput(UserInput { tool_results, .. }))) => {
                open.retain(|id| !tool_results.iter().any(|r| r.tool_call_id == *id));
            }
            _ => {}
        }
    }
    open
}

#[cfg(feature = "platform")]
fn platform(state: &AppState) -> Result<&openharness_platform::Platform, ApiError> {
    state
        .options
        .platform
        .as_ref()
        .ok_or_else(|| ApiError::not_found("this server serves no `/v1` agents"))
}

/// The target `name` names (`404` naming what is served otherwise).
pub(crate) async fn resolve(state: &AppState, name: &str) -> Result<Target, ApiError> {
    let workflows = state.host.workflow_names();
    let explicit = name.strip_prefix(AGENT_PREFIX);
    if explicit.is_none() && workflows.iter().any(|workflow| workflow == name) {
        return Ok(Target::Workflow(name.to_owned()));
    }
    #[cfg(feature = "platform")]
    if let Some(platform) = &state.options.platform {
        let wanted = explicit.unwrap_or(name);
        let agents = platform
            .agents(Some(openharness_platform::AgentStatus::Active))
            .await?;
        let by_id = openharness_platform::everruns::agent_id(wanted);
        let named: Vec<_> = agents
            .iter()
            .filter(|agent| Some(agent.id) == by_id || agent.name == wanted)
            .collect();
        match named.as_slice() {
            [agent] => {
                return Ok(Target::Agent {
                    id: agent.id,
                    name: agent.name.clone(),
                });
            }
            [] => {}
            several => {
                return Err(ApiError::bad_request(format!(
                    "{} active agents are named `{wanted}`: name one by its id (`agent:<id>`)",
                    several.len()
                )));
            }
        }
    }
    if name.is_empty() {
        return Err(ApiError::not_found(format!(
            "no target named: this server serves its workflows ({}){}",
            workflows.join(", "),
            if cfg!(feature = "platform") {
                ", and its `/v1` agents as `agent:<name-or-id>`"
            } else {
                ""
            }
        )));
    }
    let agents = if cfg!(feature = "platform") {
        ", and its `/v1` agents as `agent:<name-or-id>`"
    } else {
        ""
    };
    Err(ApiError::not_found(format!(
        "`{name}` is not served here: this server serves its workflows ({}){agents}",
        workflows.join(", ")
    )))
}
