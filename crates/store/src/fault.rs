//! [`FailingStore`]: a fault-injection wrapper that makes chosen appends fail, to test that a
//! run stops with a typed error and loses nothing it had already stored.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use openharness_core::{
    Envelope, SessionId, SessionInfo, Store, StoreError,
    adapter::{Claim, EventStream, Snapshot, SnapshotJson, Subscription},
};

/// The error a [`FailingStore`] injects, inside [`StoreError::Backend`].
///
/// Tests can find it with `downcast_ref::<InjectedFailure>()` on the backend error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("injected failure on append #{append}")]
pub struct InjectedFailure {
    /// Which append failed, counting every call to `append` from 1.
    pub append: u64,
}

/// Which appends a [`FailingStore`] fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Schedule {
    /// Append #n and every later one.
    From(u64),
    /// Append #n only.
    Only(u64),
}

/// A [`Store`] wrapper that fails chosen appends with [`InjectedFailure`]; reads, listing,
/// clearing, snapshots and subscriptions pass through.
///
/// Appends are counted from 1 across all sessions, every call counting (empty batches too). By
/// default a failing append never reaches the inner store, so it writes nothing;
/// [`losing_acknowledgement`](Self::losing_acknowledgement) instead writes it and then reports
/// the failure, as when a connection drops after the commit.
///
/// Clones share the counters.
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store, StoreError};
/// use openharness_store::{FailingStore, InjectedFailure, MemoryStore};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = FailingStore::fail_from(MemoryStore::new(), 2);
/// let session = SessionId::new();
/// let event = || Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// assert_eq!(store.append(&session, &[event()], 0).await.unwrap(), 1);
/// let Err(StoreError::Backend(err)) = store.append(&session, &[event()], 1).await else {
///     panic!("the second append should fail");
/// };
/// assert_eq!(err.to_string(), "injected failure on append #2");
/// assert!(err.downcast_ref::<InjectedFailure>().is_some());
/// assert_eq!(store.succeeded(), 1);
/// assert_eq!(store.inner().all_events(&session).await.unwrap().len(), 1);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct FailingStore<S> {
    inner: S,
    schedule: Schedule,
    write_before_failing: bool,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    attempts: AtomicU64,
    succeeded: AtomicU64,
}

impl<S> FailingStore<S> {
    /// Fails append number `n` (counting from 1) and every append after it. `n = 0` behaves
    /// like `n = 1`: every append fails.
    pub fn fail_from(inner: S, n: u64) -> Self {
        Self::with_schedule(inner, Schedule::From(n.max(1)))
    }

    /// Fails only append number `n` (counting from 1); the others pass through. `n = 0`
    /// behaves like `n = 1`.
    pub fn fail_only(inner: S, n: u64) -> Self {
        Self::with_schedule(inner, Schedule::Only(n.max(1)))
    }

    fn with_schedule(inner: S, schedule: Schedule) -> Self {
        Self {
            inner,
            schedule,
            write_before_failing: false,
            counters: Arc::default(),
        }
    }

    /// Makes failing appends reach the inner store first, then report the failure: a lost
    /// acknowledgement, after which a retry at the same seq must succeed without duplicating.
    pub fn losing_acknowledgement(mut self) -> Self {
        self.write_before_failing = true;
        self
    }

    /// How many appends were attempted (failed ones included).
    pub fn attempts(&self) -> u64 {
        self.counters.attempts.load(Ordering::SeqCst)
    }

    /// How many appends succeeded (returned `Ok` to the caller).
    pub fn succeeded(&self) -> u64 {
        self.counters.succeeded.load(Ordering::SeqCst)
    }

    /// The wrapped store, to inspect what was really stored.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Unwraps the store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn fails(&self, append: u64) -> bool {
        match self.schedule {
            Schedule::From(n) => append >= n,
            Schedule::Only(n) => append == n,
        }
    }
}

#[async_trait]
impl<S: Store> Store for FailingStore<S> {
    fn describe(&self) -> String {
        format!("failing:{}", self.inner.describe())
    }

    async fn sync(&self) -> Result<(), StoreError> {
        self.inner.sync().await
    }

    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        self.inner.claim(session).await
    }
    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        self.inner.mark_unfinished(session, note).await
    }
    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        self.inner.unfinished().await
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        let append = self.counters.attempts.fetch_add(1, Ordering::SeqCst) + 1;
        if self.fails(append) {
            if self.write_before_failing {
                self.inner.append(session, events, expected_seq).await?;
            }
            tracing::debug!(append, %session, "injecting a store failure");
            return Err(StoreError::backend(InjectedFailure { append }));
        }
        let len = self.inner.append(session, events, expected_seq).await?;
        self.counters.succeeded.fetch_add(1, Ordering::SeqCst);
        Ok(len)
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.inner.events(session, range).await
    }

    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        self.inner.stream_events(session, range)
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        self.inner.session(session).await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.inner.sessions().await
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        self.inner.clear(session).await
    }

    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        self.inner.snapshot(session, snapshot).await
    }

    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        self.inner.latest_snapshot(session, at_most).await
    }

    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        self.inner.latest_snapshot_json(session, at_most).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        self.inner.subscribe(session, from_seq).await
    }
}
