//! [`Observed`]: any store, with an observer told of every call (before it, where it may fail
//! the call or act first, and after it with how long it took), of every append's result and,
//! if it asks, of every range read. Everything is passed on unchanged unless the observer
//! fails it. For tooling, tests and benchmarks: export what is appended (the OpenTelemetry
//! live export), count and time each kind of call, see which reads a derivation makes, hold
//! appends back to line up racing writers, or inject a failure (`Faults`, behind the
//! `testing` feature). Wrap a store in one rather than writing another pass-through `Store`.

use std::future::Future;
use std::ops::Range;
use std::time::{Duration, Instant};

use crate::{
    Envelope, SessionId, SessionInfo, Store, StoreError,
    adapter::{Claim, EVENT_PAGE, EventStream, Folded, SnapshotJson, Subscription},
};
use async_trait::async_trait;

#[cfg(feature = "testing")]
mod faults;
#[cfg(feature = "testing")]
pub use faults::{FailingStore, Faults, InjectedFailure};

/// A call an [`Observed`] store passes on, as [`StoreObserver::before`] and
/// [`StoreObserver::after`] see it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum StoreCall<'a> {
    /// [`Store::sync`].
    Sync,
    /// [`Store::claim`].
    Claim(&'a SessionId),
    /// [`Store::mark_unfinished`].
    MarkUnfinished(&'a SessionId),
    /// [`Store::unfinished`].
    Unfinished,
    /// [`Store::append`].
    Append {
        /// The session appended to.
        session: &'a SessionId,
        /// The batch.
        events: &'a [Envelope],
        /// The seq the batch is expected at.
        expected_seq: u64,
    },
    /// [`Store::events`] (and each page of a stream, when the observer
    /// [observes reads](StoreObserver::observes_reads)).
    Events {
        /// The session read.
        session: &'a SessionId,
        /// The range asked for.
        range: &'a Range<u64>,
    },
    /// [`Store::stream_events`], when the stream is opened; told to [`StoreObserver::after`]
    /// only, since opening a stream cannot wait or fail.
    StreamEvents {
        /// The session read.
        session: &'a SessionId,
        /// The range asked for.
        range: &'a Range<u64>,
    },
    /// [`Store::session`].
    Session(&'a SessionId),
    /// [`Store::sessions`].
    Sessions,
    /// [`Store::clear`].
    Clear(&'a SessionId),
    /// [`Store::snapshot_json`] (and [`Store::snapshot`], which goes through it).
    Snapshot(&'a SessionId),
    /// [`Store::latest_snapshot_json`] (and [`Store::latest_snapshot`], which goes through it).
    LatestSnapshot {
        /// The session.
        session: &'a SessionId,
        /// The latest position wanted.
        at_most: u64,
    },
    /// [`Store::subscribe`].
    Subscribe {
        /// The session.
        session: &'a SessionId,
        /// The first seq wanted.
        from_seq: u64,
    },
}

impl StoreCall<'_> {
    /// The [`Store`] method's name (`"append"`, `"latest_snapshot"`, …).
    ///
    /// ```
    /// use openharness_core::adapter::observe::StoreCall;
    /// assert_eq!(StoreCall::Sessions.name(), "sessions");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Claim(_) => "claim",
            Self::MarkUnfinished(_) => "mark_unfinished",
            Self::Unfinished => "unfinished",
            Self::Append { .. } => "append",
            Self::Events { .. } => "events",
            Self::StreamEvents { .. } => "stream_events",
            Self::Session(_) => "session",
            Self::Sessions => "sessions",
            Self::Clear(_) => "clear",
            Self::Snapshot(_) => "snapshot",
            Self::LatestSnapshot { .. } => "latest_snapshot",
            Self::Subscribe { .. } => "subscribe",
        }
    }
}

/// What an [`Observed`] store tells. Every method has a default that does nothing.
#[async_trait]
pub trait StoreObserver: Send + Sync + 'static {
    /// Before every call is passed on (an append, before [`before_append`](Self::before_append)
    /// too). An observer may wait here, or act on the store first; an `Err` fails the call with
    /// that error without passing it on, for fault injection in tests:
    ///
    /// ```
    /// use openharness_core::adapter::observe::{Observed, StoreCall, StoreObserver};
    /// use openharness_core::StoreError;
    ///
    /// /// Fails every listing of the sessions, as a lost database would.
    /// struct Unlistable;
    /// #[async_trait::async_trait]
    /// impl StoreObserver for Unlistable {
    ///     async fn before(&self, operation: StoreCall<'_>) -> Result<(), StoreError> {
    ///         match operation {
    ///             StoreCall::Sessions => Err(StoreError::Invalid("the disk is gone".into())),
    ///             _ => Ok(()),
    ///         }
    ///     }
    /// }
    /// # fn wrap<S: openharness_core::Store>(store: S) -> Observed<S, Unlistable> {
    /// #     Observed::new(store, Unlistable)
    /// # }
    /// ```
    async fn before(&self, _operation: StoreCall<'_>) -> Result<(), StoreError> {
        Ok(())
    }

    /// After every call the inner store answered, with how long it took and whether it
    /// succeeded (not after a call [`before`](Self::before) failed).
    fn after(&self, _operation: StoreCall<'_>, _took: Duration, _succeeded: bool) {}

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

    /// What the caller of an append is told, given the inner store's answer: by default that
    /// answer. An observer may replace it; a success answered as an error is a lost
    /// acknowledgement, after which a retry at the same seq must store nothing twice (see
    /// `Faults`, behind the `testing` feature).
    fn answer_append(
        &self,
        _session: &SessionId,
        result: Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        result
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

    /// Unwraps the inner store.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// A read of events (for a fold, when `folds` is given), shown to the observer.
    async fn read(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Option<Folded>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if self.observer.observes_reads() {
            self.observer.on_read(session, &range);
        }
        let operation = StoreCall::Events {
            session,
            range: &range,
        };
        match folds {
            Some(folds) => {
                let read = self.inner.events_for_fold(session, range.clone(), folds);
                self.call(operation, read).await
            }
            None => {
                self.call(operation, self.inner.events(session, range.clone()))
                    .await
            }
        }
    }

    /// A stream of events (for a fold, when `folds` is given): paged through
    /// [`Observed::read`] when the observer sees reads, the inner store's own otherwise.
    fn stream(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Option<Folded>,
    ) -> EventStream<'_> {
        let operation = StoreCall::StreamEvents {
            session,
            range: &range,
        };
        self.observer.after(operation, Duration::ZERO, true);
        match (self.observer.observes_reads(), folds) {
            (true, None) => EventStream::paged(self, session, range, EVENT_PAGE),
            (true, Some(folds)) => {
                EventStream::paged_for_fold(self, session, range, EVENT_PAGE, folds)
            }
            (false, None) => self.inner.stream_events(session, range),
            (false, Some(folds)) => self.inner.stream_events_for_fold(session, range, folds),
        }
    }

    /// Passes `call` on between the observer's [`StoreObserver::before`] and
    /// [`StoreObserver::after`].
    async fn call<T>(
        &self,
        operation: StoreCall<'_>,
        call: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        self.observer.before(operation).await?;
        let started = Instant::now();
        let result = call.await;
        self.observer
            .after(operation, started.elapsed(), result.is_ok());
        result
    }
}

#[async_trait]
impl<S: Store, O: StoreObserver> Store for Observed<S, O> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn saves_snapshots(&self) -> bool {
        self.inner.saves_snapshots()
    }

    async fn sync(&self) -> Result<(), StoreError> {
        let result = self.call(StoreCall::Sync, self.inner.sync()).await;
        self.observer.after_sync(&result);
        result
    }

    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        self.call(StoreCall::Claim(session), self.inner.claim(session))
            .await
    }
    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let call = self.inner.mark_unfinished(session, note);
        self.call(StoreCall::MarkUnfinished(session), call).await
    }
    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        self.call(StoreCall::Unfinished, self.inner.unfinished())
            .await
    }
    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        let operation = StoreCall::Append {
            session,
            events,
            expected_seq,
        };
        self.observer.before(operation).await?;
        self.observer
            .before_append(session, events, expected_seq)
            .await;
        let started = Instant::now();
        let result = self.inner.append(session, events, expected_seq).await;
        let took = started.elapsed();
        self.observer.after(operation, took, result.is_ok());
        self.observer.after_append(session, events, &result, took);
        self.observer.answer_append(session, result)
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.read(session, range, None).await
    }
    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        self.stream(session, range, None)
    }
    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.read(session, range, Some(folds)).await
    }
    fn stream_events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> EventStream<'_> {
        self.stream(session, range, Some(folds))
    }
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        self.call(StoreCall::Session(session), self.inner.session(session))
            .await
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.call(StoreCall::Sessions, self.inner.sessions()).await
    }
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        self.call(StoreCall::Clear(session), self.inner.clear(session))
            .await
    }
    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        let call = self.inner.snapshot_json(session, position, state);
        self.call(StoreCall::Snapshot(session), call).await
    }
    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        let operation = StoreCall::LatestSnapshot { session, at_most };
        let call = self.inner.latest_snapshot_json(session, at_most);
        self.call(operation, call).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        let operation = StoreCall::Subscribe { session, from_seq };
        let call = self.inner.subscribe(session, from_seq);
        self.call(operation, call).await
    }
}
