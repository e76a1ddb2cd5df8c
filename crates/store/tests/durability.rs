//! `RedbDurability`: what a crash keeps. A child process (this test binary, re-run with an
//! environment variable) appends to a store and aborts without closing it — as a kill would
//! leave it — then the parent opens the file and counts what survived.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use openharness_core::{Envelope, SessionId, Store};
use openharness_store::{RedbDurability, RedbOptions, RedbStore};

const CHILD: &str = "OPENHARNESS_DURABILITY_CHILD";
const SESSION: &str = "0190a8c4-5f00-7000-8000-0000000d0ab1";

fn event(n: u64) -> Envelope {
    Envelope::new("tick:counted", serde_json::json!({ "n": n }), None)
}

/// Runs the child: `mode` (`every`, `turn`, `turn-sync`, `periodic-wait`, `periodic-now`)
/// appends 5 events one by one to the store at `path`, then aborts.
fn crash_after(path: &Path, mode: &str) -> u64 {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process_that_appends_then_aborts",
            "--nocapture",
        ])
        .env(CHILD, format!("{mode}:{}", path.display()))
        .status()
        .unwrap();
    assert!(!status.success(), "the child aborts");
    let store = RedbStore::open(path).unwrap();
    let session: SessionId = SESSION.parse().unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(store.session(&session))
        .unwrap()
        .map_or(0, |info| info.count)
}

/// Only does something when run as the child of a test below.
#[test]
fn child_process_that_appends_then_aborts() {
    let Ok(task) = std::env::var(CHILD) else {
        return;
    };
    let (mode, path) = task.split_once(':').unwrap();
    let durability = match mode {
        "every" => RedbDurability::EveryAppend,
        "turn" | "turn-sync" => RedbDurability::TurnEnd,
        _ => RedbDurability::Periodic(Duration::from_millis(100)),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store =
            RedbStore::open_with(path, RedbOptions::default().durability(durability)).unwrap();
        let session: SessionId = SESSION.parse().unwrap();
        for n in 0..5 {
            store.append(&session, &[event(n)], n).await.unwrap();
        }
        // Every append is visible in the process at once, durable or not.
        assert_eq!(store.all_events(&session).await.unwrap().len(), 5);
        match mode {
            "turn-sync" => store.sync().await.unwrap(),
            "periodic-wait" => tokio::time::sleep(Duration::from_millis(400)).await,
            _ => {}
        }
        // A crash: no destructor runs, nothing is closed.
        std::process::abort();
    });
}

#[test]
fn a_crash_keeps_what_the_durability_promises() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(format!("{name}.redb"));
    assert_eq!(
        crash_after(&path("every"), "every"),
        5,
        "every append durable"
    );
    assert_eq!(
        crash_after(&path("turn"), "turn"),
        0,
        "a turn not synced is lost whole"
    );
    assert_eq!(
        crash_after(&path("turn-sync"), "turn-sync"),
        5,
        "sync at the turn's end makes it durable"
    );
    assert_eq!(
        crash_after(&path("periodic-wait"), "periodic-wait"),
        5,
        "the period passed: the writer made them durable on its own"
    );
    assert!(
        crash_after(&path("periodic-now"), "periodic-now") < 5,
        "within the period, the latest appends are not durable yet"
    );
}

#[test]
fn closing_the_store_makes_every_append_durable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("closed.redb");
    let session: SessionId = SESSION.parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let options = RedbOptions::default().durability(RedbDurability::TurnEnd);
        let store = RedbStore::open_with(&path, options).unwrap();
        for n in 0..3 {
            store.append(&session, &[event(n)], n).await.unwrap();
        }
    });
    let store = RedbStore::open(&path).unwrap();
    let count = runtime
        .block_on(store.session(&session))
        .unwrap()
        .map_or(0, |info| info.count);
    assert_eq!(count, 3);
}
