//! Checks of reads: streamed ranges across pages and at the edges, unknown sessions, session
//! metadata and the listing's order.

use openharness_core::{
    Envelope, SessionId, Store,
    adapter::{EVENT_PAGE, Recorded},
};
use serde_json::json;

use super::helpers::*;

/// Every event `stream_events` yields for `range`, panicking on an error.
pub(super) async fn streamed<S: Store>(
    store: &S,
    session: &SessionId,
    range: std::ops::Range<u64>,
) -> Vec<Recorded> {
    let mut stream = store.stream_events(session, range.clone());
    let mut got = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(recorded) => got.push(recorded),
            Err(err) => panic!(
                "{}: streaming seqs {range:?} of session {session} failed after {} events: {err}",
                store.describe(),
                got.len()
            ),
        }
    }
    got
}

/// Streams `range` and checks it against `events(range)`: the same events, each with its seq,
/// counting up from the range's start.
pub(super) async fn assert_streams_like_reads<S: Store>(
    store: &S,
    session: &SessionId,
    range: std::ops::Range<u64>,
) {
    let got = streamed(store, session, range.clone()).await;
    let expected = read(store, session, range.clone()).await;
    let seqs: Vec<u64> = got.iter().map(|recorded| recorded.seq).collect();
    let expected_seqs: Vec<u64> = (range.start..).take(expected.len()).collect();
    assert_eq!(
        seqs,
        expected_seqs,
        "seqs streamed for {range:?} of a session of {} events",
        all(store, session).await.len()
    );
    let events: Vec<Envelope> = got.into_iter().map(|recorded| recorded.event).collect();
    assert!(
        events == expected,
        "the events streamed for {range:?} differ from `events` for the same range"
    );
}

/// `stream_events` yields what `events` returns for the same range, with seqs, on ranges that
/// start, end and cross at page boundaries of the default implementation ([`EVENT_PAGE`]).
pub async fn streamed_ranges_cross_pages<S: Store>(store: S) {
    let page = EVENT_PAGE as u64;
    let session = SessionId::new();
    let len = 2 * page + 3;
    append_ok(&store, &session, &batch(len), 0).await;

    let whole = streamed(&store, &session, 0..u64::MAX).await;
    assert_eq!(
        whole.len() as u64,
        len,
        "events streamed from a whole session"
    );
    assert!(
        whole.iter().map(|r| r.event.clone()).collect::<Vec<_>>() == all(&store, &session).await,
        "a whole session streamed differs from `all_events`"
    );
    for range in [
        0..u64::MAX,
        0..len,
        0..page,
        0..page + 1,
        1..page,
        page - 1..page + 1,
        page..2 * page,
        page - 1..2 * page + 1,
        5..len - 5,
        2 * page..len,
        2 * page..u64::MAX,
        len - 1..u64::MAX,
        3..4,
    ] {
        assert_streams_like_reads(&store, &session, range).await;
    }
}

/// `stream_events` of an unknown session, an empty or inverted range, or a range past the end
/// yields nothing; a session exactly one or two pages long streams whole.
pub async fn streamed_edges_are_empty_or_clamped<S: Store>(store: S) {
    let page = EVENT_PAGE as u64;
    let unknown = SessionId::new();
    assert!(
        streamed(&store, &unknown, 0..u64::MAX).await.is_empty(),
        "an unknown session streamed events"
    );
    assert!(
        info(&store, &unknown).await.is_none(),
        "streaming created a session"
    );

    let session = SessionId::new();
    append_ok(&store, &session, &batch(page), 0).await;
    #[allow(clippy::reversed_empty_ranges)]
    let inverted = 9..2;
    for (range, what) in [
        (4..4, "an empty range"),
        (inverted, "an inverted range"),
        (page..page + 10, "a range starting at the end"),
        (page + 1..u64::MAX, "a range past the end"),
        (u64::MAX - 1..u64::MAX, "a range at the top of u64"),
    ] {
        assert!(
            streamed(&store, &session, range.clone()).await.is_empty(),
            "{what} ({range:?}) streamed events"
        );
    }
    assert_streams_like_reads(&store, &session, 0..u64::MAX).await;
    assert_streams_like_reads(&store, &session, page - 2..page + 2).await;

    // Exactly two pages: the stream ends at the boundary without inventing events.
    append_ok(&store, &session, &batch(page), page).await;
    assert_streams_like_reads(&store, &session, 0..u64::MAX).await;
    assert_streams_like_reads(&store, &session, page..2 * page).await;
    assert_streams_like_reads(&store, &session, 2 * page..u64::MAX).await;

    // A cleared session streams nothing.
    if let Err(err) = store.clear(&session).await {
        panic!(
            "{}: clearing session {session} failed: {err}",
            store.describe()
        );
    }
    assert!(
        streamed(&store, &session, 0..u64::MAX).await.is_empty(),
        "a cleared session streamed events"
    );
}

/// An unknown session has no events and no metadata, and clearing it is not an error.
pub async fn unknown_session_is_empty<S: Store>(store: S) {
    let known = SessionId::new();
    append_ok(&store, &known, &batch(2), 0).await;
    let unknown = SessionId::new();
    assert!(all(&store, &unknown).await.is_empty());
    assert!(read(&store, &unknown, 0..10).await.is_empty());
    assert!(info(&store, &unknown).await.is_none());
    if let Err(err) = store.clear(&unknown).await {
        panic!("clearing an unknown session failed: {err}");
    }
    let listed: Vec<SessionId> = list(&store).await.into_iter().map(|i| i.id).collect();
    assert_eq!(
        listed,
        vec![known],
        "sessions after clearing an unknown one"
    );
}

/// Metadata comes from the events: created and last event from their timestamps, the count,
/// the workflow from the first `workflow:started`, the parent from `session:forked`.
pub async fn session_metadata<S: Store>(store: S) {
    let parent = SessionId::new();
    let session = SessionId::new();
    let first = vec![
        event_at(
            "session:forked",
            json!({ "parent": parent, "position": 3 }),
            "2024-05-01T10:00:00Z",
        ),
        event_at(
            "workflow:started",
            json!({ "workflow": "planner" }),
            "2024-05-01T10:00:01.5Z",
        ),
    ];
    append_ok(&store, &session, &first, 0).await;
    let meta = info(&store, &session)
        .await
        .expect("metadata after the first append");
    assert_eq!(meta.id, session);
    assert_eq!(meta.count, 2);
    assert_eq!(meta.workflow.as_deref(), Some("planner"));
    assert_eq!(meta.parent.as_ref(), Some(&parent));
    assert_eq!(meta.created, first[0].timestamp);
    assert_eq!(meta.last_event, first[1].timestamp);

    let later = vec![
        event_at(
            "workflow:started",
            json!({ "workflow": "other" }),
            "2024-05-01T10:00:02Z",
        ),
        event_at(
            "user:input",
            json!({ "text": "go" }),
            "2024-05-01T10:00:03.123456789Z",
        ),
    ];
    append_ok(&store, &session, &later, 2).await;
    let meta = info(&store, &session)
        .await
        .expect("metadata after the second append");
    assert_eq!(meta.count, 4);
    assert_eq!(
        meta.workflow.as_deref(),
        Some("planner"),
        "the first workflow:started wins"
    );
    assert_eq!(meta.parent.as_ref(), Some(&parent));
    assert_eq!(meta.created, first[0].timestamp, "created must not move");
    assert_eq!(
        meta.last_event, later[1].timestamp,
        "last event (nanosecond precision)"
    );

    let plain = SessionId::new();
    append_ok(&store, &plain, &batch(1), 0).await;
    let meta = info(&store, &plain)
        .await
        .expect("metadata of a plain session");
    assert_eq!((meta.workflow, meta.parent, meta.count), (None, None, 1));

    let listed = list(&store).await;
    let listed = listed
        .iter()
        .find(|i| i.id == session)
        .expect("the session is listed");
    assert_eq!(
        Some(listed),
        info(&store, &session).await.as_ref(),
        "listing and lookup agree"
    );
}

/// `sessions()` lists every session oldest first, by its first event's timestamp.
pub async fn sessions_oldest_first<S: Store>(store: S) {
    let (a, b, c) = (SessionId::new(), SessionId::new(), SessionId::new());
    let at = |t: &str| vec![event_at("test:appended", json!({}), t)];
    // Written in another order than they were created.
    append_ok(&store, &b, &at("2024-01-02T00:00:00Z"), 0).await;
    append_ok(&store, &c, &at("2024-01-03T00:00:00Z"), 0).await;
    append_ok(&store, &a, &at("2024-01-01T00:00:00Z"), 0).await;
    append_ok(&store, &b, &at("2024-01-04T00:00:00Z"), 1).await;

    let listed = list(&store).await;
    let order: Vec<&SessionId> = listed.iter().map(|i| &i.id).collect();
    assert_eq!(order, vec![&a, &b, &c], "sessions oldest first");
    let counts: Vec<u64> = listed.iter().map(|i| i.count).collect();
    assert_eq!(counts, vec![1, 2, 1], "counts in the listing");
}

/// The names [`fold_reads_keep_the_folded_payloads`] folds.
fn folded(name: &str) -> bool {
    name == "test:folded"
}

/// `events_for_fold` and `stream_events_for_fold` give the same events as `events` (ids,
/// names, timestamps, causes, in order, across pages): the payloads of the names the fold
/// takes whole, the others' whole or `null`.
pub async fn fold_reads_keep_the_folded_payloads<S: Store>(store: S) {
    let session = SessionId::new();
    let len = EVENT_PAGE as u64 + 5;
    let events: Vec<Envelope> = (0..len)
        .map(|n| {
            event(
                if n % 3 == 0 {
                    "test:folded"
                } else {
                    "test:other"
                },
                n,
            )
        })
        .collect();
    append_ok(&store, &session, &events, 0).await;
    let whole = read(&store, &session, 0..u64::MAX).await;
    let check = |got: &[Envelope], range: std::ops::Range<u64>, how: &str| {
        let expected = whole.get(range.start as usize..).unwrap_or_default();
        let expected = &expected[..expected.len().min((range.end - range.start) as usize)];
        assert_eq!(
            got.len(),
            expected.len(),
            "{}: {how} of {range:?} gave {} events, `events` {}",
            store.describe(),
            got.len(),
            expected.len()
        );
        for (got, expected) in got.iter().zip(expected) {
            let same = got.id == expected.id
                && got.name == expected.name
                && got.timestamp == expected.timestamp
                && got.caused_by == expected.caused_by;
            let payload =
                got.payload == expected.payload || (!folded(&got.name) && got.payload.is_null());
            assert!(
                same && payload,
                "{}: {how} of {range:?} gave {got:?} where `events` gave {expected:?}",
                store.describe()
            );
        }
    };
    for range in [0..u64::MAX, 1..len - 1, EVENT_PAGE as u64 - 1..len, 3..4] {
        let read = match store.events_for_fold(&session, range.clone(), folded).await {
            Ok(events) => events,
            Err(err) => panic!("{}: events_for_fold failed: {err}", store.describe()),
        };
        check(&read, range.clone(), "events_for_fold");
        let mut stream = store.stream_events_for_fold(&session, range.clone(), folded);
        let mut streamed = Vec::new();
        while let Some(item) = stream.next().await {
            match item {
                Ok(recorded) => {
                    assert_eq!(
                        recorded.seq,
                        range.start + streamed.len() as u64,
                        "{}: stream_events_for_fold's seqs",
                        store.describe()
                    );
                    streamed.push(recorded.event);
                }
                Err(err) => panic!("{}: stream_events_for_fold failed: {err}", store.describe()),
            }
        }
        check(&streamed, range, "stream_events_for_fold");
    }
}
