//! `openharness mcp`: `tools` lists what an MCP server offers (a server of a config file's
//! `[[mcp]]` tables, or one given on the command line), and `serve` serves the store to a
//! coding assistant over MCP — stdio by default, Streamable HTTP at `/mcp` with `--addr`
//! (feature `server`; API keys as for `serve`); read-only unless `--allow-writes`.

use std::io::Write;
#[cfg(feature = "server")]
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
#[cfg(feature = "server")]
use openharness_mcp::serve::http_service;
use openharness_mcp::serve::{ServeOptions, serve_stdio};
use openharness_mcp::{McpClient, McpServer};
use serde::Deserialize;
use serde_json::json;

use crate::{CliError, Context, Output};

/// `mcp …`
#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// List the tools an MCP server offers: a server of `--config`'s `[[mcp]]` tables (all of
    /// them without `--server`), `--url URL`, or a command after `--`.
    Tools(ToolsArgs),
    /// Serve this store to a coding assistant over MCP: list and search sessions, read events
    /// and states, diff two sessions; with `--allow-writes` also start runs, send input,
    /// answer requests and fork. Over stdio, or Streamable HTTP at `/mcp` with `--addr`.
    Serve(ServeArgs),
}

/// Which server(s) `mcp tools` asks.
#[derive(Debug, Args)]
pub(crate) struct ToolsArgs {
    /// A TOML file with `[[mcp]]` tables (name, then `command`/`args`/`env` or `url`/`headers`/
    /// `bearer_token_env`, and `call_timeout_secs`).
    #[arg(long)]
    config: Option<PathBuf>,
    /// The server of `--config` to ask (all of them when absent).
    #[arg(long, requires = "config")]
    server: Option<String>,
    /// A Streamable HTTP server's URL.
    #[arg(long, conflicts_with = "config")]
    url: Option<String>,
    /// A header for `--url`, as `Name: value` (repeatable).
    #[arg(long, requires = "url")]
    header: Vec<String>,
    /// The environment variable holding a bearer token for `--url`.
    #[arg(long, requires = "url")]
    bearer_token_env: Option<String>,
    /// Print JSON: one object per server with its identity and tools (name, title,
    /// description, input schema).
    #[arg(long)]
    json: bool,
    /// A stdio server's command and arguments, after `--`.
    #[arg(last = true, conflicts_with_all = ["config", "url"])]
    command: Vec<String>,
}

/// How `mcp serve` serves.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Serve Streamable HTTP at `http://ADDR/mcp` instead of stdio. An address other machines
    /// can reach needs API keys (or `--insecure-no-auth`).
    #[arg(long)]
    #[cfg(feature = "server")]
    addr: Option<SocketAddr>,
    /// A file of API keys, one per line (the key, or `sha256:<hex>` of it); requests then need
    /// `Authorization: Bearer <key>`.
    #[arg(long, env = "OPENHARNESS_API_KEYS_FILE", requires = "addr")]
    #[cfg(feature = "server")]
    api_keys_file: Option<PathBuf>,
    /// Serve without API keys on an address other machines can reach.
    #[arg(long, requires = "addr")]
    #[cfg(feature = "server")]
    insecure_no_auth: bool,
    /// Also offer the tools that run workflows: start_run, send_input, answer_request,
    /// fork_session.
    #[arg(long)]
    allow_writes: bool,
}

impl ServeArgs {
    /// Whether it serves the store read-only (no `--allow-writes`): it then needs recorded
    /// sessions, and never creates a store.
    pub(crate) fn read_only(&self) -> bool {
        !self.allow_writes
    }
}

/// The `[[mcp]]` tables of a config file.
#[derive(Debug, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    mcp: Vec<McpServer>,
}

/// Reads a config file's `[[mcp]]` servers.
pub(crate) fn read_config(path: &Path) -> Result<Vec<McpServer>, CliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| CliError::Usage(format!("cannot read {}: {err}", path.display())))?;
    let file: ConfigFile = toml::from_str(&text)
        .map_err(|err| CliError::Usage(format!("{}: {err}", path.display())))?;
    Ok(file.mcp)
}

/// `mcp tools`: runs before any store is opened (it needs none).
pub(crate) async fn tools(args: ToolsArgs, out: Output) -> Result<(), CliError> {
    let servers = servers_of(&args)?;
    let mut out = out;
    let mut listed = Vec::new();
    for server in &servers {
        let client = McpClient::connect(server).await.map_err(mcp_error)?;
        let tools = client.listed();
        if args.json {
            let identity = client
                .server_info()
                .map(|(name, version)| json!({ "name": name, "version": version }));
            listed.push(
                json!({ "server": client.name(), "implementation": identity, "tools": tools }),
            );
        } else {
            let identity = client
                .server_info()
                .map(|(name, version)| format!(" ({name} {version})"))
                .unwrap_or_default();
            writeln!(out, "{}{identity}: {} tool(s)", client.name(), tools.len())?;
            for tool in &tools {
                let description = tool.description.lines().next().unwrap_or_default();
                writeln!(out, "  {}  {description}", tool.name)?;
                if let Some(args) = arguments(&tool.input_schema) {
                    writeln!(out, "      {args}")?;
                }
            }
        }
        client.close();
    }
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&listed)?)?;
    }
    Ok(())
}

/// The servers `args` name.
fn servers_of(args: &ToolsArgs) -> Result<Vec<McpServer>, CliError> {
    if let Some(path) = &args.config {
        let servers = read_config(path)?;
        return match &args.server {
            None if servers.is_empty() => Err(CliError::Usage(format!(
                "{} has no [[mcp]] server",
                path.display()
            ))),
            None => Ok(servers),
            Some(name) => {
                let names: Vec<&str> = servers.iter().map(McpServer::name).collect();
                match servers.iter().find(|s| s.name() == name) {
                    Some(server) => Ok(vec![server.clone()]),
                    None => Err(CliError::Usage(format!(
                        "{} has no server named `{name}`; it has: {}",
                        path.display(),
                        names.join(", ")
                    ))),
                }
            }
        };
    }
    if let Some(url) = &args.url {
        let mut server = McpServer::http("server", url);
        for header in &args.header {
            let (name, value) = header.split_once(':').ok_or_else(|| {
                CliError::Usage(format!("--header {header:?}: write it as `Name: value`"))
            })?;
            server = server.header(name.trim(), value.trim());
        }
        if let Some(var) = &args.bearer_token_env {
            let token = std::env::var(var).map_err(|_| {
                CliError::Usage(format!("--bearer-token-env {var}: the variable is not set"))
            })?;
            server = server.bearer_token(token);
        }
        return Ok(vec![server]);
    }
    match args.command.split_first() {
        Some((program, rest)) => {
            let server = rest
                .iter()
                .fold(McpServer::stdio("server", program), |s, arg| s.arg(arg));
            Ok(vec![server])
        }
        None => Err(CliError::Usage(
            "name a server: --config FILE [--server NAME], --url URL, or `-- COMMAND ARGS…`".into(),
        )),
    }
}

/// One line naming a schema's arguments: `args: a (integer, required), b (string)`.
fn arguments(schema: &serde_json::Value) -> Option<String> {
    let properties = schema.get("properties")?.as_object()?;
    if properties.is_empty() {
        return None;
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let described: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let kind = property
                .get("type")
                .and_then(|t| t.as_str())
                .unwrap_or("any");
            if required.contains(&name.as_str()) {
                format!("{name} ({kind}, required)")
            } else {
                format!("{name} ({kind})")
            }
        })
        .collect();
    Some(format!("args: {}", described.join(", ")))
}

fn mcp_error(err: openharness_mcp::McpError) -> CliError {
    CliError::Usage(err.to_string())
}

/// `mcp serve`: the store over stdio, or Streamable HTTP with `--addr` (feature `server`),
/// until the client leaves (stdio) or Ctrl-C (HTTP).
pub(crate) async fn serve(args: ServeArgs, context: &Context) -> Result<(), CliError> {
    let options = ServeOptions::read_only().allow_writes(args.allow_writes);
    let host = context.host().clone();
    #[cfg(feature = "server")]
    if let Some(addr) = args.addr {
        return serve_http(addr, &args, host, options, context).await;
    }
    // stdout is the protocol's: nothing else may be written there.
    serve_stdio(host, options).await.map_err(mcp_error)
}

/// `mcp serve --addr`: Streamable HTTP at `/mcp`, behind the API keys, until Ctrl-C.
#[cfg(feature = "server")]
async fn serve_http(
    addr: SocketAddr,
    args: &ServeArgs,
    host: openharness_host::Host,
    options: ServeOptions,
    context: &Context,
) -> Result<(), CliError> {
    let keys = crate::shared::read_api_keys(args.api_keys_file.as_deref())?;
    if !addr.ip().is_loopback() && keys.is_empty() && !args.insecure_no_auth {
        return Err(CliError::Usage(format!(
            "{addr} is reachable from other machines: give API keys (--api-keys-file) or, \
             to serve without any, say --insecure-no-auth"
        )));
    }
    // Keyless on loopback: answer to loopback names only (DNS rebinding); elsewhere the keys
    // guard it.
    let allowed_hosts = if addr.ip().is_loopback() {
        vec!["localhost".into(), "127.0.0.1".into(), "::1".into()]
    } else {
        Vec::new()
    };
    let service = http_service(host, options, allowed_hosts);
    let keys = std::sync::Arc::new(keys);
    let router =
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    let keys = keys.clone();
                    async move {
                        if keys.is_empty() || bearer_matches(&request, &keys) {
                            next.run(request).await
                        } else {
                            axum::response::IntoResponse::into_response((
                                axum::http::StatusCode::UNAUTHORIZED,
                                [(axum::http::header::WWW_AUTHENTICATE, "Bearer")],
                                "an API key is required: Authorization: Bearer <key>",
                            ))
                        }
                    }
                },
            ));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| CliError::Usage(format!("cannot listen on {addr}: {err}")))?;
    let addr = listener.local_addr().unwrap_or(addr);
    {
        let mut out = context.out();
        let writes = if args.allow_writes {
            "read-write"
        } else {
            "read-only"
        };
        writeln!(
            out,
            "Serving MCP ({writes}) on http://{addr}/mcp (Ctrl-C to stop)"
        )?;
        out.flush()?;
    }
    // As `openharness_server::serve` does: a clone of the router per connection, not a
    // rebuilt route table.
    axum::serve(listener, router.into_make_service())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|err| CliError::Usage(format!("serving MCP on {addr} failed: {err}")))
}

#[cfg(feature = "server")]
fn bearer_matches(
    request: &axum::extract::Request,
    keys: &[openharness_server::ApiKeyHash],
) -> bool {
    request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|key| keys.iter().any(|hash| hash.matches(key.trim())))
}
