//! An eval of the planner-executor, offline: does a terser executor prompt make the executor
//! report its tasks as done more often?
//!
//! One recorded session (the demo's) is forked right after each of its three `task:started`
//! (three cases) — the planner's call and the tasks before are already in the log, so no
//! variant pays for them again — and each of two prompt variants runs from there five times. The model is scripted with seeded variance:
//! under the recorded prompt it reports "Done: …" for 60% of tasks, under the terse prompt
//! for 90%, drawn from a seeded generator, so the comparison is the same on every run.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use openharness_example_planner_executor::eval;
//! let outcome = eval::run(openharness::store::MemoryStore::new()).await?;
//! assert_eq!(outcome.planner_calls, 0);
//! assert_eq!(outcome.comparison.identical_start, Some(true));
//! println!("{}", outcome.comparison.markdown());
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use openharness::Store;
use openharness::eval::{
    Case, Comparison, Experiment, ForkAt, RunView, Score, ScoreError, Scorer, Variant,
};
use openharness::host::Host;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};

use crate::{DEMO_GOAL, PlanState, Planner, TaskCompleted, TaskReport, TaskStarted};

/// The same executor with a terser prompt: the variant under test.
#[derive(Debug, Clone, Copy, Default)]
pub struct TerseExecutor;

#[agent(name = "executor", output = TaskReport, emits = [TaskCompleted])]
impl TerseExecutor {
    fn prompt(&self, state: &PlanState, task: &TaskStarted) -> String {
        format!(
            "Task {} of {}: {}\nDo it. Reply with one line starting with \"Done:\".",
            task.index + 1,
            state.tasks.len(),
            task.title
        )
    }

    fn on_output(&self, report: TaskReport, task: &TaskStarted) -> TaskCompleted {
        // What it does with the answer is the recorded executor's; only the prompt differs.
        crate::Executor.on_output(report, task)
    }
}

/// A scripted executor with seeded variance: each call draws from one generator; the terse
/// prompt (it asks for "Done:") gets "Done: …" 90% of the time, the recorded one 60%.
pub fn varied_model(seed: u64) -> ScriptedProvider {
    let state = Arc::new(Mutex::new(seed | 1));
    ScriptedProvider::new().fallback("executor", move |request| {
        let mut x = state.lock().unwrap_or_else(PoisonError::into_inner);
        // xorshift64: small, seeded, the same sequence on every machine.
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        let draw = (*x % 100) as u32;
        let odds = if request.prompt.contains("\"Done:\"") {
            90
        } else {
            60
        };
        let task = request
            .prompt
            .lines()
            .find(|l| l.contains("ask "))
            .unwrap_or("the task");
        let summary = if draw < odds {
            format!("Done: {task}")
        } else {
            format!("Started on {task}, more to do")
        };
        Reply::output(serde_json::json!({ "summary": summary }))
    })
}

/// Scores a run by the share of the tasks it completed (the ones after its fork point: a
/// fork's log holds only what it ran) whose report says "Done:"; passes when all do.
#[derive(Debug, Clone, Copy)]
pub struct ReportsDone;

#[async_trait]
impl Scorer for ReportsDone {
    fn name(&self) -> &str {
        "reports-done"
    }

    async fn score(&self, run: &RunView<'_>) -> Result<Score, ScoreError> {
        let reports: Vec<TaskCompleted> = run
            .events()
            .await?
            .iter()
            .filter(|event| event.is::<TaskCompleted>())
            .filter_map(|event| event.decode::<TaskCompleted>().ok())
            .collect();
        if reports.is_empty() {
            return Err(ScoreError::new("the run completed no task"));
        }
        let done = reports
            .iter()
            .filter(|r| r.result.starts_with("Done:"))
            .count();
        let share = done as f64 / reports.len() as f64;
        Ok(Score::measured(share, done == reports.len())
            .because(format!("{done} of {} tasks reported done", reports.len())))
    }
}

/// What [`run`] found.
#[derive(Debug)]
pub struct EvalOutcome {
    /// The terse prompt against the recorded one.
    pub comparison: Comparison,
    /// Planner calls during the experiment (0: the prefix came from the log).
    pub planner_calls: usize,
    /// Executor calls during the experiment (the suffix of each run).
    pub executor_calls: usize,
}

/// Records the demo session in `store`, then runs the experiment: the recorded prompt and
/// the terse one, five repeats each from each `task:started` of the recording.
pub async fn run(
    store: impl Store,
) -> Result<EvalOutcome, Box<dyn std::error::Error + Send + Sync>> {
    let store: Arc<dyn Store> = Arc::new(store);
    let recorded = crate::workflow(Arc::clone(&store), crate::scripted_provider())?;
    let first = recorded.run(RunOptions::new().input(DEMO_GOAL)).await?;
    let model = varied_model(42);
    let terse = Workflow::builder(crate::WORKFLOW_NAME)
        .initial_state(PlanState::default())
        .agent(Planner)
        .agent(TerseExecutor)
        .until(PlanState::is_published)
        .store(Arc::clone(&store))
        .provider(model.clone())
        .build()?;
    let host = Host::shared(Arc::clone(&store)).workflow(recorded)?;
    let ran = Experiment::new("terse-executor", host)
        .cases((1..=3).map(|n| {
            Case::recording(
                format!("from-task-{n}"),
                first.session.clone(),
                ForkAt::event("task:started", n),
            )
            .answers(["yes"])
        }))
        .variant(Variant::new("recorded-prompt").provider("scripted, seed 42", model.clone()))
        .variant(
            Variant::new("terse-prompt")
                .workflow(terse)
                .describe("asks for one line starting with \"Done:\""),
        )
        .repeats(5)
        .concurrency(1)
        .scorer(ReportsDone)
        .run()
        .await?;
    let comparison = Comparison::of(&ran.record, "terse-prompt", None, 0.05)?;
    Ok(EvalOutcome {
        comparison,
        planner_calls: model.calls_for("planner"),
        executor_calls: model.calls_for("executor"),
    })
}
