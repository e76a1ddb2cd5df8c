//! [`Faults`]: an observer that fails chosen appends, and [`FailingStore`], a store wrapped in
//! one, to test that a run stops with a typed error and loses nothing it had already stored.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;

use super::{Observed, StoreCall, StoreObserver};
use crate::{SessionId, StoreError};

/// The error [`Faults`] inject, inside [`StoreError::Backend`].
///
/// Tests can find it with `downcast_ref::<InjectedFailure>()` on the backend error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("injected failure on append #{append}")]
pub struct InjectedFailure {
    /// Which append failed, counting every call to `append` from 1.
    pub append: u64,
}

/// A store whose chosen appends fail with [`InjectedFailure`]; reads, listing, clearing,
/// snapshots and subscriptions pass through. It is an [`Observed`] store, so
/// [`inner`](Observed::inner) reaches what was really stored.
///
/// Appends are counted from 1 across all sessions, every call counting (empty batches too). By
/// default a failing append never reaches the inner store, so it writes nothing;
/// [`losing_acknowledgement`](Self::losing_acknowledgement) instead writes it and then reports
/// the failure, as when a connection drops after the commit.
///
/// Clones share the counters.
///
/// ```
/// use openharness_core::Store;
/// use openharness_core::adapter::observe::FailingStore;
///
/// /// `store`, whose second append and every later one fail; the first reaches `store`.
/// fn failing_after_one<S: Store>(store: S) -> FailingStore<S> {
///     FailingStore::fail_from(store, 2)
/// }
/// ```
///
/// `openharness_store::FailingStore` is this type; its tests show it over a memory store.
pub type FailingStore<S> = Observed<S, Faults>;

/// Which appends [`Faults`] fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    /// Append #n and every later one.
    From(u64),
    /// Append #n only.
    Only(u64),
}

/// The observer behind a [`FailingStore`]: which appends fail, how, and how many were tried and
/// succeeded. Clones share the counters.
#[derive(Debug, Clone)]
pub struct Faults {
    schedule: Schedule,
    write_before_failing: bool,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    attempts: AtomicU64,
    succeeded: AtomicU64,
}

impl Faults {
    fn new(schedule: Schedule) -> Self {
        Self {
            schedule,
            write_before_failing: false,
            counters: Arc::default(),
        }
    }

    /// How many appends were attempted (failed ones included).
    pub fn attempts(&self) -> u64 {
        self.counters.attempts.load(Ordering::SeqCst)
    }

    /// How many appends succeeded (returned `Ok` to the caller).
    pub fn succeeded(&self) -> u64 {
        self.counters.succeeded.load(Ordering::SeqCst)
    }

    fn fails(&self, append: u64) -> bool {
        match self.schedule {
            Schedule::From(n) => append >= n,
            Schedule::Only(n) => append == n,
        }
    }

    /// Counts an attempt and says which it was.
    fn attempt(&self) -> u64 {
        self.counters.attempts.fetch_add(1, Ordering::SeqCst) + 1
    }

    fn injected(append: u64, session: &SessionId) -> StoreError {
        tracing::debug!(append, %session, "injecting a store failure");
        StoreError::backend(InjectedFailure { append })
    }
}

impl<S: crate::Store> Observed<S, Faults> {
    /// Fails append number `n` (counting from 1) and every append after it. `n = 0` behaves
    /// like `n = 1`: every append fails.
    pub fn fail_from(inner: S, n: u64) -> Self {
        Self::new(inner, Faults::new(Schedule::From(n.max(1))))
    }

    /// Fails only append number `n` (counting from 1); the others pass through. `n = 0`
    /// behaves like `n = 1`.
    pub fn fail_only(inner: S, n: u64) -> Self {
        Self::new(inner, Faults::new(Schedule::Only(n.max(1))))
    }

    /// Makes failing appends reach the inner store first, then report the failure: a lost
    /// acknowledgement, after which a retry at the same seq must succeed without duplicating.
    pub fn losing_acknowledgement(mut self) -> Self {
        self.observer.write_before_failing = true;
        self
    }

    /// How many appends were attempted (failed ones included).
    pub fn attempts(&self) -> u64 {
        self.observer.attempts()
    }

    /// How many appends succeeded (returned `Ok` to the caller).
    pub fn succeeded(&self) -> u64 {
        self.observer.succeeded()
    }
}

#[async_trait]
impl StoreObserver for Faults {
    async fn before(&self, operation: StoreCall<'_>) -> Result<(), StoreError> {
        let StoreCall::Append { session, .. } = operation else {
            return Ok(());
        };
        if self.write_before_failing {
            // Counted once the inner store has answered, in `answer_append`.
            return Ok(());
        }
        let append = self.attempt();
        if self.fails(append) {
            return Err(Self::injected(append, session));
        }
        Ok(())
    }

    fn answer_append(
        &self,
        session: &SessionId,
        result: Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        if self.write_before_failing {
            let append = self.attempt();
            if self.fails(append) {
                return result.and(Err(Self::injected(append, session)));
            }
        }
        if result.is_ok() {
            self.counters.succeeded.fetch_add(1, Ordering::SeqCst);
        }
        result
    }
}
