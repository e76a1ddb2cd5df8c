//! What the redb writer's parts share ([`super::writer`], its thread's loop
//! [`super::write_loop`], one group's transaction [`super::group`], the deferred answers
//! [`super::deferred`], the journal's replay): the jobs the writer thread takes ([`Job`],
//! [`Append`], [`SaveSnapshot`], [`Queued`]), the journal it makes appends durable with
//! ([`Journaled`]), what it and the callers both see ([`Shared`]), and [`poll_for`]. Types
//! only and one helper: every part imports them, they import none of the parts.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use openharness_core::{Envelope, SessionId, StoreError};
use tokio::sync::oneshot;

use super::journal::Journal;

/// One append: the batch, encoded by the caller, and where it must go.
pub(super) struct Append {
    pub(super) session: SessionId,
    /// The events as the session's record reads them
    /// ([`SessionRecord::what_it_reads`](super::layout::SessionRecord::what_it_reads)): payloads
    /// only where the writer needs them.
    pub(super) events: Vec<Envelope>,
    /// Each event's id (as u128) and JSON.
    pub(super) records: Vec<(u128, Vec<u8>)>,
    pub(super) expected_seq: u64,
}

/// A snapshot saved by a group commit, with a journal: its record holds the state, so the
/// snapshot is as durable as the group's appends without a durable redb commit of its own.
pub(super) struct SaveSnapshot {
    pub(super) session: SessionId,
    /// The number of events the state folds.
    pub(super) position: u64,
    /// The state's JSON.
    pub(super) state: String,
}

/// Work for the writer thread.
pub(super) enum Job {
    /// An append to commit.
    Append(Queued),
    /// A snapshot to save with the next group (only with a journal).
    Snapshot(SaveSnapshot, oneshot::Sender<Result<(), StoreError>>),
    /// Move the staged events to `events` (a commit on the caller found it due).
    Compact,
    /// Make every commit so far durable.
    Sync(oneshot::Sender<Result<(), StoreError>>),
    /// Checkpoint the journal (a commit on the caller wrote past the threshold).
    Checkpoint,
}

/// The journal a writer makes appends durable with, and what it knows of it.
pub(super) struct Journaled {
    journal: Mutex<Journal>,
    /// The lsn of the last record whose appends redb holds (committed, maybe not durably).
    pub(super) applied: AtomicU64,
    /// A checkpoint is made once this many bytes of records are written since the last.
    pub(super) checkpoint_bytes: u64,
}

impl Journaled {
    /// `journal`, whose records up to its last lsn redb holds, checkpointed every
    /// `checkpoint_bytes` of records.
    pub(super) fn new(journal: Journal, checkpoint_bytes: u64) -> Self {
        let applied = AtomicU64::new(journal.last_lsn());
        Self {
            journal: Mutex::new(journal),
            applied,
            checkpoint_bytes: checkpoint_bytes.max(1),
        }
    }

    /// The lsn of the last record whose appends redb holds: a durable commit that records it
    /// is a checkpoint. Read it with the tails locked.
    pub(super) fn applied(&self) -> u64 {
        self.applied.load(Ordering::Acquire)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Journal> {
        self.journal.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An append waiting for the writer thread, and where to send its result (`None`: it was
/// acknowledged when queued, see [`super::deferred`], or answered once its journal record
/// was durable).
pub(super) struct Queued {
    pub(super) append: Append,
    pub(super) reply: Option<oneshot::Sender<Result<u64, StoreError>>>,
}

/// What the writer thread and the callers both see.
#[derive(Default)]
pub(super) struct Shared {
    /// When the oldest commit that is not durable yet was made (`None`: all are durable).
    /// Read and changed only inside a write transaction.
    pub(super) not_durable_since: Mutex<Option<Instant>>,
    /// Appends sent to the writer thread and not answered yet.
    pub(super) queued: AtomicUsize,
    /// Whether a caller is committing its own append.
    pub(super) caller_committing: AtomicBool,
    /// How many appends the last commit held.
    pub(super) last_group: AtomicUsize,
}

impl Shared {
    pub(super) fn pending(&self) -> Option<Instant> {
        *self
            .not_durable_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn set_pending(&self, since: Option<Instant>) {
        *self
            .not_durable_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = since;
    }
}

/// Calls `poll` until it is ready or `spin` has passed, yielding the core between calls (it
/// is called once even when `spin` is zero): what it gave, or `None` when the time ran out.
pub(super) fn poll_for<T>(spin: Duration, mut poll: impl FnMut() -> Poll<T>) -> Option<T> {
    let until = Instant::now() + spin;
    loop {
        match poll() {
            Poll::Ready(value) => return Some(value),
            Poll::Pending if Instant::now() >= until => return None,
            Poll::Pending => std::thread::yield_now(),
        }
    }
}
