//! The official A2A Python SDK, unmodified, against a real `openharness serve`: the pinned
//! `a2a-sdk` is installed from PyPI into `target/a2a-venv` (once), two servers run with
//! `--api-keys-file` on 127.0.0.1 (one with the examples' scripted models as they are, one with
//! them slowed down so a turn can be canceled), and `tests/a2a/flow.py` runs the client against
//! them: the cards (both paths, no key needed), a blocking send, a streamed one in the same
//! context, reading tasks back, refusals with the specification's error types, canceling a
//! slow turn (`stop:requested` in the log), following a running task, the planner-executor's
//! question as `TASK_STATE_INPUT_REQUIRED` answered by a message with its `taskId`, and a client
//! of another protocol version. Then the README's A2A snippet runs as written. Without
//! `python3` or PyPI the test fails, saying so: it never skips.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use openharness_testkit::python::{self, run};

mod binary;
mod serving;

/// The SDK release the test runs (the newest; only its client is used, which needs no extra).
const SDK: &str = "a2a-sdk==1.3.0";

/// The venv's python with the pinned SDK, installed on first use.
fn python() -> PathBuf {
    python::venv("a2a-venv", SDK).join("bin/python")
}

/// The README's A2A snippet (the `python` block of its `### A2A` section).
fn readme_snippet() -> String {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("### A2A\n")
        .expect("the README has an A2A section");
    let section = &readme[start..];
    let open = section
        .find("```python\n")
        .expect("the A2A section has a Python snippet")
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

/// `openharness serve` in `dir` with the key file `keys`, the chat as its default workflow,
/// and each scripted answer taking `delay_ms`.
fn serve(dir: &Path, delay_ms: Option<u64>) -> (binary::Killed, String) {
    let mut command = binary::command(dir);
    command.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--api-keys-file",
        "keys",
        "--chat-workflow",
        "chat",
    ]);
    if let Some(delay) = delay_ms {
        command.env("OPENHARNESS_SCRIPTED_DELAY_MS", delay.to_string());
    }
    let (server, port, _) = serving::start_serve(command);
    (server, format!("http://127.0.0.1:{port}"))
}

#[test]
fn the_a2a_sdk_sends_streams_reads_cancels_and_answers_unmodified() {
    let python = python();
    let key = "a2a-test-key";
    let fast_dir = tempfile::tempdir().unwrap();
    let slow_dir = tempfile::tempdir().unwrap();
    for dir in [&fast_dir, &slow_dir] {
        std::fs::write(dir.path().join("keys"), format!("{key}\n")).unwrap();
    }
    let (_fast, base) = serve(fast_dir.path(), None);
    let (_slow, slow) = serve(slow_dir.path(), Some(3000));

    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/flow.py");
    let output = run(Command::new(&python)
        .arg(&flow)
        .env("A2A_BASE", &base)
        .env("A2A_SLOW_BASE", &slow)
        .env("A2A_KEY", key)
        .env("PYTHONUNBUFFERED", "1"));
    let stdout = checked("the A2A SDK flow (tests/a2a/flow.py)", &output);
    println!("{stdout}");
    assert!(stdout.contains("the A2A SDK flow passed"), "{stdout}");

    // The README's snippet, as written but for the address and the key.
    let script = readme_snippet()
        .replace("http://127.0.0.1:8080", &base)
        .replace("Bearer dev-key", &format!("Bearer {key}"));
    let snippet = fast_dir.path().join("readme_a2a.py");
    std::fs::write(&snippet, script).unwrap();
    let output = run(Command::new(&python).arg(&snippet));
    let stdout = checked("the README's A2A snippet", &output);
    assert!(
        stdout.contains("You said \"Three days in Lisbon: where do I start?\""),
        "the snippet printed {stdout:?}"
    );
    assert!(
        stdout.contains("is TASK_STATE_COMPLETED"),
        "the task read back is not completed: {stdout:?}"
    );
}
