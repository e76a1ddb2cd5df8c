//! Tests of `store`.

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_core::Stream;
use futures_util::StreamExt;
use serde_json::json;

use super::*;

/// Each message of an error and its causes, as a chain-printing reporter shows them.
fn chain(err: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![err.to_string()];
    let mut cause = err.source();
    while let Some(err) = cause {
        out.push(err.to_string());
        cause = err.source();
    }
    out
}

#[test]
fn json_len_counts_the_bytes_serde_json_writes() {
    let value = serde_json::json!({ "text": "a \"quoted\" é", "n": [1, 2.5, null], "ok": true });
    assert_eq!(
        json_len(&value),
        serde_json::to_vec(&value).unwrap().len() as u64
    );
    assert_eq!(json_len(&()), 4);
}

#[test]
fn a_backend_error_shows_each_cause_once_in_a_chain() {
    #[derive(Debug, thiserror::Error)]
    #[error("connection to 127.0.0.1:5432 lost")]
    struct Lost(#[source] std::io::Error);
    let io = std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe");
    let err = StoreError::Backend(Box::new(Lost(io)));
    assert_eq!(
        chain(&err),
        ["connection to 127.0.0.1:5432 lost", "broken pipe"]
    );
    let wrapped = crate::Error::from(err);
    let messages = chain(&wrapped);
    for message in ["connection to 127.0.0.1:5432 lost", "broken pipe"] {
        let shown = messages.iter().filter(|m| m.contains(message)).count();
        assert!(shown >= 1, "{messages:?}");
    }
    assert_eq!(
        messages.iter().filter(|m| *m == "broken pipe").count(),
        1,
        "{messages:?}"
    );
}

/// A store holding one session in a `Vec`, counting reads; reads starting at `fail_at` fail.
/// It keeps no snapshots (it records what `snapshot_json` is given in `snapshot_texts`, and
/// answers `latest_snapshot_json` with `stored_snapshot`), and says so unless `saves` is set.
pub(crate) struct VecStore {
    session: SessionId,
    events: Vec<Envelope>,
    reads: AtomicU64,
    fail_at: Option<u64>,
    /// Every range `events` was asked for.
    ranges: Mutex<Vec<Range<u64>>>,
    /// What [`Store::saves_snapshots`] answers.
    pub(crate) saves: bool,
    /// Each `(position, state text)` [`Store::snapshot_json`] was given.
    snapshot_texts: Mutex<Vec<(u64, String)>>,
    /// What [`Store::latest_snapshot_json`] answers, as stored text.
    stored_snapshot: Option<(u64, Vec<u8>)>,
}

impl VecStore {
    pub(crate) fn new(len: u64) -> Self {
        Self {
            session: SessionId::new(),
            events: (0..len)
                .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
                .collect(),
            reads: AtomicU64::new(0),
            fail_at: None,
            ranges: Mutex::new(Vec::new()),
            saves: false,
            snapshot_texts: Mutex::new(Vec::new()),
            stored_snapshot: None,
        }
    }
}

#[async_trait]
impl Store for VecStore {
    fn describe(&self) -> String {
        "vec".into()
    }
    fn saves_snapshots(&self) -> bool {
        self.saves
    }
    async fn append(&self, _: &SessionId, _: &[Envelope], _: u64) -> Result<u64, StoreError> {
        Err(StoreError::Invalid("read-only".into()))
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.ranges.lock().unwrap().push(range.clone());
        if self.fail_at == Some(range.start) {
            return Err(StoreError::Corrupt {
                session: session.clone(),
                seq: range.start,
                message: "injected".into(),
            });
        }
        if *session != self.session {
            return Ok(Vec::new());
        }
        let len = self.events.len() as u64;
        let (start, end) = (
            range.start.min(len),
            range.end.min(len).max(range.start.min(len)),
        );
        Ok(self.events[start as usize..end as usize].to_vec())
    }
    async fn session(&self, _: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        Ok(None)
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        Ok(Vec::new())
    }
    async fn clear(&self, _: &SessionId) -> Result<(), StoreError> {
        Ok(())
    }
    async fn snapshot_json(
        &self,
        _: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        let text = state.get().to_owned();
        self.snapshot_texts.lock().unwrap().push((position, text));
        Ok(())
    }
    async fn latest_snapshot_json(
        &self,
        _: &SessionId,
        _: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        let stored = self.stored_snapshot.clone();
        Ok(stored.map(|(position, text)| (position, SnapshotJson::Text(text))))
    }
    async fn subscribe(&self, _: &SessionId, _: u64) -> Result<Subscription, StoreError> {
        Err(StoreError::Invalid("no tails".into()))
    }
}

async fn seqs(stream: EventStream<'_>) -> Vec<u64> {
    stream.map(|item| item.unwrap().seq).collect().await
}

#[tokio::test]
async fn paged_streams_cross_page_boundaries_with_their_seqs() {
    let store = VecStore::new(10);
    let session = store.session.clone();
    for (range, expected) in [
        (0..u64::MAX, (0..10).collect::<Vec<u64>>()),
        (2..8, (2..8).collect()),
        (3..6, (3..6).collect()),
        (3..3, vec![]),
        (Range { start: 7, end: 2 }, vec![]),
        (10..20, vec![]),
        (9..u64::MAX, vec![9]),
        (u64::MAX - 1..u64::MAX, vec![]),
    ] {
        let stream = EventStream::paged(&store, &session, range.clone(), 3);
        assert_eq!(seqs(stream).await, expected, "range {range:?}");
    }
    let events: Vec<Envelope> = EventStream::paged(&store, &session, 4..9, 2)
        .map(|item| item.unwrap().event)
        .collect()
        .await;
    assert_eq!(events, store.events[4..9]);
    let unknown = EventStream::paged(&store, &SessionId::new(), 0..u64::MAX, 3);
    assert!(seqs(unknown).await.is_empty());
}

#[tokio::test]
async fn paged_streams_read_one_page_ahead_and_stop_at_a_short_page() {
    let store = VecStore::new(10);
    let mut stream = EventStream::paged(&store, &store.session, 0..u64::MAX, 4);
    assert_eq!(store.reads.load(Ordering::SeqCst), 0, "reads are lazy");
    assert_eq!(stream.next().await.unwrap().unwrap().seq, 0);
    // The first page, and the next one read while the first is taken.
    assert_eq!(store.reads.load(Ordering::SeqCst), 2);
    assert_eq!(stream.next().await.unwrap().unwrap().seq, 1);
    assert_eq!(
        store.reads.load(Ordering::SeqCst),
        2,
        "one page ahead, no more"
    );
    while stream.next().await.is_some() {}
    // 0..4, 4..8, then 8..12 gives 2 events: the session ends there, no fourth read.
    assert_eq!(*store.ranges.lock().unwrap(), [0..4, 4..8, 8..12]);

    // A session that ends exactly on a page boundary costs one empty read.
    let store = VecStore::new(8);
    assert_eq!(
        seqs(EventStream::paged(&store, &store.session, 0..u64::MAX, 4)).await,
        (0..8).collect::<Vec<_>>()
    );
    assert_eq!(*store.ranges.lock().unwrap(), [0..4, 4..8, 8..12]);

    // A range ending inside a page reads only up to its end; a page size of 0 means 1.
    let store = VecStore::new(8);
    assert_eq!(
        seqs(EventStream::paged(&store, &store.session, 1..3, 0)).await,
        [1, 2]
    );
    assert_eq!(*store.ranges.lock().unwrap(), [1..2, 2..3]);
}

#[tokio::test]
async fn a_started_stream_reads_before_it_is_awaited_and_loses_nothing() {
    let store = VecStore::new(10);
    let mut stream = EventStream::paged(&store, &store.session, 0..u64::MAX, 4);
    stream.start();
    assert!(
        store.reads.load(Ordering::SeqCst) >= 1,
        "start read nothing"
    );
    assert_eq!(
        Stream::size_hint(&stream).0,
        1,
        "the event found ready is counted"
    );
    stream.start(); // a second start keeps what the first found
    assert_eq!(seqs(stream).await, (0..10).collect::<Vec<_>>());

    // Starting an empty stream ends it; it stays ended.
    let mut empty = EventStream::paged(&store, &store.session, 20..30, 4);
    empty.start();
    assert!(futures_core::FusedStream::is_terminated(&empty));
    assert!(empty.next().await.is_none());
}

#[tokio::test]
async fn a_failed_read_is_yielded_once_then_the_stream_ends() {
    let mut store = VecStore::new(10);
    store.fail_at = Some(4);
    let mut stream = EventStream::paged(&store, &store.session, 0..u64::MAX, 4);
    for seq in 0..4 {
        assert_eq!(stream.next().await.unwrap().unwrap().seq, seq);
    }
    let err = stream.next().await.unwrap().unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 4, .. }), "{err:?}");
    assert!(stream.next().await.is_none());
    assert!(stream.next().await.is_none(), "it stays ended");
    assert_eq!(
        store.reads.load(Ordering::SeqCst),
        2,
        "no read after the error"
    );
}

#[tokio::test]
async fn the_default_stream_events_reads_event_page_events_at_a_time() {
    let page = EVENT_PAGE as u64;
    let store = VecStore::new(page * 2 + 1);
    let all = seqs(store.stream_events(&store.session, 0..u64::MAX)).await;
    assert_eq!(all, (0..page * 2 + 1).collect::<Vec<_>>());
    assert_eq!(
        *store.ranges.lock().unwrap(),
        [0..page, page..2 * page, 2 * page..3 * page]
    );
    // Through an `Arc` too.
    let shared = std::sync::Arc::new(VecStore::new(3));
    let session = shared.session.clone();
    assert_eq!(seqs(shared.stream_events(&session, 1..9)).await, [1, 2]);
}

fn recorded(seq: u64) -> Result<Recorded, StoreError> {
    let event = Envelope::new("test:appended", json!({ "n": seq }), None);
    Ok(Recorded { seq, event })
}

#[tokio::test]
async fn a_subscription_is_a_stream() {
    let (tx, mut subscription) = Subscription::channel(8);
    for seq in 0..6 {
        tx.send(recorded(seq)).await.unwrap();
    }
    // The inherent `next` and the stream's items interleave.
    assert_eq!(subscription.next().await.unwrap().unwrap().seq, 0);
    assert_eq!(
        StreamExt::next(&mut subscription)
            .await
            .unwrap()
            .unwrap()
            .seq,
        1
    );
    let evens: Vec<u64> = subscription
        .by_ref()
        .map(|item| item.unwrap().seq)
        .filter(|seq| std::future::ready(seq % 2 == 0))
        .take(2)
        .collect()
        .await;
    assert_eq!(evens, [2, 4]);
    assert_eq!(subscription.next().await.unwrap().unwrap().seq, 5);

    // A live item arrives while the stream waits.
    let sender = tx.clone();
    let waiting = tokio::spawn(async move {
        let next = subscription.next().await.unwrap().unwrap().seq;
        (next, subscription)
    });
    tokio::task::yield_now().await;
    sender.send(recorded(6)).await.unwrap();
    let (next, subscription) = waiting.await.unwrap();
    assert_eq!(next, 6);

    // The store side stops after an error: the stream yields it, then ends.
    tx.send(Err(StoreError::Invalid("stopped".into())))
        .await
        .unwrap();
    drop((tx, sender));
    let rest: Vec<Result<Recorded, StoreError>> = subscription.collect().await;
    assert_eq!(rest.len(), 1);
    assert!(matches!(rest[0], Err(StoreError::Invalid(_))), "{rest:?}");
}

#[tokio::test]
async fn the_typed_snapshot_methods_go_through_the_json_ones() {
    let mut store = VecStore::new(4);
    let session = store.session.clone();
    store
        .snapshot(&session, &Snapshot::new(2, json!({ "done": 1 })))
        .await
        .unwrap();
    assert_eq!(
        *store.snapshot_texts.lock().unwrap(),
        vec![(2, r#"{"done":1}"#.to_owned())]
    );

    store.stored_snapshot = Some((3, br#"{"done":2}"#.to_vec()));
    let found = store.latest_snapshot(&session, 4).await.unwrap().unwrap();
    assert_eq!(found, Snapshot::new(3, json!({ "done": 2 })));

    // Stored text that is not JSON is a corrupt record at the snapshot's position.
    store.stored_snapshot = Some((3, b"{not json".to_vec()));
    let err = store.latest_snapshot(&session, 4).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { session: s, seq: 3, .. } if *s == session),
        "{err:?}"
    );
}
