//! The store served over MCP (feature `serve`): [`StoreServer`] gives a coding assistant the
//! recorded sessions as tools — list and search them, read their events and the state at any
//! position, compare two — and, when writes are allowed, start a run, send input, answer a
//! request and fork a session with another input. Over stdio ([`serve_stdio`], what an
//! assistant starts as a subprocess) or Streamable HTTP ([`http_service`], a tower service to
//! mount at `/mcp`).
//!
//! Read-only unless [`ServeOptions::allow_writes`]: the write tools are then not even listed,
//! and calling one by name is refused.

use std::sync::Arc;

use openharness_core::{EventId, RunOptions, SessionId};
use openharness_host::{ForkPoint, Host};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::error::McpError;

/// The most events one `read_events` call returns.
pub const MAX_EVENTS_PER_READ: usize = 1000;

/// What the served store lets an assistant do.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    writes: bool,
}

impl ServeOptions {
    /// Read-only: list, read, compare.
    pub fn read_only() -> Self {
        Self::default()
    }

    /// Also start runs, send input, answer requests and fork (each runs the host's
    /// workflows, with their providers).
    pub fn allow_writes(mut self, allow: bool) -> Self {
        self.writes = allow;
        self
    }
}

/// The MCP server of a [`Host`]'s store.
///
/// ```
/// use openharness_host::Host;
/// use openharness_mcp::serve::{ServeOptions, StoreServer};
/// use openharness_store::MemoryStore;
///
/// let server = StoreServer::new(Host::new(MemoryStore::new()), ServeOptions::read_only());
/// let names: Vec<String> = server.tool_list().into_iter().map(|t| t.name.into_owned()).collect();
/// assert!(names.contains(&"read_events".to_owned()));
/// assert!(!names.contains(&"send_input".to_owned()), "read-only lists no write tool");
/// ```
#[derive(Clone)]
pub struct StoreServer {
    host: Host,
    options: ServeOptions,
}

impl StoreServer {
    /// Serves `host`'s store (and, with writes allowed, its workflows).
    pub fn new(host: Host, options: ServeOptions) -> Self {
        Self { host, options }
    }

    /// The tools it offers, the write tools only when writes are allowed.
    pub fn tool_list(&self) -> Vec<Tool> {
        TOOLS
            .iter()
            .filter(|spec| self.options.writes || !spec.writes)
            .map(|spec| Tool::new(spec.name, spec.description, Arc::new((spec.schema)())))
            .collect()
    }

    /// Runs the tool `name`: its result as JSON, or the reason it could not (a message the
    /// assistant reads).
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, String> {
        let Some(spec) = TOOLS.iter().find(|spec| spec.name == name) else {
            return Err(format!("there is no tool named `{name}`"));
        };
        if spec.writes && !self.options.writes {
            return Err(format!(
                "`{name}` changes the store, and this server is read-only (serve it with writes allowed)"
            ));
        }
        match name {
            "list_workflows" => Ok(json!({ "workflows": self.host.workflow_names() })),
            "list_sessions" => self.list_sessions(args(arguments)?).await,
            "read_events" => self.read_events(args(arguments)?).await,
            "state_at" => self.state_at(args(arguments)?).await,
            "diff_sessions" => {
                let DiffArgs { a, b } = args(arguments)?;
                let compared = self
                    .host
                    .compare(&session(&a)?, &session(&b)?)
                    .await
                    .map_err(|err| err.to_string())?;
                encode(&compared)
            }
            "start_run" => {
                let StartArgs { workflow, input } = args(arguments)?;
                let outcome = self
                    .host
                    .run(&workflow, input, RunOptions::new())
                    .await
                    .map_err(|err| err.to_string())?;
                encode(&outcome)
            }
            "send_input" => {
                let SendArgs { session: id, text } = args(arguments)?;
                let outcome = self
                    .host
                    .send(&session(&id)?, text, RunOptions::new())
                    .await
                    .map_err(|err| err.to_string())?;
                encode(&outcome)
            }
            "answer_request" => {
                let AnswerArgs {
                    session: id,
                    request,
                    answer,
                } = args(arguments)?;
                let request: EventId = request
                    .parse()
                    .map_err(|_| format!("`{request}` is not an event id"))?;
                let outcome = self
                    .host
                    .respond(&session(&id)?, request, answer, RunOptions::new())
                    .await
                    .map_err(|err| err.to_string())?;
                encode(&outcome)
            }
            "fork_session" => self.fork(args(arguments)?).await,
            _ => Err(format!("there is no tool named `{name}`")),
        }
    }

    async fn list_sessions(&self, args: ListArgs) -> Result<Value, String> {
        let mut sessions = self.host.sessions().await.map_err(|err| err.to_string())?;
        sessions.reverse(); // newest first
        let search = args.search.map(|s| s.to_lowercase());
        let matching: Vec<_> = sessions
            .into_iter()
            .filter(|s| {
                args.workflow
                    .as_deref()
                    .is_none_or(|w| s.workflow.as_deref() == Some(w))
            })
            .filter(|s| {
                args.status
                    .as_deref()
                    .is_none_or(|status| serde_json::to_value(s.status).is_ok_and(|v| v == status))
            })
            .filter(|s| {
                search.as_deref().is_none_or(|needle| {
                    s.id.as_str().contains(needle)
                        || s.workflow
                            .as_deref()
                            .is_some_and(|w| w.to_lowercase().contains(needle))
                })
            })
            .collect();
        let total = matching.len();
        let limit = args.limit.unwrap_or(50).clamp(1, 1000) as usize;
        let shown: Vec<_> = matching.into_iter().take(limit).collect();
        Ok(json!({ "total": total, "sessions": encode(&shown)? }))
    }

    async fn read_events(&self, args: EventsArgs) -> Result<Value, String> {
        let limit = args
            .limit
            .map_or(100, |l| l as usize)
            .clamp(1, MAX_EVENTS_PER_READ);
        let page = self
            .host
            .events(&session(&args.session)?, args.after, limit)
            .await
            .map_err(|err| err.to_string())?;
        encode(&page)
    }

    async fn state_at(&self, args: StateArgs) -> Result<Value, String> {
        let id = session(&args.session)?;
        let len = self
            .host
            .session(&id)
            .await
            .map_err(|err| err.to_string())?
            .len;
        let position = args.position.unwrap_or(len).min(len);
        let state = self
            .host
            .state_at(&id, position)
            .await
            .map_err(|err| err.to_string())?;
        Ok(json!({ "position": position, "len": len, "state": state }))
    }

    async fn fork(&self, args: ForkArgs) -> Result<Value, String> {
        let parent = session(&args.session)?;
        let outcome = self
            .host
            .fork(
                &parent,
                ForkPoint::Position {
                    position: args.position,
                },
                RunOptions::new(),
            )
            .await
            .map_err(|err| err.to_string())?;
        let outcome = match args.input {
            Some(input) => self
                .host
                .send(&outcome.session, input, RunOptions::new())
                .await
                .map_err(|err| err.to_string())?,
            None => outcome,
        };
        encode(&outcome)
    }
}

impl ServerHandler for StoreServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::default();
        info.capabilities = ServerCapabilities::builder().enable_tools().build();
        info.server_info = Implementation::new("openharness", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Open Harness sessions: every agent run is an event log. list_sessions, then \
             read_events or state_at a position to see what an agent did and why; \
             diff_sessions compares a fork with its parent."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(match self.call(&request.name, arguments).await {
            Ok(value) => CallToolResult::structured(value),
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        }
        .into())
    }
}

/// Serves `host` over this process's stdin and stdout until the client closes them.
pub async fn serve_stdio(host: Host, options: ServeOptions) -> Result<(), McpError> {
    let failed = |message: String| McpError::Connect {
        server: "stdio".into(),
        message,
    };
    let running = StoreServer::new(host, options)
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|err| failed(err.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|err| failed(err.to_string()))?;
    Ok(())
}

/// `host` as a Streamable HTTP MCP endpoint: a tower service to mount (at `/mcp`, say). It
/// answers only requests whose `Host` is one of `allowed_hosts` (DNS rebinding); auth is the
/// router's to add.
pub fn http_service(
    host: Host,
    options: ServeOptions,
    allowed_hosts: Vec<String>,
) -> StreamableHttpService<StoreServer, LocalSessionManager> {
    let server = StoreServer::new(host, options);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default().with_allowed_hosts(allowed_hosts),
    )
}

/// One served tool.
struct Spec {
    name: &'static str,
    description: &'static str,
    writes: bool,
    schema: fn() -> JsonObject,
}

const TOOLS: &[Spec] = &[
    Spec {
        name: "list_workflows",
        description: "The workflows this server can run and fold.",
        writes: false,
        schema: schema::<NoArgs>,
    },
    Spec {
        name: "list_sessions",
        description: "Recorded sessions, newest first: id, workflow, parent (for a fork), status, length, first and last event times. Filter by workflow, status (running, idle, waiting, failed, …) or a search term in the id or workflow.",
        writes: false,
        schema: schema::<ListArgs>,
    },
    Spec {
        name: "read_events",
        description: "A session's events in order (seq, id, name, payload, caused-by, time), up to `limit` (100 by default, 1000 at most) after seq `after`; `next_after` continues.",
        writes: false,
        schema: schema::<EventsArgs>,
    },
    Spec {
        name: "state_at",
        description: "A session's state at a position (0 is the initial state; the default is the end), as its workflow folds it.",
        writes: false,
        schema: schema::<StateArgs>,
    },
    Spec {
        name: "diff_sessions",
        description: "Compares two sessions (a fork and its parent, say): their common ancestor, how many events agree, the first event where they part with the patch between the two, and the patch between their states there.",
        writes: false,
        schema: schema::<DiffArgs>,
    },
    Spec {
        name: "start_run",
        description: "Starts a new session of a workflow with an input and runs its first turn (calls the workflow's model).",
        writes: true,
        schema: schema::<StartArgs>,
    },
    Spec {
        name: "send_input",
        description: "Continues a session with new user input: one more turn.",
        writes: true,
        schema: schema::<SendArgs>,
    },
    Spec {
        name: "answer_request",
        description: "Answers a session's open input request (its `input:requested` event id) and continues the session.",
        writes: true,
        schema: schema::<AnswerArgs>,
    },
    Spec {
        name: "fork_session",
        description: "Forks a session at a position into a new session that starts from exactly the state there (nothing before it is run again), finishes what was under way, then, with `input`, continues with that input.",
        writes: true,
        schema: schema::<ForkArgs>,
    },
];

/// The JSON Schema of a tool's arguments.
fn schema<T: JsonSchema>() -> JsonObject {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
    }
    match schema {
        Value::Object(object) => object,
        _ => JsonObject::new(),
    }
}

fn args<T: DeserializeOwned>(arguments: Value) -> Result<T, String> {
    serde_json::from_value(arguments).map_err(|err| format!("invalid arguments: {err}"))
}

fn session(id: &str) -> Result<SessionId, String> {
    id.parse()
        .map_err(|_| format!("`{id}` is not a session id (list_sessions lists them)"))
}

fn encode(value: &impl serde::Serialize) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|err| format!("the answer could not be encoded: {err}"))
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

/// Which sessions to list.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    /// Only sessions of this workflow.
    workflow: Option<String>,
    /// Only sessions with this status (running, idle, waiting, failed, …).
    status: Option<String>,
    /// Only sessions whose id or workflow contains this.
    search: Option<String>,
    /// At most this many (50 by default).
    limit: Option<u32>,
}

/// Which events to read.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventsArgs {
    /// The session id.
    session: String,
    /// Read after this seq (from the start when absent).
    after: Option<u64>,
    /// At most this many (100 by default, 1000 at most).
    limit: Option<u32>,
}

/// Which state to fold.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StateArgs {
    /// The session id.
    session: String,
    /// The position: 0 is the initial state, the session's length (the default) its end.
    position: Option<u64>,
}

/// Two sessions.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiffArgs {
    /// The first session.
    a: String,
    /// The second session.
    b: String,
}

/// A new run.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StartArgs {
    /// The workflow (list_workflows names them).
    workflow: String,
    /// The user's input.
    input: Option<String>,
}

/// New input.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    /// The session id.
    session: String,
    /// The user's input.
    text: String,
}

/// An answer to an open request.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AnswerArgs {
    /// The session id.
    session: String,
    /// The id of its open `input:requested` event.
    request: String,
    /// The answer.
    answer: String,
}

/// A fork.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ForkArgs {
    /// The session to fork.
    session: String,
    /// Where: the position (0 is the start; read_events' seq N is position N + 1).
    position: u64,
    /// Then continue the fork with this input.
    input: Option<String>,
}
