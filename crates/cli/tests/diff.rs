//! `openharness diff A B` and `fork --input`: a chat forked before its last question and asked
//! another one; forks of forks compared through their lineage; identical sessions agree.
#![allow(clippy::unwrap_used, missing_docs)]

use std::process::Output;

use serde_json::Value;

mod binary;
use binary::openharness;

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn a_fork_asked_another_question_parts_from_its_parent_where_the_question_was() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo", "chat"]).status.success());
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let chat = sessions[0]["id"].as_str().unwrap().to_owned();
    // Position 11 is right before the third question's `user:input`.
    let forked = json(&openharness(
        dir.path(),
        &[
            "fork",
            &chat,
            "--at",
            "11",
            "--input",
            "Where can I hear fado?",
            "--json",
        ],
    ));
    let fork = forked["session"].as_str().unwrap().to_owned();
    let events = json(&openharness(dir.path(), &["events", &fork, "--json"]));
    let asked: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "user:input")
        .map(|e| e["payload"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["Where can I hear fado?"]);

    let compared = json(&openharness(dir.path(), &["diff", &chat, &fork, "--json"]));
    assert_eq!(compared["ancestor"]["session"], chat.as_str());
    assert_eq!(compared["ancestor"]["bFrom"], 11);
    assert_eq!(compared["agree"], 11);
    assert_eq!(compared["divergence"]["a"]["name"], "user:input");
    assert_eq!(
        compared["divergence"]["a"]["payload"]["text"],
        "And where should I eat in the evening?"
    );
    assert!(
        compared["divergence"]["statePatch"]
            .as_array()
            .is_some_and(|p| !p.is_empty())
    );

    // A fork of the fork, compared with the chat: the lineage goes through the first fork.
    let again = json(&openharness(
        dir.path(),
        &["fork", &fork, "--at", "2", "--json"],
    ));
    let grandchild = again["session"].as_str().unwrap().to_owned();
    let compared = json(&openharness(
        dir.path(),
        &["diff", &chat, &grandchild, "--json"],
    ));
    assert_eq!(compared["ancestor"]["session"], chat.as_str());
    assert_eq!(compared["agree"], 11);
    let compared = json(&openharness(
        dir.path(),
        &["diff", &fork, &grandchild, "--json"],
    ));
    assert_eq!(compared["ancestor"]["session"], fork.as_str());
    assert!(compared["agree"].as_u64().unwrap() >= 12, "{compared}");

    // A session against itself agrees; the text says so.
    let same = openharness(dir.path(), &["diff", &chat, &chat]);
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(text.contains("they agree: every event matches"), "{text}");
    let missing = openharness(dir.path(), &["diff", &chat, "no-such-session"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("not found"));
}

#[test]
fn replay_re_executes_with_todays_code_and_shows_what_changed_as_patches() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let demo = sessions[0]["id"].as_str().unwrap().to_owned();
    let same = openharness(dir.path(), &["replay", &demo]);
    let text = String::from_utf8_lossy(&same.stdout);
    assert!(same.status.success(), "{text}");
    assert!(text.contains("today's code records the same"), "{text}");

    // A fork re-executes as a fork of its parent, which the replay copies beside it.
    let fork = json(&openharness(
        dir.path(),
        &[
            "fork",
            &demo,
            "--after",
            "task:started",
            "--nth",
            "2",
            "--json",
        ],
    ));
    let replayed = json(&openharness(
        dir.path(),
        &["replay", fork["session"].as_str().unwrap(), "--json"],
    ));
    assert_eq!(replayed["matched"], true, "{replayed}");

    // A recording made by older code: its first executor prompt said something else.
    let export = openharness(dir.path(), &["export", &demo]);
    let mut changed = false;
    let old: Vec<String> = String::from_utf8_lossy(&export.stdout)
        .lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            if !changed
                && event["name"] == "agent:started"
                && event["payload"]["agentName"] == "executor"
            {
                let prompt = event["payload"]["prompt"]
                    .as_str()
                    .unwrap()
                    .replace("You are", "You were");
                event["payload"]["prompt"] = Value::String(prompt);
                changed = true;
            }
            event.to_string()
        })
        .collect();
    assert!(changed);
    std::fs::write(dir.path().join("old.jsonl"), old.join("\n") + "\n").unwrap();
    assert!(
        openharness(dir.path(), &["--store", "old.redb", "import", "old.jsonl"])
            .status
            .success()
    );
    let parted = json_even_failed(&openharness(
        dir.path(),
        &["--store", "old.redb", "replay", &demo, "--json"],
    ));
    assert_eq!(parted["matched"], false);
    let divergence = &parted["divergence"];
    assert_eq!(divergence["recorded"]["name"], "agent:started");
    assert_eq!(divergence["payloadPatch"][0]["path"], "/prompt");
    assert!(
        divergence["payloadPatch"][0]["value"]
            .as_str()
            .unwrap()
            .starts_with("You are an executor")
    );
    assert_eq!(divergence["statePatch"], serde_json::json!([]));
    // The user's store gained nothing from the replay.
    let listed = json(&openharness(
        dir.path(),
        &["--store", "old.redb", "sessions", "--json"],
    ));
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

/// The JSON a command printed, whatever its exit code.
fn json_even_failed(output: &Output) -> Value {
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
