//! No false alarms: every recording kept in the repository (`tests/fixtures`,
//! `crates/*/tests/fixtures`, `examples/*/tests/fixtures`, `packages/e2e/fixtures`) and fresh
//! sessions of each example (the planner-executor answered yes and no, left waiting and forked;
//! the chat; the order ledger) go through the state check and the replay with the workflows
//! that recorded them, and nothing parts but what the recordings say differently on purpose
//! (listed below, with why).
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use openharness::host::{Host, Replayer, SessionQuery};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::tape::At;
use openharness::{Agent, Store};
use openharness_example_chat as chat;
use openharness_example_planner_executor as planner;
use openharness_planted_bugs::{ledger::Ledger, workflow};

/// Recordings of the repository that today's code re-executes otherwise, on purpose: the
/// session, the seq where the replay must part, and why.
const DIFFERENT_ON_PURPOSE: &[(&str, u64, &str)] = &[
    (
        "01a206fb-085d-7296-851f-f0a33a6ad382",
        1,
        "format-1's fork inside an agent call stopped idle; today a fork runs the cut call again (tests/wire_compat.rs)",
    ),
    (
        "01a20000-0000-7000-8000-00000000a001",
        68,
        "the browser tests' fixture marks the demo's question as an approval by hand (packages/e2e/server.ts)",
    ),
    (
        "01a20000-0000-7000-8000-00000000a002",
        68,
        "the same hand-marked approval",
    ),
    (
        "01a20000-0000-7000-8000-00000000a003",
        68,
        "the same hand-marked approval",
    ),
    (
        "01a20000-0000-7000-8000-00000000a004",
        68,
        "the same hand-marked approval",
    ),
    (
        "01a20000-0000-7000-8000-000000000001",
        2,
        "the browser tests' weather chat is written by hand (tools, a retry): today's chat asks with another prompt",
    ),
];

/// Recordings whose workflow is defined by the test that keeps them, which checks them (state
/// check and re-execution) with it: the file, and where.
const CHECKED_WHERE_RECORDED: &[(&str, &str)] = &[(
    "orders-v1.jsonl",
    "version 1 of tests/upcasts.rs's `shop` workflow, read there through today's upcasts",
)];

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `*.jsonl` recording under the repository's fixture folders, sorted.
fn fixtures() -> Vec<PathBuf> {
    let root = root();
    let mut folders = vec![
        root.join("tests/fixtures"),
        root.join("packages/e2e/fixtures"),
    ];
    for parent in ["crates", "examples"] {
        for entry in std::fs::read_dir(root.join(parent)).unwrap() {
            folders.push(entry.unwrap().path().join("tests/fixtures"));
        }
    }
    let mut files = Vec::new();
    for folder in folders.into_iter().filter(|f| f.is_dir()) {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let checked_where_recorded = CHECKED_WHERE_RECORDED
                .iter()
                .any(|(file, _)| path.file_name().is_some_and(|name| name == *file));
            if path.extension().is_some_and(|e| e == "jsonl") && !checked_where_recorded {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The planner-executor answering every call from its prompt (the demo's own script fits
/// only the demo's first run).
fn planner_offline() -> ScriptedProvider {
    ScriptedProvider::new()
        .fallback(planner::Planner::NAME, |_| {
            Reply::output(serde_json::json!({ "tasks": ["Review the plan", "Ship it"] }))
        })
        .fallback(planner::Executor::NAME, |request| {
            Reply::output(serde_json::json!({ "summary": format!("Done: {}", request.prompt) }))
        })
}

/// A host over `store` with every workflow that recorded the repository's sessions and the
/// examples', as today's code builds them.
fn host(store: &MemoryStore) -> Host {
    Host::new(store.clone())
        .workflow(planner::workflow(store.clone(), planner_offline()).unwrap())
        .unwrap()
        .workflow(chat::workflow(store.clone(), chat::scripted_provider()).unwrap())
        .unwrap()
        .workflow(workflow::<Ledger>().unwrap().with_store(store.clone()))
        .unwrap()
}

/// Replays every session of `store`: the state check of each (which must never part), and
/// the report of the whole run.
async fn replay_all(
    store: &MemoryStore,
) -> (Vec<(SessionId, u64)>, openharness::host::ReplayReport) {
    let host = host(store);
    let replayer = Replayer::new(host.clone()).jobs(2);
    let sessions = replayer.sessions(&SessionQuery::default()).await.unwrap();
    let mut checked = Vec::new();
    for summary in &sessions {
        let check = host.check_state(&summary.id).await.unwrap();
        assert_eq!(
            check.divergence, None,
            "the state check of {} (`{:?}`) parts",
            summary.id, summary.workflow
        );
        checked.push((summary.id.clone(), check.checked));
    }
    let report = replayer.run(sessions, |_, _| {}).await;
    (checked, report)
}

#[tokio::test]
async fn no_recording_of_the_repository_parts_but_where_it_says_otherwise_on_purpose() {
    let files = fixtures();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for known in [
        "format-1.jsonl",
        "state-hashes-1.jsonl",
        "approval-release.jsonl",
        "weather-chat.jsonl",
    ] {
        assert!(names.iter().any(|n| n == known), "{known} in {names:?}");
    }
    let mut parted = BTreeMap::new();
    let mut hashes_checked = BTreeMap::new();
    for file in &files {
        let store = MemoryStore::new();
        let text = std::fs::read_to_string(file).unwrap();
        openharness::store::jsonl::import(&store, text.as_bytes())
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", file.display()));
        let (checked, report) = replay_all(&store).await;
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        assert!(report.failed.is_empty(), "{name}: {:?}", report.failed);
        assert!(
            report.skipped.is_empty(),
            "{name}: every session is recorded by a workflow registered here: {:?}",
            report.skipped
        );
        if report.replayed == 0 {
            continue; // a file with no session in it (yet)
        }
        for session in &report.parted {
            assert_eq!(
                session.replayed.state_divergence,
                None,
                "{name}: {}",
                session.summary()
            );
            parted.insert(session.replayed.session.to_string(), session.seq);
        }
        hashes_checked.insert(name, checked);
    }
    let on_purpose: BTreeMap<String, u64> = DIFFERENT_ON_PURPOSE
        .iter()
        .map(|(session, seq, _)| ((*session).to_owned(), *seq))
        .collect();
    assert_eq!(parted, on_purpose, "sessions that part, and where");
    // The recordings made with state hashes had every hash reproduced, in another process
    // than the one that recorded them.
    let hashed = &hashes_checked["state-hashes-1.jsonl"];
    assert_eq!(hashed.len(), 5, "{hashed:?}");
    assert!(hashed.iter().all(|(_, n)| *n > 0), "{hashed:?}");
}

#[tokio::test]
async fn fresh_sessions_of_every_example_replay_with_their_states() {
    let store = MemoryStore::new();
    // The planner-executor's demo, answered yes, answered no, and left waiting.
    let mut demos = Vec::new();
    for answer in [Some("yes"), Some("no"), None] {
        let demo = planner::workflow(store.clone(), planner::scripted_provider()).unwrap();
        let waiting = demo
            .run(RunOptions::new().input(planner::DEMO_GOAL))
            .await
            .unwrap();
        if let Some(answer) = answer {
            demo.respond(
                &waiting.session,
                waiting.open_requests[0],
                answer,
                RunOptions::new(),
            )
            .await
            .unwrap();
        }
        demos.push(waiting.session);
    }
    // A fork of the first after its first task, run on to the question.
    let planner_wf = planner::workflow(store.clone(), planner_offline()).unwrap();
    let fork = planner_wf
        .fork(&demos[0], At::nth("task:completed", 1))
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    // The chat, three turns.
    let chatting = chat::workflow(store.clone(), chat::scripted_provider()).unwrap();
    let first = chatting
        .run(RunOptions::new().input(chat::DEMO_MESSAGES[0]))
        .await
        .unwrap();
    for message in &chat::DEMO_MESSAGES[1..] {
        chatting
            .send(&first.session, *message, RunOptions::new())
            .await
            .unwrap();
    }
    // The order ledger, every command.
    let orders = workflow::<Ledger>().unwrap().with_store(store.clone());
    let ledger = orders
        .run(RunOptions::new().input("order widget 2 1250"))
        .await
        .unwrap();
    for input in ["order gadget 1 500", "refund widget 1250", "hello"] {
        orders
            .send(&ledger.session, input, RunOptions::new())
            .await
            .unwrap();
    }

    let (checked, report) = replay_all(&store).await;
    assert_eq!(report.replayed, 6, "{report:?}");
    assert!(report.all_matched(), "{}", report.junit());
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    assert_eq!(checked.len(), 6);
    for (session, n) in &checked {
        assert!(*n > 0, "{session}: no state hash was checked");
    }
    assert!(checked.iter().any(|(s, _)| s == &fork.session));
    assert_eq!(store.sessions().await.unwrap().len(), 6);
}
