//! [`Observed`]: any store, with an observer told of every append (before it, and after it
//! with its result and how long it took) and, if it asks, of every range read. Everything else
//! is passed on unchanged. For tooling, tests and benchmarks: export what is appended (the
//! OpenTelemetry live export), count writes, time durable appends, see which reads a
//! derivation makes, or hold appends back to line up racing writers. Wrap a store in one
//! rather than writing another pass-through `Store`.

use std::ops::Range;
use std::time::{Duration, Instant};

use crate::{
    Envelope, SessionId, SessionInfo, Store, StoreError,
    adapter::{Claim, EVENT_PAGE, EventStream, Snapshot, Subscription},
};
use async_trait::async_trait;

/// What an [`Observed`] store tells. Every method has a default that does nothing.
#[async_trait]
pub trait StoreObserver: Send + Sync + 'static {
    /// Before an append is passed on; an observer may wait here.
    async fn before_append(&self, _session: &SessionId, _events: &[Envelope], _expected: u64) {}

    /// After an append, with its result and how long the inner store took.
    fn after_append(
        &self,
        _session: &SessionId,
        _events: &[Envelope],
        _result: &Result<u64, StoreError>,
        _took: Duration,
    ) {
    }

    /// After a [`Store::sync`] (the runtime calls it at every turn's end), with its result.
    fn after_sync(&self, _result: &Result<(), StoreError>) {}

    /// Whether [`StoreObserver::on_read`] should see every read: then streamed reads page
    /// through [`Store::events`] too, instead of the inner store's own stream.
    fn observes_reads(&self) -> bool {
        false
    }

    /// A range of events read (when [`StoreObserver::observes_reads`]).
    fn on_read(&self, _session: &SessionId, _range: &Range<u64>) {}
}

/// A store whose appends (and, if asked, reads) an observer sees.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
/// use openharness_core::adapter::observe::{Observed, StoreObserver};
/// use openharness_core::{Envelope, SessionId, Store, StoreError};
///
/// /// Counts the appends a store made.
/// #[derive(Default)]
/// struct Writes(AtomicU64);
/// impl StoreObserver for Writes {
///     fn after_append(&self, _: &SessionId, _: &[Envelope], result: &Result<u64, StoreError>, _: Duration) {
///         if result.is_ok() {
///             self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// /// `store`, with its appends counted (`counted(store).observer().0`).
/// fn counted<S: Store>(store: S) -> Observed<S, Writes> {
///     Observed::new(store, Writes::default())
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Observed<S, O> {
    inner: S,
    observer: O,
}

impl<S: Store, O: StoreObserver> Observed<S, O> {
    /// `inner`, observed by `observer`.
    pub fn new(inner: S, observer: O) -> Self {
        Self { inner, observer }
    }

    /// The inner store.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The observer.
    pub fn observer(&self) -> &O {
        &self.observer
    }
}

#[async_trait]
impl<S: Store, O: StoreObserver> Store for Observed<S, O> {
    fn describe(&self) -> String {
        self.inner.describe()
    }

    async fn sync(&self) -> Result<(), StoreError> {
        let result = self.inner.sync().await;
        self.observer.after_sync(&result);
        result
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
        self.observer
            .before_append(session, events, expected_seq)
            .await;
        let started = Instant::now();
        let result = self.inner.append(session, events, expected_seq).await;
        self.observer
            .after_append(session, events, &result, started.elapsed());
        result
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if self.observer.observes_reads() {
            self.observer.on_read(session, &range);
        }
        self.inner.events(session, range).await
    }
    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        if self.observer.observes_reads() {
            EventStream::paged(self, session, range, EVENT_PAGE)
        } else {
            self.inner.stream_events(session, range)
        }
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
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        self.inner.subscribe(session, from_seq).await
    }
}
