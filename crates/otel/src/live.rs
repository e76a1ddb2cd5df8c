//! [`LiveExport`]: spans exported as events are recorded. The store, [`Observed`], hands each
//! append (a copy of the events spans are made of) to a worker through a bounded queue; the worker,
//! on a thread of its own, drains the queue every 20 ms (an append never wakes it), maps what it
//! finds and sends the spans it closes in batches. Recording never waits for it: when the queue is
//! full the append's events are dropped from the queue and counted, and the worker reads them back
//! from the store when it notices the gap (or at shutdown), so spans are late, not lost. Spans a
//! collector refuses are counted as failed.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openharness_core::adapter::observe::{Observed, StoreObserver};
use openharness_core::builtin::SessionForked;
use openharness_core::{CancellationToken, Envelope, Event, SessionId, Store, StoreError};
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tokio::sync::oneshot;

use crate::export::{BATCH, Collector, fork_link};
use crate::mapping::{SessionSpans, SpanOptions};
use crate::span::Span;

/// How often the worker takes what the queue holds.
const DRAIN_EVERY: Duration = Duration::from_millis(20);

/// How a live export queues and sends.
///
/// ```
/// use openharness_otel::{LiveOptions, SpanOptions};
/// let options = LiveOptions::default().queue(1024).spans(SpanOptions::default().content(true));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LiveOptions {
    queue: usize,
    spans: SpanOptions,
    flush_every: Duration,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            queue: 4096,
            spans: SpanOptions::default(),
            flush_every: Duration::from_millis(500),
        }
    }
}

impl LiveOptions {
    /// How many appends the queue holds before it drops (default 4096).
    pub fn queue(mut self, appends: usize) -> Self {
        self.queue = appends.max(1);
        self
    }

    /// What goes into the spans.
    pub fn spans(mut self, spans: SpanOptions) -> Self {
        self.spans = spans;
        self
    }

    /// How long closed spans wait for a fuller batch before they are sent (default 500 ms).
    pub fn flush_every(mut self, every: Duration) -> Self {
        self.flush_every = every;
        self
    }
}

/// What a live export has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportStats {
    /// Events handed to the queue.
    pub events_queued: u64,
    /// Events the full queue dropped (the worker reads them back from the store).
    pub events_dropped: u64,
    /// Dropped events read back from the store.
    pub events_recovered: u64,
    /// Spans the collector accepted.
    pub spans_sent: u64,
    /// Spans lost: the collector refused them, or the store could not give back dropped events.
    pub spans_failed: u64,
}

#[derive(Debug, Default)]
struct Counters {
    /// Per session, the first seq the queue dropped (kept: the worker reads gaps back by seq).
    dropped_from: std::sync::Mutex<HashMap<SessionId, u64>>,
    queued: AtomicU64,
    dropped: AtomicU64,
    recovered: AtomicU64,
    sent: AtomicU64,
    failed: AtomicU64,
}

impl Counters {
    fn dropped_from(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, u64>> {
        self.dropped_from
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stats(&self) -> ExportStats {
        ExportStats {
            events_queued: self.queued.load(Ordering::Relaxed),
            events_dropped: self.dropped.load(Ordering::Relaxed),
            events_recovered: self.recovered.load(Ordering::Relaxed),
            spans_sent: self.sent.load(Ordering::Relaxed),
            spans_failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// One append, as the worker gets it.
struct Appended {
    session: SessionId,
    /// The seq of the append's first event.
    first: u64,
    /// The seq after its last.
    end: u64,
    /// The events that take part in spans ([`SessionSpans::maps`]), with their seqs: the
    /// others are not copied.
    events: Vec<(u64, Envelope)>,
}

/// Spans exported as a store's events are recorded: run your workflows on
/// [`store`](Self::store), then [`shutdown`](Self::shutdown) to flush.
///
/// ```no_run
/// # async fn demo() -> Result<(), openharness_otel::OtelError> {
/// use std::sync::Arc;
/// use openharness::store::MemoryStore;
/// use openharness_otel::{Collector, Endpoint, LiveExport, LiveOptions};
///
/// let collector = Collector::new(&Endpoint::base("http://127.0.0.1:4318"))?;
/// let live = LiveExport::start(Arc::new(MemoryStore::new()), collector, LiveOptions::default());
/// let store = live.store(); // record sessions on this store (a workflow's, or a host's)
/// # drop(store);
/// let stats = live.shutdown(std::time::Duration::from_secs(5)).await;
/// assert_eq!(stats.spans_failed, 0);
/// # Ok(()) }
/// ```
pub struct LiveExport {
    store: Arc<Observed<Arc<dyn Store>, Exporter>>,
    counters: Arc<Counters>,
    stop: CancellationToken,
    done: oneshot::Receiver<()>,
}

impl std::fmt::Debug for LiveExport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveExport")
            .field("store", &self.store.describe())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl LiveExport {
    /// Starts the worker exporting what is appended to the returned [`store`](Self::store), a
    /// wrapper of `store`. Call it inside a tokio runtime: the worker runs on a thread of its
    /// own (with a runtime of its own), so mapping and sending never hold up the tasks of the
    /// run; what it reads back from `store` it reads on the caller's runtime.
    pub fn start(store: Arc<dyn Store>, collector: Collector, options: LiveOptions) -> Self {
        let (sender, receiver) = mpsc::channel(options.queue);
        let counters = Arc::new(Counters::default());
        let stop = CancellationToken::new();
        let worker = Worker {
            store: Arc::clone(&store),
            main: Handle::try_current().ok(),
            collector,
            options,
            counters: Arc::clone(&counters),
            sessions: HashMap::new(),
            pending: Vec::new(),
        };
        let (finished, done) = oneshot::channel();
        let job = {
            let stop = stop.clone();
            async move {
                worker.run(receiver, stop).await;
                let _ = finished.send(());
            }
        };
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => {
                let spawned = std::thread::Builder::new()
                    .name("openharness-otel".to_owned())
                    .spawn(move || {
                        yield_to_the_run();
                        runtime.block_on(job);
                    });
                if let Err(err) = spawned {
                    tracing::warn!(%err, "no thread for the OpenTelemetry export: nothing is exported");
                }
            }
            Err(err) => {
                tracing::debug!(%err, "the OpenTelemetry export runs on the caller's runtime");
                tokio::spawn(job);
            }
        }
        Self {
            store: Arc::new(Observed::new(
                store,
                Exporter {
                    sender,
                    counters: Arc::clone(&counters),
                },
            )),
            counters,
            stop,
            done,
        }
    }

    /// The store to record on: every call goes to the wrapped store; successful appends are
    /// also queued for export.
    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store) as Arc<dyn Store>
    }

    /// What the export has done so far.
    pub fn stats(&self) -> ExportStats {
        self.counters.stats()
    }

    /// Stops: what is queued is mapped, spans still open are closed as unfinished, events the
    /// queue dropped are read back, and everything is sent, within `timeout` (after which the
    /// rest is abandoned, counted as failed when known). Logs the figures with `tracing`
    /// (a warning when spans were lost) and returns them.
    pub async fn shutdown(self, timeout: Duration) -> ExportStats {
        self.stop.cancel();
        if tokio::time::timeout(timeout, self.done).await.is_err() {
            tracing::warn!(
                "the OpenTelemetry export did not finish within {timeout:?}: what was left unsent is lost"
            );
        }
        let stats = self.counters.stats();
        if stats.spans_failed > 0 {
            tracing::warn!(
                spans_sent = stats.spans_sent,
                spans_failed = stats.spans_failed,
                events_dropped = stats.events_dropped,
                events_recovered = stats.events_recovered,
                "OpenTelemetry export lost {} spans",
                stats.spans_failed
            );
        } else {
            tracing::info!(
                spans_sent = stats.spans_sent,
                events_dropped = stats.events_dropped,
                events_recovered = stats.events_recovered,
                "OpenTelemetry export finished"
            );
        }
        stats
    }
}

/// Puts the calling thread under Linux's `SCHED_IDLE` policy (this thread alone), so the
/// worker maps and sends only in the time the run leaves free: any other thread that wakes
/// takes the core from it at once. On a machine kept fully busy the worker waits; its queue
/// then fills, drops and reads back later (spans late, not lost). Elsewhere, or when refused,
/// it runs at normal priority.
fn yield_to_the_run() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::{
            NormalThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
            set_thread_priority_and_policy, thread_native_id,
        };
        if let Err(err) = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Min,
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Idle),
        ) {
            tracing::debug!(?err, "the OpenTelemetry export runs at normal priority");
        }
    }
}

/// What [`LiveExport::store`] tells of each append: the store is the one given, observed.
struct Exporter {
    sender: mpsc::Sender<Appended>,
    counters: Arc<Counters>,
}

impl std::fmt::Debug for Appended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appended")
            .field("session", &self.session)
            .field("first", &self.first)
            .field("events", &self.events.len())
            .finish()
    }
}

impl StoreObserver for Exporter {
    /// Queues a successful append's events (those that take part in spans), or counts them
    /// dropped when the queue is full; never waits.
    fn after_append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        result: &Result<u64, StoreError>,
        _took: Duration,
    ) {
        let Ok(len) = *result else {
            return;
        };
        if events.is_empty() {
            return;
        }
        let n = events.len() as u64;
        let first = len.saturating_sub(n);
        let appended = Appended {
            session: session.clone(),
            first,
            end: len,
            events: (first..)
                .zip(events)
                .filter(|(_, event)| SessionSpans::maps(&event.name))
                .map(|(seq, event)| (seq, event.clone()))
                .collect(),
        };
        self.counters.queued.fetch_add(n, Ordering::Relaxed);
        if let Err(err) = self.sender.try_send(appended) {
            let appended = match err {
                mpsc::error::TrySendError::Full(appended)
                | mpsc::error::TrySendError::Closed(appended) => appended,
            };
            self.counters.dropped.fetch_add(n, Ordering::Relaxed);
            self.counters
                .dropped_from()
                .entry(appended.session)
                .or_insert(appended.first);
        }
    }
}

/// A session the worker follows: its mapping and the seq of the next event it expects. Between
/// turns the mapping holds no span, only what links the next turn to the last (a few words).
struct Followed {
    mapping: Option<SessionSpans>,
    next: u64,
}

struct Worker {
    store: Arc<dyn Store>,
    /// The runtime the store was used on (a PostgreSQL pool's connections live there).
    main: Option<Handle>,
    collector: Collector,
    options: LiveOptions,
    counters: Arc<Counters>,
    sessions: HashMap<SessionId, Followed>,
    pending: Vec<Span>,
}

impl Worker {
    /// `store.events(session, range)`, on the store's own runtime.
    async fn read(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let store = Arc::clone(&self.store);
        let session = session.clone();
        let read = async move { store.events(&session, range).await };
        match &self.main {
            Some(main) => main
                .spawn(read)
                .await
                .unwrap_or_else(|err| Err(StoreError::backend(err))),
            None => read.await,
        }
    }

    /// The parent's span a fork links to, read on the store's own runtime.
    async fn fork_link(
        &self,
        forked: &SessionForked,
    ) -> Result<Option<crate::span::SpanRef>, crate::OtelError> {
        let store = Arc::clone(&self.store);
        let forked = forked.clone();
        let parent = forked.parent.clone();
        let read = async move { fork_link(store.as_ref(), &forked).await };
        match &self.main {
            Some(main) => main.spawn(read).await.unwrap_or_else(|err| {
                Err(crate::OtelError::Store {
                    session: parent,
                    source: StoreError::backend(err),
                })
            }),
            None => read.await,
        }
    }

    async fn run(mut self, mut receiver: mpsc::Receiver<Appended>, stop: CancellationToken) {
        // The worker is never woken by an append (a wake per append is a system call on the
        // run's path): it drains the queue on a tick, and sends when a batch is full or the
        // flush interval has passed.
        let mut drain = tokio::time::interval(DRAIN_EVERY);
        drain.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut flushed = tokio::time::Instant::now();
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                _ = drain.tick() => {}
            }
            loop {
                match receiver.try_recv() {
                    Ok(appended) => self.take(appended).await,
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        return self.finish(receiver).await;
                    }
                }
                if self.pending.len() >= BATCH {
                    self.flush().await;
                    flushed = tokio::time::Instant::now();
                }
            }
            if flushed.elapsed() >= self.options.flush_every {
                self.flush().await;
                flushed = tokio::time::Instant::now();
            }
        }
        self.finish(receiver).await;
    }

    /// Shutdown: what is queued, then what was dropped at the end, then what is still open.
    async fn finish(mut self, mut receiver: mpsc::Receiver<Appended>) {
        receiver.close();
        while let Ok(appended) = receiver.try_recv() {
            self.take(appended).await;
        }
        // Appends dropped at a session's end have no later append to reveal them.
        let dropped: Vec<SessionId> = self.counters.dropped_from().keys().cloned().collect();
        for session in &dropped {
            self.catch_up(session, u64::MAX).await;
        }
        for followed in self.sessions.values_mut() {
            if let Some(mapping) = followed.mapping.take() {
                self.pending.extend(mapping.finish());
            }
        }
        self.flush().await;
    }

    /// Maps one append, reading back first whatever the queue dropped before it.
    async fn take(&mut self, appended: Appended) {
        let Appended {
            session,
            first,
            end,
            events,
        } = appended;
        self.catch_up(&session, first).await;
        for (seq, event) in &events {
            self.push(&session, *seq, event).await;
        }
        // The events it did not copy are seen too: no gap to read back.
        let followed = self.sessions.entry(session).or_insert_with(|| Followed {
            mapping: None,
            next: end,
        });
        followed.next = followed.next.max(end);
    }

    /// Reads back from the store the events of `session` the queue dropped, before `until`: a
    /// followed session's gap (from the next seq it expects), or the dropped start of a session
    /// not seen yet.
    async fn catch_up(&mut self, session: &SessionId, until: u64) {
        let next = match self.sessions.get(session) {
            Some(followed) => followed.next,
            None => match self.counters.dropped_from().get(session) {
                Some(&dropped) => dropped,
                // Never dropped: a session with history from before the export began starts here.
                None => return,
            },
        };
        if next >= until {
            return;
        }
        let events = match self.read(session, next..until).await {
            Ok(events) => events,
            Err(err) => {
                tracing::warn!(%session, %err, "cannot read back the events the OpenTelemetry queue dropped");
                return;
            }
        };
        self.counters
            .recovered
            .fetch_add(events.len() as u64, Ordering::Relaxed);
        for (seq, event) in (next..).zip(&events) {
            self.push(session, seq, event).await;
        }
    }

    async fn push(&mut self, session: &SessionId, seq: u64, event: &Envelope) {
        let followed = self
            .sessions
            .entry(session.clone())
            .or_insert_with(|| Followed {
                mapping: None,
                next: 0,
            });
        if seq < followed.next {
            return; // seen already (read back before its append arrived)
        }
        followed.next = seq + 1;
        if !SessionSpans::maps(&event.name) {
            return;
        }
        let mapping = followed.mapping.take();
        let mut mapping = match mapping {
            Some(mapping) => mapping,
            None if seq > 0 => self.caught_up(session, seq).await,
            None => {
                let mut mapping = SessionSpans::new(session.clone(), self.options.spans);
                if event.name == SessionForked::NAME
                    && let Ok(forked) = event.decode::<SessionForked>()
                {
                    match self.fork_link(&forked).await {
                        Ok(Some(link)) => mapping.link_fork(link),
                        Ok(None) => {}
                        Err(err) => {
                            tracing::warn!(%session, %err, "a fork's span is exported without its link to its parent");
                        }
                    }
                }
                mapping
            }
        };
        self.pending.extend(mapping.push(seq, event));
        if let Some(followed) = self.sessions.get_mut(session) {
            followed.mapping = Some(mapping);
        }
    }

    /// The mapping of a session first seen at `seq` (recorded before this export began, by
    /// another process): its events before `seq` mapped and their spans dropped (that process
    /// exported them), so the next turn links to the last and an answer closes its question.
    async fn caught_up(&self, session: &SessionId, seq: u64) -> SessionSpans {
        let mut mapping = SessionSpans::new(session.clone(), self.options.spans);
        match self.read(session, 0..seq).await {
            Ok(events) => {
                for (at, event) in (0..).zip(&events) {
                    drop(mapping.push(at, event));
                }
            }
            Err(err) => {
                tracing::warn!(%session, %err, "a session's next turn is exported without its link to the turn before");
            }
        }
        mapping
    }

    async fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut spans = std::mem::take(&mut self.pending).into_iter().peekable();
        while spans.peek().is_some() {
            let batch: Vec<_> = spans
                .by_ref()
                .take(BATCH)
                .map(Span::into_span_data)
                .collect();
            let n = batch.len() as u64;
            match self.collector.send_batch(batch).await {
                Ok(()) => {
                    self.counters.sent.fetch_add(n, Ordering::Relaxed);
                }
                Err(err) => {
                    self.counters.failed.fetch_add(n, Ordering::Relaxed);
                    tracing::warn!(%err, "OpenTelemetry spans were not exported");
                }
            }
        }
    }
}
