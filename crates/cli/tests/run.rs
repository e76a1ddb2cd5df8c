//! `openharness run`: without a key it says what to set; with a key it records a live run
//! (here against the fake Anthropic and OpenAI servers), and replaying that run through the
//! tape makes no model request.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Output;

use openharness::provider::testing::{self, FakeServer, RecordedRequest};
use serde_json::{Value, json};

mod binary;
use binary::word_after;

fn openharness(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = binary::command(dir);
    command.args(args);
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn answer(prompt: &str) -> Value {
    if prompt.starts_with("You are a planner") {
        json!({ "tasks": ["Write the changelog", "Publish"] })
    } else {
        json!({ "summary": "Done." })
    }
}

#[test]
fn without_a_key_it_says_what_to_set_and_suggests_demo() {
    let dir = tempfile::tempdir().unwrap();
    for (provider, var) in [
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("openai", "OPENAI_API_KEY"),
    ] {
        let output = openharness(
            dir.path(),
            &["run", "planner-executor", "--provider", provider],
            &[],
        );
        assert!(!output.status.success());
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains(var) && stderr.contains("openharness demo"),
            "{stderr}"
        );
    }
    let output = openharness(
        dir.path(),
        &["run", "no-such-example", "--provider", "anthropic"],
        &[],
    );
    assert!(text(&output.stderr).contains("unknown example `no-such-example`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_a_run_against_the_fake_anthropic_server_and_replays_it_without_requests() {
    let server = FakeServer::anthropic(testing::anthropic::KEY)
        .await
        .unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::anthropic::json_output(&answer(&request.prompt()))
    });
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url();
    let key = testing::anthropic::KEY;
    let path = dir.path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        openharness(
            &path,
            &[
                "run",
                "planner-executor",
                "--provider",
                "anthropic",
                "--base-url",
                &base_url,
                "--model",
                "claude-haiku-4-5",
            ],
            &[("ANTHROPIC_API_KEY", key), ("OPENHARNESS_LOG", "trace")],
        )
    })
    .await
    .unwrap();
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("2 of 2 tasks done"), "{stdout}");
    assert!(
        !stdout.contains(key) && !stderr.contains(key),
        "the key is never printed, even at trace level"
    );
    assert_eq!(server.request_count(), 3);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.body["model"] == "claude-haiku-4-5")
    );

    let session = word_after(&stdout, "Session ");
    let path = dir.path().to_owned();
    let tape = tokio::task::spawn_blocking(move || {
        openharness(&path, &["tape", &session, "--at", "1000", "--json"], &[])
    })
    .await
    .unwrap();
    assert!(tape.status.success(), "{}", text(&tape.stderr));
    let view: Value = serde_json::from_slice(&tape.stdout).unwrap();
    assert_eq!(view["state"]["completed"], 2);
    assert_eq!(view["state"]["tasks"][1]["result"], "Done.");
    assert_eq!(
        server.request_count(),
        3,
        "the replay made no provider request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compatible_local_server_needs_no_key() {
    let server = FakeServer::openai("no-key").await.unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::openai::json_output(&answer(&request.prompt()))
    });
    let dir = tempfile::tempdir().unwrap();
    let base_url = server.base_url();
    let path = dir.path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        openharness(
            &path,
            &[
                "run",
                "planner-executor",
                "--provider",
                "openai",
                "--base-url",
                &base_url,
                "--goal",
                "Ship it",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("2 of 2 tasks done"));
    assert!(server.requests()[0].prompt().contains("Goal: Ship it"));
}
