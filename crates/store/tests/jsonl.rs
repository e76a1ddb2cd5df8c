//! JSONL export/import: round trips between backends, idempotent re-import, and errors that
//! name the line.
#![allow(clippy::unwrap_used)]

use std::ops::Range;

use openharness_core::{Envelope, SessionId, Store, StoreError, adapter::EVENT_PAGE};
use openharness_store::jsonl::{self, TransferError};
use openharness_store::{MemoryStore, Observed, RedbStore, StoreCall, StoreObserver};
use serde_json::json;

fn events(count: u64) -> Vec<Envelope> {
    (0..count)
        .map(|n| {
            Envelope::new(
                "test:appended",
                json!({ "n": n, "text": "a\nb \"c\" ✓" }),
                None,
            )
        })
        .collect()
}

#[tokio::test]
async fn round_trip_from_redb_to_memory_and_reimport_stores_once() {
    let dir = tempfile::tempdir().unwrap();
    let redb = RedbStore::open(dir.path().join("store.redb")).unwrap();
    let (a, b) = (SessionId::new(), SessionId::new());
    let long = events(2 * jsonl::BATCH as u64 + 17);
    redb.append(&a, &long, 0).await.unwrap();
    redb.append(&b, &events(3), 0).await.unwrap();

    let mut file = Vec::new();
    assert_eq!(
        jsonl::export(&redb, &a, &mut file).await.unwrap(),
        long.len() as u64
    );
    jsonl::export(&redb, &b, &mut file).await.unwrap();
    let text = String::from_utf8(file.clone()).unwrap();
    // One event per line, between a begin and an end line per session.
    assert_eq!(text.lines().count(), long.len() + 3 + 4);
    assert!(
        text.lines().all(|l| l.starts_with("{\"session\":")),
        "{text}"
    );

    let memory = MemoryStore::new();
    let summary = jsonl::import(&memory, file.as_slice()).await.unwrap();
    // The end line seals the block with its chain head, which the import checked.
    let head = summary.blocks[1].chain.unwrap();
    let last = text.lines().last().unwrap();
    assert_eq!(
        last,
        format!("{{\"session\":\"{b}\",\"end\":true,\"count\":3,\"chain\":\"{head}\"}}")
    );
    assert_eq!(summary.events, long.len() as u64 + 3);
    assert_eq!(
        summary.sessions,
        vec![(a.clone(), long.len() as u64), (b.clone(), 3)]
    );
    assert_eq!(memory.all_events(&a).await.unwrap(), long);
    assert_eq!(
        memory.session(&b).await.unwrap(),
        redb.session(&b).await.unwrap()
    );

    // Importing the same file again is a retry: nothing is stored twice.
    jsonl::import(&memory, file.as_slice()).await.unwrap();
    assert_eq!(memory.all_events(&a).await.unwrap().len(), long.len());
}

fn line(session: &SessionId, seq: u64) -> String {
    let event = Envelope::new("test:appended", json!({ "seq": seq }), None);
    let mut value = serde_json::to_value(&event).unwrap();
    value["session"] = json!(session);
    value["seq"] = json!(seq);
    value.to_string()
}

#[tokio::test]
async fn malformed_input_names_the_line() {
    let store = MemoryStore::new();
    let s = SessionId::new();

    let bad_json = format!("{}\n\n{{not json\n", line(&s, 0));
    let err = jsonl::import(&store, bad_json.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 3, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with("line 3: not an event line"),
        "{err}"
    );

    let missing = format!("{}\n{{\"session\":\"{s}\",\"seq\":1}}\n", line(&s, 0));
    let err = jsonl::import(&MemoryStore::new(), missing.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 2, .. }),
        "{err}"
    );

    let gap = format!("{}\n{}\n{}\n", line(&s, 0), line(&s, 1), line(&s, 3));
    let err = jsonl::import(&MemoryStore::new(), gap.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::OutOfOrder {
                line: 3,
                expected: 2,
                found: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("line 3"), "{err}");

    // A session that already holds other events is a conflict, naming the first line and seq.
    let target = MemoryStore::new();
    target.append(&s, &events(2), 0).await.unwrap();
    let fresh = format!("{}\n{}\n", line(&s, 0), line(&s, 1));
    let err = jsonl::import(&target, fresh.as_bytes()).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::Diverged {
                line: 1,
                seq: 0,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(target.all_events(&s).await.unwrap().len(), 2);
}

#[tokio::test]
async fn exporting_an_unknown_session_is_an_error() {
    let store = MemoryStore::new();
    let err = jsonl::export(&store, &SessionId::new(), Vec::new())
        .await
        .unwrap_err();
    assert!(matches!(err, TransferError::NotFound { .. }), "{err:?}");
}

/// Fails the reads of a store from seq `fail_from` on, and counts its appends.
#[derive(Default)]
struct BrokenReads {
    fail_from: u64,
    appends: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl StoreObserver for BrokenReads {
    async fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        match call {
            StoreCall::Events { range, .. } if range.start >= self.fail_from => {
                Err(StoreError::Invalid(format!("read from {}", range.start)))
            }
            StoreCall::Append { .. } => {
                self.appends
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Streams page through `events`, so their reads fail too.
    fn observes_reads(&self) -> bool {
        true
    }
}

/// A memory store whose reads fail from seq `fail_from` on.
fn broken_reads(fail_from: u64) -> Observed<MemoryStore, BrokenReads> {
    let reads = BrokenReads {
        fail_from,
        ..BrokenReads::default()
    };
    Observed::new(MemoryStore::new(), reads)
}

#[tokio::test]
async fn a_read_failing_mid_export_is_a_store_error_after_the_pages_before_it() {
    let store = broken_reads(EVENT_PAGE as u64);
    let session = SessionId::new();
    store
        .append(&session, &events(EVENT_PAGE as u64 + 5), 0)
        .await
        .unwrap();
    let mut out = Vec::new();
    let err = jsonl::export(&store, &session, &mut out).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::Store {
                line: None,
                source: StoreError::Invalid(_),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("memory"), "{err}");
    // The begin line and the first page were written before the failing read, and no end line.
    let text = String::from_utf8(out).unwrap();
    assert_eq!(text.lines().count(), 1 + EVENT_PAGE);
    assert!(!text.contains("\"end\""));
}

fn line_named(session: &SessionId, seq: u64, name: &str) -> String {
    let mut value: serde_json::Value = serde_json::from_str(&line(session, seq)).unwrap();
    value["name"] = json!(name);
    value.to_string()
}

fn lines(session: &SessionId, seqs: Range<u64>) -> String {
    seqs.map(|seq| format!("{}\n", line(session, seq)))
        .collect()
}

#[tokio::test]
async fn a_bad_line_late_in_a_session_stores_nothing_of_it_and_is_named() {
    let (s, other) = (SessionId::new(), SessionId::new());
    // A good session first, then one whose line 2300 of 2500 is bad.
    let mut text = format!(
        "{{\"session\":\"{other}\",\"begin\":true}}\n{}{{\"session\":\"{other}\",\"end\":true,\"count\":3}}\n",
        lines(&other, 0..3)
    );
    text.push_str(&lines(&s, 0..2297));
    text.push_str(&format!("{}\n", line_named(&s, 2297, "")));
    text.push_str(&lines(&s, 2298..2500));
    let store = MemoryStore::new();
    let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 2303, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("empty"), "{err}");
    assert!(
        store.all_events(&s).await.unwrap().is_empty(),
        "half a session"
    );
    // A session whose end line came before the bad line is stored whole.
    assert_eq!(store.all_events(&other).await.unwrap().len(), 3);
}

#[tokio::test]
async fn bad_names_duplicate_ids_and_gaps_are_refused_naming_the_line() {
    let s = SessionId::new();
    let long = "a:".to_owned() + &"b".repeat(jsonl::MAX_NAME_BYTES - 1);
    for (name, what) in [
        ("", "empty"),
        (long.as_str(), "bytes"),
        ("task:\ndone", "control character"),
        ("task:\u{7f}", "control character"),
    ] {
        let text = format!("{}{}\n", lines(&s, 0..1), line_named(&s, 1, name));
        let store = MemoryStore::new();
        let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
        assert!(
            matches!(err, TransferError::Malformed { line: 2, .. }),
            "{name:?}: {err:?}"
        );
        assert!(err.to_string().contains(what), "{name:?}: {err}");
        assert!(store.all_events(&s).await.unwrap().is_empty());
    }
    // The longest allowed name imports.
    let ok = "a:".to_owned() + &"b".repeat(jsonl::MAX_NAME_BYTES - 2);
    let text = format!("{}\n", line_named(&s, 0, &ok));
    jsonl::import(&MemoryStore::new(), text.as_bytes())
        .await
        .unwrap();

    // The same event id twice in a session.
    let first = line(&s, 0);
    let mut twice: serde_json::Value = serde_json::from_str(&line(&s, 1)).unwrap();
    twice["id"] = serde_json::from_str::<serde_json::Value>(&first).unwrap()["id"].clone();
    let text = format!("{first}\n{twice}\n");
    let store = MemoryStore::new();
    let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
    assert!(
        matches!(err, TransferError::Malformed { line: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("twice"), "{err}");
    assert!(store.all_events(&s).await.unwrap().is_empty());

    // A gap after a full batch: nothing of the session is stored.
    let mut text = lines(&s, 0..1500);
    text.push_str(&lines(&s, 1501..1502));
    let store = MemoryStore::new();
    let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::OutOfOrder {
                line: 1501,
                expected: 1500,
                found: 1501,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(store.all_events(&s).await.unwrap().is_empty());
}

async fn export_of(store: &MemoryStore, session: &SessionId) -> String {
    let mut file = Vec::new();
    jsonl::export(store, session, &mut file).await.unwrap();
    String::from_utf8(file).unwrap()
}

#[tokio::test]
async fn a_truncated_export_is_refused_and_an_unmarked_file_still_imports() {
    let source = MemoryStore::new();
    let (s, t) = (SessionId::new(), SessionId::new());
    source.append(&s, &events(10), 0).await.unwrap();
    source.append(&t, &events(4), 0).await.unwrap();
    let file = export_of(&source, &s).await + &export_of(&source, &t).await;
    let all: Vec<&str> = file.lines().collect();

    // Cut at a line boundary, anywhere after the first session's events began: refused.
    for keep in [3, all.len() - 1, all.len() - 3] {
        let cut: String = all[..keep].iter().map(|l| format!("{l}\n")).collect();
        let store = MemoryStore::new();
        let err = jsonl::import(&store, cut.as_bytes()).await.unwrap_err();
        assert!(
            matches!(err, TransferError::Truncated { .. }),
            "keep {keep}: {err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains(&format!("ends after line {keep} without its end marker")),
            "{text}"
        );
    }
    // The first session of a file cut inside the second one is stored whole.
    let cut: String = all[..all.len() - 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect();
    let store = MemoryStore::new();
    jsonl::import(&store, cut.as_bytes()).await.unwrap_err();
    assert_eq!(
        store.all_events(&s).await.unwrap(),
        events_of(&source, &s).await
    );
    assert!(store.all_events(&t).await.unwrap().is_empty());

    // A count that disagrees is refused, naming the marker's line.
    let index = all.iter().position(|l| l.contains("\"end\"")).unwrap();
    let mut wrong: serde_json::Value = serde_json::from_str(all[index]).unwrap();
    wrong["count"] = json!(9);
    let mut changed = all.clone();
    let wrong = wrong.to_string();
    changed[index] = &wrong;
    let changed: String = changed.iter().map(|l| format!("{l}\n")).collect();
    let err = jsonl::import(&MemoryStore::new(), changed.as_bytes())
        .await
        .unwrap_err();
    assert!(
        matches!(err, TransferError::Count { line, count: 9, found: 10, .. } if line == index as u64 + 1),
        "{err:?}"
    );

    // A file from before the markers (event lines only) still imports.
    let old: String = all
        .iter()
        .filter(|l| l.contains("\"seq\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(old.lines().count(), 14);
    let store = MemoryStore::new();
    let summary = jsonl::import(&store, old.as_bytes()).await.unwrap();
    assert_eq!(summary.unmarked, vec![s.clone(), t.clone()]);
    assert_eq!(
        store.all_events(&s).await.unwrap(),
        events_of(&source, &s).await
    );
    assert_eq!(store.all_events(&t).await.unwrap().len(), 4);
    let summary = jsonl::import(&MemoryStore::new(), file.as_bytes())
        .await
        .unwrap();
    assert!(summary.unmarked.is_empty());
}

/// The import's verdict on `lines` (joined with line breaks): the error's line, seq and
/// problem, or `None` when it imports.
async fn chain_verdict(lines: &[String]) -> Option<(u64, Option<u64>, jsonl::ChainBreak)> {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    match jsonl::import(&MemoryStore::new(), text.as_bytes()).await {
        Ok(_) => None,
        Err(TransferError::Chain {
            line, seq, problem, ..
        }) => Some((line, seq, *problem)),
        Err(other) => panic!("not a chain error: {other:?}"),
    }
}

#[tokio::test]
async fn a_changed_line_breaks_the_chain_there_and_the_seal_is_checked() {
    use jsonl::ChainBreak;
    let source = MemoryStore::new();
    let s = SessionId::new();
    let mut recorded = events(6);
    recorded[3].state_hash = Some("ab".repeat(32));
    source.append(&s, &recorded, 0).await.unwrap();
    let file = export_of(&source, &s).await;
    let all: Vec<String> = file.lines().map(str::to_owned).collect();
    assert!(
        all[0].ends_with(r#""begin":true,"chain":"sha256"}"#),
        "{}",
        all[0]
    );
    assert!(
        all[7].contains(&format!(
            r#""stateHash":"{}","stateHashSeq":3}}"#,
            "ab".repeat(32)
        )),
        "the seal names the last state hash: {}",
        all[7]
    );
    assert_eq!(chain_verdict(&all).await, None);

    // One byte of the payload at seq 2 (line 4): that line, whatever follows.
    let mut changed = all.clone();
    changed[3] = changed[3].replacen(r#""n":2"#, r#""n":7"#, 1);
    assert_eq!(
        chain_verdict(&changed).await,
        Some((4, Some(2), ChainBreak::Mismatch))
    );
    // A line whose chain member was removed.
    let mut stripped = all.clone();
    let cut = stripped[5].rfind(r#","chain":"#).unwrap();
    stripped[5] = format!("{}}}", &stripped[5][..cut]);
    assert_eq!(
        chain_verdict(&stripped).await,
        Some((6, Some(4), ChainBreak::Unchained))
    );
    // A line copied from elsewhere in the chain (the line before the one it replaces, with
    // the seq it replaces): named where it stands.
    let mut moved = all.clone();
    moved[4] = moved[3].replacen(r#""seq":2"#, r#""seq":3"#, 1);
    assert_eq!(
        chain_verdict(&moved).await,
        Some((5, Some(3), ChainBreak::Mismatch))
    );
    // Without its begin line the block is still checked: its first event line has a value.
    let headless = all[1..].to_vec();
    assert_eq!(chain_verdict(&headless).await, None);
    let mut headless_changed = changed[1..].to_vec();
    assert_eq!(
        chain_verdict(&headless_changed).await,
        Some((3, Some(2), ChainBreak::Mismatch))
    );
    // ... and a first line without its value leaves the values after it undeclared.
    let cut = headless_changed[0].rfind(r#","chain":"#).unwrap();
    headless_changed[0] = format!("{}}}", &headless_changed[0][..cut]);
    assert_eq!(
        chain_verdict(&headless_changed).await,
        Some((2, Some(1), ChainBreak::Undeclared))
    );

    // The end line: another head, another seal.
    let mut head = all.clone();
    let value: String = head[7]
        .split(r#""chain":""#)
        .nth(1)
        .unwrap()
        .chars()
        .take(64)
        .collect();
    head[7] = head[7].replace(&value, &"0".repeat(64));
    assert!(matches!(
        chain_verdict(&head).await,
        Some((8, None, ChainBreak::Head { .. }))
    ));
    let mut seal = all.clone();
    seal[7] = seal[7].replace(r#""stateHashSeq":3"#, r#""stateHashSeq":4"#);
    assert_eq!(
        chain_verdict(&seal).await,
        Some((
            8,
            None,
            ChainBreak::Seal {
                field: "stateHashSeq",
                recorded: Some("4".into()),
                events: Some("3".into()),
            }
        ))
    );
    let text = TransferError::Chain {
        line: 4,
        session: s.clone(),
        seq: Some(2),
        problem: Box::new(ChainBreak::Mismatch),
    }
    .to_string();
    assert!(
        text.starts_with(&format!(
            "line 4: session {s}, seq 2: the line does not hash"
        )),
        "{text}"
    );

    // Told to ignore chains, the changed file imports, and no block says it has a chain.
    let text: String = changed.iter().map(|l| format!("{l}\n")).collect();
    let options = jsonl::ImportOptions::default().ignore_chain(true);
    let summary = jsonl::import_with(&MemoryStore::new(), text.as_bytes(), options, |_| {})
        .await
        .unwrap();
    assert_eq!(summary.events, 6);
    assert_eq!(summary.blocks[0].chain, None);

    // A file with every chain value removed is an export from before chains: it imports,
    // and its block says it has none.
    let unchained: String = all
        .iter()
        .map(|l| match l.rfind(r#","chain":"#) {
            Some(cut) => format!("{}}}\n", &l[..cut]),
            None => format!("{l}\n"),
        })
        .collect();
    let store = MemoryStore::new();
    let summary = jsonl::import(&store, unchained.as_bytes()).await.unwrap();
    assert_eq!(summary.blocks[0].chain, None);
    assert_eq!(summary.blocks[0].state_hashes, 1);
    assert_eq!(events_of(&store, &s).await, recorded);
}

async fn events_of(store: &MemoryStore, session: &SessionId) -> Vec<Envelope> {
    store.all_events(session).await.unwrap()
}

#[tokio::test]
async fn reimporting_a_grown_export_appends_only_the_new_tail() {
    let (source, target) = (MemoryStore::new(), MemoryStore::new());
    let s = SessionId::new();
    // 1500 is not a multiple of the import batch.
    source.append(&s, &events(1500), 0).await.unwrap();
    let earlier = export_of(&source, &s).await;
    jsonl::import(&target, earlier.as_bytes()).await.unwrap();
    source.append(&s, &events(700), 1500).await.unwrap();
    let later = export_of(&source, &s).await;
    let summary = jsonl::import(&target, later.as_bytes()).await.unwrap();
    assert_eq!(summary.sessions, vec![(s.clone(), 2200)]);
    assert_eq!(summary.appended, 700);
    assert_eq!(events_of(&target, &s).await, events_of(&source, &s).await);
    // The earlier export into the grown target: nothing to do.
    let summary = jsonl::import(&target, earlier.as_bytes()).await.unwrap();
    assert_eq!(summary.appended, 0);
    assert_eq!(events_of(&target, &s).await.len(), 2200);

    // A target whose events differ from seq 1200 on: a conflict naming that seq, nothing stored.
    let other = MemoryStore::new();
    let mut mine = events_of(&source, &s).await[..1200].to_vec();
    mine.extend(events(50));
    other.append(&s, &mine, 0).await.unwrap();
    let err = jsonl::import(&other, later.as_bytes()).await.unwrap_err();
    assert!(
        matches!(
            err,
            TransferError::Diverged {
                seq: 1200,
                line: 1202,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("seq 1200"), "{err}");
    assert_eq!(events_of(&other, &s).await, mine);
}

#[tokio::test]
async fn interleaved_sessions_append_in_batches() {
    let store = broken_reads(u64::MAX);
    let (a, b) = (SessionId::new(), SessionId::new());
    let mut text = String::new();
    for seq in 0..2500 {
        text.push_str(&format!("{}\n{}\n", line(&a, seq), line(&b, seq)));
    }
    let summary = jsonl::import(&store, text.as_bytes()).await.unwrap();
    assert_eq!(summary.sessions, vec![(a.clone(), 2500), (b.clone(), 2500)]);
    let appends = store
        .observer()
        .appends
        .load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(appends, 2 * 3, "2 sessions of 2500 events, batches of 1000");
}

/// An append failing part way through a session's block: a new session is removed again, and
/// a session that held a prefix keeps what was appended, which a second import completes.
#[tokio::test]
async fn an_append_failing_part_way_removes_a_new_session_and_a_second_import_completes_a_grown_one()
 {
    use openharness_store::FailingStore;
    let session = SessionId::new();
    let text = lines(&session, 0..2500);

    // New session: the first batch of 1000 is stored, the second fails, the session goes.
    let store = FailingStore::fail_from(MemoryStore::new(), 2);
    let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
    match &err {
        TransferError::Interrupted {
            session: s,
            appended,
            removed,
            ..
        } => assert_eq!((s, *appended, *removed), (&session, 1000, true)),
        other => panic!("expected Interrupted, got {other:?}"),
    }
    assert!(err.to_string().contains("nothing of it is kept"), "{err}");
    assert!(store.inner().session(&session).await.unwrap().is_none());

    // A session that held a prefix keeps what was appended; importing again appends the rest.
    let store = FailingStore::fail_only(MemoryStore::new(), 3);
    let prefix: String = text.lines().take(500).map(|l| format!("{l}\n")).collect();
    jsonl::import(&store, prefix.as_bytes()).await.unwrap();
    let err = jsonl::import(&store, text.as_bytes()).await.unwrap_err();
    match &err {
        TransferError::Interrupted {
            appended, removed, ..
        } => assert_eq!((*appended, *removed), (1000, false)),
        other => panic!("expected Interrupted, got {other:?}"),
    }
    assert!(err.to_string().contains("import the file again"), "{err}");
    assert_eq!(
        store
            .inner()
            .session(&session)
            .await
            .unwrap()
            .unwrap()
            .count,
        1500
    );
    let summary = jsonl::import(&store, text.as_bytes()).await.unwrap();
    assert_eq!(summary.sessions, vec![(session.clone(), 2500)]);
    assert_eq!(
        store.inner().all_events(&session).await.unwrap().len(),
        2500
    );
}
