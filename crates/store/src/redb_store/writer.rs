//! Group commit for [`RedbStore`](super::RedbStore) appends: one writer thread takes every
//! append waiting at the moment, applies them all in one write transaction and commits it
//! once (one fsync), then answers each caller. Each caller still returns only after its events
//! are durable, and an append the rules refuse (conflict, invalid batch) writes nothing and
//! does not affect the others in its group. The thread's loop is [`super::write_loop`]; one
//! group's transaction is [`super::group`].
//!
//! With [`RedbOptions::commit_on_caller`](super::RedbOptions::commit_on_caller), a lone
//! writer (no append queued, and the last commit held one append) commits on its own thread
//! inside [`tokio::task::block_in_place`] instead: no hand-off to the writer thread and back,
//! which on a virtual machine costs two cross-CPU wake-ups per append. As soon as appends
//! overlap they queue for the writer thread again and share its commits.
//!
//! With a deferred [`RedbDurability`], commits are made non-durable
//! (in memory, redb's `Durability::None`) until one is due: the next group commit once the
//! period has passed, a timer on the writer thread when no append comes, [`Writer::sync`]
//! (the runtime's turn end), or closing the store. Which commits are not durable yet is
//! decided inside the write transaction, so a concurrent commit is never forgotten.
//!
//! With a deferred durability and no journal, an append whose outcome is certain is answered
//! at once and committed with the next group ([`super::deferred`]); the others are answered
//! after their commit, as above.
//!
//! With a [`journal`](super::journal), every commit is non-durable and the group's journal
//! record is what makes it durable: written and `fdatasync`ed before the commit. The callers
//! are answered as soon as it is durable, while redb's in-memory commit is still under way
//! (reads wait for that commit: [`super::settle`]); a commit that then fails marks the store
//! damaged, and the next open applies the record from the journal. Once enough records are written, the writer thread checkpoints (a durable commit
//! that records the last record's lsn) and the journal starts over; closing the store
//! checkpoints and removes it.
//!
//! With a journal, a snapshot is a job for the writer thread too: saved in the next group's
//! transaction and carried by its journal record, so it is durable without a durable redb
//! commit of its own. And the caller of a lone append polls for its answer for
//! [`RedbOptions::caller_spin`](super::RedbOptions::caller_spin) before its task sleeps on it,
//! as the writer thread polls its queue for the next append
//! ([`RedbOptions::writer_spin`](super::RedbOptions::writer_spin)) before it sleeps.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::Sender;
use std::task::Poll;
use std::time::Duration;

use openharness_core::{SessionId, StoreError};
use tokio::sync::oneshot;

use super::deferred::{Deferred, Offer};
use super::group::{GroupFailure, Target, write_group};
use super::guard::{Db, Health};
use super::index::Tails;
use super::jobs::{Append, Job, Journaled, Queued, SaveSnapshot, Shared, poll_for};
use super::settle::Settle;
use super::{RedbDurability, RedbError, RedbOptions};

/// The writer thread and its queue.
///
/// Dropping it closes the queue and joins the thread, so the database file is closed when the
/// last store handle is gone.
pub(super) struct Writer {
    queue: Option<Sender<Job>>,
    thread: Option<std::thread::JoinHandle<()>>,
    db: Arc<Db>,
    path: PathBuf,
    shared: Arc<Shared>,
    tails: Arc<Tails>,
    health: Arc<Health>,
    commit_on_caller: bool,
    /// How long a lone append polls for its answer ([`RedbOptions::caller_spin`]).
    caller_spin: Duration,
    durability: RedbDurability,
    journal: Option<Arc<Journaled>>,
    /// The sessions whose appends are acknowledged once queued, with a deferred durability.
    deferred: Option<Arc<Deferred>>,
    /// The appends answered before their commit, which reads wait for.
    settle: Arc<Settle>,
    /// The file's length when the store opened it, when it is to be compacted on close if
    /// it grew (see [`RedbOptions::compact_on_close`](super::RedbOptions::compact_on_close)).
    opened_len: Option<u64>,
}

impl Writer {
    /// Starts the writer thread for `db` (writable); `path` names the file in errors, and
    /// `health` is the store's, which a panic contained here marks damaged. With a `journal`,
    /// appends are made durable by it (and `durability` is not consulted).
    pub(super) fn start(
        db: Arc<Db>,
        path: &Path,
        options: &RedbOptions,
        health: Arc<Health>,
        journal: Option<Journaled>,
        compact_on_close: bool,
    ) -> Self {
        let (commit_on_caller, durability, spin) = (
            options.commit_on_caller,
            options.durability,
            options.writer_spin,
        );
        let journal = journal.map(Arc::new);
        let (settle, applied) = Settle::new();
        let settle = Arc::new(settle);
        let deferred = (journal.is_none() && durability != RedbDurability::EveryAppend)
            .then(|| Arc::new(Deferred::new(Arc::clone(&settle))));
        let opened_len = compact_on_close
            .then(|| std::fs::metadata(path).ok().map(|metadata| metadata.len()))
            .flatten();
        let (queue, requests) = std::sync::mpsc::channel();
        let shared = Arc::new(Shared::default());
        let tails = Arc::new(Tails::default());
        let thread = {
            let (db, path) = (Arc::clone(&db), path.to_path_buf());
            let (shared, tails, health) =
                (Arc::clone(&shared), Arc::clone(&tails), Arc::clone(&health));
            let journal = journal.clone();
            let deferred = deferred.clone();
            let settle = Arc::clone(&settle);
            std::thread::Builder::new()
                .name("openharness-redb-writer".to_owned())
                .spawn(move || {
                    let target = Target {
                        db: &db,
                        path: &path,
                        tails: &tails,
                        health: &health,
                        durability,
                        shared: &shared,
                        journal: journal.as_deref(),
                        deferred: deferred.as_deref(),
                        settle: &settle,
                    };
                    super::write_loop::write_loop(&target, &requests, &shared, &applied, spin);
                })
                .ok()
        };
        Self {
            queue: Some(queue),
            thread,
            db,
            path: path.to_path_buf(),
            shared,
            tails,
            health,
            commit_on_caller,
            caller_spin: options.caller_spin,
            durability,
            journal,
            deferred,
            settle,
            opened_len,
        }
    }

    /// The journal, when appends are made durable by one.
    pub(super) fn journal(&self) -> Option<&Journaled> {
        self.journal.as_deref()
    }

    /// What a group commit needs.
    fn target(&self) -> Target<'_> {
        Target {
            db: &self.db,
            path: &self.path,
            tails: &self.tails,
            health: &self.health,
            durability: self.durability,
            shared: &self.shared,
            journal: self.journal.as_deref(),
            deferred: self.deferred.as_deref(),
            settle: &self.settle,
        }
    }

    /// Makes every commit so far durable (nothing to do when all are).
    pub(super) async fn sync(&self) -> Result<(), StoreError> {
        if self.shared.pending().is_none() && self.shared.queued.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let gone = || self.gone("making the appends durable".to_owned());
        let (reply, answer) = oneshot::channel();
        match &self.queue {
            Some(queue) if queue.send(Job::Sync(reply)).is_ok() => {}
            _ => return Err(gone()),
        }
        answer.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Saves a snapshot with the next group commit, made durable by its journal record (call
    /// only with a [`journal`](Self::journal); without one, the caller commits it itself).
    pub(super) async fn snapshot(&self, save: SaveSnapshot) -> Result<(), StoreError> {
        let session = save.session.clone();
        let gone = || self.gone(format!("saving a snapshot of session {session}"));
        let (reply, answer) = oneshot::channel();
        match &self.queue {
            Some(queue) if queue.send(Job::Snapshot(save, reply)).is_ok() => {}
            _ => return Err(gone()),
        }
        answer.await.unwrap_or_else(|_| Err(gone()))
    }

    /// The error of `operation` when the writer thread is gone.
    fn gone(&self, operation: String) -> StoreError {
        RedbError::Task {
            path: self.path.clone(),
            operation,
            message: "the store's writer thread is gone".to_owned(),
        }
        .into()
    }

    /// The tails of the sessions appended to: lock them around any other transaction that
    /// writes events.
    pub(super) fn tails(&self) -> &Arc<Tails> {
        &self.tails
    }

    /// Waits until every append answered before it was committed is (see
    /// [`super::settle`]): call before any other transaction, so a caller reads its writes.
    pub(super) async fn settled(&self) {
        self.settle.settled().await;
    }

    /// `session` is about to be cleared: its appends are checked by the writer thread until
    /// [`cleared`](Self::cleared) (see [`Deferred::clearing`]).
    pub(super) fn clearing(&self, session: &SessionId) {
        if let Some(deferred) = &self.deferred {
            deferred.clearing(session);
        }
    }

    /// The clearing of `session` is over, done or failed.
    pub(super) fn cleared(&self, session: &SessionId) {
        if let Some(deferred) = &self.deferred {
            deferred.cleared(session);
        }
    }

    /// Appends: the session's new length, or the reason the append was refused; `None` when
    /// the writer thread is gone. The append is durable when it returns, unless the store
    /// defers durability.
    pub(super) async fn append(&self, append: Append) -> Option<Result<u64, StoreError>> {
        let append = match &self.deferred {
            None => append,
            Some(deferred) => {
                let offered = deferred.offer(append, |append| {
                    self.enqueue(Queued {
                        append,
                        reply: None,
                    })
                });
                match offered {
                    Offer::Acknowledged(len) => return Some(Ok(len)),
                    Offer::Gone => return None,
                    Offer::Check(append) => {
                        let session = append.session.clone();
                        let answer = self.send(append);
                        if answer.is_none() {
                            deferred.unsent(&session);
                        }
                        return answer?.await.ok();
                    }
                }
            }
        };
        if self.may_commit_on_caller()
            && self
                .shared
                .caller_committing
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            let result = tokio::task::block_in_place(|| {
                // Answered when it returns: not before the commit.
                write_group(
                    &self.target(),
                    std::slice::from_ref(&append),
                    &[],
                    &mut |_| false,
                )
            });
            self.shared.last_group.store(1, Ordering::Release);
            self.shared
                .caller_committing
                .store(false, Ordering::Release);
            return Some(match result {
                Ok(written) => {
                    // Off the caller's path: the writer thread is idle in this mode.
                    if let Some(queue) = &self.queue {
                        if written.compact {
                            let _ = queue.send(Job::Compact);
                        }
                        if written.checkpoint {
                            let _ = queue.send(Job::Checkpoint);
                        }
                    }
                    written.results.into_iter().next().unwrap_or_else(|| {
                        Err(GroupFailure::Redb("no result".to_owned())
                            .error(&self.path, &append.session))
                    })
                }
                Err(failure) => Err(failure.error(&self.path, &append.session)),
            });
        }
        let answer = self.send(append)?;
        // Polled only by a lone append on a runtime with other workers (see `caller_spin`).
        let spin = if self.journal.is_some()
            && self.shared.queued.load(Ordering::Acquire) <= 1
            && multi_threaded()
        {
            self.caller_spin
        } else {
            Duration::ZERO
        };
        answered(answer, spin).await
    }

    /// Queues `append` for the writer thread: where its answer will come, or `None` when the
    /// thread is gone.
    fn send(&self, append: Append) -> Option<oneshot::Receiver<Result<u64, StoreError>>> {
        let (reply, answer) = oneshot::channel();
        self.enqueue(Queued {
            append,
            reply: Some(reply),
        })
        .then_some(answer)
    }

    /// Hands `queued` to the writer thread, counted among the queued appends; `false` when
    /// the thread is gone.
    fn enqueue(&self, queued: Queued) -> bool {
        let (Some(queue), Some(_)) = (&self.queue, &self.thread) else {
            return false;
        };
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        if queue.send(Job::Append(queued)).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Whether this append may commit on the calling thread: the option is on, the runtime
    /// lets it block in place, nothing is queued for the writer thread, and the last commit
    /// was a lone one (so concurrent writers keep sharing the thread's commits).
    fn may_commit_on_caller(&self) -> bool {
        self.commit_on_caller
            && self.shared.queued.load(Ordering::Acquire) == 0
            && self.shared.last_group.load(Ordering::Acquire) <= 1
            && multi_threaded()
    }
}

/// Whether the caller runs on a multi-threaded tokio runtime, whose other workers take its
/// tasks while it blocks.
fn multi_threaded() -> bool {
    tokio::runtime::Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// The answer of `answer`, polled for up to `spin` before it is awaited; `None` when its
/// sender is gone. Taken while polling, the answer wakes nobody: the writer thread's send
/// makes no system call, and the caller's task is not put to sleep and woken again.
async fn answered<T>(mut answer: oneshot::Receiver<T>, spin: Duration) -> Option<T> {
    let polled = poll_for(spin, || match answer.try_recv() {
        Ok(result) => Poll::Ready(Some(result)),
        Err(oneshot::error::TryRecvError::Closed) => Poll::Ready(None),
        Err(oneshot::error::TryRecvError::Empty) => Poll::Pending,
    });
    match polled {
        Some(result) => result,
        None => answer.await.ok(),
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if let Some(opened_len) = self.opened_len {
            super::compact::compact_on_close(&mut self.db, &self.path, opened_len, &self.health);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Instant;

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_polls_for_its_answer_then_awaits_it() {
        // Sent while it polls: taken without awaiting.
        let (reply, answer) = oneshot::channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(2));
            reply.send(7).unwrap();
        });
        assert_eq!(answered(answer, Duration::from_secs(5)).await, Some(7));
        sender.join().unwrap();
        // Sent after the polling gave up: awaited.
        let (reply, answer) = oneshot::channel();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            reply.send(8).unwrap();
        });
        let started = Instant::now();
        assert_eq!(answered(answer, Duration::from_millis(1)).await, Some(8));
        assert!(started.elapsed() >= Duration::from_millis(25));
        sender.join().unwrap();
        // A sender gone, while polling or awaiting: no answer, at once.
        for spin in [Duration::from_secs(10), Duration::ZERO] {
            let (reply, answer) = oneshot::channel::<u8>();
            drop(reply);
            let started = Instant::now();
            assert_eq!(answered(answer, spin).await, None);
            assert!(started.elapsed() < Duration::from_secs(5));
        }
    }
}
