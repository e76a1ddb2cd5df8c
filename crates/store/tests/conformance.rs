//! Runs the conformance suite against every backend in this crate.

mod memory {
    openharness_store::store_conformance!(openharness_store::MemoryStore::new());
}

mod redb {
    use openharness_store::RedbStore;
    use openharness_store::conformance::Guarded;

    openharness_store::store_conformance!({
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = RedbStore::open(dir.path().join("store.redb")).expect("a new redb store");
        Guarded { store, guard: dir }
    });
}

mod redb_commit_on_caller {
    use openharness_store::conformance::Guarded;
    use openharness_store::{RedbOptions, RedbStore};

    openharness_store::store_conformance!({
        let dir = tempfile::tempdir().expect("a temporary directory");
        let options = RedbOptions::default().commit_on_caller(true);
        let store =
            RedbStore::open_with(dir.path().join("store.redb"), options).expect("a new redb store");
        Guarded { store, guard: dir }
    });
}

mod redb_turn_end {
    // Appends acknowledged before their commit (see `RedbDurability`): the same contract.
    use openharness_store::conformance::Guarded;
    use openharness_store::{RedbDurability, RedbOptions, RedbStore};

    openharness_store::store_conformance!({
        let dir = tempfile::tempdir().expect("a temporary directory");
        let options = RedbOptions::default().durability(RedbDurability::TurnEnd);
        let store =
            RedbStore::open_with(dir.path().join("store.redb"), options).expect("a new redb store");
        Guarded { store, guard: dir }
    });
}

mod redb_periodic {
    use openharness_store::conformance::Guarded;
    use openharness_store::{RedbDurability, RedbOptions, RedbStore};

    openharness_store::store_conformance!({
        let dir = tempfile::tempdir().expect("a temporary directory");
        let options = RedbOptions::default().durability(RedbDurability::Periodic(
            std::time::Duration::from_millis(5),
        ));
        let store =
            RedbStore::open_with(dir.path().join("store.redb"), options).expect("a new redb store");
        Guarded { store, guard: dir }
    });
}

mod failing_passthrough {
    // A FailingStore that never reaches its failure is an ordinary store.
    openharness_store::store_conformance!(openharness_store::FailingStore::fail_from(
        openharness_store::MemoryStore::new(),
        u64::MAX
    ));
}

mod arc {
    // `Arc<S>` implements `Store` through core's blanket impl.
    openharness_store::store_conformance!(std::sync::Arc::new(
        openharness_store::MemoryStore::new()
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_all_runs_every_check_in_one_test() {
    openharness_store::conformance::run_all(|| async { openharness_store::MemoryStore::new() })
        .await;
}
