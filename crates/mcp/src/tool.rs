//! [`McpTool`], one server tool as an agent [`Tool`] ([`McpClient::tools`] gives them all),
//! and [`toolset`], which combines native tools and several servers' tools under names that
//! do not clash.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::{Tool, ToolError};
use serde_json::Value;

use crate::client::{McpClient, ToolInfo};

/// A tool of an MCP server, offered to an agent's model under `name` (the server's own name
/// for it, or `<server>_<tool>` when [`toolset`] had to prefix it). Its calls are recorded
/// with the server's name (`tool:called`'s `server`); replays, cassettes and a fork's prefix
/// read results from the log and never call it.
pub struct McpTool {
    client: McpClient,
    name: String,
    info: ToolInfo,
}

impl McpTool {
    pub(crate) fn new(client: McpClient, name: String, info: ToolInfo) -> Self {
        Self { client, name, info }
    }

    /// The name the server calls it by.
    pub fn remote_name(&self) -> &str {
        &self.info.name
    }
}

impl McpClient {
    /// The server's tools as agent tools, under the names the server gives them. Use
    /// [`toolset`](crate::toolset) to combine several servers and native tools with clashing
    /// names prefixed.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.listed()
            .into_iter()
            .map(|info| Arc::new(McpTool::new(self.clone(), info.name.clone(), info)) as _)
            .collect()
    }
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.client.name())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn input_schema(&self) -> Value {
        // The schema as last listed: a `tools/list_changed` that changed it is seen here.
        self.client
            .tool_info(&self.info.name)
            .map_or_else(|| self.info.input_schema.clone(), |info| info.input_schema)
    }

    async fn call(&self, input: Value) -> Result<Value, ToolError> {
        self.client.call(&self.info.name, input).await
    }

    fn server(&self) -> Option<&str> {
        Some(self.client.name())
    }
}

/// Native tools and every tool of `servers`, for an agent's `tools()`: names that two sources
/// share are prefixed with the server's name (`<server>_<tool>`; a native tool keeps its name).
///
/// ```
/// use openharness_core::{FnTool, Tool};
/// use openharness_mcp::toolset;
/// use std::sync::Arc;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
/// let echo: Arc<dyn Tool> = Arc::new(FnTool::new("echo", "Repeats.", |a: Echo| async move { Ok::<_, String>(a.text) }));
/// // With servers connected by `McpClient::connect`, their tools join; here there are none.
/// let tools = toolset(vec![echo], &[]);
/// assert_eq!(tools.len(), 1);
/// ```
pub fn toolset(native: Vec<Arc<dyn Tool>>, servers: &[McpClient]) -> Vec<Arc<dyn Tool>> {
    let mut offered: HashMap<String, usize> = HashMap::new();
    for name in native.iter().map(|t| t.name().to_owned()).chain(
        servers
            .iter()
            .flat_map(|s| s.listed().into_iter().map(|t| t.name)),
    ) {
        *offered.entry(name).or_default() += 1;
    }
    let mut tools = native;
    for server in servers {
        for info in server.listed() {
            let name = if offered.get(&info.name).copied().unwrap_or(0) > 1 {
                format!("{}_{}", server.name(), info.name)
            } else {
                info.name.clone()
            };
            tools.push(Arc::new(McpTool::new(server.clone(), name, info)));
        }
    }
    tools
}
