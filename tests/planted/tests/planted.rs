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
    record_with(store, Bug::None, inputs)
}

/// Records a session of `inputs` (one turn each) with `bug` planted; returns its id.
fn record_with(store: &Path, bug: Bug, inputs: &[&str]) -> String {
    let started = planted(store, bug, &["start", "orders", inputs[0]]);
    assert!(started.status.success(), "{}", text(&started));
    let stdout = String::from_utf8_lossy(&started.stdout).into_owned();
    let session = stdout
        .lines()
        .find_map(|line| line.strip_prefix("Session "))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session id in:\n{stdout}"))
        .to_owned();
    for input in &inputs[1..] {
        let sent = planted(store, bug, &["send", &session, input]);
        assert!(sent.status.success(), "{}", text(&sent));
    }
    session
}

/// One recorded event, as `events --json` prints it.
struct Recorded {
    seq: u64,
    name: String,
    hashed: bool,
    caused_by: Option<String>,
    id: String,
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
            caused_by: e["causedBy"].as_str().map(str::to_owned),
            id: e["id"].as_str().unwrap().to_owned(),
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

/// The chain of causes of the event at `seq`, back to one nothing in the log caused.
fn chain_of(events: &[Recorded], seq: u64) -> Vec<(u64, String)> {
    let mut chain = vec![];
    let mut at = Some(seq);
    while let Some(seq) = at {
        let event = &events[seq as usize];
        chain.push((seq, event.name.clone()));
        at = event
            .caused_by
            .as_ref()
            .and_then(|cause| events.iter().find(|e| &e.id == cause))
            .map(|e| e.seq);
    }
    chain
}

fn chain_printed(parting: &Value) -> Vec<(u64, String)> {
    parting["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["seq"].as_u64().unwrap(),
                c["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn bisect_names_where_two_runs_part_what_produced_it_and_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("orders.redb");
    let inputs = [
        "order widget 2 1250",
        "order gadget 1 500",
        "refund widget 1250",
    ];
    let fixed = record(&store, &inputs);
    let state_only = record_with(&store, Bug::Arithmetic, &inputs);
    let dropped = record_with(&store, Bug::DroppedEvent, &inputs);
    let (fixed_events, buggy_events) = (events(&store, &fixed), events(&store, &state_only));

    // Two sessions that differ only in their states: the first hash of the buggy one from the
    // refund on, the refund's handler to blame, its chain back to the input.
    let bisected = planted(
        &store,
        Bug::None,
        &["bisect", &fixed, &state_only, "--json"],
    );
    let bisection = json_exiting(&bisected, 1);
    let parting = &bisection["parting"];
    let refund = nth(&buggy_events, "refund:issued", 1).unwrap();
    assert_eq!(parting["kind"], "state", "{bisection}");
    assert_eq!(
        parting["seq"].as_u64(),
        first_hash_from(&buggy_events, refund),
        "{bisection}"
    );
    assert_eq!(parting["producedBy"]["event"], "refund:issued");
    assert_eq!(parting["producedBy"]["seq"], refund);
    assert_eq!(chain_printed(parting), chain_of(&fixed_events, refund));
    assert_eq!(parting["handlers"][0]["seq"], refund);
    assert!(
        parting["state"].is_null(),
        "b's state is known by its hash only"
    );
    // The same, for a person.
    let text =
        String::from_utf8(planted(&store, Bug::None, &["bisect", &fixed, &state_only]).stdout)
            .unwrap();
    for line in [
        "the state, while every event so far matches",
        &format!("produced by: the handler of `refund:issued` (seq {refund})"),
        &format!(
            "chain of causes: seq {refund} refund:issued ← seq {} user:input",
            refund - 1
        ),
        "/refunded_cents: 0 → 1250",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }

    // Two sessions whose events part: the fixed session's first follow-up event.
    let bisection = json_exiting(
        &planted(&store, Bug::None, &["bisect", &fixed, &dropped, "--json"]),
        1,
    );
    let parting = &bisection["parting"];
    let earned = nth(&fixed_events, "points:earned", 1).unwrap();
    assert_eq!(parting["kind"], "events", "{bisection}");
    assert_eq!(parting["seq"], earned);
    assert_eq!(parting["a"]["name"], "points:earned");
    assert_eq!(parting["producedBy"]["kind"], "handler");
    assert_eq!(parting["producedBy"]["event"], "order:placed");
    assert_eq!(chain_printed(parting), chain_of(&fixed_events, earned));
    assert_eq!(parting["state"][0]["path"], "/points");
    assert_eq!(parting["state"][0]["to"], 0);

    // One session against its replay through buggy code, and through the fixed code.
    let bisection = json_exiting(
        &planted(&store, Bug::ReorderedList, &["bisect", &fixed, "--json"]),
        1,
    );
    let second = nth(&fixed_events, "order:placed", 2).unwrap();
    assert_eq!(bisection["parting"]["kind"], "state", "{bisection}");
    assert_eq!(
        bisection["parting"]["seq"].as_u64(),
        first_hash_from(&fixed_events, second)
    );
    assert_eq!(bisection["parting"]["producedBy"]["event"], "order:placed");
    let agreed = json_exiting(
        &planted(&store, Bug::None, &["bisect", &fixed, "--json"]),
        0,
    );
    assert!(agreed["parting"].is_null(), "{agreed}");
    assert!(agreed["statesCompared"].as_u64().unwrap() > 0);
}
