//! RedbStore on files it did not just write itself: a read-only file, another application's
//! redb database, a file from a newer redb, a file with one damaged session, a damaged page
//! that makes redb panic (contained, and later writes refused).

use std::path::Path;

use openharness_core::{Envelope, SessionId, Store, StoreError, adapter::Snapshot};
use openharness_store::{RedbError, RedbOptions, RedbStore};
use redb::{ReadableDatabase, TableDefinition, TableHandle};
use serde_json::json;

fn event(n: u64) -> Envelope {
    Envelope::new("test:appended", json!({ "n": n }), None)
}

/// A store at `path` with `sessions` sessions of 3 events each (staged: it has no journal) and
/// one of 40 (written directly); their ids, in creation order.
async fn filled(path: &Path, sessions: usize) -> Vec<SessionId> {
    let store =
        RedbStore::open_with(path, RedbOptions::default().journal(false)).expect("create a store");
    let mut ids = Vec::new();
    for _ in 0..sessions {
        let session = SessionId::new();
        let batch: Vec<Envelope> = (0..3).map(event).collect();
        store.append(&session, &batch, 0).await.expect("append");
        ids.push(session);
    }
    let long = SessionId::new();
    let batch: Vec<Envelope> = (0..40).map(event).collect();
    store.append(&long, &batch, 0).await.expect("append");
    ids.push(long);
    ids
}

fn table_names(path: &Path) -> Vec<String> {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = db.begin_read().expect("a read transaction");
    txn.list_tables()
        .expect("tables")
        .map(|table| table.name().to_owned())
        .collect()
}

fn redb_error(err: &StoreError) -> &RedbError {
    RedbError::of(err).unwrap_or_else(|| panic!("not a RedbError: {err:?}"))
}

#[tokio::test]
async fn a_read_only_store_lists_and_reads_and_refuses_writes_clearly() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let sessions = filled(&path, 2).await;
    let before = std::fs::read(&path).expect("read the file");

    let mut permissions = std::fs::metadata(&path).expect("metadata").permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&path, permissions).expect("chmod 0444");
    // Root may write a 0444 file: then only the explicit read-only mode is exercised here.
    let writable_anyway = std::fs::OpenOptions::new().write(true).open(&path).is_ok();
    let mut modes = vec![RedbOptions::default().read_only(true)];
    if !writable_anyway {
        modes.push(RedbOptions::default());
    }
    for options in modes {
        let store = RedbStore::open_with(&path, options).expect("open read-only");
        let listed = store.sessions().await.expect("list");
        assert_eq!(listed.len(), sessions.len());
        for session in &sessions {
            let events = store.all_events(session).await.expect("read");
            let info = store.session(session).await.expect("read").expect("stored");
            assert_eq!(events.len() as u64, info.count);
            assert!(store.latest_snapshot(session, 100).await.is_ok());
        }
        let mut subscription = store.subscribe(&sessions[0], 0).await.expect("subscribe");
        let first = subscription.next().await.expect("an event").expect("read");
        assert_eq!(first.seq, 0);

        let writes = [
            store.append(&sessions[0], &[event(3)], 3).await.map(|_| ()),
            store
                .snapshot(&sessions[0], &Snapshot::new(1, json!({})))
                .await,
            store.clear(&sessions[0]).await,
        ];
        for result in writes {
            let err = result.expect_err("a read-only store refuses writes");
            assert!(
                matches!(redb_error(&err), RedbError::ReadOnly { .. }),
                "{err:?}"
            );
            let message = err.to_string();
            assert!(message.contains("read-only"), "{message}");
            assert!(message.contains(&path.display().to_string()), "{message}");
        }
    }
    assert_eq!(
        std::fs::read(&path).expect("read the file"),
        before,
        "a read-only open writes nothing"
    );

    // Read-only never creates a store.
    let missing = dir.path().join("missing.redb");
    let err = RedbStore::open_with(&missing, RedbOptions::default().read_only(true))
        .expect_err("no file to open");
    assert!(err.to_string().contains("missing.redb"), "{err}");
    assert!(!missing.exists());
}

#[test]
fn another_applications_redb_file_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("theirs.redb");
    {
        let db = redb::Database::create(&path).expect("create a redb file");
        let txn = db.begin_write().expect("a write transaction");
        txn.open_table(TableDefinition::<&str, u64>::new("users"))
            .expect("a table")
            .insert("ada", 1)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let before = std::fs::read(&path).expect("the file");
    let err = RedbStore::open(&path).expect_err("not a store");
    assert!(
        matches!(redb_error(&err), RedbError::Foreign { .. }),
        "{err:?}"
    );
    // Refused without a byte of it written (it is read before anything opens it to write).
    let after = std::fs::read(&path).expect("the file");
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count()
        + before.len().abs_diff(after.len());
    assert_eq!(
        changed, 0,
        "{changed} bytes of another application's file changed"
    );
    let message = err.to_string();
    assert!(message.contains("not an Open Harness store"), "{message}");
    assert!(message.contains("users"), "{message}");
    assert_eq!(table_names(&path), vec!["users".to_owned()]);

    // A table with a store's name but other types is not ours either.
    let path = dir.path().join("lookalike.redb");
    {
        let db = redb::Database::create(&path).expect("create a redb file");
        let txn = db.begin_write().expect("a write transaction");
        txn.open_table(TableDefinition::<u64, u64>::new("events"))
            .expect("a table");
        txn.open_table(TableDefinition::<u64, u64>::new("sessions"))
            .expect("a table");
        txn.commit().expect("commit");
    }
    let before = std::fs::read(&path).expect("the file");
    let err = RedbStore::open(&path).expect_err("not a store");
    assert!(
        matches!(redb_error(&err), RedbError::Foreign { .. }),
        "{err:?}"
    );
    assert_eq!(std::fs::read(&path).expect("the file"), before);
    assert_eq!(table_names(&path).len(), 2);

    // An empty redb file is taken as a new store.
    let path = dir.path().join("empty.redb");
    drop(redb::Database::create(&path).expect("create a redb file"));
    RedbStore::open(&path).expect("an empty file becomes a store");
    assert!(table_names(&path).contains(&"meta".to_owned()));
}

#[tokio::test]
async fn a_file_from_a_newer_redb_is_reported_as_such_not_as_corrupt() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    filled(&path, 1).await;
    // The redb file format version is the first byte of each commit slot (at 64 and 192).
    let mut bytes = std::fs::read(&path).expect("read the file");
    bytes[64] = 9;
    bytes[192] = 9;
    std::fs::write(&path, &bytes).expect("write the file");
    let err = RedbStore::open(&path).expect_err("a newer file format");
    assert!(
        matches!(
            redb_error(&err),
            RedbError::NewerFileFormat { version: 9, .. }
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("newer version"), "{message}");
    assert!(!message.to_lowercase().contains("corrupt"), "{message}");
}

/// Session records and events overwritten with garbage, as damage would leave them.
const SESSIONS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("sessions");
const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("events");

#[tokio::test]
async fn one_damaged_session_does_not_hide_the_others() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let sessions = filled(&path, 2).await;
    // sessions[2] is the long one, its events in `events`: damage its record only. Damage
    // sessions[0]'s record and every event, so nothing tells what it was.
    let (whole, listed_from_events, lost) = (&sessions[1], &sessions[2], &sessions[0]);
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("a write transaction");
        {
            let mut records = txn.open_table(SESSIONS).expect("sessions");
            for session in [listed_from_events, lost] {
                records
                    .insert(session.as_str(), b"{damaged".as_slice())
                    .expect("insert");
            }
            let staged = TableDefinition::<u64, (&str, u64, &[u8])>::new("recent_events");
            let mut staged = txn.open_table(staged).expect("recent_events");
            staged
                .retain(|_, (session, _, _)| session != lost.as_str())
                .expect("remove its staged events");
            let mut events = txn.open_table(EVENTS).expect("events");
            events
                .insert((lost.as_str(), 0), b"garbage".as_slice())
                .expect("insert");
        }
        txn.commit().expect("commit");
    }
    let store = RedbStore::open(&path).expect("open");
    let listed = store.sessions().await.expect("the others are listed");
    let ids: Vec<&SessionId> = listed.iter().map(|info| &info.id).collect();
    assert_eq!(ids.len(), 2, "{listed:?}");
    assert!(ids.contains(&whole) && ids.contains(&listed_from_events));
    let info = listed
        .iter()
        .find(|info| &info.id == listed_from_events)
        .expect("listed");
    assert_eq!(info.count, 40);
    // Asked for directly, the damaged record is reported.
    let err = store
        .session(listed_from_events)
        .await
        .expect_err("damaged");
    assert!(matches!(err, StoreError::Corrupt { seq: 0, .. }), "{err:?}");
}

/// The first read that failed as [`RedbError::Damaged`] (a panic inside redb, contained).
async fn damaged_read(store: &RedbStore, sessions: &[SessionId]) -> Option<StoreError> {
    let mut reads = vec![store.sessions().await.map(|_| ())];
    for session in sessions {
        reads.push(store.session(session).await.map(|_| ()));
        reads.push(store.all_events(session).await.map(|_| ()));
    }
    reads
        .into_iter()
        .filter_map(Result::err)
        .find(|err| matches!(RedbError::of(err), Some(RedbError::Damaged { .. })))
}

#[tokio::test]
async fn a_panic_inside_redb_is_contained_and_refuses_later_writes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let original = dir.path().join("store.redb");
    let sessions = filled(&original, 3).await;
    let bytes = std::fs::read(&original).expect("read the file");
    let pages = bytes.len() / 4096;
    // Copy each page over the next, then zero each, until a read makes redb panic.
    let damages = (1..pages - 1)
        .map(|page| (page, true))
        .chain((1..pages).map(|page| (page, false)));
    let mut found = false;
    for (page, copy) in damages {
        let mut damaged = bytes.clone();
        let at = page * 4096;
        if copy {
            damaged.copy_within(at..at + 4096, at + 4096);
        } else {
            damaged[at..at + 4096].fill(0);
        }
        let path = dir.path().join(format!("damaged-{page}-{copy}.redb"));
        std::fs::write(&path, &damaged).expect("write a damaged copy");
        let Ok(store) = RedbStore::open(&path) else {
            continue;
        };
        let Some(err) = damaged_read(&store, &sessions).await else {
            continue;
        };
        found = true;
        assert!(err.to_string().contains("is damaged"), "{err}");
        let err = store
            .append(&sessions[0], &[event(3)], 3)
            .await
            .expect_err("writes are refused");
        assert!(
            matches!(redb_error(&err), RedbError::Damaged { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("writes are refused"), "{err}");
        // Reads go on answering, each contained.
        let _ = store.sessions().await;
        break;
    }
    assert!(found, "no damaged page made redb panic in a read");
}

/// `compact_file` gives back the space of cleared sessions, keeps every event and snapshot of
/// the others, refuses a file a store has open, and never creates a missing one.
#[tokio::test]
async fn compaction_gives_back_free_space_and_keeps_every_event() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    // Not compacted on close: this is about what `compact_file` does.
    let store = RedbStore::open_with(&path, RedbOptions::default().compact_on_close(false))
        .expect("create a store");
    let mut sessions = Vec::new();
    for _ in 0..40 {
        let session = SessionId::new();
        let batch: Vec<Envelope> = (0..400).map(event).collect();
        store.append(&session, &batch, 0).await.expect("append");
        store
            .snapshot(&session, &Snapshot::new(400, json!({ "n": 400 })))
            .await
            .expect("snapshot");
        sessions.push(session);
    }
    let kept = sessions.split_off(30);
    for session in &sessions {
        store.clear(session).await.expect("clear");
    }
    let err = RedbStore::compact_file(&path).expect_err("the store has the file open");
    assert!(
        matches!(RedbError::of(&err), Some(RedbError::AlreadyOpen { .. })),
        "{err}"
    );
    drop(store);

    let before = std::fs::metadata(&path).expect("the file").len();
    let compaction = RedbStore::compact_file(&path).expect("compact");
    assert_eq!(compaction.before, before);
    assert_eq!(
        compaction.after,
        std::fs::metadata(&path).expect("the file").len()
    );
    // Three quarters of the events were cleared: the file gives most of their space back.
    assert!(
        compaction.after * 2 < compaction.before,
        "{} → {} bytes",
        compaction.before,
        compaction.after
    );

    let store = RedbStore::open(&path).expect("reopen");
    for session in &kept {
        let events = store.all_events(session).await.expect("read");
        assert_eq!(events.len(), 400);
        assert!(events.iter().zip(0..).all(|(e, n)| e.payload["n"] == n));
        let snapshot = store
            .latest_snapshot(session, u64::MAX)
            .await
            .expect("read a snapshot");
        assert_eq!(snapshot.map(|s| s.position), Some(400));
    }
    for session in &sessions {
        assert!(store.all_events(session).await.expect("read").is_empty());
    }
    drop(store);

    let missing = dir.path().join("typo.redb");
    let err = RedbStore::compact_file(&missing).expect_err("no file there");
    assert!(
        matches!(RedbError::of(&err), Some(RedbError::Open { .. })),
        "{err}"
    );
    assert!(!missing.exists(), "compaction created a file");
}
