//! `openharness eval`: an experiment file run against a recorded demo and a dataset, as a user
//! runs it — resumable, listed, shown, compared (with a regression gate that exits 1), and
//! re-scored without a model; and a dataset cut from production sessions (`eval dataset`),
//! run by an experiment file, versioned and diffed.
#![allow(clippy::unwrap_used, missing_docs)]

use std::process::Output;

use serde_json::Value;

mod binary;
use binary::openharness;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}\n{}",
        stdout(output),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

const SCORERS: &str = r#"
[[scorer]]
name = "published"
kind = "equals"
field = { state = "/release" }
expect = "published"

[[scorer]]
name = "reports-done"
kind = "matches"
field = { agent = "executor", pointer = "/summary" }
pattern = "^Done"
"#;

#[test]
fn an_experiment_file_forks_a_recording_resumes_compares_gates_and_rescores() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();
    // A variant that breaks the state at the fork point: the task count is off, so the run
    // never asks to publish.
    let file = format!(
        r#"
name = "wording"
repeats = 2
concurrency = 2

[[case]]
id = "first-task"
session = "{parent}"
at = {{ event = "task:started", n = 1 }}
answers = ["yes"]

[[variant]]
name = "baseline"

[[variant]]
name = "broken"
description = "the completed count is off by five"
state = {{ completed = 5 }}
{SCORERS}"#
    );
    std::fs::write(dir.path().join("wording.toml"), file).unwrap();

    let ran = openharness(dir.path(), &["eval", "run", "wording.toml"]);
    let text = stdout(&ran);
    assert!(ran.status.success(), "{text}");
    assert!(
        text.contains("eval [####################] 4/4 runs"),
        "{text}"
    );
    assert!(text.contains("4 runs recorded"), "{text}");
    assert!(
        text.contains("| published ⚠️ regressed |") || text.contains("| published |"),
        "{text}"
    );
    assert!(text.contains("started from identical state"), "{text}");

    // Again: resumed, nothing run twice.
    let again = json(&openharness(
        dir.path(),
        &["eval", "run", "wording.toml", "--json"],
    ));
    assert_eq!(
        (again["ran"].as_u64(), again["skipped"].as_u64()),
        (Some(0), Some(4))
    );

    let listed = json(&openharness(dir.path(), &["eval", "list", "--json"]));
    assert_eq!(listed[0]["name"], "wording");

    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "wording", "--json"],
    ));
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    let hashes: std::collections::BTreeSet<_> = runs
        .iter()
        .map(|r| r["run"]["stateHash"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(hashes.len(), 1, "every run started from one state");

    // The broken variant loses `published` on the case; the gate fails the command.
    let gated = openharness(
        dir.path(),
        &[
            "eval",
            "compare",
            "wording",
            "--max-regression",
            "0.05",
            "--case",
            "first-task",
        ],
    );
    let text = stdout(&gated);
    assert_eq!(gated.status.code(), Some(1), "{text}");
    assert!(text.contains("published: first-task loss"), "{text}");
    assert!(
        text.contains("they part at position 18 (counted from the root):"),
        "{text}"
    );
    assert!(
        text.contains(r#"payload, baseline → broken: [{"op":"add","path":"/stateEdit""#),
        "{text}"
    );
    assert!(
        text.contains(
            r#"state after it, baseline → broken: [{"op":"replace","path":"/completed","value":5}]"#
        ),
        "{text}"
    );
    let stderr = String::from_utf8_lossy(&gated.stderr);
    assert!(
        stderr
            .contains("`broken` regressed against `baseline` beyond 0.05: published (mean -1.000)"),
        "{stderr}"
    );

    let compared = json(&openharness(
        dir.path(),
        &["eval", "compare", "wording", "--json"],
    ));
    // One case: the report says the sign test can never reject with it.
    assert_eq!(
        compared["comparisons"][0]["notes"][0],
        "with 1 case the sign test can never reach p < 0.05 (its smallest p-value is 1.000); add cases: 6 or more can"
    );
    assert_eq!(compared["comparisons"][0]["minPValue"], 1.0);
    let published = compared["comparisons"][0]["scorers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scorer"] == "published")
        .unwrap()
        .clone();
    assert_eq!(published["losses"], 1);
    assert_eq!(published["baseline"]["passRate"], 1.0);
    assert_eq!(published["variant"]["passRate"], 0.0);
    // Pass rates with their 95% Wilson intervals: 0 of 2 runs is [0, 0.658...].
    assert_eq!(published["variant"]["passInterval"]["low"], 0.0);
    let high = published["variant"]["passInterval"]["high"]
        .as_f64()
        .unwrap();
    assert!((high - 0.657_619_772_493_347).abs() < 1e-9, "{high}");
    assert!(published["baseline"]["mean"]["halfWidth"].is_number());
    assert!(published["baseline"]["mean"].get("half_width").is_none());

    let markdown = stdout(&openharness(
        dir.path(),
        &["eval", "compare", "wording", "--markdown"],
    ));
    assert!(
        markdown.starts_with("## `wording`: `broken` against `baseline` (2 repeats per case)"),
        "{markdown}"
    );

    // The file's `max_regression` gates `eval compare` by itself (it is recorded with the
    // definition); `--report-only` reports and exits 0; `--max-regression` overrides it.
    // (A top-level key, so before the file's tables.)
    let gated_file = format!(
        "max_regression = 0.05\n{}",
        std::fs::read_to_string(dir.path().join("wording.toml")).unwrap()
    );
    std::fs::write(dir.path().join("gated.toml"), gated_file).unwrap();
    let again = json(&openharness(
        dir.path(),
        &["eval", "run", "gated.toml", "--json"],
    ));
    assert_eq!(again["ran"], 0, "the gate is not part of what a run does");
    let gated = openharness(dir.path(), &["eval", "compare", "wording"]);
    assert_eq!(gated.status.code(), Some(1), "{}", stdout(&gated));
    assert!(
        String::from_utf8_lossy(&gated.stderr)
            .contains("`broken` regressed against `baseline` beyond 0.05: published (mean -1.000)"),
        "{}",
        String::from_utf8_lossy(&gated.stderr)
    );
    let reported = openharness(dir.path(), &["eval", "compare", "wording", "--report-only"]);
    assert!(reported.status.success(), "{}", stdout(&reported));
    assert!(
        stdout(&reported)
            .contains("--report-only: the gate (max_regression 0.05) would have failed"),
        "{}",
        stdout(&reported)
    );
    let lenient = openharness(
        dir.path(),
        &["eval", "compare", "wording", "--max-regression", "1.5"],
    );
    assert!(lenient.status.success(), "{}", stdout(&lenient));

    // Re-scoring with a new scorer: four runs, no model.
    std::fs::write(
        dir.path().join("more.toml"),
        "[[scorer]]\nname = \"three-calls\"\nkind = \"agent_calls\"\nmax = 3\n",
    )
    .unwrap();
    let rescored = openharness(dir.path(), &["eval", "rescore", "wording", "more.toml"]);
    assert!(
        stdout(&rescored).contains("rescored 4 runs of `wording` with 1 scorer(s)"),
        "{}",
        stdout(&rescored)
    );
    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "wording", "--json"],
    ));
    for run in shown["runs"].as_array().unwrap() {
        assert_eq!(run["scores"]["three-calls"]["value"], 3.0, "{run}");
    }
}

#[test]
fn a_dataset_runs_new_sessions_and_bad_files_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cases.jsonl"),
        "{\"id\": \"yes\", \"input\": \"Ship it\", \"answers\": [\"yes\"]}\n{\"id\": \"no\", \"input\": \"Ship it\", \"answers\": [\"no\"]}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("data.toml"),
        format!(
            "name = \"data\"\nworkflow = \"planner-executor\"\ndataset = \"cases.jsonl\"\n{SCORERS}"
        ),
    )
    .unwrap();
    let ran = json(&openharness(
        dir.path(),
        &["eval", "run", "data.toml", "--json"],
    ));
    assert_eq!(ran["ran"], 2);
    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "data", "--json"],
    ));
    let passed: Vec<bool> = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["scores"]["published"]["passed"].as_bool().unwrap())
        .collect();
    assert_eq!(
        passed,
        [false, true],
        "`no` declines, `yes` publishes (runs in case order: no, yes)"
    );

    for (name, body, says) in [
        (
            "bad-kind.toml",
            "name = \"x\"\n[[scorer]]\nname = \"s\"\nkind = \"nope\"\n",
            "unknown variant `nope`",
        ),
        (
            "no-case.toml",
            "name = \"x\"\nworkflow = \"planner-executor\"\n",
            "it has no case",
        ),
        (
            "bad-line.toml",
            "name = \"x\"\ndataset = \"bad.jsonl\"\n",
            "bad.jsonl, line 2: not JSON",
        ),
        (
            "bad-regex.toml",
            "name = \"x\"\n[[scorer]]\nname = \"r\"\nkind = \"matches\"\nfield = { state = \"/x\" }\npattern = \"(\"\n",
            "scorer `r`: regex parse error",
        ),
    ] {
        std::fs::write(dir.path().join("bad.jsonl"), "{\"id\": \"a\"}\n{oops\n").unwrap();
        std::fs::write(dir.path().join(name), body).unwrap();
        let output = openharness(dir.path(), &["eval", "run", name]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(says), "{name}: {stderr}");
        assert!(!stderr.contains("panicked"), "{name}: {stderr}");
    }
    // A query over the recordings: the two dataset runs are an experiment's, so they are
    // left out; the demo is the one baseline.
    assert!(openharness(dir.path(), &["demo"]).status.success());
    std::fs::write(
        dir.path().join("query.toml"),
        format!("name = \"query\"\n[[recordings]]\nworkflow = \"planner-executor\"\nat = {{ event = \"task:started\", n = 2 }}\nanswers = [\"yes\"]\n{SCORERS}"),
    )
    .unwrap();
    let ran = json(&openharness(
        dir.path(),
        &["eval", "run", "query.toml", "--json"],
    ));
    assert_eq!(ran["ran"], 1);
    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "query", "--json"],
    ));
    assert_eq!(shown["runs"][0]["scores"]["published"]["passed"], true);

    let missing = openharness(dir.path(), &["eval", "show", "nothing"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no experiment named `nothing`"));
}

/// A planner-executor answer from the fake model: the planner's two tasks, else "Done.".
fn fake_answer(prompt: &str) -> Value {
    if prompt.starts_with("You are a planner") {
        serde_json::json!({ "tasks": ["Write the changelog", "Publish"] })
    } else {
        serde_json::json!({ "summary": "Done." })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_without_a_provider_asks_the_model_the_recording_asked_or_says_what_to_set() {
    use openharness_provider::testing::{self, FakeServer, RecordedRequest};

    let server = FakeServer::openai("no-key").await.unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::openai::json_output(&fake_answer(&request.prompt()))
    });
    let url = server.base_url();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    // `openharness(dir, args, env)` off the runtime's threads.
    let run = move |args: Vec<String>, env: Vec<(String, String)>| {
        let path = path.clone();
        tokio::task::spawn_blocking(move || {
            let mut command = binary::command(&path);
            command.args(&args);
            for (name, value) in env {
                command.env(name, value);
            }
            command.output().unwrap()
        })
    };
    let args = |list: &[&str]| list.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();

    // A session recorded against the model server (the host's own workflow is scripted).
    let recorded = run(
        args(&[
            "run",
            "planner-executor",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            "base-model",
            "--goal",
            "Ship it",
        ]),
        Vec::new(),
    )
    .await
    .unwrap();
    assert!(recorded.status.success(), "{}", stdout(&recorded));
    let sessions = json(
        &run(args(&["sessions", "--json"]), Vec::new())
            .await
            .unwrap(),
    );
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();
    // The model the provider was built with is recorded as the one each call asked.
    let events = json(
        &run(args(&["events", &parent, "--json"]), Vec::new())
            .await
            .unwrap(),
    );
    let started: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "agent:started")
        .collect();
    assert!(!started.is_empty());
    for event in &started {
        assert_eq!(event["payload"]["model"], "base-model", "{event}");
    }
    let asked_by_recording = server.request_count();
    assert!(asked_by_recording > 0);
    let file = |name: &str, top: &str| {
        format!(
            "name = \"{name}\"\n{top}\n[[case]]\nid = \"first-task\"\nsession = \"{parent}\"\nat = {{ event = \"task:started\", n = 1 }}\nanswers = [\"yes\"]\n\n[[variant]]\nname = \"baseline\"\n{SCORERS}"
        )
    };
    std::fs::write(dir.path().join("live.toml"), file("live", "")).unwrap();

    // Nothing says where that server is: refused, naming the variant and what to set; the
    // scripted model is not asked instead, and no run is recorded.
    let refused = run(args(&["eval", "run", "live.toml"]), Vec::new())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("variant `baseline` names no provider, so case `first-task` runs on the one its recording asked, `openai:base-model`; the workflow `planner-executor` asks `scripted`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "set OPENAI_API_KEY (and OPENAI_BASE_URL if the recording asked another server"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    let listed = json(
        &run(args(&["eval", "list", "--json"]), Vec::new())
            .await
            .unwrap(),
    );
    assert_eq!(listed, serde_json::json!([]));

    // With the server's address the recorded provider is rebuilt: the runs ask the model
    // server, and each records which provider it asked.
    let ran = run(
        args(&["eval", "run", "live.toml", "--json"]),
        vec![("OPENAI_BASE_URL".to_owned(), url.clone())],
    )
    .await
    .unwrap();
    assert_eq!(json(&ran)["ran"], 1);
    let after_rebuilt = server.request_count();
    assert!(
        after_rebuilt > asked_by_recording,
        "the runs asked the model server"
    );
    // ... and the model the recording asked, not the provider's default.
    for request in &server.requests()[asked_by_recording..] {
        assert_eq!(request.body["model"], "base-model", "{}", request.body);
    }
    let shown = json(
        &run(args(&["eval", "show", "live", "--json"]), Vec::new())
            .await
            .unwrap(),
    );
    assert!(
        shown["runs"][0]["run"]["provider"]
            .as_str()
            .unwrap()
            .starts_with("openai"),
        "{shown}"
    );
    assert_eq!(shown["runs"][0]["scores"]["reports-done"]["passed"], true);

    // The file's top-level provider is the run's configured model for such variants.
    let top = format!("provider = {{ kind = \"openai\", base_url = \"{url}\" }}\n");
    std::fs::write(dir.path().join("configured.toml"), file("configured", &top)).unwrap();
    let ran = run(
        args(&["eval", "run", "configured.toml", "--json"]),
        Vec::new(),
    )
    .await
    .unwrap();
    assert_eq!(json(&ran)["ran"], 1);
    assert!(server.request_count() > after_rebuilt);
}

#[test]
fn a_killed_eval_run_resumes_without_running_a_finished_run_again_and_leaves_nothing_running() {
    use std::io::BufRead;

    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();
    std::fs::write(
        dir.path().join("killed.toml"),
        format!(
            "name = \"killed\"\nrepeats = 4\nconcurrency = 2\n\n[[case]]\nid = \"first-task\"\nsession = \"{parent}\"\nat = {{ event = \"task:started\", n = 1 }}\nanswers = [\"yes\"]\n{SCORERS}"
        ),
    )
    .unwrap();

    // A slow model; SIGKILL once the first runs are recorded, the others under way (all four
    // were recorded as started before any ran).
    let mut child = binary::command(dir.path())
        .args(["eval", "run", "killed.toml"])
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "150")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines
        .by_ref()
        .map(Result::unwrap)
        .find(|line| line.starts_with("eval ["))
        .expect("a progress line");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!first.contains("4/4"), "killed too late to test: {first}");

    let resumed = json(&openharness(
        dir.path(),
        &["eval", "run", "killed.toml", "--json"],
    ));
    let count = |field: &str| resumed[field].as_u64().unwrap();
    assert_eq!(count("failed"), 0, "{resumed}");
    assert!(count("skipped") >= 1, "{resumed}");
    assert!(count("recovered") + count("interrupted") >= 1, "{resumed}");
    // Every run is kept (recorded before the kill), scored (its session had finished) or
    // run: the cut-off ones again, the ones the kill stopped before they started for the
    // first time, as their first attempt.
    assert_eq!(
        count("skipped") + count("recovered") + count("ran"),
        4,
        "every run is kept, scored or run: {resumed}"
    );
    assert!(count("ran") >= count("interrupted"), "{resumed}");

    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "killed", "--json"],
    ));
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_eq!(run["run"]["status"], "completed", "{run}");
        assert_eq!(run["scores"]["published"]["passed"], true, "{run}");
        // One kill: at most one attempt cut off before the one that finished.
        assert!(run["run"]["attempt"].as_u64().unwrap() <= 2, "{run}");
    }
    // No fork of the recording is left running.
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let forks: Vec<_> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parent"] == parent.as_str())
        .collect();
    assert!(forks.len() >= 4);
    for fork in forks {
        assert_ne!(fork["status"], "running", "{fork}");
    }
}

/// A judge named in the experiment file asks the provider the file names for it (the fake
/// model server, while the host's workflows are scripted), once per run and judged content:
/// a second (and third) re-score makes no request and says so; a changed rubric or changed
/// content asks again, and the model calls reported are the requests the server received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_names_its_provider_in_the_file_and_is_asked_once_per_run_and_content() {
    use openharness_provider::testing::{self, FakeServer, RecordedRequest};

    let server = FakeServer::openai("no-key").await.unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::openai::json_output(&fake_answer(&request.prompt()))
    });
    let url = server.base_url();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let run = move |args: &[&str]| {
        let path = path.clone();
        let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
        tokio::task::spawn_blocking(move || binary::command(&path).args(&args).output().unwrap())
    };

    // A recording made offline (scripted model): the runs never ask the server.
    assert!(run(&["demo"]).await.unwrap().status.success());
    let sessions = json(&run(&["sessions", "--json"]).await.unwrap());
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();
    // The judge: the planner-executor, its prompt a rubric and the run's content, on the
    // file's provider; it plans two tasks and runs them (three model calls a verdict) and
    // its score is the tasks it completed.
    let file = |rubric: &str, expected: &str| {
        format!(
            r#"name = "judged"
repeats = 2

[[case]]
id = "first-task"
session = "{parent}"
at = {{ event = "task:started", n = 1 }}
answers = ["yes"]
expected = "{expected}"

[[variant]]
name = "baseline"

[[scorer]]
name = "judge"
kind = "judge"
workflow = "planner-executor"
prompt = "{rubric} Expected: {{expected}}. The run: {{state}}"
score = "/completed"
pass_at = 2
provider = {{ kind = "openai", model = "judge-model", base_url = "{url}" }}
"#
        )
    };
    std::fs::write(
        dir.path().join("judged.toml"),
        file("Did it ship?", "published"),
    )
    .unwrap();

    let ran = json(
        &run(&["eval", "run", "judged.toml", "--json"])
            .await
            .unwrap(),
    );
    assert_eq!(ran["ran"], 2);
    assert_eq!(
        ran["judges"],
        serde_json::json!({ "verdicts": 2, "asked": 2, "reused": 0, "modelCalls": 6 })
    );
    assert_eq!(
        server.request_count(),
        6,
        "the judge asked the file's provider"
    );
    let requests = server.requests();
    assert!(
        requests[0]
            .prompt()
            .contains("Did it ship? Expected: \"published\""),
        "{}",
        requests[0].prompt()
    );
    assert!(
        requests.iter().all(|r| r.body["model"] == "judge-model"),
        "the judge's model"
    );
    let shown = json(&run(&["eval", "show", "judged", "--json"]).await.unwrap());
    let judge_sessions: Vec<Value> = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            assert_eq!(r["scores"]["judge"]["value"], 2.0, "{r}");
            assert_eq!(r["scores"]["judge"]["passed"], true, "{r}");
            r["scores"]["judge"]["judgeSession"].clone()
        })
        .collect();

    // Re-scored twice with the same file: every verdict reused, no request made.
    let rescored = json(
        &run(&["eval", "rescore", "judged", "judged.toml", "--json"])
            .await
            .unwrap(),
    );
    assert_eq!(rescored["runs"], 2);
    assert_eq!(rescored["modelCalls"], 0);
    assert_eq!(
        rescored["judges"],
        serde_json::json!({ "verdicts": 2, "asked": 0, "reused": 2, "modelCalls": 0 })
    );
    let again = run(&["eval", "rescore", "judged", "judged.toml"])
        .await
        .unwrap();
    let text = stdout(&again);
    assert!(again.status.success(), "{text}");
    assert!(
        text.contains("judges: 2 verdicts, 0 model calls (2 reused)"),
        "{text}"
    );
    assert_eq!(server.request_count(), 6, "no request made by re-scoring");
    let shown = json(&run(&["eval", "show", "judged", "--json"]).await.unwrap());
    for (r, session) in shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&judge_sessions)
    {
        assert_eq!(
            &r["scores"]["judge"]["judgeSession"], session,
            "the same verdict"
        );
    }

    // A changed rubric asks again: six calls, counted as the server saw them.
    std::fs::write(
        dir.path().join("rubric.toml"),
        file("Was it released?", "published"),
    )
    .unwrap();
    let rescored = json(
        &run(&["eval", "rescore", "judged", "rubric.toml", "--json"])
            .await
            .unwrap(),
    );
    assert_eq!(
        rescored["judges"],
        serde_json::json!({ "verdicts": 2, "asked": 2, "reused": 0, "modelCalls": 6 })
    );
    assert_eq!(server.request_count(), 12);

    // The judged content changes (the case's expected value, in the prompt; the runs are
    // kept): asked again, then reused.
    std::fs::write(
        dir.path().join("judged.toml"),
        file("Did it ship?", "shipped"),
    )
    .unwrap();
    let kept = json(
        &run(&["eval", "run", "judged.toml", "--json"])
            .await
            .unwrap(),
    );
    assert_eq!(
        (kept["ran"].as_u64(), kept["skipped"].as_u64()),
        (Some(0), Some(2))
    );
    for (asked, reused, calls, total) in [(2, 0, 6, 18), (0, 2, 0, 18)] {
        let rescored = json(
            &run(&["eval", "rescore", "judged", "judged.toml", "--json"])
                .await
                .unwrap(),
        );
        assert_eq!(rescored["judges"]["asked"], asked);
        assert_eq!(rescored["judges"]["reused"], reused);
        assert_eq!(rescored["modelCalls"], calls);
        assert_eq!(server.request_count(), total);
    }

    // Scorers without a judge: the output says no model was called.
    std::fs::write(dir.path().join("plain.toml"), SCORERS).unwrap();
    let plain = run(&["eval", "rescore", "judged", "plain.toml"])
        .await
        .unwrap();
    assert!(
        stdout(&plain).contains("no model called"),
        "{}",
        stdout(&plain)
    );
}

#[test]
fn a_prompt_variant_from_the_file_alone_runs_against_the_recording_and_says_what_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    let parent = sessions[0]["id"].as_str().unwrap().to_owned();
    // No Rust: the executor's prompt and system prompt rewritten by the file.
    let file = format!(
        r#"
name = "prompts"

[[case]]
id = "first-task"
session = "{parent}"
at = {{ event = "task:started", n = 1 }}
answers = ["yes"]

[[variant]]
name = "baseline"

[[variant]]
name = "one-line"
[variant.agents.executor]
prompt = "{{prompt}}\nAnswer in one line, at most twelve words."
wrap_system = "You are terse.{{system}}"
reasoning = "low"
{SCORERS}"#
    );
    std::fs::write(dir.path().join("prompts.toml"), file).unwrap();
    let ran = openharness(dir.path(), &["eval", "run", "prompts.toml"]);
    let text = stdout(&ran);
    assert!(ran.status.success(), "{text}");
    assert!(
        text.contains(
            "Changes: agent `executor`: system wrapped, prompt rewritten, reasoning low."
        ),
        "{text}"
    );

    // The variant's new calls were asked with the rewritten prompts; the baseline's as the
    // code wrote them, the first task's call too (the fork point cut the batch that started
    // it in the recording: the fork starts it again, with the variant's changes).
    let shown = json(&openharness(
        dir.path(),
        &["eval", "show", "prompts", "--json"],
    ));
    assert_eq!(
        shown["definition"]["variants"][1]["agents"]["executor"]["prompt"],
        "{prompt}\nAnswer in one line, at most twelve words."
    );
    for run in shown["runs"].as_array().unwrap() {
        let session = run["run"]["session"].as_str().unwrap();
        let variant = run["run"]["variant"].as_str().unwrap();
        let events = json(&openharness(dir.path(), &["events", session, "--json"]));
        let asked: Vec<&Value> = events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "agent:started" && e["payload"]["agentName"] == "executor")
            .collect();
        let rewritten = asked
            .iter()
            .filter(|started| {
                let prompt = started["payload"]["prompt"].as_str().unwrap();
                assert!(
                    prompt.starts_with("You are an executor working towards"),
                    "{prompt}"
                );
                prompt.ends_with("Answer in one line, at most twelve words.")
                    && started["payload"]["system"] == "You are terse."
            })
            .count();
        let expected = if variant == "one-line" {
            asked.len()
        } else {
            0
        };
        assert_eq!(
            (rewritten, asked.len()),
            (expected, 3),
            "{variant}: {asked:?}"
        );
    }
}

#[test]
fn a_dataset_from_production_is_added_shown_run_by_an_experiment_and_diffed_after_a_remove() {
    let dir = tempfile::tempdir().unwrap();
    assert!(openharness(dir.path(), &["demo"]).status.success());
    for goal in ["Refund order 42", "Refund order 43"] {
        let started = openharness(dir.path(), &["start", "planner-executor", goal]);
        assert!(started.status.success(), "{}", binary::text(&started));
    }
    let add = |extra: &[&str]| {
        let mut args = vec!["eval", "dataset", "add", "refunds"];
        args.extend_from_slice(extra);
        openharness(dir.path(), &args)
    };

    // The two refund sessions, at the position right after their second task started.
    let added = add(&[
        "--at",
        "event=task:started#2",
        "--search",
        "REFUND",
        "--answer",
        "yes",
    ]);
    let text = binary::stdout(&added);
    assert!(
        text.starts_with("added 2 cases — dataset `refunds` is at version 1\n"),
        "{text}"
    );
    assert_eq!(text.matches("\n+ ").count(), 2, "{text}");
    // Again: nothing added, and it says so.
    let again = binary::stdout(&add(&[
        "--at",
        "event=task:started#2",
        "--search",
        "refund",
    ]));
    assert_eq!(
        again,
        "added 0 cases (2 already present) — dataset `refunds` stays at version 1\n"
    );
    // A session without the point is skipped and named.
    let skipped = binary::stdout(&add(&["--at", "event=task:started#9", "--search", "ship"]));
    assert!(
        skipped.starts_with("added 0 cases (1 skipped) — dataset `refunds` stays at version 1\n"),
        "{skipped}"
    );
    assert!(
        skipped.contains(": no `task:started` #9 in it"),
        "{skipped}"
    );
    // A fork point that is no fork point is a usage error naming the forms there are.
    let bad = add(&["--at", "after=task:started"]);
    assert_eq!(bad.status.code(), Some(2), "{}", binary::text(&bad));
    assert!(
        binary::text(&bad).contains("`event=NAME[#N]`"),
        "{}",
        binary::text(&bad)
    );
    let bad = add(&["--at", "1", "--status", "asleep"]);
    assert!(
        binary::text(&bad).contains("--status: `asleep` is not a status"),
        "{}",
        binary::text(&bad)
    );

    // The dataset's log is no session to list.
    let sessions = json(&openharness(dir.path(), &["sessions", "--json"]));
    assert_eq!(sessions.as_array().unwrap().len(), 3);
    assert!(
        sessions
            .as_array()
            .unwrap()
            .iter()
            .all(|s| !s["id"].as_str().unwrap().starts_with("dataset:"))
    );

    let shown = json(&openharness(
        dir.path(),
        &["eval", "dataset", "show", "refunds", "--json"],
    ));
    assert_eq!(
        (shown["version"].as_u64(), shown["latest"].as_u64()),
        (Some(1), Some(1))
    );
    let cases = shown["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    let first_case = cases[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(cases[0]["answers"][0], "yes");
    assert_eq!(cases[0]["title"], "Refund order 42");
    assert_eq!(shown["changes"][0]["at"], "event=task:started#2");
    let human = binary::stdout(&openharness(
        dir.path(),
        &["eval", "dataset", "show", "refunds"],
    ));
    assert!(
        human.starts_with("dataset `refunds` at version 1 of 1: 2 cases\n"),
        "{human}"
    );

    // An experiment over the dataset: forks at the recorded positions, compared.
    let file = format!(
        r#"
name = "refund-wording"

[[datasets]]
name = "refunds"

[[variant]]
name = "baseline"

[[variant]]
name = "broken"
state = {{ completed = 5 }}
{SCORERS}"#
    );
    std::fs::write(dir.path().join("refunds.toml"), file).unwrap();
    let ran = json(&openharness(
        dir.path(),
        &["eval", "run", "refunds.toml", "--json"],
    ));
    assert_eq!(
        (ran["ran"].as_u64(), ran["failed"].as_u64()),
        (Some(4), Some(0))
    );
    let experiment = json(&openharness(
        dir.path(),
        &["eval", "show", "refund-wording", "--json"],
    ));
    let case = &experiment["definition"]["cases"][0];
    assert_eq!(
        case["dataset"],
        serde_json::json!({ "name": "refunds", "version": 1 })
    );
    assert_eq!(case["id"], first_case.as_str());
    for run in experiment["runs"].as_array().unwrap() {
        if run["run"]["variant"] == "baseline" {
            assert_eq!(run["scores"]["published"]["passed"], true, "{run}");
        }
        let position = cases
            .iter()
            .find(|c| c["id"] == run["run"]["case"])
            .unwrap()["position"]
            .clone();
        assert_eq!(run["run"]["forkPosition"], position);
    }
    let compared = json(&openharness(
        dir.path(),
        &["eval", "compare", "refund-wording", "--json"],
    ));
    let published = compared["comparisons"][0]["scorers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scorer"] == "published")
        .unwrap()
        .clone();
    assert_eq!(published["losses"], 2, "{published}");

    // Removed: a new version; the diff from 1 names the case that left.
    let removed = binary::stdout(&openharness(
        dir.path(),
        &[
            "eval",
            "dataset",
            "remove",
            "refunds",
            &first_case,
            "--reason",
            "a test account",
        ],
    ));
    assert_eq!(
        removed,
        "removed 1 case — dataset `refunds` is at version 2 (1 case)\n"
    );
    let diff = json(&openharness(
        dir.path(),
        &[
            "eval", "dataset", "diff", "refunds", "--from", "1", "--json",
        ],
    ));
    assert_eq!(
        (diff["from"].as_u64(), diff["to"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(diff["added"], serde_json::json!([]));
    assert_eq!(diff["removed"][0]["id"], first_case.as_str());
    let human = binary::stdout(&openharness(
        dir.path(),
        &["eval", "dataset", "diff", "refunds", "--from", "1"],
    ));
    assert!(
        human.starts_with("dataset `refunds` from version 1 to 2: 0 added, 1 removed\n- "),
        "{human}"
    );
    // Version 1 still holds both.
    let old = json(&openharness(
        dir.path(),
        &[
            "eval",
            "dataset",
            "show",
            "refunds",
            "--version",
            "1",
            "--json",
        ],
    ));
    assert_eq!(old["cases"].as_array().unwrap().len(), 2);
    let listed = json(&openharness(
        dir.path(),
        &["eval", "dataset", "list", "--json"],
    ));
    assert_eq!(listed[0]["name"], "refunds");
    assert_eq!(
        (listed[0]["cases"].as_u64(), listed[0]["version"].as_u64()),
        (Some(1), Some(2))
    );

    let beyond = openharness(
        dir.path(),
        &["eval", "dataset", "show", "refunds", "--version", "5"],
    );
    assert_eq!(beyond.status.code(), Some(1));
    assert!(
        binary::text(&beyond)
            .contains("dataset `refunds` has no version 5: its versions are 0 to 2"),
        "{}",
        binary::text(&beyond)
    );
    let unknown = openharness(
        dir.path(),
        &["eval", "dataset", "remove", "refunds", "nope"],
    );
    assert!(
        binary::text(&unknown).contains("dataset `refunds` has no case `nope`"),
        "{}",
        binary::text(&unknown)
    );
}
