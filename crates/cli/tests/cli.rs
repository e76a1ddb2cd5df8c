//! The acceptance flow of the `openharness` binary, as a new user runs it in an empty folder:
//! `demo`, then `sessions --json`, `events`, and `tape --at` at 0, at the end and past it; a
//! session that waits for a person (`demo --no-answer`, `respond`), a chat grown by `send`,
//! and `resume` on a session with nothing unfinished.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Output;

mod binary;
use binary::{openharness, stdout, word_after};

fn json(output: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(output)).unwrap()
}

/// The one session `sessions --json` lists with this workflow (forks of it left out).
fn listed(dir: &Path, workflow: &str) -> serde_json::Value {
    let sessions = json(&openharness(dir, &["sessions", "--json"]));
    let mut of: Vec<_> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["workflow"] == workflow && s["parent"].is_null())
        .cloned()
        .collect();
    assert_eq!(of.len(), 1, "{sessions}");
    of.remove(0)
}

fn failure(output: &Output) -> String {
    assert!(
        !output.status.success(),
        "expected a failure:\n{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn demo_then_sessions_events_and_tape() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&openharness(dir.path(), &["demo"]));
    assert!(
        demo.contains("planner started"),
        "shows agent names:\n{demo}"
    );
    assert!(
        demo.contains("3/3 tasks done"),
        "shows task counts:\n{demo}"
    );
    assert!(
        demo.contains("Three steps get a first release out"),
        "shows streamed text:\n{demo}"
    );
    assert!(
        dir.path().join(".openharness/store.redb").exists(),
        "records to the default store"
    );
    let session = word_after(&demo, "Session ");

    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let listed = sessions.as_array().unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], session.as_str());
    assert_eq!(listed[0]["workflow"], "planner-executor");
    // The demo answered the approval itself: the last turn ended (until), nothing waits.
    assert_eq!(listed[0]["status"], "idle");
    assert!(demo.contains("Answering request"), "{demo}");
    assert!(demo.contains("The turn ended (until)"), "{demo}");
    let len = listed[0]["count"].as_u64().unwrap();

    let output = openharness(dir.path(), &["events", &session, "--json"]);
    let raw = stdout(&output);
    assert!(raw.starts_with("[\n  {\n    \"seq\": 0,\n"), "{raw}");
    assert!(raw.ends_with("\n  }\n]\n"), "{raw}");
    let events = json(&output);
    assert_eq!(events.as_array().unwrap().len() as u64, len);
    assert_eq!(events[0]["name"], "workflow:started");
    assert_eq!(events[0]["seq"], 0);
    assert_eq!(events[len as usize - 1]["seq"], len - 1);

    let human = stdout(&openharness(dir.path(), &["events", &session]));
    assert_eq!(human.lines().count() as u64, len, "{human}");
    assert!(human.starts_with("    1  workflow:started "), "{human}");

    let at0 = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", "0", "--json"],
    ));
    assert_eq!(at0["position"], 0);
    assert_eq!(at0["len"], len);
    assert!(at0["current"].is_null());
    assert_eq!(at0["state"]["tasks"], serde_json::json!([]));

    let end = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &len.to_string(), "--json"],
    ));
    assert_eq!(end["position"], len);
    assert_eq!(end["current"]["name"], "workflow:completed");
    assert_eq!(end["state"]["completed"], 3);
    assert_eq!(end["state"]["release"], "published");

    let past = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &(len + 5).to_string(), "--json"],
    ));
    assert_eq!(past["position"], len, "clamps to len");
    assert_eq!(past["state"], end["state"]);

    let human = stdout(&openharness(dir.path(), &["tape", &session, "--at", "2"]));
    assert!(human.contains("position 2 of"), "{human}");
}

#[test]
fn errors_are_clear_and_exit_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    // Reading commands never create a store (a typo in --store leaves no empty file).
    let empty = stdout(&openharness(dir.path(), &["sessions"]));
    assert!(empty.contains("No sessions yet"), "{empty}");
    let typo = dir.path().join("typo.redb");
    let no_store = openharness(
        dir.path(),
        &[
            "--store",
            typo.to_str().unwrap(),
            "events",
            "no-such-session",
        ],
    );
    assert!(!no_store.status.success());
    let stderr = String::from_utf8_lossy(&no_store.stderr);
    assert!(stderr.contains("there is no store at"), "{stderr}");
    assert!(!typo.exists() && !dir.path().join(".openharness").exists());
    // Nor do diff, replay, bisect, or the store served read-only over MCP.
    for args in [
        &["diff", "a", "b"][..],
        &["replay", "a"][..],
        &["bisect", "a"][..],
        &["mcp", "serve"][..],
    ] {
        let mut with_store = vec!["--store", typo.to_str().unwrap()];
        with_store.extend_from_slice(args);
        let refused = openharness(dir.path(), &with_store);
        assert!(!refused.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains("there is no store at"),
            "{args:?}: {stderr}"
        );
        assert!(!typo.exists(), "{args:?} created the store");
    }

    stdout(&openharness(dir.path(), &["demo"]));
    let missing = openharness(dir.path(), &["tape", "no-such-session", "--at", "0"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(
        stderr.contains("no-such-session") && stderr.contains("not found"),
        "{stderr}"
    );

    let events = openharness(dir.path(), &["events", "no-such-session"]);
    assert!(!events.status.success());

    let store = dir.path().join("elsewhere.redb");
    let demo = openharness(dir.path(), &["--store", store.to_str().unwrap(), "demo"]);
    stdout(&demo);
    assert!(store.exists(), "--store picks the file");
}

/// `--store memory:` opens a new, empty store in memory: a reading command lists nothing from
/// it (not "there is no store") and no file or folder is written.
#[test]
fn a_memory_store_starts_empty_and_writes_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let listed = stdout(&openharness(
        dir.path(),
        &["--store", "memory:", "sessions"],
    ));
    assert!(listed.contains("No sessions yet in memory"), "{listed}");
    let json = json(&openharness(
        dir.path(),
        &["--store", "memory:", "sessions", "--json"],
    ));
    assert_eq!(json, serde_json::json!([]));
    let compact = openharness(dir.path(), &["--store", "memory:", "compact"]);
    assert!(!compact.status.success());
    let said = String::from_utf8_lossy(&compact.stderr);
    assert!(said.contains("has no file to compact"), "{said}");
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(written.is_empty(), "{written:?}");
}

#[test]
fn a_store_that_cannot_open_names_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    // The store's folder is a file: the store cannot be created.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    let store = blocked.join("store.redb");
    let stderr = failure(&openharness(
        dir.path(),
        &["--store", store.to_str().unwrap(), "demo"],
    ));
    // What the CLI tried, what the store tried, and the operating system's reason, in one line.
    assert!(
        stderr.starts_with("error: could not open the store at "),
        "{stderr}"
    );
    assert!(
        stderr.contains(": cannot create the directory "),
        "{stderr}"
    );
    let reason = std::fs::create_dir_all(&blocked).unwrap_err().to_string();
    assert_eq!(stderr.matches(&reason).count(), 1, "{stderr}");
    assert_eq!(
        stderr.matches(blocked.to_str().unwrap()).count(),
        2,
        "{stderr}"
    );
}

#[test]
fn a_demo_left_unanswered_waits_until_respond_answers_it_once() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&openharness(dir.path(), &["demo", "--no-answer"]));
    assert!(
        demo.contains("The turn ended (waiting_for_input)"),
        "{demo}"
    );
    assert!(demo.contains("? Publish the release? (yes/no)"), "{demo}");
    let session = word_after(&demo, "Session ");
    // The printed command names the session and the request.
    let command = demo
        .lines()
        .find(|l| l.trim_start().starts_with("openharness respond "))
        .unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[2], session, "{command}");
    let request = words[3].to_owned();

    let waiting = listed(dir.path(), "planner-executor");
    assert_eq!(waiting["status"], "waiting");
    let before = waiting["count"].as_u64().unwrap();
    let table = stdout(&openharness(dir.path(), &["sessions"]));
    assert!(
        table.contains("STATUS") && table.contains("waiting"),
        "{table}"
    );

    // resume has nothing to finish on a waiting session, and says how to answer it.
    let resume = stdout(&openharness(dir.path(), &["resume", &session]));
    assert!(resume.contains("nothing unfinished"), "{resume}");
    assert!(resume.contains(&request), "{resume}");

    // A fork at the pending question takes another answer; the parent still waits.
    let forked = json(&openharness(
        dir.path(),
        &[
            "fork",
            &session,
            "--at",
            &before.to_string(),
            "--answer",
            "no",
            "--json",
        ],
    ));
    let child = forked["session"].as_str().unwrap();
    let child_events = json(&openharness(dir.path(), &["events", child, "--json"]));
    let answers: Vec<&str> = child_events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "input:received")
        .map(|e| e["payload"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["no"], "{child_events}");
    assert!(
        !child_events.to_string().contains("release:published"),
        "answered no: not published"
    );
    assert_eq!(listed(dir.path(), "planner-executor")["status"], "waiting");
    // At the start, where no question is pending, an answer is refused; nothing recorded.
    let sessions_before = json(&openharness(dir.path(), &["sessions", "--json"]));
    let refused = failure(&openharness(
        dir.path(),
        &["fork", &session, "--at", "0", "--answer", "no"],
    ));
    assert!(refused.contains("no request is open"), "{refused}");
    let sessions_after = json(&openharness(dir.path(), &["sessions", "--json"]));
    assert_eq!(
        sessions_after.as_array().unwrap().len(),
        sessions_before.as_array().unwrap().len()
    );

    let answered = stdout(&openharness(
        dir.path(),
        &["respond", &session, &request, "yes"],
    ));
    assert!(answered.contains("release published"), "{answered}");
    assert!(answered.contains("The turn ended (until)"), "{answered}");
    let done = listed(dir.path(), "planner-executor");
    assert_eq!(done["status"], "idle");
    let after = done["count"].as_u64().unwrap();
    assert!(
        answered.contains(&format!(
            "the session has {after} events ({} new)",
            after - before
        )),
        "{answered}"
    );
    let events = json(&openharness(dir.path(), &["events", &session, "--json"]));
    let tail: Vec<&str> = events.as_array().unwrap()[before as usize..]
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tail,
        ["input:received", "release:published", "workflow:completed"]
    );
    assert_eq!(
        events[before as usize]["payload"]["requestId"],
        request.as_str()
    );

    // The same request again: refused, one clear line, nothing recorded.
    let again = failure(&openharness(
        dir.path(),
        &["respond", &session, &request, "yes"],
    ));
    assert!(
        again.contains(&request) && again.contains("already answered"),
        "{again}"
    );
    assert_eq!(listed(dir.path(), "planner-executor")["count"], after);
}

#[test]
fn send_grows_a_chat_session_and_resume_finds_nothing_unfinished() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&openharness(dir.path(), &["demo", "chat"]));
    assert!(demo.contains("message 3 of our conversation"), "{demo}");
    let session = word_after(&demo, "Session ");
    let before = listed(dir.path(), "chat");
    assert_eq!(before["id"], session.as_str());
    assert_eq!(before["status"], "idle");
    let before = before["count"].as_u64().unwrap();

    let sent = stdout(&openharness(dir.path(), &["send", &session, "Thanks!"]));
    assert!(
        sent.contains("You said \"Thanks!\"; that is message 4"),
        "the turn sees the whole conversation:\n{sent}"
    );
    assert!(sent.contains("The turn ended (idle)"), "{sent}");
    let after = listed(dir.path(), "chat");
    assert_eq!(after["id"], session.as_str(), "the same session grew");
    let after = after["count"].as_u64().unwrap();
    assert!(after > before);
    let end = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &after.to_string(), "--json"],
    ));
    let exchanges = end["state"]["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 4);
    assert_eq!(exchanges[3]["user"], "Thanks!");
    // Before the new turn's input, the state is the conversation before it.
    let back = json(&openharness(
        dir.path(),
        &["tape", &session, "--at", &before.to_string(), "--json"],
    ));
    assert_eq!(back["state"]["exchanges"].as_array().unwrap().len(), 3);

    let resume = stdout(&openharness(dir.path(), &["resume", &session]));
    assert!(resume.contains("nothing unfinished"), "{resume}");
    assert_eq!(
        listed(dir.path(), "chat")["count"],
        after,
        "nothing recorded"
    );
}

#[test]
fn turn_commands_fail_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let no_store = failure(&openharness(dir.path(), &["send", "no-such-session", "hi"]));
    assert!(no_store.contains("there is no store at"), "{no_store}");
    assert!(
        !dir.path().join(".openharness").exists(),
        "a command that continues a session creates no store"
    );
    stdout(&openharness(dir.path(), &["demo"]));
    let missing = failure(&openharness(dir.path(), &["send", "no-such-session", "hi"]));
    assert!(
        missing.contains("no-such-session") && missing.contains("not found"),
        "{missing}"
    );
    let missing = failure(&openharness(dir.path(), &["resume", "no-such-session"]));
    assert!(missing.contains("not found"), "{missing}");

    let demo = stdout(&openharness(dir.path(), &["demo", "--no-answer"]));
    let session = word_after(&demo, "Session ");
    let bad = failure(&openharness(
        dir.path(),
        &["respond", &session, "not-a-uuid", "yes"],
    ));
    assert!(bad.contains("not a request id"), "{bad}");
    let unknown = "01a20000-0000-7000-8000-000000000000";
    let wrong = failure(&openharness(
        dir.path(),
        &["respond", &session, unknown, "yes"],
    ));
    assert!(
        wrong.contains(unknown) && wrong.contains("no open input request"),
        "{wrong}"
    );
    let example = failure(&openharness(dir.path(), &["demo", "no-such-example"]));
    assert!(example.contains("unknown example"), "{example}");
}

#[test]
fn a_cut_off_turn_is_finished_by_resume_or_by_the_next_input() {
    let dir = tempfile::tempdir().unwrap();
    let demo = stdout(&openharness(dir.path(), &["demo", "chat"]));
    let session = word_after(&demo, "Session ");
    // The log a crash leaves while the assistant answers the third message: everything up
    // to its `agent:started` (its output, `agent:completed` and `workflow:completed` lost).
    let exported = stdout(&openharness(dir.path(), &["export", &session]));
    let lines: Vec<&str> = exported.lines().collect();
    let cut = lines
        .iter()
        .rposition(|l| l.contains("\"name\":\"agent:started\""))
        .unwrap();
    // Close the cut session with an end marker (the file starts with its begin line), so the
    // import takes it as a whole session rather than a truncated file.
    let events = lines[..=cut]
        .iter()
        .filter(|l| l.contains("\"seq\""))
        .count();
    let end = format!(r#"{{"session":"{session}","end":true,"count":{events}}}"#);
    let file = dir.path().join("cut.jsonl");
    std::fs::write(&file, lines[..=cut].join("\n") + "\n" + &end + "\n").unwrap();
    // Two stores holding the cut session: one finished by `resume`, one by `send`.
    let stores: Vec<String> = ["cut.redb", "cut-sent.redb"]
        .iter()
        .map(|name| {
            let store = dir.path().join(name).to_str().unwrap().to_owned();
            stdout(&openharness(
                dir.path(),
                &["--store", &store, "import", file.to_str().unwrap()],
            ));
            let sessions = json(&openharness(
                dir.path(),
                &["--store", &store, "sessions", "--json"],
            ));
            assert_eq!(sessions[0]["status"], "running");
            store
        })
        .collect();

    // New input finishes the cut-off turn first, then is answered: no client call needed.
    let sent = stdout(&openharness(
        dir.path(),
        &["--store", &stores[1], "send", &session, "hi"],
    ));
    assert!(
        sent.contains("last turn was cut off: it is finished first")
            && sent.contains("agent `assistant` was cut off"),
        "{sent}"
    );
    let sessions = json(&openharness(
        dir.path(),
        &["--store", &stores[1], "sessions", "--json"],
    ));
    assert_eq!(sessions[0]["status"], "idle");
    let len = sessions[0]["count"].as_u64().unwrap().to_string();
    let end = json(&openharness(
        dir.path(),
        &[
            "--store", &stores[1], "tape", &session, "--at", &len, "--json",
        ],
    ));
    let exchanges = end["state"]["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 4, "{end}");
    assert!(exchanges.iter().all(|e| e["reply"].is_string()), "{end}");

    let store = stores[0].as_str();

    let resumed = stdout(&openharness(
        dir.path(),
        &["--store", store, "resume", &session],
    ));
    assert!(
        resumed.contains("agent `assistant` was cut off"),
        "says what it finishes:\n{resumed}"
    );
    assert!(
        resumed.contains("message 3 of our conversation"),
        "{resumed}"
    );
    assert!(resumed.contains("The turn ended (idle)"), "{resumed}");
    let sessions = json(&openharness(
        dir.path(),
        &["--store", store, "sessions", "--json"],
    ));
    assert_eq!(sessions[0]["status"], "idle");
    let len = sessions[0]["count"].as_u64().unwrap();
    let end = json(&openharness(
        dir.path(),
        &[
            "--store",
            store,
            "tape",
            &session,
            "--at",
            &len.to_string(),
            "--json",
        ],
    ));
    let exchanges = end["state"]["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 3);
    assert!(exchanges.iter().all(|e| e["reply"].is_string()), "{end}");

    let again = stdout(&openharness(
        dir.path(),
        &["--store", store, "resume", &session],
    ));
    assert!(again.contains("nothing unfinished"), "{again}");
}

#[test]
fn sessions_are_searched_filtered_sorted_and_cut() {
    let dir = tempfile::tempdir().unwrap();
    stdout(&openharness(dir.path(), &["demo"]));
    stdout(&openharness(dir.path(), &["demo", "chat"]));
    let table = stdout(&openharness(dir.path(), &["sessions"]));
    assert!(table.lines().next().unwrap().ends_with("TITLE"), "{table}");
    assert!(
        table.contains("Hi! I'm planning a trip to Lisbon."),
        "{table}"
    );

    let found = json(&openharness(
        dir.path(),
        &["sessions", "--search", "LISBON", "--json"],
    ));
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["workflow"], "chat");
    assert_eq!(found[0]["agents"], serde_json::json!(["assistant"]));
    let longest = json(&openharness(
        dir.path(),
        &["sessions", "--sort", "longest", "--limit", "1", "--json"],
    ));
    assert_eq!(longest.as_array().unwrap().len(), 1);
    assert_eq!(longest[0]["workflow"], "planner-executor");
    let none = json(&openharness(
        dir.path(),
        &[
            "sessions",
            "--status",
            "waiting",
            "--workflow",
            "chat",
            "--json",
        ],
    ));
    assert_eq!(none, serde_json::json!([]));
    let bad = failure(&openharness(dir.path(), &["sessions", "--sort", "random"]));
    assert!(bad.contains("--sort"), "{bad}");
    let bad = failure(&openharness(
        dir.path(),
        &["sessions", "--status", "idle", "--status", "asleep"],
    ));
    assert!(bad.contains("`asleep` is not a status"), "{bad}");
}
