//! `openharness serve --online-scorers` with the README's file: every finished turn of the
//! served planner-executor is scored in the background onto the session's feedback log, the
//! session list sorts by the scores, a person's annotation is recorded and read back; a file
//! naming a workflow that is not served is refused before anything is served.
#![allow(clippy::unwrap_used, missing_docs)]

use std::time::Duration;

use openharness_testkit::block_on;
use serde_json::{Value, json};

mod binary;
mod serving;

/// The README's `--online-scorers` file.
fn readme_scorers() -> String {
    let readme = include_str!("../../../README.md");
    let section = &readme[readme
        .find("### Online scores and people's annotations")
        .unwrap()..];
    let open = section.find("```toml\n").unwrap() + "```toml\n".len();
    let close = section[open..].find("```").unwrap();
    section[open..open + close].to_owned()
}

fn call(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string);
    let response = block_on(serving::client(port).call(method, path, body.as_deref(), &[]));
    (response.status, response.json_or_null())
}

/// Polls `path` until `done` holds of its JSON (10 s at most).
fn until(port: u16, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = call(port, "GET", path, None);
        if status == 200 && done(&body) {
            return body;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "GET {path}: {status} {body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn served_turns_are_scored_online_listed_by_score_and_annotated() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("scorers.toml"), readme_scorers()).unwrap();
    let mut command = binary::command(dir.path());
    command.args([
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--online-scorers",
        "scorers.toml",
    ]);
    let (_server, port, first) = serving::start_serve(command);
    assert!(first.starts_with("Serving"), "{first}");

    // Two sessions: one left waiting for approval, one approved (published).
    let mut sessions = Vec::new();
    for goal in ["Ship version 1.0", "Ship version 2.0"] {
        let (status, started) = call(
            port,
            "POST",
            "/sessions",
            Some(&json!({ "workflow": "planner-executor", "input": goal })),
        );
        assert_eq!(status, 202, "{started}");
        sessions.push(started["session"].as_str().unwrap().to_owned());
    }
    let waiting = until(port, &format!("/sessions/{}", sessions[1]), |s| {
        s["status"] == "waiting"
    });
    let (_, events) = call(
        port,
        "GET",
        &format!("/sessions/{}/events", sessions[1]),
        None,
    );
    let request = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "input:requested")
        .unwrap()["id"]
        .clone();
    let (status, answered) = call(
        port,
        "POST",
        &format!("/sessions/{}/answer", sessions[1]),
        Some(&json!({ "request": request, "text": "yes" })),
    );
    assert_eq!(status, 202, "{answered}");
    let first_turn = waiting["len"].as_u64().unwrap();

    // Each turn scored by both scorers, on the feedback log.
    let feedback = until(port, &format!("/sessions/{}/feedback", sessions[1]), |f| {
        f["scores"].as_array().is_some_and(|s| s.len() == 4)
    });
    let score = |scorer: &str, turn: u64| -> Value {
        feedback["scores"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["scorer"] == scorer && s["turn"] == turn)
            .unwrap_or_else(|| panic!("no {scorer} of turn {turn}: {feedback}"))
            .clone()
    };
    assert_eq!(score("published", first_turn)["value"], 0.0);
    assert_eq!(score("cheap", first_turn)["passed"], true);
    let summary = until(port, &format!("/sessions/{}", sessions[1]), |s| {
        s["status"] == "idle"
    });
    let end = summary["len"].as_u64().unwrap();
    assert_eq!(score("published", end)["value"], 1.0);
    until(port, &format!("/sessions/{}/feedback", sessions[0]), |f| {
        f["scores"].as_array().is_some_and(|s| s.len() == 2)
    });

    // The list: the best first, the latest score of each.
    let best = until(port, "/sessions?scorer=published&sort=score", |p| {
        p["total"] == 2
    });
    assert_eq!(best["sessions"][0]["id"], sessions[1].as_str());
    assert_eq!(best["sessions"][0]["scores"]["published"], 1.0);
    assert_eq!(best["sessions"][1]["scores"]["published"], 0.0);

    // A person's word on the waiting one's turn.
    let (_, other) = call(port, "GET", &format!("/sessions/{}", sessions[0]), None);
    let (status, said) = call(
        port,
        "POST",
        &format!("/sessions/{}/annotations", sessions[0]),
        Some(&json!({ "by": "ana", "thumbs": "down", "labels": ["stuck"], "turn": other["len"] })),
    );
    assert_eq!(status, 201, "{said}");
    let (_, queue) = call(
        port,
        "GET",
        "/sessions?annotated=false&workflow=planner-executor",
        None,
    );
    assert_eq!(queue["total"], 1, "{queue}");
    assert_eq!(queue["sessions"][0]["id"], sessions[1].as_str());
}

#[test]
fn an_online_scorers_file_naming_an_unserved_workflow_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("scorers.toml"),
        readme_scorers().replace("planner-executor", "nope"),
    )
    .unwrap();
    let refused = binary::openharness(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--online-scorers",
            "scorers.toml",
        ],
    );
    assert!(!refused.status.success());
    let said = binary::text(&refused);
    assert!(said.contains("workflow `nope`"), "{said}");
    std::fs::write(dir.path().join("bad.toml"), "[[workflow]]\nname = 1\n").unwrap();
    let refused = binary::openharness(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--online-scorers",
            "bad.toml",
        ],
    );
    assert!(!refused.status.success());
    assert!(
        binary::text(&refused).contains("--online-scorers bad.toml"),
        "{}",
        binary::text(&refused)
    );
}

#[test]
fn a_person_annotates_from_the_command_line_and_the_list_shows_it() {
    let dir = tempfile::tempdir().unwrap();
    let demo = binary::openharness(dir.path(), &["demo"]);
    assert!(demo.status.success(), "{}", binary::text(&demo));
    let listed = binary::openharness(dir.path(), &["sessions", "--json"]);
    let sessions: Value = serde_json::from_str(&binary::stdout(&listed)).unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_owned();
    let len = sessions[0]["count"].as_u64().unwrap();

    let said = binary::openharness(
        dir.path(),
        &[
            "annotate",
            &session,
            "--by",
            "ana",
            "--thumbs",
            "down",
            "--label",
            "slow",
            "--label",
            "wordy",
            "--note",
            "too many tasks",
            "--turn",
            &len.to_string(),
            "--json",
        ],
    );
    assert!(said.status.success(), "{}", binary::text(&said));
    let recorded: Value = serde_json::from_str(&binary::stdout(&said)).unwrap();
    assert_eq!(recorded["by"], "ana");
    assert_eq!(recorded["labels"], json!(["slow", "wordy"]));

    let feedback = binary::openharness(dir.path(), &["feedback", &session]);
    let text = binary::stdout(&feedback);
    assert!(
        text.contains("ana -1 #slow #wordy (turn ending at"),
        "{text}"
    );
    assert!(text.contains(": too many tasks"), "{text}");

    let annotated = binary::openharness(dir.path(), &["sessions", "--annotated", "true", "--json"]);
    let rows: Value = serde_json::from_str(&binary::stdout(&annotated)).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["annotations"]["down"], 1);
    let table = binary::stdout(&binary::openharness(
        dir.path(),
        &["sessions", "--label", "slow"],
    ));
    assert!(table.contains("[+0 -1 #slow #wordy]"), "{table}");
    let queue = binary::openharness(dir.path(), &["sessions", "--annotated", "false", "--json"]);
    assert_eq!(binary::stdout(&queue).trim(), "[]");

    // Bad input says what is wrong and records nothing.
    for (args, words) in [
        (
            vec!["annotate", session.as_str(), "--by", "ana"],
            "says something",
        ),
        (
            vec![
                "annotate",
                session.as_str(),
                "--by",
                "ana",
                "--thumbs",
                "sideways",
            ],
            "not a thumb",
        ),
        (
            vec![
                "annotate",
                session.as_str(),
                "--by",
                "ana",
                "--note",
                "x",
                "--turn",
                "100000",
            ],
            "turn 100000",
        ),
        (
            vec![
                "annotate",
                session.as_str(),
                "--by",
                "ana",
                "--note",
                "x",
                "--run",
                "a/b",
            ],
            "EXPERIMENT/CASE/VARIANT/REPEAT",
        ),
        (vec!["sessions", "--min-score", "0.5"], "--scorer"),
        (vec!["sessions", "--sort", "lowestScore"], "--scorer"),
    ] {
        let refused = binary::openharness(dir.path(), &args);
        assert!(!refused.status.success(), "{args:?}");
        assert!(
            binary::text(&refused).contains(words),
            "{args:?}: {}",
            binary::text(&refused)
        );
    }
    let feedback = binary::openharness(dir.path(), &["feedback", &session, "--json"]);
    let feedback: Value = serde_json::from_str(&binary::stdout(&feedback)).unwrap();
    assert_eq!(feedback["annotations"].as_array().unwrap().len(), 1);
}
