//! The dispatch of every command to its body ([`run`]), and opening the store `--store`
//! names. Every command is a file under `commands/` (`turns` holds `start`, `send`, `respond`
//! and `resume`); `export` and `import` live in `transfer.rs` beside the store opening they
//! share.
//!
//! A new command is three steps: a variant of [`Command`] in `args.rs` (its flags, with clap's
//! derive), a file here under `commands/` with its body (`pub(crate) async fn run(…, context:
//! &Context) -> Result<(), CliError>`), and one arm in [`run`] that calls it. A command that
//! only reads the store is also listed in `Command::reads_only` (`args.rs`), so it opens the
//! store read-only beside a running server; one that needs no store, or the file to itself, is
//! run before the store is opened, in `Cli::dispatch` (`lib.rs`), as `compact` and `verify`
//! are.
//!
//! A command that needs crates a lean build leaves out is behind its feature (`Cargo.toml`'s
//! `[features]`): `#[cfg(feature = "…")]` on its variant, its module here and its arm in
//! [`run`], and on its `CliError` variant if it has one.
//!
//! Every command reaches workflows through the [`Host`](openharness_host::Host) only; commands
//! write to the [`Context`]'s output and fail with a [`CliError`].

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use openharness::store::RedbError;
use openharness::{SessionId, SessionStatus, Store, adapter::ErrorChain};
use openharness_host::{SessionQuery, SessionSort, list_names};
use serde::Serialize;

use crate::Context;
use crate::args::Command;
use crate::error::CliError;
use crate::shared::parse_session;

pub(crate) mod annotate;
mod bisect;
mod check;
pub(crate) mod compact;
pub(crate) mod diff;
#[cfg(feature = "eval")]
pub(crate) mod eval;
pub(crate) mod events;
pub(crate) mod fork;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
#[cfg(feature = "otel")]
pub(crate) mod otel;
#[cfg(feature = "platform")]
pub(crate) mod platform;
pub(crate) mod replay;
#[cfg(feature = "server")]
pub(crate) mod serve;
#[cfg(feature = "remote")]
mod served;
mod sessions;
mod tape;
pub(crate) mod turns;
pub(crate) mod verify;

use check::check;
use events::events;
use sessions::{sessions, unfinished};
use tape::tape;

/// Opens the store `--store` names: a redb file (read-only when `reads_only`), PostgreSQL for
/// a connection string (`postgres://…` or key-value `host=… dbname=…`), a new memory store
/// (`memory:`), or a running server (`http://…`, read-only), with any password redacted from
/// errors.
pub(crate) async fn open_store(path: &Path, reads_only: bool) -> Result<Arc<dyn Store>, CliError> {
    let name = path.to_string_lossy();
    if openharness::store::is_postgres(&name) {
        return Ok(Arc::from(crate::transfer::open(path).await?));
    }
    let access = if reads_only {
        openharness::store::Access::Read
    } else {
        openharness::store::Access::Write
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
        Command::Start(args) => turns::start(args, context).await,
        Command::Send(args) => turns::send(args, context).await,
        Command::Respond(args) => turns::respond(args, context).await,
        #[cfg(feature = "remote")]
        Command::Cancel(args) => turns::cancel(args, context).await,
        Command::Resume(args) => turns::resume(args, context).await,
        Command::Sessions { json, query } => sessions(context, json, query).await,
        Command::Annotate(args) => annotate::annotate(args, context).await,
        Command::Feedback { session, json } => annotate::feedback(context, &session, json).await,
        Command::Events { session, json } => events(context, &parse_session(&session)?, json).await,
        Command::Tape { session, at, json } => {
            tape(context, &parse_session(&session)?, at, json).await
        }
        Command::Fork(args) => fork::run(args, context).await,
        Command::Diff { a, b, json } => diff::run(context, &a, &b, json).await,
        Command::Bisect { a, b, json } => bisect::run(context, &a, b.as_deref(), json).await,
        Command::Replay {
            session,
            all,
            search,
            from,
            junit,
            jobs,
            json,
        } => match (session, all) {
            (Some(session), false) => replay::run(context, &session, json).await,
            _ => {
                let asked = replay::All {
                    search,
                    from,
                    junit,
                    jobs,
                    json,
                };
                replay::all(context, asked).await
            }
        },
        #[cfg(feature = "server")]
        Command::Serve(args) => serve::run(args, context).await,
        Command::Check => check(context).await,
        // Run before the store is opened (it needs the file to itself): see `Cli::dispatch`.
        Command::Compact => Err(CliError::Usage(
            "compact runs on a store no process has open".into(),
        )),
        // Run before the store is opened (it needs none: the export is read into memory).
        Command::Verify { .. } => Err(CliError::Usage("verify runs without a store".into())),
        #[cfg(feature = "platform")]
        Command::Platform(command) => platform::run(command, context).await,
        #[cfg(feature = "eval")]
        Command::Eval(command) => eval::run(command, context).await,
        #[cfg(feature = "mcp")]
        Command::Mcp(mcp::McpCommand::Serve(args)) => mcp::serve(args, context).await,
        // Run before the store is opened (it needs none): see `Cli::dispatch`.
        #[cfg(feature = "mcp")]
        Command::Mcp(mcp::McpCommand::Tools(_)) => {
            Err(CliError::Usage("mcp tools runs without a store".into()))
        }
        #[cfg(feature = "otel")]
        Command::Otel(command) => otel::run(command, context).await,
        Command::Transfer(command) => {
            Ok(crate::transfer::run(command, context.store_path(), context.out()).await?)
        }
        Command::Extra(_) => Err(CliError::Usage("this program has no such command".into())),
    }
}
