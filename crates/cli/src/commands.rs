//! The library's commands that read (`sessions`, `events`, `tape`) and the dispatch of every
//! command to its body. Every command reaches workflows through the [`Host`](openharness_host::Host) only; commands
//! write to the [`Context`]'s output and fail with a [`CliError`].

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use openharness::store::RedbError;
use openharness::{ErrorChain, SessionId, SessionStatus, Store};
use openharness_host::{SessionQuery, SessionSort};
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};

use crate::Context;
use crate::args::Command;
use crate::error::{CliError, list};
use crate::shared::{PAGE, parse_session, read_api_keys};

/// How often `serve` looks for platform sessions whose turn a dead process left unfinished.
const RECOVERY_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// Opens the store `--store` names: a redb file (read-only when `reads_only`), PostgreSQL for
/// a connection string (`postgres://…` or key-value `host=… dbname=…`), or a running server
/// (`http://…`, read-only), with any password redacted from errors.
pub(crate) async fn open_store(path: &Path, reads_only: bool) -> Result<Arc<dyn Store>, CliError> {
    let name = path.to_string_lossy();
    if crate::transfer::is_postgres(&name) {
        return Ok(Arc::from(crate::transfer::open(path).await?));
    }
    let access = if reads_only {
        crate::transfer::Access::Read
    } else {
        crate::transfer::Access::Write
    };
    let store = crate::transfer::open_any(path, access)
        .await
        .map_err(|source| {
            if let Some(RedbError::AlreadyOpen { holders, .. }) = RedbError::of(&source) {
                let (path, holders) = (
                    path.display().to_string(),
                    if holders.is_empty() {
                        "another process".to_owned()
                    } else {
                        holders.join(", ")
                    },
                );
                if reads_only {
                    CliError::StoreUnshared { path, holders }
                } else {
                    CliError::StoreHeld { path, holders }
                }
            } else {
                CliError::OpenStore {
                    path: path.display().to_string(),
                    source,
                }
            }
        })?;
    Ok(Arc::from(store))
}

pub(crate) async fn run<E: clap::Subcommand>(
    command: Command<E>,
    context: &Context,
) -> Result<(), CliError> {
    match command {
        Command::Start(args) => crate::turns::start(args, context).await,
        Command::Send(args) => crate::turns::send(args, context).await,
        Command::Respond(args) => crate::turns::respond(args, context).await,
        Command::Resume(args) => crate::turns::resume(args, context).await,
        Command::Sessions { json, query } => sessions(context, json, query).await,
        Command::Events { session, json } => events(context, &parse_session(&session)?, json).await,
        Command::Tape { session, at, json } => {
            tape(context, &parse_session(&session)?, at, json).await
        }
        Command::Fork(args) => crate::fork::run(args, context).await,
        Command::Diff { a, b, json } => crate::diff::run(context, &a, &b, json).await,
        Command::Replay { session, json } => crate::replay::run(context, &session, json).await,
        Command::Serve {
            addr,
            api_keys_file,
            insecure_no_auth,
            cors_origin,
            allowed_host,
            chat_workflow,
            mcp_config,
            fork_provider,
            base_path,
        } => {
            let access = Access {
                api_keys_file,
                insecure_no_auth,
                cors: cors_origin,
                allowed_hosts: allowed_host,
            };
            let mount = Mount {
                chat_workflow,
                mcp_config,
                fork_providers: fork_provider,
                base_path: base_path.unwrap_or_default(),
            };
            serve(context, addr, access, mount).await
        }
        Command::Check => check(context).await,
        // Run before the store is opened (it needs the file to itself): see `Cli::dispatch`.
        Command::Compact => Err(CliError::Usage(
            "compact runs on a store no process has open".into(),
        )),
        Command::Platform(command) => crate::platform::run(command, context).await,
        Command::Eval(command) => crate::eval::run(command, context).await,
        Command::Mcp(crate::mcp::McpCommand::Serve(args)) => crate::mcp::serve(args, context).await,
        // Run before the store is opened (it needs none): see `Cli::dispatch`.
        Command::Mcp(crate::mcp::McpCommand::Tools(_)) => {
            Err(CliError::Usage("mcp tools runs without a store".into()))
        }
        Command::Otel(command) => crate::otel::run(command, context).await,
        Command::Transfer(command) => {
            Ok(crate::transfer::run(command, context.store_path(), context.out()).await?)
        }
        Command::Extra(_) => Err(CliError::Usage("this program has no such command".into())),
    }
}

/// `check`: reads every session of the store whole (events, their seqs, the latest snapshot)
/// and says which are damaged. A store whose listing itself fails is reported as such.
async fn check(context: &Context) -> Result<(), CliError> {
    let store = context.host().store();
    let mut out = context.out();
    let sessions = match store.sessions().await {
        Ok(sessions) => sessions,
        Err(err) => {
            writeln!(
                out,
                "DAMAGED  the store's session list: {}",
                ErrorChain(&err)
            )?;
            return Err(CliError::Damaged(1));
        }
    };
    let mut damaged = 0;
    for info in &sessions {
        let mut problem = None;
        let mut next = 0u64;
        let mut events = store.stream_events(&info.id, 0..u64::MAX);
        while let Some(item) = events.next().await {
            match item {
                Ok(recorded) if recorded.seq == next => next += 1,
                Ok(recorded) => {
                    problem = Some(format!(
                        "seq {next} is missing (found seq {})",
                        recorded.seq
                    ));
                    break;
                }
                Err(err) => {
                    problem = Some(ErrorChain(&err).to_string());
                    break;
                }
            }
        }
        if problem.is_none() && next != info.count {
            // A process writing the store beside this reader (a running `serve`) may have
            // appended since the listing: more events than listed is damage only if the
            // session's record, read again, still says fewer.
            let grown = next > info.count
                && matches!(store.session(&info.id).await, Ok(Some(now)) if now.count >= next);
            if !grown {
                problem = Some(format!("it lists {} events but holds {next}", info.count));
            }
        }
        if problem.is_none() {
            match store.latest_snapshot(&info.id, u64::MAX).await {
                Err(err) => {
                    problem = Some(format!("its snapshots: {}", ErrorChain(&err)));
                }
                Ok(Some(snapshot)) if snapshot.position > next => {
                    problem = Some(format!(
                        "a snapshot at position {} lies beyond its {next} events",
                        snapshot.position
                    ));
                }
                Ok(_) => {}
            }
        }
        match problem {
            None => writeln!(out, "ok       {}  {} events", info.id, info.count)?,
            Some(problem) => {
                damaged += 1;
                writeln!(out, "DAMAGED  {}  {problem}", info.id)?;
            }
        }
    }
    // Damage met on the way that left a session out of the list (its key unreadable) fails
    // the store's sync.
    let unlisted = match store.sync().await {
        Ok(()) => 0,
        Err(err) => {
            writeln!(out, "DAMAGED  the store: {}", ErrorChain(&err))?;
            1
        }
    };
    writeln!(
        out,
        "{} session(s) checked, {damaged} damaged (sessions whose records are unreadable are \
         left out of the list with a warning above)",
        sessions.len()
    )?;
    damaged += unlisted;
    let unfinished = unfinished(store.as_ref()).await?;
    for (session, note) in &unfinished {
        writeln!(out, "UNFINISHED  {session}  {note}")?;
    }
    out.flush()?;
    if damaged > 0 {
        return Err(CliError::Damaged(damaged));
    }
    if !unfinished.is_empty() {
        return Err(CliError::Unfinished(unfinished.len()));
    }
    Ok(())
}

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
    mcp_config: Option<std::path::PathBuf>,
    /// Other models forks may run with (`--fork-provider`).
    fork_providers: Vec<crate::provider::ForkProviderSpec>,
    /// `""` (the root) or a path such as `/harness`, as `--base-path` parsed it.
    base_path: String,
}

/// `serve`: the host's sessions over HTTP until Ctrl-C. Beyond loopback it needs API keys,
/// unless told explicitly to serve without.
async fn serve(
    context: &Context,
    addr: std::net::SocketAddr,
    access: Access,
    mount: Mount,
) -> Result<(), CliError> {
    let Mount {
        chat_workflow,
        mcp_config,
        fork_providers,
        base_path,
    } = mount;
    let Access {
        api_keys_file,
        insecure_no_auth,
        cors,
        allowed_hosts,
    } = access;
    let mut host = context.host().clone();
    // The program's own workflows, as the banner names them (and, when there is one, the one
    // new chats of POST /api/chat run, as before the platform's reader was added).
    let names = host.workflow_names().join(", ");
    let mut chat_workflow = chat_workflow;
    if chat_workflow.is_none()
        && let [only] = host.workflow_names().as_slice()
    {
        chat_workflow = Some(only.clone());
    }
    // Platform sessions (/v1) are sessions of the agent-chat workflow: registered so the
    // native API and the inspector read them too.
    if host.hosted(openharness_platform::WORKFLOW_NAME).is_err() {
        let reader = openharness_platform::agent_chat_for_reading(host.store().clone())
            .map_err(|err| CliError::Usage(err.to_string()))?;
        host = host
            .workflow(reader)
            .map_err(|err| CliError::Usage(err.to_string()))?;
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
    // MCP servers for platform agents, started (or reached) before anything is served.
    let mcp_servers = match &mcp_config {
        Some(path) => {
            let servers = crate::mcp::read_config(path)?;
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
    let mut options = openharness_server::ServerOptions::default().api_keys(keys);
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
    // Platform sessions whose turn a dead process left unfinished (a crash here, or another
    // replica on the same PostgreSQL) are resumed from their logs.
    let recovery = platform.spawn_recovery(RECOVERY_INTERVAL);
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
        openharness_server::ConnectionLimits::default(),
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    )
    .await
    .map_err(CliError::Output);
    recovery.abort();
    served
}

/// One session as `sessions --json` prints it: the store's metadata, the workflow that owns
/// it (a fork's is its root's) and whether this program registers that workflow.
#[derive(Serialize)]
struct Row<'a> {
    id: &'a SessionId,
    created: DateTime<Utc>,
    last_event: DateTime<Utc>,
    count: u64,
    workflow: Option<&'a str>,
    parent: Option<&'a SessionId>,
    status: SessionStatus,
    hosted: bool,
    /// Its first input, cut short.
    title: Option<&'a str>,
    /// The agents it ran.
    agents: &'a [String],
    /// Input and output tokens.
    tokens: u64,
    /// What its agents reported costing, in US dollars.
    cost: f64,
    /// Questions waiting for an answer.
    open_requests: u64,
    /// The note of an interrupted import that left the session a prefix, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    unfinished: Option<&'a str>,
}

/// The sessions an interrupted import left marked unfinished, with their notes.
async fn unfinished(store: &dyn Store) -> Result<Vec<(SessionId, String)>, CliError> {
    store.unfinished().await.map_err(|source| CliError::Store {
        operation: "listing of unfinished sessions",
        store: store.describe(),
        source,
    })
}

/// Fails when the store met damage while listing (a session left out, with a warning): the
/// list printed is not the whole store.
async fn listed_whole(host: &openharness_host::Host) -> Result<(), CliError> {
    host.store().sync().await.map_err(|source| CliError::Store {
        operation: "listing of sessions",
        store: host.store().describe(),
        source,
    })
}

/// The host's query for `sessions`' options.
fn session_query(asked: crate::args::SessionsQuery) -> Result<SessionQuery, CliError> {
    let filtered = asked.search.is_some()
        || !asked.status.is_empty()
        || asked.workflow.is_some()
        || asked.agent.is_some()
        || asked.since.is_some()
        || asked.until.is_some()
        || asked.open
        || asked.fork_of.is_some()
        || asked.limit.is_some();
    let mut query = SessionQuery::default();
    query.search = asked.search;
    query.status = asked
        .status
        .iter()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            serde_json::from_value(serde_json::json!(s.trim())).map_err(|_| {
                CliError::Usage(format!(
                    "--status: `{s}` is not a status (running, idle, waiting or failed)"
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    query.workflow = asked.workflow;
    query.agent = asked.agent;
    query.since = asked.since;
    query.until = asked.until;
    query.open_request = asked.open.then_some(true);
    query.fork_of = asked.fork_of.as_deref().map(parse_session).transpose()?;
    query.sort = match asked.sort {
        Some(sort) => sort
            .parse()
            .map_err(|err| CliError::Usage(format!("--sort: {err}")))?,
        None if filtered => SessionSort::Recent,
        None => SessionSort::Oldest,
    };
    query.limit = asked.limit;
    Ok(query)
}

async fn sessions(
    context: &Context,
    json: bool,
    asked: crate::args::SessionsQuery,
) -> Result<(), CliError> {
    let host = context.host();
    let query = session_query(asked)?;
    let sessions = host
        .query_sessions(&query)
        .await
        .map_err(|e| context.explain(e))?
        .sessions;
    let unfinished: std::collections::HashMap<SessionId, String> =
        unfinished(host.store().as_ref())
            .await?
            .into_iter()
            .collect();
    let mut out = context.out();
    if json {
        let rows: Vec<Row<'_>> = sessions
            .iter()
            .map(|s| Row {
                unfinished: unfinished.get(&s.id).map(String::as_str),
                id: &s.id,
                created: s.created,
                last_event: s.last_event,
                count: s.len,
                workflow: s.workflow.as_deref(),
                parent: s.parent.as_ref(),
                status: s.status,
                hosted: s.hosted,
                title: s.title.as_deref(),
                agents: &s.agents,
                tokens: s.usage.input_tokens + s.usage.output_tokens,
                cost: s.cost,
                open_requests: s.open_requests,
            })
            .collect();
        let mut text = serde_json::to_string_pretty(&rows)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
        out.flush()?;
        return listed_whole(host).await;
    }
    if sessions.is_empty() {
        writeln!(
            out,
            "No sessions yet in {}. This program runs {}.",
            host.store().describe(),
            list(&host.workflow_names())
        )?;
    }
    if !sessions.is_empty() {
        writeln!(
            out,
            "{:<38} {:<18} {:<8} {:>7}  {:<25} {:<38} TITLE",
            "SESSION", "WORKFLOW", "STATUS", "EVENTS", "LAST EVENT", "PARENT"
        )?;
    }
    for info in &sessions {
        let workflow = match (&info.workflow, info.hosted) {
            (Some(name), true) => name.clone(),
            (Some(name), false) => format!("{name}*"),
            (None, _) => "-*".to_owned(),
        };
        writeln!(
            out,
            "{:<38} {:<18} {:<8} {:>7}  {:<25} {:<38} {}",
            info.id.as_str(),
            workflow,
            info.status.as_str(),
            info.len,
            info.last_event.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
            info.parent.as_ref().map_or("-", SessionId::as_str),
            info.title.as_deref().map_or_else(
                || "-".to_owned(),
                |title| title.chars().take(48).collect::<String>()
            ),
        )?;
    }
    for (session, note) in &unfinished {
        writeln!(out, "UNFINISHED  {session}  {note}")?;
    }
    out.flush()?;
    listed_whole(host).await?;
    if sessions.iter().any(|s| !s.hosted) {
        writeln!(
            out,
            "* recorded by a workflow this program does not register: `events` and `tape` show its events, not its states"
        )?;
    }
    Ok(())
}

/// Prints a session's events, read from the store one page at a time, so a long session
/// needs no more memory than a short one. Works for every session, whichever workflow
/// recorded it.
async fn events(context: &Context, session: &SessionId, json: bool) -> Result<(), CliError> {
    let host = context.host();
    let mut page = host
        .events(session, None, PAGE)
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = std::io::BufWriter::new(context.out());
    if json {
        // The same pretty JSON array as serializing a Vec, written element by element.
        let mut serializer = serde_json::Serializer::pretty(&mut out);
        let mut array = serializer.serialize_seq(None)?;
        loop {
            for recorded in &page.events {
                array.serialize_element(recorded)?;
            }
            let Some(after) = page.next_after else { break };
            page = host
                .events(session, Some(after), PAGE)
                .await
                .map_err(|e| context.explain(e))?;
        }
        array.end()?;
        writeln!(out)?;
    } else {
        loop {
            for recorded in &page.events {
                // One numbering: an event is named by the position it leads to (seq + 1).
                let (position, event) = (recorded.seq + 1, &recorded.event);
                writeln!(out, "{position:>5}  {:<20} {}", event.name, event.payload)?;
            }
            let Some(after) = page.next_after else { break };
            page = host
                .events(session, Some(after), PAGE)
                .await
                .map_err(|e| context.explain(e))?;
        }
    }
    out.flush()?;
    Ok(())
}

async fn tape(
    context: &Context,
    session: &SessionId,
    at: Option<u64>,
    json: bool,
) -> Result<(), CliError> {
    let host = context.host();
    let Some(at) = at else {
        let debugger = crate::Debugger::open(host, session, context.program())
            .await
            .map_err(|e| context.explain(e))?;
        return crate::debugger::run(debugger);
    };
    let view = host
        .tape_view(session, at)
        .await
        .map_err(|e| context.explain(e))?;
    let mut out = context.out();
    if json {
        let mut text = serde_json::to_string_pretty(&view)?;
        text.push('\n');
        out.write_all(text.as_bytes())?;
    } else {
        let current = view.current.as_ref().map_or_else(
            || "(none: initial state)".to_owned(),
            |e| e.event.name.to_string(),
        );
        let mut text = format!(
            "position {} of {}\ncurrent  {current}\n",
            view.position, view.len
        );
        if let Ok(Some(change)) = host.code_changed(session).await {
            text.push_str(&format!("code     {change}\n"));
        }
        if !view.skipped.is_empty() {
            text.push_str(&format!(
                "skipped  {} events ({} undecodable)\n",
                view.skipped.total(),
                view.skipped.undecodable
            ));
        }
        text.push_str("state\n");
        text.push_str(&serde_json::to_string_pretty(&view.state)?);
        text.push('\n');
        out.write_all(text.as_bytes())?;
    }
    Ok(())
}
