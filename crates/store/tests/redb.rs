//! RedbStore behaviour beyond the shared contract: durability across reopening, file
//! creation, and open errors that name the file.

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{RedbError, RedbStore};
use serde_json::json;

fn event(n: u64) -> Envelope {
    Envelope::new("test:appended", json!({ "n": n }), None)
}

#[tokio::test]
async fn data_survives_reopen() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let mut started = Envelope::new("workflow:started", json!({ "workflow": "planner" }), None);
    started.timestamp = "2024-05-01T10:00:00.000000001Z"
        .parse()
        .expect("a timestamp");
    let batch = vec![started, event(1), event(2)];
    let before = {
        let store = RedbStore::open(&path).expect("open a new store");
        assert_eq!(store.append(&session, &batch, 0).await.expect("append"), 3);
        store.session(&session).await.expect("metadata")
    };

    let store = RedbStore::open(&path).expect("reopen the store");
    assert_eq!(store.all_events(&session).await.expect("read"), batch);
    assert_eq!(store.session(&session).await.expect("metadata"), before);
    let listed = store.sessions().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].workflow.as_deref(), Some("planner"));
    // The id index survived too: a retry after reopening stores nothing twice.
    assert_eq!(store.append(&session, &batch, 0).await.expect("retry"), 3);
    assert!(matches!(
        store.append(&session, &[event(3)], 0).await,
        Err(StoreError::Conflict { actual: 3, .. })
    ));
    assert_eq!(
        store
            .append(&session, &[event(3)], 3)
            .await
            .expect("append"),
        4
    );
}

#[test]
fn open_creates_parent_directories() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("a/b/c/store.redb");
    let store = RedbStore::open(&path).expect("open in a new directory");
    assert!(path.is_file());
    assert_eq!(store.path(), path);
    assert_eq!(store.describe(), format!("redb:{}", path.display()));
}

#[test]
fn second_open_names_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let _first = RedbStore::open(&path).expect("first open");
    let err = RedbStore::open(&path).expect_err("the file is locked");
    assert!(
        matches!(RedbError::of(&err), Some(RedbError::AlreadyOpen { .. })),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("already open"), "{message}");
}

#[test]
fn open_errors_name_the_path() {
    let dir = tempfile::tempdir().expect("a temporary directory");

    // The parent "directory" is a file.
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, b"not a directory").expect("write a file");
    let err = RedbStore::open(blocker.join("store.redb")).expect_err("cannot create the directory");
    assert!(
        matches!(RedbError::of(&err), Some(RedbError::CreateDir { .. })),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&blocker.display().to_string()),
        "{err}"
    );

    // The file is not a redb database.
    let garbage = dir.path().join("garbage.redb");
    std::fs::write(&garbage, vec![0x42; 8192]).expect("write a file");
    let err = RedbStore::open(&garbage).expect_err("not a database");
    assert!(
        err.to_string().contains(&garbage.display().to_string()),
        "{err}"
    );

    // The path is a directory.
    let err = RedbStore::open(dir.path()).expect_err("a directory");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );

    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
}

#[test]
fn default_path_is_the_documented_one() {
    assert_eq!(RedbStore::DEFAULT_PATH, ".openharness/store.redb");
    if std::env::var_os(openharness_store::STORE_ENV).is_none() {
        assert_eq!(
            openharness_store::default_store_path(),
            std::path::Path::new(RedbStore::DEFAULT_PATH)
        );
    }
}
