//! The acceptance flow of the `openharness` binary, as a new user runs it in an empty folder:
//! `demo`, then `sessions --json`, `events`, and `tape --at` at 0, at the end and past it.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::{Command, Output};

fn openharness(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(args)
        .current_dir(dir)
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "command failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(output)).unwrap()
}

#[test]
fn demo_then_sessions_events_and_tape() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&openharness(dir.path(), &["demo"]));
    assert!(
        demo.contains("planner started"),
        "shows agent names:\n{demo}"
    );
    assert!(
        demo.contains("3/3 tasks done"),
        "shows task counts:\n{demo}"
    );
    assert!(
        demo.contains("Three steps get a first release out"),
        "shows streamed text:\n{demo}"
    );
    assert!(
        dir.path().join(".openharness/store.redb").exists(),
        "records to the default store"
    );
    let session = demo
        .lines()
        .find_map(|l| {
            l.strip_prefix("Session ")
                .and_then(|rest| rest.split_whitespace().next())
        })
        .unwrap()
        .to_owned();

    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let listed = sessions.as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["workflow"], "planner-executor");
    let len = listed[0]["count"].as_u64().unwrap();

    let output = openharness(dir.path(), &["events", &session, "--json"]);
    let raw = stdout(&output);
    assert!(raw.starts_with("[\n  {\n    \"seq\": 0,\n"), "{raw}");
    assert!(raw.ends_with("\n  }\n]\n"), "{raw}");
    let events = json(&output);
    assert_eq!(events.as_array().unwrap().len() as u64, len);
    assert_eq!(events[0]["name"], "workflow:started");
    assert_eq!(events[0]["seq"], 0);
    assert_eq!(events[len as usize - 1]["seq"], len - 1);

    let human = stdout(&openharness(dir.path(), &["events", &session]));
    assert_eq!(human.lines().count() as u64, len, "{human}");
    assert!(human.starts_with("    0  workflow:started "), "{human}");

    let at0 = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", "0", "--json"],
    ));
    assert_eq!(at0["position"], 0);
    assert_eq!(at0["len"], len);
    assert!(at0["current"].is_null());
    assert_eq!(at0["state"]["tasks"], serde_json::json!([]));

    let end = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &len.to_string(), "--json"],
    ));
    assert_eq!(end["position"], len);
    assert_eq!(end["current"]["name"], "workflow:completed");
    assert_eq!(end["state"]["completed"], 3);

    let past = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &(len + 5).to_string(), "--json"],
    ));
    assert_eq!(past["position"], len, "clamps to len");
    assert_eq!(past["state"], end["state"]);

    let human = stdout(&openharness(dir.path(), &["tape", &session, "--at", "2"]));
    assert!(human.contains("position 2 of"), "{human}");
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let missing = openharness(dir.path(), &["tape", "no-such-session", "--at", "0"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no-such-session") && stderr.contains("not found"),
        "{stderr}"
    );

    let events = openharness(dir.path(), &["events", "no-such-session"]);
    assert!(!events.status.success());

    let empty = stdout(&openharness(dir.path(), &["sessions"]));
    assert!(empty.contains("No sessions yet"), "{empty}");

    let store = dir.path().join("elsewhere.redb");
    let demo = openharness(dir.path(), &["--store", store.to_str().unwrap(), "demo"]);
    stdout(&demo);
    assert!(store.exists(), "--store picks the file");
}
