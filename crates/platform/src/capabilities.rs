//! The built-in capability registry: `noop` and `current_time` are available; `research`,
//! `sandbox` and `file_system` are announced as coming soon and cannot be given to agents yet.
//! A platform started with MCP servers adds one capability per server, `mcp:<name>`
//! ([`mcp_capability`]).

use openharness_mcp::McpClient;

use crate::resources::{Capability, CapabilityStatus};

/// The prefix of an MCP server's capability id: `mcp:<server name>`.
pub const MCP_PREFIX: &str = "mcp:";

/// The capability of an MCP server: id `mcp:<name>`, its tools as the server last listed them.
pub fn mcp_capability(server: &McpClient) -> Capability {
    let tools: Vec<String> = server.listed().into_iter().map(|tool| tool.name).collect();
    let identity = server
        .server_info()
        .map(|(name, version)| format!(" ({name} {version})"))
        .unwrap_or_default();
    Capability {
        id: format!("{MCP_PREFIX}{}", server.name()),
        name: format!("MCP: {}", server.name()),
        description: format!(
            "The tools of the MCP server `{}`{identity}: {}.",
            server.name(),
            tools.join(", ")
        ),
        status: CapabilityStatus::Available,
        system_prompt_addition: None,
        tools,
    }
}

/// Every capability the platform knows, in the order `GET /v1/capabilities` lists them.
///
/// ```
/// use openharness_platform::{CapabilityStatus, capabilities};
/// let all = capabilities();
/// let available: Vec<&str> = all
///     .iter()
///     .filter(|c| c.status == CapabilityStatus::Available)
///     .map(|c| c.id.as_str())
///     .collect();
/// assert_eq!(available, ["noop", "current_time"]);
/// ```
pub fn capabilities() -> Vec<Capability> {
    let capability = |id: &str,
                      name: &str,
                      description: &str,
                      status,
                      addition: Option<&str>,
                      tools: &[&str]| Capability {
        id: id.to_owned(),
        name: name.to_owned(),
        description: description.to_owned(),
        status,
        system_prompt_addition: addition.map(str::to_owned),
        tools: tools.iter().map(|tool| (*tool).to_owned()).collect(),
    };
    use CapabilityStatus::{Available, ComingSoon};
    vec![
        capability(
            "noop",
            "No-op",
            "Does nothing: for trying capabilities out.",
            Available,
            None,
            &[],
        ),
        capability(
            "current_time",
            "Current time",
            "Lets the agent read the current date and time (UTC).",
            Available,
            Some("You can call the `current_time` tool to learn the current date and time in UTC."),
            &["current_time"],
        ),
        capability(
            "research",
            "Research",
            "Searches the web and reads pages.",
            ComingSoon,
            None,
            &[],
        ),
        capability(
            "sandbox",
            "Sandbox",
            "Runs code in an isolated sandbox.",
            ComingSoon,
            None,
            &[],
        ),
        capability(
            "file_system",
            "File system",
            "Reads and writes files in the session's workspace.",
            ComingSoon,
            None,
            &[],
        ),
    ]
}

/// The capability with this id, if the registry has it.
pub fn capability(id: &str) -> Option<Capability> {
    capabilities().into_iter().find(|c| c.id == id)
}
