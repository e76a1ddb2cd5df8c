//! Helpers the checks share: test events, reads that fail with a message, and assertions on
//! typed errors.

use openharness_core::{Envelope, EventId, SessionId, SessionInfo, Store, StoreError};
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// Helpers

/// A test event named `name` with a small payload.
pub(super) fn event(name: &'static str, n: u64) -> Envelope {
    Envelope::new(
        name,
        json!({ "n": n, "text": "héllo ✓", "nested": { "list": [1, 2, 3] } }),
        None,
    )
}

/// `count` test events.
pub(super) fn batch(count: u64) -> Vec<Envelope> {
    (0..count).map(|n| event("test:appended", n)).collect()
}

/// An event with a fixed timestamp, given as RFC 3339.
pub(super) fn event_at(
    name: &'static str,
    payload: serde_json::Value,
    timestamp: &str,
) -> Envelope {
    let mut event = Envelope::new(name, payload, None);
    event.timestamp = timestamp.parse().expect("a valid RFC 3339 timestamp");
    event
}

pub(super) async fn append_ok<S: Store>(
    store: &S,
    session: &SessionId,
    events: &[Envelope],
    at: u64,
) -> u64 {
    match store.append(session, events, at).await {
        Ok(len) => len,
        Err(err) => panic!(
            "{}: appending {} events to session {session} at seq {at} failed: {err}",
            store.describe(),
            events.len()
        ),
    }
}

pub(super) async fn all<S: Store>(store: &S, session: &SessionId) -> Vec<Envelope> {
    match store.all_events(session).await {
        Ok(events) => events,
        Err(err) => panic!(
            "{}: reading session {session} failed: {err}",
            store.describe()
        ),
    }
}

pub(super) async fn read<S: Store>(
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

pub(super) async fn info<S: Store>(store: &S, session: &SessionId) -> Option<SessionInfo> {
    match store.session(session).await {
        Ok(info) => info,
        Err(err) => panic!(
            "{}: reading session {session}'s metadata failed: {err}",
            store.describe()
        ),
    }
}

pub(super) async fn list<S: Store>(store: &S) -> Vec<SessionInfo> {
    match store.sessions().await {
        Ok(infos) => infos,
        Err(err) => panic!("{}: listing sessions failed: {err}", store.describe()),
    }
}

pub(super) fn ids(events: &[Envelope]) -> Vec<EventId> {
    events.iter().map(|event| event.id).collect()
}

pub(super) fn assert_conflict(
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

pub(super) fn assert_invalid(result: Result<u64, StoreError>, what: &str) {
    match result {
        Err(StoreError::Invalid(_)) => {}
        other => panic!("{what}: expected StoreError::Invalid, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Checks

/// Appends `events` at the end of `session`, whatever its length turns out to be (starting
/// from `seq` and following conflicts); the new length.
pub(super) async fn append_at_the_end<S: Store + ?Sized>(
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
