//! A handler that panics, run through the CLI as a user's program runs it: the panic is
//! reported once on stderr (as the `error:occurred` the turn records, in the progress and
//! the failed turn's summary), not by the panic hook, the log and the summary each.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::process::Command;

use common::Buffer;
use openharness::prelude::*;
use openharness::provider::ScriptedProvider;
use openharness::store::MemoryStore;
use openharness_cli::{Cli, Output};

/// The message the handler panics with.
const BOOM: &str = "the ledger cannot book a negative amount";

#[event]
enum BrittleEvent {
    UserInput,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Brittle;

#[handler(BrittleEvent)]
impl Brittle {
    fn input(&mut self, input: &UserInput) {
        if input.text == "boom" {
            panic!("{BOOM}");
        }
    }
}

fn brittle() -> Workflow<Brittle> {
    Workflow::builder("brittle")
        .initial_state(Brittle)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new())
        .build()
        .unwrap()
}

/// Set in the child process: it runs the CLI instead of the test.
const CHILD: &str = "OPENHARNESS_PANIC_TEST_STORE";

#[test]
fn a_handler_panic_is_reported_once() {
    if let Ok(store) = std::env::var(CHILD) {
        // The child: the program's `main`, as a user writes it.
        let cli = Cli::new().workflow(brittle()).unwrap();
        let code = cli.run_with_args([
            "brittle-tool",
            "--store",
            &store,
            "start",
            "brittle",
            "boom",
        ]);
        std::process::exit(if code == std::process::ExitCode::SUCCESS {
            0
        } else {
            1
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.redb");
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_handler_panic_is_reported_once",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &store)
        .env_remove("OPENHARNESS_LOG")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(output.status.code(), Some(1), "the turn failed: {both}");
    // Once in all the CLI printed: the progress line of the recorded `error:occurred`, not
    // also the panic hook's `panicked at`, a log line or the summary.
    assert_eq!(
        stdout.matches(BOOM).count() + stderr.matches(BOOM).count(),
        1,
        "{both}"
    );
    assert!(
        stdout.contains(&format!("the handler for `user:input` panicked: {BOOM}")),
        "{both}"
    );
    assert!(!stderr.contains("panicked at"), "{both}");
    assert!(stderr.contains("the turn ended with 1 error(s)"), "{both}");

    // Recorded once, as one `error:occurred`.
    let session = stdout
        .split_whitespace()
        .skip_while(|word| *word != "events")
        .nth(1)
        .unwrap()
        .trim_end_matches(['`', ')', ';'])
        .to_owned();
    let events = Buffer::default();
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
    let events = events.text();
    assert_eq!(events.matches("\"error:occurred\"").count(), 1, "{events}");
    assert_eq!(events.matches(BOOM).count(), 1, "{events}");
}
