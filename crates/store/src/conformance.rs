//! The conformance suite: one set of checks every [`Store`] backend must pass.
//!
//! Each check is a public `async fn` taking a fresh, empty store and panicking (with a message
//! saying what broke) when the backend breaks the contract. [`store_conformance!`](crate::store_conformance) turns them
//! into one `#[test]` per check, so a backend's test file is one line:
//!
//! ```
//! mod memory {
//!     openharness_store::store_conformance!(openharness_store::MemoryStore::new());
//! }
//! ```
//!
//! The setup expression is evaluated inside the test's runtime (so it may `.await`) once per
//! check. When the store needs something kept alive, such as a temporary directory, return a
//! [`Guarded`]:
//!
//! ```
//! mod redb {
//!     use openharness_store::{RedbStore, conformance::Guarded};
//!     openharness_store::store_conformance!({
//!         let dir = tempfile::tempdir().expect("a temporary directory");
//!         let store = RedbStore::open(dir.path().join("store.redb")).expect("a new store");
//!         Guarded { store, guard: dir }
//!     });
//! }
//! ```
//!
//! Checks: [`append_and_read_back`], [`conflict_reports_actual_seq`],
//! [`idempotent_retry_stores_once`], [`rejected_batches_leave_nothing`],
//! [`empty_batch_writes_nothing`], [`ranges_are_clamped`], [`streamed_ranges_cross_pages`],
//! [`streamed_edges_are_empty_or_clamped`], [`unknown_session_is_empty`],
//! [`session_metadata`], [`sessions_oldest_first`], [`clear_removes_everything`],
//! [`sessions_are_independent`], [`unfinished_marks_are_kept_apart`],
//! [`concurrent_writers_race`], [`clear_racing_appends_leaves_whole_sessions`],
//! [`snapshots_nearest_at_or_before`], [`subscribe_catches_up_then_tails`],
//! [`subscribe_boundary_under_concurrent_writers`] and [`arbitrary_operations_match_model`]
//! (a proptest property: [`MODEL_CASES`] random sequences of [`Op`]s, shrunk to the shortest
//! failing one, checked against the reference model by [`check_against_model`]; property tests
//! can drive that with their own sequences, for example from [`arbitrary_ops`]).
//! Durability across reopening is backend-specific and is not part of the suite.
//!
//! This module and its macros need the `conformance` feature (it brings in proptest); a
//! backend's crate enables it for its tests only:
//!
//! ```toml
//! [dev-dependencies]
//! openharness-store = { version = "0.1", features = ["conformance"] }
//! ```

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use std::time::Duration;

use openharness_core::{
    EVENT_PAGE, Envelope, EventId, Recorded, SessionId, SessionInfo, Snapshot, Store, StoreError,
    Subscription,
};
use proptest::strategy::{Just, Strategy, ValueTree};
use proptest::test_runner::{Config, RngSeed, TestRunner};
use serde_json::json;

/// What a conformance test's setup gives: a fresh store, and anything it needs kept alive.
///
/// Implemented by every [`Store`] (nothing to keep) and by [`Guarded`].
pub trait Fixture {
    /// The store under test.
    type Store: Store;
    /// Splits the fixture into the store and a guard dropped after the check.
    fn split(self) -> (Self::Store, Box<dyn Any + Send>);
}

impl<S: Store> Fixture for S {
    type Store = S;
    fn split(self) -> (S, Box<dyn Any + Send>) {
        (self, Box::new(()))
    }
}

/// A store with a guard kept alive until the check ends (a temporary directory, a container).
#[derive(Debug)]
pub struct Guarded<S, G> {
    /// The store under test.
    pub store: S,
    /// Dropped after the check.
    pub guard: G,
}

impl<S: Store, G: Send + 'static> Fixture for Guarded<S, G> {
    type Store = S;
    fn split(self) -> (S, Box<dyn Any + Send>) {
        (self.store, Box::new(self.guard))
    }
}

/// Runs one check on a multi-threaded runtime (two workers, so concurrent writers really race):
/// awaits `setup`, runs `check` on its store, then drops the guard.
///
/// This is what [`store_conformance!`](crate::store_conformance) expands to; call it directly to run one check.
pub fn run<F, C, Fut>(setup: impl Future<Output = F>, check: C)
where
    F: Fixture,
    C: FnOnce(F::Store) -> Fut,
    Fut: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the conformance suite needs a tokio runtime");
    runtime.block_on(async {
        let (store, guard) = setup.await.split();
        check(store).await;
        drop(guard);
    });
}

/// Runs every check in turn, each on a fresh fixture from `setup`, inside the caller's runtime.
///
/// Prefer [`store_conformance!`](crate::store_conformance), which gives each check its own test name; this is for
/// callers that need a single test (for example, one shared external database).
pub async fn run_all<F, Fut>(mut setup: impl FnMut() -> Fut)
where
    F: Fixture,
    Fut: Future<Output = F>,
{
    macro_rules! each {
        (; $($check:ident),* $(,)?) => {$(
            let (store, guard) = setup().await.split();
            $check(store).await;
            drop(guard);
        )*};
    }
    crate::__for_each_conformance_check!([each]);
}

/// The one list of conformance checks: calls `callback! { args ; check, check, ... }`.
///
/// [`run_all`], [`store_conformance!`](crate::store_conformance) and the PostgreSQL tests all
/// take their checks from here, so a new check reaches every backend.
#[doc(hidden)]
#[macro_export]
macro_rules! __for_each_conformance_check {
    ([$($callback:tt)+] $($args:tt)*) => {
        $($callback)+! { $($args)* ;
            append_and_read_back,
            conflict_reports_actual_seq,
            idempotent_retry_stores_once,
            rejected_batches_leave_nothing,
            empty_batch_writes_nothing,
            ranges_are_clamped,
            streamed_ranges_cross_pages,
            streamed_edges_are_empty_or_clamped,
            unknown_session_is_empty,
            session_metadata,
            sessions_oldest_first,
            clear_removes_everything,
            sessions_are_independent,
            unfinished_marks_are_kept_apart,
            concurrent_writers_race,
            clear_racing_appends_leaves_whole_sessions,
            snapshots_nearest_at_or_before,
            subscribe_catches_up_then_tails,
            subscribe_boundary_under_concurrent_writers,
            arbitrary_operations_match_model,
        }
    };
}

/// Generates one `#[test]` per conformance check for the store made by the setup expression.
///
/// The expression is evaluated once per check, inside an async block on the test's runtime
/// (it may `.await`), and gives a [`Store`] or a [`Guarded`] store. Invoke it inside a module,
/// which names the tests (`memory::append_and_read_back`, ...). See [`conformance`](self) for
/// examples. The calling crate needs no tokio dependency of its own.
#[macro_export]
macro_rules! store_conformance {
    ($setup:expr $(,)?) => {
        $crate::__for_each_conformance_check!([$crate::store_conformance] @checks $setup);
    };
    (@checks $setup:expr; $($check:ident),* $(,)?) => {$(
        #[test]
        fn $check() {
            $crate::conformance::run(async { $setup }, $crate::conformance::$check);
        }
    )*};
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// A test event named `name` with a small payload.
fn event(name: &'static str, n: u64) -> Envelope {
    Envelope::new(
        name,
        json!({ "n": n, "text": "héllo ✓", "nested": { "list": [1, 2, 3] } }),
        None,
    )
}

/// `count` test events.
fn batch(count: u64) -> Vec<Envelope> {
    (0..count).map(|n| event("test:appended", n)).collect()
}

/// An event with a fixed timestamp, given as RFC 3339.
fn event_at(name: &'static str, payload: serde_json::Value, timestamp: &str) -> Envelope {
    let mut event = Envelope::new(name, payload, None);
    event.timestamp = timestamp.parse().expect("a valid RFC 3339 timestamp");
    event
}

async fn append_ok<S: Store>(store: &S, session: &SessionId, events: &[Envelope], at: u64) -> u64 {
    match store.append(session, events, at).await {
        Ok(len) => len,
        Err(err) => panic!(
            "{}: appending {} events to session {session} at seq {at} failed: {err}",
            store.describe(),
            events.len()
        ),
    }
}

async fn all<S: Store>(store: &S, session: &SessionId) -> Vec<Envelope> {
    match store.all_events(session).await {
        Ok(events) => events,
        Err(err) => panic!(
            "{}: reading session {session} failed: {err}",
            store.describe()
        ),
    }
}

async fn read<S: Store>(
    store: &S,
    session: &SessionId,
    range: std::ops::Range<u64>,
) -> Vec<Envelope> {
    match store.events(session, range.clone()).await {
        Ok(events) => events,
        Err(err) => panic!(
            "{}: reading seqs {range:?} of session {session} failed: {err}",
            store.describe()
        ),
    }
}

async fn info<S: Store>(store: &S, session: &SessionId) -> Option<SessionInfo> {
    match store.session(session).await {
        Ok(info) => info,
        Err(err) => panic!(
            "{}: reading session {session}'s metadata failed: {err}",
            store.describe()
        ),
    }
}

async fn list<S: Store>(store: &S) -> Vec<SessionInfo> {
    match store.sessions().await {
        Ok(infos) => infos,
        Err(err) => panic!("{}: listing sessions failed: {err}", store.describe()),
    }
}

fn ids(events: &[Envelope]) -> Vec<EventId> {
    events.iter().map(|event| event.id).collect()
}

fn assert_conflict(
    result: Result<u64, StoreError>,
    session: &SessionId,
    expected: u64,
    actual: u64,
    what: &str,
) {
    match result {
        Err(StoreError::Conflict {
            session: s,
            expected: e,
            actual: a,
        }) if &s == session && e == expected && a == actual => {}
        other => panic!(
            "{what}: expected Conflict {{ session: {session}, expected: {expected}, actual: {actual} }}, got {other:?}"
        ),
    }
}

fn assert_invalid(result: Result<u64, StoreError>, what: &str) {
    match result {
        Err(StoreError::Invalid(_)) => {}
        other => panic!("{what}: expected StoreError::Invalid, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// Appended events read back unchanged (id, name, payload, timestamp, cause) and in order, and
/// `append` returns the new length.
pub async fn append_and_read_back<S: Store>(store: S) {
    let session = SessionId::new();
    let mut first = batch(3);
    first[1].caused_by = Some(first[0].id);
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

/// Every event `stream_events` yields for `range`, panicking on an error.
async fn streamed<S: Store>(
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
async fn assert_streams_like_reads<S: Store>(
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

/// `clear` removes a session's events, metadata and id index, and nothing else; the session
/// can then start again at seq 0, even with the same events.
pub async fn clear_removes_everything<S: Store>(store: S) {
    let (gone, kept) = (SessionId::new(), SessionId::new());
    let events = batch(3);
    append_ok(&store, &gone, &events, 0).await;
    append_ok(&store, &kept, &batch(2), 0).await;

    if let Err(err) = store.clear(&gone).await {
        panic!("clearing a session failed: {err}");
    }
    assert!(all(&store, &gone).await.is_empty(), "events survived clear");
    assert!(
        info(&store, &gone).await.is_none(),
        "metadata survived clear"
    );
    let listed: Vec<SessionId> = list(&store).await.into_iter().map(|i| i.id).collect();
    assert_eq!(listed, vec![kept.clone()], "sessions after clear");
    assert_eq!(
        all(&store, &kept).await.len(),
        2,
        "clear touched another session"
    );

    let stale = store.append(&gone, &batch(1), 3).await;
    assert_conflict(stale, &gone, 3, 0, "append at the old length after clear");
    // Had the id index survived, this would look like a retry and store nothing.
    assert_eq!(
        append_ok(&store, &gone, &events, 0).await,
        3,
        "re-append after clear"
    );
    assert_eq!(
        all(&store, &gone).await,
        events,
        "events re-appended after clear"
    );
    assert_eq!(info(&store, &gone).await.map(|i| i.count), Some(3));
}

/// Sessions do not share seqs or ids: the same event may be stored in two sessions (as a fork
/// copies its parent's events), and a conflict in one leaves the other alone.
pub async fn sessions_are_independent<S: Store>(store: S) {
    let (one, two) = (SessionId::new(), SessionId::new());
    let shared = batch(2);
    append_ok(&store, &one, &shared, 0).await;
    assert_eq!(
        append_ok(&store, &two, &shared, 0).await,
        2,
        "the same events in a second session"
    );
    append_ok(&store, &one, &batch(1), 2).await;
    let conflict = store.append(&two, &batch(1), 3).await;
    assert_conflict(conflict, &two, 3, 2, "the second session's own length");
    assert_eq!(all(&store, &one).await.len(), 3);
    assert_eq!(all(&store, &two).await, shared);
}

/// Marks of unfinished sessions: set, replaced, listed in session id order, cleared; they
/// never change a session's events or metadata, and clearing a session leaves its mark (the
/// writer that set it clears it).
pub async fn unfinished_marks_are_kept_apart<S: Store>(store: S) {
    assert!(store.unfinished().await.expect("unfinished").is_empty());
    let (one, two) = (SessionId::new(), SessionId::new());
    let events = batch(2);
    append_ok(&store, &one, &events, 0).await;
    for (session, note) in [(&two, "importing: 0 of 9"), (&one, "importing: 1 of 9")] {
        store
            .mark_unfinished(session, Some(note))
            .await
            .expect("a mark is set");
    }
    store
        .mark_unfinished(&one, Some("importing: 2 of 9"))
        .await
        .expect("a mark is replaced");
    let mut expected = vec![
        (one.clone(), "importing: 2 of 9".to_owned()),
        (two.clone(), "importing: 0 of 9".to_owned()),
    ];
    expected.sort();
    assert_eq!(store.unfinished().await.expect("unfinished"), expected);
    assert_eq!(all(&store, &one).await, events, "a mark changes no event");
    assert_eq!(info(&store, &one).await.map(|i| i.count), Some(2));
    assert!(
        info(&store, &two).await.is_none(),
        "a mark makes no session"
    );

    store.clear(&one).await.expect("clear");
    assert_eq!(store.unfinished().await.expect("unfinished").len(), 2);
    for session in [&one, &two, &two] {
        store
            .mark_unfinished(session, None)
            .await
            .expect("a mark is cleared, even twice");
    }
    assert!(store.unfinished().await.expect("unfinished").is_empty());
}

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

/// Appends `events` at the end of `session`, whatever its length turns out to be (starting
/// from `seq` and following conflicts); the new length.
async fn append_at_the_end<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    events: &[Envelope],
    mut seq: u64,
    who: &str,
) -> u64 {
    loop {
        match store.append(session, events, seq).await {
            Ok(len) => return len,
            Err(StoreError::Conflict { actual, .. }) => seq = actual,
            Err(err) => panic!("{who}: append failed: {err}"),
        }
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

/// Snapshots: the nearest at or before a position is found, saving again at a position replaces
/// it, a position past the session's end is invalid, and clearing the session removes them.
pub async fn snapshots_nearest_at_or_before<S: Store>(store: S) {
    let session = SessionId::new();
    let other = SessionId::new();
    let latest = |at: u64| {
        let store = &store;
        let session = session.clone();
        async move {
            match store.latest_snapshot(&session, at).await {
                Ok(found) => found,
                Err(err) => panic!("latest snapshot at or before {at} failed: {err}"),
            }
        }
    };
    let save = |snapshot: Snapshot| {
        let store = &store;
        let session = session.clone();
        async move { store.snapshot(&session, &snapshot).await }
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
        if let Err(err) = save(Snapshot::new(position, state)).await {
            panic!("saving a snapshot at {position} failed: {err}");
        }
    }
    let beyond = save(Snapshot::new(7, json!({}))).await;
    assert!(
        matches!(beyond, Err(StoreError::Invalid(_))),
        "a snapshot past the end: {beyond:?}"
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
const STUCK: Duration = Duration::from_secs(20);

async fn subscribe<S: Store + ?Sized>(store: &S, session: &SessionId, from: u64) -> Subscription {
    match store.subscribe(session, from).await {
        Ok(subscription) => subscription,
        Err(err) => panic!("subscribing to session {session} from {from} failed: {err}"),
    }
}

/// Receives the next `count` events, checking they carry consecutive seqs from `from`.
async fn receive(subscription: &mut Subscription, from: u64, count: u64) -> Vec<Envelope> {
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
async fn quiet(subscription: &mut Subscription) {
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

/// How many random sequences [`arbitrary_operations_match_model`] checks on each run, unless
/// the `PROPTEST_CASES` environment variable says otherwise. Modest, since on a durable backend
/// every append is a commit; property tests of a fast backend can run more with
/// [`check_arbitrary_sequences`].
pub const MODEL_CASES: u32 = 24;

/// Random sequences of [`Op`]s (proptest, [`MODEL_CASES`] cases or `PROPTEST_CASES`) behave as
/// the reference model says (see [`check_against_model`]); a failing sequence is shrunk to a
/// shortest one before the check panics with it and the seed that reproduces it.
pub async fn arbitrary_operations_match_model<S: Store>(store: S) {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(MODEL_CASES);
    if let Err(failure) = check_arbitrary_sequences(&store, cases).await {
        panic!("{}: {failure}", store.describe());
    }
}

/// Runs `cases` random sequences from [`arbitrary_ops`] through [`check_against_model`] on
/// `store`, each on fresh session ids. The first divergence is shrunk (proptest's
/// simplify/complicate search) and returned with the shortest failing sequence found and the
/// `PROPTEST_RNG_SEED` that generates the same cases again. Other `PROPTEST_*` settings, such
/// as `PROPTEST_MAX_SHRINK_ITERS`, apply as in any proptest.
///
/// ```
/// use openharness_store::{MemoryStore, conformance};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// conformance::check_arbitrary_sequences(&store, 8).await.expect("the store obeys the model");
/// # });
/// ```
pub async fn check_arbitrary_sequences<S: Store>(store: &S, cases: u32) -> Result<(), String> {
    let mut config = Config {
        cases,
        ..Config::default()
    };
    let seed = match config.rng_seed {
        RngSeed::Fixed(seed) => seed,
        RngSeed::Random => random_seed(),
    };
    config.rng_seed = RngSeed::Fixed(seed);
    let max_shrink_iters = config.max_shrink_iters();
    let mut runner = TestRunner::new(config);
    let strategy = arbitrary_ops();
    for case in 1..=cases {
        let mut tree = strategy
            .new_tree(&mut runner)
            .map_err(|reason| format!("cannot generate a sequence: {reason}"))?;
        let Err(mismatch) = check_against_model(store, &tree.current()).await else {
            continue;
        };
        let mut smallest = (tree.current(), mismatch);
        let mut iterations = 0;
        if tree.simplify() {
            while iterations < max_shrink_iters {
                iterations += 1;
                let ops = tree.current();
                match check_against_model(store, &ops).await {
                    Err(mismatch) => {
                        smallest = (ops, mismatch);
                        if !tree.simplify() {
                            break;
                        }
                    }
                    Ok(()) => {
                        if !tree.complicate() {
                            break;
                        }
                    }
                }
            }
        }
        let (ops, mismatch) = smallest;
        return Err(format!(
            "random sequence {case} of {cases} diverged from the model \
             (PROPTEST_RNG_SEED={seed} generates it again; shrunk in {iterations} steps to \
             {} ops): {mismatch}\nops: {ops:#?}",
            ops.len()
        ));
    }
    Ok(())
}

/// A seed for a run that was given none.
fn random_seed() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

/// A proptest strategy for one [`Op`]: mostly appends (some at a wrong seq, some reusing a
/// stored id, some starting a workflow), then reads, retries, clears and listings.
///
/// ```
/// use openharness_store::conformance::arbitrary_op;
/// use proptest::strategy::{Strategy, ValueTree};
///
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let op = arbitrary_op().new_tree(&mut runner).expect("an op").current();
/// println!("{op:?}");
/// ```
pub fn arbitrary_op() -> impl Strategy<Value = Op> {
    let session = 0..MODEL_SESSIONS;
    proptest::prop_oneof![
        5 => (
            session.clone(),
            0u8..4,
            proptest::prop_oneof![8 => Just(0i8), 1 => Just(-1i8), 1 => Just(1i8)],
            proptest::option::weighted(0.15, proptest::arbitrary::any::<u8>()),
            proptest::option::weighted(0.2, 0u8..3),
        )
            .prop_map(|(session, events, skew, reuse, workflow)| Op::Append {
                session,
                events,
                skew,
                reuse,
                workflow,
            }),
        1 => session.clone().prop_map(|session| Op::Retry { session }),
        2 => (session.clone(), 0u8..12, 0u8..14)
            .prop_map(|(session, start, end)| Op::Read { session, start, end }),
        1 => session.prop_map(|session| Op::Clear { session }),
        1 => Just(Op::List),
    ]
}

/// A proptest strategy for sequences of 1 to 29 [`Op`]s (see [`arbitrary_op`]), as
/// [`arbitrary_operations_match_model`] draws them.
pub fn arbitrary_ops() -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(arbitrary_op(), 1..30)
}

// ---------------------------------------------------------------------------------------------
// The reference model

/// One step of a model-checked sequence. Sessions are numbered 0 to 2 (higher numbers wrap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Appends `events` new events (0 to 3) at the session's length plus `skew` (so a non-zero
    /// skew should conflict). With `reuse`, the last event reuses the id of the stored event
    /// at that index (modulo the length), which must be rejected. With `workflow`, the first
    /// event is a `workflow:started` naming it.
    Append {
        /// Which session.
        session: u8,
        /// How many new events.
        events: u8,
        /// Offset of `expected_seq` from the length.
        skew: i8,
        /// Reuse a stored id for the last event.
        reuse: Option<u8>,
        /// Start the batch with `workflow:started` for this workflow number.
        workflow: Option<u8>,
    },
    /// Appends the session's last accepted batch again at the seq it was written at: a retry.
    Retry {
        /// Which session.
        session: u8,
    },
    /// Reads seqs `start..end`.
    Read {
        /// Which session.
        session: u8,
        /// Start of the range.
        start: u8,
        /// End of the range.
        end: u8,
    },
    /// Clears the session.
    Clear {
        /// Which session.
        session: u8,
    },
    /// Lists the sessions.
    List,
}

/// The number of sessions [`Op`]s address.
const MODEL_SESSIONS: u8 = 3;

/// The outcome the model predicts for an append.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// The batch is written; the session's new length.
    Written(u64),
    /// Nothing is written (an empty batch, or a retry); the length returned.
    Unchanged(u64),
    /// A conflict carrying the session's length.
    Conflict(u64),
    /// An invalid batch.
    Invalid,
}

/// The model's view of one session.
#[derive(Debug, Default)]
struct ModelSession {
    events: Vec<Envelope>,
    /// The last batch the store wrote and the seq it was written at.
    last_batch: Option<(u64, Vec<Envelope>)>,
}

impl ModelSession {
    /// What the contract says appending `batch` at `expected` does, written independently of
    /// the backends' shared logic.
    fn predict(&self, batch: &[Envelope], expected: u64) -> Outcome {
        let len = self.events.len() as u64;
        if batch.is_empty() {
            return Outcome::Unchanged(len);
        }
        let unique: HashSet<EventId> = batch.iter().map(|e| e.id).collect();
        if unique.len() != batch.len() {
            return Outcome::Invalid;
        }
        let position = |id: EventId| self.events.iter().position(|e| e.id == id);
        if batch.iter().any(|e| position(e.id).is_some()) {
            let retry = batch
                .iter()
                .zip(expected..)
                .all(|(e, seq)| position(e.id).map(|p| p as u64) == Some(seq));
            return if retry {
                Outcome::Unchanged(expected + batch.len() as u64)
            } else {
                Outcome::Invalid
            };
        }
        if expected == len {
            Outcome::Written(len + batch.len() as u64)
        } else {
            Outcome::Conflict(len)
        }
    }

    /// Applies `batch` appended at `expected`, returning the predicted outcome.
    fn append(&mut self, batch: Vec<Envelope>, expected: u64) -> Outcome {
        let outcome = self.predict(&batch, expected);
        if let Outcome::Written(_) = outcome {
            self.last_batch = Some((expected, batch.clone()));
            self.events.extend(batch);
        }
        outcome
    }
}

/// Runs `ops` against `store` and against a plain in-memory model of the contract, comparing
/// every result, and after every step each session's events and metadata. Returns the first
/// divergence.
///
/// Uses fresh session ids, so it can share a store with other checks; only those sessions are
/// compared in listings.
pub async fn check_against_model<S: Store>(store: &S, ops: &[Op]) -> Result<(), String> {
    let ids: Vec<SessionId> = (0..MODEL_SESSIONS).map(|_| SessionId::new()).collect();
    let mut model: HashMap<u8, ModelSession> = HashMap::new();
    for (step, op) in ops.iter().enumerate() {
        let at = |what: String| format!("step {step} ({op:?}): {what}");
        match op {
            Op::Append {
                session,
                events,
                skew,
                reuse,
                workflow,
            } => {
                let index = session % MODEL_SESSIONS;
                let id = &ids[usize::from(index)];
                let state = model.entry(index).or_default();
                let mut batch: Vec<Envelope> = (0..u64::from(*events))
                    .map(|n| event("test:appended", n))
                    .collect();
                if let (Some(workflow), Some(first)) = (workflow, batch.first_mut()) {
                    first.name = "workflow:started".into();
                    first.payload = json!({ "workflow": format!("workflow-{workflow}") });
                }
                if let (Some(reuse), Some(last)) = (reuse, batch.last_mut())
                    && !state.events.is_empty()
                {
                    last.id = state.events[usize::from(*reuse) % state.events.len()].id;
                }
                let expected = (state.events.len() as u64).saturating_add_signed(i64::from(*skew));
                let predicted = state.append(batch.clone(), expected);
                let result = store.append(id, &batch, expected).await;
                compare_append(&predicted, result, id, expected).map_err(at)?;
            }
            Op::Retry { session } => {
                let index = session % MODEL_SESSIONS;
                let id = &ids[usize::from(index)];
                let state = model.entry(index).or_default();
                let Some((seq, batch)) = state.last_batch.clone() else {
                    continue;
                };
                // After a clear, a retry at seq 0 is a fresh append.
                let predicted = state.append(batch.clone(), seq);
                let result = store.append(id, &batch, seq).await;
                compare_append(&predicted, result, id, seq).map_err(at)?;
            }
            Op::Read {
                session,
                start,
                end,
            } => {
                let index = session % MODEL_SESSIONS;
                let events = model
                    .get(&index)
                    .map(|s| s.events.as_slice())
                    .unwrap_or_default();
                let from = usize::from(*start).min(events.len());
                let to = usize::from(*end).min(events.len()).max(from);
                let expected = &events[from..to];
                let got = store
                    .events(&ids[usize::from(index)], *start as u64..*end as u64)
                    .await
                    .map_err(|err| at(format!("read failed: {err}")))?;
                if got != expected {
                    return Err(at(format!(
                        "read {} events, the model has {}",
                        got.len(),
                        expected.len()
                    )));
                }
            }
            Op::Clear { session } => {
                let index = session % MODEL_SESSIONS;
                store
                    .clear(&ids[usize::from(index)])
                    .await
                    .map_err(|err| at(format!("clear failed: {err}")))?;
                if let Some(state) = model.get_mut(&index) {
                    state.events.clear();
                }
            }
            Op::List => {
                let mut expected: Vec<SessionInfo> = model
                    .iter()
                    .filter_map(|(index, s)| {
                        SessionInfo::from_first_events(ids[usize::from(*index)].clone(), &s.events)
                    })
                    .collect();
                expected.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
                let ours: HashSet<&SessionId> = ids.iter().collect();
                let got: Vec<SessionInfo> = store
                    .sessions()
                    .await
                    .map_err(|err| at(format!("listing failed: {err}")))?
                    .into_iter()
                    .filter(|info| ours.contains(&info.id))
                    .collect();
                if got != expected {
                    return Err(at(format!("listed {got:#?}, the model has {expected:#?}")));
                }
            }
        }
        for (index, id) in ids.iter().enumerate() {
            let events = model
                .get(&(index as u8))
                .map(|s| s.events.as_slice())
                .unwrap_or_default();
            let stored = store
                .all_events(id)
                .await
                .map_err(|err| at(format!("reading session {index} failed: {err}")))?;
            if stored != events {
                return Err(at(format!(
                    "session {index} holds {} events, the model {}",
                    stored.len(),
                    events.len()
                )));
            }
            let meta = store
                .session(id)
                .await
                .map_err(|err| at(format!("reading session {index}'s metadata failed: {err}")))?;
            let expected = SessionInfo::from_first_events(id.clone(), events);
            if meta != expected {
                return Err(at(format!(
                    "session {index}'s metadata is {meta:?}, the model's {expected:?}"
                )));
            }
        }
    }
    Ok(())
}

fn compare_append(
    predicted: &Outcome,
    result: Result<u64, StoreError>,
    session: &SessionId,
    expected: u64,
) -> Result<(), String> {
    let matches = match (predicted, &result) {
        (Outcome::Written(len) | Outcome::Unchanged(len), Ok(got)) => len == got,
        (
            Outcome::Conflict(actual),
            Err(StoreError::Conflict {
                session: s,
                expected: e,
                actual: a,
            }),
        ) => s == session && *e == expected && a == actual,
        (Outcome::Invalid, Err(StoreError::Invalid(_))) => true,
        _ => false,
    };
    if matches {
        Ok(())
    } else {
        Err(format!(
            "append at {expected} returned {result:?}, the model predicts {predicted:?}"
        ))
    }
}
