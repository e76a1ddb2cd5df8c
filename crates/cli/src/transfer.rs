//! `openharness export <session>` and `openharness import <file>`: sessions as JSONL, between
//! any two stores. `--store` names a redb file or, for these two commands, a `postgres://` URL.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use clap::Subcommand;
use openharness::store::{Access, OpenOptions, RedbOptions, is_postgres, jsonl};
#[cfg(feature = "postgres")]
use openharness::store::{PostgresError, PostgresOptions};
use openharness::{SessionId, Store, StoreError};

use crate::Output;

/// The transfer subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum TransferCommand {
    /// Write a session's events to stdout as JSONL (one event per line, between a begin and an
    /// end line that counts them), each line chained to the one before by its SHA-256 and the
    /// end line sealing the chain (`verify` checks it).
    Export {
        /// The session id.
        session: String,
    },
    /// Append the sessions in a JSONL file (from `export`) to the store, each session all or
    /// nothing; importing the same file twice stores every event once, and importing a grown
    /// export of a session appends only its new events. A session whose lines do not match
    /// its hash chain (the file was changed after the export) is refused, naming the line.
    Import {
        /// The JSONL file, or `-` for stdin.
        file: PathBuf,
        /// Import sessions whose lines do not match their hash chain instead of refusing
        /// them: for an export edited on purpose (a secret redacted from a payload, say).
        #[arg(long)]
        ignore_chain: bool,
    },
}

/// Why a transfer failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferCliError {
    /// The store could not be opened.
    #[error("could not open the store {store}")]
    Open {
        /// The store as `--store` named it.
        store: String,
        /// The cause.
        source: StoreError,
    },
    /// The file to import could not be opened.
    #[error("could not open {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The import failed (a malformed line, a store failure).
    #[error("could not import {}", path.display())]
    Import {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: jsonl::TransferError,
    },
    /// The export failed.
    #[error(transparent)]
    Export(jsonl::TransferError),
    /// The session id does not parse.
    #[error("invalid session id: {0}")]
    Session(String),
}

/// Opens the store `--store` names: PostgreSQL for a connection string (a `postgres://` or
/// `postgresql://` URL, or key-value `host=… dbname=…`), a running server for `http://…`
/// (read-only), else a redb file.
pub(crate) async fn open(store: &Path) -> Result<Box<dyn Store>, TransferCliError> {
    opened(store, open_any(store, Access::Write).await)
}

/// [`open`] for reading only: a redb file opened read-only (beside a process writing it, and
/// never created).
async fn open_to_read(store: &Path) -> Result<Box<dyn Store>, TransferCliError> {
    opened(store, open_any(store, Access::Read).await)
}

/// An opening's failure, naming the store (never with a password a URL carries).
fn opened(
    store: &Path,
    result: Result<Box<dyn Store>, StoreError>,
) -> Result<Box<dyn Store>, TransferCliError> {
    let name = store.to_string_lossy();
    result.map_err(|source| TransferCliError::Open {
        // Never print a password that the URL carries.
        store: openharness_store::redact_url(&name),
        source,
    })
}

/// Whether `--store` names a server (`http://…` or `https://…`).
pub(crate) fn is_remote(store: &str) -> bool {
    store.starts_with("http://") || store.starts_with("https://")
}

/// The store `store` names (see [`open`]), with the store's own error: a running server for
/// `http://…` (read-only; feature `remote`), else what [`openharness_store::open_with`] opens
/// (PostgreSQL with feature `postgres`), with the CLI's choices for each kind.
pub(crate) async fn open_any(store: &Path, access: Access) -> Result<Box<dyn Store>, StoreError> {
    let name = store.to_string_lossy();
    if is_remote(&name) {
        #[cfg(feature = "remote")]
        return Ok(Box::new(crate::remote::RemoteStore::new(&name)?));
        #[cfg(not(feature = "remote"))]
        return Err(StoreError::Invalid(
            "this is a server's address, and this program was built without reading a store \
             through a server (openharness-cli's feature `remote`)"
                .to_owned(),
        ));
    }
    let mut options = OpenOptions::new(access);
    if is_postgres(&name) {
        #[cfg(feature = "postgres")]
        {
            options = options.postgres(postgres_options()?);
        }
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::Invalid(
            "this is a PostgreSQL connection string, and this program was built without the \
             PostgreSQL store (openharness-cli's feature `postgres`)"
                .to_owned(),
        ));
    } else if access == Access::Write {
        // The CLI's runtime is multi-threaded and never a LocalSet, so a lone writer (a run
        // recording its session) may commit on its own thread; the file is shared with the
        // CLI's readers in other processes (two fsyncs per commit instead of one: the price of
        // never refusing `sessions` while `serve` records).
        options = options.redb(
            RedbOptions::default()
                .commit_on_caller(true)
                .share_with_readers(true),
        );
    }
    openharness_store::open_with(store, options).await
}

/// Shows on stderr how far the import of a session that takes several appends has got.
fn show_progress(progress: jsonl::ImportProgress<'_>) {
    if progress.total > jsonl::BATCH as u64 {
        let line = format!(
            "importing {}: {} of {} events stored\n",
            progress.session, progress.stored, progress.total
        );
        // Progress is a courtesy: a closed stderr does not stop the import.
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

/// The environment variable that sizes a PostgreSQL store's pool of query connections.
#[cfg(feature = "postgres")]
pub(crate) const POSTGRES_CONNECTIONS: &str = "OPENHARNESS_POSTGRES_CONNECTIONS";

/// A PostgreSQL store's options: the pool's size from [`POSTGRES_CONNECTIONS`] when it is set
/// (an invalid one is an error, never ignored), else the default.
#[cfg(feature = "postgres")]
fn postgres_options() -> Result<PostgresOptions, StoreError> {
    let options = PostgresOptions::default();
    match std::env::var(POSTGRES_CONNECTIONS) {
        Ok(text) if !text.trim().is_empty() => match text.trim().parse::<usize>() {
            Ok(connections) => Ok(options.connections(connections)),
            Err(_) => Err(PostgresError::Connections(text).into()),
        },
        Err(std::env::VarError::NotUnicode(raw)) => {
            Err(PostgresError::Connections(raw.to_string_lossy().into_owned()).into())
        }
        _ => Ok(options),
    }
}

pub(crate) async fn run(
    command: TransferCommand,
    store: &Path,
    out: Output,
) -> Result<(), TransferCliError> {
    match command {
        TransferCommand::Export { session } => {
            let session: SessionId = session
                .parse()
                .map_err(|err| TransferCliError::Session(format!("{err}")))?;
            let store = open_to_read(store).await?;
            let mut out = std::io::BufWriter::new(out);
            // A fork's export carries its ancestors, so it imports on its own.
            jsonl::export_with_ancestors(&*store, &session, &mut out)
                .await
                .map_err(TransferCliError::Export)?;
            out.flush()
                .map_err(|err| TransferCliError::Export(jsonl::TransferError::Write(err)))?;
            Ok(())
        }
        TransferCommand::Import { file, ignore_chain } => {
            let store = open(store).await?;
            let options = jsonl::ImportOptions::default().ignore_chain(ignore_chain);
            let summary = if file == Path::new("-") {
                jsonl::import_with(&*store, std::io::stdin().lock(), options, show_progress).await
            } else {
                let reader =
                    std::fs::File::open(&file).map_err(|source| TransferCliError::File {
                        path: file.clone(),
                        source,
                    })?;
                jsonl::import_with(&*store, BufReader::new(reader), options, show_progress).await
            }
            .map_err(|source| TransferCliError::Import {
                path: file.clone(),
                source,
            })?;
            let mut text = String::new();
            for (session, len) in &summary.sessions {
                text.push_str(&format!("{session}: {len} events\n"));
            }
            for session in &summary.unmarked {
                text.push_str(&format!(
                    "warning: the export of {session} has no end marker (written before markers \
                     existed?): imported without a check that it is whole\n"
                ));
            }
            for session in &summary.finished {
                text.push_str(&format!(
                    "{session}: finished (an earlier import of it had been interrupted)\n"
                ));
            }
            text.push_str(&format!(
                "Imported {} events in {} sessions into {} ({} new).\n",
                summary.events,
                summary.sessions.len(),
                store.describe(),
                summary.appended
            ));
            let mut out = out;
            out.write_all(text.as_bytes())
                .map_err(|err| TransferCliError::Export(jsonl::TransferError::Write(err)))?;
            Ok(())
        }
    }
}
