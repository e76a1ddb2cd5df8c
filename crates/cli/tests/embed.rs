//! The CLI as a library: a program registers a workflow of its own (defined here) with
//! `openharness_cli::Cli`, and every command works on its sessions — `start`, `sessions`,
//! `tape --at N --json`, `fork`, `send`, `events` — while a program that does not register it
//! still lists it and prints its events, and says clearly why `tape --at` cannot fold it.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::path::Path;

use common::{Buffer, LEDGER, ledger, ledger_session};
use openharness::prelude::*;
use openharness::store::RedbStore;
use openharness_cli::{Cli, CliError, NoCommands, Output};
use serde_json::Value;

/// Runs `ledger-tool ARGS` on the store at `store` with the ledger registered (or not);
/// returns what it wrote, or its error.
fn tool(cli: &Cli<NoCommands>, store: &Path, args: &[&str]) -> Result<String, CliError> {
    let buffer = Buffer::default();
    let mut argv = vec!["ledger-tool", "--store", store.to_str().unwrap()];
    argv.extend_from_slice(args);
    cli.try_run_from(argv, Output::new(buffer.clone()))?;
    Ok(buffer.text())
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|err| panic!("{err}: {text}"))
}

/// Records a ledger session (two turns) into the redb store at `path`, as the user's program
/// would with its own code; closes the store before the CLI opens it.
fn record(path: &Path) -> SessionId {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(ledger_session(RedbStore::open(path).unwrap()))
}

#[test]
fn every_command_works_on_a_registered_custom_workflow() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ledger.redb");
    let session = record(&store);
    let cli = Cli::new().workflow(ledger()).unwrap();

    let sessions = json(&tool(&cli, &store, &["sessions", "--json"]).unwrap());
    assert_eq!(sessions[0]["id"], session.as_str());
    assert_eq!(sessions[0]["workflow"], LEDGER);
    assert_eq!(sessions[0]["hosted"], true);
    assert_eq!(sessions[0]["status"], "idle");
    let len = sessions[0]["count"].as_u64().unwrap();

    // The state at the end, and at the position right after the first entry was booked.
    let end = json(
        &tool(
            &cli,
            &store,
            &["tape", session.as_str(), "--at", &len.to_string(), "--json"],
        )
        .unwrap(),
    );
    assert_eq!(end["state"]["balance"], 15);
    assert_eq!(
        end["state"]["entries"],
        serde_json::json!(["coffee", "lunch"])
    );
    let events = json(&tool(&cli, &store, &["events", session.as_str(), "--json"]).unwrap());
    let booked = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "entry:booked")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    let after = json(
        &tool(
            &cli,
            &store,
            &[
                "tape",
                session.as_str(),
                "--at",
                &(booked + 1).to_string(),
                "--json",
            ],
        )
        .unwrap(),
    );
    assert_eq!(after["current"]["name"], "entry:booked");
    assert_eq!(after["state"]["balance"], 3);

    // Fork right after the first booking: the child finishes what it started and runs on.
    let forked = json(
        &tool(
            &cli,
            &store,
            &[
                "fork",
                session.as_str(),
                "--after",
                "entry:booked",
                "--json",
            ],
        )
        .unwrap(),
    );
    assert_eq!(forked["parent"], session.as_str());
    assert_eq!(forked["position"], booked + 1);
    let child = forked["session"].as_str().unwrap().to_owned();
    let child_start = json(&tool(&cli, &store, &["tape", &child, "--at", "1", "--json"]).unwrap());
    assert_eq!(child_start["current"]["name"], "session:forked");
    assert_eq!(child_start["state"]["balance"], 3);

    // Send a turn to the fork: the fork's workflow is its root's.
    let sent = tool(&cli, &store, &["send", &child, "tea 2"]).unwrap();
    assert!(sent.contains("Continuing session"), "{sent}");
    assert!(sent.contains("(`ledger`, its own provider)"), "{sent}");
    assert!(sent.contains("The turn ended (idle)"), "{sent}");
    let sessions = json(&tool(&cli, &store, &["sessions", "--json"]).unwrap());
    let listed = sessions
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == child.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        listed["workflow"], LEDGER,
        "a fork's workflow is its root's"
    );
    assert_eq!(listed["parent"], session.as_str());
    let child_len = listed["count"].as_u64().unwrap();
    let child_end = json(
        &tool(
            &cli,
            &store,
            &["tape", &child, "--at", &child_len.to_string(), "--json"],
        )
        .unwrap(),
    );
    assert_eq!(
        child_end["state"]["entries"],
        serde_json::json!(["coffee", "tea"])
    );
    assert_eq!(child_end["state"]["balance"], 5);

    // `start` records a new session of the registered workflow.
    let started = tool(&cli, &store, &["start", LEDGER, "rent 700"]).unwrap();
    assert!(started.contains("Starting `ledger`"), "{started}");
    assert!(
        started.contains("ledger-tool tape "),
        "the program's own name: {started}"
    );
    assert_eq!(
        json(&tool(&cli, &store, &["sessions", "--json"]).unwrap())
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[test]
fn a_turn_that_ends_with_errors_fails_the_command_after_recording_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ledger.redb");
    let cli = Cli::new().workflow(ledger()).unwrap();
    let buffer = Buffer::default();
    let argv = [
        "ledger-tool",
        "--store",
        store.to_str().unwrap(),
        "start",
        LEDGER,
        "coffee lots",
    ];
    let err = cli
        .try_run_from(argv, Output::new(buffer.clone()))
        .unwrap_err();
    let CliError::TurnFailed {
        errors, session, ..
    } = &err
    else {
        panic!("not a failed turn: {err}");
    };
    assert_eq!(*errors, 1, "the clerk failed for good, once");
    let printed = buffer.text();
    assert!(printed.contains("with 1 error(s)"), "{printed}");
    assert!(
        err.to_string().contains(&format!("events {session}")),
        "{err}"
    );
    // The turn is recorded: its events show the rejected outputs and the error.
    let events = tool(&cli, &store, &["events", session.as_str(), "--json"]).unwrap();
    assert!(events.contains("output:rejected"), "{events}");
    assert!(events.contains("error:occurred"), "{events}");
    // The binary's exit status says it too.
    assert_eq!(
        cli.run_from([
            "ledger-tool",
            "--store",
            store.to_str().unwrap(),
            "send",
            session.as_str(),
            "tea lots"
        ]),
        std::process::ExitCode::FAILURE
    );
}

#[test]
fn a_program_without_the_workflow_reads_its_events_and_says_why_it_cannot_fold() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ledger.redb");
    let session = record(&store);
    let cli = Cli::new();

    let sessions = json(&tool(&cli, &store, &["sessions", "--json"]).unwrap());
    assert_eq!(sessions[0]["workflow"], LEDGER);
    assert_eq!(sessions[0]["hosted"], false);
    let table = tool(&cli, &store, &["sessions"]).unwrap();
    assert!(table.contains("ledger*"), "{table}");
    assert!(table.contains("does not register"), "{table}");

    let events = tool(&cli, &store, &["events", session.as_str()]).unwrap();
    assert!(events.contains("entry:booked"), "{events}");

    let err = tool(
        &cli,
        &store,
        &["tape", session.as_str(), "--at", "3", "--json"],
    )
    .unwrap_err();
    assert!(matches!(err, CliError::Unhosted { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("workflow `ledger`, which this program does not register")
            && message.contains(&format!("`ledger-tool events {session}`")),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
    for turn in [
        vec!["send", session.as_str(), "tea 2"],
        vec!["fork", session.as_str(), "--at", "2"],
    ] {
        let err = tool(&cli, &store, &turn).unwrap_err();
        assert!(
            matches!(err, CliError::Unhosted { .. }),
            "{turn:?}: {err:?}"
        );
    }
    // Nothing was recorded by the refused commands.
    assert_eq!(
        json(&tool(&cli, &store, &["sessions", "--json"]).unwrap())
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // A name registered twice is refused.
    let twice = Cli::new().workflow(ledger()).unwrap().workflow(ledger());
    assert!(twice.is_err());
}

/// A command is in the help exactly when the program is built with its feature: an embedding
/// program with `default-features = false` lists the commands it has, and no other.
#[test]
fn the_help_lists_the_commands_of_the_features_built_in() {
    let cli = Cli::new().workflow(ledger()).unwrap();
    let help = match cli.try_run_from(["ledger-tool", "--help"], Output::new(Buffer::default())) {
        Err(CliError::Clap(help)) => help.to_string(),
        other => panic!("--help is clap's to print: {other:?}"),
    };
    let listed = |command: &str| {
        help.lines()
            .any(|line| line.trim_start().starts_with(&format!("{command} ")))
    };
    for command in [
        "start", "send", "respond", "resume", "sessions", "annotate", "feedback", "events", "tape",
        "diff", "bisect", "replay", "fork", "check", "compact", "export", "import", "verify",
    ] {
        assert!(listed(command), "`{command}` is in every build:\n{help}");
    }
    for (command, built) in [
        ("cancel", cfg!(feature = "remote")),
        ("serve", cfg!(feature = "server")),
        ("eval", cfg!(feature = "eval")),
        ("mcp", cfg!(feature = "mcp")),
        ("otel", cfg!(feature = "otel")),
        ("platform", cfg!(feature = "platform")),
    ] {
        assert_eq!(listed(command), built, "`{command}`:\n{help}");
    }
}

/// Built without the `tui` feature, `tape` without `--at` fails in one line that says what
/// works instead.
#[test]
#[cfg(not(feature = "tui"))]
fn without_the_debugger_tape_names_the_position_flag() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ledger.redb");
    let session = record(&store);
    let cli = Cli::new().workflow(ledger()).unwrap();
    let err = tool(&cli, &store, &["tape", session.as_str()]).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("feature `tui`")
            && message.contains(&format!("`ledger-tool tape {session} --at N`")),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}

/// Built without the `postgres` or `remote` feature, a `--store` of that kind is refused in
/// words that name the feature (a connection string never with its password).
#[test]
#[cfg(not(all(feature = "postgres", feature = "remote")))]
fn a_store_kind_left_out_is_refused_naming_its_feature() {
    let cli = Cli::new().workflow(ledger()).unwrap();
    for (store, built, feature) in [
        (
            "postgres://alice:Hunter2Secret@127.0.0.1:1/app",
            cfg!(feature = "postgres"),
            "feature `postgres`",
        ),
        (
            "http://127.0.0.1:1",
            cfg!(feature = "remote"),
            "feature `remote`",
        ),
    ] {
        if built {
            continue;
        }
        let err = tool(&cli, Path::new(store), &["sessions"]).unwrap_err();
        let message = openharness::adapter::ErrorChain(&err).to_string();
        assert!(message.contains(feature), "{store}: {message}");
        assert!(!message.contains("Hunter2Secret"), "{store}: {message}");
    }
}
