//! Property tests: random operation sequences against the conformance suite's reference
//! model, with shrinking, for both backends.

use openharness_store::conformance::{Op, check_against_model};
use openharness_store::{MemoryStore, RedbStore};
use proptest::prelude::*;

fn op() -> impl Strategy<Value = Op> {
    let session = 0u8..3;
    prop_oneof![
        5 => (session.clone(), 0u8..4, prop_oneof![8 => Just(0i8), 1 => Just(-1i8), 1 => Just(1i8)],
              proptest::option::weighted(0.15, any::<u8>()),
              proptest::option::weighted(0.2, 0u8..3))
            .prop_map(|(session, events, skew, reuse, workflow)| Op::Append {
                session, events, skew, reuse, workflow,
            }),
        1 => session.clone().prop_map(|session| Op::Retry { session }),
        2 => (session.clone(), 0u8..10, 0u8..12)
            .prop_map(|(session, start, end)| Op::Read { session, start, end }),
        1 => session.prop_map(|session| Op::Clear { session }),
        1 => Just(Op::List),
    ]
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn memory_store_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        let store = MemoryStore::new();
        let result = runtime().block_on(check_against_model(&store, &ops));
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}

proptest! {
    // Each append is a durable commit, so fewer and shorter sequences.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn redb_store_matches_the_model(ops in proptest::collection::vec(op(), 1..30)) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = RedbStore::open(dir.path().join("store.redb")).expect("a new store");
        let result = runtime().block_on(check_against_model(&store, &ops));
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
