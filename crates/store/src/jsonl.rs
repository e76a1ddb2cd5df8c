//! JSONL export and import: sessions as text, one JSON object per line, to move them between
//! stores (a laptop's redb file and a team's PostgreSQL) or keep them in version control.
//!
//! # Format
//!
//! Each session's export is a block of lines: a begin line, one line per event (its envelope
//! with its session and seq, seqs 0, 1, 2, … in order), and an end line with the number of
//! event lines, so that a truncated file cannot import as a shorter session:
//!
//! ```text
//! {"session":"0190…","begin":true,"chain":"sha256"}
//! {"session":"0190…","seq":0,"id":"0190…","name":"workflow:started","payload":{…},"timestamp":"…","causedBy":null,"chain":"5f1c…"}
//! {"session":"0190…","seq":1,"id":"0190…","name":"user:input","payload":{…},"timestamp":"…","causedBy":null,"chain":"a93e…"}
//! {"session":"0190…","end":true,"count":2,"chain":"a93e…","workflow":"planner-executor","code":"fda2…"}
//! ```
//!
//! A file holds any number of blocks (a fork's export holds its ancestors' first, see
//! [`export_with_ancestors`]); blocks of different sessions may interleave line by line.
//! Blank lines are skipped.
//!
//! A block that begins with an event line instead of a begin line comes from an export written
//! before these markers existed: it still imports when the file ends without its end line, with
//! a warning (`tracing::warn!`) and its session listed in [`ImportSummary::unmarked`], since
//! nothing can tell whether it was cut short. A block opened by a begin line must be closed by
//! its end line with the right count, else the import fails ([`TransferError::Truncated`],
//! [`TransferError::Count`]).
//!
//! # Integrity
//!
//! An export's blocks are hash chains (`docs/export-format.md` says it for a reader who
//! recomputes them with other tools): the begin line names the algorithm (`"chain":"sha256"`),
//! each event line carries as its last member `"chain"`, the value `h_i = SHA-256(h_{i-1} ‖
//! line_i)` (see [`ChainHash`]: `h_0` is 32 zero bytes, `line_i` the line's bytes without that
//! member, exactly the line an export without chains wrote), and the end line seals the block:
//! the chain head (the last value), and what its events say about it — the workflow and code
//! fingerprint its `workflow:started` recorded (a fork's workflow from its `session:forked`) and
//! the last state hash its events recorded (`stateHash`, at `stateHashSeq`). So a changed,
//! removed, added or moved line is found at the first line that no longer matches, and the
//! head, published elsewhere, pins the whole block. The end line's chain head and seal are
//! checked where it records them (a member it leaves out claims nothing): each event line
//! carries its own value, so the head repeats the last line's and cannot stop a deliberate
//! change on its own; only a head kept apart from the file can.
//!
//! An import checks the chain of every block that has one (its begin line names it, or its
//! first event line carries a value) and refuses a block whose lines do not match it with
//! [`TransferError::Chain`], naming the line; [`ImportOptions::ignore_chain`] imports such a
//! block anyway (an export edited by hand, say to redact a secret). Blocks without a chain
//! (exports written before chains, or by other tools) import as before;
//! [`ImportSummary::blocks`] says which blocks had one, with their heads and seals.
//! `openharness verify` checks a file's chains and replays its sessions to the state hashes
//! they recorded.
//!
//! # Import
//!
//! [`import`](fn@import) reads each line once. It validates a session's whole block before
//! appending any of it — every line parses, names are non-empty, at most [`MAX_NAME_BYTES`]
//! bytes and free of control characters, seqs run 0, 1, 2, … without a gap, no event id
//! repeats, and the lines at seqs the target already holds carry the ids stored there — so an
//! invalid block stores nothing of its session, and the error names the exact line and what
//! is wrong with it. A block is appended when its end line is read (or at the end of an
//! unmarked file), in batches of [`BATCH`] events however its lines interleave with other
//! sessions'.
//!
//! The target may already hold a prefix of the session (an earlier import of a shorter export of
//! it): the lines at those seqs must match the stored ids, else [`TransferError::Diverged`]
//! names the first seq that differs; only the events beyond are appended. So importing the same
//! file twice stores every event once, and importing a grown export appends only the new tail
//! (incremental sync from one store to another).
//!
//! Memory: while a block is being read, at most [`BATCH`] of its new events stay in memory; the
//! rest go to an anonymous temporary file (deleted when the import ends) and are read back to
//! append. What grows with a session's length is the set of its event ids (kept to refuse a
//! repeated one), about 50 bytes per event: some 50 MB for a session of a million events. A
//! store failure while appending a validated block (the disk fills up, another writer appends
//! to the same session) is [`TransferError::Interrupted`]: a session the import created is
//! removed again, so nothing of it is kept; a session that already held a prefix keeps what
//! was appended, and importing the file again appends the rest.
//!
//! A process killed while a block is appended cannot roll back: a block whose new events
//! take more than one append is [marked unfinished](Store::mark_unfinished) before its first
//! append, and the mark cleared after its last, so a session an import was killed in reads as
//! a prefix marked as one (`openharness sessions` and `check` say so). Importing the same
//! export again appends the rest and clears the mark ([`ImportSummary::finished`]).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};

use openharness_core::builtin::Builtin;
use openharness_core::{Envelope, EventId, SessionId, Store, StoreError, adapter::EVENT_PAGE};
use serde::{Deserialize, Serialize};

/// Events per append when importing. (Exports read through [`Store::stream_events`], a page
/// at a time.)
pub const BATCH: usize = 1000;

/// The longest event name [`import`](fn@import) accepts, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// Why an export or import failed. Import errors name the 1-based line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// A line is not a valid event line (or marker), or the event it carries is invalid.
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
    /// A session's block began with a begin line and the file ends before its end line.
    #[error(
        "the export of session {session} ends after line {line} without its end marker: truncated?"
    )]
    Truncated {
        /// The session.
        session: SessionId,
        /// The block's last line.
        line: u64,
    },
    /// A session's end line counts a different number of event lines than its block holds.
    #[error(
        "line {line}: the end marker of session {session} counts {count} events, but its export holds {found}: lines lost or added?"
    )]
    Count {
        /// The end line's number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The count the end line carries.
        count: u64,
        /// How many event lines the block holds.
        found: u64,
    },
    /// The target already holds the session, with a different event at a seq the file covers.
    #[error(
        "line {line}: the store's session {session} differs from the file at seq {seq}: the store holds {}, the file event {found}",
        stored.map_or_else(|| "no event".to_owned(), |id| format!("event {id}"))
    )]
    Diverged {
        /// The line number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The first seq that differs.
        seq: u64,
        /// The event id the store holds there.
        stored: Option<EventId>,
        /// The file's event id at that seq.
        found: EventId,
    },
    /// A line of a block that has a hash chain does not match it (see the module docs'
    /// "Integrity"): the file was changed after it was exported. The line is the first that
    /// does not match; [`ImportOptions::ignore_chain`] imports the block anyway.
    #[error("line {line}: session {session}{}: {problem}", seq.map(|seq| format!(", seq {seq}")).unwrap_or_default())]
    Chain {
        /// The line number, from 1.
        line: u64,
        /// The session whose block it is.
        session: SessionId,
        /// The seq of the event on the line (none for an end line).
        seq: Option<u64>,
        /// How it does not match.
        problem: Box<ChainBreak>,
    },
    /// The input could not be read.
    #[error("line {line}: cannot read the input")]
    Read {
        /// The line number, from 1.
        line: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write the export")]
    Write(#[source] std::io::Error),
    /// The temporary file that holds a long session's events during an import failed.
    #[error("cannot buffer the import in a temporary file")]
    Buffer(#[source] std::io::Error),
    /// The store failed; for an import, `line` is the line being checked against the store, or
    /// the first line of the batch it refused.
    #[error("{}store {store} failed", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Store {
        /// The line being checked, or the first line of the refused batch (imports only).
        line: Option<u64>,
        /// The store, as [`Store::describe`] gives it.
        store: String,
        /// What the store reported.
        source: StoreError,
    },
    /// Appending a validated block failed part way (the disk filled up, another writer
    /// appended to the session). A session the import created is removed again, so nothing of
    /// it is kept (`removed`); a session that already held a prefix keeps what was appended,
    /// and importing the same file again appends the rest. `source` says what failed.
    #[error(
        "the import of session {session} stopped after storing {appended} of its new events{}",
        if *removed {
            "; the session was new, and was removed again: nothing of it is kept"
        } else {
            "; import the file again to append the rest"
        }
    )]
    Interrupted {
        /// The session.
        session: SessionId,
        /// How many of its new events had been appended when it failed.
        appended: u64,
        /// Whether the session, new before the import, was removed again.
        removed: bool,
        /// What failed.
        source: Box<TransferError>,
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

/// How a line does not match its block's hash chain ([`TransferError::Chain`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ChainBreak {
    /// An event line does not hash to the chain value it carries: it was changed, or the line
    /// before it in its block is not the one it followed when it was exported (a line removed,
    /// added or moved).
    #[error(
        "the line does not hash to the chain value it carries: it was changed after the export, or the line before it is not the one it followed"
    )]
    Mismatch,
    /// An event line of a block that has a chain carries no chain value.
    #[error("the line carries no chain value, but its block has a hash chain")]
    Unchained,
    /// A line carries a chain value (an end line, a chain head) in a block whose earlier
    /// lines have none: its begin line or its first event line lost theirs.
    #[error(
        "the line carries a chain value, but the lines before it in its block have none (a begin or event line removed or changed?)"
    )]
    Undeclared,
    /// A begin line names a chain algorithm this version does not know.
    #[error(
        "the begin line names the chain algorithm {0:?}; this version knows \"{CHAIN_ALGORITHM}\""
    )]
    Algorithm(String),
    /// The end line's chain head is not the value the block's event lines chain to.
    #[error(
        "the end line records the chain head {recorded}, but the block's event lines chain to {computed}"
    )]
    Head {
        /// The head the end line records (as written).
        recorded: String,
        /// The value the event lines chain to.
        computed: ChainHash,
    },
    /// The end line records another value of a seal field than the block's events give.
    #[error(
        "the end line records {field} {}, but the block's events give {}",
        show(recorded),
        show(events)
    )]
    Seal {
        /// The field (`workflow`, `code`, `stateHash`, `stateHashSeq`).
        field: &'static str,
        /// What the end line records.
        recorded: Option<String>,
        /// What the events give.
        events: Option<String>,
    },
}

fn show(value: &Option<String>) -> String {
    value
        .as_deref()
        .map_or_else(|| "none".to_owned(), |v| format!("{v:?}"))
}

/// One event line of the format (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
struct Line<E> {
    session: SessionId,
    seq: u64,
    #[serde(flatten)]
    event: E,
}

/// A begin or end line of the format (see the module docs): a begin line may name the
/// block's chain algorithm (`chain`); an end line may carry the chain head (`chain`) and the
/// seal: `workflow`, `code`, `stateHash` and `stateHashSeq`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Marker {
    session: SessionId,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    begin: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    end: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workflow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_hash: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_hash_seq: Option<u64>,
}

impl Marker {
    /// A begin line of `session`, naming the chain algorithm.
    fn begin(session: &SessionId) -> Self {
        Self {
            session: session.clone(),
            begin: true,
            end: false,
            count: None,
            chain: Some(CHAIN_ALGORITHM.to_owned()),
            workflow: None,
            code: None,
            state_hash: None,
            state_hash_seq: None,
        }
    }

    /// The end line of `session`'s block of `count` events, sealed with its chain `head` and
    /// the `facts` its events gave.
    fn end(session: &SessionId, count: u64, head: &ChainHash, facts: Facts) -> Self {
        Self {
            session: session.clone(),
            begin: false,
            end: true,
            count: Some(count),
            chain: Some(head.to_string()),
            workflow: facts.workflow,
            code: facts.code,
            state_hash: facts.state_hash,
            state_hash_seq: facts.state_hash_seq,
        }
    }
}

/// What [`import_with_progress`] calls after each append.
type Progress<'p> = dyn FnMut(ImportProgress<'_>) + Send + 'p;

mod chain;
mod export;
mod import;

use chain::Facts;
pub use chain::{CHAIN_ALGORITHM, ChainHash, InvalidChainHash};
pub use export::{export, export_with_ancestors};
pub use import::{
    ImportOptions, ImportProgress, ImportSummary, ImportedBlock, import, import_with,
    import_with_progress,
};

/// An import or export error as the workflow error every part of Open Harness composes into
/// (a store failure as [`openharness_core::Error::Store`], anything else as
/// [`openharness_core::Error::Other`]), so `?` works in a `main` returning
/// `openharness::Error`.
impl From<TransferError> for openharness_core::Error {
    fn from(err: TransferError) -> Self {
        match err {
            TransferError::Store {
                store,
                source,
                line: None,
            } => Self::Store {
                store,
                session: None,
                source,
            },
            other => Self::Other(Box::new(other)),
        }
    }
}
