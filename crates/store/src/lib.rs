//! Stores for Open Harness event logs, implementing the [`Store`] port of `openharness-core`:
//! [`MemoryStore`] for tests; [`RedbStore`], the embedded durable default (one file, with a
//! journal beside it while a writer has it alone that makes an append durable with one
//! sequential write; group commit; [`RedbOptions`] for the rest); and `PostgresStore`
//! (feature `postgres`), which many processes on many machines share, with live tails across
//! processes through `LISTEN`/`NOTIFY`.
//!
//! Also here: [`open`](fn@open), the store a location names (a PostgreSQL connection string or
//! a redb file path); `FailingStore` (feature `testing`), a fault-injection wrapper for tests;
//! `conformance` (feature `conformance`), the one test suite every backend must pass, run with
//! `store_conformance!`; and [`jsonl`], export and import of sessions as JSON lines.
//! Benchmarks: `cargo xtask bench stores` (`src/bin/store_bench.rs`).
//!
//! # Modules
//!
//! - `memory`: [`MemoryStore`], an in-process store for tests, examples and throwaway runs.
//! - `redb_store` (`redb_store/`): [`RedbStore`]; its module docs say which file holds which part.
//! - `postgres` (`postgres/`, feature `postgres`): `PostgresStore`, its claims and its listener.
//! - `append`: the append rules every backend shares: write, no-op retry, or refuse.
//! - `codec`: what every backend does alike: decoding events, listing order, snapshot JSON.
//! - `live`: live tails: the notifier, and `tail`, the task behind every backend's `subscribe`.
//! - `open`: [`open()`], the one place that tells a PostgreSQL connection string from a file path.
//! - [`jsonl`] (`jsonl/`): sessions exported and imported as JSON lines.
//! - `conformance` (`conformance/`, feature `conformance`): the suite, its checks by subject.
//!
//! # Adding a backend
//!
//! A backend is one folder, as `redb_store/` and `postgres/` are: a file named after it with
//! the store's type and its module docs, and a module per job beside it (the [`Store`] impl in
//! `port.rs` or `operations.rs`, the error and options types in `error.rs` and `options.rs`).
//! Decide appends with `append`'s shared rules, decode and encode with `codec`'s helpers
//! (parallel decoding, listing order, snapshot JSON, the snapshot-bound error) and answer
//! `subscribe` with `live`'s `tail` rather than again; run the conformance suite on it with
//! `store_conformance!` in `tests/conformance.rs`; and, when a location string should name
//! it, teach [`open`](fn@open) (and [`is_postgres`]'s neighbours) to recognise it.
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
//!   events per call of `events`). `events_for_fold` and `stream_events_for_fold` yield the
//!   same events, except that the payloads of the names the fold does not take may be `null`.
//! - `sessions()` lists sessions oldest first (by first event's timestamp, then id).
//! - A stored record that cannot be decoded is [`StoreError::Corrupt`], never a panic.
//! - Snapshots may be saved at positions 0 to the session's length; `latest_snapshot_json`
//!   finds the nearest at or before a position; clearing a session removes them. All three
//!   backends keep a snapshot's state as the JSON text `snapshot_json` was given and hand it
//!   out as that text (the runtime writes its state out once and saves it that way); the core
//!   trait's `snapshot` and `latest_snapshot`, for a [`Snapshot`] value, go through those two.
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
mod codec;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod jsonl;
mod live;
mod memory;
mod open;
#[cfg(feature = "postgres")]
mod postgres;
mod redb_store;

pub(crate) use codec::{
    decode_all, decode_json, not_an_envelope, raw_snapshot_text, snapshot_beyond_end,
    sort_oldest_first,
};
pub use live::LiveError;
pub use memory::MemoryStore;
pub use open::{
    Access, MEMORY_LOCATION, OpenOptions, is_memory, is_postgres, open, open_with, redact_url,
};
#[cfg(feature = "testing")]
pub use openharness_core::adapter::observe::{FailingStore, Faults, InjectedFailure};
pub use openharness_core::adapter::observe::{Observed, StoreCall, StoreObserver};
pub use openharness_core::{
    SessionInfo, Store, StoreError,
    adapter::{EventStream, Recorded, Snapshot, Subscription, SubscriptionSender},
};
#[cfg(feature = "postgres")]
pub use postgres::{
    CONNECTIONS, LISTENER_GRACE, MAX_CONNECTIONS, MIGRATIONS, PostgresError, PostgresOptions,
    PostgresStore,
};
pub use redb_store::{
    COMPACT_ON_CLOSE_BYTES, Compaction, DEFAULT_CACHE_BYTES, DEFAULT_CALLER_SPIN,
    DEFAULT_WRITER_SPIN, RedbDurability, RedbError, RedbOptions, RedbStore, STORE_ENV,
    default_store_path,
};
