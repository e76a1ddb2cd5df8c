//! What the fields the official Everruns SDKs send (`everruns-sdk` on PyPI, tested with 0.3.1)
//! mean to the platform's domain: an agent's id spelt `agent_<32 hex>`, the one harness
//! (`agent-chat`), and the extras the SDK sends on every create (`capabilities`, `tools`,
//! `initial_files`), accepted when they ask for nothing this platform cannot honour and refused
//! with [`PlatformError::Invalid`] naming them otherwise.
//!
//! The wire half of the compatibility (the routes the SDK calls, the shapes its models read,
//! its bare-key `Authorization`) is the `/v1` module of `openharness-server`.

use uuid::Uuid;

use crate::chat::WORKFLOW_NAME;
use crate::error::PlatformError;
use crate::requests::{NewAgent, NewSession};

/// The harness every agent and session here has: the agent-chat workflow.
pub const HARNESS: &str = WORKFLOW_NAME;

/// The one organization of a server.
pub const ORGANIZATION: &str = "default";

/// An agent's id as written: a UUID, or `agent_` and its 32 hex digits (the Everruns spelling,
/// as `generate_agent_id()` makes them).
///
/// ```
/// use openharness_platform::everruns::agent_id;
/// let id = agent_id("agent_0192f1a4c7b37c0d9e8f001122334455");
/// assert_eq!(id, agent_id("0192f1a4-c7b3-7c0d-9e8f-001122334455"));
/// assert!(id.is_some());
/// assert_eq!(agent_id("agent_42"), None);
/// ```
pub fn agent_id(text: &str) -> Option<Uuid> {
    let text = text.trim();
    match text.strip_prefix("agent_") {
        Some(hex) if hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Uuid::try_parse(hex).ok()
        }
        Some(_) => None,
        None => Uuid::try_parse(text).ok(),
    }
}

/// Refuses what a new agent asks for that this server cannot honour (see the module docs).
pub(crate) fn check_agent_extras(new: &NewAgent) -> Result<(), PlatformError> {
    unsupported(&new.tools, &new.initial_files)?;
    harness(new.harness_id.as_deref(), new.harness_name.as_deref())?;
    for capability in &new.capabilities {
        if capability.config.as_ref().is_some_and(|c| !c.is_null()) {
            return Err(PlatformError::Invalid(format!(
                "capability {:?} has a `config`: the capabilities here take none",
                capability.id
            )));
        }
    }
    Ok(())
}

/// Refuses what a new session asks for that this server cannot honour.
pub(crate) fn check_session_extras(new: &NewSession) -> Result<(), PlatformError> {
    unsupported(&new.tools, &new.initial_files)?;
    harness(new.harness_id.as_deref(), new.harness_name.as_deref())?;
    if let Some(first) = new.capabilities.first() {
        return Err(PlatformError::Invalid(format!(
            "`capabilities`: sessions here have their agent's capabilities and no others, so {:?} cannot be added; give it to the agent (PUT /v1/agents/{{id}}/capabilities)",
            first.id
        )));
    }
    Ok(())
}

fn unsupported(
    tools: &[serde_json::Value],
    initial_files: &[serde_json::Value],
) -> Result<(), PlatformError> {
    if !tools.is_empty() {
        return Err(PlatformError::Invalid(
            "`tools`: this server runs no client-side tools; send `tools: []` (an agent's tools come from its capabilities)".into(),
        ));
    }
    if !initial_files.is_empty() {
        return Err(PlatformError::Invalid(
            "`initial_files`: sessions here have no file system; send `initial_files: []`".into(),
        ));
    }
    Ok(())
}

fn harness(id: Option<&str>, name: Option<&str>) -> Result<(), PlatformError> {
    for (field, value) in [("harness_id", id), ("harness_name", name)] {
        if let Some(value) = value
            && value != HARNESS
        {
            return Err(PlatformError::Invalid(format!(
                "`{field}` {value:?}: the only harness here is {HARNESS:?} (leave it out)"
            )));
        }
    }
    Ok(())
}
