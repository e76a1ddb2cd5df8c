//! Replays of the planner-executor demo: its event flow, final state and projected messages
//! pinned by insta snapshots, byte-identical replays, and the tape's position rule.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::projection::project_messages;
use openharness::store::MemoryStore;
use openharness::tape::{LoadTape, Tape};
use openharness_example_planner_executor::{self as example, PlanState};

/// Runs the demo as `openharness demo` does: one turn that ends waiting for approval to
/// publish, then a second that answers "yes". Returns the workflow and the session.
async fn run_demo(store: MemoryStore) -> (Workflow<PlanState>, SessionId) {
    let workflow = example::workflow(store, example::scripted_provider()).unwrap();
    let waiting = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    assert!(waiting.state.is_done());
    assert_eq!(waiting.reason, StopReason::WaitingForInput);
    assert_eq!(waiting.open_requests.len(), 1);
    assert_eq!(waiting.state.release, None);
    let published = workflow
        .respond(
            &waiting.session,
            waiting.open_requests[0],
            "yes",
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(published.reason, StopReason::Until);
    assert_eq!(published.first_seq, waiting.len);
    assert!(published.open_requests.is_empty());
    assert!(published.state.is_published());
    (workflow, waiting.session)
}

/// Runs the demo (both turns) into a fresh memory store and loads its tape.
async fn demo_tape() -> Tape<PlanState> {
    let (workflow, session) = run_demo(MemoryStore::new()).await;
    workflow.load(&session).await.unwrap()
}

/// The event flow without ids and timestamps: name, payload (an event id in it, such as an
/// answered request's, shown as that event's seq) and which earlier event caused it.
fn flow(events: &[Envelope]) -> Vec<serde_json::Value> {
    events
        .iter()
        .enumerate()
        .map(|(seq, event)| {
            let cause = event.caused_by.and_then(|id| events.iter().position(|e| e.id == id));
            let payload = ids_as_seqs(event.payload.clone(), events);
            serde_json::json!({ "seq": seq, "name": event.name, "payload": payload, "causedBy": cause })
        })
        .collect()
}

#[tokio::test]
async fn demo_event_flow() {
    let tape = demo_tape().await;
    insta::assert_json_snapshot!("demo_event_flow", flow(tape.events()));
}

#[tokio::test]
async fn demo_final_state() {
    let mut tape = demo_tape().await;
    tape.step_to(tape.len());
    insta::assert_json_snapshot!("demo_final_state", tape.state());
}

#[tokio::test]
async fn demo_projected_messages() {
    let tape = demo_tape().await;
    let messages = serde_json::to_value(project_messages(tape.events())).unwrap();
    insta::assert_json_snapshot!(
        "demo_projected_messages",
        ids_as_seqs(messages, tape.events())
    );
}

/// Replaces every event id (and `msg-<event id>` message id) with the event's seq, so the
/// snapshot pins which events each message links back to.
fn ids_as_seqs(value: serde_json::Value, events: &[Envelope]) -> serde_json::Value {
    use serde_json::Value;
    let seq_of = |id: &str| events.iter().position(|e| e.id.to_string() == id);
    match value {
        Value::String(s) => {
            if let Some(seq) = seq_of(&s) {
                Value::String(format!("event #{seq}"))
            } else if let Some(seq) = s.strip_prefix("msg-").and_then(seq_of) {
                Value::String(format!("msg-<event #{seq}>"))
            } else {
                Value::String(s)
            }
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| ids_as_seqs(v, events)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, ids_as_seqs(v, events)))
                .collect(),
        ),
        other => other,
    }
}

#[tokio::test]
async fn replaying_a_session_100_times_gives_byte_identical_state_at_every_position() {
    let tape = demo_tape().await;
    let workflow = tape.workflow().clone();
    let expected: Vec<String> = (0..=tape.len())
        .map(|p| serde_json::to_string(&tape.state_at(p)).unwrap())
        .collect();
    for _ in 0..100 {
        let mut replay = workflow.load(tape.session()).await.unwrap();
        for (position, state) in expected.iter().enumerate() {
            assert_eq!(replay.step_to(position as u64), position as u64);
            assert_eq!(
                &serde_json::to_string(replay.state()).unwrap(),
                state,
                "position {position}"
            );
        }
    }
}

#[tokio::test]
async fn tape_positions_follow_the_one_rule() {
    let mut tape = demo_tape().await;
    let len = tape.len();
    assert!(
        len > 15,
        "the demo is long enough for the scenarios ({len})"
    );
    let initial = serde_json::to_value(tape.workflow().initial_state()).unwrap();

    // Position 0: the initial state, no current event; stepping back stays at 0.
    assert_eq!(tape.position(), 0);
    assert!(tape.current().is_none());
    assert_eq!(serde_json::to_value(tape.state()).unwrap(), initial);
    assert_eq!(tape.step_back(), 0);

    // step() moves one event; current at p > 0 is event p - 1.
    assert_eq!(tape.step(), 1);
    assert_eq!(tape.current().unwrap().name, "workflow:started");
    assert_eq!(tape.current(), tape.events().first());

    // stepTo(5).
    assert_eq!(tape.step_to(5), 5);
    assert_eq!(tape.current(), tape.events().get(4));

    // Step back from 15 to every earlier position: same state as a fresh fold.
    for target in (0..15).rev() {
        tape.step_to(15);
        while tape.position() > target {
            tape.step_back();
        }
        let fresh = tape.workflow().fold(&tape.events()[..target as usize]);
        assert_eq!(
            serde_json::to_value(tape.state()).unwrap(),
            serde_json::to_value(&fresh).unwrap()
        );
        assert_eq!(
            tape.current(),
            target
                .checked_sub(1)
                .and_then(|i| tape.events().get(i as usize))
        );
    }

    // At len, step() stays; step_to clamps.
    assert_eq!(tape.step_to(len), len);
    assert_eq!(tape.step(), len);
    assert_eq!(tape.step_to(len + 5), len);
    assert_eq!(tape.current(), tape.events().last());
    assert_eq!(tape.rewind(), 0);
    assert_eq!(tape.events().len() as u64, len);
}

mod moves {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Move {
        Step,
        StepBack,
        StepTo(u64),
        Rewind,
        FindName(&'static str),
        FindNameBack(&'static str),
        FindCompleted(usize),
        FindCompletedBack(usize),
    }

    const NAMES: [&str; 4] = [
        "task:started",
        "text:delta",
        "agent:completed",
        "plan:created",
    ];

    fn a_move() -> impl Strategy<Value = Move> {
        prop_oneof![
            Just(Move::Step),
            Just(Move::StepBack),
            (0u64..60).prop_map(Move::StepTo),
            Just(Move::Rewind),
            proptest::sample::select(NAMES.to_vec()).prop_map(Move::FindName),
            proptest::sample::select(NAMES.to_vec()).prop_map(Move::FindNameBack),
            (0usize..4).prop_map(Move::FindCompleted),
            (0usize..4).prop_map(Move::FindCompletedBack),
        ]
    }

    /// Found by the property below: a search back steps over events that ran no handler (the
    /// cursor moves, the state stays), then one more step back must revert a handled event,
    /// not an undo recorded for an event already stepped over.
    #[test]
    fn a_step_back_after_a_search_back_reverts_the_event_it_steps_over() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut tape = runtime.block_on(demo_tape()).with_snapshot_interval(5);
        tape.find_name("task:started");
        tape.step_to(23);
        tape.find_name_back("task:started");
        tape.step_back();
        let position = tape.position() as usize;
        let fresh = tape.workflow().fold(&tape.events()[..position]);
        assert_eq!(
            serde_json::to_string(tape.state()).unwrap(),
            serde_json::to_string(&fresh).unwrap(),
            "the state at {position}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_sequence_of_moves_matches_a_fresh_fold(
            moves in proptest::collection::vec(a_move(), 1..40),
            interval in proptest::sample::select(vec![1u64, 2, 5, 16, 20, 1000]),
        ) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let mut tape = runtime.block_on(demo_tape()).with_snapshot_interval(interval);
            for m in moves {
                let before = tape.position();
                match m {
                    Move::Step => { tape.step(); }
                    Move::StepBack => { tape.step_back(); }
                    Move::StepTo(p) => { tape.step_to(p); }
                    Move::Rewind => { tape.rewind(); }
                    Move::FindName(name) => match tape.find_name(name) {
                        Some(p) => {
                            prop_assert!(p > before);
                            prop_assert_eq!(&tape.current().unwrap().name, name);
                        }
                        None => prop_assert_eq!(tape.position(), before),
                    },
                    Move::FindNameBack(name) => match tape.find_name_back(name) {
                        Some(p) => {
                            prop_assert!(p < before);
                            prop_assert_eq!(&tape.current().unwrap().name, name);
                        }
                        None => prop_assert_eq!(tape.position(), before),
                    },
                    Move::FindCompleted(n) => match tape.find(|_, s| s.completed == n) {
                        Some(p) => {
                            prop_assert!(p > before);
                            prop_assert_eq!(tape.state().completed, n);
                        }
                        None => prop_assert_eq!(tape.position(), before),
                    },
                    Move::FindCompletedBack(n) => match tape.find_back(|_, s| s.completed == n) {
                        Some(p) => {
                            prop_assert!(p < before && p > 0);
                            prop_assert_eq!(tape.state().completed, n);
                            // It is the last such position before where the tape was.
                            for later in p + 1..before {
                                prop_assert!(tape.state_at(later).completed != n);
                            }
                        }
                        None => prop_assert_eq!(tape.position(), before),
                    },
                }
                let position = tape.position();
                prop_assert!(position <= tape.len());
                let fresh = tape.workflow().fold(&tape.events()[..position as usize]);
                prop_assert_eq!(serde_json::to_string(tape.state()).unwrap(), serde_json::to_string(&fresh).unwrap());
                prop_assert_eq!(tape.current(), position.checked_sub(1).and_then(|i| tape.events().get(i as usize)));
                let probe = position.saturating_sub(7);
                prop_assert_eq!(
                    serde_json::to_string(&tape.state_at(probe)).unwrap(),
                    serde_json::to_string(&tape.workflow().fold(&tape.events()[..probe as usize])).unwrap()
                );
            }
        }
    }
}

/// Fork, cassette, diff, search and playback over the demo.
mod time_travel {
    use std::sync::{Arc, Mutex};

    use openharness::Handler;
    use openharness::provider::{Reply, ScriptedProvider};
    use openharness::tape::{
        At, Cassette, ForkSession, Pacing, ReplaySnapshot, TapeError, TapeStatus,
    };
    use openharness::{Agent, Renderer, builtin::SessionForked};
    use openharness_example_planner_executor::{
        Executor, Planner, TaskCompleted, TaskReport, TaskStarted,
    };

    use super::*;

    /// Runs the demo (both turns) into `store` and returns the workflow and the session.
    async fn recorded(store: MemoryStore) -> (Workflow<PlanState>, SessionId) {
        run_demo(store).await
    }

    fn other_model() -> ScriptedProvider {
        ScriptedProvider::new().fallback(Executor::NAME, |request| {
            Reply::output(serde_json::json!({ "summary": format!("(other model) {}", request.prompt.lines().nth(1).unwrap_or("")) }))
        })
    }

    #[tokio::test]
    async fn a_fork_starts_from_the_parents_state_and_runs_on_with_another_provider() {
        let store = MemoryStore::new();
        let (workflow, parent) = recorded(store.clone()).await;
        let parent_tape = workflow.load(&parent).await.unwrap();

        let variant = workflow.with_provider(other_model());
        let fork = variant
            .fork(&parent, At::nth("task:started", 2))
            .await
            .unwrap();
        let position = fork.position();
        assert_eq!(parent_tape.event_at(position).unwrap().name, "task:started");
        assert_eq!(fork.state(), &parent_tape.state_at(position));

        let outcome = fork.run(RunOptions::new()).await.unwrap();
        assert!(outcome.state.is_done());
        let child = variant.load(&outcome.session).await.unwrap();
        let first = child.events().first().unwrap();
        assert_eq!(
            first.decode::<SessionForked>().unwrap(),
            SessionForked {
                parent: parent.clone(),
                position,
                workflow: Some(example::WORKFLOW_NAME.to_owned()),
                open_requests: Vec::new(),
                // The hash of the parent's state there, as canonical JSON.
                state_hash: Some(
                    openharness::tape::state_hash(&parent_tape.state_at(position)).unwrap()
                ),
                state_edit: None,
            }
        );
        // The fork names its workflow, so listings need not read its ancestors.
        let info = store.session(&outcome.session).await.unwrap().unwrap();
        assert_eq!(info.workflow.as_deref(), Some(example::WORKFLOW_NAME));
        // The child's position 0 is the parent's state at the fork point.
        assert_eq!(child.initial_state(), &parent_tape.state_at(position));
        // The first task keeps the parent's result; the second ran again on the other model.
        let parent_final = parent_tape.state_at(parent_tape.len());
        assert_eq!(outcome.state.tasks[0], parent_final.tasks[0]);
        let redone = outcome.state.tasks[1].result.as_deref().unwrap();
        assert!(
            redone.starts_with("(other model) Complete task 2 of 3"),
            "{redone}"
        );
        // The child's tape replays to the run's final state.
        assert_eq!(child.state_at(child.len()), outcome.state);

        // The store shows the lineage.
        let sessions = store.sessions().await.unwrap();
        let info = sessions.iter().find(|s| s.id == outcome.session).unwrap();
        assert_eq!(info.parent.as_ref(), Some(&parent));
    }

    #[tokio::test]
    async fn two_forks_from_one_point_start_from_identical_state() {
        let (workflow, parent) = recorded(MemoryStore::new()).await;
        let at = || At::state(|s: &PlanState| s.completed == 1);
        let a = workflow.fork(&parent, at()).await.unwrap();
        let b = workflow.fork(&parent, at()).await.unwrap();
        assert_eq!(a.position(), b.position());
        assert_eq!(a.state().completed, 1);
        let variant = workflow.with_provider(other_model());
        let first = a.run_on(&variant, RunOptions::new()).await.unwrap();
        let second = b.run_on(&variant, RunOptions::new()).await.unwrap();
        assert_ne!(first.session, second.session);
        let first = workflow.load(&first.session).await.unwrap();
        let second = workflow.load(&second.session).await.unwrap();
        assert_eq!(first.initial_state(), second.initial_state());
        assert_eq!(first.state_at(1), second.state_at(1));
        assert_eq!(first.state_at(first.len()), second.state_at(second.len()));

        // A point that never happens is a typed error.
        let never = workflow.fork(&parent, At::nth("plan:created", 2)).await;
        assert!(
            matches!(never, Err(TapeError::NoForkPoint { .. })),
            "{never:?}"
        );
    }

    /// The executor, prompted differently.
    struct TerseExecutor;

    impl Agent for TerseExecutor {
        type State = PlanState;
        type Trigger = TaskStarted;
        type Output = TaskReport;
        const NAME: &'static str = Executor::NAME;
        const EMITS: &'static [&'static str] = &[TaskCompleted::NAME];
        fn prompt(&self, _state: &PlanState, task: &TaskStarted) -> String {
            format!("Do: {}", task.title)
        }
        fn on_output(&self, report: TaskReport, task: &TaskStarted) -> Emit {
            Emit::one(TaskCompleted {
                index: task.index,
                result: report.summary,
            })
        }
    }

    #[tokio::test]
    async fn a_cassette_replays_without_the_provider_and_names_the_first_divergence() {
        let store = MemoryStore::new();
        // Both turns: the plan, which ends waiting for approval, and the answer.
        let (workflow, recorded) = recorded(store.clone()).await;
        let cassette = Cassette::load(&workflow, &recorded).await.unwrap();

        // Unchanged: the same flow, and the workflow's own provider is never called.
        let untouched = ScriptedProvider::new();
        let same = workflow.with_provider(untouched.clone());
        let outcome = cassette.replay(&same, RunOptions::new()).await.unwrap();
        assert_eq!(untouched.calls(), 0);
        let original = workflow.load(&recorded).await.unwrap();
        assert_eq!(outcome.len, original.len());
        assert_eq!(outcome.state, original.state_at(original.len()));

        // A changed executor prompt diverges at the executor's first `agent:started`.
        let changed = Workflow::builder(example::WORKFLOW_NAME)
            .initial_state(PlanState::default())
            .agent(Planner)
            .agent(TerseExecutor)
            .until(PlanState::is_done)
            .store(store)
            .provider(untouched.clone())
            .build()
            .unwrap();
        let err = cassette
            .replay(&changed, RunOptions::new())
            .await
            .unwrap_err();
        let TapeError::Diverged(divergence) = err else {
            panic!("expected a divergence, got {err}");
        };
        let expected_at = original
            .events()
            .iter()
            .position(|e| e.name == "agent:started" && e.payload["agentName"] == "executor")
            .unwrap() as u64;
        assert_eq!(divergence.seq, expected_at);
        let expected = divergence.expected.as_ref().unwrap();
        let actual = divergence.actual.as_ref().unwrap();
        assert_eq!(expected.name, "agent:started");
        assert_eq!(actual.name, "agent:started");
        assert!(
            expected.payload["prompt"]
                .as_str()
                .unwrap()
                .starts_with("You are an executor")
        );
        assert_eq!(actual.payload["prompt"], "Do: Write the changelog");
        assert!(
            divergence
                .to_string()
                .contains(&format!("seq {expected_at}"))
        );
        assert_eq!(untouched.calls(), 0);
    }

    /// The planner-executor state with a changed handler: a plan starts its last task first.
    #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Backwards(PlanState);

    #[handler(example::PlannerEvent)]
    impl Backwards {
        fn goal(&mut self, input: &UserInput) -> Emit {
            self.0
                .apply(&example::PlannerEvent::UserInput(input.clone()))
        }
        fn plan(&mut self, plan: &example::PlanCreated) -> Emit {
            let _ = self
                .0
                .apply(&example::PlannerEvent::PlanCreated(plan.clone()));
            let last = plan.tasks.len().saturating_sub(1);
            Emit::one(TaskStarted {
                index: last,
                title: plan.tasks[last].clone(),
            })
        }
        fn started(&mut self, started: &TaskStarted) -> Emit {
            self.0
                .apply(&example::PlannerEvent::TaskStarted(started.clone()))
        }
        fn completed(&mut self, done: &TaskCompleted) -> Emit {
            self.0
                .apply(&example::PlannerEvent::TaskCompleted(done.clone()))
        }
        fn answered(&mut self, answer: &InputReceived) -> Emit {
            self.0
                .apply(&example::PlannerEvent::InputReceived(answer.clone()))
        }
        fn published(&mut self, published: &example::ReleasePublished) -> Emit {
            self.0
                .apply(&example::PlannerEvent::ReleasePublished(published.clone()))
        }
        fn declined(&mut self, declined: &example::ReleaseDeclined) -> Emit {
            self.0
                .apply(&example::PlannerEvent::ReleaseDeclined(declined.clone()))
        }
    }

    /// The executor for the `Backwards` state.
    struct BackwardsExecutor;

    impl Agent for BackwardsExecutor {
        type State = Backwards;
        type Trigger = TaskStarted;
        type Output = TaskReport;
        const NAME: &'static str = Executor::NAME;
        const EMITS: &'static [&'static str] = &[TaskCompleted::NAME];
        fn prompt(&self, state: &Backwards, task: &TaskStarted) -> String {
            Executor.prompt(&state.0, task)
        }
        fn on_output(&self, report: TaskReport, task: &TaskStarted) -> Emit {
            Executor.on_output(report, task)
        }
    }

    /// The planner for the `Backwards` state.
    struct BackwardsPlanner;

    impl Agent for BackwardsPlanner {
        type State = Backwards;
        type Trigger = UserInput;
        type Output = example::Plan;
        const NAME: &'static str = Planner::NAME;
        const EMITS: &'static [&'static str] = &[example::PlanCreated::NAME];
        fn prompt(&self, state: &Backwards, input: &UserInput) -> String {
            Planner.prompt(&state.0, input)
        }
        fn on_output(&self, plan: example::Plan, input: &UserInput) -> Emit {
            Planner.on_output(plan, input)
        }
    }

    #[tokio::test]
    async fn a_forked_session_re_executes_as_a_fork() {
        let store = MemoryStore::new();
        let (workflow, parent) = recorded(store.clone()).await;
        let variant = workflow.with_provider(other_model());
        let fork = variant
            .fork(&parent, At::nth("task:started", 2))
            .await
            .unwrap();
        let child = fork.run(RunOptions::new()).await.unwrap();
        let cassette = Cassette::load(&workflow, &child.session).await.unwrap();
        let untouched = ScriptedProvider::new();
        let again = cassette
            .replay(
                &workflow.with_provider(untouched.clone()),
                RunOptions::new(),
            )
            .await
            .unwrap();
        assert_eq!(again.len, child.len);
        assert_eq!(again.state, child.state);
        assert_eq!(untouched.calls(), 0);
    }

    #[tokio::test]
    async fn a_cassette_names_the_first_event_a_changed_handler_emits_differently() {
        let store = MemoryStore::new();
        let (workflow, recorded) = recorded(store.clone()).await;
        let original = workflow.load(&recorded).await.unwrap();
        let changed = Workflow::builder(example::WORKFLOW_NAME)
            .initial_state(Backwards::default())
            .agent(BackwardsPlanner)
            .agent(BackwardsExecutor)
            .until(|s: &Backwards| s.0.is_done())
            .store(store)
            .provider(ScriptedProvider::new())
            .build()
            .unwrap();
        let cassette = Cassette::load(&workflow, &recorded).await.unwrap();
        let Err(TapeError::Diverged(divergence)) =
            cassette.replay(&changed, RunOptions::new()).await
        else {
            panic!("the changed handler must diverge");
        };
        let first_task = original
            .events()
            .iter()
            .position(|e| e.name == "task:started")
            .unwrap();
        assert_eq!(divergence.seq, first_task as u64);
        let expected = divergence.expected.as_ref().unwrap();
        let actual = divergence.actual.as_ref().unwrap();
        assert_eq!(
            (expected.name.as_str(), actual.name.as_str()),
            ("task:started", "task:started")
        );
        assert_eq!(expected.payload["index"], 0);
        assert_eq!(actual.payload["index"], 2);
        // The cause is compared as a seq: both were caused by plan:created.
        assert_eq!(expected.caused_by, actual.caused_by);
    }

    #[tokio::test]
    async fn diff_find_and_event_at() {
        let mut tape = demo_tape().await;
        let plan = tape.find_name("plan:created").unwrap();
        assert_eq!(tape.current().unwrap().name, "plan:created");
        assert_eq!(tape.event_at(plan), tape.current());
        assert_eq!(tape.event_at(0), None);
        assert_eq!(tape.event_at(tape.len() + 1), None);

        // What plan:created changed: the tasks appeared.
        let patch = serde_json::to_value(tape.diff(plan - 1, plan).unwrap()).unwrap();
        let ops: Vec<(&str, &str)> = patch
            .as_array()
            .unwrap()
            .iter()
            .map(|op| (op["op"].as_str().unwrap(), op["path"].as_str().unwrap()))
            .collect();
        assert_eq!(
            ops,
            [
                ("add", "/tasks/0"),
                ("add", "/tasks/1"),
                ("add", "/tasks/2")
            ]
        );
        assert_eq!(patch[0]["value"]["title"], "Write the changelog");
        // A text delta changes nothing; a diff from a state to itself is empty.
        assert!(tape.diff(4, 5).unwrap().0.is_empty());
        // Applying diff(a, b) to the state at a gives the state at b.
        let mut state = serde_json::to_value(tape.state_at(3)).unwrap();
        json_patch::patch(&mut state, &tape.diff(3, tape.len()).unwrap()).unwrap();
        assert_eq!(
            state,
            serde_json::to_value(tape.state_at(tape.len())).unwrap()
        );

        // find on the state, forwards and back.
        let done_two = tape.find(|_, s| s.completed == 2).unwrap();
        assert_eq!(tape.state().completed, 2);
        assert_eq!(tape.current().unwrap().name, "task:completed");
        assert_eq!(tape.find(|e, _| e.name == "no:such"), None);
        assert_eq!(tape.position(), done_two);
        let running = tape
            .find_back(|_, s| {
                s.tasks
                    .first()
                    .is_some_and(|t| t.status == example::TaskStatus::Running)
            })
            .unwrap();
        // The last position where the first task was still running: the next event ends it.
        assert!(running < done_two);
        assert_eq!(tape.event_at(running + 1).unwrap().name, "task:completed");
        assert_eq!(
            tape.state_at(running + 1).tasks[0].status,
            example::TaskStatus::Done
        );
        assert_eq!(tape.find_name_back("workflow:started"), Some(1));
        assert_eq!(tape.find_name_back("workflow:started"), None);
        assert_eq!(tape.position(), 1);
    }

    /// Collects the names it sees; pauses the tape after `pause_after` events.
    struct Collect {
        seen: Arc<Mutex<Vec<String>>>,
        pause: Option<(usize, openharness::tape::Pauser)>,
    }

    impl Renderer for Collect {
        fn render(&mut self, event: &Envelope) {
            let mut seen = self.seen.lock().unwrap();
            seen.push(event.name.to_string());
            if let Some((after, pauser)) = &self.pause
                && seen.len() == *after
            {
                pauser.pause();
            }
        }
    }

    #[tokio::test]
    async fn play_feeds_renderers_and_pause_stops_it() {
        let mut tape = demo_tape().await;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut collect = Collect {
            seen: Arc::clone(&seen),
            pause: Some((3, tape.pauser())),
        };
        assert_eq!(tape.status(), TapeStatus::Idle);
        let reached = tape
            .play(
                &mut collect,
                Pacing::Every(std::time::Duration::from_millis(1)),
            )
            .await;
        assert_eq!(reached, 3);
        assert_eq!(tape.status(), TapeStatus::Paused);
        assert_eq!(
            *seen.lock().unwrap(),
            ["workflow:started", "user:input", "agent:started"]
        );
        collect.pause = None;
        assert_eq!(tape.play_to(10, &mut collect, Pacing::Instant).await, 10);
        assert_eq!(seen.lock().unwrap().len(), 10);
        let len = tape.len();
        assert_eq!(
            tape.play(&mut collect, Pacing::Recorded { speed: 1000.0 })
                .await,
            len
        );
        let names: Vec<String> = tape.events().iter().map(|e| e.name.to_string()).collect();
        assert_eq!(*seen.lock().unwrap(), names);
        assert_eq!(tape.status(), TapeStatus::Idle);
        assert!(tape.is_replaying() && !tape.is_recording());
    }

    #[tokio::test]
    async fn a_live_runs_tape_grows_until_the_run_ends() {
        let workflow = example::workflow(MemoryStore::new(), example::scripted_provider()).unwrap();
        let mut tape = Tape::record(&workflow, RunOptions::new().input(example::DEMO_GOAL));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut collect = Collect {
            seen: Arc::clone(&seen),
            pause: None,
        };
        // Playing a recording tape follows the run to its end.
        let reached = tape.play(&mut collect, Pacing::Instant).await;
        let outcome = tape.wait().await.unwrap();
        assert_eq!(reached, outcome.len);
        assert_eq!(tape.len(), outcome.len);
        assert!(!tape.is_recording());
        assert_eq!(tape.state(), &outcome.state);
        assert_eq!(seen.lock().unwrap().len() as u64, outcome.len);
        // Snapshots were laid down as the events arrived, and every position replays.
        let stats = tape.stats();
        assert_eq!(stats.snapshots, tape.len() / stats.interval + 1);
        for p in (0..=tape.len()).rev() {
            assert_eq!(tape.step_to(p), p);
            assert_eq!(
                tape.state(),
                &workflow.fold(&tape.events()[..p as usize]),
                "{p}"
            );
        }
        // The same events as the stored session.
        let stored = workflow.load(&outcome.session).await.unwrap();
        assert_eq!(stored.events(), tape.events());
        assert!(matches!(
            stored_wait(stored).await,
            Err(TapeError::NotRecording(_))
        ));
    }

    /// A provider that answers only once the test opens the gate.
    struct Gated(Arc<tokio::sync::Semaphore>, ScriptedProvider);

    #[async_trait::async_trait]
    impl openharness::Provider for Gated {
        fn name(&self) -> &str {
            "gated"
        }
        async fn complete(
            &self,
            request: openharness::adapter::ProviderRequest,
            sink: openharness::adapter::ProviderSink,
        ) -> openharness::adapter::ProviderResult {
            if let Ok(permit) = self.0.acquire().await {
                permit.forget();
            }
            self.1.complete(request, sink).await
        }
    }

    #[tokio::test]
    async fn a_live_tape_is_recording_while_the_run_waits_on_its_model() {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let provider = Gated(Arc::clone(&gate), example::scripted_provider());
        let workflow = example::workflow(MemoryStore::new(), provider).unwrap();
        let mut tape = Tape::record(&workflow, RunOptions::new().input(example::DEMO_GOAL));
        let mut collect = Collect {
            seen: Arc::new(Mutex::new(Vec::new())),
            pause: None,
        };
        // The planner has started and waits at the gate: the run is still recording.
        assert_eq!(tape.play_to(3, &mut collect, Pacing::Instant).await, 3);
        assert_eq!(tape.current().unwrap().name, "agent:started");
        assert!(tape.is_recording() && !tape.is_replaying());
        assert_eq!(tape.status(), TapeStatus::Recording);
        assert_eq!(tape.refresh(), 3);
        tape.step_back();
        assert_eq!(tape.position(), 2);

        gate.add_permits(16);
        let outcome = tape.wait().await.unwrap();
        assert!(outcome.state.is_done());
        assert_eq!(tape.len(), outcome.len);
        assert!(!tape.is_recording() && tape.is_replaying());
        assert_eq!(tape.status(), TapeStatus::Idle);
        assert_eq!(tape.state_at(tape.len()), outcome.state);
    }

    async fn stored_wait(mut tape: Tape<PlanState>) -> Result<(), TapeError> {
        tape.wait().await.map(|_| ())
    }

    #[tokio::test]
    async fn states_read_from_the_store_match_the_tape_with_and_without_persisted_snapshots() {
        let store = MemoryStore::new();
        let (workflow, session) = recorded(store.clone()).await;
        let tape = workflow
            .load(&session)
            .await
            .unwrap()
            .with_snapshot_interval(8);
        let positions = [0, 1, 7, 8, 9, 30, tape.len(), tape.len() + 3];
        // Several positions in one pass: out of order, repeated and past the end, answered in
        // the order asked with the clamped position.
        let several = [30, 9, tape.len() + 3, 9, 0, 17];
        let expect_several = |tape: &Tape<PlanState>| -> Vec<(u64, PlanState)> {
            several
                .iter()
                .map(|&p| (p.min(tape.len()), tape.state_at(p)))
                .collect()
        };
        assert_eq!(
            workflow.load_states_at(&session, &several).await.unwrap(),
            expect_several(&tape)
        );
        assert!(
            workflow
                .load_states_at(&session, &[])
                .await
                .unwrap()
                .is_empty()
        );
        for &p in &positions {
            assert_eq!(
                workflow.load_state_at(&session, p).await.unwrap(),
                tape.state_at(p),
                "{p}"
            );
        }
        let saved = tape.persist_snapshots().await.unwrap();
        assert_eq!(saved, tape.len() / 8);
        assert_eq!(tape.stats().interval, 8);
        assert_eq!(
            store
                .latest_snapshot(&session, 20)
                .await
                .unwrap()
                .unwrap()
                .position,
            16
        );
        for &p in &positions {
            assert_eq!(
                workflow.load_state_at(&session, p).await.unwrap(),
                tape.state_at(p),
                "{p}"
            );
        }
        // With snapshots at 8, 16, …, the pass starts at the one before the smallest position.
        assert_eq!(
            workflow.load_states_at(&session, &several).await.unwrap(),
            expect_several(&tape)
        );
        // A forked session without snapshots starts from its parent's state.
        let fork = workflow.fork(&session, At::position(20)).await.unwrap();
        let child = fork.run(RunOptions::new()).await.unwrap();
        let child_tape = workflow.load(&child.session).await.unwrap();
        assert_eq!(
            workflow.load_state_at(&child.session, 1).await.unwrap(),
            child_tape.state_at(1)
        );
        assert_eq!(child_tape.state_at(1), tape.state_at(20));
        assert_eq!(
            workflow
                .load_states_at(&child.session, &[2, 0, 1])
                .await
                .unwrap(),
            [2, 0, 1].map(|p| (p, child_tape.state_at(p)))
        );
        // A session that is not in the store is an error, as for one position.
        assert!(matches!(
            workflow.load_states_at(&SessionId::new(), &[0, 1]).await,
            Err(openharness::Error::SessionNotFound(_))
        ));
    }

    #[tokio::test]
    async fn a_view_at_every_position_matches_the_tape() {
        let store = MemoryStore::new();
        let (workflow, session) = recorded(store.clone()).await;
        // An event of another version and one whose payload no longer decodes: both skipped.
        let len = store.session(&session).await.unwrap().unwrap().count;
        store
            .append(
                &session,
                &[
                    Envelope::new("other:version", serde_json::json!({}), None),
                    Envelope::new("plan:created", serde_json::json!({ "tasks": 7 }), None),
                ],
                len,
            )
            .await
            .unwrap();
        let tape = workflow.load(&session).await.unwrap();
        assert_eq!(tape.skipped().total(), 2);
        for p in 0..=tape.len() + 2 {
            let view = workflow.view_at(&session, p).await.unwrap();
            assert_eq!(view.position, p.min(tape.len()));
            assert_eq!(view.len, tape.len());
            assert_eq!(view.state, tape.state_at(p), "{p}");
            assert_eq!(
                view.current.map(|r| (r.seq, r.event)),
                tape.event_at(view.position)
                    .map(|e| (view.position - 1, e.clone())),
                "{p}"
            );
            assert_eq!(&view.skipped, tape.skipped(), "{p}");
        }
        assert!(matches!(
            workflow.view_at(&SessionId::new(), 0).await,
            Err(openharness::Error::SessionNotFound(_))
        ));
    }

    #[tokio::test]
    async fn long_sessions_load_in_chunks_to_the_same_tape() {
        let store = MemoryStore::new();
        let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
        let session = SessionId::new();
        let mut events = vec![
            Envelope::typed(
                &WorkflowStarted {
                    workflow: example::WORKFLOW_NAME.into(),
                    code: None,
                    version: None,
                    commit: None,
                    state_shape: None,
                },
                None,
            )
            .unwrap(),
        ];
        events.extend(
            (1..40_000)
                .map(|i| Envelope::typed(&UserInput::new(format!("goal {i}")), None).unwrap()),
        );
        for (seq, batch) in (0..).step_by(5_000).zip(events.chunks(5_000)) {
            store.append(&session, batch, seq).await.unwrap();
        }
        let mut tape = workflow.load(&session).await.unwrap();
        assert_eq!(tape.events(), &events[..]);
        for p in [0, 1, 16_383, 16_384, 16_385, 32_768, 32_769, 39_999, 40_000] {
            let expected = workflow.fold(&events[..p as usize]);
            assert_eq!(tape.state_at(p), expected, "{p}");
            assert_eq!(tape.step_to(p), p);
            assert_eq!(tape.state(), &expected, "{p}");
        }
        assert_eq!(tape.state().goal.as_deref(), Some("goal 39999"));

        // A sparse snapshot far behind, and one that no longer decodes (folds from the start).
        let state_100 = serde_json::to_value(tape.state_at(100)).unwrap();
        store
            .snapshot(
                &session,
                &openharness::adapter::Snapshot::new(100, state_100),
            )
            .await
            .unwrap();
        assert_eq!(
            workflow.load_state_at(&session, 5_000).await.unwrap(),
            tape.state_at(5_000)
        );
        let bogus = serde_json::json!({ "not": "a plan" });
        store
            .snapshot(&session, &openharness::adapter::Snapshot::new(6_000, bogus))
            .await
            .unwrap();
        assert_eq!(
            workflow.load_state_at(&session, 6_100).await.unwrap(),
            tape.state_at(6_100)
        );
    }

    #[tokio::test]
    async fn replay_snapshot_helper() {
        let tape = demo_tape().await;
        insta::assert_json_snapshot!(
            "demo_replay_snapshot",
            ReplaySnapshot::of(&tape)
                .states_at([0, 15, tape.len()])
                .event_names()
                .section("messages", project_messages(tape.events()))
        );
    }
}

/// Cassette re-execution of an agent that talks as a chat (a system prompt and the
/// conversation as messages, a plain-text answer): what was sent is recorded in
/// `agent:started`, the same agent re-executes identically over two turns, and another system
/// prompt diverges there. A cut-off call is run again with its system prompt and conversation
/// derived again; one recorded before agents had them, with its recorded prompt alone.
mod chat_cassette {
    use openharness::provider::{Reply, ScriptedProvider};
    use openharness::tape::{Cassette, TapeError};
    use openharness::{ChatMessage, builtin::AgentStarted};
    use serde_json::json;

    use super::*;

    #[event("bot:replied")]
    #[derive(Debug, Clone)]
    struct BotReplied {
        text: String,
    }

    #[event]
    #[derive(Debug, Clone)]
    enum TalkEvent {
        UserInput,
        BotReplied,
    }

    #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
    struct Talk {
        said: Vec<(bool, String)>,
    }

    #[handler(TalkEvent)]
    impl Talk {
        fn input(&mut self, input: &UserInput) {
            self.said.push((true, input.text.clone()));
        }
        fn replied(&mut self, replied: &BotReplied) {
            self.said.push((false, replied.text.clone()));
        }
    }

    struct Bot(&'static str);

    #[agent(output = String, emits = [BotReplied])]
    impl Bot {
        fn prompt(&self, _talk: &Talk, _input: &UserInput) -> String {
            String::new()
        }
        fn system(&self, _talk: &Talk, _input: &UserInput) -> String {
            self.0.to_owned()
        }
        fn messages(&self, talk: &Talk, _input: &UserInput) -> Vec<ChatMessage> {
            talk.said
                .iter()
                .map(|(user, text)| {
                    if *user {
                        ChatMessage::user(text.clone())
                    } else {
                        ChatMessage::assistant(text.clone())
                    }
                })
                .collect()
        }
        fn on_output(&self, text: String) -> BotReplied {
            BotReplied { text }
        }
    }

    fn bot(store: MemoryStore, system: &'static str, provider: ScriptedProvider) -> Workflow<Talk> {
        Workflow::builder("talk")
            .initial_state(Talk::default())
            .agent(Bot(system))
            .store(store)
            .provider(provider)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_chat_agent_re_executes_and_another_system_prompt_diverges() {
        let store = MemoryStore::new();
        let provider = ScriptedProvider::new()
            .respond(
                "bot",
                Reply::output(json!("Hi \"you\".\n")).text("Hi \"you\".\n"),
            )
            .respond(
                "bot",
                Reply::output(json!("Still here.")).text("Still here."),
            );
        let workflow = bot(store.clone(), "Be kind.", provider);
        let first = workflow
            .run(RunOptions::new().input("Hello"))
            .await
            .unwrap();
        let second = workflow
            .send(&first.session, "Again", RunOptions::new())
            .await
            .unwrap();
        assert_eq!(second.state.said.len(), 4);
        let events = workflow.session_events(&first.session).await.unwrap();
        let started: Vec<AgentStarted> = events
            .iter()
            .filter_map(|e| e.decode::<AgentStarted>().ok())
            .collect();
        assert_eq!(started[1].system.as_deref(), Some("Be kind."));
        assert_eq!(
            started[1].messages,
            [
                ChatMessage::user("Hello"),
                ChatMessage::assistant("Hi \"you\".\n"),
                ChatMessage::user("Again"),
            ],
            "the recording shows the conversation that was sent"
        );

        let cassette = Cassette::load(&workflow, &first.session).await.unwrap();
        let untouched = ScriptedProvider::new();
        let same = bot(store.clone(), "Be kind.", untouched.clone());
        let outcome = cassette.replay(&same, RunOptions::new()).await.unwrap();
        assert_eq!(outcome.state, second.state);
        assert_eq!(untouched.calls(), 0);

        let other = bot(store, "Be curt.", untouched.clone());
        let Err(TapeError::Diverged(divergence)) = cassette.replay(&other, RunOptions::new()).await
        else {
            panic!("another system prompt must diverge");
        };
        let at = events
            .iter()
            .position(|e| e.name == "agent:started")
            .unwrap();
        assert_eq!(divergence.seq, at as u64, "at the first agent:started");
        assert_eq!(untouched.calls(), 0);
    }

    async fn resumed_request(started: serde_json::Value) -> openharness::adapter::ProviderRequest {
        use openharness::builtin::WorkflowStarted;
        let store = MemoryStore::new();
        let provider =
            ScriptedProvider::new().respond("bot", Reply::output(json!("Back.")).text("Back."));
        let workflow = bot(store.clone(), "Be kind.", provider.clone());
        let session = SessionId::new();
        let input = Envelope::typed(&UserInput::new("Hello"), None).unwrap();
        let log = [
            Envelope::typed(
                &WorkflowStarted {
                    workflow: "talk".into(),
                    code: None,
                    version: None,
                    commit: None,
                    state_shape: None,
                },
                None,
            )
            .unwrap(),
            input.clone(),
            Envelope::new("agent:started", started, Some(input.id)),
        ];
        store.append(&session, &log, 0).await.unwrap();
        let outcome = workflow.resume(&session, RunOptions::new()).await.unwrap();
        assert_eq!(outcome.state.said.last().unwrap().1, "Back.");
        provider.requests().remove(0)
    }

    #[tokio::test]
    async fn a_cut_off_chat_call_is_asked_again_as_recorded() {
        let request = resumed_request(json!({
            "agentName": "bot",
            "system": "Be kind.",
            "messages": [{ "role": "user", "text": "Hello" }],
            "prompt": "",
        }))
        .await;
        assert_eq!(request.system.as_deref(), Some("Be kind."));
        assert_eq!(request.messages, [ChatMessage::user("Hello")]);
        assert_eq!(request.prompt, "");

        // Recorded before agents had a system prompt and messages: the prompt alone, which
        // then held everything.
        let request = resumed_request(json!({
            "agentName": "bot",
            "prompt": "Be kind.\n\nUser: Hello",
        }))
        .await;
        assert_eq!(request.system, None);
        assert!(request.messages.is_empty());
        assert_eq!(request.prompt, "Be kind.\n\nUser: Hello");
    }
}
