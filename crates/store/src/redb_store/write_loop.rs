//! The writer thread's loop ([`super::writer`]): it takes the next job (polling the queue for
//! [`RedbOptions::writer_spin`](super::RedbOptions::writer_spin) before it sleeps on it),
//! gathers every append waiting with it into one group, writes the group in one transaction
//! ([`super::group`]), answers each caller, and then does what the group asked for after it
//! (compaction, a checkpoint, durable syncs). When the queue closes it makes everything
//! durable: a last checkpoint with a journal, a durable commit without.

use std::sync::atomic::Ordering;
use std::sync::mpsc::Receiver;
use std::task::Poll;
use std::time::{Duration, Instant};

use openharness_core::StoreError;
use tokio::sync::watch;

use super::group::Target;
use super::group::{lost, write_group};
use super::jobs::{Append, Job, SaveSnapshot, Shared, poll_for};
use super::maintain::{checkpoint, compact_staged, sync_commits};

/// The most appends one group commit takes in.
const MAX_GROUP: usize = 512;

/// How long a group smaller than the last one waits for more appends: a fraction of a durable
/// commit, so concurrent writers share commits instead of alternating between small groups.
/// A lone writer (groups of one) never waits.
const GATHER: Duration = Duration::from_micros(250);

/// The next job if one comes within `spin`
/// ([`RedbOptions::writer_spin`](super::RedbOptions::writer_spin)), polling the queue
/// (and yielding the core between polls) instead of sleeping on it: a caller answered a moment
/// ago usually sends its next append within tens of microseconds, and waking a sleeping thread
/// costs about as much.
fn spin_for(requests: &Receiver<Job>, spin: Duration) -> Option<Job> {
    poll_for(spin, || match requests.try_recv() {
        Ok(job) => Poll::Ready(Some(job)),
        Err(std::sync::mpsc::TryRecvError::Disconnected) => Poll::Ready(None),
        Err(std::sync::mpsc::TryRecvError::Empty) => Poll::Pending,
    })
    .flatten()
}

/// The writer thread's work until the queue closes; `applied` counts the appends answered
/// before their commit (acknowledged once queued, or answered once journaled) it has applied.
pub(super) fn write_loop(
    target: &Target<'_>,
    requests: &Receiver<Job>,
    shared: &Shared,
    applied: &watch::Sender<u64>,
    spin: Duration,
) {
    // How many appends the last group held: writers that were active then are likely to send
    // again right after their answer, so a smaller group waits briefly for them.
    let mut last_group = 1;
    loop {
        let job = match spin_for(requests, spin) {
            Some(job) => job,
            None => match target.wait_limit() {
                Some(limit) => match requests.recv_timeout(limit) {
                    Ok(job) => job,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if let Err(err) = sync_commits(target) {
                            tracing::warn!(%err, "the periodic durable commit failed; retrying at the next");
                        }
                        continue;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                },
                None => match requests.recv() {
                    Ok(job) => job,
                    Err(_) => break,
                },
            },
        };
        let mut compact = false;
        let mut group = Vec::new();
        let mut snapshots = Vec::new();
        match job {
            Job::Append(first) => group.push(first),
            Job::Snapshot(save, reply) => snapshots.push((save, reply)),
            Job::Compact => {
                compact_staged(target);
                continue;
            }
            Job::Sync(reply) => {
                let _ = reply.send(sync_commits(target));
                continue;
            }
            Job::Checkpoint => {
                checkpoint(target);
                continue;
            }
        }
        let mut syncs = Vec::new();
        let mut checkpoint_due = false;
        let deadline = Instant::now() + GATHER;
        while group.len() < MAX_GROUP {
            let next = match requests.try_recv() {
                Ok(job) => job,
                // Snapshots count: a writer that sent one is waiting for it, not appending.
                Err(_) if group.len() + snapshots.len() < last_group => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match requests.recv_timeout(left) {
                        Ok(job) => job,
                        Err(_) => break,
                    }
                }
                Err(_) => break,
            };
            match next {
                Job::Append(request) => group.push(request),
                Job::Snapshot(save, reply) => snapshots.push((save, reply)),
                Job::Compact => compact = true,
                Job::Checkpoint => checkpoint_due = true,
                // After this group's commit, which it then covers too.
                Job::Sync(reply) => syncs.push(reply),
            }
        }
        let appended = group.len();
        if appended > 0 {
            // A group of snapshots alone says nothing of how many writers are active.
            last_group = appended;
        }
        let (appends, mut replies): (Vec<Append>, Vec<_>) = group
            .into_iter()
            .map(|queued| (queued.append, queued.reply))
            .unzip();
        // Once the group's journal record is durable: each append it holds is answered before
        // redb's commit, and counted as answered early (below, as applied once committed).
        let mut answer_early = |results: &[Result<u64, StoreError>]| {
            let mut answered = false;
            for (reply, result) in replies.iter_mut().zip(results) {
                if let Ok(len) = result
                    && let Some(reply) = reply.take()
                {
                    target.settle.acknowledge();
                    let _ = reply.send(Ok(*len));
                    answered = true;
                }
            }
            answered
        };
        let (saves, saved): (Vec<SaveSnapshot>, Vec<_>) = snapshots.into_iter().unzip();
        let written = write_group(target, &appends, &saves, &mut answer_early);
        // Before the answers, so that a caller sending again right away sees this group.
        shared.last_group.store(last_group, Ordering::Release);
        shared.queued.fetch_sub(appended, Ordering::AcqRel);
        let (results, snapshot_results) = match written {
            Ok(written) => {
                compact |= written.compact;
                checkpoint_due |= written.checkpoint;
                (written.results, written.snapshots)
            }
            Err(failure) => (
                appends
                    .iter()
                    .map(|append| Err(failure.error(target.path, &append.session)))
                    .collect(),
                saves
                    .iter()
                    .map(|save| Err(failure.snapshot_error(target.path, &save.session)))
                    .collect(),
            ),
        };
        for (reply, result) in saved.into_iter().zip(snapshot_results) {
            let _ = reply.send(result);
        }
        let mut acknowledged = 0;
        for ((reply, append), result) in replies.into_iter().zip(&appends).zip(results) {
            match reply {
                Some(reply) => {
                    if let Some(deferred) = target.deferred {
                        // Before the answer, so the caller's next append finds it known.
                        deferred.checked(target.db, append, result.as_ref().ok().copied());
                    }
                    let _ = reply.send(result);
                }
                None => {
                    acknowledged += 1;
                    if let Err(err) = result {
                        lost(target, append, &err);
                    }
                }
            }
        }
        if acknowledged > 0 {
            applied.send_modify(|applied| *applied += acknowledged);
        }
        for reply in syncs {
            let _ = reply.send(sync_commits(target));
        }
        // After the answers: the callers do not wait for it.
        if compact {
            compact_staged(target);
        }
        if checkpoint_due {
            checkpoint(target);
        }
    }
    // The store is closing: what is not durable yet becomes durable now.
    if let Some(journaled) = target.journal {
        // The journal is removed once a checkpoint covers it all: a closed store is one file.
        if checkpoint(target) {
            let journal = journaled.lock();
            if journal.created()
                && let Err(err) = std::fs::remove_file(journal.path())
            {
                tracing::warn!(path = %journal.path().display(), %err, "the journal could not be removed; the next open skips its records");
            }
        }
    } else if let Err(err) = sync_commits(target) {
        tracing::warn!(%err, "the closing durable commit failed; the last appends may be lost");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_polls_for_a_job_only_as_long_as_it_is_told() {
        let spin = Duration::from_millis(20);
        let (queue, requests) = std::sync::mpsc::channel();
        // A job sent while it polls is taken.
        let sender = std::thread::spawn({
            let queue = queue.clone();
            move || {
                std::thread::sleep(Duration::from_millis(2));
                queue.send(Job::Checkpoint).unwrap();
            }
        });
        assert!(matches!(spin_for(&requests, spin), Some(Job::Checkpoint)));
        sender.join().unwrap();
        // None comes: it gives up once the time is over, to sleep on the queue.
        let started = Instant::now();
        assert!(spin_for(&requests, spin).is_none());
        assert!(started.elapsed() >= spin);
        // No polling at all when told so, nor on a closed queue.
        assert!(spin_for(&requests, Duration::ZERO).is_none());
        drop(queue);
        let started = Instant::now();
        assert!(spin_for(&requests, Duration::from_secs(10)).is_none());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
