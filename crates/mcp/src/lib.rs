//! MCP tools for Open Harness agents, on the official Rust SDK (`rmcp`).
//!
//! Configure a server ([`McpServer`]: a command for stdio, or a Streamable HTTP URL with
//! headers or a bearer token), connect it ([`McpClient::connect`]), and hand its tools to an
//! agent ([`McpClient::tools`], or [`toolset`] to mix several servers with native tools). The
//! model calls them like native tools; every call is recorded as `tool:called` (with the
//! server's name) and `tool:result`, so a replay, a cassette re-execution or a fork's prefix
//! reads the results from the log and never contacts the server.
//!
//! A server that dies, hangs past its call timeout, returns an error or a malformed result
//! gives the agent an error result naming the server and the reason; a server that cannot be
//! started or reached is an [`McpError`]. `notifications/tools/list_changed` re-lists the
//! tools: a removed tool answers that it is gone, a changed schema is offered from the next
//! request, and new tools are in [`McpClient::tools`] for agents built afterwards.
//!
//! # Modules
//!
//! - `config`: [`McpServer`], how to reach one server, built in Rust or read from TOML or JSON.
//! - `client`: [`McpClient`], one connected server, its tool list kept current.
//! - `tool`: [`McpTool`], a server's tool as an agent's tool, and [`toolset`].
//! - `output`: a tool call's MCP result as the JSON the model reads and the log records.
//! - `error`: [`McpError`], why a server could not be configured, started or reached.
//! - `serve` (feature `serve`): the store served over MCP to coding assistants (`mcp serve`).
//!
//! ```no_run
//! use openharness_mcp::{McpClient, McpServer};
//!
//! # async fn example() -> Result<(), openharness_mcp::McpError> {
//! let server = McpServer::stdio("everything", "npx").arg("-y").arg("@modelcontextprotocol/server-everything");
//! let client = McpClient::connect(&server).await?;
//! // An agent offers them from `Agent::tools` (`fn tools(&self) -> Vec<Arc<dyn Tool>>`):
//! let tools = client.tools();
//! assert!(tools.iter().any(|tool| tool.name() == "echo"));
//! # Ok(()) }
//! ```

mod client;
mod config;
mod error;
mod output;
#[cfg(feature = "serve")]
pub mod serve;
mod tool;

pub use client::{McpClient, ToolInfo};
pub use config::{DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpServer, McpTransport};
pub use error::McpError;
pub use tool::{McpTool, toolset};
