//! The CLI's readers while `openharness serve` writes the redb file: they read the file beside
//! it, a command that records is refused naming the server, and `--store http://ADDR` reads
//! the same sessions through
//! the server (sessions, events, tape, diff, export), live ones included; writes through it
//! are refused, and a server with API keys is read with `OPENHARNESS_API_KEY`.
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

    // Writes are not made through it, and nothing is created locally for the URL.
    let refused = through(&["send", &chat, "another question"]);
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
