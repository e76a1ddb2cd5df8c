//! [`McpServer`]: how to reach one MCP server — a command to start (stdio) or a Streamable
//! HTTP URL with headers or a bearer token — and how long to wait for it. Built in Rust or
//! read from TOML/JSON (`[[mcp]]` tables in the CLI's and the platform's configuration).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::McpError;

/// How long a tool call may take unless the server's configuration says otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long starting a server and the MCP handshake may take unless configured otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// One MCP server an agent can take tools from.
///
/// Its `name` is its identity: it is recorded on every `tool:called` of its tools, prefixes
/// its tools' names when two sources offer the same name, and names it in errors.
///
/// ```
/// use openharness_mcp::{McpServer, McpTransport};
/// use std::time::Duration;
///
/// let files = McpServer::stdio("files", "npx")
///     .arg("-y")
///     .arg("@modelcontextprotocol/server-filesystem")
///     .env("LOG_LEVEL", "warn")
///     .call_timeout(Duration::from_secs(10));
/// assert!(matches!(files.transport(), McpTransport::Stdio { .. }));
///
/// let docs = McpServer::http("docs", "https://mcp.example.com/mcp").bearer_token("s3cret");
/// assert_eq!(docs.name(), "docs");
///
/// // The same from TOML, as the CLI reads it (`bearer_token_env` names a variable instead of
/// // putting the secret in the file):
/// let toml = r#"
/// name = "docs"
/// url = "https://mcp.example.com/mcp"
/// headers = { "X-Team" = "research" }
/// call_timeout_secs = 20
/// "#;
/// let parsed: McpServer = toml::from_str(toml).unwrap();
/// assert_eq!(parsed.call_timeout_value(), Duration::from_secs(20));
///
/// // A server with both a command and a URL (or neither) is refused with the reason:
/// let both = toml::from_str::<McpServer>("name = \"x\"\ncommand = \"a\"\nurl = \"http://127.0.0.1:1/mcp\"");
/// assert!(both.unwrap_err().to_string().contains("either `command` or `url`"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "ServerFile", into = "ServerFile")]
pub struct McpServer {
    name: String,
    transport: McpTransport,
    call_timeout: Duration,
    connect_timeout: Duration,
}

/// How the client reaches a server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking MCP on its standard input and output.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Environment variables added to this process's.
        env: BTreeMap<String, String>,
        /// The working directory (this process's when `None`).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request.
        headers: BTreeMap<String, String>,
        /// Sent as `Authorization: Bearer …`.
        bearer_token: Option<String>,
    },
}

impl McpServer {
    /// A server started as `command` (stdio transport).
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server reached at `url` (Streamable HTTP transport).
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Self::with_transport(
            name,
            McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                bearer_token: None,
            },
        )
    }

    fn with_transport(name: impl Into<String>, transport: McpTransport) -> Self {
        Self {
            name: name.into(),
            transport,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// Adds an argument to a stdio server's command (no effect on an HTTP server).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        if let McpTransport::Stdio { args, .. } = &mut self.transport {
            args.push(arg.into());
        }
        self
    }

    /// Sets an environment variable of a stdio server (no effect on an HTTP server).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets a stdio server's working directory (no effect on an HTTP server).
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request to an HTTP server (no effect on a stdio server).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` to an HTTP server (no effect on a stdio server).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        if let McpTransport::Http { bearer_token, .. } = &mut self.transport {
            *bearer_token = Some(token.into());
        }
        self
    }

    /// How long one tool call may take before the agent sees a timeout error (default
    /// [`DEFAULT_CALL_TIMEOUT`]).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How long starting the server and the MCP handshake may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How it is reached.
    pub fn transport(&self) -> &McpTransport {
        &self.transport
    }

    /// The tool-call timeout.
    pub fn call_timeout_value(&self) -> Duration {
        self.call_timeout
    }

    /// The connect timeout.
    pub fn connect_timeout_value(&self) -> Duration {
        self.connect_timeout
    }
}

/// The file form of [`McpServer`]: exactly one of `command` and `url`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ServerFile {
    /// The server's name: recorded on its tools' calls, and their prefix on a name clash.
    name: String,
    /// A program to start (stdio transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    /// The program's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    /// Environment variables for the program.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    /// The program's working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<PathBuf>,
    /// A Streamable HTTP endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// Headers sent with every HTTP request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    /// A bearer token, sent as `Authorization: Bearer …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bearer_token: Option<String>,
    /// The environment variable holding the bearer token (read when the file is read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bearer_token_env: Option<String>,
    /// Seconds one tool call may take (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    call_timeout_secs: Option<f64>,
    /// Seconds starting the server and the handshake may take (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    connect_timeout_secs: Option<f64>,
}

impl TryFrom<ServerFile> for McpServer {
    type Error = McpError;

    fn try_from(file: ServerFile) -> Result<Self, McpError> {
        let config = |message: String| McpError::Config {
            server: file.name.clone(),
            message,
        };
        if file.name.is_empty() {
            return Err(config("a server needs a `name`".into()));
        }
        let seconds = |field: &str, value: Option<f64>, default: Duration| match value {
            None => Ok(default),
            Some(secs) => Duration::try_from_secs_f64(secs)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| config(format!("`{field}` must be a positive number of seconds"))),
        };
        let call_timeout = seconds(
            "call_timeout_secs",
            file.call_timeout_secs,
            DEFAULT_CALL_TIMEOUT,
        )?;
        let connect_timeout = seconds(
            "connect_timeout_secs",
            file.connect_timeout_secs,
            DEFAULT_CONNECT_TIMEOUT,
        )?;
        let transport = match (&file.command, &file.url) {
            (Some(command), None) => {
                if !file.headers.is_empty()
                    || file.bearer_token.is_some()
                    || file.bearer_token_env.is_some()
                {
                    return Err(config(
                        "`headers` and bearer tokens are for a `url` server, not a `command`"
                            .into(),
                    ));
                }
                McpTransport::Stdio {
                    command: command.clone(),
                    args: file.args.clone(),
                    env: file.env.clone(),
                    cwd: file.cwd.clone(),
                }
            }
            (None, Some(url)) => {
                if !file.args.is_empty() || !file.env.is_empty() || file.cwd.is_some() {
                    return Err(config(
                        "`args`, `env` and `cwd` are for a `command` server, not a `url`".into(),
                    ));
                }
                let bearer_token = match (&file.bearer_token, &file.bearer_token_env) {
                    (Some(_), Some(_)) => {
                        return Err(config(
                            "give `bearer_token` or `bearer_token_env`, not both".into(),
                        ));
                    }
                    (Some(token), None) => Some(token.clone()),
                    (None, Some(var)) => Some(std::env::var(var).map_err(|_| {
                        config(format!(
                            "`bearer_token_env` names `{var}`, which is not set"
                        ))
                    })?),
                    (None, None) => None,
                };
                McpTransport::Http {
                    url: url.clone(),
                    headers: file.headers.clone(),
                    bearer_token,
                }
            }
            _ => {
                return Err(config(
                    "a server has either `command` or `url`, exactly one of them".into(),
                ));
            }
        };
        Ok(Self {
            name: file.name,
            transport,
            call_timeout,
            connect_timeout,
        })
    }
}

impl From<McpServer> for ServerFile {
    fn from(server: McpServer) -> Self {
        let file = ServerFile {
            name: server.name,
            call_timeout_secs: Some(server.call_timeout.as_secs_f64()),
            connect_timeout_secs: Some(server.connect_timeout.as_secs_f64()),
            ..ServerFile::default()
        };
        match server.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => ServerFile {
                command: Some(command),
                args,
                env,
                cwd,
                ..file
            },
            McpTransport::Http {
                url,
                headers,
                bearer_token,
            } => ServerFile {
                url: Some(url),
                headers,
                bearer_token,
                ..file
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_stdio_server_round_trips_through_json() {
        let server = McpServer::stdio("files", "node")
            .arg("server.js")
            .env("A", "1")
            .call_timeout(Duration::from_millis(1500));
        let json = serde_json::to_value(&server).unwrap();
        assert_eq!(json["command"], "node");
        assert_eq!(json["call_timeout_secs"], 1.5);
        let back: McpServer = serde_json::from_value(json).unwrap();
        assert_eq!(back, server);
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        for (file, reason) in [
            (r#"{"name":"x"}"#, "either `command` or `url`"),
            (r#"{"name":"","command":"a"}"#, "needs a `name`"),
            (
                r#"{"name":"x","command":"a","headers":{"A":"b"}}"#,
                "are for a `url` server",
            ),
            (
                r#"{"name":"x","url":"http://127.0.0.1:1/mcp","args":["a"]}"#,
                "are for a `command` server",
            ),
            (
                r#"{"name":"x","command":"a","call_timeout_secs":0}"#,
                "positive number of seconds",
            ),
            (
                r#"{"name":"x","command":"a","call_timeout_secs":-3}"#,
                "positive number of seconds",
            ),
            (
                r#"{"name":"x","url":"http://127.0.0.1:1/mcp","bearer_token_env":"OPENHARNESS_TEST_SURELY_UNSET"}"#,
                "which is not set",
            ),
            (r#"{"name":"x","command":"a","colour":"red"}"#, "colour"),
        ] {
            let err = serde_json::from_str::<McpServer>(file).unwrap_err();
            assert!(err.to_string().contains(reason), "{file}: {err}");
        }
    }
}
