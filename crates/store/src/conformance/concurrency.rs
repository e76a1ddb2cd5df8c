//! Checks under concurrency: a clear racing appends, and writers racing for the same seq.

use std::collections::HashSet;
use std::sync::Arc;

use openharness_core::{Envelope, EventId, SessionId, Store, StoreError, adapter::Snapshot};
use serde_json::json;

use super::helpers::*;

/// Clears racing appends and snapshots of the same session never leave half a session:
/// afterwards its events are exactly seqs `0..len`, its metadata counts `len`, and no snapshot
/// lies beyond `len`. (A clear must not let an append or a snapshot that read the old tail
/// add a row after the tail is gone.)
pub async fn clear_racing_appends_leaves_whole_sessions<S: Store>(store: S) {
    const ROUNDS: u64 = 8;
    const APPENDS: u64 = 60;
    let store = Arc::new(store);
    for round in 0..ROUNDS {
        let session = SessionId::new();
        let writer = {
            let (store, session) = (Arc::clone(&store), session.clone());
            tokio::spawn(async move {
                let mut seq = 0;
                for n in 0..APPENDS {
                    let size = 1 + n % 3;
                    let events: Vec<Envelope> = (0..size)
                        .map(|i| Envelope::new("test:raced", json!({ "n": n, "i": i }), None))
                        .collect();
                    seq = append_at_the_end(&*store, &session, &events, seq, "the writer").await;
                    // A snapshot at the length just reached; a clear may have made it too long.
                    let snapshot = Snapshot::new(seq, json!({ "n": n }));
                    match store.snapshot(&session, &snapshot).await {
                        Ok(()) | Err(StoreError::Invalid(_)) => {}
                        Err(err) => panic!("snapshot {n} failed: {err}"),
                    }
                }
            })
        };
        let mut clears = 0;
        while !writer.is_finished() {
            store
                .clear(&session)
                .await
                .unwrap_or_else(|err| panic!("clear failed: {err}"));
            clears += 1;
            tokio::task::yield_now().await;
        }
        if let Err(err) = writer.await {
            std::panic::resume_unwind(err.into_panic());
        }
        // A snapshot saved by an append's writer that raced a clear must not outlive it.
        if let Some(snapshot) = store
            .latest_snapshot(&session, u64::MAX)
            .await
            .unwrap_or_else(|err| panic!("snapshot read failed: {err}"))
        {
            let len = store
                .session(&session)
                .await
                .unwrap_or_else(|err| panic!("metadata read failed: {err}"))
                .map_or(0, |info| info.count);
            assert!(
                snapshot.position <= len,
                "round {round}: a snapshot at {} outlived a clear: the session has {len} events",
                snapshot.position
            );
        }
        let len = store
            .events(&session, 0..u64::MAX)
            .await
            .unwrap_or_else(|err| panic!("read failed: {err}"))
            .len() as u64;
        // A stray event past a gap shows as a length (from the highest seq) above the events
        // read, or as events without metadata.
        let count = store
            .session(&session)
            .await
            .unwrap_or_else(|err| panic!("metadata read failed: {err}"))
            .map_or(0, |info| info.count);
        assert_eq!(
            count, len,
            "round {round}, after {clears} clears: the metadata counts {count} events, the \
             session has {len}"
        );
    }
}

/// Many writers race on one session with optimistic concurrency: each seq is won by exactly one
/// append, and the log ends with every event once, without gaps, each writer's in its order.
pub async fn concurrent_writers_race<S: Store>(store: S) {
    const WRITERS: u64 = 8;
    const APPENDS: u64 = 12;
    let store = Arc::new(store);
    let session = SessionId::new();
    let mut tasks = Vec::new();
    for writer in 0..WRITERS {
        let store = Arc::clone(&store);
        let session = session.clone();
        tasks.push(tokio::spawn(async move {
            let mut seq = 0;
            let mut won = Vec::new();
            for n in 0..APPENDS {
                // Every other append is a two-event batch.
                let size = 1 + n % 2;
                let events: Vec<Envelope> = (0..size)
                    .map(|i| {
                        Envelope::new(
                            "test:raced",
                            json!({ "writer": writer, "n": n, "i": i }),
                            None,
                        )
                    })
                    .collect();
                loop {
                    match store.append(&session, &events, seq).await {
                        Ok(len) => {
                            assert_eq!(len, seq + size, "append returned a wrong length");
                            won.push((seq, ids(&events)));
                            seq = len;
                            break;
                        }
                        Err(StoreError::Conflict { actual, .. }) => {
                            assert!(
                                actual > seq,
                                "a conflict reported seq {actual}, not past {seq}"
                            );
                            seq = actual;
                        }
                        Err(err) => panic!("writer {writer}: append failed: {err}"),
                    }
                    tokio::task::yield_now().await;
                }
            }
            won
        }));
    }
    let mut won: Vec<(u64, Vec<EventId>)> = Vec::new();
    for task in tasks {
        won.extend(task.await.expect("a writer task panicked"));
    }

    let stored = all(&store, &session).await;
    let per_writer = APPENDS / 2 + APPENDS; // APPENDS/2 single events and APPENDS/2 pairs
    assert_eq!(stored.len() as u64, WRITERS * per_writer, "events stored");
    let unique: HashSet<EventId> = stored.iter().map(|e| e.id).collect();
    assert_eq!(unique.len(), stored.len(), "an event was stored twice");
    won.sort_by_key(|(seq, _)| *seq);
    let mut next = 0;
    for (seq, batch_ids) in &won {
        assert_eq!(*seq, next, "two appends won seq {seq}, or a gap before it");
        let at = usize::try_from(*seq).expect("seq fits in usize");
        assert_eq!(
            ids(&stored[at..at + batch_ids.len()]),
            *batch_ids,
            "batch at seq {seq}"
        );
        next += batch_ids.len() as u64;
    }
    for writer in 0..WRITERS {
        let order: Vec<u64> = stored
            .iter()
            .filter(|e| e.payload["writer"] == writer && e.payload["i"] == 0)
            .filter_map(|e| e.payload["n"].as_u64())
            .collect();
        assert_eq!(
            order,
            (0..APPENDS).collect::<Vec<_>>(),
            "writer {writer}'s events out of order"
        );
    }
    assert_eq!(
        info(&store, &session).await.map(|i| i.count),
        Some(stored.len() as u64)
    );
}
