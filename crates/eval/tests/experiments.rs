//! Experiments end to end on the planner-executor example and the scripted model: forks of a
//! recording start from identical state without a model call for the prefix, runs are
//! tagged in the experiment's log and resumable, scores re-computable, comparisons derived.

#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openharness::builtin::SessionForked;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness_eval::{
    Case, Comparison, EvalError, Experiment, ExperimentRecord, ForkAt, RunStatus, Variant, rescore,
    scorers,
};
use openharness_example_planner_executor as example;
use openharness_host::Host;
use serde_json::{Value, json};

/// A model whose executor reports `summary` for every task, counting its calls.
fn executor_says(summary: &'static str, calls: Arc<AtomicUsize>) -> ScriptedProvider {
    ScriptedProvider::new().fallback("executor", move |_| {
        calls.fetch_add(1, Ordering::SeqCst);
        Reply::output(json!({ "summary": summary }))
    })
}

/// A store holding one recorded, published planner-executor session; its host; the session.
async fn recorded() -> (MemoryStore, Host, SessionId, ScriptedProvider) {
    let store = MemoryStore::new();
    let script = example::scripted_provider();
    let workflow = example::workflow(store.clone(), script.clone()).unwrap();
    let first = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    let done = workflow
        .respond(
            &first.session,
            first.open_requests[0],
            "yes",
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert!(done.state.is_published());
    let host = Host::new(store.clone()).workflow(workflow).unwrap();
    (store, host, first.session, script)
}

fn published() -> openharness_eval::scorers::BuiltinScorer {
    scorers::predicate("published", |state: &Value| state["release"] == "published")
}

fn says_done() -> openharness_eval::scorers::BuiltinScorer {
    scorers::matches(
        "says-done",
        openharness_eval::Field::output("executor", "/summary"),
        "(?i)\\bdone\\b",
    )
    .unwrap()
}

/// The experiment `executor-wording` over the recording `parent`, forked at its second
/// `task:started` (approval answered "yes"): the variant `done` (model `done-model`, whose
/// executor says "Task done.", counted in `good_calls`) against `vague` (its model and what
/// its executor says, counted in `poor_calls`), three repeats each, scored by `published`
/// and `says-done`.
fn executor_wording(
    host: &Host,
    parent: &SessionId,
    (vague_model, vague_says): (&str, &'static str),
    good_calls: &Arc<AtomicUsize>,
    poor_calls: &Arc<AtomicUsize>,
) -> Experiment {
    Experiment::new("executor-wording", host.clone())
        .case(
            Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
                .answers(["yes"]),
        )
        .variant(Variant::new("done").provider(
            "done-model",
            executor_says("Task done.", Arc::clone(good_calls)),
        ))
        .variant(Variant::new("vague").provider(
            vague_model,
            executor_says(vague_says, Arc::clone(poor_calls)),
        ))
        .repeats(3)
        .scorer(published())
        .scorer(says_done())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn variants_fork_a_recording_from_identical_state_without_calling_the_model_for_the_prefix() {
    let (store, host, parent, script) = recorded().await;
    let calls_before = script.calls();
    let (good_calls, poor_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let progress = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&progress);
    let vague = ("vague-model", "Worked on it.");
    let experiment = executor_wording(&host, &parent, vague, &good_calls, &poor_calls)
        .concurrency(3)
        .on_progress(move |p| seen.store(p.done, Ordering::SeqCst));
    let ran = experiment.run().await.unwrap();
    assert_eq!((ran.ran, ran.skipped, ran.failed), (6, 0, 0));
    assert_eq!(progress.load(Ordering::SeqCst), 6);

    // The prefix (the planner's call) came from the log: the recording's model was not asked
    // again, and each variant's model did only the suffix: three tasks per run.
    assert_eq!(script.calls(), calls_before);
    assert_eq!(good_calls.load(Ordering::SeqCst), 9);
    assert_eq!(poor_calls.load(Ordering::SeqCst), 9);

    // Every run is a real session forked from the parent, with the hash of the state it
    // started from: one hash for all six.
    let record = &ran.record;
    assert_eq!(record.runs.len(), 6);
    let mut hashes = std::collections::BTreeSet::new();
    for entry in record.runs.values() {
        assert_eq!(entry.run.status, RunStatus::Completed);
        let session = entry.run.session.clone().unwrap();
        let first = store.events(&session, 0..1).await.unwrap().remove(0);
        let forked = first.decode::<SessionForked>().unwrap();
        assert_eq!(forked.parent, parent);
        assert_eq!(forked.state_hash, entry.run.state_hash);
        hashes.insert(forked.state_hash.unwrap());
        assert_eq!(entry.run.reason.as_deref(), Some("until"));
        assert_eq!(entry.run.turns, 2, "the fork's turn, then the answer");
        assert_eq!(entry.scores["published"].value, Some(1.0));
    }
    assert_eq!(hashes.len(), 1);
    let parent_state = host
        .state_at(
            &parent,
            record
                .runs
                .values()
                .next()
                .unwrap()
                .run
                .fork_position
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        hashes.first().unwrap(),
        &openharness::tape::json_hash(&parent_state)
    );

    // The comparison is derived from the log: the vague wording loses `says-done` on the
    // one case, ties `published`.
    let comparison = Comparison::of(record, "vague", None, 0.05).unwrap();
    assert_eq!(comparison.baseline, "done");
    assert_eq!(comparison.identical_start, Some(true));
    let says = comparison
        .scorers
        .iter()
        .find(|s| s.scorer == "says-done")
        .unwrap();
    assert_eq!((says.wins, says.ties, says.losses), (0, 0, 1));
    assert_eq!(says.delta, Some(-1.0));
    assert!(says.regressed);
    assert_eq!(says.variant.pass_at_k, Some(0.0));
    assert_eq!(says.baseline.pass_hat_k, Some(1.0));
    let publish = comparison
        .scorers
        .iter()
        .find(|s| s.scorer == "published")
        .unwrap();
    assert_eq!((publish.wins, publish.ties, publish.losses), (0, 1, 0));
    assert!(!publish.regressed);
    let gate = comparison.gate().unwrap_err();
    assert!(gate.contains("says-done"), "{gate}");
    let report = comparison.markdown();
    assert!(
        report.contains(
            "| says-done ⚠️ regressed | 1.000 ± 0.000 | 0.000 ± 0.000 | -1.000 | 0/0/1 |"
        ),
        "{report}"
    );
    assert!(report.contains("identical state"), "{report}");

    // Running it again resumes: nothing is run twice.
    let again = experiment.run().await.unwrap();
    assert_eq!((again.ran, again.skipped), (0, 6));
    assert_eq!(
        good_calls.load(Ordering::SeqCst) + poor_calls.load(Ordering::SeqCst),
        18
    );
    assert_eq!(again.record.runs, ran.record.runs);

    // A variant changed under the same name (another model) answers another question: its
    // runs run again, the others are kept.
    let vague = ("vague-model-v2", "Done, roughly.");
    let changed = executor_wording(&host, &parent, vague, &good_calls, &poor_calls)
        .run()
        .await
        .unwrap();
    assert_eq!((changed.ran, changed.skipped), (3, 3));
    let vague = changed
        .record
        .runs
        .values()
        .find(|e| e.run.variant == "vague")
        .unwrap();
    assert_eq!(vague.run.attempt, 2);
    assert!(vague.scores["says-done"].passed);

    // The experiment is listed, and reads back the same from the store.
    let listed = openharness_eval::list(&store).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "executor-wording");
    let loaded = ExperimentRecord::load(&store, "executor-wording")
        .await
        .unwrap();
    assert_eq!(loaded.runs, changed.record.runs);
}

#[tokio::test]
async fn rescoring_reads_recorded_runs_and_calls_no_model() {
    let (store, host, parent, _) = recorded().await;
    let calls = Arc::new(AtomicUsize::new(0));
    Experiment::new("rescore", host.clone())
        .case(
            Case::recording("release", parent, ForkAt::state(|s| s["completed"] == 1))
                .answers(["yes"]),
        )
        .variant(Variant::new("done").provider("m", executor_says("done", Arc::clone(&calls))))
        .repeats(2)
        .scorer(published())
        .run()
        .await
        .unwrap();
    let after_run = calls.load(Ordering::SeqCst);
    assert_eq!(
        after_run, 4,
        "a fork after the first task completes runs two tasks"
    );

    let two_tasks_done = scorers::predicate("completed-3", |s| s["completed"] == 3);
    let said = scorers::contains(
        "said-done",
        openharness_eval::Field::output("executor", "/summary"),
        "done",
    );
    let done = rescore(
        &host,
        "rescore",
        &[Arc::new(two_tasks_done), Arc::new(said)],
        4,
    )
    .await
    .unwrap();
    assert_eq!((done.runs, done.scores), (2, 4));
    assert_eq!(calls.load(Ordering::SeqCst), after_run);
    let record = ExperimentRecord::load(&store, "rescore").await.unwrap();
    for entry in record.runs.values() {
        assert_eq!(entry.scores.len(), 3);
        assert!(entry.scores["completed-3"].passed);
        assert!(entry.scores["said-done"].passed);
    }
    let missing = rescore(&host, "nope", &[], 1).await.unwrap_err();
    assert!(
        matches!(missing, EvalError::UnknownExperiment(_)),
        "{missing}"
    );
}

#[tokio::test]
async fn cases_from_inputs_run_new_sessions_and_failed_runs_are_retried_on_request() {
    let store = MemoryStore::new();
    // The planner answers the first two calls and then fails: one case of three fails.
    let provider = ScriptedProvider::new()
        .respond("planner", Reply::output(json!({ "tasks": ["a"] })))
        .respond("planner", Reply::output(json!({ "tasks": ["b", "c"] })))
        .fallback("executor", |_| Reply::output(json!({ "summary": "done" })));
    let workflow = example::workflow(store.clone(), provider.clone()).unwrap();
    let host = Host::new(store.clone()).workflow(workflow).unwrap();
    let cases = Case::from_jsonl(
        "cases.jsonl",
        "{\"id\": \"one\", \"input\": \"ship a\", \"answers\": [\"yes\"], \"expected\": {\"tasks\": 1}}\n\
         {\"id\": \"two\", \"input\": \"ship b\", \"answers\": [\"no\"], \"expected\": {\"tasks\": 2}}\n\
         {\"id\": \"three\", \"input\": \"ship c\"}\n",
    )
    .unwrap();
    let experiment = Experiment::new("inputs", host.clone())
        .cases(cases)
        .concurrency(1)
        .scorer(scorers::equals(
            "task-count",
            openharness_eval::Field::state("/completed"),
            openharness_eval::Expect::case("/tasks"),
        ));
    let ran = experiment.run().await.unwrap();
    assert_eq!((ran.ran, ran.failed), (3, 0));
    let runs: Vec<_> = ran.record.runs.values().collect();
    // `three` ran out of script: the planner's call failed, recorded in the run's session.
    let three = runs.iter().find(|e| e.run.case == "three").unwrap();
    assert!(!three.scores["task-count"].passed);
    assert!(
        three.scores["task-count"]
            .detail
            .as_deref()
            .unwrap()
            .contains("expects nothing at `/tasks`")
    );
    let one = runs.iter().find(|e| e.run.case == "one").unwrap();
    assert!(one.scores["task-count"].passed);
    assert_eq!(one.run.reason.as_deref(), Some("until"));
    let two = runs.iter().find(|e| e.run.case == "two").unwrap();
    assert!(two.scores["task-count"].passed);
    assert_eq!(two.run.turns, 2);
    assert_eq!(
        host.state_at(two.run.session.as_ref().unwrap(), u64::MAX)
            .await
            .unwrap()["release"],
        "declined"
    );

    // A run whose workflow fails is recorded as failed, and run again only when asked.
    let failing = Experiment::new("failing", host.clone())
        .case(Case::input("x", "ship x"))
        .run_options(|| RunOptions::new().max_agent_calls(0));
    let first = failing.run().await.unwrap();
    let entry = first.record.runs.values().next().unwrap();
    assert_eq!(entry.run.reason.as_deref(), Some("max_agent_calls"));
    let unknown = Experiment::new("unknown", host.clone())
        .case(Case::input("x", "go").workflow("no-such-workflow"))
        .run()
        .await
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("no workflow named `no-such-workflow`"),
        "{unknown}"
    );
    assert!(matches!(
        ExperimentRecord::load(&store, "unknown").await,
        Err(EvalError::UnknownExperiment(_))
    ));
}

#[tokio::test]
async fn a_failed_run_is_kept_until_retried_and_then_run_again_as_a_new_attempt() {
    // Append #1 is the experiment's definition, #2 its runs as started (`eval:dispatched`),
    // #3 the run's first event: it fails.
    let store = openharness::store::FailingStore::fail_only(MemoryStore::new(), 3);
    let provider = ScriptedProvider::new()
        .fallback("planner", |_| Reply::output(json!({ "tasks": ["a"] })))
        .fallback("executor", |_| Reply::output(json!({ "summary": "done" })));
    let workflow = example::workflow(MemoryStore::new(), provider).unwrap();
    let host = Host::new(store.clone()).workflow(workflow).unwrap();
    let experiment = Experiment::new("flaky-store", host.clone())
        .case(Case::input("x", "ship x").answers(["yes"]))
        .scorer(published());
    let first = experiment.run().await.unwrap();
    assert_eq!((first.ran, first.failed), (1, 1));
    let entry = first.record.runs.values().next().unwrap();
    assert_eq!(entry.run.status, RunStatus::Failed);
    assert!(
        entry
            .run
            .error
            .as_deref()
            .unwrap()
            .contains("injected failure on append #3"),
        "{:?}",
        entry.run.error
    );
    assert!(entry.scores.is_empty());

    // Resumed without --retry-failed: the failed run stays as it is.
    let again = experiment.run().await.unwrap();
    assert_eq!((again.ran, again.skipped), (0, 1));

    // With it: a second attempt, in a new session, that passes.
    let retried = experiment.clone().retry_failed(true).run().await.unwrap();
    assert_eq!((retried.ran, retried.failed), (1, 0));
    let entry = retried.record.runs.values().next().unwrap();
    assert_eq!(entry.run.attempt, 2);
    assert_eq!(entry.run.status, RunStatus::Completed);
    assert!(entry.scores["published"].passed);
}

#[tokio::test]
async fn a_variant_that_edits_the_state_starts_from_the_edit_and_its_tape_agrees() {
    let (store, host, parent, _) = recorded().await;
    let ran = Experiment::new("edited", host.clone())
        .case(
            Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
                .answers(["yes"]),
        )
        .variant(Variant::new("as-recorded").provider("m", executor_says("done", Arc::default())))
        .variant(
            Variant::new("new-goal")
                .provider("m", executor_says("done", Arc::default()))
                .edit_state(json!({ "goal": "Ship version 0.2" })),
        )
        .scorer(published())
        .run()
        .await
        .unwrap();
    let runs: Vec<_> = ran.record.runs.values().collect();
    assert_eq!(
        runs[0].run.state_hash, runs[1].run.state_hash,
        "one parent state, hashed before the edit"
    );
    let edited = runs.iter().find(|e| e.run.variant == "new-goal").unwrap();
    let session = edited.run.session.clone().unwrap();
    let forked = store.events(&session, 0..1).await.unwrap()[0]
        .decode::<SessionForked>()
        .unwrap();
    assert_eq!(
        forked.state_edit,
        Some(json!({ "goal": "Ship version 0.2" }))
    );
    // Stepping through the fork (position 0 and after) shows the edited state, as the run saw it.
    assert_eq!(
        host.state_at(&session, 0).await.unwrap()["goal"],
        "Ship version 0.2"
    );
    assert_eq!(
        host.state_at(&session, u64::MAX).await.unwrap()["goal"],
        "Ship version 0.2"
    );
    let requests = host
        .store()
        .all_events(&session)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.name == "agent:started")
        .map(|e| e.payload["prompt"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>();
    assert!(
        requests.iter().all(|p| p.contains("Ship version 0.2")),
        "{requests:?}"
    );
    // Compared with its parent, the edited fork parts at its fork point, by the edit.
    let compared = host.compare(&parent, &session).await.unwrap();
    assert_eq!(compared.agree, edited.run.fork_position.unwrap());
    let divergence = compared.divergence.unwrap();
    assert_eq!(divergence.b.unwrap().name, "session:forked");
    assert_eq!(divergence.a.unwrap().name, "agent:started");
    let patch = serde_json::to_value(divergence.state_patch.unwrap()).unwrap();
    assert!(
        patch
            .as_array()
            .unwrap()
            .iter()
            .any(|op| op["path"] == "/goal"),
        "{patch}"
    );
    // A fork of the edited fork at its position 0 starts from the edited state too.
    let again = host
        .prepare_fork(
            &session,
            openharness_host::ForkPoint::Position { position: 0 },
        )
        .await
        .unwrap();
    assert_eq!(again.state().unwrap()["goal"], "Ship version 0.2");
    assert!(edited.scores["published"].passed);
}

mod judging {
    //! A judge: a workflow of its own whose agent answers with a score and a reason.
    use openharness::prelude::*;
    use openharness::schemars;

    #[event("verdict:given")]
    #[derive(Debug, Clone)]
    pub(crate) struct Judged {
        pub(crate) score: f64,
        pub(crate) reason: String,
    }

    #[event]
    pub(crate) enum JudgeEvent {
        UserInput,
        Judged,
    }

    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
    pub(crate) struct Verdict {
        pub(crate) score: f64,
        pub(crate) reason: String,
    }

    #[handler(JudgeEvent)]
    impl Verdict {
        fn asked(&mut self, _input: &UserInput) {}
        fn judged(&mut self, judged: &Judged) {
            self.score = judged.score;
            self.reason = judged.reason.clone();
        }
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub(crate) struct Rating {
        pub(crate) score: f64,
        pub(crate) reason: String,
    }

    pub(crate) struct Grader;

    #[agent(output = Rating, emits = [Judged])]
    impl Grader {
        fn prompt(&self, _state: &Verdict, input: &UserInput) -> String {
            input.text.clone()
        }
        fn on_output(&self, rating: Rating, _input: &UserInput) -> Judged {
            Judged {
                score: rating.score,
                reason: rating.reason,
            }
        }
    }
}

#[tokio::test]
async fn a_judge_is_a_recorded_session_and_phase_fork_points_are_found_in_the_states() {
    let (store, host, parent, _) = recorded().await;
    let judge_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&judge_calls);
    let judge_model = ScriptedProvider::new().fallback("grader", move |request| {
        counted.fetch_add(1, Ordering::SeqCst);
        let published = request.prompt.contains("\"release\":\"published\"");
        Reply::output(json!({
            "score": if published { 0.9 } else { 0.1 },
            "reason": if published { "it shipped" } else { "it did not ship" },
        }))
    });
    let judge_workflow = Workflow::builder("judge")
        .initial_state(judging::Verdict::default())
        .agent(judging::Grader)
        .store(MemoryStore::new())
        .provider(judge_model)
        .build()
        .unwrap();
    let grader = openharness_eval::scorers::judge(
        "judge",
        <dyn openharness_host::Hosted>::of(judge_workflow),
        "/score",
        0.5,
        |run| format!("Did this release ship? {}", run.state()),
    )
    .reason_at("/reason");
    // The second entry into "two tasks completed": there is one, so this finds none...
    let none = Experiment::new("no-phase", host.clone())
        .case(Case::recording(
            "c",
            parent.clone(),
            ForkAt::Phase {
                phase: json!(2),
                occurrence: openharness_eval::Occurrence::Nth(2),
                field: "/completed".into(),
            },
        ))
        .run()
        .await
        .unwrap_err();
    assert!(matches!(none, EvalError::NoForkPoint { .. }), "{none}");
    // ...and the first is right after the second task:completed.
    let ran = Experiment::new("judged", host.clone())
        .case(
            Case::recording(
                "after-two",
                parent.clone(),
                ForkAt::Phase {
                    phase: json!(2),
                    occurrence: openharness_eval::Occurrence::FIRST,
                    field: "/completed".into(),
                },
            )
            .answers(["yes"]),
        )
        .variant(Variant::new("m").provider("m", executor_says("done", Arc::default())))
        .repeats(2)
        .scorer(grader)
        .run()
        .await
        .unwrap();
    let parent_events = store.all_events(&parent).await.unwrap();
    for entry in ran.record.runs.values() {
        let at = entry.run.fork_position.unwrap() as usize;
        assert_eq!(parent_events[at - 1].name, "task:completed");
        assert_eq!(
            parent_events[..at]
                .iter()
                .filter(|e| e.name == "task:completed")
                .count(),
            2
        );
        let score = &entry.scores["judge"];
        assert_eq!(score.value, Some(0.9));
        assert!(score.passed);
        assert_eq!(score.detail.as_deref(), Some("it shipped"));
        // The verdict is a session of its own: its prompt and answer are in the store.
        let verdict = store
            .all_events(score.judge_session.as_ref().unwrap())
            .await
            .unwrap();
        assert!(verdict.iter().any(|e| e.name == "verdict:given"));
        assert!(verdict.iter().any(|e| {
            e.name == "agent:started"
                && e.payload["prompt"]
                    .as_str()
                    .unwrap()
                    .contains("Did this release ship?")
        }));
    }
    assert_eq!(judge_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_variant_may_be_another_version_of_the_workflow_that_reads_the_recording() {
    let (store, host, parent, _) = recorded().await;
    let v2 = |reads: bool| {
        let builder = Workflow::builder("planner-executor-v2");
        let builder = if reads {
            builder.reads(example::WORKFLOW_NAME)
        } else {
            builder
        };
        builder
            .initial_state(example::PlanState::default())
            .agent(example::Planner)
            .agent(example::Executor)
            .until(example::PlanState::is_published)
            .store(MemoryStore::new())
            .provider(executor_says("v2 done", Arc::default()))
            .build()
            .unwrap()
    };
    // Without `reads`, the other workflow refuses the recording, naming both.
    let refused = Experiment::new("v2-refused", host.clone().workflow(v2(false)).unwrap())
        .case(Case::recording(
            "c",
            parent.clone(),
            ForkAt::event("task:started", 1),
        ))
        .variant(Variant::new("v2").workflow_named("planner-executor-v2"))
        .run()
        .await
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("recorded by workflow `planner-executor`, not `planner-executor-v2`"),
        "{refused}"
    );
    // The error names the one line that lets the variant's workflow read the recording.
    assert!(
        refused.to_string().contains(
            r#"add `.reads("planner-executor")` to its `Workflow::builder("planner-executor-v2")`"#
        ),
        "{refused}"
    );

    let host = host.workflow(v2(true)).unwrap();
    let ran = Experiment::new("v2", host.clone())
        .case(
            Case::recording("c", parent.clone(), ForkAt::event("task:started", 1)).answers(["yes"]),
        )
        .variant(Variant::new("v1").provider("m", executor_says("v1 done", Arc::default())))
        .variant(Variant::new("v2").workflow_named("planner-executor-v2"))
        .scorer(published())
        .run()
        .await
        .unwrap();
    let v2_run = ran
        .record
        .runs
        .values()
        .find(|e| e.run.variant == "v2")
        .unwrap();
    assert!(v2_run.scores["published"].passed);
    let session = v2_run.run.session.clone().unwrap();
    // The fork is v2's: listed as v2's, and its states fold with v2 from v1's recording.
    assert_eq!(
        store
            .session(&session)
            .await
            .unwrap()
            .unwrap()
            .workflow
            .as_deref(),
        Some("planner-executor-v2")
    );
    let end = host.state_at(&session, u64::MAX).await.unwrap();
    assert_eq!(end["tasks"][2]["result"], "v2 done");
    assert_eq!(
        Comparison::of(&ran.record, "v2", None, 0.0)
            .unwrap()
            .identical_start,
        Some(true)
    );
}

/// A provider answering as `inner` under another name: a recording made with a real model,
/// as `openharness run --provider openai` records one (`agent:started.provider`).
#[derive(Clone)]
struct Named(&'static str, ScriptedProvider);

#[async_trait::async_trait]
impl openharness::Provider for Named {
    fn name(&self) -> &str {
        self.0
    }

    async fn complete(
        &self,
        request: openharness::adapter::ProviderRequest,
        sink: openharness::adapter::ProviderSink,
    ) -> openharness::adapter::ProviderResult {
        self.1.complete(request, sink).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variant_without_a_provider_runs_on_the_recorded_one_never_silently_on_the_script() {
    // Recorded with the model `live` (its planner asked for `live-1`)...
    let store = MemoryStore::new();
    let live = example::scripted_provider();
    let recording = example::workflow(store.clone(), Named("live", live.clone())).unwrap();
    let first = recording
        .run(
            RunOptions::new()
                .input(example::DEMO_GOAL)
                .agent("planner", openharness::AgentSettings::new().model("live-1")),
        )
        .await
        .unwrap();
    let parent = first.session.clone();
    recording
        .respond(&parent, first.open_requests[0], "yes", RunOptions::new())
        .await
        .unwrap();
    // ...and served by a host whose workflow asks a scripted model (the CLI's offline one).
    let offline = executor_says("Scripted.", Arc::new(AtomicUsize::new(0)));
    let host = Host::new(store.clone())
        .workflow(example::workflow(store.clone(), offline.clone()).unwrap())
        .unwrap();
    let case = || {
        Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
            .answers(["yes"])
    };
    let experiment = |name: &str| {
        Experiment::new(name, host.clone())
            .case(case())
            .variant(Variant::new("baseline"))
            .repeats(2)
            .scorer(says_done())
    };

    // Nothing rebuilds `live`: the experiment does not start, and says which variant, which
    // provider and what to configure. No model was asked, no experiment left behind.
    let err = experiment("as-recorded").run().await.unwrap_err();
    match &err {
        EvalError::RecordedProvider(unbuilt) => assert_eq!(
            (
                unbuilt.variant.as_str(),
                unbuilt.case.as_str(),
                unbuilt.recorded.as_str(),
                unbuilt.workflow.as_str(),
                unbuilt.asks.as_str()
            ),
            (
                "baseline",
                "release",
                "live:live-1",
                "planner-executor",
                "`scripted`"
            )
        ),
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.starts_with("variant `baseline` names no provider, so case `release` runs on the one its recording asked, `live:live-1`; the workflow `planner-executor` asks `scripted`"),
        "{text}"
    );
    assert!(text.contains("`Experiment::rebuild_provider`"), "{text}");
    assert_eq!(offline.calls(), 0);
    assert!(matches!(
        ExperimentRecord::load(&store, "as-recorded").await,
        Err(EvalError::UnknownExperiment(_))
    ));

    // A rebuilder that cannot rebuild it says what to configure, in the same error.
    let err = experiment("as-recorded")
        .rebuild_provider(|recorded| Err(format!("set LIVE_KEY to ask `{}`", recorded.provider)))
        .run()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("cannot be rebuilt here: set LIVE_KEY to ask `live`"),
        "{err}"
    );

    // One that can: every run asks the rebuilt model (with the recorded model name), records
    // it, and the script is never asked.
    let rebuilt_calls = Arc::new(AtomicUsize::new(0));
    let rebuilt = executor_says("Task done.", Arc::clone(&rebuilt_calls));
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    let ran = experiment("as-recorded")
        .rebuild_provider(move |recorded| {
            seen.lock().unwrap().push(recorded.clone());
            Ok(Arc::new(Named("live", rebuilt.clone())) as openharness::BoxedProvider)
        })
        .run()
        .await
        .unwrap();
    assert_eq!((ran.ran, ran.failed), (2, 0));
    assert_eq!(
        *asked.lock().unwrap(),
        [openharness_eval::RecordedModel {
            provider: "live".into(),
            model: Some("live-1".into())
        }],
        "rebuilt once for the case's repeats"
    );
    assert!(rebuilt_calls.load(Ordering::SeqCst) > 0);
    assert_eq!(offline.calls(), 0, "the workflow's script was never asked");
    for entry in ran.record.runs.values() {
        assert_eq!(entry.run.provider.as_deref(), Some("live:live-1"));
        assert!(entry.scores["says-done"].passed, "{entry:?}");
    }

    // The experiment's own provider is the run's configured model for variants naming none;
    // a variant naming the script explicitly runs on it.
    let configured_calls = Arc::new(AtomicUsize::new(0));
    let ran = Experiment::new("configured", host.clone())
        .case(case())
        .variant(Variant::new("baseline"))
        .variant(Variant::new("offline").provider("scripted", offline.clone()))
        .provider(
            "configured",
            executor_says("Task done.", Arc::clone(&configured_calls)),
        )
        .run()
        .await
        .unwrap();
    assert_eq!((ran.ran, ran.failed), (2, 0));
    assert!(configured_calls.load(Ordering::SeqCst) > 0);
    assert!(offline.calls() > 0);
    let provider_of = |variant: &str| {
        ran.record
            .runs
            .iter()
            .find(|(key, _)| key.variant == variant)
            .and_then(|(_, entry)| entry.run.provider.clone())
    };
    assert_eq!(provider_of("baseline").as_deref(), Some("configured"));
    assert_eq!(provider_of("offline").as_deref(), Some("scripted"));
}

/// A model whose executor hangs while `hang` is set (counting the calls that hang: a run a
/// kill cuts off mid-turn), and otherwise says "Task done." (counting those calls).
#[derive(Clone)]
struct Switch {
    hang: Arc<std::sync::atomic::AtomicBool>,
    hanging: Arc<AtomicUsize>,
    answered: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl openharness::Provider for Switch {
    fn name(&self) -> &str {
        "switch"
    }

    async fn complete(
        &self,
        request: openharness::adapter::ProviderRequest,
        sink: openharness::adapter::ProviderSink,
    ) -> openharness::adapter::ProviderResult {
        if self.hang.load(Ordering::SeqCst) {
            self.hanging.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
        }
        executor_says("Task done.", Arc::clone(&self.answered))
            .complete(request, sink)
            .await
    }
}

impl Switch {
    fn new(hang: bool) -> Self {
        Self {
            hang: Arc::new(std::sync::atomic::AtomicBool::new(hang)),
            hanging: Arc::new(AtomicUsize::new(0)),
            answered: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// The status of `session` in `store`.
async fn status(store: &MemoryStore, session: &SessionId) -> SessionStatus {
    store.session(session).await.unwrap().unwrap().status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_is_closed_interrupted_and_run_again_and_a_finished_one_is_scored_not_rerun() {
    let (store, host, parent, _) = recorded().await;
    let model = Switch::new(true);
    let experiment = |name: &str| {
        Experiment::new(name, host.clone())
            .case(
                Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
                    .answers(["yes"]),
            )
            .variant(Variant::new("v").provider("switch", model.clone()))
            .repeats(2)
            .scorer(says_done())
    };

    // The kill: the experiment dropped while both runs wait on the model, mid-turn.
    {
        let killed = experiment("killed");
        let run = killed.run();
        tokio::pin!(run);
        let hanging = Arc::clone(&model.hanging);
        tokio::select! {
            result = &mut run => panic!("the runs hang, yet it ended: {result:?}"),
            () = async {
                while hanging.load(Ordering::SeqCst) < 2 {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            } => {}
        }
    }
    let left = ExperimentRecord::load(&store, "killed").await.unwrap();
    assert!(left.runs.is_empty());
    assert_eq!(
        left.dispatched.len(),
        2,
        "both runs were recorded as started"
    );
    let cut: Vec<SessionId> = left
        .dispatched
        .values()
        .map(|d| d.session.clone())
        .collect();
    for session in &cut {
        assert_eq!(status(&store, session).await, SessionStatus::Running);
    }

    // A judge the kill cut mid-verdict (of one of the cut runs), and another experiment's.
    let judge_left = |run: &str| -> SessionId {
        format!(
            "{}{run}:{}",
            openharness_eval::JUDGE_PREFIX,
            SessionId::new()
        )
        .parse()
        .unwrap()
    };
    let (ours, theirs) = (judge_left(cut[0].as_str()), judge_left("another-run"));
    for judge in [&ours, &theirs] {
        let events = [
            Envelope::new(
                "workflow:started",
                json!({ "workflow": example::WORKFLOW_NAME }),
                None,
            ),
            Envelope::new("user:input", json!({ "text": "Rate this run" }), None),
            Envelope::new(
                "agent:started",
                json!({ "agentName": "planner", "prompt": "Rate" }),
                None,
            ),
        ];
        store.append(judge, &events, 0).await.unwrap();
        assert_eq!(status(&store, judge).await, SessionStatus::Running);
    }

    // Resumed: each cut session is closed (its call interrupted, its turn ended) and recorded
    // as an interrupted attempt, and the run goes again as attempt 2.
    model.hang.store(false, Ordering::SeqCst);
    let ran = experiment("killed").run().await.unwrap();
    // The judge of one of its runs is closed too, no model asked; another's is left alone.
    assert_ne!(status(&store, &ours).await, SessionStatus::Running);
    let closed = store.all_events(&ours).await.unwrap();
    assert_eq!(closed.last().unwrap().payload["reason"], json!("cancelled"));
    assert_eq!(status(&store, &theirs).await, SessionStatus::Running);
    assert_eq!(
        (ran.ran, ran.interrupted, ran.recovered, ran.failed),
        (2, 2, 0, 0)
    );
    assert!(ran.record.dispatched.is_empty());
    for session in &cut {
        assert_ne!(status(&store, session).await, SessionStatus::Running);
        let events = store.all_events(session).await.unwrap();
        let last = events.last().unwrap();
        assert_eq!(
            (&*last.name, &last.payload["reason"]),
            ("workflow:completed", &json!("cancelled"))
        );
        assert!(
            events
                .iter()
                .any(|e| e.name == "agent:completed" && e.payload["outcome"] == "interrupted"),
            "the cut call is closed as interrupted"
        );
    }
    for entry in ran.record.runs.values() {
        assert_eq!(entry.run.attempt, 2);
        assert!(!cut.contains(entry.run.session.as_ref().unwrap()));
        assert!(entry.scores["says-done"].passed);
    }
    let log = store
        .all_events(&openharness_eval::log_session("killed").unwrap())
        .await
        .unwrap();
    let interrupted: Vec<_> = log
        .iter()
        .filter(|e| e.name == "eval:recorded" && e.payload["reason"] == "interrupted")
        .collect();
    assert_eq!(
        interrupted.len(),
        2,
        "the interrupted attempts are recorded"
    );
    assert!(
        interrupted[0].payload["error"]
            .as_str()
            .unwrap()
            .starts_with("interrupted: the process running it stopped mid-turn"),
        "{}",
        interrupted[0].payload
    );
    // No fork of the recording is left running.
    for info in store.sessions().await.unwrap() {
        if info.parent.as_ref() == Some(&parent) {
            assert_ne!(info.status, SessionStatus::Running, "{}", info.id);
        }
    }

    // Killed after a run's session finished but before the log recorded it: the resume
    // scores it, and asks no model.
    let ran = experiment("unscored").run().await.unwrap();
    assert_eq!(ran.ran, 2);
    let log_session = openharness_eval::log_session("unscored").unwrap();
    let events = store.all_events(&log_session).await.unwrap();
    let lost = ran
        .record
        .runs
        .values()
        .find(|e| e.run.repeat == 1)
        .unwrap()
        .run
        .session
        .clone()
        .unwrap();
    let kept: Vec<_> = events
        .into_iter()
        .filter(|e| {
            !((e.name == "eval:recorded" || e.name == "eval:scored")
                && e.payload["session"] == json!(lost))
        })
        .collect();
    store.clear(&log_session).await.unwrap();
    store.append(&log_session, &kept, 0).await.unwrap();
    let left = ExperimentRecord::load(&store, "unscored").await.unwrap();
    assert_eq!((left.runs.len(), left.dispatched.len()), (1, 1));

    let answered = model.answered.load(Ordering::SeqCst);
    let ran = experiment("unscored").run().await.unwrap();
    assert_eq!(
        (ran.ran, ran.skipped, ran.recovered, ran.interrupted),
        (0, 1, 1, 0)
    );
    assert_eq!(
        model.answered.load(Ordering::SeqCst),
        answered,
        "no model asked"
    );
    let entry = ran
        .record
        .runs
        .values()
        .find(|e| e.run.repeat == 1)
        .unwrap();
    assert_eq!(entry.run.session.as_ref(), Some(&lost));
    assert_eq!(
        (entry.run.attempt, entry.run.status),
        (1, RunStatus::Completed)
    );
    assert_eq!(entry.run.turns, 2, "the fork's turn and the answer's");
    assert!(entry.run.state_hash.is_some() && entry.run.latency_ms > 0.0);
    assert!(entry.scores["says-done"].passed);
    assert!(ran.record.dispatched.is_empty());
}

/// A judge workflow (the `judging` module's grader) on a scripted model that counts its calls
/// and gives 0.9 to a published release.
fn judge_workflow(calls: Arc<AtomicUsize>) -> Arc<dyn openharness_host::Hosted> {
    let model = ScriptedProvider::new().fallback("grader", move |request| {
        calls.fetch_add(1, Ordering::SeqCst);
        let published = request.prompt.contains("\"release\":\"published\"");
        Reply::output(json!({
            "score": if published { 0.9 } else { 0.1 },
            "reason": if published { "it shipped" } else { "it did not ship" },
        }))
    });
    let workflow = Workflow::builder("judge")
        .initial_state(judging::Verdict::default())
        .agent(judging::Grader)
        .store(MemoryStore::new())
        .provider(model)
        .build()
        .unwrap();
    <dyn openharness_host::Hosted>::of(workflow)
}

#[tokio::test]
async fn a_judge_is_asked_once_per_run_and_content_and_again_when_its_rubric_model_or_content_changes()
 {
    let (store, host, parent, _) = recorded().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let workflow = judge_workflow(Arc::clone(&calls));
    // The rubric and the judged content (the case's expected values) are in the prompt.
    let grader = |rubric: &'static str| {
        openharness_eval::scorers::judge(
            "judge",
            Arc::clone(&workflow),
            "/score",
            0.5,
            move |run| {
                format!(
                    "{rubric} Expected: {}. {}",
                    run.case().expected,
                    run.state()
                )
            },
        )
        .reason_at("/reason")
    };
    let experiment = |expected: Value| {
        Experiment::new("asked-once", host.clone())
            .case(
                Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
                    .answers(["yes"])
                    .expected(expected),
            )
            .variant(Variant::new("m").provider("m", executor_says("done", Arc::default())))
            .repeats(2)
    };
    let asked = |verdicts, reused, model_calls| openharness_eval::Judged {
        verdicts,
        asked: verdicts - reused,
        reused,
        model_calls,
    };

    // The run asks the judge once per run, and records each verdict.
    let ran = experiment(json!("shipped"))
        .scorer(grader("Did this release ship?"))
        .run()
        .await
        .unwrap();
    assert_eq!(ran.judged, asked(2, 0, 2));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(ran.record.verdicts(), 2);
    let sessions: Vec<_> = ran
        .record
        .runs
        .values()
        .map(|e| e.scores["judge"].judge_session.clone().unwrap())
        .collect();
    let judged: Vec<_> = store
        .all_events(&openharness_eval::log_session("asked-once").unwrap())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.name == "eval:judged")
        .collect();
    assert_eq!(judged.len(), 2);
    assert_eq!(judged[0].payload["value"], 0.9);
    assert_eq!(judged[0].payload["modelCalls"], 1);
    assert_eq!(judged[0].payload["definition"].as_str().unwrap().len(), 64);

    // Re-scoring, twice: every verdict reused, no model called, the same scores and sessions.
    for _ in 0..2 {
        let done = rescore(
            &host,
            "asked-once",
            &[Arc::new(grader("Did this release ship?"))],
            4,
        )
        .await
        .unwrap();
        assert_eq!(done.judged, asked(2, 2, 0));
        assert_eq!(
            done.judged.to_string(),
            "2 verdicts, 0 model calls (2 reused)"
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let record = ExperimentRecord::load(&store, "asked-once").await.unwrap();
        for (entry, session) in record.runs.values().zip(&sessions) {
            let score = &entry.scores["judge"];
            assert_eq!(
                (score.value, score.passed, score.detail.as_deref()),
                (Some(0.9), true, Some("it shipped"))
            );
            assert_eq!(score.judge_session.as_ref(), Some(session));
        }
        assert_eq!(record.verdicts(), 2);
    }

    // Another pass bound applies to the recorded values: no model called.
    let strict =
        openharness_eval::scorers::judge("judge", Arc::clone(&workflow), "/score", 0.95, |run| {
            format!(
                "Did this release ship? Expected: {}. {}",
                run.case().expected,
                run.state()
            )
        })
        .reason_at("/reason");
    let done = rescore(&host, "asked-once", &[Arc::new(strict)], 4)
        .await
        .unwrap();
    assert_eq!(done.judged, asked(2, 2, 0));
    let record = ExperimentRecord::load(&store, "asked-once").await.unwrap();
    assert!(record.runs.values().all(|e| !e.scores["judge"].passed));

    // A changed rubric asks again, and the new verdicts are reused in turn.
    let done = rescore(
        &host,
        "asked-once",
        &[Arc::new(grader("Was it released?"))],
        4,
    )
    .await
    .unwrap();
    assert_eq!(done.judged, asked(2, 0, 2));
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let done = rescore(
        &host,
        "asked-once",
        &[Arc::new(grader("Was it released?"))],
        4,
    )
    .await
    .unwrap();
    assert_eq!(done.judged, asked(2, 2, 0));
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // Another provider (or model) for the judge asks again: that provider, not the workflow's.
    let other_calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&other_calls);
    let other = ScriptedProvider::new().fallback("grader", move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Reply::output(json!({ "score": 0.7, "reason": "fine" }))
    });
    let done = rescore(
        &host,
        "asked-once",
        &[Arc::new(
            grader("Was it released?").provider("other:small", other),
        )],
        4,
    )
    .await
    .unwrap();
    assert_eq!(done.judged, asked(2, 0, 2));
    assert_eq!(other_calls.load(Ordering::SeqCst), 2);
    assert_eq!(calls.load(Ordering::SeqCst), 4);

    // The judged content changes (the case's expected values, in the prompt): asked again.
    let again = experiment(json!("published"))
        .scorer(grader("Was it released?"))
        .run()
        .await
        .unwrap();
    assert_eq!((again.ran, again.skipped), (0, 2), "no run is run again");
    let done = rescore(
        &host,
        "asked-once",
        &[Arc::new(grader("Was it released?"))],
        4,
    )
    .await
    .unwrap();
    assert_eq!(done.judged, asked(2, 0, 2));
    assert_eq!(calls.load(Ordering::SeqCst), 6);

    // A scorer that is no judge: no verdicts, no model calls.
    let done = rescore(&host, "asked-once", &[Arc::new(published())], 4)
        .await
        .unwrap();
    assert_eq!(done.judged, openharness_eval::Judged::default());
}

/// A cancelled experiment stops its runs under way (their sessions closed, none left
/// running), records each `cancelled` and then `eval:cancelled`; its next run runs them all
/// again and clears the cancellation.
#[tokio::test]
async fn a_cancelled_experiment_stops_its_runs_and_its_next_run_runs_them_again() {
    use openharness_core::{CancellationToken, SessionStatus};
    use std::sync::atomic::AtomicBool;
    use std::time::Duration;

    // While `slow`, the executor takes a minute; the cancellation must not wait for it.
    let slow = Arc::new(AtomicBool::new(true));
    let executor_calls = Arc::new(AtomicUsize::new(0));
    let (pace, calls) = (Arc::clone(&slow), Arc::clone(&executor_calls));
    let provider = ScriptedProvider::new()
        .fallback("planner", |_| Reply::output(json!({ "tasks": ["a"] })))
        .fallback("executor", move |_| {
            calls.fetch_add(1, Ordering::SeqCst);
            let reply = Reply::output(json!({ "summary": "done" }));
            if pace.load(Ordering::SeqCst) {
                reply.delay(Duration::from_secs(60))
            } else {
                reply
            }
        });
    let store = MemoryStore::new();
    let workflow = example::workflow(store.clone(), provider).unwrap();
    let host = Host::new(store.clone()).workflow(workflow).unwrap();
    let experiment = Experiment::new("slow", host.clone())
        .cases(
            ["a", "b", "c", "d"].map(|id| Case::input(id, format!("ship {id}")).answers(["yes"])),
        )
        .scorer(published())
        .concurrency(2);

    let token = CancellationToken::new();
    let cancellable = experiment.clone().cancel_on(token.clone());
    let running = tokio::spawn(async move { cancellable.run().await });
    // Two runs reach the slow executor; the other two wait for a slot.
    let began = std::time::Instant::now();
    while executor_calls.load(Ordering::SeqCst) < 2 {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "no run reached the executor"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    token.cancel();
    let ran = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("the cancellation did not wait for the slow model")
        .unwrap()
        .unwrap();
    assert_eq!((ran.ran, ran.cancelled, ran.failed), (4, 4, 0));
    assert!(ran.record.cancelled.is_some());
    let mut stopped = 0;
    for entry in ran.record.runs.values() {
        assert_eq!(entry.run.status, RunStatus::Cancelled);
        assert!(entry.cancelled() && entry.scores.is_empty());
        assert_eq!(entry.run.reason.as_deref(), Some("cancelled"));
        // The two under way stopped mid-turn: their sessions are closed, not left running.
        if let Some(session) = &entry.run.session {
            stopped += 1;
            let events = store.all_events(session).await.unwrap();
            let last = events.last().unwrap();
            assert_ne!(
                SessionStatus::after(&last.name, &last.payload),
                SessionStatus::Running,
                "{session} was left running"
            );
        }
    }
    assert_eq!(stopped, 2, "two runs were under way");
    assert_eq!(executor_calls.load(Ordering::SeqCst), 2);
    // The log says so: its last event is the cancellation, as a reload folds it.
    let log = store
        .all_events(&openharness_eval::log_session("slow").unwrap())
        .await
        .unwrap();
    let last = log.last().unwrap();
    assert_eq!(last.name, "eval:cancelled");
    assert_eq!(last.payload, json!({ "runs": 4, "done": 0 }));
    let reloaded = ExperimentRecord::load(&store, "slow").await.unwrap();
    assert_eq!(reloaded.cancelled, ran.record.cancelled);

    // Run again (a resume): every cancelled run goes again, as a second attempt, and passes.
    slow.store(false, Ordering::SeqCst);
    let again = experiment.run().await.unwrap();
    assert_eq!(
        (again.ran, again.skipped, again.cancelled, again.failed),
        (4, 0, 0, 0)
    );
    assert_eq!(again.record.cancelled, None);
    for entry in again.record.runs.values() {
        assert_eq!(entry.run.status, RunStatus::Completed);
        assert_eq!(entry.run.attempt, 2);
        assert!(entry.scores["published"].passed);
    }
    assert!(
        ExperimentRecord::load(&store, "slow")
            .await
            .unwrap()
            .cancelled
            .is_none()
    );
}

/// A fork right after a `task:started` cuts the batch that started its executor call: the
/// call starts again in the fork, and a variant's prompt and model apply to it as to every
/// later call (before, it ran with the prompt and model the recording started it with).
#[tokio::test]
async fn a_prompt_variant_applies_to_the_call_the_fork_point_cut() {
    let (_store, host, parent, _) = recorded().await;
    let model = executor_says("Task done.", Arc::new(AtomicUsize::new(0)));
    let change = openharness_eval::AgentChange {
        prompt: Some("{prompt}\nAnswer in one line.".into()),
        model: Some("terse-model".into()),
        ..Default::default()
    };
    Experiment::new("cut-call", host.clone())
        .case(
            Case::recording("release", parent.clone(), ForkAt::event("task:started", 1))
                .answers(["yes"]),
        )
        .variant(
            Variant::new("one-line")
                .provider("scripted", model.clone())
                .agent("executor", change),
        )
        .run()
        .await
        .unwrap();
    let executor: Vec<_> = model
        .requests()
        .into_iter()
        .filter(|r| r.agent == "executor")
        .collect();
    assert!(!executor.is_empty());
    for request in &executor {
        assert!(
            request.prompt.ends_with("\nAnswer in one line."),
            "{}",
            request.prompt
        );
        assert_eq!(request.model.as_deref(), Some("terse-model"));
    }
}
