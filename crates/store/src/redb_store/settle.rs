//! How far redb is behind the appends answered before their commit: with a deferred
//! durability, appends acknowledged once queued ([`super::deferred`]); with the journal, appends
//! answered once their record is durable, while redb's commit is still under way
//! ([`super::group`]). A read waits for them first ([`Settle::settled`]), so a caller reads its
//! own writes.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

/// The appends answered before redb applied them, and how many it has applied.
pub(super) struct Settle {
    /// Appends answered before their commit, since the store opened.
    acknowledged: AtomicU64,
    /// How many of them the writer thread has applied (or failed); its sender is the writer
    /// thread's, so waiting ends if that thread is gone.
    applied: watch::Receiver<u64>,
}

impl Settle {
    /// A new account, and the sender the writer thread reports applied appends with.
    pub(super) fn new() -> (Self, watch::Sender<u64>) {
        let (applied_tx, applied) = watch::channel(0);
        let settle = Self {
            acknowledged: AtomicU64::new(0),
            applied,
        };
        (settle, applied_tx)
    }

    /// One more append answered before its commit: call before the answer, so a read that
    /// starts once it is answered waits for it.
    pub(super) fn acknowledge(&self) {
        self.acknowledged.fetch_add(1, Ordering::AcqRel);
    }

    /// Takes back an acknowledgement whose append never reached the writer thread.
    pub(super) fn withdraw(&self) {
        self.acknowledged.fetch_sub(1, Ordering::AcqRel);
    }

    /// How many answered appends redb has not applied yet.
    pub(super) fn waiting(&self) -> u64 {
        self.acknowledged
            .load(Ordering::Acquire)
            .saturating_sub(*self.applied.borrow())
    }

    /// Waits until the writer thread has applied every append answered so far (at once when
    /// it has, or when the thread is gone).
    pub(super) async fn settled(&self) {
        let target = self.acknowledged.load(Ordering::Acquire);
        if *self.applied.borrow() >= target {
            return;
        }
        let mut applied = self.applied.clone();
        let _ = applied.wait_for(|applied| *applied >= target).await;
    }
}
