//! `Observed` (core's, re-exported here) over a real store: the observer is told of each
//! append with its result, and the append itself is the inner store's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{MemoryStore, Observed, StoreObserver};
use serde_json::json;

/// Counts the appends that succeeded and those that failed.
#[derive(Default)]
struct Writes {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl StoreObserver for Writes {
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        result: &Result<u64, StoreError>,
        _: Duration,
    ) {
        let counter = if result.is_ok() {
            &self.ok
        } else {
            &self.failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

#[tokio::test]
async fn the_observer_is_told_of_each_append_and_its_result() {
    let store = Observed::new(MemoryStore::new(), Writes::default());
    let session = SessionId::new();
    let event = || Envelope::new("user:input", json!({ "text": "hi" }), None);
    assert_eq!(store.append(&session, &[event()], 0).await.ok(), Some(1));
    // A conflict reaches the observer as the error it is.
    assert!(store.append(&session, &[event()], 0).await.is_err());
    assert_eq!(store.observer().ok.load(Ordering::Relaxed), 1);
    assert_eq!(store.observer().failed.load(Ordering::Relaxed), 1);
    assert_eq!(
        store
            .inner()
            .all_events(&session)
            .await
            .ok()
            .map(|e| e.len()),
        Some(1)
    );
}
