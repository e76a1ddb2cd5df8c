//! Damaged store files: a [`RedbStore`] opened on a randomly damaged copy of a real store file
//! answers every operation with a typed error or a consistent answer, and never panics.
//!
//! The test builds one store (sessions with staged, compacted and directly written events,
//! snapshots, a forked session), then checks many damaged copies of it: bytes flipped, pages
//! zeroed, the file truncated, a page copied over another. Each copy is opened and every read
//! operation plus an append and a snapshot run on it inside `catch_unwind`; a panic that
//! reaches the caller fails the test and names the seed. `OPENHARNESS_FUZZ_CASES` sets the
//! number of copies (default 200); `OPENHARNESS_FUZZ_SEED` checks one seed only.
//!
//! redb panics on some damaged data (an invalid UTF-8 key, a bad slice range); the store
//! contains those panics. The panic hook below counts them, so the summary printed at the end
//! tells how many copies made redb panic and how many of those reached the caller.

use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store, adapter::Snapshot};
use openharness_store::{RedbError, RedbOptions, RedbStore};
use openharness_testkit::random::SplitMix;
use serde_json::json;

/// Panics seen by the hook (contained or not), and the last one's message.
static PANICS: AtomicUsize = AtomicUsize::new(0);
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

const PAGE: usize = 4096;

fn event(name: &'static str, n: u64) -> Envelope {
    Envelope::new(
        name,
        json!({ "n": n, "text": format!("event number {n}") }),
        None,
    )
}

/// Builds the store file every case damages; the sessions in it.
async fn build(path: &Path) -> Vec<SessionId> {
    // Without a journal, so that small appends are staged (with one, every event goes
    // straight to `events`).
    let store = RedbStore::open_with(path, RedbOptions::default().journal(false))
        .expect("create the store");
    let sessions: Vec<SessionId> = (0..6).map(|_| SessionId::new()).collect();
    let mut lens = vec![0u64; sessions.len()];
    // A large batch goes straight to `events`.
    let mut batch = vec![Envelope::new(
        "workflow:started",
        json!({ "workflow": "fuzz" }),
        None,
    )];
    batch.extend((1..40).map(|n| event("test:appended", n)));
    lens[0] = store
        .append(&sessions[0], &batch, 0)
        .await
        .expect("a direct batch");
    // Small appends, interleaved: staged, compacted once 128 are staged, some left staged.
    for round in 0..30u64 {
        for (index, session) in sessions.iter().enumerate() {
            let events = if lens[index] == 0 && index == 3 {
                vec![Envelope::new(
                    "session:forked",
                    json!({ "parent": sessions[0], "at": 5 }),
                    None,
                )]
            } else {
                vec![event("test:appended", round)]
            };
            lens[index] = store
                .append(session, &events, lens[index])
                .await
                .expect("a small append");
        }
    }
    for (index, session) in sessions.iter().enumerate().step_by(2) {
        store
            .snapshot(
                session,
                &Snapshot::new(lens[index] / 2, json!({ "at": index })),
            )
            .await
            .expect("a snapshot");
    }
    sessions
}

/// A damaged copy of `original` for `seed`, and what was done to it.
fn damage(original: &[u8], seed: u64) -> (Vec<u8>, String) {
    let mut rng = SplitMix::new(seed);
    let mut bytes = original.to_vec();
    let pages = bytes.len() / PAGE;
    let how = match seed % 4 {
        0 => {
            let count = 1 + rng.below(16);
            for _ in 0..count {
                let at = rng.pick(bytes.len());
                bytes[at] ^= 1 + rng.below(255) as u8;
            }
            format!("{count} bytes flipped")
        }
        1 => {
            let count = 1 + rng.below(3);
            for _ in 0..count {
                let page = rng.pick(pages);
                bytes[page * PAGE..(page + 1) * PAGE].fill(0);
            }
            format!("{count} pages zeroed")
        }
        2 => {
            let len = rng.pick(bytes.len());
            bytes.truncate(len);
            format!("truncated to {len} bytes")
        }
        _ => {
            let (from, to) = (rng.pick(pages), rng.pick(pages));
            let page = bytes[from * PAGE..(from + 1) * PAGE].to_vec();
            bytes[to * PAGE..(to + 1) * PAGE].copy_from_slice(&page);
            format!("page {from} copied over page {to}")
        }
    };
    (bytes, how)
}

/// What a case found, for the summary.
#[derive(Default)]
struct Tally {
    opened: usize,
    ok_reads: usize,
    appended: usize,
}

/// Runs every operation on the store at `path`, asserting that each answer is consistent.
async fn check(path: &Path, sessions: &[SessionId], seed: u64, tally: &mut Tally) {
    let options = RedbOptions::default().commit_on_caller(seed.is_multiple_of(3));
    let store = match RedbStore::open_with(path, options) {
        Ok(store) => store,
        Err(err) => {
            assert!(RedbError::of(&err).is_some(), "open: {err:?}");
            return;
        }
    };
    tally.opened += 1;
    if let Ok(listed) = store.sessions().await {
        tally.ok_reads += 1;
        for info in &listed {
            if let Ok(events) = store.all_events(&info.id).await {
                assert_eq!(events.len() as u64, info.count, "listed {}", info.id);
            }
        }
    }
    for session in sessions {
        let info = store.session(session).await;
        let events = store.all_events(session).await;
        if let (Ok(Some(info)), Ok(events)) = (&info, &events) {
            assert_eq!(events.len() as u64, info.count, "session {session}");
        }
        let mut streamed = store.stream_events(session, 0..u64::MAX);
        let (mut next, mut failed) = (0, false);
        while let Some(recorded) = streamed.next().await {
            match recorded {
                Ok(recorded) => {
                    assert_eq!(recorded.seq, next, "stream of {session}");
                    next += 1;
                }
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        if let Ok(events) = &events {
            tally.ok_reads += 1;
            if !failed {
                assert_eq!(next, events.len() as u64, "stream of {session}");
            }
        }
        let _ = store.latest_snapshot(session, u64::MAX).await;
        if let Ok(mut subscription) = store.subscribe(session, 0).await {
            let wanted = events.as_ref().map_or(1, |events| events.len().max(1));
            let mut next = 0;
            while next < wanted {
                match tokio::time::timeout(Duration::from_secs(5), subscription.next()).await {
                    Ok(Some(Ok(recorded))) => {
                        assert_eq!(recorded.seq, next as u64, "subscription of {session}");
                        next += 1;
                    }
                    _ => break,
                }
            }
        }
        let len = match &events {
            Ok(events) => events.len() as u64,
            Err(_) => 0,
        };
        let fresh = event("test:after-damage", len);
        if let Ok(new_len) = store
            .append(session, std::slice::from_ref(&fresh), len)
            .await
        {
            tally.appended += 1;
            assert_eq!(new_len, len + 1);
            if let Ok(events) = store.events(session, len..new_len).await {
                assert_eq!(events, [fresh], "the appended event reads back");
            }
        }
        let _ = store
            .snapshot(session, &Snapshot::new(0, json!({ "after": "damage" })))
            .await;
    }
}

#[test]
fn damaged_files_never_panic() {
    let cases: u64 = std::env::var("OPENHARNESS_FUZZ_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(200);
    let only: Option<u64> = std::env::var("OPENHARNESS_FUZZ_SEED")
        .ok()
        .and_then(|value| value.parse().ok());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let original_path = dir.path().join("original.redb");
    let sessions = runtime.block_on(build(&original_path));
    let original = std::fs::read(&original_path).expect("read the store file");

    // Count panics instead of printing them: redb's contained panics would flood the output.
    std::panic::set_hook(Box::new(|info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
    }));
    let mut tally = Tally::default();
    let (mut panicking_cases, mut escaped) = (0, Vec::new());
    let seeds: Vec<u64> = match only {
        Some(seed) => vec![seed],
        None => (0..cases).collect(),
    };
    for &seed in &seeds {
        let (bytes, how) = damage(&original, seed);
        let path = dir.path().join(format!("case-{seed}.redb"));
        std::fs::write(&path, &bytes).expect("write a damaged copy");
        let before = PANICS.load(Ordering::SeqCst);
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            runtime.block_on(check(&path, &sessions, seed, &mut tally));
        }));
        if PANICS.load(Ordering::SeqCst) > before {
            panicking_cases += 1;
        }
        if outcome.is_err() {
            let message = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
            escaped.push(format!("seed {seed} ({how}): {message}"));
        }
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::panic::take_hook();
    eprintln!(
        "damaged copies: {}; opened {}; consistent reads {}; appends {}; \
         copies where redb panicked (contained or not) {panicking_cases}; escaped {}",
        seeds.len(),
        tally.opened,
        tally.ok_reads,
        tally.appended,
        escaped.len()
    );
    assert!(
        escaped.is_empty(),
        "panics reached the caller (rerun one with OPENHARNESS_FUZZ_SEED=N):\n{}",
        escaped.join("\n")
    );
}
