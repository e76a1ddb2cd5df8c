//! The CLI's readers while `openharness serve` writes the redb file: they read the file beside
//! it, a command that records is refused naming the server, and `--store http://ADDR` reads
//! the same sessions through
//! the server (sessions, events, tape, diff, export), live ones included; `send`, `respond`
//! and `cancel` ask the server to run or stop a turn (`send --on-busy` answers a turn running
//! there), other writes through it are refused, and a server with API keys is read with
//! `OPENHARNESS_API_KEY`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Output;

mod binary;
mod serving;
use binary::text;

fn openharness(dir: &Path, args: &[&str], key: Option<&str>) -> Output {
    let mut command = binary::command(dir);
    command.args(args);
    if let Some(key) = key {
        command.env("OPENHARNESS_API_KEY", key);
    }
    command.output().unwrap()
}

#[test]
fn readers_go_through_the_server_that_holds_the_store() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        openharness(dir.path(), &["demo", "chat"], None)
            .status
            .success()
    );
    let local = text(&openharness(dir.path(), &["sessions", "--json"], None));
    let listed: serde_json::Value = serde_json::from_str(&local).unwrap();
    let chat = listed[0]["id"].as_str().unwrap().to_owned();
    let events = text(&openharness(dir.path(), &["events", &chat, "--json"], None));
    let tape = text(&openharness(
        dir.path(),
        &["tape", &chat, "--at", "9", "--json"],
        None,
    ));

    let mut command = binary::command(dir.path());
    command.args(["serve", "--addr", "127.0.0.1:0"]);
    let (server, port, _) = serving::start_serve(command);
    let remote = format!("http://127.0.0.1:{port}");

    // The file is written by the server: readers open it beside it and read what it reads;
    // a command that records is refused, told who writes it.
    let beside = openharness(dir.path(), &["sessions", "--json"], None);
    assert!(beside.status.success(), "{}", text(&beside));
    let beside: serde_json::Value = serde_json::from_slice(&beside.stdout).unwrap();
    assert_eq!(beside[0]["id"], listed[0]["id"]);
    assert_eq!(beside[0]["count"], listed[0]["count"]);
    let held = openharness(dir.path(), &["send", &chat, "another question"], None);
    assert!(!held.status.success());
    let said = text(&held);
    assert!(said.contains("is being written by pid"), "{said}");
    assert!(said.contains("openharness serve"), "{said}");

    // Through the server: the same sessions, events and states.
    let through = |args: &[&str]| {
        let mut all = vec!["--store", remote.as_str()];
        all.extend_from_slice(args);
        openharness(dir.path(), &all, None)
    };
    let sessions: serde_json::Value =
        serde_json::from_str(&text(&through(&["sessions", "--json"]))).unwrap();
    assert_eq!(sessions[0]["id"], listed[0]["id"]);
    assert_eq!(sessions[0]["count"], listed[0]["count"]);
    assert_eq!(text(&through(&["events", &chat, "--json"])), events);
    assert_eq!(
        text(&through(&["tape", &chat, "--at", "9", "--json"])),
        tape
    );
    let diff = through(&["diff", &chat, &chat, "--json"]);
    assert!(diff.status.success(), "{}", text(&diff));
    let export = through(&["export", &chat]);
    assert!(export.status.success(), "{}", text(&export));
    let lines = String::from_utf8_lossy(&export.stdout).lines().count();
    assert_eq!(lines as u64, listed[0]["count"].as_u64().unwrap() + 2);

    // A turn is asked of the server, which runs and records it; nothing is created locally
    // for the URL. Other writes are not made through it.
    let sent = through(&["send", &chat, "another question"]);
    assert!(sent.status.success(), "{}", text(&sent));
    let said = text(&sent);
    assert!(
        said.contains("The server recorded the input at position"),
        "{said}"
    );
    assert!(said.contains("workflow:completed"), "{said}");
    let after: serde_json::Value =
        serde_json::from_str(&text(&through(&["sessions", "--json"]))).unwrap();
    assert!(after[0]["count"].as_u64() > listed[0]["count"].as_u64());
    let refused = through(&["fork", &chat, "--at", "2"]);
    assert!(!refused.status.success());
    assert!(text(&refused).contains("read-only"), "{}", text(&refused));
    assert!(!dir.path().join("http:").exists());
    drop(server);

    // Nobody listening: a clear error, not a panic.
    let nobody = through(&["sessions"]);
    assert!(!nobody.status.success());
    assert!(
        text(&nobody).contains("could not reach"),
        "{}",
        text(&nobody)
    );
}

#[test]
fn a_server_with_api_keys_is_read_with_openharness_api_key() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        openharness(dir.path(), &["demo", "chat"], None)
            .status
            .success()
    );
    std::fs::write(dir.path().join("keys"), "secret-key\n").unwrap();
    let mut command = binary::command(dir.path());
    command.args(["serve", "--addr", "127.0.0.1:0", "--api-keys-file", "keys"]);
    let (_server, port, _) = serving::start_serve(command);
    let remote = format!("http://127.0.0.1:{port}");
    let without = openharness(dir.path(), &["--store", &remote, "sessions"], None);
    assert!(!without.status.success());
    assert!(text(&without).contains("401"), "{}", text(&without));
    let with = openharness(
        dir.path(),
        &["--store", &remote, "sessions", "--json"],
        Some("secret-key"),
    );
    assert!(with.status.success(), "{}", text(&with));
    let sessions: serde_json::Value = serde_json::from_str(&text(&with)).unwrap();
    assert_eq!(sessions.as_array().unwrap().len(), 1);
}

/// Waits until the server runs a turn on `session`.
fn until_running(dir: &Path, remote: &str, session: &str) {
    for _ in 0..200 {
        let listed = openharness(dir, &["--store", remote, "sessions", "--json"], None);
        let sessions: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
        let running = sessions
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == session && s["status"] == "running");
        if running {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("the server never ran a turn on {session}");
}

#[test]
fn a_turn_running_in_the_server_takes_the_cli_s_second_input_and_stop() {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        openharness(dir.path(), &["demo", "chat"], None)
            .status
            .success()
    );
    let listed: serde_json::Value = serde_json::from_str(&text(&openharness(
        dir.path(),
        &["sessions", "--json"],
        None,
    )))
    .unwrap();
    let chat = listed[0]["id"].as_str().unwrap().to_owned();
    // The scripted model streams its reply over three seconds: a turn runs long enough to
    // be reached.
    let mut command = binary::command(dir.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "3000");
    let (_server, port, _) = serving::start_serve(command);
    let remote = format!("http://127.0.0.1:{port}");
    let through = |args: &[&str]| {
        let mut all = vec!["--store", remote.as_str()];
        all.extend_from_slice(args);
        openharness(dir.path(), &all, None)
    };

    let first = {
        let mut command = binary::command(dir.path());
        command.args(["--store", &remote, "send", &chat, "a slow question"]);
        command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    until_running(dir.path(), &remote, &chat);
    // Refused while it runs, when the input says so: the server's 409, one clear line.
    let refused = through(&["send", &chat, "not now", "--on-busy", "reject"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("409 session_busy"),
        "{}",
        text(&refused)
    );
    // Queued at once, answered after it.
    let queued = through(&[
        "send",
        &chat,
        "and then?",
        "--on-busy",
        "enqueue",
        "--by",
        "ana",
    ]);
    assert!(queued.status.success(), "{}", text(&queued));
    let said = text(&queued);
    assert!(said.contains("input:queued"), "{said}");
    assert!(said.contains("\"and then?\""), "{said}");
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", text(&first));
    let events = text(&through(&["events", &chat, "--json"]));
    let events: Vec<serde_json::Value> = serde_json::from_str(&events).unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let queued_at = names.iter().position(|n| *n == "input:queued").unwrap();
    assert_eq!(events[queued_at]["payload"]["by"], "ana");
    let answered = events
        .iter()
        .find(|e| e["name"] == "user:input" && e["causedBy"] == events[queued_at]["id"]);
    assert!(
        answered.is_some(),
        "the queued input got its turn: {names:?}"
    );

    // Stop: recorded, and the turn ends cancelled.
    let slow = {
        let mut command = binary::command(dir.path());
        command.args(["--store", &remote, "send", &chat, "another slow one"]);
        command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    until_running(dir.path(), &remote, &chat);
    let cancelled = through(&["cancel", &chat]);
    assert!(cancelled.status.success(), "{}", text(&cancelled));
    assert!(
        text(&cancelled).contains("stop:requested"),
        "{}",
        text(&cancelled)
    );
    let slow = slow.wait_with_output().unwrap();
    assert!(slow.status.success(), "{}", text(&slow));
    let events: Vec<serde_json::Value> =
        serde_json::from_str(&text(&through(&["events", &chat, "--json"]))).unwrap();
    let last = events.last().unwrap();
    assert_eq!(last["name"], "workflow:completed");
    assert_eq!(last["payload"]["reason"], "cancelled");
    // Nothing runs now: saying so is no error.
    let idle = through(&["cancel", &chat]);
    assert!(idle.status.success(), "{}", text(&idle));
    assert!(text(&idle).contains("nothing to stop"), "{}", text(&idle));
    // A local store has no server's turn to reach.
    let elsewhere = tempfile::tempdir().unwrap();
    assert!(
        openharness(elsewhere.path(), &["demo", "chat"], None)
            .status
            .success()
    );
    let local = openharness(
        elsewhere.path(),
        &["send", &chat, "x", "--on-busy", "enqueue"],
        None,
    );
    assert!(!local.status.success());
    assert!(
        text(&local).contains("--on-busy is for a turn that runs in a server"),
        "{}",
        text(&local)
    );
}

#[test]
fn respond_through_the_server_answers_the_open_request() {
    let dir = tempfile::tempdir().unwrap();
    let demo = openharness(dir.path(), &["demo", "--no-answer"], None);
    assert!(demo.status.success(), "{}", text(&demo));
    let listed: serde_json::Value = serde_json::from_str(&text(&openharness(
        dir.path(),
        &["sessions", "--json"],
        None,
    )))
    .unwrap();
    let session = listed[0]["id"].as_str().unwrap().to_owned();
    let events: Vec<serde_json::Value> = serde_json::from_str(&text(&openharness(
        dir.path(),
        &["events", &session, "--json"],
        None,
    )))
    .unwrap();
    let request = events
        .iter()
        .rfind(|e| e["name"] == "input:requested")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut command = binary::command(dir.path());
    command.args(["serve", "--addr", "127.0.0.1:0"]);
    let (_server, port, _) = serving::start_serve(command);
    let remote = format!("http://127.0.0.1:{port}");
    // A request that is not open: the server's answer, and nothing recorded.
    let wrong = openharness(
        dir.path(),
        &["--store", &remote, "respond", &session, &session, "yes"],
        None,
    );
    assert!(!wrong.status.success());
    assert!(text(&wrong).contains("answered 4"), "{}", text(&wrong));
    let answered = openharness(
        dir.path(),
        &[
            "--store", &remote, "respond", &session, &request, "yes", "--by", "ana",
        ],
        None,
    );
    assert!(answered.status.success(), "{}", text(&answered));
    let said = text(&answered);
    assert!(said.contains("The server recorded the answer"), "{said}");
    assert!(said.contains("input:received"), "{said}");
    assert!(said.contains("\"by\":\"ana\""), "{said}");
}
