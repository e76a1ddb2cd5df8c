//! The planner-executor example: a planner agent turns a goal into tasks (structured output),
//! an executor agent completes them one at a time, handlers track progress, and once every
//! task is done a person is asked whether to publish the release. The session waits for the
//! answer; "yes" publishes (and the run is over), anything else records that it was not
//! published.
//!
//! The flow, event by event:
//!
//! ```text
//! user:input ──▶ planner ──▶ plan:created ──▶ task:started(0) ──▶ executor ──▶ task:completed(0)
//!                                                 ▲                                  │
//!                                                 └────────── task:started(1) ◀──────┘ ... until all done
//!
//! task:completed(last) ──▶ input:requested ──▶ workflow:completed (waiting_for_input)
//!        (a later turn)    input:received  ──▶ release:published | release:declined
//! ```
//!
//! Tasks run one after another, so the event flow of a run is deterministic for a given
//! script, which is what lets the tests pin it with snapshots.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), openharness::Error> {
//! use openharness::prelude::*;
//! use openharness::store::MemoryStore;
//! use openharness_example_planner_executor as example;
//!
//! let workflow = example::workflow(MemoryStore::new(), example::scripted_provider())?;
//! let outcome = workflow.run(RunOptions::new().input(example::DEMO_GOAL)).await?;
//! assert!(outcome.state.is_done());
//! assert_eq!(outcome.state.tasks.len(), 3);
//! // Every task is done; the release waits for a person's approval.
//! assert_eq!(outcome.reason, StopReason::WaitingForInput);
//! let request = outcome.open_requests[0];
//! let outcome = workflow.respond(&outcome.session, request, "yes", RunOptions::new()).await?;
//! assert_eq!(outcome.reason, StopReason::Until);
//! assert_eq!(outcome.state.release, Some(example::Release::Published));
//! # Ok(()) }
//! ```

pub mod eval;

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::{Error, Provider, schemars};
use serde::{Deserialize, Serialize};

/// The name runs of this workflow are recorded under.
pub const WORKFLOW_NAME: &str = "planner-executor";

/// The goal the offline demo plans.
pub const DEMO_GOAL: &str = "Ship version 0.1 of our command-line tool";

/// The planner's output: the goal broken into tasks.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCreated {
    /// Task titles, in the order they should run.
    pub tasks: Vec<String>,
}

/// A task was handed to the executor.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct TaskStarted {
    /// Index in the plan.
    pub index: usize,
    /// The task's title.
    pub title: String,
}

/// The executor finished a task.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct TaskCompleted {
    /// Index in the plan.
    pub index: usize,
    /// What the executor reported.
    pub result: String,
}

/// The question asked once every task is done; a person answers it.
pub const PUBLISH_PROMPT: &str = "Publish the release? (yes/no)";

/// Whether an answer to [`PUBLISH_PROMPT`] approves publishing: `yes` or `y`, in any case,
/// around spaces. Anything else declines.
pub fn approves(answer: &str) -> bool {
    let answer = answer.trim();
    answer.eq_ignore_ascii_case("yes") || answer.eq_ignore_ascii_case("y")
}

/// A person approved: the release is published.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct ReleasePublished {
    /// How many tasks the published release completed.
    pub tasks: usize,
}

/// A person did not approve: the release was not published.
#[event]
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseDeclined {
    /// The answer given instead of "yes".
    pub answer: String,
}

/// Every event this workflow's handlers react to.
#[event]
pub enum PlannerEvent {
    /// The goal.
    UserInput,
    /// The plan.
    PlanCreated,
    /// A task began.
    TaskStarted,
    /// A task ended.
    TaskCompleted,
    /// A person answered whether to publish.
    InputReceived,
    /// The release went out.
    ReleasePublished,
    /// The release was held back.
    ReleaseDeclined,
}

/// What became of the release once every task was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Release {
    /// A person approved and it was published.
    Published,
    /// A person did not approve; it was not published.
    Declined,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Not started.
    Pending,
    /// Handed to the executor.
    Running,
    /// Finished.
    Done,
}

/// One task of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Title.
    pub title: String,
    /// Status.
    pub status: TaskStatus,
    /// The executor's report, once done.
    pub result: Option<String>,
}

/// The workflow's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanState {
    /// The goal, once given.
    pub goal: Option<String>,
    /// The plan's tasks.
    pub tasks: Vec<Task>,
    /// How many tasks are done.
    pub completed: usize,
    /// What became of the release, once a person answered (none before).
    #[serde(default)]
    pub release: Option<Release>,
}

impl PlanState {
    /// Whether a plan exists and every task in it is done.
    pub fn is_done(&self) -> bool {
        !self.tasks.is_empty() && self.completed == self.tasks.len()
    }

    /// Whether the release was published: the run is over.
    pub fn is_published(&self) -> bool {
        self.release == Some(Release::Published)
    }

    /// Whether every task is done and the release waits for a person's decision.
    pub fn awaits_approval(&self) -> bool {
        self.is_done() && self.release.is_none()
    }

    fn start(&self, index: usize) -> Emit {
        match self.tasks.get(index) {
            Some(task) => Emit::one(TaskStarted {
                index,
                title: task.title.clone(),
            }),
            None => Emit::none(),
        }
    }
}

#[handler(PlannerEvent)]
impl PlanState {
    fn goal_given(&mut self, input: &UserInput) {
        // A new goal (a later turn of the session) replaces the old plan and its release.
        self.goal = Some(input.text.clone());
        self.tasks.clear();
        self.completed = 0;
        self.release = None;
    }

    fn plan_created(&mut self, plan: &PlanCreated) -> Emit {
        self.tasks = plan
            .tasks
            .iter()
            .map(|title| Task {
                title: title.clone(),
                status: TaskStatus::Pending,
                result: None,
            })
            .collect();
        self.completed = 0;
        self.release = None;
        self.start(0)
    }

    fn task_started(&mut self, started: &TaskStarted) {
        if let Some(task) = self.tasks.get_mut(started.index) {
            task.status = TaskStatus::Running;
        }
    }

    fn task_completed(&mut self, done: &TaskCompleted) -> Emit {
        let Some(task) = self.tasks.get_mut(done.index) else {
            return Emit::none();
        };
        if task.status == TaskStatus::Done {
            // A repeated report changes nothing and asks nothing again.
            return self.start(done.index + 1);
        }
        task.status = TaskStatus::Done;
        task.result = Some(done.result.clone());
        self.completed += 1;
        if self.awaits_approval() {
            return Emit::one(InputRequested::new(PUBLISH_PROMPT));
        }
        self.start(done.index + 1)
    }

    fn answered(&mut self, answer: &InputReceived) -> Emit {
        // Only the publish question is ever asked, and only while the release is undecided.
        if !self.awaits_approval() {
            return Emit::none();
        }
        if approves(&answer.text) {
            Emit::one(ReleasePublished {
                tasks: self.completed,
            })
        } else {
            Emit::one(ReleaseDeclined {
                answer: answer.text.clone(),
            })
        }
    }

    fn published(&mut self, _published: &ReleasePublished) {
        self.release = Some(Release::Published);
    }

    fn declined(&mut self, _declined: &ReleaseDeclined) {
        self.release = Some(Release::Declined);
    }
}

/// The planner's structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// Short, concrete task titles, in order (at most 10).
    pub tasks: Vec<String>,
}

/// The executor's structured output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskReport {
    /// One sentence on what was done.
    pub summary: String,
}

/// Turns the goal into a plan.
#[derive(Debug, Clone, Copy, Default)]
pub struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        format!(
            "You are a planner. Break this goal into at most 10 short, concrete tasks, in order.\nGoal: {}",
            input.text
        )
    }

    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

/// Completes one task.
#[derive(Debug, Clone, Copy, Default)]
pub struct Executor;

#[agent(output = TaskReport, emits = [TaskCompleted])]
impl Executor {
    fn prompt(&self, state: &PlanState, task: &TaskStarted) -> String {
        let goal = state.goal.as_deref().unwrap_or("(no goal)");
        format!(
            "You are an executor working towards: {goal}\nComplete task {} of {}: {}\nReport what you did in one sentence.",
            task.index + 1,
            state.tasks.len(),
            task.title
        )
    }

    fn on_output(&self, report: TaskReport, task: &TaskStarted) -> TaskCompleted {
        TaskCompleted {
            index: task.index,
            result: report.summary,
        }
    }
}

/// The planner-executor workflow, recording to `store` and asking `provider`. A run ends
/// waiting for a person once every task is done; [`Workflow::respond`] with "yes" publishes
/// the release and ends it (`until`), any other answer leaves it unpublished (idle).
pub fn workflow(store: impl Store, provider: impl Provider) -> Result<Workflow<PlanState>, Error> {
    Workflow::builder(WORKFLOW_NAME)
        .version(env!("CARGO_PKG_VERSION"))
        .initial_state(PlanState::default())
        .agent(Planner)
        .agent(Executor)
        .until(PlanState::is_published)
        .store(store)
        .provider(provider)
        .build()
}

/// The script the offline demo runs: a three-task plan for [`DEMO_GOAL`] and one report per task,
/// each streamed as text first, like a real model would.
pub fn scripted_provider() -> ScriptedProvider {
    let tasks = [
        "Write the changelog",
        "Tag the release in git",
        "Publish the crate",
    ];
    let reports = [
        "Summarised the 14 merged pull requests into CHANGELOG.md under 0.1.0.",
        "Created the annotated tag v0.1.0 on the release commit.",
        "Published version 0.1.0 and checked that it installs cleanly.",
    ];
    let provider = ScriptedProvider::new().respond(
        Planner::NAME,
        Reply::output(serde_json::json!({ "tasks": tasks }))
            .text("Three steps get a first release out: changelog, tag, publish."),
    );
    reports.iter().fold(provider, |provider, report| {
        provider.respond(
            Executor::NAME,
            Reply::output(serde_json::json!({ "summary": report }))
                .text(format!("Working on it. {report}")),
        )
    })
}
