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
//! [`streamed_edges_are_empty_or_clamped`], [`fold_reads_keep_the_folded_payloads`],
//! [`unknown_session_is_empty`],
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
//! The checks live by subject in `conformance/` (appends, reads, sessions, concurrency,
//! snapshots and tails, the model). To add one: write it as a `pub async fn name<S: Store>(store:
//! S)` in its subject's file, re-export it from this module, and add its name to the list in
//! `__for_each_conformance_check!` below, which every backend's tests take their checks from.
//!
//! This module and its macros need the `conformance` feature (it brings in proptest); a
//! backend's crate enables it for its tests only:
//!
//! ```toml
//! [dev-dependencies]
//! openharness-store = { version = "0.1", features = ["conformance"] }
//! ```

use std::any::Any;
use std::future::Future;

use openharness_core::Store;

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
            fold_reads_keep_the_folded_payloads,
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

mod appends;
mod concurrency;
mod helpers;
mod model;
mod reads;
mod sessions;
mod snapshots_and_tails;

pub use appends::{
    append_and_read_back, conflict_reports_actual_seq, empty_batch_writes_nothing,
    idempotent_retry_stores_once, ranges_are_clamped, rejected_batches_leave_nothing,
};
pub use concurrency::{clear_racing_appends_leaves_whole_sessions, concurrent_writers_race};
pub use model::{
    MODEL_CASES, Op, arbitrary_op, arbitrary_operations_match_model, arbitrary_ops,
    check_against_model, check_arbitrary_sequences,
};
pub use reads::{
    fold_reads_keep_the_folded_payloads, session_metadata, sessions_oldest_first,
    streamed_edges_are_empty_or_clamped, streamed_ranges_cross_pages, unknown_session_is_empty,
};
pub use sessions::{
    clear_removes_everything, sessions_are_independent, unfinished_marks_are_kept_apart,
};
pub use snapshots_and_tails::{
    snapshots_nearest_at_or_before, subscribe_boundary_under_concurrent_writers,
    subscribe_catches_up_then_tails,
};
