//! The dispatch of every command to its body ([`run`]), opening the store `--store` names,
//! and the two reads too short for a file of their own (`events`, `tape`). Every other command
//! is a file under `commands/` (`turns` holds `start`, `send`, `respond` and `resume`);
//! `export` and `import` live in `transfer.rs` beside the store opening they share.
//!
//! A new command is three steps: a variant of [`Command`] in `args.rs` (its flags, with clap's
//! derive), a file here under `commands/` with its body (`pub(crate) async fn run(…, context:
//! &mut Context) -> Result<(), CliError>`), and one arm in [`run`] that calls it.
//!
//! Every command reaches workflows through the [`Host`](openharness_host::Host) only; commands
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

mod check;
pub(crate) mod compact;
pub(crate) mod diff;
pub(crate) mod eval;
pub(crate) mod fork;
pub(crate) mod mcp;
pub(crate) mod otel;
pub(crate) mod platform;
pub(crate) mod replay;
mod serve;
mod sessions;
pub(crate) mod turns;

use check::check;
use serve::{Access, Mount, serve};
use sessions::{sessions, unfinished};

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
        Command::Start(args) => crate::commands::turns::start(args, context).await,
        Command::Send(args) => crate::commands::turns::send(args, context).await,
        Command::Respond(args) => crate::commands::turns::respond(args, context).await,
        Command::Resume(args) => crate::commands::turns::resume(args, context).await,
        Command::Sessions { json, query } => sessions(context, json, query).await,
        Command::Events { session, json } => events(context, &parse_session(&session)?, json).await,
        Command::Tape { session, at, json } => {
            tape(context, &parse_session(&session)?, at, json).await
        }
        Command::Fork(args) => crate::commands::fork::run(args, context).await,
        Command::Diff { a, b, json } => crate::commands::diff::run(context, &a, &b, json).await,
        Command::Replay { session, json } => {
            crate::commands::replay::run(context, &session, json).await
        }
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
        Command::Platform(command) => crate::commands::platform::run(command, context).await,
        Command::Eval(command) => crate::commands::eval::run(command, context).await,
        Command::Mcp(crate::commands::mcp::McpCommand::Serve(args)) => {
            crate::commands::mcp::serve(args, context).await
        }
        // Run before the store is opened (it needs none): see `Cli::dispatch`.
        Command::Mcp(crate::commands::mcp::McpCommand::Tools(_)) => {
            Err(CliError::Usage("mcp tools runs without a store".into()))
        }
        Command::Otel(command) => crate::commands::otel::run(command, context).await,
        Command::Transfer(command) => {
            Ok(crate::transfer::run(command, context.store_path(), context.out()).await?)
        }
        Command::Extra(_) => Err(CliError::Usage("this program has no such command".into())),
    }
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
