//! [`McpClient`]: one connected MCP server — started (stdio) or reached (Streamable HTTP),
//! its tool list kept current (`notifications/tools/list_changed` re-lists), and its tools
//! called with a per-call timeout, so a server that hangs, dies or answers nonsense gives the
//! agent an error result instead of a hang or a panic.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, RwLock};
use std::time::Duration;

use openharness_core::ToolError;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, JsonObject,
    ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::ClientLifecycleMode;
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ClientServiceExt, RoleClient};
use serde::Serialize;
use serde_json::Value;
use tokio::io::AsyncReadExt;

use crate::config::{McpServer, McpTransport};
use crate::error::McpError;
use crate::output::output_of;

/// How much of a stdio server's stderr is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// A tool as a server lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The name the server calls it by.
    pub name: String,
    /// Its human-readable title, when the server gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A connected MCP server. Cheap to clone; the connection closes when the last clone (and the
/// last of its tools) is dropped, or at [`McpClient::close`].
///
/// ```no_run
/// use openharness_mcp::{McpClient, McpServer};
/// # async fn example() -> Result<(), openharness_mcp::McpError> {
/// let everything = McpClient::connect(
///     &McpServer::stdio("everything", "npx").arg("-y").arg("@modelcontextprotocol/server-everything"),
/// )
/// .await?;
/// for tool in everything.listed() {
///     println!("{}: {}", tool.name, tool.description);
/// }
/// let tools = everything.tools(); // Vec<Arc<dyn Tool>>, for an agent's `tools()`
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    server: McpServer,
    service: RunningService<RoleClient, Handler>,
    catalog: Arc<Catalog>,
    stderr: Option<Arc<Mutex<Vec<u8>>>>,
}

/// The server's tools as last listed, and how many times they were listed.
#[derive(Default)]
struct Catalog {
    tools: RwLock<Vec<ToolInfo>>,
    listings: AtomicU64,
}

impl Catalog {
    fn replace(&self, tools: Vec<rmcp::model::Tool>) {
        let tools = tools.into_iter().map(info_of).collect();
        if let Ok(mut current) = self.tools.write() {
            *current = tools;
        }
        self.listings.fetch_add(1, Ordering::SeqCst);
    }

    /// Whether the server lists `name` (without copying its description and schema).
    fn offers(&self, name: &str) -> bool {
        self.tools
            .read()
            .is_ok_and(|tools| tools.iter().any(|tool| tool.name == name))
    }

    fn get(&self, name: &str) -> Option<ToolInfo> {
        self.tools
            .read()
            .ok()?
            .iter()
            .find(|tool| tool.name == name)
            .cloned()
    }
}

/// The client side of the connection: says who we are, re-lists tools when told they changed.
struct Handler {
    catalog: Arc<Catalog>,
    server: String,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("openharness", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let (catalog, server) = (self.catalog.clone(), self.server.clone());
        // Listed on a task of its own: the notification handler must not wait on a request
        // whose answer the same connection has to deliver.
        tokio::spawn(async move {
            match context.peer.list_all_tools().await {
                Ok(tools) => catalog.replace(tools),
                Err(err) => {
                    tracing::warn!(server, %err, "MCP server said its tools changed; listing them failed");
                }
            }
        });
    }
}

impl McpClient {
    /// Starts or reaches `server`, does the MCP handshake and lists its tools, all within the
    /// server's connect timeout.
    pub async fn connect(server: &McpServer) -> Result<Self, McpError> {
        let catalog = Arc::new(Catalog::default());
        let handler = Handler {
            catalog: catalog.clone(),
            server: server.name().to_owned(),
        };
        let (served, stderr) = match server.transport() {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env).kill_on_drop(true);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                let (transport, stderr) = TokioChildProcess::builder(cmd)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|source| McpError::Spawn {
                        server: server.name().to_owned(),
                        command: command.clone(),
                        source,
                    })?;
                let tail = stderr.map(keep_tail);
                (handshake(handler, transport, server).await?, tail)
            }
            McpTransport::Http {
                url,
                headers,
                bearer_token,
            } => {
                install_crypto_provider();
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(header_map(server.name(), headers)?);
                if let Some(token) = bearer_token {
                    config = config.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::from_config(config);
                (handshake(handler, transport, server).await?, None)
            }
        };
        let service = served.map_err(|message| McpError::Connect {
            server: server.name().to_owned(),
            message: with_stderr(message, stderr.as_ref()),
        })?;
        let client = Self {
            inner: Arc::new(Inner {
                server: server.clone(),
                service,
                catalog,
                stderr,
            }),
        };
        client.refresh().await?;
        client.listen_for_tool_changes().await;
        Ok(client)
    }

    /// When the server says its tool list can change: at protocol 2026-07-28 and later such
    /// notifications come only on a `subscriptions/listen` stream the client opens, so one is
    /// opened (and acknowledged before `connect` returns) for `tools/list_changed`, and each
    /// one re-lists the tools. Servers of earlier versions send them unasked, to
    /// [`Handler::on_tool_list_changed`].
    async fn listen_for_tool_changes(&self) {
        let Some(info) = self.inner.service.peer_info() else {
            return;
        };
        let announced = info
            .capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed)
            == Some(true);
        if !announced || info.protocol_version < ProtocolVersion::V_2026_07_28 {
            return;
        }
        let peer = self.inner.service.peer().clone();
        let server = self.name().to_owned();
        let filter = SubscriptionFilter::builder().tools_list_changed().build();
        let within = self.inner.server.connect_timeout_value();
        let mut subscription = match tokio::time::timeout(within, peer.listen(filter)).await {
            Ok(Ok(subscription)) => subscription,
            Ok(Err(err)) => {
                tracing::warn!(server, %err, "subscriptions/listen refused; tool changes will not be seen");
                return;
            }
            Err(_) => {
                tracing::warn!(
                    server,
                    "subscriptions/listen not acknowledged; tool changes will not be seen"
                );
                return;
            }
        };
        let catalog = self.inner.catalog.clone();
        tokio::spawn(async move {
            while let Ok(Some(notification)) = subscription.next().await {
                if matches!(
                    notification,
                    ServerNotification::ToolListChangedNotification(_)
                ) {
                    match peer.list_all_tools().await {
                        Ok(tools) => catalog.replace(tools),
                        Err(err) => {
                            tracing::warn!(server, %err, "MCP server said its tools changed; listing them failed");
                        }
                    }
                }
            }
        });
    }

    /// Connects to every server, in order; the first failure is the error.
    pub async fn connect_all(servers: &[McpServer]) -> Result<Vec<Self>, McpError> {
        let mut clients = Vec::with_capacity(servers.len());
        for server in servers {
            clients.push(Self::connect(server).await?);
        }
        Ok(clients)
    }

    /// The server's configured name.
    pub fn name(&self) -> &str {
        self.inner.server.name()
    }

    /// How the server described itself in the handshake: its name and version.
    pub fn server_info(&self) -> Option<(String, String)> {
        let info = self.inner.service.peer_info()?;
        let implementation = info.server_info.as_ref()?;
        Some((implementation.name.clone(), implementation.version.clone()))
    }

    /// The tools as last listed (at connect, and again after each `tools/list_changed`).
    pub fn listed(&self) -> Vec<ToolInfo> {
        self.inner
            .catalog
            .tools
            .read()
            .map(|tools| tools.clone())
            .unwrap_or_default()
    }

    /// How many times the tools were listed: 1 after connecting, one more per completed
    /// re-listing after a `tools/list_changed` notification or [`McpClient::refresh`].
    pub fn listings(&self) -> u64 {
        self.inner.catalog.listings.load(Ordering::SeqCst)
    }

    /// Lists the server's tools again, now.
    pub async fn refresh(&self) -> Result<(), McpError> {
        let within = self.inner.server.connect_timeout_value();
        let listed = tokio::time::timeout(within, self.inner.service.list_all_tools())
            .await
            .map_err(|_| McpError::Timeout {
                server: self.name().to_owned(),
                what: "tools/list".into(),
                after: within,
            })?
            .map_err(|err| McpError::Request {
                server: self.name().to_owned(),
                what: "tools/list".into(),
                message: with_stderr(err.to_string(), self.inner.stderr.as_ref()),
            })?;
        self.inner.catalog.replace(listed);
        Ok(())
    }

    /// Calls the server's tool `name`: its result as JSON, or the error the model is shown
    /// (the server's own error, a timeout, a server that stopped, a tool it no longer lists).
    pub async fn call(&self, name: &str, input: Value) -> Result<Value, ToolError> {
        let server = self.name();
        if !self.inner.catalog.offers(name) {
            return Err(ToolError::new(format!(
                "MCP server `{server}` no longer offers a tool named `{name}`"
            )));
        }
        let arguments: Option<JsonObject> = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(ToolError::new(format!(
                    "the arguments of `{name}` must be a JSON object, not {other}"
                )));
            }
        };
        let mut params = CallToolRequestParams::new(name.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let within = self.inner.server.call_timeout_value();
        match tokio::time::timeout(within, self.inner.service.call_tool(params)).await {
            Err(_) => Err(ToolError::new(format!(
                "MCP server `{server}` did not answer `{name}` within {}",
                seconds(within)
            ))),
            Ok(Err(err)) => {
                let reason = if self.inner.service.is_transport_closed() {
                    with_stderr("it has stopped".into(), self.inner.stderr.as_ref())
                } else {
                    err.to_string()
                };
                Err(ToolError::new(format!(
                    "MCP server `{server}` failed to run `{name}`: {reason}"
                )))
            }
            Ok(Ok(result)) => output_of(result),
        }
    }

    /// Ends the connection (and stops a stdio server), whoever else holds a clone.
    pub fn close(&self) {
        self.inner.service.cancellation_token().cancel();
    }

    pub(crate) fn tool_info(&self, name: &str) -> Option<ToolInfo> {
        self.inner.catalog.get(name)
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.name())
            .field("tools", &self.listed().len())
            .finish_non_exhaustive()
    }
}

fn info_of(tool: rmcp::model::Tool) -> ToolInfo {
    ToolInfo {
        name: tool.name.into_owned(),
        title: tool.title,
        description: tool.description.map(|d| d.into_owned()).unwrap_or_default(),
        input_schema: Value::Object((*tool.input_schema).clone()),
    }
}

/// The configured headers, checked.
fn header_map(
    server: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, McpError> {
    headers
        .iter()
        .map(|(name, value)| {
            let bad = |what: &str| McpError::Config {
                server: server.to_owned(),
                message: format!("the header `{name}` has an invalid {what}"),
            };
            Ok((
                http::HeaderName::try_from(name.as_str()).map_err(|_| bad("name"))?,
                http::HeaderValue::try_from(value.as_str()).map_err(|_| bad("value"))?,
            ))
        })
        .collect()
}

/// Starts the MCP session over `transport` within the server's connect timeout: the
/// service, or why the handshake failed (to be told with the server's stderr).
async fn handshake<T, E, A>(
    handler: Handler,
    transport: T,
    server: &McpServer,
) -> Result<Result<RunningService<RoleClient, Handler>, String>, McpError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let within = server.connect_timeout_value();
    let served = tokio::time::timeout(within, handler.serve_with_lifecycle(transport, lifecycle()))
        .await
        .map_err(|_| McpError::Timeout {
            server: server.name().to_owned(),
            what: "the handshake".into(),
            after: within,
        })?;
    Ok(served.map_err(|err| err.to_string()))
}

/// The handshake: `server/discover` for servers of protocol 2026-07-28, falling back to the
/// `initialize` handshake of earlier versions when the server says it is one of those.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: None,
    }
}

/// Keeps the last [`STDERR_TAIL`] bytes a stdio server writes to stderr, for error messages.
fn keep_tail(mut stderr: tokio::process::ChildStderr) -> Arc<Mutex<Vec<u8>>> {
    let tail = Arc::new(Mutex::new(Vec::new()));
    let kept = tail.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            if let Ok(mut tail) = kept.lock() {
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
        }
    });
    tail
}

/// `message`, with the end of the server's stderr when it wrote any.
fn with_stderr(message: String, stderr: Option<&Arc<Mutex<Vec<u8>>>>) -> String {
    let tail = stderr
        .and_then(|tail| {
            tail.lock()
                .ok()
                .map(|t| String::from_utf8_lossy(&t).trim().to_owned())
        })
        .unwrap_or_default();
    if tail.is_empty() {
        message
    } else {
        format!("{message}; its stderr ended with: {tail}")
    }
}

fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

/// Makes ring the process's rustls crypto provider (reqwest is built without one) for HTTPS
/// servers, unless the application installed another first.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // `Err` means another thread installed one meanwhile, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}
