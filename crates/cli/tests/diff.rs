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
            // Older code wrote no hash chain (a changed line would not match it).
            if let Some(line) = event.as_object_mut() {
                line.remove("chain");
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

/// `replay --all`: every session of a store through today's code, with a JUnit report; then
/// exports whose recorded state hash today's handlers do not reproduce (another build's
/// handler computed another state, every event the same), read from a folder: the report
/// names the session, the position and the chain of causes, and the command exits 1.
#[test]
fn replay_all_runs_every_session_and_names_one_whose_state_parts() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    assert!(openharness(dir.path(), &["demo", "chat"]).status.success());
    let junit = dir.path().join("replay.xml");
    let all = openharness(
        dir.path(),
        &["replay", "--all", "--junit", junit.to_str().unwrap()],
    );
    let text = String::from_utf8_lossy(&all.stdout);
    assert!(all.status.success(), "{text}");
    assert!(
        text.contains("2 sessions replayed") && text.contains("2 matched, 0 parted"),
        "{text}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(r#"tests="2" failures="0" errors="0""#),
        "{xml}"
    );
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");

    // The demo as a build with another handler recorded it: one state hash differs.
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let demo = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["workflow"] == "planner-executor")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export = openharness(dir.path(), &["export", &demo]);
    let mut plan = None;
    let mut tampered = None;
    let lines: Vec<String> = String::from_utf8_lossy(&export.stdout)
        .lines()
        .map(|line| {
            let mut event: Value = serde_json::from_str(line).unwrap();
            if plan.is_none() && event["name"] == "plan:created" {
                plan = event["seq"].as_u64();
            }
            // The first hash recorded once the plan is folded in.
            if plan.is_some() && tampered.is_none() && event["stateHash"].is_string() {
                event["stateHash"] = Value::String("f".repeat(64));
                tampered = event["seq"].as_u64();
            }
            // Without its hash chain, which the changed hash would not match.
            if let Some(line) = event.as_object_mut() {
                line.remove("chain");
            }
            event.to_string()
        })
        .collect();
    let exports = dir.path().join("exports");
    std::fs::create_dir(&exports).unwrap();
    std::fs::write(exports.join("demo.jsonl"), lines.join("\n") + "\n").unwrap();
    let tampered = tampered.expect("a hash recorded after the plan");
    let parted = openharness(
        dir.path(),
        &[
            "replay",
            "--all",
            "--from",
            exports.to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(parted.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&parted.stdout).unwrap();
    assert_eq!(report["replayed"], 1, "{report}");
    assert_eq!(report["matched"], 0);
    let first = &report["parted"][0];
    assert_eq!(first["replayed"]["session"], demo.as_str());
    assert!(
        first["replayed"]["divergence"].is_null(),
        "every event matches: {first}"
    );
    let seq = first["replayed"]["stateDivergence"]["seq"]
        .as_u64()
        .unwrap();
    assert_eq!(seq, tampered, "the position of the hash that differs");
    assert_eq!(first["seq"], seq);
    // The handlers that changed the state since the last hash that matched: the plan's.
    let changed_by = first["replayed"]["stateDivergence"]["changedBy"]
        .as_array()
        .unwrap();
    assert_eq!(changed_by[0]["event"], "plan:created", "{first}");
    // The chain runs from the first of them back to the input that began it.
    let causes = first["causes"].as_array().unwrap();
    assert_eq!(causes[0]["seq"], changed_by[0]["seq"]);
    assert_eq!(causes.last().unwrap()["name"], "user:input", "{first}");
    // The user's store was not touched: it still has its two sessions, both matching.
    let again = openharness(dir.path(), &["replay", "--all"]);
    assert!(again.status.success());
}
