//! Checks of snapshots (the nearest at or before a position) and of live tails (`subscribe`):
//! catching up then tailing, and the boundary under concurrent writers.

use std::sync::Arc;
use std::time::Duration;

use openharness_core::{
    Envelope, SessionId, Store, StoreError,
    adapter::{Snapshot, Subscription},
};
use serde_json::json;

use super::helpers::*;

/// Snapshots, saved as values or as JSON text: the nearest at or before a position is found,
/// saving again at a position replaces it, a position past the session's end is invalid, and
/// clearing the session removes them.
pub async fn snapshots_nearest_at_or_before<S: Store>(store: S) {
    let session = SessionId::new();
    let other = SessionId::new();
    let latest = |at: u64| {
        let store = &store;
        let session = session.clone();
        async move {
            let found = match store.latest_snapshot(&session, at).await {
                Ok(found) => found,
                Err(err) => panic!("latest snapshot at or before {at} failed: {err}"),
            };
            // The same snapshot as JSON (text or value) decodes to the same state.
            let json = match store.latest_snapshot_json(&session, at).await {
                Ok(json) => json.map(|(position, json)| (position, json.decode())),
                Err(err) => panic!("latest snapshot JSON at or before {at} failed: {err}"),
            };
            let json = json.map(|(position, state)| match state {
                Ok(state) => Snapshot::new(position, state),
                Err(err) => panic!("the snapshot's JSON at {position} does not decode: {err}"),
            });
            assert_eq!(json, found, "latest_snapshot_json disagrees at {at}");
            found
        }
    };
    let save = |snapshot: Snapshot| {
        let store = &store;
        let session = session.clone();
        async move { store.snapshot(&session, &snapshot).await }
    };
    // The same, through the JSON text a runtime writes its state out to once.
    let save_json = |snapshot: Snapshot| {
        let store = &store;
        let session = session.clone();
        async move {
            let state = match serde_json::value::to_raw_value(&snapshot.state) {
                Ok(state) => state,
                Err(err) => panic!("the test's state does not serialize: {err}"),
            };
            store
                .snapshot_json(&session, snapshot.position, state)
                .await
        }
    };

    assert!(
        save(Snapshot::new(0, json!({}))).await.is_err(),
        "a snapshot of a session with no events was accepted"
    );
    append_ok(&store, &session, &batch(6), 0).await;
    append_ok(&store, &other, &batch(6), 0).await;
    assert_eq!(latest(6).await, None, "a snapshot before any was saved");

    for (position, state) in [
        (0, json!({ "n": 0 })),
        (2, json!({ "n": 2 })),
        (5, json!([5, "five"])),
    ] {
        let snapshot = Snapshot::new(position, state);
        let saved = if position == 2 {
            save_json(snapshot).await
        } else {
            save(snapshot).await
        };
        if let Err(err) = saved {
            panic!("saving a snapshot at {position} failed: {err}");
        }
    }
    let beyond = save(Snapshot::new(7, json!({}))).await;
    assert!(
        matches!(beyond, Err(StoreError::Invalid(_))),
        "a snapshot past the end: {beyond:?}"
    );
    let beyond = save_json(Snapshot::new(7, json!({}))).await;
    assert!(
        matches!(beyond, Err(StoreError::Invalid(_))),
        "a snapshot's JSON past the end: {beyond:?}"
    );
    assert_eq!(latest(0).await, Some(Snapshot::new(0, json!({ "n": 0 }))));
    assert_eq!(latest(1).await, Some(Snapshot::new(0, json!({ "n": 0 }))));
    assert_eq!(latest(4).await, Some(Snapshot::new(2, json!({ "n": 2 }))));
    assert_eq!(latest(5).await, Some(Snapshot::new(5, json!([5, "five"]))));
    assert_eq!(
        latest(u64::MAX).await,
        Some(Snapshot::new(5, json!([5, "five"])))
    );

    if let Err(err) = save(Snapshot::new(2, json!({ "n": "two" }))).await {
        panic!("replacing a snapshot failed: {err}");
    }
    assert_eq!(
        latest(3).await,
        Some(Snapshot::new(2, json!({ "n": "two" }))),
        "replaced"
    );
    match store.latest_snapshot(&other, u64::MAX).await {
        Ok(None) => {}
        other => panic!("another session's snapshots leaked: {other:?}"),
    }

    if let Err(err) = store.clear(&session).await {
        panic!("clear failed: {err}");
    }
    assert_eq!(latest(u64::MAX).await, None, "snapshots survived a clear");
}

/// How long a subscriber waits for an event before the check calls the store stuck. This is a
/// hang detector, not a timing goal: a correct store delivers within milliseconds.
pub(super) const STUCK: Duration = Duration::from_secs(20);

pub(super) async fn subscribe<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    from: u64,
) -> Subscription {
    match store.subscribe(session, from).await {
        Ok(subscription) => subscription,
        Err(err) => panic!("subscribing to session {session} from {from} failed: {err}"),
    }
}

/// Receives the next `count` events, checking they carry consecutive seqs from `from`.
pub(super) async fn receive(
    subscription: &mut Subscription,
    from: u64,
    count: u64,
) -> Vec<Envelope> {
    let mut events = Vec::new();
    for seq in from..from + count {
        match tokio::time::timeout(STUCK, subscription.next()).await {
            Ok(Some(Ok(recorded))) => {
                assert_eq!(
                    recorded.seq, seq,
                    "a subscription skipped or repeated a seq"
                );
                events.push(recorded.event);
            }
            Ok(Some(Err(err))) => panic!("the subscription failed at seq {seq}: {err}"),
            Ok(None) => panic!("the subscription ended before seq {seq}"),
            Err(_) => panic!("no event at seq {seq} after {STUCK:?}: the subscription is stuck"),
        }
    }
    events
}

/// Asserts nothing more arrives for a moment (an extra event would be a repeat or an invention).
pub(super) async fn quiet(subscription: &mut Subscription) {
    if let Ok(item) = tokio::time::timeout(Duration::from_millis(100), subscription.next()).await {
        panic!("a subscription yielded more than was appended: {item:?}");
    }
}

/// A subscription yields the stored events from its seq, then new ones as they are appended,
/// each once; it may start before the session exists or past its end.
pub async fn subscribe_catches_up_then_tails<S: Store>(store: S) {
    let session = SessionId::new();
    let mut early = subscribe(&store, &session, 0).await;
    let mut ahead = subscribe(&store, &session, 4).await;
    let first = batch(3);
    append_ok(&store, &session, &first, 0).await;
    assert_eq!(
        receive(&mut early, 0, 3).await,
        first,
        "live events before any were stored"
    );

    let mut middle = subscribe(&store, &session, 1).await;
    assert_eq!(
        receive(&mut middle, 1, 2).await,
        first[1..],
        "catch-up from seq 1"
    );
    quiet(&mut middle).await;

    let second = batch(4);
    append_ok(&store, &session, &second[..2], 3).await;
    append_ok(&store, &session, &second[2..], 5).await;
    // A retry and a conflict deliver nothing.
    append_ok(&store, &session, &second[2..], 5).await;
    assert!(store.append(&session, &batch(1), 2).await.is_err());
    assert_eq!(
        receive(&mut middle, 3, 4).await,
        second,
        "live events after catch-up"
    );
    assert_eq!(receive(&mut early, 3, 4).await, second);
    assert_eq!(
        receive(&mut ahead, 4, 3).await,
        second[1..],
        "a subscription from past the end"
    );
    quiet(&mut middle).await;
    quiet(&mut early).await;

    // Other sessions' events are not delivered.
    append_ok(&store, &SessionId::new(), &batch(2), 0).await;
    quiet(&mut early).await;
    let mut done = subscribe(&store, &session, 7).await;
    quiet(&mut done).await;
}

/// Subscribers that start at random moments while writers race on the session each receive
/// exactly the events from their seq to the end, in the stored order: nothing missed or repeated
/// across the catch-up/live boundary.
pub async fn subscribe_boundary_under_concurrent_writers<S: Store>(store: S) {
    const WRITERS: u64 = 3;
    const APPENDS: u64 = 25;
    let store = Arc::new(store);
    let session = SessionId::new();
    let total = WRITERS * APPENDS * 2;

    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let store = Arc::clone(&store);
        let session = session.clone();
        writers.push(tokio::spawn(async move {
            let mut seq = 0;
            for n in 0..APPENDS {
                let events = vec![
                    Envelope::new("test:appended", json!({ "writer": writer, "n": n }), None),
                    Envelope::new("test:appended", json!({ "writer": writer, "n": n }), None),
                ];
                let who = format!("writer {writer}");
                seq = append_at_the_end(&*store, &session, &events, seq, &who).await;
                tokio::task::yield_now().await;
            }
        }));
    }

    let mut subscribers = Vec::new();
    for k in 0..6u64 {
        let store = Arc::clone(&store);
        let session = session.clone();
        subscribers.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(k * 7)).await;
            // Start from 0, from the current length, or from the middle of what is there.
            let len = match store.session(&session).await {
                Ok(info) => info.map_or(0, |info| info.count),
                Err(err) => panic!("metadata failed: {err}"),
            };
            let from = match k % 3 {
                0 => 0,
                1 => len,
                _ => len / 2,
            };
            let mut subscription = subscribe(&*store, &session, from).await;
            let events = receive(&mut subscription, from, total - from).await;
            quiet(&mut subscription).await;
            (from, events)
        }));
    }
    for writer in writers {
        writer.await.expect("a writer task panicked");
    }
    let stored = all(&*store, &session).await;
    assert_eq!(stored.len() as u64, total, "events stored");
    for subscriber in subscribers {
        let (from, events) = subscriber.await.expect("a subscriber task panicked");
        let at = usize::try_from(from).expect("seq fits in usize");
        assert_eq!(
            ids(&events),
            ids(&stored[at..]),
            "subscriber from seq {from}"
        );
    }
}
