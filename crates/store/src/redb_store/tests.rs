//! Unit tests of the redb store that reach inside it: damaged records, error messages, the
//! journal's refusals.

#![allow(clippy::unwrap_used)]

use super::*;
use openharness_core::adapter::Snapshot;
use serde_json::json;

/// A journal whose record cannot be applied (here: it starts past the session's end) fails
/// every open, readers' included, with an error naming the journal, and is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_that_does_not_fit_fails_the_open_and_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    {
        let store = RedbStore::open(&path).unwrap();
        let event = Envelope::new("test:appended", json!({}), None);
        store.append(&session, &[event], 0).await.unwrap();
    }
    let journal_path = journal::path_of(&path);
    {
        // The clean close checkpointed at lsn 1; record 2 claims seq 5 of a 1-event session.
        let mut journal = journal::Journal::new(&journal_path, 2);
        let event = Envelope::new("test:appended", json!({}), None);
        let records = vec![(
            event.id.as_uuid().as_u128(),
            serde_json::to_vec(&event).unwrap(),
        )];
        journal.group().add(&session, 5, &records);
        journal.commit().unwrap();
    }
    let before = std::fs::read(&journal_path).unwrap();
    for options in [
        RedbOptions::default(),
        RedbOptions::default().read_only(true),
    ] {
        let err = RedbStore::open_with(&path, options).unwrap_err();
        assert!(
            matches!(RedbError::of(&err), Some(RedbError::Journal { message, .. }) if message.contains("record 2 does not fit")),
            "{err:?}"
        );
        assert!(err.to_string().contains("store.redb-journal"), "{err}");
    }
    assert_eq!(std::fs::read(&journal_path).unwrap(), before);
}

#[test]
fn store_path_prefers_the_environment() {
    assert_eq!(store_path_from(None), Path::new(RedbStore::DEFAULT_PATH));
    assert_eq!(
        store_path_from(Some("".into())),
        Path::new(RedbStore::DEFAULT_PATH)
    );
    assert_eq!(
        store_path_from(Some("/x/y.redb".into())),
        Path::new("/x/y.redb")
    );
}

/// Overwrites one raw record, as a damaged file or a foreign writer might.
fn damage(store: &RedbStore, write: impl FnOnce(&redb::WriteTransaction)) {
    let txn = store.db.database().unwrap().begin_write().unwrap();
    write(&txn);
    txn.commit().unwrap();
}

#[tokio::test]
async fn only_a_writable_store_says_it_saves_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let store = RedbStore::open(&path).unwrap();
    assert!(store.saves_snapshots());
    drop(store);
    let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true)).unwrap();
    assert!(!reader.saves_snapshots());
}

#[tokio::test]
async fn a_fold_read_leaves_out_the_payloads_it_does_not_fold() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("store.redb")).unwrap();
    let session = SessionId::new();
    // A batch this long goes straight to the events' table, where the damage below goes.
    let events: Vec<Envelope> = (0..staging::DIRECT_BATCH)
        .map(|n| {
            let name = if n == 1 {
                "agent:started"
            } else {
                "task:completed"
            };
            Envelope::new(name, json!({ "n": n }), None)
        })
        .collect();
    store.append(&session, &events, 0).await.unwrap();
    let folds = |name: &str| name == "task:completed";
    let read = store.events_for_fold(&session, 0..3, folds).await.unwrap();
    assert_eq!(read.len(), 3);
    let payloads: Vec<_> = read.iter().map(|event| event.payload.clone()).collect();
    assert_eq!(
        payloads,
        [json!({ "n": 0 }), json!(null), json!({ "n": 2 })]
    );
    let ids: Vec<_> = read.iter().map(|event| event.id).collect();
    assert_eq!(
        ids,
        events[..3].iter().map(|event| event.id).collect::<Vec<_>>()
    );
    // A payload left out is not parsed: a damaged one does not fail the fold's read.
    damage(&store, |txn| {
        let mut table = txn.open_table(EVENTS).unwrap();
        let mut bytes = record::encode(&events[1]).unwrap();
        bytes.truncate(bytes.len() - 2);
        table
            .insert((session.as_str(), 1), bytes.as_slice())
            .unwrap();
    });
    assert_eq!(
        store
            .events_for_fold(&session, 0..3, folds)
            .await
            .unwrap()
            .len(),
        3
    );
    let err = store.events(&session, 0..3).await.unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { seq: 1, .. }), "{err:?}");
}

#[tokio::test]
async fn corrupt_records_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(dir.path().join("store.redb")).unwrap();
    let session = SessionId::new();
    // A batch this long goes straight to the events' table, where the damage below goes (a
    // shorter one would still be staged, and the damaged record read as a second copy).
    let events: Vec<Envelope> = (0..staging::DIRECT_BATCH)
        .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
        .collect();
    let len = events.len() as u64;
    store.append(&session, &events, 0).await.unwrap();

    damage(&store, |txn| {
        let mut table = txn.open_table(EVENTS).unwrap();
        table
            .insert((session.as_str(), 1), b"{not json".as_slice())
            .unwrap();
    });
    let err = store.all_events(&session).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::Corrupt { session: s, seq: 1, .. } if s == &session),
        "{err:?}"
    );
    // The record itself failed to parse (not, say, a second copy of a staged event).
    let message = err.to_string();
    assert!(message.contains("not a valid envelope"), "{message}");
    // Reads that avoid the damaged record still work.
    assert_eq!(store.events(&session, 2..3).await.unwrap(), events[2..3]);

    damage(&store, |txn| {
        let mut table = txn.open_table(SESSIONS).unwrap();
        table.insert(session.as_str(), b"[]".as_slice()).unwrap();
    });
    // An append made after reopening reads the damaged record back (this store keeps the
    // record it wrote in memory).
    let path = store.path().to_path_buf();
    let reads = [store.session(&session).await.map(|_| ())];
    // The listing shows the session from its events (its first one here), not an error.
    let listed = store.sessions().await.unwrap();
    assert_eq!(
        (listed.len(), listed[0].count, listed[0].created),
        (1, len, events[0].timestamp)
    );
    drop(store);
    let store = RedbStore::open(&path).unwrap();
    let fresh = Envelope::new("test:appended", json!({ "n": len }), None);
    let append = store.append(&session, &[fresh], len).await.map(|_| ());
    for result in reads.into_iter().chain([append]) {
        let err = result.unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
        assert!(err.to_string().contains("metadata"), "{err}");
    }
    // Clearing removes the damage, and the index entries of every event, even the one whose
    // damaged record hides its id: the same events can be appended again from 0.
    store.clear(&session).await.unwrap();
    assert!(store.sessions().await.unwrap().is_empty());
    assert_eq!(store.append(&session, &events, 0).await.unwrap(), len);
    // The usual path, where every event names its id, clears the index too.
    store.clear(&session).await.unwrap();
    assert_eq!(store.append(&session, &events, 0).await.unwrap(), len);
    assert_eq!(store.all_events(&session).await.unwrap(), events);
}

#[tokio::test]
async fn backend_errors_name_the_file_and_operation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let store = RedbStore::open(&path).unwrap();
    // Drop a table so the read fails inside redb.
    let txn = store.db.database().unwrap().begin_write().unwrap();
    txn.delete_table(EVENTS).unwrap();
    txn.commit().unwrap();
    let session: SessionId = "s-1".parse().unwrap();
    let err = store.events(&session, 0..1).await.unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("read of session s-1"), "{message}");
}

/// With the journal, a snapshot is saved by a group commit and made durable by its record:
/// readable at once, in the journal before the store is closed, refused past its session's
/// end like any store's, and saved again from the journal when the file lacks it (the state a
/// crash leaves: redb's commit of it was not durable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journaled_snapshot_is_readable_at_once_and_saved_again_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let journal_path = journal::path_of(&path);
    let session = SessionId::new();
    let last_lsn = {
        let store = RedbStore::open(&path).unwrap();
        let events: Vec<_> = (0..3)
            .map(|i| Envelope::new("test:appended", json!({ "i": i }), None))
            .collect();
        store.append(&session, &events, 0).await.unwrap();
        store
            .snapshot(&session, &Snapshot::new(2, json!({"at": 2})))
            .await
            .unwrap();
        let latest = store.latest_snapshot(&session, 3).await.unwrap().unwrap();
        assert_eq!((latest.position, latest.state), (2, json!({"at": 2})));
        let records = journal::read(&journal_path).unwrap();
        let journaled: Vec<_> = records.iter().flat_map(|r| &r.snapshots).collect();
        assert_eq!(journaled.len(), 1);
        assert_eq!(
            (journaled[0].position, journaled[0].state.as_slice()),
            (2, br#"{"at":2}"#.as_slice())
        );
        for (target, position) in [(&session, 4), (&SessionId::new(), 0)] {
            let refused = store
                .snapshot(target, &Snapshot::new(position, json!({})))
                .await
                .unwrap_err();
            assert!(
                matches!(&refused, StoreError::Invalid(message) if message.contains("cannot save a snapshot")),
                "{refused:?}"
            );
        }
        records.last().unwrap().lsn
    };
    // A record past the clean close's checkpoint, as a crash leaves it: one snapshot that fits
    // and one past the session's end, which is skipped.
    {
        let mut journal = journal::Journal::new(&journal_path, last_lsn + 1);
        let mut group = journal.group();
        group.add_snapshot(&session, 3, br#"{"at":3}"#);
        group.add_snapshot(&session, 9, br#"{"at":9}"#);
        journal.commit().unwrap();
    }
    let store = RedbStore::open(&path).unwrap();
    let latest = store
        .latest_snapshot(&session, u64::MAX)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((latest.position, latest.state), (3, json!({"at": 3})));
    let earlier = store.latest_snapshot(&session, 2).await.unwrap().unwrap();
    assert_eq!(earlier.position, 2);
}

/// The writer thread is handed the payloads of only the events that can name the session's
/// workflow or parent; the record it keeps learns both all the same.
#[test]
fn the_writer_gets_only_the_payloads_the_session_record_reads() {
    let session = SessionId::new();
    let started = Envelope::new("workflow:started", json!({ "workflow": "race" }), None);
    let forked = Envelope::new(
        "session:forked",
        json!({ "parentSessionId": SessionId::new(), "forkIndex": 3, "workflow": "race" }),
        None,
    );
    let other = Envelope::new(
        "task:completed",
        json!({ "index": 1, "result": "ok" }),
        None,
    );
    for event in [&started, &forked] {
        assert_eq!(&layout::SessionRecord::what_it_reads(event), event);
    }
    let light = layout::SessionRecord::what_it_reads(&other);
    assert_eq!(light.payload, serde_json::Value::Null);
    assert_eq!(
        (light.id, &light.name, light.timestamp, light.caused_by),
        (other.id, &other.name, other.timestamp, other.caused_by)
    );
    let events: Vec<Envelope> = [&other, &started, &forked]
        .into_iter()
        .map(layout::SessionRecord::what_it_reads)
        .collect();
    let record = layout::SessionRecord::start(&session, &events[0], &events);
    assert_eq!(record.workflow.as_deref(), Some("race"));
    assert!(record.parent.is_some());
}
