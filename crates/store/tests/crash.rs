//! Crash safety of RedbStore: a child process appends durably and prints an acknowledgement
//! after each append returns; the parent kills it with SIGKILL at random moments, 120 times,
//! and after every kill checks that the store opens cleanly, nothing is corrupt, and every
//! acknowledged event is stored at its seq, once. The kills take turns among four children:
//! a lone writer committing on its own thread ([`RedbOptions::commit_on_caller`]), four
//! sessions at once (group commits on the writer thread), the same with a journal checkpointed
//! every 4 KiB (so kills land in checkpoints and in the journal's restarts), and the same
//! without the journal (durable redb commits). Every fifth append is followed by a snapshot
//! (`snap <session> <position>` once saved): no acknowledged snapshot is lost either.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use openharness_core::{Envelope, SessionId, Store, StoreError};
use openharness_store::{RedbOptions, RedbStore, Snapshot};
use openharness_testkit::random::SplitMix;
use serde_json::json;

const CHILD_ENV: &str = "OPENHARNESS_TEST_CRASH_CHILD";
const KILLS: u32 = 120;

/// How many sessions the child appends to concurrently, so kills land inside group commits.
const SESSIONS: usize = 4;

/// The child: one task per session appends batches of 1 to 3 events forever, printing
/// `ack <session> <seq> <id>` for each event once its append has returned. In `group` mode it
/// appends to [`SESSIONS`] sessions through the writer thread, in `caller` mode to one, with
/// commits on the caller; `checkpoints` is `group` with a checkpoint every 4 KiB of journal,
/// `redb` is `group` without the journal. After every fifth append, each task saves a snapshot
/// whose state is `{"len": <its position>}` and prints `snap <session> <position>` once it is
/// saved. A no-op unless the crash test started this process.
#[test]
fn crash_child_appends_durably() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let [path, base, mode] = spec.split(' ').collect::<Vec<_>>()[..] else {
        panic!("bad child spec {spec:?}");
    };
    if mode == "clear" {
        return clear_then_wait(path, base);
    }
    let (sessions, options) = match mode {
        "caller" => (1, RedbOptions::default().commit_on_caller(true)),
        "checkpoints" => (SESSIONS, RedbOptions::default().journal_checkpoint(4096)),
        "redb" => (SESSIONS, RedbOptions::default().journal(false)),
        _ => (SESSIONS, RedbOptions::default()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = RedbStore::open_with(path, options).unwrap();
        println!();
        let mut tasks = Vec::new();
        for k in 0..sessions {
            let store = store.clone();
            let session: SessionId = format!("{base}-{k}").parse().unwrap();
            tasks.push(tokio::spawn(async move {
                let mut len = store
                    .session(&session)
                    .await
                    .unwrap()
                    .map_or(0, |i| i.count);
                for round in 0u64.. {
                    let batch: Vec<Envelope> = (0..1 + round % 3)
                        .map(|i| {
                            Envelope::new("test:appended", json!({ "round": round, "i": i }), None)
                        })
                        .collect();
                    let new_len = store.append(&session, &batch, len).await.unwrap();
                    for (event, seq) in batch.iter().zip(len..) {
                        println!("ack {k} {seq} {}", event.id);
                    }
                    len = new_len;
                    if round % 5 == 4 {
                        let snapshot = Snapshot::new(len, json!({ "len": len }));
                        store.snapshot(&session, &snapshot).await.unwrap();
                        println!("snap {k} {len}");
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}

/// The `clear` child: appends 5 events to `<base>-0` and 3 to `<base>-1`, clears `<base>-1`,
/// appends 2 new ones to it, prints `done` and waits to be killed (the journal still holds
/// every append: no checkpoint is due).
fn clear_then_wait(path: &str, base: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = RedbStore::open(path).unwrap();
        let kept: SessionId = format!("{base}-0").parse().unwrap();
        let cleared: SessionId = format!("{base}-1").parse().unwrap();
        let batch = |n: usize, what: &str| -> Vec<Envelope> {
            (0..n)
                .map(|i| Envelope::new("test:appended", json!({ "what": what, "i": i }), None))
                .collect()
        };
        store.append(&kept, &batch(5, "kept"), 0).await.unwrap();
        store.append(&cleared, &batch(3, "old"), 0).await.unwrap();
        store.clear(&cleared).await.unwrap();
        store.append(&cleared, &batch(2, "new"), 0).await.unwrap();
        println!("done");
        std::thread::sleep(Duration::from_secs(60));
    });
}

/// Starts this test binary as the child, appending to `path` in `mode` (`caller` or `group`).
fn spawn_child(
    path: &std::path::Path,
    session: &SessionId,
    mode: &str,
    stdout: Stdio,
) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "crash_child_appends_durably",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, format!("{} {session} {mode}", path.display()))
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn sigkill_loses_no_acknowledged_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let session = SessionId::new();
    let seed = SplitMix::seed_from_clock();
    let mut rng = SplitMix::new(seed);
    let mut acked: HashMap<(usize, u64), String> = HashMap::new();
    // The greatest position of an acknowledged snapshot, per session.
    let mut snapped: HashMap<usize, u64> = HashMap::new();
    let mut snapshots_acked = 0;
    let started = Instant::now();
    let runtime = tokio::runtime::Runtime::new().unwrap();

    let journal = dir.path().join("store.redb-journal");
    let mut journal_left = 0;
    for kill in 0..KILLS {
        let mode = ["caller", "group", "checkpoints", "redb"][kill as usize % 4];
        let mut child = spawn_child(&path, &session, mode, Stdio::piped());
        // Anywhere from before the store is open to well into the appends.
        std::thread::sleep(Duration::from_micros(rng.below(80_000)));
        child.kill().unwrap(); // SIGKILL on Unix
        let mut output = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut output)
            .unwrap();
        child.wait().unwrap();
        if journal.exists() {
            journal_left += 1;
        }
        for line in output.lines() {
            if let Some(snap) = line.strip_prefix("snap ")
                && let [k, position] = snap.split(' ').collect::<Vec<_>>()[..]
                && let (Ok(k), Ok(position)) = (k.parse::<usize>(), position.parse::<u64>())
            {
                let best = snapped.entry(k).or_default();
                *best = (*best).max(position);
                snapshots_acked += 1;
                continue;
            }
            let Some(ack) = line.strip_prefix("ack ") else {
                continue;
            };
            // The last line may be cut short by the kill; only whole lines count.
            let parts: Vec<&str> = ack.split(' ').collect();
            if let [k, seq, id] = parts[..]
                && id.len() == 36
            {
                acked.insert((k.parse().unwrap(), seq.parse().unwrap()), id.to_owned());
            }
        }

        runtime.block_on(async {
            // Every third kill, a reader comes first: the file the dead writer left unclean is
            // repaired for it and every acknowledged event read.
            if kill % 3 == 2 {
                let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true))
                    .unwrap_or_else(|err| panic!("after kill {kill}, no reader opens: {err}"));
                for k in 0..SESSIONS {
                    let session: SessionId = format!("{session}-{k}").parse().unwrap();
                    let held = reader.all_events(&session).await.map_or(0, |e| e.len());
                    let acked_here = acked.keys().filter(|(s, _)| *s == k).count();
                    assert!(
                        held >= acked_here,
                        "after kill {kill}: the reader lost events"
                    );
                }
            }
            let store = RedbStore::open(&path)
                .unwrap_or_else(|err| panic!("after kill {kill}, the store does not open: {err}"));
            for k in 0..SESSIONS {
                let session: SessionId = format!("{session}-{k}").parse().unwrap();
                let events = match store.all_events(&session).await {
                    Ok(events) => events,
                    Err(err @ StoreError::Corrupt { .. }) => panic!("after kill {kill}: {err}"),
                    Err(err) => panic!("after kill {kill}, reading failed: {err}"),
                };
                let count = store
                    .session(&session)
                    .await
                    .unwrap()
                    .map_or(0, |i| i.count);
                assert_eq!(
                    count,
                    events.len() as u64,
                    "after kill {kill}: metadata count"
                );
                // The id index survived too: the last stored event, appended again at its seq,
                // is a retry, and the first, appended at the end, is refused.
                if let (Some(first), Some(last)) = (events.first(), events.last()) {
                    let len = events.len() as u64;
                    let retry = store
                        .append(&session, std::slice::from_ref(last), len - 1)
                        .await;
                    assert_eq!(retry.ok(), Some(len), "after kill {kill}: a retry");
                    let repeated = store
                        .append(&session, std::slice::from_ref(first), len)
                        .await;
                    assert!(
                        matches!(repeated, Err(StoreError::Invalid(_))),
                        "after kill {kill}: a repeated id was not refused: {repeated:?}"
                    );
                }
                let distinct: std::collections::HashSet<_> =
                    events.iter().map(|event| event.id).collect();
                assert_eq!(
                    distinct.len(),
                    events.len(),
                    "after kill {kill}: an event is stored twice"
                );
                let lost: Vec<_> = acked
                    .iter()
                    .filter(|((s, seq), id)| {
                        *s == k
                            && usize::try_from(*seq)
                                .ok()
                                .and_then(|at| events.get(at))
                                .is_none_or(|event| event.id.to_string() != **id)
                    })
                    .collect();
                assert!(
                    lost.is_empty(),
                    "after kill {kill}: {} acknowledged events lost: {lost:?}",
                    lost.len()
                );
                // The last acknowledged snapshot (or a later one) is there, and whole.
                if let Some(&position) = snapped.get(&k) {
                    let latest = store
                        .latest_snapshot(&session, u64::MAX)
                        .await
                        .unwrap_or_else(|err| panic!("after kill {kill}, a snapshot: {err}"))
                        .unwrap_or_else(|| {
                            panic!("after kill {kill}: the snapshot at {position} was lost")
                        });
                    assert!(
                        latest.position >= position,
                        "after kill {kill}: the snapshot at {position} was lost (latest {})",
                        latest.position
                    );
                    assert_eq!(latest.state, json!({ "len": latest.position }));
                }
            }
        });
    }
    eprintln!(
        "{KILLS} SIGKILLs in {:.1?}: {} acknowledged events and {snapshots_acked} snapshots, \
         0 lost, 0 duplicated; {journal_left} left a journal to re-apply",
        started.elapsed(),
        acked.len()
    );
    assert!(!acked.is_empty(), "the child never acknowledged an append");
    // The journal's recovery was exercised, not only redb's.
    assert!(
        journal_left >= KILLS / 4,
        "only {journal_left} kills left a journal"
    );
}

/// A child killed while it creates a new store file leaves no file, or one that opens: never a
/// half-written file that every later open refuses. Each round uses a new folder and kills the
/// child within its first few milliseconds, around the moment the file is created.
#[test]
fn sigkill_while_creating_the_store_leaves_a_store_that_opens() {
    const ROUNDS: u32 = 25;
    let seed = SplitMix::seed_from_clock();
    let mut rng = SplitMix::new(seed);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mut missing, mut opened) = (0, 0);
    for round in 0..ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let mut child = spawn_child(&path, &SessionId::new(), "caller", Stdio::null());
        std::thread::sleep(Duration::from_micros(rng.below(6_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        if !path.exists() {
            missing += 1;
            continue;
        }
        let store = RedbStore::open(&path).unwrap_or_else(|err| {
            panic!("round {round}: the store left by the kill does not open: {err}")
        });
        runtime.block_on(async {
            for info in store.sessions().await.unwrap() {
                let events = store.all_events(&info.id).await.unwrap();
                assert_eq!(events.len() as u64, info.count, "round {round}");
            }
        });
        opened += 1;
    }
    eprintln!("{ROUNDS} kills while creating: {missing} left no file, {opened} a store that opens");
}

/// A writer killed with its appends in the journal only: a reader opening the file first gets
/// them re-applied, and a cleared session's old events do not come back with them.
#[test]
fn the_journal_is_applied_after_a_kill_and_a_clear_stays_cleared() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.redb");
    let base = SessionId::new();
    let mut child = spawn_child(&path, &base, "clear", Stdio::piped());
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    let mut byte = [0u8; 1];
    while !seen.contains("done") {
        assert_eq!(
            stdout.read(&mut byte).unwrap(),
            1,
            "the child ended early: {seen:?}"
        );
        seen.push(char::from(byte[0]));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(dir.path().join("store.redb-journal").exists());

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true)).unwrap();
        let kept: SessionId = format!("{base}-0").parse().unwrap();
        let cleared: SessionId = format!("{base}-1").parse().unwrap();
        assert_eq!(reader.all_events(&kept).await.unwrap().len(), 5);
        let events = reader.all_events(&cleared).await.unwrap();
        let what: Vec<_> = events.iter().map(|e| e.payload["what"].clone()).collect();
        assert_eq!(what, [json!("new"), json!("new")]);
        drop(reader);
        // Applied once: the journal is gone, and a writer finds the same.
        assert!(!dir.path().join("store.redb-journal").exists());
        let store = RedbStore::open(&path).unwrap();
        assert_eq!(store.all_events(&cleared).await.unwrap().len(), 2);
    });
}
