//! Datasets from production, end to end on the planner-executor example: recorded sessions
//! matching a query become cases at positions resolved when added, a dataset's versions and
//! diffs are folds of its log, adding twice adds nothing, sessions without the fork point are
//! skipped and said so, experiments' runs and forks are left out, and a session that grows
//! after the add still forks where it was added.

#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness_eval::{
    Dataset, DatasetAdd, DatasetRef, EvalError, Experiment, ExperimentFile, ForkAt, RunStatus,
    SkipReason, Variant, scorers,
};
use openharness_example_planner_executor as example;
use openharness_host::{ForkPoint, Host};
use serde_json::{Value, json};

/// A session of the example for `goal`, recorded on the demo's script: waiting for approval
/// after its three tasks, or published when `approve`.
async fn record(store: &MemoryStore, goal: &str, approve: bool) -> SessionId {
    let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
    let first = workflow.run(RunOptions::new().input(goal)).await.unwrap();
    if approve {
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
    }
    first.session
}

/// A session whose planner made no task: it never starts one.
async fn planless(store: &MemoryStore, goal: &str) -> SessionId {
    let script = ScriptedProvider::new().respond("planner", Reply::output(json!({ "tasks": [] })));
    let workflow = example::workflow(store.clone(), script).unwrap();
    workflow
        .run(RunOptions::new().input(goal))
        .await
        .unwrap()
        .session
}

/// A host over `store` whose planner-executor plans one task for any goal and whose executor
/// reports "Task done." for any task.
fn host(store: &MemoryStore) -> Host {
    let model = ScriptedProvider::new()
        .fallback("planner", |_| {
            Reply::output(json!({ "tasks": ["Refund the order"] }))
        })
        .fallback("executor", |_| {
            Reply::output(json!({ "summary": "Task done." }))
        });
    let workflow = example::workflow(store.clone(), model).unwrap();
    Host::new(store.clone()).workflow(workflow).unwrap()
}

/// The position right after the `n`th `name` event of `session`.
async fn after(store: &MemoryStore, session: &SessionId, name: &str, n: usize) -> u64 {
    let events = store.all_events(session).await.unwrap();
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == name)
        .nth(n - 1)
        .map(|(seq, _)| seq as u64 + 1)
        .unwrap()
}

#[tokio::test]
async fn matching_sessions_become_cases_at_positions_resolved_when_added_and_twice_adds_nothing() {
    let store = MemoryStore::new();
    let first = record(&store, "Refund order 42", true).await;
    let _other = record(&store, "Ship version 0.1", true).await;
    let second = record(&store, "Refund order 43", false).await;
    let host = host(&store);

    let at: ForkAt = "event=task:started#2".parse().unwrap();
    let added = DatasetAdd::new("refunds", at.clone())
        .search("REFUND")
        .answers(["yes"])
        .run(&host)
        .await
        .unwrap();
    assert_eq!(added.version, 1);
    assert!(added.present.is_empty() && added.skipped.is_empty());
    let sessions: Vec<_> = added.added.iter().map(|c| c.session.clone()).collect();
    assert_eq!(sessions, [first.clone(), second.clone()], "oldest first");
    for case in &added.added {
        assert_eq!(
            case.position,
            after(&store, &case.session, "task:started", 2).await
        );
        assert_eq!(case.id, case.session.to_string());
        assert_eq!(case.answers, ["yes"]);
        assert_eq!(case.workflow.as_deref(), Some(example::WORKFLOW_NAME));
        assert!(case.title.as_deref().unwrap().starts_with("Refund order"));
    }

    // The log holds what was asked, as words.
    let log = store
        .all_events(&openharness_eval::dataset_session("refunds").unwrap())
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].name, "dataset:cases-added");
    assert_eq!(log[0].payload["at"], "event=task:started#2");
    assert_eq!(log[0].payload["query"], json!({ "search": "REFUND" }));

    // Again: nothing new, nothing recorded, and it says which were there already.
    let again = DatasetAdd::new("refunds", at)
        .search("refund")
        .run(&host)
        .await
        .unwrap();
    assert!(again.added.is_empty());
    assert_eq!(again.present, [first, second]);
    assert_eq!(again.version, 1);
    assert_eq!(
        store
            .all_events(&openharness_eval::dataset_session("refunds").unwrap())
            .await
            .unwrap()
            .len(),
        1
    );

    // The limit keeps the newest matches.
    let newest = Dataset::add("newest", ForkAt::event("task:started", 1))
        .limit(1)
        .run(&host)
        .await
        .unwrap();
    assert_eq!(newest.added.len(), 1);
    assert!(
        newest.added[0]
            .title
            .as_deref()
            .unwrap()
            .contains("order 43")
    );
}

#[tokio::test]
async fn a_session_without_the_fork_point_is_skipped_and_said_so() {
    let store = MemoryStore::new();
    let with_tasks = record(&store, "Refund order 1", true).await;
    let without = planless(&store, "Refund nothing").await;
    let host = host(&store);

    let added = Dataset::add("refunds", ForkAt::event("task:started", 2))
        .search("refund")
        .run(&host)
        .await
        .unwrap();
    assert_eq!(added.added.len(), 1);
    assert_eq!(added.added[0].session, with_tasks);
    assert_eq!(added.skipped.len(), 1);
    let skipped = &added.skipped[0];
    assert_eq!(skipped.session, without);
    assert_eq!(
        skipped.reason,
        SkipReason::NoForkPoint {
            at: "event=task:started#2".into(),
            missing: "no `task:started` #2".into(),
        }
    );
    assert_eq!(skipped.why, "no `task:started` #2 in it");

    // A position past a session's end is not clamped: it is skipped.
    let past = Dataset::add("far", ForkAt::position(10_000))
        .run(&host)
        .await
        .unwrap();
    assert!(past.added.is_empty());
    assert_eq!(past.version, 0, "nothing added, no log");
    assert!(matches!(
        past.skipped[0].reason,
        SkipReason::PastTheEnd {
            position: 10_000,
            ..
        }
    ));
    assert!(matches!(
        Dataset::load(&store, "far", None).await,
        Err(EvalError::UnknownDataset(name)) if name == "far"
    ));

    // A phase point: the first position where `/completed` becomes 2.
    let phase: ForkAt = "phase=2@/completed".parse().unwrap();
    let by_phase = Dataset::add("phase", phase).run(&host).await.unwrap();
    assert_eq!(by_phase.added.len(), 1);
    assert_eq!(
        by_phase.added[0].position,
        after(&store, &with_tasks, "task:completed", 2).await
    );
    assert_eq!(
        by_phase.skipped.len(),
        1,
        "the planless session never gets there"
    );
}

#[tokio::test]
async fn versions_are_the_logs_length_and_diffs_compare_any_two() {
    let store = MemoryStore::new();
    let a = record(&store, "Refund order 1", true).await;
    let b = record(&store, "Refund order 2", true).await;
    let host = host(&store);
    let at = ForkAt::event("task:started", 1);

    Dataset::add("refunds", at.clone())
        .search("order 1")
        .run(&host)
        .await
        .unwrap();
    let v2 = Dataset::add("refunds", at.clone())
        .search("refund")
        .run(&host)
        .await
        .unwrap();
    assert_eq!((v2.version, v2.added.len(), v2.present.len()), (2, 1, 1));
    let after_remove = Dataset::remove(&store, "refunds", &[a.to_string()], Some("a test".into()))
        .await
        .unwrap();
    assert_eq!(after_remove.version, 3);
    assert_eq!(after_remove.cases.len(), 1);
    assert_eq!(after_remove.cases[0].session, b);

    let ids = |dataset: &Dataset| -> Vec<String> {
        dataset
            .cases
            .iter()
            .map(|c| c.session.to_string())
            .collect()
    };
    let (a_id, b_id) = (a.to_string(), b.to_string());
    let at_version = |v| Dataset::load(&store, "refunds", Some(v));
    assert!(ids(&at_version(0).await.unwrap()).is_empty());
    assert_eq!(ids(&at_version(1).await.unwrap()), [a_id.as_str()]);
    assert_eq!(
        ids(&at_version(2).await.unwrap()),
        [a_id.as_str(), b_id.as_str()]
    );
    assert_eq!(ids(&at_version(3).await.unwrap()), [b_id.as_str()]);
    let latest = Dataset::load(&store, "refunds", None).await.unwrap();
    assert_eq!((latest.version, latest.latest), (3, 3));
    assert_eq!(latest.changes.len(), 3);
    assert_eq!(latest.changes[2].reason.as_deref(), Some("a test"));
    assert_eq!(latest.changes[1].at.as_deref(), Some("event=task:started"));
    match at_version(4).await {
        Err(
            err @ EvalError::DatasetVersion {
                version: 4,
                latest: 3,
                ..
            },
        ) => assert_eq!(
            err.to_string(),
            "dataset `refunds` has no version 4: its versions are 0 to 3"
        ),
        other => panic!("{other:?}"),
    }

    let diff = Dataset::diff(&store, "refunds", 1, None).await.unwrap();
    assert_eq!((diff.from, diff.to), (1, 3));
    assert_eq!(
        diff.added.iter().map(|c| &c.session).collect::<Vec<_>>(),
        [&b]
    );
    assert_eq!(
        diff.removed.iter().map(|c| &c.session).collect::<Vec<_>>(),
        [&a]
    );
    let back = Dataset::diff(&store, "refunds", 3, Some(2)).await.unwrap();
    assert_eq!(back.added.len(), 1);
    assert!(back.removed.is_empty());
    assert!(matches!(
        Dataset::diff(&store, "refunds", 9, None).await,
        Err(EvalError::DatasetVersion { version: 9, .. })
    ));

    // Removing what is not there records nothing.
    assert!(matches!(
        Dataset::remove(&store, "refunds", &[a.to_string()], None).await,
        Err(EvalError::UnknownDatasetCase { case, .. }) if case == a.to_string()
    ));
    assert_eq!(
        Dataset::load(&store, "refunds", None)
            .await
            .unwrap()
            .version,
        3
    );

    let listed = Dataset::list(&store).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].name.as_str(), listed[0].cases, listed[0].version),
        ("refunds", 1, 3)
    );

    for bad in ["", " refunds", "a\u{7}b", &"x".repeat(129)] {
        assert!(
            matches!(
                Dataset::load(&store, bad, None).await,
                Err(EvalError::DatasetName { .. })
            ),
            "{bad:?}"
        );
    }
    assert!(matches!(
        Dataset::add("", ForkAt::position(1)).run(&host).await,
        Err(EvalError::DatasetName { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grown_session_forks_where_it_was_added_and_runs_and_forks_are_left_out() {
    let store = MemoryStore::new();
    let waiting = record(&store, "Refund order 7", false).await;
    let host = host(&store);
    // A fork is no recording: it is left out.
    host.fork(
        &waiting,
        ForkPoint::Position { position: 2 },
        RunOptions::new(),
    )
    .await
    .unwrap();

    // Added while it waits for approval, at its end.
    let added = Dataset::add("waiting", "end".parse().unwrap())
        .answers(["yes"])
        .run(&host)
        .await
        .unwrap();
    assert_eq!(added.added.len(), 1, "{added:?}");
    let len_then = store.all_events(&waiting).await.unwrap().len() as u64;
    assert_eq!(added.added[0].position, len_then);

    // Production goes on: the session is approved and grows.
    let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
    let open = host.session(&waiting).await.unwrap();
    assert_eq!(open.open_requests, 1);
    let request = store
        .all_events(&waiting)
        .await
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.name == "input:requested")
        .unwrap()
        .id;
    workflow
        .respond(&waiting, request, "no", RunOptions::new())
        .await
        .unwrap();
    assert!(store.all_events(&waiting).await.unwrap().len() as u64 > len_then);

    // The dataset still forks where it was added: the runs answer the question it asked.
    let dataset = Dataset::load(&store, "waiting", None).await.unwrap();
    assert_eq!(dataset.cases[0].position, len_then);
    let ran = Experiment::new("approve", host.clone())
        .cases(dataset.cases())
        .variant(Variant::new("baseline"))
        .repeats(2)
        .scorer(scorers::predicate("published", |s: &Value| {
            s["release"] == "published"
        }))
        .run()
        .await
        .unwrap();
    assert_eq!(ran.failed, 0);
    for entry in ran.record.runs.values() {
        assert_eq!(entry.run.status, RunStatus::Completed);
        assert_eq!(entry.run.fork_position, Some(len_then));
        assert_eq!(entry.scores["published"].value, Some(1.0));
    }
    assert_eq!(
        ran.record.definition.cases[0].dataset,
        Some(DatasetRef {
            name: "waiting".into(),
            version: 1
        })
    );

    // A run from inputs is a session of its own, not a fork: it is an experiment's run all
    // the same.
    let from_inputs = Experiment::new("inputs", host.clone())
        .case(openharness_eval::Case::input("refund", "Refund order 8"))
        .run()
        .await
        .unwrap();
    let run = from_inputs.record.runs.values().next().unwrap();
    assert_eq!(run.run.status, RunStatus::Completed, "{:?}", run.run.error);
    let run_session = run.run.session.clone().unwrap();
    assert!(host.session(&run_session).await.unwrap().parent.is_none());

    // Another add over everything: the experiments' runs, the fork and the logs are no
    // recordings; the one recording is there already.
    let everything = Dataset::add("waiting", ForkAt::position(3))
        .run(&host)
        .await
        .unwrap();
    assert!(everything.added.is_empty());
    assert!(everything.skipped.is_empty(), "{everything:?}");
    assert_eq!(everything.present, [waiting]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_file_takes_a_datasets_cases_at_a_version() {
    let store = MemoryStore::new();
    record(&store, "Refund order 1", true).await;
    let host = host(&store);
    let at = ForkAt::event("task:started", 3);
    Dataset::add("refunds", at.clone())
        .run(&host)
        .await
        .unwrap();
    record(&store, "Refund order 2", true).await;
    let v2 = Dataset::add("refunds", at).run(&host).await.unwrap();
    assert_eq!(v2.version, 2);

    let file = ExperimentFile::from_toml(
        r#"
name = "from-a-dataset"
[[datasets]]
name = "refunds"
version = 1
answers = ["yes"]
"#,
    )
    .unwrap();
    let no_provider = |_: &openharness_eval::ProviderSpec| -> Result<_, EvalError> {
        unreachable!("the file names no provider")
    };
    let ran = file
        .experiment::<EvalError>(&host, None, &no_provider)
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    assert_eq!((ran.ran, ran.failed), (1, 0));
    let case = &ran.record.definition.cases[0];
    assert_eq!(
        case.dataset,
        Some(DatasetRef {
            name: "refunds".into(),
            version: 1
        })
    );
    assert!(case.at.as_deref().unwrap().starts_with("position "));

    let unknown = ExperimentFile::from_toml("name = \"x\"\n[[datasets]]\nname = \"nope\"\n")
        .unwrap()
        .experiment::<EvalError>(&host, None, &no_provider)
        .await;
    assert!(matches!(unknown, Err(EvalError::UnknownDataset(name)) if name == "nope"));
    assert!(
        ExperimentFile::from_toml("name = \"x\"\n[[datasets]]\nname = \"a\"\nversio = 1\n")
            .unwrap_err()
            .contains("unknown field `versio`")
    );
}
