//! Stores for Open Harness event logs, implementing the [`Store`] port of `openharness-core`:
//! [`MemoryStore`] for tests; [`RedbStore`], the embedded durable default (one file, with a
//! journal beside it while a writer has it alone that makes an append durable with one
//! sequential write; group commit; [`RedbOptions`] for the rest); and `PostgresStore`
//! (feature `postgres`), which many processes on many machines share, with live tails across
//! processes through `LISTEN`/`NOTIFY`.
//!
//! Also here: `FailingStore` (feature `testing`), a fault-injection wrapper for tests; `conformance` (feature
//! `conformance`), the one test suite every backend must pass, run with `store_conformance!`;
//! and [`jsonl`], export and import of sessions as JSON lines. Benchmarks:
//! `cargo xtask bench stores`.
//!
//! # The contract, as these backends implement it
//!
//! - `append(session, events, expected_seq)` writes every event or none and returns the new
//!   length. When the session is not `expected_seq` events long it fails with
//!   [`StoreError::Conflict`], carrying the actual length.
//! - A retry of a stored batch (the same event ids, stored at consecutive seqs starting at
//!   `expected_seq`) writes nothing and succeeds with `expected_seq + events.len()`, the length
//!   the original append returned. (That equals the current length unless someone appended
//!   since; returning the original length means the retrier's next append conflicts instead of
//!   silently skipping the other writer's events.)
//! - A batch that repeats an id, or holds an id already stored in the session anywhere else, is
//!   [`StoreError::Invalid`] — checked before the seq, since it is a caller bug, not a race.
//!   Ids are unique per session: the same event may be stored in two sessions (a fork's copy).
//! - An empty batch writes nothing and succeeds with the current length, whatever
//!   `expected_seq` is.
//! - `events` clamps the range; an unknown session has no events, no metadata, and clearing it
//!   succeeds. `stream_events` yields the same events with their seqs, holding one page in
//!   memory (the core trait's default reads [`EVENT_PAGE`](openharness_core::adapter::EVENT_PAGE)
//!   events per call of `events`).
//! - `sessions()` lists sessions oldest first (by first event's timestamp, then id).
//! - A stored record that cannot be decoded is [`StoreError::Corrupt`], never a panic.
//! - Snapshots may be saved at positions 0 to the session's length; `latest_snapshot` finds the
//!   nearest at or before a position; clearing a session removes them.
//! - `subscribe(session, from_seq)` delivers every event from `from_seq` exactly once and in
//!   order, stored ones first, then live ones: the tail marks the session's notifications as
//!   seen before each catch-up read, so an append is either in the read or wakes the tail.
//!
//! ```
//! use openharness_core::{Envelope, SessionId, Store, StoreError};
//! use openharness_store::MemoryStore;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let store = MemoryStore::new();
//! let session = SessionId::new();
//! let batch = vec![Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None)];
//! assert_eq!(store.append(&session, &batch, 0).await?, 1);
//! // A retry after a lost acknowledgement stores nothing twice.
//! assert_eq!(store.append(&session, &batch, 0).await?, 1);
//! // Another writer that thinks the session is empty gets a typed conflict.
//! let other = vec![Envelope::new("user:input", serde_json::json!({ "text": "yo" }), None)];
//! assert!(matches!(
//!     store.append(&session, &other, 0).await,
//!     Err(StoreError::Conflict { actual: 1, .. })
//! ));
//! # Ok::<_, StoreError>(())
//! # }).unwrap();
//! ```

mod append;
#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "testing")]
mod fault;
pub mod jsonl;
mod live;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod redb_store;

#[cfg(feature = "testing")]
pub use fault::{FailingStore, InjectedFailure};
pub use live::LiveError;
pub use memory::MemoryStore;
pub use openharness_core::adapter::observe::{Observed, StoreObserver};
pub use openharness_core::{
    SessionInfo, Store, StoreError,
    adapter::{EventStream, Recorded, Snapshot, Subscription, SubscriptionSender},
};
#[cfg(feature = "postgres")]
pub use postgres::{
    CONNECTIONS, LISTENER_GRACE, MAX_CONNECTIONS, MIGRATIONS, PostgresError, PostgresOptions,
    PostgresStore, redact_url,
};
pub use redb_store::{
    Compaction, DEFAULT_CACHE_BYTES, RedbDurability, RedbError, RedbOptions, RedbStore, STORE_ENV,
    default_store_path,
};

use std::cmp::Ordering;

use openharness_core::SessionId;

/// The order of [`Store::sessions`]: oldest first, ties broken by id so listings are stable.
fn by_age(a: &SessionInfo, b: &SessionInfo) -> Ordering {
    a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id))
}

/// The error for a snapshot past the end of its session (or of a session with no events).
pub(crate) fn snapshot_beyond_end(session: &SessionId, position: u64, len: u64) -> StoreError {
    StoreError::Invalid(format!(
        "cannot save a snapshot of session {session} at position {position}: \
         the session has {len} events"
    ))
}

/// Below this many events a read decodes on the calling thread.
const PARALLEL_DECODE: usize = 4096;

/// Decodes stored events (seq, JSON bytes), in order. Large reads are split across the
/// machine's cores: decoding JSON is most of the cost of loading a long session.
pub(crate) fn decode_all(
    session: &SessionId,
    records: &[(u64, &[u8])],
) -> Result<Vec<openharness_core::Envelope>, StoreError> {
    let decode_chunk = |chunk: &[(u64, &[u8])]| {
        chunk
            .iter()
            .map(|(seq, bytes)| {
                serde_json::from_slice(bytes).map_err(|err| StoreError::Corrupt {
                    session: session.clone(),
                    seq: *seq,
                    message: format!("stored event is not a valid envelope: {err}"),
                })
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    if records.len() < PARALLEL_DECODE || threads < 2 {
        return decode_chunk(records);
    }
    let size = records.len().div_ceil(threads);
    let parts = std::thread::scope(|scope| {
        let handles: Vec<_> = records
            .chunks(size)
            .map(|chunk| scope.spawn(move || decode_chunk(chunk)))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(StoreError::Invalid("a decoding thread panicked".to_owned()))
                })
            })
            .collect::<Vec<_>>()
    });
    let mut events = Vec::with_capacity(records.len());
    for part in parts {
        events.extend(part?);
    }
    Ok(events)
}

/// Sorts sessions into the order of [`Store::sessions`].
pub(crate) fn sort_oldest_first(infos: &mut [SessionInfo]) {
    infos.sort_by(by_age);
}

/// An import or export error as the workflow error every part of Open Harness composes into
/// (a store failure as [`openharness_core::Error::Store`], anything else as
/// [`openharness_core::Error::Other`]), so `?` works in a `main` returning
/// `openharness::Error`.
impl From<jsonl::TransferError> for openharness_core::Error {
    fn from(err: jsonl::TransferError) -> Self {
        match err {
            jsonl::TransferError::Store {
                store,
                source,
                line: None,
            } => Self::Store {
                store,
                session: None,
                source,
            },
            other => Self::Other(Box::new(other)),
        }
    }
}
