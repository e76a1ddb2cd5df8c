//! JSONL export/import: round trips between backends, idempotent re-import, and errors that
//! name the line.
#![allow(clippy::unwrap_used)]

use std::ops::Range;

use openharness_core::{
    EVENT_PAGE, Envelope, SessionId, SessionInfo, Snapshot, Store, StoreError, Subscription,
};
use openharness_store::jsonl::{self, TransferError};
use openharness_store::{MemoryStore, RedbStore};
use serde_json::json;

fn events(count: u64) -> Vec<Envelope> {
    (0..count)
        .map(|n| {
            Envelope::new(
                "test:appended",
                json!({ "n": n, "text": "a\nb \"c\" ✓" }),
                None,
            )
        })
        .collect()
}

#[tokio::test]
async fn round_trip_from_redb_to_memory_and_reimport_stores_once() {
    let dir = tempfile::tempdir().unwrap();
    let redb = RedbStore::open(dir.path().join("store.redb")).unwrap();
    let (a, b) = (SessionId::new(), SessionId::new());
    let long = events(2 * jsonl::BATCH as u64 + 17);
    redb.append(&a, &long, 0).await.unwrap();
    redb.append(&b, &events(3), 0).await.unwrap();

    let mut file = Vec::new();
    assert_eq!(
        jsonl::export(&redb, &a, &mut file).await.unwrap(),
        long.len() as u64
    );
    jsonl::export(&redb, &b, &mut file).await.unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    assert_eq!(text.lines().count(), long.len() + 3);
    assert!(
        text.lines().all(|l| l.starts_with("{\"session\":")),
        "one event per line"
    );

    let memory = MemoryStore::new();
    let summary = jsonl::import(&memory, file.as_slice()).await.unwrap();
    assert_eq!(summary.events, long.len() as u64 + 3);
    assert_eq!(
        summary.sessions,
        vec![(a.clone(), long.len() as u64), (b.clone(), 3)]
    );
    assert_eq!(memory.all_events(&a).await.unwrap(), long);
    assert_eq!(
        memory.session(&b).await.unwrap(),
        redb.session(&b).await.unwrap()
    );

    // Importing the same file again is a retry: nothing is stored twice.
    jsonl::import(&memory, file.as_slice()).await.unwrap();
    assert_eq!(memory.all_events(&a).await.unwrap().len(), long.len());
}

fn line(session: &SessionId, seq: u64) -> String {
    let event = Envelope::new("test:appended", json!({ "seq": seq }), None);
    let mut value = serde_json::to_value(&event).unwrap();
    value["session"] = json!(session);
    value["seq"] = json!(seq);
    value.to_string()
}

#[tokio::test]
async fn malformed_input_names_the_line() {
    let store = MemoryStore::new();
    let s = SessionId::new();

    let bad_json = format!("{}\n\n{{not json\n", line(&s, 0));
    let err = jsonl::import(&store, bad_json.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 3, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("line 3: not an event line"),
        "{err}"
    );

    let missing = format!("{}\n{{\"session\":\"{s}\",\"seq\":1}}\n", line(&s, 0));
    let err = jsonl::import(&MemoryStore::new(), missing.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 2, .. }),
        "{err}"
    );

    let gap = format!("{}\n{}\n{}\n", line(&s, 0), line(&s, 1), line(&s, 3));
    let err = jsonl::import(&MemoryStore::new(), gap.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::OutOfOrder {
                line: 3,
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("line 3"), "{err}");

    // A session that already holds other events is a conflict, reported with the batch's line.
    let target = MemoryStore::new();
    target.append(&s, &events(2), 0).await.unwrap();
    let fresh = format!("{}\n{}\n", line(&s, 0), line(&s, 1));
    let err = jsonl::import(&target, fresh.as_bytes()).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::Store {
                line: Some(1),
                source: StoreError::Conflict { .. },
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn exporting_an_unknown_session_is_an_error() {
    let store = MemoryStore::new();
    let err = jsonl::export(&store, &SessionId::new(), Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(err, TransferError::NotFound { .. }), "{err:?}");
}

/// A memory store whose reads fail from seq `fail_from` on.
struct BrokenReads {
    inner: MemoryStore,
    fail_from: u64,
}

#[async_trait::async_trait]
impl Store for BrokenReads {
    fn describe(&self) -> String {
        "broken-reads".into()
    }
    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        self.inner.append(session, events, expected_seq).await
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.start >= self.fail_from {
            return Err(StoreError::Invalid(format!("read from {}", range.start)));
        }
        self.inner.events(session, range).await
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

#[tokio::test]
async fn a_read_failing_mid_export_is_a_store_error_after_the_pages_before_it() {
    let store = BrokenReads {
        inner: MemoryStore::new(),
        fail_from: EVENT_PAGE as u64,
    };
    let session = SessionId::new();
    store
        .append(&session, &events(EVENT_PAGE as u64 + 5), 0)
        .await
        .unwrap();
    let mut out = Vec::new();
    let err = jsonl::export(&store, &session, &mut out).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::Store {
                line: None,
                source: StoreError::Invalid(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("broken-reads"), "{err}");
    // The first page was written before the failing read.
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), EVENT_PAGE);
}
