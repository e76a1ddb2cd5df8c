//! Property tests: random operation sequences against the conformance suite's reference
//! model, with shrinking, run deeper than the suite's own property check.
//!
//! Every backend already runs [`conformance::arbitrary_operations_match_model`] (a modest
//! number of cases, since durable appends are commits); the in-memory store is cheap, so here
//! it runs many more sequences of the same strategy.

use openharness_store::MemoryStore;
use openharness_store::conformance::{self, check_against_model};
use proptest::prelude::*;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn memory_store_matches_the_model(ops in conformance::arbitrary_ops()) {
        let store = MemoryStore::new();
        let result = runtime().block_on(check_against_model(&store, &ops));
        prop_assert!(result.is_ok(), "{}", result.err().unwrap_or_default());
    }
}
