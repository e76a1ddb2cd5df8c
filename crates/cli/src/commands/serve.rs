//! `serve`: the host's sessions (and, with the features that bring them, the platform, MCP
//! servers for its agents, online scorers) over HTTP until Ctrl-C, with the access it needs
//! beyond loopback. Feature `server`; `platform` adds the `/v1` API, `platform` and `mcp`
//! `--mcp-config`, `eval` `--online-scorers` and the experiments' routes.

use super::*;

/// The flags of `serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on. An address other machines can reach needs API keys (or
    /// `--insecure-no-auth`).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: std::net::SocketAddr,
    /// Listen on this port of 127.0.0.1: short for `--addr 127.0.0.1:PORT` (0 picks a free
    /// port, which the first line printed names).
    #[arg(long, conflicts_with = "addr")]
    port: Option<u16>,
    /// A file of API keys, one per line (the key, or `sha256:<hex>` of it); every route
    /// but `/health` then requires `Authorization: Bearer <key>`.
    #[arg(long, env = "OPENHARNESS_API_KEYS_FILE")]
    api_keys_file: Option<std::path::PathBuf>,
    /// Serve without API keys on an address other machines can reach.
    #[arg(long)]
    insecure_no_auth: bool,
    /// Let browser pages from these origins call the server (CORS; off by default): a
    /// comma-separated list such as `http://localhost:5173`, or `*` for any origin.
    #[arg(long, env = "OPENHARNESS_CORS_ORIGINS", value_name = "ORIGINS")]
    cors_origin: Option<openharness_server::CorsOrigins>,
    /// Without API keys on loopback, the server answers to its own address and `localhost`
    /// only (against DNS rebinding); this adds a host name (such as `myhost.local`).
    /// Repeatable.
    #[arg(long, value_name = "HOST")]
    allowed_host: Vec<String>,
    /// The workflow a new chat of `POST /api/chat` runs (default: the only registered
    /// workflow; needed when there are several).
    #[arg(long, value_name = "WORKFLOW")]
    chat_workflow: Option<String>,
    /// A TOML file of `[[mcp]]` servers to offer platform agents as the capabilities
    /// `mcp:<name>` (started or reached now; the server refuses to start if one fails).
    #[cfg(all(feature = "platform", feature = "mcp"))]
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<std::path::PathBuf>,
    /// Offer forks another model under a name: `NAME=PROVIDER[:MODEL][@BASE_URL]`, such
    /// as `haiku=anthropic:claude-haiku-4-5` or `local=openai:llama3@http://127.0.0.1:11434/v1`
    /// (keys from the environment, as `--provider` reads them). `POST /sessions/{id}/fork`
    /// with `"provider": "haiku"`, or the inspector's fork form, runs a fork with it.
    /// Repeatable.
    #[arg(long, value_name = "NAME=PROVIDER[:MODEL][@URL]", value_parser = crate::provider::parse_fork_provider)]
    fork_provider: Vec<crate::provider::ForkProviderSpec>,
    /// Serve everything under this path (such as `/harness`: the inspector at
    /// `/harness/`, the API at `/harness/sessions`), as a program nesting the router with
    /// `Router::nest` would.
    #[arg(long, value_name = "PATH", value_parser = parse_base_path)]
    base_path: Option<String>,
    /// What a second input gets while a turn runs on its session, when the request does
    /// not say (`onBusy`, or the header `x-openharness-on-busy`): `reject` (409, the
    /// default), `enqueue` (recorded now, answered after), `interrupt` (the running turn
    /// stops and a new one answers both), `rollback` (the running turn is abandoned, its
    /// state restored) or `steer` (given to the running agent at its next model call).
    /// `POST /api/chat` enqueues unless this names another than `reject`.
    #[arg(long, value_name = "POLICY", value_parser = crate::shared::parse_busy_policy)]
    on_busy: Option<openharness::BusyPolicy>,
    /// A TOML file of scorers that score every finished turn of a served workflow in the
    /// background (`[[workflow]]` tables, each with `name` and `[[workflow.scorer]]` tables
    /// written as an experiment file's `[[scorer]]`): each score is an `eval:scored` event
    /// on the session's feedback log; `GET /sessions?scorer=…&sort=lowestScore` and the
    /// inspector's list filter and sort by them.
    #[cfg(feature = "eval")]
    #[arg(long, value_name = "FILE")]
    online_scorers: Option<std::path::PathBuf>,
    /// The most connections open at once (default 512): one more closes the connection
    /// silent longest. Each event stream holds one; raise it for many browsers.
    #[arg(long, value_name = "N", default_value_t = openharness_server::ConnectionLimits::default().max_connections)]
    max_connections: usize,
    /// The most event streams one session may have open at once (default 64); one more is
    /// `429`. Raise it for many followers of one session.
    #[arg(long, value_name = "N", default_value_t = openharness_server::ServerOptions::default().max_streams_per_session)]
    max_streams_per_session: usize,
}

/// `--base-path`: a path such as `/harness` (a leading `/` is added, trailing ones dropped);
/// `/` alone means no prefix.
fn parse_base_path(text: &str) -> Result<String, String> {
    let trimmed = text.trim().trim_matches('/');
    if trimmed.contains(['?', '#', '{', '}', '*']) || trimmed.contains("//") {
        return Err(format!(
            "{text:?} is not a plain path: write it like /harness or /tools/harness"
        ));
    }
    Ok(if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    })
}

/// Runs `serve` with its flags.
pub(crate) async fn run(args: ServeArgs, context: &Context) -> Result<(), CliError> {
    let access = Access {
        api_keys_file: args.api_keys_file,
        insecure_no_auth: args.insecure_no_auth,
        cors: args.cors_origin,
        allowed_hosts: args.allowed_host,
    };
    let mount = Mount {
        chat_workflow: args.chat_workflow,
        #[cfg(all(feature = "platform", feature = "mcp"))]
        mcp_config: args.mcp_config,
        fork_providers: args.fork_provider,
        base_path: args.base_path.unwrap_or_default(),
        on_busy: args.on_busy,
        #[cfg(feature = "eval")]
        online_scorers: args.online_scorers,
    };
    let addr = args.port.map_or(args.addr, |port| {
        std::net::SocketAddr::from(([127, 0, 0, 1], port))
    });
    let limits = Limits {
        max_connections: args.max_connections,
        max_streams_per_session: args.max_streams_per_session,
    };
    serve(context, addr, access, mount, limits).await
}

/// How often `serve` looks for sessions whose turn a dead process left unfinished (a crash of
/// this server before it started, or another replica sharing a PostgreSQL store).
pub(super) const RECOVERY_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// Who may call `serve`: API keys, the explicit opt-out beyond loopback, browser origins.
struct Access {
    api_keys_file: Option<std::path::PathBuf>,
    insecure_no_auth: bool,
    cors: Option<openharness_server::CorsOrigins>,
    allowed_hosts: Vec<String>,
}

/// What `serve` serves and where: the chat workflow, MCP servers, the path prefix.
struct Mount {
    chat_workflow: Option<String>,
    /// MCP servers for the platform's agents (`--mcp-config`).
    #[cfg(all(feature = "platform", feature = "mcp"))]
    mcp_config: Option<std::path::PathBuf>,
    /// Other models forks may run with (`--fork-provider`).
    fork_providers: Vec<crate::provider::ForkProviderSpec>,
    /// `""` (the root) or a path such as `/harness`, as `--base-path` parsed it.
    base_path: String,
    /// What a second input gets while a turn runs (`--on-busy`).
    on_busy: Option<openharness::BusyPolicy>,
    /// Scorers of every finished turn (`--online-scorers`).
    #[cfg(feature = "eval")]
    online_scorers: Option<std::path::PathBuf>,
}

/// How much `serve` holds open at once: connections, and event streams per session.
struct Limits {
    /// `--max-connections`: past it, a new connection closes the one silent longest.
    max_connections: usize,
    /// `--max-streams-per-session`: past it, a new stream of that session is `429`.
    max_streams_per_session: usize,
}

/// The scorers of an `--online-scorers` file (judges' providers built as `eval run` builds
/// them).
#[cfg(feature = "eval")]
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
async fn serve(
    context: &Context,
    addr: std::net::SocketAddr,
    access: Access,
    mount: Mount,
    limits: Limits,
) -> Result<(), CliError> {
    let Mount {
        chat_workflow,
        #[cfg(all(feature = "platform", feature = "mcp"))]
        mcp_config,
        fork_providers,
        base_path,
        on_busy,
        #[cfg(feature = "eval")]
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
    let keys = crate::shared::read_api_keys(api_keys_file.as_deref())?;
    if !addr.ip().is_loopback() && keys.is_empty() && !insecure_no_auth {
        return Err(CliError::Usage(format!(
            "{addr} is reachable from other machines: give API keys (--api-keys-file) or, \
             to serve without any, say --insecure-no-auth"
        )));
    }
    #[cfg(feature = "eval")]
    let online_scorers = match &online_scorers {
        Some(path) => Some(read_online_scorers(path)?),
        None => None,
    };
    // MCP servers for platform agents, started (or reached) before anything is served.
    #[cfg(all(feature = "platform", feature = "mcp"))]
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
    if let Some(policy) = on_busy {
        options = options.on_busy(policy);
    }
    // The platform's /v1 API over the same store, on the same HTTP layer (keys, CORS, errors,
    // event streams, GET /openapi.json).
    #[cfg(feature = "platform")]
    let (host, options) = {
        let master_keys = openharness_platform::MasterKeys::from_env()
            .map_err(|err| CliError::Usage(err.to_string()))?;
        let platform = openharness_platform::Platform::new(host.store().clone(), master_keys);
        #[cfg(feature = "mcp")]
        let platform = if mcp_servers.is_empty() {
            platform
        } else {
            platform.with_mcp_servers(mcp_servers)
        };
        // One host runs every turn: the program's workflows and the platform's agent chat
        // (registered there once, so the native API and the inspector read /v1 sessions too).
        let platform = platform.with_host(host).map_err(|err| {
            CliError::Usage(format!(
                "the platform's `{}` workflow: {err}",
                openharness_platform::WORKFLOW_NAME
            ))
        })?;
        (platform.host().clone(), options.platform(platform))
    };
    // Sessions whose turn a dead process left unfinished (a crash here, or another replica on
    // the same PostgreSQL) are resumed from their logs, native and /v1 alike.
    let recovery = host.spawn_recovery(RECOVERY_INTERVAL);
    // Scores every finished turn of the workflows it names, in the background.
    #[cfg(feature = "eval")]
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
    let app = openharness_server::router(host, options);
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

#[cfg(test)]
mod tests {
    use super::parse_base_path;

    #[test]
    fn a_base_path_is_one_leading_slash_and_no_trailing_one() {
        assert_eq!(parse_base_path("/harness"), Ok("/harness".to_owned()));
        assert_eq!(parse_base_path("harness/"), Ok("/harness".to_owned()));
        assert_eq!(
            parse_base_path("/tools/harness/"),
            Ok("/tools/harness".to_owned())
        );
        assert_eq!(parse_base_path("/"), Ok(String::new()));
        assert!(parse_base_path("/a//b").is_err());
        assert!(parse_base_path("/{id}").is_err());
        assert!(parse_base_path("/a?b").is_err());
    }
}
