//! A `RedbStore` that defers durability answers an append whose outcome is certain before its
//! commit. These check what that must not change: a session written before the store opened is
//! checked as strictly as one written since, a caller reads its own writes however far the
//! writer thread is behind, and everything acknowledged is in the file once the store closes.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{RedbDurability, RedbOptions, RedbStore};

fn event(n: u64) -> Envelope {
    Envelope::new("tick:counted", serde_json::json!({ "n": n }), None)
}

fn deferred(durability: RedbDurability) -> RedbOptions {
    RedbOptions::default().durability(durability)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_from_before_the_open_refuses_its_old_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let old: Vec<Envelope> = (0..100).map(event).collect();
    {
        let store = RedbStore::open(&path).unwrap();
        for (seq, chunk) in (0u64..).step_by(10).zip(old.chunks(10)) {
            store.append(&session, chunk, seq).await.unwrap();
        }
    }
    let store = RedbStore::open_with(&path, deferred(RedbDurability::TurnEnd)).unwrap();
    // The first append is checked against the file and makes the session known (its ids read
    // back); the next ones are answered before their commit.
    for seq in 100..110 {
        assert_eq!(
            store.append(&session, &[event(seq)], seq).await.unwrap(),
            seq + 1
        );
    }
    for old_event in [&old[0], &old[5], &old[99]] {
        let again = store
            .append(&session, std::slice::from_ref(old_event), 110)
            .await;
        assert!(
            matches!(again, Err(StoreError::Invalid(_))),
            "an id stored before the open is refused: {again:?}"
        );
    }
    let stale = store.append(&session, &[event(1)], 100).await;
    assert!(
        matches!(
            stale,
            Err(StoreError::Conflict {
                expected: 100,
                actual: 110,
                ..
            })
        ),
        "{stale:?}"
    );
    // Nothing was lost on the way: the store is whole and takes the next append.
    store.sync().await.unwrap();
    assert_eq!(
        store.append(&session, &[event(110)], 110).await.unwrap(),
        111
    );
    let events = store.events(&session, 0..200).await.unwrap();
    assert_eq!(events.len(), 111);
    assert_eq!(events[5].id, old[5].id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_are_read_back_and_kept_by_a_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let sessions: Vec<SessionId> = (0..3).map(|_| SessionId::new()).collect();
    let appends = 3_000u64;
    {
        let store = RedbStore::open_with(
            &path,
            deferred(RedbDurability::Periodic(Duration::from_millis(10))),
        )
        .unwrap();
        let mut writers = Vec::new();
        for session in sessions.clone() {
            let store = store.clone();
            writers.push(tokio::spawn(async move {
                for seq in 0..appends {
                    let len = store.append(&session, &[event(seq)], seq).await.unwrap();
                    assert_eq!(len, seq + 1);
                    if seq % 500 == 499 {
                        // Read right after an append that may not be committed yet.
                        let info = store.session(&session).await.unwrap().unwrap();
                        assert_eq!(info.count, seq + 1, "reads see every acknowledged append");
                        let last = store.events(&session, seq..seq + 1).await.unwrap();
                        assert_eq!(last.len(), 1);
                    }
                }
            }));
        }
        for writer in writers {
            writer.await.unwrap();
        }
    }
    let store = RedbStore::open(&path).unwrap();
    for session in &sessions {
        let events = store.events(session, 0..u64::MAX).await.unwrap();
        assert_eq!(events.len() as u64, appends);
        assert!(
            events
                .iter()
                .zip(0u64..)
                .all(|(event, n)| event.payload["n"] == n),
            "every event in its place"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clear_between_acknowledged_appends_leaves_the_session_empty_then_growing() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open_with(
        dir.path().join("store.redb"),
        deferred(RedbDurability::TurnEnd),
    )
    .unwrap();
    let session = SessionId::new();
    for seq in 0..50 {
        store.append(&session, &[event(seq)], seq).await.unwrap();
    }
    store.clear(&session).await.unwrap();
    assert!(store.session(&session).await.unwrap().is_none());
    let stale = store.append(&session, &[event(50)], 50).await;
    assert!(
        matches!(stale, Err(StoreError::Conflict { actual: 0, .. })),
        "{stale:?}"
    );
    for seq in 0..10 {
        store.append(&session, &[event(seq)], seq).await.unwrap();
    }
    store.sync().await.unwrap();
    assert_eq!(store.session(&session).await.unwrap().unwrap().count, 10);
}
