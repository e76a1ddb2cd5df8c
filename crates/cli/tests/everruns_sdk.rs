//! The official Everruns Python SDK, unmodified, against a real `openharness serve`: the
//! pinned `everruns-sdk` is installed from PyPI into `target/everruns-venv` (once), the server
//! runs with `--api-keys-file` on 127.0.0.1 with a fake Anthropic server as its default model,
//! and `tests/everruns/flow.py` runs every call of the management client and of `AgentClient`
//! against it (agents, sessions, messages, events with every cursor, the SSE stream cut and
//! resumed with `since_id`, cancelling a running turn, models, capabilities, `run` ending with
//! the answer, the bare-key header), then the README's Everruns quickstart runs as written. Without `python3` or PyPI
//! the test fails, saying so: it never skips.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use openharness::provider::testing::FakeServer;
use openharness::provider::testing::anthropic::{KEY, json_output, text, tool_output};
use openharness_testkit::python::{self, run};
use serde_json::{Value, json};

mod binary;
mod serving;

/// The SDK release the test runs (the newest 0.3.x).
const SDK: &str = "everruns-sdk==0.3.1";

/// The venv's python with the pinned SDK, installed on first use.
fn python() -> PathBuf {
    python::venv("everruns-venv", SDK).join("bin/python")
}

/// The text of the latest user message of an Anthropic request, and of its latest `User: `
/// line when the platform sends the transcript as text.
fn latest_user_text(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rfind(|m| m["role"] == "user"))
        .cloned()
        .unwrap_or(Value::Null);
    let text = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    text.lines()
        .filter_map(|line| line.strip_prefix("User: "))
        .next_back()
        .map_or_else(|| text.trim().to_owned(), str::to_owned)
}

/// The README's Everruns quickstart (its `python` block in the `/v1` section).
fn quickstart() -> String {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("## The agent platform (`/v1`)")
        .expect("the README has a `/v1` section");
    let section = &readme[start..];
    let section = &section[..section[3..]
        .find("\n## ")
        .map_or(section.len(), |end| end + 3)];
    let open = section
        .find("```python\n")
        .expect("the `/v1` section has the Everruns quickstart")
        + "```python\n".len();
    let close = section[open..].find("```").unwrap();
    section[open..open + close].to_owned()
}

fn checked(what: &str, output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    stdout
}

#[test]
fn the_everruns_sdk_runs_its_whole_flow_unmodified() {
    let python = python();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(FakeServer::anthropic(KEY)).unwrap();
    // The agent echoes the latest message, in whatever form the platform asks for it; a
    // message with `[hang]` gets a few chunks and then nothing (a turn to cancel).
    fake.fallback(|request| {
        let latest = latest_user_text(&request.body);
        let reply = format!("echo: {latest}");
        let response = if request.body["tool_choice"]["type"] == "tool" {
            tool_output(&json!({ "reply": reply }))
        } else if request.body["output_config"]["format"].is_object() {
            json_output(&json!({ "reply": reply }))
        } else {
            text(&reply)
        };
        if latest.contains("[hang]") {
            response.cut_after(2).hang()
        } else {
            response
        }
    });

    let dir = tempfile::tempdir().unwrap();
    let api_key = "evr-test-key";
    std::fs::write(dir.path().join("keys"), format!("{api_key}\n")).unwrap();
    let mut command = binary::command(dir.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--api-keys-file", "keys"])
        .env_remove("OPENHARNESS_MASTER_KEYS_FILE")
        .env("OPENHARNESS_MASTER_KEYS", format!("k1:{}", "3d".repeat(32)));
    let (_server, port, _) = serving::start_serve(command);
    let base = format!("http://127.0.0.1:{port}");

    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/everruns/flow.py");
    let output = run(Command::new(&python)
        .arg(&flow)
        .env("EVERRUNS_API_URL", &base)
        .env("EVERRUNS_API_KEY", api_key)
        .env("FAKE_ANTHROPIC_URL", fake.base_url())
        .env("FAKE_ANTHROPIC_KEY", KEY)
        .env("PYTHONUNBUFFERED", "1"));
    let stdout = checked("the Everruns SDK flow (tests/everruns/flow.py)", &output);
    println!("{stdout}");
    assert!(stdout.contains("the Everruns SDK flow passed"), "{stdout}");

    // The README's quickstart, as written but for the address and the key.
    let script = quickstart()
        .replace("http://127.0.0.1:8080", &base)
        .replace("\"dev-key\"", &format!("{api_key:?}"));
    let quick = dir.path().join("quickstart.py");
    std::fs::write(&quick, script).unwrap();
    let output = run(Command::new(&python).arg(&quick));
    let stdout = checked("the README's Everruns quickstart", &output);
    assert!(
        stdout.contains("echo: Three days in Lisbon: where do I start?"),
        "the quickstart printed {stdout:?}"
    );
}
