//! Recordings made before the wire format changed still load, fold, fork, project and
//! re-execute exactly as they did: `fixtures/format-1.jsonl` holds sessions exported by the
//! `openharness` of that time (the planner-executor demo with its approval, a fork of it, a
//! chat of three turns), and the snapshot pins what they gave then (except a fork inside an
//! agent call, which now runs the call again and finishes where it used to stop idle).
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::projection::{project_messages, to_ui_messages};
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::tape::{At, Cassette};
use openharness_example_chat as chat;
use openharness_example_planner_executor as planner;

const FIXTURE: &str = include_str!("fixtures/format-1.jsonl");

#[tokio::test]
async fn format_1_recordings_load_fold_fork_project_and_replay_as_before() {
    let store = MemoryStore::new();
    let summary = openharness::store::jsonl::import(&store, FIXTURE.as_bytes())
        .await
        .unwrap();
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions.len(), 3, "{summary:?}");
    let by_workflow = |name: &str| {
        sessions
            .iter()
            .find(|s| s.workflow.as_deref() == Some(name))
            .unwrap()
            .id
            .clone()
    };
    let demo = by_workflow(planner::WORKFLOW_NAME);
    let conversation = by_workflow(chat::WORKFLOW_NAME);
    let fork = sessions
        .iter()
        .find(|s| s.parent.is_some())
        .unwrap()
        .id
        .clone();

    let offline = ScriptedProvider::new();
    let planner = planner::workflow(store.clone(), offline.clone()).unwrap();
    let chatting = chat::workflow(store.clone(), offline.clone()).unwrap();

    // Fold: states along the demo's tape, the fork's and the chat's final states.
    let mut tape = planner.load(&demo).await.unwrap();
    let len = tape.len();
    let mut states = Vec::new();
    for position in [0, 10, 40, 69, len] {
        tape.step_to(position);
        states.push(serde_json::json!({ "position": position, "state": tape.state() }));
    }
    let mut forked = planner.load(&fork).await.unwrap();
    forked.step_to(forked.len());
    let mut talk = chatting.load(&conversation).await.unwrap();
    talk.step_to(talk.len());

    // Project: the chat's messages in both shapes (event ids as seqs, so the snapshot is
    // stable).
    let events = store.all_events(&conversation).await.unwrap();
    let ids: std::collections::HashMap<String, String> = events
        .iter()
        .enumerate()
        .map(|(seq, e)| (e.id.to_string(), format!("#{seq}")))
        .collect();
    let messages = project_messages(&events);
    let mut projected = serde_json::json!({
        "messages": messages,
        "ui": to_ui_messages(&messages),
    })
    .to_string();
    for (id, seq) in &ids {
        projected = projected.replace(id, seq);
    }
    let projected: serde_json::Value = serde_json::from_str(&projected).unwrap();

    // Fork again inside the second task's executor call: the fork runs that call again from
    // its start and the last task after it, with a model of its own, and waits for the
    // approval as the demo did.
    let finisher = ScriptedProvider::new().fallback(planner::Executor::NAME, |request| {
        let task = request.prompt.lines().nth(1).unwrap_or("the task");
        Reply::output(serde_json::json!({ "summary": format!("(fork) {task}") }))
    });
    let again = planner
        .with_provider(finisher.clone())
        .fork(&demo, At::position(40))
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    assert_eq!(finisher.calls(), 2, "the cut call and the last task");
    // Re-execute both recordings with no model.
    let replayed = Cassette::load(&planner, &demo)
        .await
        .unwrap()
        .replay(&planner, RunOptions::new())
        .await
        .unwrap();
    let chat_replayed = Cassette::load(&chatting, &conversation)
        .await
        .unwrap()
        .replay(&chatting, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(offline.calls(), 0, "no model was called");
    assert_eq!(
        serde_json::to_value(&replayed.state).unwrap(),
        serde_json::to_value(tape.state()).unwrap()
    );
    assert_eq!(
        serde_json::to_value(&chat_replayed.state).unwrap(),
        serde_json::to_value(talk.state()).unwrap()
    );

    insta::assert_json_snapshot!(serde_json::json!({
        "demo": { "len": len, "states": states },
        "fork": { "len": forked.len(), "state": forked.state() },
        "fork_again": { "reason": again.reason, "state": again.state },
        "chat": { "len": talk.len(), "state": talk.state(), "projected": projected },
    }));
}
