//! JSONL export and import: sessions as text, one event per line, to move them between stores
//! (a laptop's redb file and a team's PostgreSQL) or keep them in version control.
//!
//! Each line is the event's envelope with its session and seq:
//!
//! ```text
//! {"session":"0190…","seq":0,"id":"0190…","name":"workflow:started","payload":{…},"timestamp":"…","causedBy":null}
//! ```
//!
//! [`export`] writes a session as [`Store::stream_events`] yields it, never holding more than
//! one page of events in memory. [`export_with_ancestors`] writes a fork's ancestors first, so
//! the export of a fork imports on its own. [`import`] appends each session's lines in batches at the seqs
//! the lines carry, so importing the same file twice stores every event once (the second import
//! is a retry), and a session that already holds other events is a conflict. Malformed input is
//! a [`TransferError`] naming the line.

use std::io::{BufRead, Write};

use openharness_core::builtin::Builtin;
use openharness_core::{Envelope, SessionId, Store, StoreError};
use serde::{Deserialize, Serialize};

/// Events per append when importing. (Exports read through [`Store::stream_events`], a page
/// at a time.)
pub const BATCH: usize = 1000;

/// Why an export or import failed. Import errors name the 1-based line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// A line is not a valid event line.
    #[error("line {line}: {message}")]
    Malformed {
        /// The line number, from 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A line's seq is not the next one for its session.
    #[error(
        "line {line}: session {session} continues at seq {expected}, but the line has seq {found}"
    )]
    OutOfOrder {
        /// The line number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The seq the line should have.
        expected: u64,
        /// The seq it has.
        found: u64,
    },
    /// The input could not be read.
    #[error("line {line}: cannot read the input: {source}")]
    Read {
        /// The line number, from 1.
        line: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write the export: {0}")]
    Write(#[source] std::io::Error),
    /// The store failed; for an import, `line` is the first line of the batch it refused.
    #[error("{}store {store}: {source}", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Store {
        /// The first line of the refused batch (imports only).
        line: Option<u64>,
        /// The store, as [`Store::describe`] gives it.
        store: String,
        /// What the store reported.
        source: StoreError,
    },
    /// The session to export has no events.
    #[error("session {session} not found in {store}")]
    NotFound {
        /// The session.
        session: SessionId,
        /// The store, as [`Store::describe`] gives it.
        store: String,
    },
    /// The session to export is a fork whose parent is not in the store.
    #[error(
        "session {session} is forked from {parent}, which is not in {store}: the export would not import on its own"
    )]
    MissingParent {
        /// The fork.
        session: SessionId,
        /// Its missing parent.
        parent: SessionId,
        /// The store, as [`Store::describe`] gives it.
        store: String,
    },
}

/// One line of the format (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
struct Line<E> {
    session: SessionId,
    seq: u64,
    #[serde(flatten)]
    event: E,
}

/// How deep a chain of forks [`export_with_ancestors`] follows.
const MAX_ANCESTORS: usize = 64;

/// Writes `session` and, when it is a fork, the sessions it descends from (oldest first, each
/// whole), so the file imports on its own into an empty store; returns how many events. A fork
/// whose parent is not in the store is [`TransferError::MissingParent`], and nothing is
/// written.
///
/// ```
/// use openharness_core::builtin::SessionForked;
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let (parent, child) = (SessionId::new(), SessionId::new());
/// from.append(&parent, &[Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None)], 0).await?;
/// let forked = SessionForked { parent: parent.clone(), position: 1, workflow: None };
/// from.append(&child, &[Envelope::typed(&forked, None)?], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export_with_ancestors(&from, &child, &mut file).await?, 2);
/// jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(to.all_events(&parent).await?.len(), 1);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export_with_ancestors<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let failed = |source| TransferError::Store {
        line: None,
        store: store.describe(),
        source,
    };
    let mut chain = vec![session.clone()];
    let mut current = session.clone();
    for _ in 0..MAX_ANCESTORS {
        let first = store.events(&current, 0..1).await.map_err(failed)?;
        let parent = match first.first().map(Builtin::decode) {
            Some(Some(Ok(Builtin::SessionForked(forked)))) => forked.parent,
            _ => break,
        };
        if store
            .events(&parent, 0..1)
            .await
            .map_err(failed)?
            .is_empty()
        {
            return Err(TransferError::MissingParent {
                session: current,
                parent,
                store: store.describe(),
            });
        }
        chain.push(parent.clone());
        current = parent;
    }
    let mut count = 0;
    for session in chain.iter().rev() {
        count += export(store, session, &mut out).await?;
    }
    Ok(count)
}

/// Writes every event of `session` to `out` as JSONL; returns how many. The session is read
/// with [`Store::stream_events`], so a session of any length needs memory for one page only.
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let session = SessionId::new();
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// from.append(&session, &[event.clone()], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export(&from, &session, &mut file).await?, 1);
/// let summary = jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(summary.events, 1);
/// assert_eq!(to.all_events(&session).await?, vec![event]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let mut events = store.stream_events(session, 0..u64::MAX);
    let mut count = 0u64;
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(|source| TransferError::Store {
            line: None,
            store: store.describe(),
            source,
        })?;
        let line = Line {
            session: session.clone(),
            seq: recorded.seq,
            event: &recorded.event,
        };
        serde_json::to_writer(&mut out, &line).map_err(|err| TransferError::Write(err.into()))?;
        out.write_all(b"\n").map_err(TransferError::Write)?;
        count += 1;
    }
    out.flush().map_err(TransferError::Write)?;
    if count == 0 {
        return Err(TransferError::NotFound {
            session: session.clone(),
            store: store.describe(),
        });
    }
    Ok(count)
}

/// What [`import`] stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportSummary {
    /// Each imported session with its length after the import, in order of first appearance.
    pub sessions: Vec<(SessionId, u64)>,
    /// How many event lines were read.
    pub events: u64,
}

/// A batch being collected for one session.
struct Pending {
    session: SessionId,
    first_seq: u64,
    first_line: u64,
    events: Vec<Envelope>,
}

/// Reads JSONL from `input` and appends it to `store` (see the module docs). Blank lines are
/// skipped. Each session's lines must have seqs 0, 1, 2, … in order; sessions may interleave.
pub async fn import<S: Store + ?Sized>(
    store: &S,
    input: impl BufRead,
) -> Result<ImportSummary, TransferError> {
    let mut summary = ImportSummary::default();
    let mut next: std::collections::HashMap<SessionId, u64> = std::collections::HashMap::new();
    let mut pending: Option<Pending> = None;
    for (index, text) in input.lines().enumerate() {
        let line = index as u64 + 1;
        let text = text.map_err(|source| TransferError::Read { line, source })?;
        if text.trim().is_empty() {
            continue;
        }
        let parsed: Line<Envelope> =
            serde_json::from_str(&text).map_err(|err| TransferError::Malformed {
                line,
                message: format!("not an event line ({err})"),
            })?;
        let expected = next.get(&parsed.session).copied().unwrap_or(0);
        if parsed.seq != expected {
            return Err(TransferError::OutOfOrder {
                line,
                session: parsed.session,
                expected,
                found: parsed.seq,
            });
        }
        if expected == 0 {
            summary.sessions.push((parsed.session.clone(), 0));
        }
        next.insert(parsed.session.clone(), expected + 1);
        summary.events += 1;

        let same = pending
            .as_ref()
            .is_some_and(|p| p.session == parsed.session && p.events.len() < BATCH);
        if !same && let Some(batch) = pending.take() {
            flush(store, batch, &mut summary).await?;
        }
        pending
            .get_or_insert_with(|| Pending {
                session: parsed.session.clone(),
                first_seq: parsed.seq,
                first_line: line,
                events: Vec::with_capacity(BATCH),
            })
            .events
            .push(parsed.event);
    }
    if let Some(batch) = pending {
        flush(store, batch, &mut summary).await?;
    }
    Ok(summary)
}

async fn flush<S: Store + ?Sized>(
    store: &S,
    batch: Pending,
    summary: &mut ImportSummary,
) -> Result<(), TransferError> {
    let len = store
        .append(&batch.session, &batch.events, batch.first_seq)
        .await
        .map_err(|source| TransferError::Store {
            line: Some(batch.first_line),
            store: store.describe(),
            source,
        })?;
    if let Some(entry) = summary
        .sessions
        .iter_mut()
        .find(|(s, _)| *s == batch.session)
    {
        entry.1 = len;
    }
    Ok(())
}
