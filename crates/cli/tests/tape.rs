//! `openharness tape` on a forked session (whose workflow is its parent's) and without a
//! terminal (the interactive debugger needs one, and says so).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;

use openharness::prelude::*;
use openharness::store::RedbStore;
use openharness::tape::{At, ForkSession};
use openharness_example_planner_executor as example;

mod binary;
use binary::openharness;

/// Records the demo and a fork of it at position 20 into `store.redb`; returns the parent,
/// the child and the parent's state at 20 as JSON.
async fn record_with_fork(path: &Path) -> (SessionId, SessionId, serde_json::Value) {
    let store = RedbStore::open(path).unwrap();
    let workflow = example::workflow(store, example::scripted_provider()).unwrap();
    let parent = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap()
        .session;
    let fork = workflow.fork(&parent, At::position(20)).await.unwrap();
    let state = serde_json::to_value(fork.state()).unwrap();
    let child = fork
        .run(RunOptions::new().max_events(3))
        .await
        .unwrap()
        .session;
    (parent, child, state)
}

#[test]
fn a_forked_session_opens_at_its_parents_state() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".openharness")).unwrap();
    let (parent, child, state) =
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(record_with_fork(
                &dir.path().join(".openharness/store.redb"),
            ));

    let sessions = openharness(dir.path(), &["sessions", "--json"]);
    assert!(sessions.status.success());
    let sessions: serde_json::Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let listed = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == child.as_str())
        .unwrap();
    assert_eq!(listed["parent"], parent.as_str());

    let at = openharness(dir.path(), &["tape", child.as_str(), "--at", "1", "--json"]);
    assert!(
        at.status.success(),
        "{}",
        String::from_utf8_lossy(&at.stderr)
    );
    let view: serde_json::Value = serde_json::from_slice(&at.stdout).unwrap();
    assert_eq!(view["current"]["name"], "session:forked");
    assert_eq!(view["state"], state);

    // Without --at and without a terminal, the debugger explains what it needs.
    let debugger = openharness(dir.path(), &["tape", child.as_str()]);
    assert!(!debugger.status.success());
    let stderr = String::from_utf8_lossy(&debugger.stderr);
    assert!(stderr.contains("needs a terminal"), "{stderr}");
}

#[test]
fn fork_runs_a_new_session_from_a_point_of_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let sessions = openharness(dir.path(), &["sessions", "--json"]);
    let sessions: serde_json::Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();

    let forked = openharness(
        dir.path(),
        &[
            "fork",
            &parent,
            "--after",
            "task:started",
            "--nth",
            "2",
            "--json",
        ],
    );
    assert!(
        forked.status.success(),
        "{}",
        String::from_utf8_lossy(&forked.stderr)
    );
    let forked: serde_json::Value = serde_json::from_slice(&forked.stdout).unwrap();
    assert_eq!(forked["parent"], parent.as_str());
    // The fork runs the remaining tasks and, like the demo, waits for approval to publish.
    assert_eq!(forked["reason"], "waiting_for_input");
    let child = forked["session"].as_str().unwrap();

    // The fork starts with the first task done and redoes the second one.
    let start = openharness(dir.path(), &["tape", child, "--at", "1", "--json"]);
    let start: serde_json::Value = serde_json::from_slice(&start.stdout).unwrap();
    assert_eq!(
        start["current"]["payload"]["parentSessionId"],
        parent.as_str()
    );
    assert_eq!(start["state"]["completed"], 1);
    let len = forked["len"].as_u64().unwrap().to_string();
    let end = openharness(dir.path(), &["tape", child, "--at", &len, "--json"]);
    let end: serde_json::Value = serde_json::from_slice(&end.stdout).unwrap();
    assert_eq!(end["state"]["completed"], 3);
    let redone = end["state"]["tasks"][1]["result"].as_str().unwrap();
    assert!(redone.starts_with("Done: Complete task 2 of 3"), "{redone}");

    // A fork point is required.
    let missing = openharness(dir.path(), &["fork", &parent]);
    assert!(!missing.status.success());
}

#[test]
fn tape_at_reports_what_the_fold_skipped_and_warns_once_per_kind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".openharness")).unwrap();
    let path = dir.path().join(".openharness/store.redb");
    let (session, len) = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = RedbStore::open(&path).unwrap();
        let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
        let session = workflow
            .run(RunOptions::new().input(example::DEMO_GOAL))
            .await
            .unwrap()
            .session;
        let len = store.session(&session).await.unwrap().unwrap().count;
        // Another version's event, twice, and a known name whose payload no longer decodes.
        let odd = [
            Envelope::new("plan:invented", serde_json::json!({}), None),
            Envelope::new("plan:invented", serde_json::json!({}), None),
            Envelope::new("plan:created", serde_json::json!({ "tasks": 7 }), None),
        ];
        store.append(&session, &odd, len).await.unwrap();
        (session, len)
    });

    let at = openharness(
        dir.path(),
        &["tape", session.as_str(), "--at", "3", "--json"],
    );
    let stderr = String::from_utf8_lossy(&at.stderr);
    assert!(at.status.success(), "{stderr}");
    let view: serde_json::Value = serde_json::from_slice(&at.stdout).unwrap();
    let skipped = &view["skipped"];
    assert_eq!(skipped["unknown"], 2, "{view}");
    assert_eq!(skipped["undecodable"], 1);
    assert_eq!(skipped["unknownAt"], serde_json::json!([len, len + 1]));
    assert_eq!(skipped["undecodableAt"][0]["seq"], len + 2);
    assert_eq!(skipped["undecodableAt"][0]["name"], "plan:created");
    // The warnings reach stderr, each (name, kind) once however often the tape folds.
    assert_eq!(stderr.matches("does not know").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("does not decode").count(), 1, "{stderr}");
    // stderr is a pipe here, not a terminal: no colour escapes in what a log file would keep.
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");

    let text = openharness(dir.path(), &["tape", session.as_str(), "--at", "3"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("skipped  3 events (1 undecodable)"),
        "{stdout}"
    );
}
