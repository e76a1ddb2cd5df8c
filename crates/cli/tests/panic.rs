//! The workflow's own code panicking — a handler, an agent's `on_output` — run through the CLI
//! as a user's program runs it: the panic is reported once (as the `error:occurred` the turn
//! records, in the progress), not also by the panic hook's `panicked at`, a log line or the
//! summary.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::path::Path;
use std::process::Command;

use common::Buffer;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_cli::{Cli, Output};

/// The message the handler panics with, on the input `boom`.
const HANDLER_BOOM: &str = "the ledger cannot book a negative amount";
/// The message the agent's `on_output` panics with, on the input `ask`.
const AGENT_BOOM: &str = "the clerk dropped the ledger";

#[event("note:taken")]
#[derive(Debug, Clone)]
struct Noted {
    text: String,
}

#[event]
enum BrittleEvent {
    UserInput,
    Noted,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Brittle {
    last: String,
}

#[handler(BrittleEvent)]
impl Brittle {
    fn input(&mut self, input: &UserInput) {
        if input.text == "boom" {
            panic!("{HANDLER_BOOM}");
        }
        self.last = input.text.clone();
    }

    fn noted(&mut self, _noted: &Noted) {}
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

struct Clerk;

#[agent(output = Note, emits = [Noted])]
impl Clerk {
    fn when(&self, state: &Brittle) -> bool {
        state.last == "ask"
    }

    fn prompt(&self, _state: &Brittle, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, note: Note) -> Noted {
        if note.text == "ask" {
            panic!("{AGENT_BOOM}");
        }
        Noted { text: note.text }
    }
}

fn brittle() -> Workflow<Brittle> {
    Workflow::builder("brittle")
        .initial_state(Brittle::default())
        .agent(Clerk)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new().fallback("clerk", |request| {
            Reply::output(serde_json::json!({ "text": request.prompt }))
        }))
        .build()
        .unwrap()
}

/// Set in the child process: the store it runs the CLI on, instead of the test.
const CHILD_STORE: &str = "OPENHARNESS_PANIC_TEST_STORE";
/// Set in the child process: the input of the turn it starts.
const CHILD_INPUT: &str = "OPENHARNESS_PANIC_TEST_INPUT";

/// In the child process (`CHILD_STORE` set): runs the CLI as the program's `main` would and
/// exits. In the test: does nothing.
fn be_the_child() {
    let (Ok(store), Ok(input)) = (std::env::var(CHILD_STORE), std::env::var(CHILD_INPUT)) else {
        return;
    };
    let cli = Cli::new().workflow(brittle()).unwrap();
    let code = cli.run_with_args([
        "brittle-tool",
        "--store",
        &store,
        "start",
        "brittle",
        &input,
    ]);
    std::process::exit(if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    });
}

/// Runs `brittle-tool start brittle <input>` in a child process (this test binary, running
/// only `test`), on a store in `dir`; returns its stdout and stderr.
fn start(test: &str, dir: &Path, input: &str) -> (String, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, dir.join("store.redb"))
        .env(CHILD_INPUT, input)
        .env_remove("OPENHARNESS_LOG")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(1),
        "the turn failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// Asserts `message` is in what the CLI printed once, on the progress line of the recorded
/// `error:occurred`, and that the session recorded one `error:occurred`, with it.
fn assert_reported_once(dir: &Path, stdout: &str, stderr: &str, message: &str) {
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(
        stdout.matches(message).count() + stderr.matches(message).count(),
        1,
        "{both}"
    );
    let progress = stdout.lines().find(|line| line.contains(message)).unwrap();
    assert!(progress.trim_start().starts_with("! "), "{both}");
    assert!(!stderr.contains("panicked at"), "{both}");
    assert!(stderr.contains("the turn ended with 1 error(s)"), "{both}");

    let session = stdout
        .split_whitespace()
        .skip_while(|word| *word != "events")
        .nth(1)
        .unwrap()
        .trim_end_matches(['`', ')', ';'])
        .to_owned();
    let events = Buffer::default();
    let store = dir.join("store.redb");
    Cli::new()
        .try_run_from(
            [
                "brittle-tool",
                "--store",
                store.to_str().unwrap(),
                "events",
                &session,
                "--json",
            ],
            Output::new(events.clone()),
        )
        .unwrap();
    let events: serde_json::Value = serde_json::from_str(&events.text()).unwrap();
    let errors: Vec<&serde_json::Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|event| event["name"] == "error:occurred")
        .collect();
    assert_eq!(errors.len(), 1, "{events:#}");
    let recorded = errors[0]["payload"]["message"].as_str().unwrap();
    assert!(recorded.contains(message), "{events:#}");
}

#[test]
fn a_handler_panic_is_reported_once() {
    be_the_child();
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = start("a_handler_panic_is_reported_once", dir.path(), "boom");
    assert_reported_once(dir.path(), &stdout, &stderr, HANDLER_BOOM);
    assert!(
        stdout.contains(&format!(
            "the handler for `user:input` panicked: {HANDLER_BOOM}"
        )),
        "{stdout}"
    );
}

#[test]
fn an_agents_panic_is_reported_once() {
    be_the_child();
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = start("an_agents_panic_is_reported_once", dir.path(), "ask");
    assert_reported_once(dir.path(), &stdout, &stderr, AGENT_BOOM);
    assert!(
        stdout.contains(&format!("on_output panicked: {AGENT_BOOM}")),
        "{stdout}"
    );
}
