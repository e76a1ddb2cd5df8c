//! The race's workflow on our side: its events, the board (its lists as `imbl` vectors, plain
//! `Vec`s, or `Vec`s whose handlers record undos), the planner and executor agents and the
//! scripted provider that answers them.

use super::*;

/// The planner's output, as events: the plan's task titles.
#[event("plan:created")]
#[derive(Debug, Clone)]
pub(super) struct PlanCreated {
    pub(super) tasks: Vec<String>,
}

/// A task was handed to the executor.
#[event("task:started")]
#[derive(Debug, Clone)]
pub(super) struct TaskStarted {
    pub(super) index: u64,
}

/// The executor completed a task.
#[event("task:completed")]
#[derive(Debug, Clone)]
pub(super) struct TaskCompleted {
    pub(super) index: u64,
    pub(super) result: String,
}

/// The events the handlers fold.
#[event]
#[derive(Debug, Clone)]
pub(super) enum RaceEvent {
    UserInput,
    PlanCreated,
    TaskCompleted,
}

/// The state both sides fold: the goal, the task titles, the results of the tasks done (in
/// order) and the next task. The lists are persistent vectors by default, so a state clones
/// in constant time whatever N (the tape clones a state per position it keeps), or plain
/// `Vec`s ([`Board::plain`]), the state a user writes first, which clones in time and memory
/// in proportion to N.
///
/// With `undoable`, the handlers record how to undo their change ([`openharness::Undo`]), so
/// the tape steps back over a plain `Vec` board without copying it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(super) struct Board {
    pub(super) goal: String,
    pub(super) tasks: List,
    pub(super) done: List,
    pub(super) cursor: u64,
    #[serde(default)]
    pub(super) undoable: bool,
}

impl Board {
    /// A board whose lists are plain `Vec`s.
    pub(super) fn plain() -> Self {
        Self {
            tasks: List::Plain(Vec::new()),
            done: List::Plain(Vec::new()),
            ..Self::default()
        }
    }

    /// A board of plain `Vec`s whose handlers record undos.
    pub(super) fn plain_undoable() -> Self {
        Self {
            undoable: true,
            ..Self::plain()
        }
    }

    /// The name of this board's kind in the race's rows.
    pub(super) fn kind(&self) -> &'static str {
        match (&self.tasks, self.undoable) {
            (List::Shared(_), _) => "imbl",
            (List::Plain(_), false) => "Vec",
            (List::Plain(_), true) => "Vec+undo",
        }
    }

    /// Says, for a board whose handlers do not record undos, that this change cannot be
    /// undone (what they then record is dropped).
    pub(super) fn unless_undoable(&self, undo: &mut Undo<Self>) {
        if !self.undoable {
            undo.unsupported();
        }
    }

    pub(super) fn all_done(&self) -> bool {
        !self.tasks.is_empty() && self.done.len() == self.tasks.len()
    }
}

/// A list of strings on the board, in one of the two representations raced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) enum List {
    /// A persistent vector: clones share structure.
    Shared(imbl::Vector<String>),
    /// A plain `Vec`: clones copy every string.
    Plain(Vec<String>),
}

impl Default for List {
    fn default() -> Self {
        Self::Shared(imbl::Vector::new())
    }
}

impl List {
    /// A list of `items` in this list's representation.
    pub(super) fn refilled(&self, items: impl Iterator<Item = String>) -> Self {
        match self {
            Self::Shared(_) => Self::Shared(items.collect()),
            Self::Plain(_) => Self::Plain(items.collect()),
        }
    }

    pub(super) fn push(&mut self, item: String) {
        match self {
            Self::Shared(list) => list.push_back(item),
            Self::Plain(list) => list.push(item),
        }
    }

    pub(super) fn pop(&mut self) {
        match self {
            Self::Shared(list) => {
                list.pop_back();
            }
            Self::Plain(list) => {
                list.pop();
            }
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Self::Shared(list) => list.len(),
            Self::Plain(list) => list.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn get(&self, index: usize) -> Option<&String> {
        match self {
            Self::Shared(list) => list.get(index),
            Self::Plain(list) => list.get(index),
        }
    }

    pub(super) fn all(&self, holds: impl Fn(&String) -> bool) -> bool {
        match self {
            Self::Shared(list) => list.iter().all(holds),
            Self::Plain(list) => list.iter().all(holds),
        }
    }
}

#[handler(RaceEvent)]
impl Board {
    pub(super) fn goal_given(&mut self, input: &UserInput, undo: &mut Undo<Self>) {
        self.unless_undoable(undo);
        let goal = std::mem::replace(&mut self.goal, input.text.clone());
        undo.record(move |board| board.goal = goal);
    }

    pub(super) fn planned(&mut self, plan: &PlanCreated, undo: &mut Undo<Self>) -> Emit {
        self.unless_undoable(undo);
        undo.keep(self); // once per run: the whole board, back as it was
        self.tasks = self.tasks.refilled(plan.tasks.iter().cloned());
        self.done = self.done.refilled(std::iter::empty());
        self.cursor = 0;
        if self.tasks.is_empty() {
            Emit::none()
        } else {
            Emit::one(TaskStarted { index: 0 })
        }
    }

    pub(super) fn completed(&mut self, done: &TaskCompleted, undo: &mut Undo<Self>) -> Emit {
        self.unless_undoable(undo);
        if done.index != self.cursor {
            return Emit::none();
        }
        self.done.push(done.result.clone());
        self.cursor += 1;
        undo.record(|board| {
            board.done.pop();
            board.cursor -= 1;
        });
        if (self.cursor as usize) < self.tasks.len() {
            Emit::one(TaskStarted { index: self.cursor })
        } else {
            Emit::none()
        }
    }
}

/// The planner's structured output.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct Plan {
    pub(super) tasks: Vec<String>,
}

/// The executor's structured output.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub(super) struct Report {
    pub(super) result: String,
}

/// Turns the goal into N tasks.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    pub(super) fn prompt(&self, _state: &Board, input: &UserInput) -> String {
        format!("Break this goal into tasks: {}", input.text)
    }

    pub(super) fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

/// Completes one task per activation.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Executor;

#[agent(output = Report, emits = [TaskCompleted])]
impl Executor {
    pub(super) fn prompt(&self, state: &Board, task: &TaskStarted) -> String {
        let title = state
            .tasks
            .get(task.index as usize)
            .map_or("?", String::as_str);
        format!("Complete task {}: {title}", task.index)
    }

    pub(super) fn on_output(&self, report: Report, task: &TaskStarted) -> TaskCompleted {
        TaskCompleted {
            index: task.index,
            result: report.result,
        }
    }
}

/// The scripted model: N task titles for the planner, [`RESULT`] for every executor call.
pub(super) struct Script {
    pub(super) n: u64,
}

#[async_trait]
impl Provider for Script {
    fn name(&self) -> &str {
        "race-script"
    }

    async fn complete(&self, request: ProviderRequest, _sink: ProviderSink) -> ProviderResult {
        let output = if request.agent == Planner::NAME {
            let tasks: Vec<String> = (0..self.n).map(|i| format!("task {i}")).collect();
            json!({ "tasks": tasks })
        } else if request.agent == Executor::NAME {
            json!({ "result": RESULT })
        } else {
            return Err(ProviderError::NoResponse {
                agent: request.agent,
                message: "the race scripts the planner and the executor only".to_owned(),
            });
        };
        Ok(ProviderResponse::new(output, Usage::default(), None))
    }
}

/// The race workflow at `n` tasks on `store`. With `OPENHARNESS_RACE_STATE_HASHES=off` it
/// records no state hashes (`WorkflowBuilder::state_hashes(false)`): the baseline of what
/// recording them costs the live run.
pub(super) fn workflow(store: impl Store, n: u64, initial: Board) -> Fallible<Workflow<Board>> {
    let hashes = std::env::var("OPENHARNESS_RACE_STATE_HASHES").map_or(true, |v| v != "off");
    Ok(Workflow::builder(NAME)
        .state_hashes(hashes)
        .initial_state(initial)
        .agent(Planner)
        .agent(Executor)
        .until(Board::all_done)
        .store(store)
        .provider(Script { n })
        .build()?)
}

/// One live run of the race shape at `n` tasks on `store`, checked to end `until` every task
/// is done: for suites that measure what a store wrapper costs the run (the otel suite).
pub(crate) async fn run_on(store: std::sync::Arc<dyn Store>, n: u64) -> Fallible<()> {
    let outcome = workflow(store, n, Board::default())?
        .run(RunOptions::new().input(GOAL))
        .await?;
    check(outcome.reason == StopReason::Until, || {
        format!("the run ended {:?}, not until", outcome.reason)
    })?;
    check(outcome.state.done.len() as u64 == n, || {
        format!("done = {}, not {n}", outcome.state.done.len())
    })
}
