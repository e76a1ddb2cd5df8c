//! `openharness verify FILE`: an export of the demo verifies (its chain recomputed, its states
//! replayed with no model to the final state hash it recorded); one byte changed, a line
//! removed or two lines swapped is named at its line and byte; an export from before chains
//! is not verified but its states are still replayed; a state that parts and a workflow the
//! program does not register are told apart by the exit code. And the committed fixture,
//! exported by the demo, verifies on any machine (CI's fresh clone).
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};

use openharness::store::jsonl::ChainHash;
use serde_json::Value;

mod binary;
mod common;
use binary::{openharness, stdout, text};
use common::{Buffer, LEDGER, ledger, ledger_session};
use openharness::store::RedbStore;
use openharness_cli::{Cli, CliError, Output};

/// The fixture `the_committed_fixture_verifies` checks: an export of `openharness demo`.
const FIXTURE: &str = "tests/fixtures/verify-demo.jsonl";

/// Set to `overwrite` to write [`FIXTURE`] again from today's demo.
const REGENERATE: &str = "OPENHARNESS_FIXTURES";

/// Records the demo in `dir` and returns its export's lines.
fn demo_export(dir: &Path) -> Vec<String> {
    stdout(&openharness(dir, &["demo"]));
    let sessions: Value =
        serde_json::from_str(&stdout(&openharness(dir, &["sessions", "--json"]))).unwrap();
    let session = sessions[0]["id"].as_str().unwrap();
    stdout(&openharness(dir, &["export", session]))
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Writes `lines` to `dir/name` and runs `verify` on it (with `--json` when `json`).
fn verify(dir: &Path, name: &str, lines: &[String], json: bool) -> std::process::Output {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join(name), text).unwrap();
    let mut args = vec!["verify", name];
    if json {
        args.push("--json");
    }
    openharness(dir, &args)
}

/// The byte line `line` (from 1) of `lines` starts at, written one per line.
fn offset(lines: &[String], line: usize) -> usize {
    lines[..line - 1].iter().map(|l| l.len() + 1).sum()
}

/// `lines` with every event line's chain value recomputed and the end lines' heads and seals
/// set to match: a file changed by someone who knows the chain (what `verify` cannot tell from
/// an honest export, and leaves to the states).
fn rechained(lines: &[String]) -> Vec<String> {
    let mut chain = ChainHash::START;
    lines
        .iter()
        .map(|line| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            if value.get("begin").is_some() {
                chain = ChainHash::START;
                return line.clone();
            }
            if value.get("end").is_some() {
                value["chain"] = chain.to_string().into();
                return value.to_string();
            }
            let cut = line.rfind(r#","chain":""#).unwrap();
            let unchained = format!("{}}}", &line[..cut]);
            chain = chain.link(unchained.as_bytes());
            format!("{},\"chain\":\"{chain}\"}}", &line[..cut])
        })
        .collect()
}

/// The end line of `lines` as JSON.
fn end_line(lines: &[String]) -> Value {
    serde_json::from_str(lines.last().unwrap()).unwrap()
}

#[test]
fn an_export_verifies_and_a_changed_byte_is_named_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let lines = demo_export(dir.path());
    let end = end_line(&lines);
    let (head, final_hash) = (
        end["chain"].as_str().unwrap(),
        end["stateHash"].as_str().unwrap(),
    );
    assert_eq!(end["workflow"], "planner-executor", "{end}");

    let verified = stdout(&verify(dir.path(), "s.jsonl", &lines, false));
    assert!(
        verified.contains(&format!("{} events, chain head {head}", lines.len() - 2)),
        "{verified}"
    );
    assert!(
        verified.contains(&format!("final state hash {final_hash} reproduced")),
        "{verified}"
    );
    assert!(verified.contains("verified s.jsonl:"), "{verified}");
    let json: Value =
        serde_json::from_str(&stdout(&verify(dir.path(), "s.jsonl", &lines, true))).unwrap();
    assert_eq!(json["verified"], true, "{json}");
    assert_eq!(json["sessions"][0]["chain"], head);
    assert_eq!(json["sessions"][0]["finalStateHash"], final_hash);
    assert_eq!(json["sessions"][0]["states"], "reproduced");
    assert!(json["sessions"][0]["stateHashesChecked"].as_u64().unwrap() >= 1);

    // One byte of a payload, flipped as a disk or a hand would (a bit of a letter): named at
    // its line, seq and byte, exit 1; with --json, the same in `broken`.
    let line = 10;
    let mut bytes = lines[line - 1].clone().into_bytes();
    let at = lines[line - 1].find(r#""payload":{"#).unwrap() + r#""payload":{""#.len();
    bytes[at] ^= 0x01;
    let mut flipped = lines.clone();
    flipped[line - 1] = String::from_utf8(bytes).unwrap();
    let output = verify(dir.path(), "flipped.jsonl", &flipped, false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains(&format!(
            "flipped.jsonl is not verified: line {line}: session"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!(", seq {}: the line does not hash", line - 2)),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "(line {line} starts at byte {})",
            offset(&flipped, line)
        )),
        "{said}"
    );
    let output = verify(dir.path(), "flipped.jsonl", &flipped, true);
    assert_eq!(output.status.code(), Some(1));
    let json: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["verified"], false);
    assert_eq!(json["broken"]["line"], line);
    assert_eq!(json["broken"]["seq"], line - 2);
    assert_eq!(json["broken"]["offset"], offset(&flipped, line));

    // A line removed: named where the seqs jump.
    let mut removed = lines.clone();
    removed.remove(20);
    let output = verify(dir.path(), "removed.jsonl", &removed, false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains("line 21: session")
            && said.contains("continues at seq 19, but the line has seq 20"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "(line 21 starts at byte {})",
            offset(&removed, 21)
        )),
        "{said}"
    );

    // Two lines swapped: named at the first of them.
    let mut swapped = lines.clone();
    swapped.swap(30, 31);
    let output = verify(dir.path(), "swapped.jsonl", &swapped, false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains("line 31: session")
            && said.contains("continues at seq 29, but the line has seq 30"),
        "{said}"
    );

    // The end line's seal changed: named at the end line.
    let mut sealed = lines.clone();
    let last = sealed.len() - 1;
    sealed[last] = sealed[last].replace(final_hash, &"0".repeat(64));
    let output = verify(dir.path(), "sealed.jsonl", &sealed, false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains(&format!("line {}: session", sealed.len()))
            && text(&output).contains("the end line records stateHash"),
        "{}",
        text(&output)
    );

    // An empty file holds no session to verify.
    let output = verify(dir.path(), "empty.jsonl", &[], false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("it holds no session"),
        "{}",
        text(&output)
    );

    // A file that cannot be read is not a verdict: exit 2.
    let output = openharness(dir.path(), &["verify", "missing.jsonl"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("could not verify missing.jsonl: cannot open it"),
        "{}",
        text(&output)
    );
}

#[test]
fn an_export_from_before_chains_is_not_verified_but_its_states_are_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let lines = demo_export(dir.path());
    // What `export` wrote before chains: no chain members, an end line with its count alone.
    let old: Vec<String> = lines
        .iter()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            if value.get("begin").is_some() {
                serde_json::json!({ "session": value["session"], "begin": true }).to_string()
            } else if value.get("end").is_some() {
                serde_json::json!({ "session": value["session"], "end": true, "count": value["count"] })
                    .to_string()
            } else {
                let cut = line.rfind(r#","chain":""#).unwrap();
                format!("{}}}", &line[..cut])
            }
        })
        .collect();
    let output = verify(dir.path(), "old.jsonl", &old, false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(said.contains("no hash chain, final state hash"), "{said}");
    assert!(
        said.contains("reproduced"),
        "the states are replayed: {said}"
    );
    assert!(
        said.contains("old.jsonl is not verified:") && said.contains(": no hash chain"),
        "{said}"
    );
    // It still imports, as every export from before chains does.
    stdout(&openharness(
        dir.path(),
        &["import", "old.jsonl", "--store", "other.redb"],
    ));
}

#[test]
fn a_state_that_parts_and_an_unregistered_workflow_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let lines = demo_export(dir.path());
    let final_hash = end_line(&lines)["stateHash"].as_str().unwrap().to_owned();
    let final_seq = end_line(&lines)["stateHashSeq"].as_u64().unwrap();

    // Another final state hash, chained and sealed as if it had been recorded: the chain
    // holds, today's fold does not reach it, exit 1 naming the seq.
    let forged: Vec<String> = lines
        .iter()
        .map(|l| l.replace(&final_hash, &"ab".repeat(32)))
        .collect();
    let output = verify(dir.path(), "forged.jsonl", &rechained(&forged), false);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(
        said.contains(&format!(
            "fold the recording to another state after seq {final_seq}"
        )),
        "{said}"
    );
    assert!(
        said.contains(&format!("its state parts after seq {final_seq}")),
        "{said}"
    );

    // A workflow this program does not register: the chain holds, nothing can be replayed,
    // exit 2.
    let foreign: Vec<String> = lines
        .iter()
        .map(|l| l.replace("\"planner-executor\"", "\"someone-else\""))
        .collect();
    let output = verify(dir.path(), "foreign.jsonl", &rechained(&foreign), false);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("its states cannot be replayed: session")
            && text(&output)
                .contains("workflow `someone-else`, which this program does not register"),
        "{}",
        text(&output)
    );
}

#[test]
fn import_refuses_a_changed_export_naming_the_line_unless_told_to_ignore_the_chain() {
    let dir = tempfile::tempdir().unwrap();
    let lines = demo_export(dir.path());
    let mut changed = lines.clone();
    changed[5] = changed[5].replacen("\"seq\":4", "\"seq\":4 ", 1);
    let text_of: String = changed.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.path().join("changed.jsonl"), text_of).unwrap();
    let output = openharness(
        dir.path(),
        &["import", "changed.jsonl", "--store", "other.redb"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("changed.jsonl: line 6: session")
            && text(&output).contains("seq 4: the line does not hash"),
        "{}",
        text(&output)
    );
    let imported = stdout(&openharness(
        dir.path(),
        &[
            "import",
            "changed.jsonl",
            "--store",
            "other.redb",
            "--ignore-chain",
        ],
    ));
    assert!(
        imported.contains(&format!("Imported {} events", lines.len() - 2)),
        "{imported}"
    );
}

#[test]
fn a_program_of_its_own_verifies_its_own_workflows_exports() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("ledger.redb");
    let session = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(ledger_session(RedbStore::open(&store).unwrap()));
    let run = |cli: &Cli, args: &[&str]| {
        let buffer = Buffer::default();
        let mut argv = vec!["ledger-tool", "--store", store.to_str().unwrap()];
        argv.extend_from_slice(args);
        cli.try_run_from(argv, Output::new(buffer.clone()))
            .map(|()| buffer.text())
    };
    let with_ledger = Cli::new().workflow(ledger()).unwrap();
    let exported = run(&with_ledger, &["export", session.as_str()]).unwrap();
    let file = dir.path().join("ledger.jsonl");
    std::fs::write(&file, exported).unwrap();

    let verified = run(&with_ledger, &["verify", file.to_str().unwrap()]).unwrap();
    assert!(
        verified.contains(&format!("verified: session {session} ({LEDGER})"))
            && verified.contains("reproduced"),
        "{verified}"
    );
    // A program that does not register the ledger cannot replay it: not checked, exit 2.
    let err = run(&Cli::new(), &["verify", file.to_str().unwrap()]).unwrap_err();
    assert!(matches!(err, CliError::Unverifiable { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string().contains(&format!(
            "workflow `{LEDGER}`, which this program does not register"
        )),
        "{err}"
    );
}

/// The fixture's path from this crate's folder.
fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(FIXTURE)
}

/// The committed export verifies here: its chain, and its final state hash reproduced by
/// today's demo handlers on whatever machine runs the test (CI's fresh clone). Never rewritten
/// unless asked: `OPENHARNESS_FIXTURES=overwrite cargo test -p openharness-cli --test verify`
/// records the demo again and writes it into place.
#[test]
fn the_committed_fixture_verifies() {
    let path = fixture_path();
    if std::env::var(REGENERATE).as_deref() == Ok("overwrite") {
        let dir = tempfile::tempdir().unwrap();
        let lines = demo_export(dir.path());
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let output = openharness(dir.path(), &["verify", path.to_str().unwrap(), "--json"]);
    let verdict: Option<Value> = serde_json::from_slice(&output.stdout).ok();
    let fixture = std::fs::read_to_string(&path).unwrap();
    let recorded = end_line(&fixture.lines().map(str::to_owned).collect::<Vec<_>>());
    assert!(
        output.status.success(),
        "{FIXTURE} no longer verifies with today's demo ({}):\n{}\nIf the demo's handlers \
         changed on purpose, record it again: `{REGENERATE}=overwrite cargo test -p \
         openharness-cli --test verify the_committed_fixture_verifies`, then read the diff \
         and commit it.",
        output.status,
        text(&output)
    );
    let verdict = verdict.unwrap();
    assert_eq!(verdict["verified"], true, "{verdict}");
    assert_eq!(
        verdict["sessions"][0]["finalStateHash"], recorded["stateHash"],
        "the final state hash the export recorded is reproduced"
    );
    assert_eq!(verdict["sessions"][0]["chain"], recorded["chain"]);
}
