//! `Observed` (core's, re-exported here) over a real store: the observer is told of each
//! append with its result and of every call by name, the calls themselves are the inner
//! store's, and a call the observer fails never reaches it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{MemoryStore, Observed, StoreCall, StoreObserver};
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

/// Fails every append to one session, and notes every call that reached the inner store.
struct Refuses {
    session: SessionId,
    seen: Mutex<Vec<(&'static str, bool)>>,
}

#[async_trait::async_trait]
impl StoreObserver for Refuses {
    async fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        match call {
            StoreCall::Append { session, .. } if *session == self.session => {
                Err(StoreError::Invalid("refused by the observer".into()))
            }
            _ => Ok(()),
        }
    }

    fn after(&self, call: StoreCall<'_>, _: Duration, succeeded: bool) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.push((call.name(), succeeded));
        }
    }
}

#[tokio::test]
async fn a_call_the_observer_fails_never_reaches_the_store_and_the_others_are_named() {
    let (refused, other) = (SessionId::new(), SessionId::new());
    let store = Observed::new(
        MemoryStore::new(),
        Refuses {
            session: refused.clone(),
            seen: Mutex::default(),
        },
    );
    let event = || Envelope::new("user:input", json!({ "text": "hi" }), None);
    let err = store.append(&refused, &[event()], 0).await.err();
    assert!(
        matches!(&err, Some(StoreError::Invalid(message)) if message == "refused by the observer"),
        "{err:?}"
    );
    assert_eq!(store.append(&other, &[event()], 0).await.ok(), Some(1));
    // A conflict is the inner store's answer, told to `after` as a failure.
    assert!(store.append(&other, &[event()], 0).await.is_err());
    assert_eq!(
        store.events(&other, 0..1).await.ok().map(|e| e.len()),
        Some(1)
    );
    assert_eq!(store.session(&refused).await.ok(), Some(None));
    let listed = store.sessions().await.ok().map(|sessions| sessions.len());
    assert_eq!(listed, Some(1));
    let seen = store.observer().seen.lock().map(|seen| seen.clone()).ok();
    assert_eq!(
        seen,
        Some(vec![
            ("append", true),
            ("append", false),
            ("events", true),
            ("session", true),
            ("sessions", true),
        ])
    );
}
