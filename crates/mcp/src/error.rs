//! [`McpError`]: why a server could not be configured, started or reached. Failures of a
//! single tool call are not errors of this kind: the agent sees them as error results.

use std::time::Duration;

/// Why a server could not be configured, started, reached or listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's configuration is unusable.
    #[error("MCP server `{server}`: {message}")]
    Config {
        /// The server's name.
        server: String,
        /// What is wrong.
        message: String,
    },
    /// Its command could not be started.
    #[error("MCP server `{server}`: `{command}` could not be started: {source}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The command.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The MCP handshake failed (the server exited, refused, or spoke something else).
    #[error("MCP server `{server}` could not be connected: {message}")]
    Connect {
        /// The server's name.
        server: String,
        /// What happened, with the end of the server's stderr for a stdio server.
        message: String,
    },
    /// Starting or answering took longer than allowed.
    #[error("MCP server `{server}` did not answer {what} within {after:?}")]
    Timeout {
        /// The server's name.
        server: String,
        /// What it was asked.
        what: String,
        /// The limit.
        after: Duration,
    },
    /// A request failed after the handshake.
    #[error("MCP server `{server}`: {what} failed: {message}")]
    Request {
        /// The server's name.
        server: String,
        /// What it was asked.
        what: String,
        /// Why.
        message: String,
    },
}
