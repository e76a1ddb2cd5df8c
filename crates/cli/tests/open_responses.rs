//! The official `openai` Python SDK, unmodified, against a real `openharness serve`'s Open
//! Responses API: the pinned `openai` is installed from PyPI into `target/openai-venv` (once),
//! the server runs with `--api-keys-file` on 127.0.0.1 with the binary's offline chat and
//! planner-executor (their scripted models slowed to 1 s a reply, so a turn can be cancelled),
//! and `tests/open_responses/flow.py` creates, streams, continues (and forks from an older
//! response), reads back, replays the stream from every sequence number, cancels, lists input
//! items, continues a conversation, answers a question, and checks the errors; then
//! `tests/open_responses/compliance.py`, the specification's compliance cases (all nine against
//! a `/v1` agent whose model is a fake OpenAI server, function tools run by the client
//! included); then the README's
//! Open Responses snippet runs as written. Without `python3` or PyPI the test fails,
//! saying so: it never skips.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use openharness::provider::testing::FakeServer;
use openharness::provider::testing::openai::{KEY, text, tool_calls};
use openharness_testkit::python::{self, run};
use serde_json::json;

mod binary;
mod serving;

/// The SDK release the test runs (the newest).
const SDK: &str = "openai==3.63.0";

/// The venv's python with the pinned SDK, installed on first use.
fn python() -> PathBuf {
    python::venv("openai-venv", SDK).join("bin/python")
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

/// The README's Open Responses snippets (the `python` blocks of its section), in order.
fn readme_snippets() -> Vec<String> {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("### Open Responses")
        .expect("the README has an Open Responses section");
    let section = &readme[start..];
    let section = &section[..section[4..]
        .find("\n### ")
        .map_or(section.len(), |end| end + 4)];
    section
        .split("```python\n")
        .skip(1)
        .map(|block| block[..block.find("```").unwrap()].to_owned())
        .collect()
}

#[test]
fn the_openai_sdk_creates_streams_continues_forks_reads_back_and_cancels() {
    let python = python();
    // The `/v1` agent's model: it calls `get_weather` when offered it (until its output is
    // back), else answers with a line of text.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(FakeServer::openai(KEY)).unwrap();
    fake.fallback(|request| {
        let body = &request.body;
        let offered = body["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "get_weather"));
        let returned = body["messages"]
            .as_array()
            .and_then(|messages| messages.last())
            .is_some_and(|last| last["role"] == "tool");
        if offered && !returned {
            tool_calls(&[(
                "call_weather_1",
                "get_weather",
                json!({ "location": "San Francisco, CA" }),
            )])
        } else {
            text("Ahoy! It is 64 degrees and clear in San Francisco, matey.")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let api_key = "or-test-key";
    std::fs::write(dir.path().join("keys"), format!("{api_key}\n")).unwrap();
    let mut command = binary::command(dir.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--api-keys-file", "keys"])
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "1000")
        .env("OPENHARNESS_MASTER_KEYS", format!("k1:{}", "3d".repeat(32)));
    let (_server, port, _) = serving::start_serve(command);
    let base = format!("http://127.0.0.1:{port}");

    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/open_responses/flow.py");
    let output = run(Command::new(&python)
        .arg(&flow)
        .env("OPENHARNESS_URL", &base)
        .env("OPENHARNESS_API_KEY", api_key)
        .env("PYTHONUNBUFFERED", "1"));
    let stdout = checked(
        "the openai SDK flow (tests/open_responses/flow.py)",
        &output,
    );
    println!("{stdout}");
    assert!(stdout.contains("the openai SDK flow passed"), "{stdout}");

    // The specification's compliance cases (re-implemented: see the script's docs).
    let compliance =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/open_responses/compliance.py");
    let output = run(Command::new(&python)
        .arg(&compliance)
        .env("OPENHARNESS_URL", &base)
        .env("OPENHARNESS_API_KEY", api_key)
        .env("FAKE_OPENAI_URL", fake.base_url())
        .env("FAKE_OPENAI_KEY", KEY));
    let stdout = checked("the Open Responses compliance cases", &output);
    println!("{stdout}");
    // The nine against a `/v1` agent, the seven without tools against `chat`, and `chat`
    // refusing function tools.
    assert!(
        stdout.contains("compliance cases passed (17 cases)"),
        "{stdout}"
    );

    // The README's snippets, as written but for the address, the key and the agent's name.
    let snippets = readme_snippets();
    assert_eq!(
        snippets.len(),
        2,
        "the Open Responses section's python blocks"
    );
    let script = snippets[0]
        .replace("http://127.0.0.1:8080", &base)
        .replace("\"dev-key\"", &format!("{api_key:?}"));
    let snippet = dir.path().join("snippet.py");
    std::fs::write(&snippet, script).unwrap();
    let output = run(Command::new(&python).arg(&snippet));
    let stdout = checked("the README's Open Responses snippet", &output);
    assert!(
        stdout.contains("message 2 of our conversation"),
        "the snippet printed {stdout:?}"
    );

    // The function tools snippet, with the client the first one made, on the agent the
    // compliance cases set up.
    let tools = snippets[0]
        .lines()
        .take_while(|line| !line.starts_with("first ="))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
        + &snippets[1];
    let tools = tools
        .replace("http://127.0.0.1:8080", &base)
        .replace("\"dev-key\"", &format!("{api_key:?}"))
        .replace("agent:support", "agent:weather");
    let snippet = dir.path().join("tools.py");
    std::fs::write(&snippet, tools).unwrap();
    let output = run(Command::new(&python).arg(&snippet));
    let stdout = checked("the README's function tools snippet", &output);
    assert!(
        stdout.contains("64 degrees"),
        "the snippet printed {stdout:?}"
    );
}
