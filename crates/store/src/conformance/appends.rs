//! Checks of `append`: reading back, conflicts, retries, refused and empty batches, clamped
//! ranges.

use openharness_core::{Envelope, SessionId, Store};

use super::helpers::*;

/// Appended events read back unchanged (id, name, payload, timestamp, cause, state hash) and
/// in order, and `append` returns the new length; a read for a fold that skips every payload
/// still gives each event's state hash.
pub async fn append_and_read_back<S: Store>(store: S) {
    let session = SessionId::new();
    let mut first = batch(3);
    first[1].caused_by = Some(first[0].id);
    first[2].state_hash = Some(openharness_core::adapter::json_hash(&serde_json::json!([
        2
    ])));
    assert_eq!(
        append_ok(&store, &session, &first, 0).await,
        3,
        "length after the first append"
    );
    let second = vec![event("test:second", 3), event("test:second", 4)];
    assert_eq!(
        append_ok(&store, &session, &second, 3).await,
        5,
        "length after the second append"
    );
    let single = vec![event("test:single", 5)];
    assert_eq!(
        append_ok(&store, &session, &single, 5).await,
        6,
        "length after a single event"
    );

    let expected: Vec<Envelope> = first.into_iter().chain(second).chain(single).collect();
    assert_eq!(all(&store, &session).await, expected, "events read back");
    let for_fold = store
        .events_for_fold(&session, 0..6, |_| false)
        .await
        .expect("events for a fold");
    let hashes: Vec<_> = for_fold.iter().map(|e| e.state_hash.clone()).collect();
    let recorded: Vec<_> = expected.iter().map(|e| e.state_hash.clone()).collect();
    assert_eq!(hashes, recorded, "state hashes read for a fold");
}

/// An append at the wrong seq fails with a conflict carrying the session's actual length, and
/// changes nothing.
pub async fn conflict_reports_actual_seq<S: Store>(store: S) {
    let session = SessionId::new();
    let stored = batch(2);
    append_ok(&store, &session, &stored, 0).await;

    let late = store.append(&session, &batch(1), 0).await;
    assert_conflict(late, &session, 0, 2, "append behind the session");
    let early = store.append(&session, &batch(1), 5).await;
    assert_conflict(early, &session, 5, 2, "append ahead of the session");
    let unknown = SessionId::new();
    let first = store.append(&unknown, &batch(1), 1).await;
    assert_conflict(first, &unknown, 1, 0, "first append at seq 1");

    assert_eq!(
        all(&store, &session).await,
        stored,
        "a conflict changed the session"
    );
    assert!(
        all(&store, &unknown).await.is_empty(),
        "a conflict created a session"
    );
    assert!(
        info(&store, &unknown).await.is_none(),
        "a conflict created metadata"
    );
}

/// Retrying a stored batch at the same seq (after a lost acknowledgement) stores it once and
/// succeeds with the length the original append returned.
pub async fn idempotent_retry_stores_once<S: Store>(store: S) {
    let session = SessionId::new();
    let pair = batch(2);
    assert_eq!(append_ok(&store, &session, &pair, 0).await, 2);
    assert_eq!(
        append_ok(&store, &session, &pair, 0).await,
        2,
        "retry of a batch"
    );

    let single = batch(1);
    assert_eq!(append_ok(&store, &session, &single, 2).await, 3);
    assert_eq!(
        append_ok(&store, &session, &single, 2).await,
        3,
        "retry of one event"
    );
    assert_eq!(
        append_ok(&store, &session, &pair, 0).await,
        2,
        "a late retry returns the original append's length"
    );

    let expected: Vec<Envelope> = pair.iter().chain(&single).cloned().collect();
    assert_eq!(
        all(&store, &session).await,
        expected,
        "retries duplicated events"
    );
    let meta = info(&store, &session)
        .await
        .expect("metadata of a stored session");
    assert_eq!(meta.count, 3, "retries changed the count");
}

/// Rejected appends write nothing: a conflicting batch, a batch repeating an id, a batch
/// holding an id stored elsewhere in the session, and a batch that only starts like a retry.
pub async fn rejected_batches_leave_nothing<S: Store>(store: S) {
    let session = SessionId::new();
    let first = batch(1);
    append_ok(&store, &session, &first, 0).await;

    let conflicting = store.append(&session, &batch(3), 0).await;
    assert_conflict(conflicting, &session, 0, 1, "a conflicting batch");

    let x = event("test:x", 0);
    let repeated = store
        .append(&session, &[x.clone(), event("test:y", 1), x.clone()], 1)
        .await;
    assert_invalid(repeated, "a batch repeating an id");

    let reused = store
        .append(&session, &[event("test:y", 1), first[0].clone()], 1)
        .await;
    assert_invalid(reused, "a batch holding an id stored at another seq");

    let partial_retry = store
        .append(&session, &[first[0].clone(), event("test:z", 2)], 0)
        .await;
    assert_invalid(partial_retry, "a batch that only starts like a retry");

    assert_eq!(
        all(&store, &session).await,
        first,
        "a rejected batch left events behind"
    );
    assert_eq!(
        info(&store, &session).await.map(|i| i.count),
        Some(1),
        "count after rejections"
    );
    // None of the rejected ids was stored: `x` can still be appended.
    assert_eq!(
        append_ok(&store, &session, &[x], 1).await,
        2,
        "append after rejections"
    );
}

/// An empty batch writes nothing, creates no session and returns the current length whatever
/// seq it names.
pub async fn empty_batch_writes_nothing<S: Store>(store: S) {
    let session = SessionId::new();
    assert_eq!(append_ok(&store, &session, &[], 0).await, 0);
    assert_eq!(
        append_ok(&store, &session, &[], 4).await,
        0,
        "empty batch at the wrong seq"
    );
    assert!(
        info(&store, &session).await.is_none(),
        "an empty batch created a session"
    );
    assert!(
        list(&store).await.is_empty(),
        "an empty batch created a listed session"
    );

    append_ok(&store, &session, &batch(2), 0).await;
    assert_eq!(append_ok(&store, &session, &[], 7).await, 2);
    assert_eq!(all(&store, &session).await.len(), 2);
}

/// `events` returns exactly the seqs in the range, clamped to the session.
pub async fn ranges_are_clamped<S: Store>(store: S) {
    let session = SessionId::new();
    let stored = batch(5);
    append_ok(&store, &session, &stored, 0).await;

    let cases: [(std::ops::Range<u64>, &[Envelope]); 9] = [
        (0..5, &stored[..]),
        (1..3, &stored[1..3]),
        (3..100, &stored[3..]),
        (0..u64::MAX, &stored[..]),
        (4..5, &stored[4..]),
        (5..9, &[]),
        (7..9, &[]),
        (2..2, &[]),
        (u64::MAX - 1..u64::MAX, &[]),
    ];
    for (range, expected) in cases {
        assert_eq!(
            read(&store, &session, range.clone()).await,
            expected,
            "events in {range:?}"
        );
    }
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = 4..2;
    assert!(
        read(&store, &session, inverted).await.is_empty(),
        "an inverted range"
    );
}
