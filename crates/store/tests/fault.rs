//! FailingStore (an `Observed` store with `Faults`): injected append failures, counted, typed,
//! and losing nothing.

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{FailingStore, InjectedFailure, MemoryStore};
use serde_json::json;

fn event() -> Vec<Envelope> {
    vec![Envelope::new("test:appended", json!({}), None)]
}

fn injected(result: Result<u64, StoreError>) -> u64 {
    match result {
        Err(StoreError::Backend(err)) => {
            let failure = err
                .downcast_ref::<InjectedFailure>()
                .expect("the backend error is the injected failure");
            assert_eq!(
                err.to_string(),
                format!("injected failure on append #{}", failure.append)
            );
            failure.append
        }
        other => panic!("expected an injected failure, got {other:?}"),
    }
}

#[tokio::test]
async fn fail_from_fails_that_append_and_every_later_one() {
    let store = FailingStore::fail_from(MemoryStore::new(), 3);
    let session = SessionId::new();
    for seq in 0..2 {
        store
            .append(&session, &event(), seq)
            .await
            .expect("appends before the failure");
    }
    assert_eq!(injected(store.append(&session, &event(), 2).await), 3);
    assert_eq!(injected(store.append(&session, &event(), 2).await), 4);
    assert_eq!((store.attempts(), store.succeeded()), (4, 2));
    // Nothing already stored was lost, nothing failed was stored; reads pass through.
    assert_eq!(store.all_events(&session).await.expect("read").len(), 2);
    assert_eq!(
        store
            .inner()
            .all_events(&session)
            .await
            .expect("read")
            .len(),
        2
    );
    assert_eq!(
        store.describe(),
        "memory",
        "a failing store describes the store it wraps"
    );
}

#[tokio::test]
async fn fail_only_fails_just_that_append() {
    let store = FailingStore::fail_only(MemoryStore::new(), 2);
    let session = SessionId::new();
    store
        .append(&session, &event(), 0)
        .await
        .expect("append #1");
    assert_eq!(injected(store.append(&session, &event(), 1).await), 2);
    store
        .append(&session, &event(), 1)
        .await
        .expect("append #3");
    assert_eq!((store.attempts(), store.succeeded()), (3, 2));
    assert_eq!(
        store
            .into_inner()
            .all_events(&session)
            .await
            .expect("read")
            .len(),
        2
    );
}

#[tokio::test]
async fn lost_acknowledgement_then_retry_stores_once() {
    let store = FailingStore::fail_only(MemoryStore::new(), 1).losing_acknowledgement();
    let clone = store.clone();
    let session = SessionId::new();
    let batch = vec![event().remove(0), event().remove(0)];
    assert_eq!(injected(store.append(&session, &batch, 0).await), 1);
    assert_eq!(
        store
            .inner()
            .all_events(&session)
            .await
            .expect("read")
            .len(),
        2,
        "written"
    );
    assert_eq!(
        store.append(&session, &batch, 0).await.expect("the retry"),
        2
    );
    assert_eq!(
        store.all_events(&session).await.expect("read"),
        batch,
        "stored once"
    );
    assert_eq!(
        (clone.attempts(), clone.succeeded()),
        (2, 1),
        "clones share the counters"
    );
}

#[tokio::test]
async fn zero_means_the_first_append() {
    let store = FailingStore::fail_from(MemoryStore::new(), 0);
    assert_eq!(
        injected(store.append(&SessionId::new(), &event(), 0).await),
        1
    );
}
