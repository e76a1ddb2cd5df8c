//! The planted-bug suite: sessions recorded by the fixed ledger through the real
//! `planted-bugs` binary into a redb store, then replayed by the same binary with each
//! planted bug. Each bug must be caught (exit 1) at the first position it can show at, worked
//! out here from the recording alone (the seq of the first event the bug changes, or the
//! first state hash at or after it); a session the bug does not touch must not part; and the
//! fixed code must replay every session (exit 0).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::{Command, Output};

use openharness_planted_bugs::{Bug, PLANTED_BUG};
use serde_json::Value;

/// `planted-bugs --store STORE ARGS` with `bug` planted, run to its end.
fn planted(store: &Path, bug: Bug, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_planted-bugs"));
    command
        .current_dir(store.parent().unwrap())
        .env_remove("OPENHARNESS_STORE")
        .env(PLANTED_BUG, bug.name())
        .arg("--store")
        .arg(store)
        .args(args);
    command
        .output()
        .unwrap_or_else(|err| panic!("planted-bugs {args:?} did not run: {err}"))
}

/// What a command printed, both streams.
fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The standard output of a command that exited with `code`, as JSON.
fn json_exiting(output: &Output, code: i32) -> Value {
    assert_eq!(output.status.code(), Some(code), "{}", text(output));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {}", text(output)))
}

/// Records a session of `inputs` (one turn each) with the fixed code; returns its id.
fn record(store: &Path, inputs: &[&str]) -> String {
    let started = planted(store, Bug::None, &["start", "orders", inputs[0]]);
    assert!(started.status.success(), "{}", text(&started));
    let stdout = String::from_utf8_lossy(&started.stdout).into_owned();
    let session = stdout
        .lines()
        .find_map(|line| line.strip_prefix("Session "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session id in:\n{stdout}"))
        .to_owned();
    for input in &inputs[1..] {
        let sent = planted(store, Bug::None, &["send", &session, input]);
        assert!(sent.status.success(), "{}", text(&sent));
    }
    session
}

/// One recorded event, as `events --json` prints it.
struct Recorded {
    seq: u64,
    name: String,
    hashed: bool,
}

fn events(store: &Path, session: &str) -> Vec<Recorded> {
    let printed = json_exiting(
        &planted(store, Bug::None, &["events", session, "--json"]),
        0,
    );
    printed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| Recorded {
            seq: e["seq"].as_u64().unwrap(),
            name: e["name"].as_str().unwrap().to_owned(),
            hashed: e["stateHash"].is_string(),
        })
        .collect()
}

/// The seq of the `n`th (1-based) event named `name`.
fn nth(events: &[Recorded], name: &str, n: usize) -> Option<u64> {
    events
        .iter()
        .filter(|e| e.name == name)
        .nth(n - 1)
        .map(|e| e.seq)
}

/// The first event at or after `seq` that records a state hash: where a change of the state
/// made at `seq` first shows.
fn first_hash_from(events: &[Recorded], seq: u64) -> Option<u64> {
    events
        .iter()
        .find(|e| e.seq >= seq && e.hashed)
        .map(|e| e.seq)
}

/// Where `bug` must first show in a recording of the fixed code (`None`: it cannot show).
fn expected(bug: Bug, events: &[Recorded]) -> Option<u64> {
    match bug {
        Bug::None => None,
        // Only the state changes, from the first refund on.
        Bug::Arithmetic => first_hash_from(events, nth(events, "refund:issued", 1)?),
        // Today's run records something else where the first follow-up was.
        Bug::DroppedEvent => nth(events, "points:earned", 1),
        // One order line puts the same list either way: the second shows it.
        Bug::ReorderedList => first_hash_from(events, nth(events, "order:placed", 2)?),
        // The state differs before any event: the first hash shows it.
        Bug::ChangedDefault => first_hash_from(events, 0),
        // Today's `order:placed` has another payload (and an old one decodes to a quantity
        // of 0, which the state hashes see at or after it).
        Bug::RenamedField => nth(events, "order:placed", 1),
    }
}

#[test]
fn each_planted_bug_is_caught_by_replay_where_it_first_shows() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("orders.redb");
    let sessions = [
        // Every bug shows in this one.
        record(
            &store,
            &[
                "order widget 2 1250",
                "order gadget 1 500",
                "refund widget 1250",
            ],
        ),
        // One order and no refund: neither the arithmetic nor the order of the list shows.
        record(&store, &["order lamp 1 4000"]),
        // A refund without an order, and an input that is no command.
        record(&store, &["refund mug 300", "hello"]),
    ];
    let recorded: Vec<Vec<Recorded>> = sessions.iter().map(|s| events(&store, s)).collect();
    assert!(
        recorded
            .iter()
            .all(|events| events.iter().any(|e| e.hashed)),
        "every session records state hashes"
    );

    for bug in Bug::ALL {
        let report = planted(&store, bug, &["replay", "--all", "--json"]);
        let expected: Vec<(String, u64)> = sessions
            .iter()
            .zip(&recorded)
            .filter_map(|(session, events)| Some((session.clone(), expected(bug, events)?)))
            .collect();
        let report = json_exiting(&report, if expected.is_empty() { 0 } else { 1 });
        assert_eq!(report["replayed"], 3, "{bug}: {report}");
        assert_eq!(report["failed"], serde_json::json!([]), "{bug}: {report}");
        let mut parted: Vec<(String, u64)> = report["parted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["replayed"]["session"].as_str().unwrap().to_owned(),
                    p["seq"].as_u64().unwrap(),
                )
            })
            .collect();
        parted.sort();
        let mut expected = expected;
        expected.sort();
        assert_eq!(parted, expected, "{bug}: where each session parts");
        assert_eq!(
            report["matched"].as_u64().unwrap() as usize,
            3 - parted.len(),
            "{bug}"
        );
        // Each chain of causes runs back to an input (or to the first event of the session).
        for p in report["parted"].as_array().unwrap() {
            let causes = p["causes"].as_array().unwrap();
            let last = causes.last().unwrap();
            assert!(
                last["name"] == "user:input" || last["seq"] == 0,
                "{bug}: {causes:?}"
            );
        }
    }

    // One session at a time: `replay S` says the same, in its own JSON.
    for bug in Bug::ALL {
        let want = expected(bug, &recorded[0]);
        let replayed = planted(&store, bug, &["replay", &sessions[0], "--json"]);
        let replayed = json_exiting(&replayed, if want.is_some() { 1 } else { 0 });
        let first = [
            replayed["divergence"]["seq"].as_u64(),
            replayed["stateDivergence"]["seq"].as_u64(),
        ]
        .into_iter()
        .flatten()
        .min();
        assert_eq!(first, want, "{bug}: {replayed}");
        assert_eq!(replayed["matched"], want.is_none(), "{bug}");
        // Every planted bug is another code: the replay says the session was recorded by
        // other code than today's.
        assert_eq!(
            replayed["codeChange"].is_object(),
            bug != Bug::None,
            "{bug}: {replayed}"
        );
    }
}
