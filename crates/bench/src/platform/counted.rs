//! A store that counts and times each kind of call it passes on, to show which store calls a
//! platform request makes and what they cost.

use super::*;

/// A store that counts and times the calls of its users, passing each on: where a side's
/// turns spend their store time.
pub(super) struct Counted<S> {
    pub(super) inner: S,
    pub(super) calls: Mutex<Tally>,
}

impl<S> Counted<S> {
    pub(super) fn new(inner: S) -> Self {
        Self {
            inner,
            calls: Mutex::default(),
        }
    }

    pub(super) fn count(&self, method: &'static str, started: Instant) {
        let took = started.elapsed();
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = calls.entry(method).or_default();
        entry.0 += 1;
        entry.1 += took;
    }

    /// The calls so far.
    pub(super) fn tally(&self) -> Tally {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl<S: Store> Store for Counted<S> {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn sync(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.sync().await;
        self.count("sync", started);
        result
    }
    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        let started = Instant::now();
        let result = self.inner.claim(session).await;
        self.count("claim", started);
        result
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
        let started = Instant::now();
        let result = self.inner.append(session, events, expected_seq).await;
        self.count("append", started);
        result
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let started = Instant::now();
        let result = self.inner.events(session, range).await;
        self.count("events", started);
        result
    }
    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        self.count("stream_events", Instant::now());
        self.inner.stream_events(session, range)
    }
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let started = Instant::now();
        let result = self.inner.session(session).await;
        self.count("session", started);
        result
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let started = Instant::now();
        let result = self.inner.sessions().await;
        self.count("sessions", started);
        result
    }
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.clear(session).await;
        self.count("clear", started);
        result
    }
    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.snapshot(session, snapshot).await;
        self.count("snapshot", started);
        result
    }
    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        let started = Instant::now();
        let result = self.inner.latest_snapshot(session, at_most).await;
        self.count("latest_snapshot", started);
        result
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        let started = Instant::now();
        let result = self.inner.subscribe(session, from_seq).await;
        self.count("subscribe", started);
        result
    }
}

/// What `after` adds to `before`.
pub(super) fn since(before: &Tally, after: &Tally) -> Tally {
    after
        .iter()
        .map(|(method, (calls, took))| {
            let (calls0, took0) = before.get(method).copied().unwrap_or_default();
            (*method, (calls - calls0, took.saturating_sub(took0)))
        })
        .filter(|(_, (calls, _))| *calls > 0)
        .collect()
}
