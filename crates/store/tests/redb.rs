//! RedbStore behaviour beyond the shared contract: durability across reopening, file
//! creation, open errors that name the file, and readers beside a writer.

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{RedbDurability, RedbError, RedbOptions, RedbStore};
use openharness_testkit::random::SplitMix;
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

/// Format 1's tables, as the first released version wrote them.
mod format_1 {
    use redb::TableDefinition;
    pub(super) const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> =
        TableDefinition::new("events");
    pub(super) const EVENT_IDS: TableDefinition<'_, (&str, u128), u64> =
        TableDefinition::new("event_ids");
    pub(super) const SESSIONS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("sessions");
    pub(super) const SNAPSHOTS: TableDefinition<'_, (&str, u64), &[u8]> =
        TableDefinition::new("snapshots");
}

#[tokio::test]
async fn a_format_1_file_is_migrated_when_opened() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let started = Envelope::new("workflow:started", json!({ "workflow": "planner" }), None);
    let batch = vec![started, event(1), event(2)];
    {
        // Write the file as format 1 did: a full SessionInfo per session, ids keyed by session.
        let db = redb::Database::create(&path).expect("create a redb file");
        let txn = db.begin_write().expect("a write transaction");
        {
            let mut events = txn.open_table(format_1::EVENTS).expect("events");
            let mut ids = txn.open_table(format_1::EVENT_IDS).expect("event_ids");
            for (seq, event) in batch.iter().enumerate() {
                let bytes = serde_json::to_vec(event).expect("encode");
                events
                    .insert((session.as_str(), seq as u64), bytes.as_slice())
                    .expect("insert an event");
                ids.insert((session.as_str(), event.id.as_uuid().as_u128()), seq as u64)
                    .expect("insert an id");
            }
            let info = json!({
                "id": session, "created": batch[0].timestamp, "last_event": batch[2].timestamp,
                "count": 3, "workflow": "planner", "parent": null,
            });
            let mut sessions = txn.open_table(format_1::SESSIONS).expect("sessions");
            sessions
                .insert(
                    session.as_str(),
                    serde_json::to_vec(&info).expect("encode").as_slice(),
                )
                .expect("insert the session");
            txn.open_table(format_1::SNAPSHOTS).expect("snapshots");
        }
        txn.commit().expect("commit");
    }

    let store = RedbStore::open(&path).expect("open a format 1 file");
    let listed = store.sessions().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (
            listed[0].count,
            listed[0].workflow.as_deref(),
            listed[0].last_event
        ),
        (3, Some("planner"), batch[2].timestamp)
    );
    assert_eq!(store.all_events(&session).await.expect("read"), batch);
    // The migrated index still recognises the stored ids: a retry stores nothing, and an id
    // appended elsewhere in the session is refused.
    assert_eq!(
        store.append(&session, &batch[1..], 1).await.expect("retry"),
        3
    );
    assert!(matches!(
        store.append(&session, &batch[2..], 3).await,
        Err(StoreError::Invalid(_))
    ));
    assert_eq!(
        store
            .append(&session, &[event(3)], 3)
            .await
            .expect("append"),
        4
    );
    drop(store);

    // The old index is gone and the file says it is the current format (3); opening again
    // changes nothing.
    let db = redb::Database::open(&path).expect("reopen with redb");
    let txn = redb::ReadableDatabase::begin_read(&db).expect("a read transaction");
    let tables: Vec<String> = txn
        .list_tables()
        .expect("tables")
        .map(|table| redb::TableHandle::name(&table).to_owned())
        .collect();
    assert!(!tables.iter().any(|name| name == "event_ids"), "{tables:?}");
    let meta = txn
        .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
        .expect("meta");
    assert_eq!(
        meta.get("format").expect("read").map(|v| v.value()),
        Some(3)
    );
    drop((meta, txn, db));
    let store = RedbStore::open(&path).expect("open again");
    assert_eq!(store.all_events(&session).await.expect("read").len(), 4);
}

/// The file's format marker, read with redb.
fn format_of(path: &std::path::Path) -> Option<u64> {
    let db = redb::Database::open(path).expect("open with redb");
    let txn = redb::ReadableDatabase::begin_read(&db).expect("a read transaction");
    let meta = txn
        .open_table(redb::TableDefinition::<&str, u64>::new("meta"))
        .expect("meta");
    meta.get("format").expect("read").map(|v| v.value())
}

#[tokio::test]
async fn a_format_2_file_with_json_events_reads_as_it_is_and_takes_binary_ones_after() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let batch: Vec<Envelope> = (0..3).map(event).collect();
    {
        let store = RedbStore::open(&path).expect("create");
        store.append(&session, &batch, 0).await.expect("append");
    }
    // Rewrite the file as format 2 wrote it: every event as its JSON envelope, staged or not.
    {
        let db = redb::Database::open(&path).expect("open with redb");
        let txn = db.begin_write().expect("a write transaction");
        {
            let json = |seq: u64| serde_json::to_vec(&batch[seq as usize]).expect("encode");
            let mut events = txn
                .open_table(redb::TableDefinition::<(&str, u64), &[u8]>::new("events"))
                .expect("events");
            let stored: Vec<u64> = redb::ReadableTable::iter(&events)
                .expect("iterate")
                .map(|entry| entry.expect("an entry").0.value().1)
                .collect();
            let stored_count = stored.len();
            for seq in stored {
                events
                    .insert((session.as_str(), seq), json(seq).as_slice())
                    .expect("rewrite");
            }
            let mut recent = txn
                .open_table(redb::TableDefinition::<u64, (&str, u64, &[u8])>::new(
                    "recent_events",
                ))
                .expect("recent_events");
            let staged: Vec<(u64, u64)> = redb::ReadableTable::iter(&recent)
                .expect("iterate")
                .map(|entry| {
                    let (key, value) = entry.expect("an entry");
                    (key.value(), value.value().1)
                })
                .collect();
            assert_eq!(
                stored_count + staged.len(),
                batch.len(),
                "every event rewritten"
            );
            for (order, seq) in staged {
                recent
                    .insert(order, (session.as_str(), seq, json(seq).as_slice()))
                    .expect("rewrite");
            }
            txn.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
                .expect("meta")
                .insert("format", 2)
                .expect("mark format 2");
        }
        txn.commit().expect("commit");
    }

    // Read-only: read as it is, and not rewritten.
    let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true))
        .expect("open a format 2 file read-only");
    assert_eq!(reader.all_events(&session).await.expect("read"), batch);
    let listed = reader.sessions().await.expect("list");
    assert_eq!(
        (listed[0].count, listed[0].last_event),
        (3, batch[2].timestamp)
    );
    drop(reader);
    assert_eq!(format_of(&path), Some(2));

    // For writing: marked format 3, the old events still read, and new ones join them.
    let store = RedbStore::open(&path).expect("open a format 2 file");
    assert_eq!(store.all_events(&session).await.expect("read"), batch);
    assert_eq!(
        store
            .append(&session, &batch[1..], 1)
            .await
            .expect("a retry"),
        3,
        "a retried batch is recognised by the ids of JSON events"
    );
    let later = event(3);
    assert_eq!(
        store
            .append(&session, std::slice::from_ref(&later), 3)
            .await
            .expect("append"),
        4
    );
    let mut all = batch.clone();
    all.push(later);
    assert_eq!(store.all_events(&session).await.expect("read"), all);
    drop(store);
    assert_eq!(format_of(&path), Some(3));
    let store = RedbStore::open(&path).expect("open again");
    assert_eq!(store.all_events(&session).await.expect("read"), all);
}

#[test]
fn a_file_from_a_newer_version_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    {
        let db = redb::Database::create(&path).expect("create a redb file");
        let txn = db.begin_write().expect("a write transaction");
        txn.open_table(redb::TableDefinition::<&str, u64>::new("meta"))
            .expect("meta")
            .insert("format", 99)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let err = RedbStore::open(&path).expect_err("a newer format");
    assert!(
        matches!(
            RedbError::of(&err),
            Some(RedbError::NewerFormat { format: 99, .. })
        ),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("upgrade"), "{message}");
}

#[tokio::test]
async fn the_session_record_learns_the_workflow_and_parent_from_later_events() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = RedbStore::open(dir.path().join("store.redb")).expect("open");
    let session = SessionId::new();
    let parent = SessionId::new();
    store
        .append(&session, &[event(0)], 0)
        .await
        .expect("append");
    let info = store
        .session(&session)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!((info.workflow, info.parent), (None, None));

    let forked = Envelope::new(
        "session:forked",
        json!({ "parent": parent, "position": 4 }),
        None,
    );
    let started = Envelope::new("workflow:started", json!({ "workflow": "planner" }), None);
    store.append(&session, &[forked], 1).await.expect("append");
    store
        .append(&session, &[started, event(3)], 2)
        .await
        .expect("append");
    let later = Envelope::new("workflow:started", json!({ "workflow": "other" }), None);
    store
        .append(&session, std::slice::from_ref(&later), 4)
        .await
        .expect("append");

    let info = store
        .session(&session)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(
        info.workflow.as_deref(),
        Some("planner"),
        "the first one counts"
    );
    assert_eq!(info.parent, Some(parent));
    assert_eq!((info.count, info.last_event), (5, later.timestamp));
}

/// With `commit_on_caller`, a current-thread runtime (where tokio forbids blocking in place)
/// still appends, through the writer thread.
#[tokio::test(flavor = "current_thread")]
async fn commit_on_caller_falls_back_on_a_current_thread_runtime() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = openharness_store::RedbOptions::default().commit_on_caller(true);
    let store = RedbStore::open_with(dir.path().join("store.redb"), options).expect("open");
    let session = SessionId::new();
    for seq in 0..5 {
        assert_eq!(
            store
                .append(&session, &[event(seq)], seq)
                .await
                .expect("append"),
            seq + 1
        );
    }
    assert_eq!(store.all_events(&session).await.expect("read").len(), 5);
}

/// With `commit_on_caller`, writers that overlap share commits and never lose or reorder an
/// event, while a lone writer commits on its own thread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_on_caller_mixes_lone_and_concurrent_writers() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let options = openharness_store::RedbOptions::default().commit_on_caller(true);
    let store = RedbStore::open_with(dir.path().join("store.redb"), options).expect("open");
    let lone = SessionId::new();
    for seq in 0..10 {
        store
            .append(&lone, &[event(seq)], seq)
            .await
            .expect("append");
    }
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let session = SessionId::new();
            for seq in 0..25 {
                store.append(&session, &[event(seq)], seq).await?;
            }
            Ok::<_, StoreError>(session)
        }));
    }
    for task in tasks {
        let session = task.await.expect("the task ran").expect("every append");
        let events = store.all_events(&session).await.expect("read");
        let numbers: Vec<u64> = events
            .iter()
            .map(|e| e.payload["n"].as_u64().unwrap_or(99))
            .collect();
        assert_eq!(numbers, (0..25).collect::<Vec<_>>());
    }
    for seq in 10..20 {
        store
            .append(&lone, &[event(seq)], seq)
            .await
            .expect("append");
    }
    assert_eq!(store.all_events(&lone).await.expect("read").len(), 20);
}

/// The id index is written in batches (the ids of a session's latest events wait in memory);
/// retries and repeated ids are recognised wherever the stored event sits: in the index, in
/// the waiting tail, or in a tail read back after reopening.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_and_repeated_ids_are_found_on_both_sides_of_the_index_watermark() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let mut batches: Vec<(u64, Vec<Envelope>)> = Vec::new();
    let mut len = 0;
    let mut random = SplitMix::new(0x2545_f491_4f6c_dd1d);
    let mut next = |n: u64| random.below(n);
    for round in 0..3 {
        // Each round reopens the store, so the waiting ids must be read back from the file.
        let store = RedbStore::open_with(
            &path,
            openharness_store::RedbOptions::default().commit_on_caller(round % 2 == 0),
        )
        .expect("open");
        for _ in 0..40 {
            let size = 1 + next(4);
            let batch: Vec<Envelope> = (len..len + size).map(event).collect();
            assert_eq!(
                store.append(&session, &batch, len).await.expect("append"),
                len + size
            );
            batches.push((len, batch));
            len += size;

            // A retry of any earlier batch stores nothing and reports the length it had.
            let (at, earlier) = &batches[next(batches.len() as u64) as usize];
            assert_eq!(
                store.append(&session, earlier, *at).await.expect("a retry"),
                at + earlier.len() as u64
            );
            // Any stored id appended at the end is refused.
            let (_, earlier) = &batches[next(batches.len() as u64) as usize];
            let repeated = earlier[next(earlier.len() as u64) as usize].clone();
            let refused = store.append(&session, &[repeated], len).await;
            assert!(
                matches!(refused, Err(StoreError::Invalid(_))),
                "{refused:?}"
            );
        }
        assert_eq!(
            store.all_events(&session).await.expect("read").len() as u64,
            len
        );
    }
    assert!(
        len > 200,
        "the session crossed the index watermark several times: {len}"
    );

    // Clearing removes every id, indexed or waiting: the first batch can be appended again.
    let store = RedbStore::open(&path).expect("open");
    store.clear(&session).await.expect("clear");
    let (_, first) = &batches[0];
    assert_eq!(
        store
            .append(&session, first, 0)
            .await
            .expect("append after clear"),
        first.len() as u64
    );
}

/// Appends sent together to one session, so they often meet in one group commit: an append
/// that moves the index watermark owes the index its ids until after the journal's answer, and
/// a retry in the same group must still find them, as must every retry after the group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_in_the_group_that_moves_the_index_watermark_find_its_ids() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let store = RedbStore::open(&path).expect("open");
    let mut random = openharness_testkit::random::SplitMix::new(0x5eed_0f9a_7e00);
    let mut batches: Vec<(u64, Vec<Envelope>)> = Vec::new();
    let mut len = 0;
    while len < 400 {
        let size = 1 + random.below(8);
        let batch: Vec<Envelope> = (len..len + size).map(event).collect();
        // Up to three earlier batches retried in the same breath as the new one.
        let retry = |earlier: Option<(u64, Vec<Envelope>)>| {
            let (store, session) = (store.clone(), session.clone());
            async move {
                let (at, earlier) = earlier?;
                let result = store.append(&session, &earlier, at).await;
                Some((at + earlier.len() as u64, result))
            }
        };
        let mut pick =
            || (!batches.is_empty()).then(|| batches[random.pick(batches.len())].clone());
        let (appended, first, second, third) = tokio::join!(
            store.append(&session, &batch, len),
            retry(pick()),
            retry(pick()),
            retry(pick()),
        );
        assert_eq!(appended.expect("append"), len + size);
        for (expected, result) in [first, second, third].into_iter().flatten() {
            assert_eq!(result.expect("a retry"), expected);
        }
        batches.push((len, batch));
        len += size;
    }
    // Every batch, retried after the last group and after reopening: each is found, none is
    // stored twice.
    retry_all(&store, &session, &batches, "a late retry").await;
    assert_eq!(
        store.all_events(&session).await.expect("read").len() as u64,
        len
    );
    drop(store);
    let store = RedbStore::open(&path).expect("reopen");
    retry_all(&store, &session, &batches, "a retry after reopening").await;
}

/// Appends every batch again at its position: each must report the length it left.
async fn retry_all(
    store: &RedbStore,
    session: &SessionId,
    batches: &[(u64, Vec<Envelope>)],
    what: &str,
) {
    for (at, batch) in batches {
        assert_eq!(
            store.append(session, batch, *at).await.expect(what),
            at + batch.len() as u64
        );
    }
}

/// Without a journal, small appends are staged in commit order and moved to the per-session
/// table in bulk; large batches skip staging. Reads, metadata and clearing see one session
/// whichever way its events went, before and after a compaction and across reopening (with a
/// journal, which the reopened store has, every event goes straight to the per-session table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staged_direct_and_compacted_events_read_as_one_session() {
    staged_direct_and_compacted(RedbOptions::default().journal(false)).await;
}

/// The same appends with a journal: all of them straight to the per-session table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journaled_events_read_as_one_session() {
    staged_direct_and_compacted(RedbOptions::default()).await;
}

async fn staged_direct_and_compacted(options: RedbOptions) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let (a, b) = (SessionId::new(), SessionId::new());
    let mut expected: Vec<Envelope> = Vec::new();
    let mut other: Vec<Envelope> = Vec::new();
    {
        let store = RedbStore::open_with(&path, options).expect("open");
        // Interleave two sessions' single events (staged), a large batch (direct), and enough
        // events in all to cross the compaction threshold more than once.
        for round in 0..3u64 {
            for n in 0..50 {
                let event = event(round * 1000 + n);
                let len = expected.len() as u64;
                store
                    .append(&a, std::slice::from_ref(&event), len)
                    .await
                    .expect("append a");
                expected.push(event);
                let event = event_for_b(n);
                let len = other.len() as u64;
                store
                    .append(&b, std::slice::from_ref(&event), len)
                    .await
                    .expect("append b");
                other.push(event);
            }
            let batch: Vec<Envelope> = (0..40).map(|n| event(round * 1000 + 500 + n)).collect();
            let len = expected.len() as u64;
            store.append(&a, &batch, len).await.expect("a large batch");
            expected.extend(batch);
            check(&store, &a, &expected).await;
            check(&store, &b, &other).await;
        }
        // A few staged events left over when the store closes.
        let event = event(9999);
        let len = expected.len() as u64;
        store
            .append(&a, std::slice::from_ref(&event), len)
            .await
            .expect("append");
        expected.push(event);
    }
    let store = RedbStore::open(&path).expect("reopen");
    check(&store, &a, &expected).await;
    check(&store, &b, &other).await;
    let len = expected.len() as u64;
    assert_eq!(
        store
            .append(&a, &[event(10_000)], len)
            .await
            .expect("append"),
        len + 1
    );

    // Clearing removes stored and staged events and their ids alike.
    store.clear(&b).await.expect("clear");
    assert!(
        store
            .events(&b, 0..u64::MAX)
            .await
            .expect("read")
            .is_empty()
    );
    assert_eq!(store.session(&b).await.expect("read"), None);
    assert_eq!(
        store
            .append(&b, &other[..3], 0)
            .await
            .expect("append again"),
        3
    );
    assert_eq!(store.all_events(&b).await.expect("read"), other[..3]);
    assert_eq!(store.events(&a, 0..len).await.expect("read"), expected);
}

fn event_for_b(n: u64) -> Envelope {
    Envelope::new("test:other", json!({ "n": n }), None)
}

/// Every range read, the metadata and the listing agree with what was appended.
async fn check(store: &RedbStore, session: &SessionId, expected: &[Envelope]) {
    let len = expected.len() as u64;
    assert_eq!(store.all_events(session).await.expect("read"), expected);
    for (from, to) in [
        (0, 1),
        (3, 77),
        (len / 2, len),
        (len - 1, len + 10),
        (len, len + 1),
    ] {
        let (from, to) = (from.min(len), to);
        let want = &expected[from as usize..to.min(len) as usize];
        assert_eq!(
            store.events(session, from..to).await.expect("read"),
            want,
            "{from}..{to}"
        );
    }
    let info = store.session(session).await.expect("read").expect("stored");
    assert_eq!(info.count, len);
    assert_eq!(Some(info.last_event), expected.last().map(|e| e.timestamp));
    let listed = store.sessions().await.expect("list");
    let mine = listed.iter().find(|i| &i.id == session).expect("listed");
    assert_eq!(mine, &info);
}

#[tokio::test]
async fn readers_open_beside_the_writer_see_its_commits_and_a_second_writer_is_named_the_holder() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    let shared = RedbOptions::default().share_with_readers(true);
    let writer = RedbStore::open_with(&path, shared).expect("the writer");
    let read_only = || RedbStore::open_with(&path, RedbOptions::default().read_only(true));
    let (first, second) = (
        read_only().expect("a reader beside the writer"),
        read_only().expect("another reader"),
    );
    let session = SessionId::new();
    writer
        .append(&session, &[event(0), event(1)], 0)
        .await
        .expect("append");
    for reader in [&first, &second] {
        assert_eq!(reader.all_events(&session).await.expect("read").len(), 2);
        assert!(matches!(
            RedbError::of(
                &reader
                    .append(&session, &[event(2)], 2)
                    .await
                    .expect_err("a reader does not write")
            ),
            Some(RedbError::ReadOnly { .. })
        ));
    }
    writer
        .append(&session, &[event(2)], 2)
        .await
        .expect("append");
    assert_eq!(first.all_events(&session).await.expect("read").len(), 3);

    let refused = RedbStore::open(&path).expect_err("one writer at a time");
    match RedbError::of(&refused) {
        Some(RedbError::AlreadyOpen { holders, .. }) if cfg!(target_os = "linux") => {
            assert_eq!(
                holders,
                &[format!("this process (pid {})", std::process::id())]
            );
        }
        Some(RedbError::AlreadyOpen { .. }) => {}
        other => panic!("{other:?}"),
    }
    assert!(
        refused.to_string().contains("share_with_readers"),
        "{refused}"
    );
}

#[tokio::test]
async fn a_writer_keeps_the_file_to_itself_by_default_and_when_it_defers_durability() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("store.redb");
    drop(RedbStore::open(&path).expect("create"));
    let deferred = RedbOptions::default()
        .share_with_readers(true)
        .durability(RedbDurability::TurnEnd);
    for options in [RedbOptions::default(), deferred] {
        let writer = RedbStore::open_with(&path, options).expect("the writer");
        let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true));
        assert!(
            matches!(
                reader.as_ref().map_err(RedbError::of),
                Err(Some(RedbError::AlreadyOpen { .. }))
            ),
            "{reader:?}"
        );
        drop(writer);
    }
    let first = RedbStore::open_with(&path, RedbOptions::default().read_only(true));
    let second = RedbStore::open_with(&path, RedbOptions::default().read_only(true));
    assert!(
        first.is_ok() && second.is_ok(),
        "readers share with readers"
    );
}

/// The journal lives beside the file while a writer has it alone, is checkpointed away as the
/// records pass the threshold and when the store closes, and is never made for a writer that
/// shares the file or turned it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_is_beside_an_exclusive_writer_only_and_gone_after_a_clean_close() {
    let dir = tempfile::tempdir().expect("the journal test");
    let path = dir.path().join("store.redb");
    let journal = dir.path().join("store.redb-journal");
    let session = SessionId::new();
    {
        let options = RedbOptions::default().journal_checkpoint(2048);
        let store = RedbStore::open_with(&path, options).expect("the journal test");
        assert!(!journal.exists(), "made before the first append");
        store
            .append(&session, &[event(0)], 0)
            .await
            .expect("the journal test");
        assert!(journal.exists());
        for seq in 1..200 {
            store
                .append(&session, &[event(seq)], seq)
                .await
                .expect("the journal test");
        }
        // 200 records of about 200 bytes with a checkpoint every 2 KiB: the journal restarted
        // from its start many times and stayed at its first size.
        assert_eq!(
            std::fs::metadata(&journal).expect("the journal test").len(),
            1 << 20
        );
    }
    assert!(!journal.exists(), "a clean close removes the journal");
    let store = RedbStore::open(&path).expect("the journal test");
    assert_eq!(
        store
            .all_events(&session)
            .await
            .expect("the journal test")
            .len(),
        200
    );
    drop(store);

    for options in [
        RedbOptions::default().journal(false),
        RedbOptions::default().share_with_readers(true),
        RedbOptions::default().durability(RedbDurability::TurnEnd),
    ] {
        let store = RedbStore::open_with(&path, options.clone()).expect("the journal test");
        store.append(&session, &[event(200)], 200).await.ok();
        assert!(!journal.exists(), "{options:?} made a journal");
    }
}

/// The file's length in bytes.
fn file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).expect("the file").len()
}

/// Appends 40 batches of 50 events with 1 KB payloads: enough to make redb grow the file.
async fn grow(store: &RedbStore, session: &SessionId) {
    let padding = "x".repeat(1000);
    for batch in 0..40_u64 {
        let events: Vec<Envelope> = (0..50)
            .map(|n| Envelope::new("grown", json!({ "n": n, "padding": padding }), None))
            .collect();
        store
            .append(session, &events, batch * 50)
            .await
            .expect("append");
    }
}

#[tokio::test]
async fn a_small_file_that_grew_is_compacted_when_the_store_closes() {
    // The same writes closed with and without compaction. (Not the file's length before the
    // close against after it: the journal's checkpoint, which moves its events into the file,
    // may still be under way when the length is read, and the close finishes it.)
    let dir = tempfile::tempdir().expect("a temporary directory");
    let session = SessionId::new();
    let mut closed = Vec::new();
    for compact in [true, false] {
        let path = dir.path().join(format!("compact-{compact}.redb"));
        let store = RedbStore::open_with(&path, RedbOptions::default().compact_on_close(compact))
            .expect("open");
        grow(&store, &session).await;
        store.sync().await.expect("sync");
        drop(store);
        closed.push(file_len(&path));
        let store = RedbStore::open(&path).expect("reopen");
        assert_eq!(
            store.all_events(&session).await.expect("read").len(),
            2000,
            "compaction keeps every event"
        );
    }
    let [compacted, kept] = closed[..] else {
        unreachable!("two runs")
    };
    assert!(
        compacted < kept,
        "closed with compaction: {compacted} bytes; without: {kept} bytes"
    );
}

/// With the journal, an append is answered once its record is durable, while redb's commit is
/// still under way: every read right after an append still sees it (reads wait for that
/// commit), from concurrent writers too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_right_after_a_journaled_append_sees_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = RedbStore::open(dir.path().join("store.redb")).expect("open");
    let mut writers = Vec::new();
    for _ in 0..2 {
        let store = store.clone();
        writers.push(tokio::spawn(async move {
            let session = SessionId::new();
            for seq in 0..300_u64 {
                let event = Envelope::new("tick:counted", json!({ "n": seq }), None);
                store
                    .append(&session, std::slice::from_ref(&event), seq)
                    .await
                    .expect("append");
                let read = store.events(&session, seq..seq + 1).await.expect("read");
                assert_eq!(read.len(), 1, "the append at {seq} is read right after it");
                assert_eq!(read[0].id, event.id);
            }
        }));
    }
    for writer in writers {
        writer.await.expect("a writer");
    }
}
