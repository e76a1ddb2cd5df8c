//! `serve`: the host's sessions (and the platform, MCP servers, the chat workflow) over HTTP
//! until Ctrl-C, with the access it needs beyond loopback.

use super::*;

/// How often `serve` looks for sessions whose turn a dead process left unfinished (a crash of
/// this server before it started, or another replica sharing a PostgreSQL store).
pub(super) const RECOVERY_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// Who may call `serve`: API keys, the explicit opt-out beyond loopback, browser origins.
pub(super) struct Access {
    pub(super) api_keys_file: Option<std::path::PathBuf>,
    pub(super) insecure_no_auth: bool,
    pub(super) cors: Option<openharness_server::CorsOrigins>,
    pub(super) allowed_hosts: Vec<String>,
}

/// What `serve` serves and where: the chat workflow, MCP servers, the path prefix.
pub(super) struct Mount {
    pub(super) chat_workflow: Option<String>,
    pub(super) mcp_config: Option<std::path::PathBuf>,
    /// Other models forks may run with (`--fork-provider`).
    pub(super) fork_providers: Vec<crate::provider::ForkProviderSpec>,
    /// `""` (the root) or a path such as `/harness`, as `--base-path` parsed it.
    pub(super) base_path: String,
    /// What a second input gets while a turn runs (`--on-busy`).
    pub(super) on_busy: Option<openharness::BusyPolicy>,
    /// Scorers of every finished turn (`--online-scorers`).
    pub(super) online_scorers: Option<std::path::PathBuf>,
}

/// How much `serve` holds open at once: connections, and event streams per session.
pub(super) struct Limits {
    /// `--max-connections`: past it, a new connection closes the one silent longest.
    pub(super) max_connections: usize,
    /// `--max-streams-per-session`: past it, a new stream of that session is `429`.
    pub(super) max_streams_per_session: usize,
}

/// The scorers of an `--online-scorers` file (judges' providers built as `eval run` builds
/// them).
fn read_online_scorers(
    path: &std::path::Path,
) -> Result<openharness_eval::OnlineScorers, CliError> {
    let bad = |why: String| CliError::Usage(format!("--online-scorers {}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|err| bad(err.to_string()))?;
    let file = openharness_eval::OnlineScorersFile::from_toml(&text).map_err(&bad)?;
    let scorers = file
        .build_with(&|spec| {
            crate::commands::eval::build_provider(spec).map_err(|err| err.to_string())
        })
        .map_err(&bad)?;
    if scorers.is_empty() {
        return Err(bad("it names no `[[workflow]]` with scorers".to_owned()));
    }
    Ok(scorers)
}

/// `serve`: the host's sessions over HTTP until Ctrl-C. Beyond loopback it needs API keys,
/// unless told explicitly to serve without.
pub(super) async fn serve(
    context: &Context,
    addr: std::net::SocketAddr,
    access: Access,
    mount: Mount,
    limits: Limits,
) -> Result<(), CliError> {
    let Mount {
        chat_workflow,
        mcp_config,
        fork_providers,
        base_path,
        on_busy,
        online_scorers,
    } = mount;
    let Access {
        api_keys_file,
        insecure_no_auth,
        cors,
        allowed_hosts,
    } = access;
    let host = context.host().clone();
    // The program's own workflows, as the banner names them (and, when there is one, the one
    // new chats of POST /api/chat run, as before the platform's reader was added).
    let names = host.workflow_names().join(", ");
    let mut chat_workflow = chat_workflow;
    if chat_workflow.is_none()
        && let [only] = host.workflow_names().as_slice()
    {
        chat_workflow = Some(only.clone());
    }
    if let Some(name) = &chat_workflow {
        host.hosted(name).map_err(|_| {
            CliError::Usage(format!(
                "--chat-workflow {name}: no such workflow here (this program registers {})",
                host.workflow_names().join(", ")
            ))
        })?;
    }
    let keys = read_api_keys(api_keys_file.as_deref())?;
    if !addr.ip().is_loopback() && keys.is_empty() && !insecure_no_auth {
        return Err(CliError::Usage(format!(
            "{addr} is reachable from other machines: give API keys (--api-keys-file) or, \
             to serve without any, say --insecure-no-auth"
        )));
    }
    let online_scorers = match &online_scorers {
        Some(path) => Some(read_online_scorers(path)?),
        None => None,
    };
    // MCP servers for platform agents, started (or reached) before anything is served.
    let mcp_servers = match &mcp_config {
        Some(path) => {
            let servers = crate::commands::mcp::read_config(path)?;
            openharness_mcp::McpClient::connect_all(&servers)
                .await
                .map_err(|err| CliError::Usage(format!("--mcp-config {}: {err}", path.display())))?
        }
        None => Vec::new(),
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|err| CliError::Usage(format!("cannot listen on {addr}: {err}")))?;
    // The port the system chose, when asked for port 0.
    let addr = listener.local_addr().unwrap_or(addr);
    let protected = if keys.is_empty() {
        ""
    } else {
        " (API keys required)"
    };
    let cors_note = match &cors {
        Some(origins) => format!(" (CORS: {origins})"),
        None => String::new(),
    };
    {
        let mut out = context.out();
        writeln!(
            out,
            "Serving {names} on http://{addr}{base_path}{protected}{cors_note} (Ctrl-C to stop)"
        )?;
        out.flush()?;
    }
    let guarded = keys.is_empty() && addr.ip().is_loopback();
    let mut options = openharness_server::ServerOptions::default()
        .api_keys(keys)
        .max_streams_per_session(limits.max_streams_per_session);
    // Keyless on loopback: answer to this address and `localhost` only (DNS rebinding).
    if guarded {
        options = options
            .allowed_hosts(openharness_server::loopback_hosts(addr))
            .allowed_hosts(allowed_hosts);
    }
    if let Some(origins) = cors {
        options = options.cors(origins);
    }
    if let Some(name) = chat_workflow {
        options = options.chat_workflow(name);
    }
    for spec in fork_providers {
        let provider = spec.provider()?;
        options = options.fork_provider(spec.name, provider);
    }
    // The platform's /v1 API over the same store, on the same HTTP layer (keys, CORS, errors,
    // event streams, GET /openapi.json).
    let master_keys = openharness_platform::MasterKeys::from_env()
        .map_err(|err| CliError::Usage(err.to_string()))?;
    let mut platform = openharness_platform::Platform::new(host.store().clone(), master_keys);
    if !mcp_servers.is_empty() {
        platform = platform.with_mcp_servers(mcp_servers);
    }
    // One host runs every turn: the program's workflows and the platform's agent chat
    // (registered there once, so the native API and the inspector read /v1 sessions too).
    let platform = platform.with_host(host).map_err(|err| {
        CliError::Usage(format!(
            "the platform's `{}` workflow: {err}",
            openharness_platform::WORKFLOW_NAME
        ))
    })?;
    let host = platform.host().clone();
    if let Some(policy) = on_busy {
        options = options.on_busy(policy);
    }
    // Sessions whose turn a dead process left unfinished (a crash here, or another replica on
    // the same PostgreSQL) are resumed from their logs, native and /v1 alike.
    let recovery = host.spawn_recovery(RECOVERY_INTERVAL);
    // Scores every finished turn of the workflows it names, in the background.
    let _scoring = match online_scorers {
        Some(scorers) => {
            for workflow in scorers.workflows() {
                host.hosted(workflow).map_err(|_| {
                    CliError::Usage(format!(
                        "--online-scorers names workflow `{workflow}`, which is not served here (this program serves {})",
                        host.workflow_names().join(", ")
                    ))
                })?;
            }
            Some(scorers.start(&host))
        }
        None => None,
    };
    let app = openharness_server::router(host, options.platform(platform));
    // Under a prefix, as a program of the user's would nest it (`nest_service`: the page at
    // `/prefix/` and `/prefix`, the API under `/prefix/`).
    let app = if base_path.is_empty() {
        app
    } else {
        axum::Router::new().nest_service(&base_path, app)
    };
    // Idle connections close and a flood of them cannot crowd out a real client.
    let served = openharness_server::serve(
        listener,
        app,
        openharness_server::ConnectionLimits::default().max_connections(limits.max_connections),
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    )
    .await
    .map_err(CliError::Output);
    recovery.abort();
    served
}
