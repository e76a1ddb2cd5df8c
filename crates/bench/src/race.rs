//! The race suite: the planner-executor shape on Open Harness against the same shape on
//! LangGraph, both durable, run alternately in one go at N = 1 000, 5 000 and 10 000 tasks.
//!
//! Our side: a planner agent returns N tasks, an executor agent completes one task per
//! activation with the result `"ok " * 8`, handlers fold into `{goal, tasks, done, cursor}`
//! and the run ends (`until`) once every task is done. A scripted provider answers both
//! agents; the store is the durable default, [`RedbStore`]. Each N runs in a child process
//! (`openharness-bench race-ours N DIR`) so its peak RSS is its own; it prints one JSON line.
//!
//! Their side: `crates/bench/race/langgraph_race.py` (a StateGraph with planner and executor
//! nodes, `SqliteSaver` in WAL mode with `synchronous=FULL`, `durability="sync"`), run by the
//! Python of a virtualenv at the workspace root (`.race-venv`, or `OPENHARNESS_RACE_VENV`)
//! that this suite creates and fills from `crates/bench/race/requirements.txt` on first use.
//!
//! Our side runs three times at each N, against the same LangGraph run: with the board's lists
//! as persistent vectors (`imbl`, which clone in constant time); as plain `Vec`s (the state a
//! user writes first; rows marked `[Vec state]`); and as plain `Vec`s whose handlers record
//! how to undo their change (`undo: &mut Undo<Self>`; rows marked `[Vec+undo state]`), so the
//! tape steps back by reverting an event instead of copying the board.
//!
//! Both sides measure the same figures on the same N and check their results (every task
//! done, and the state at the jump has the cursor the walk saw there). Two more rows compare
//! live completions/s at N = 5 000 with durability deferred on both sides, like for like: our
//! group commit (10 ms) against LangGraph's `durability="async"`, and our durable-at-turn-end
//! against its `"exit"`. Our side also reports its durable appends' median against the disk's
//! floor measured right after the live run in the same folder (the median sequential 1 KiB
//! append + `fdatasync`): how far the store is from what the disk allows.

use std::error::Error;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use openharness::Agent;
use openharness::adapter::{ProviderResponse, ProviderSink};
use openharness::builtin::UserInput;
use openharness::schemars;
use openharness::store::{Observed, RedbDurability, RedbOptions, RedbStore, StoreObserver};
use openharness::tape::LoadTape;
use openharness::{
    Emit, Envelope, Provider, ProviderError, RunOptions, SessionId, StopReason, Store, StoreError,
    Undo, Workflow,
    adapter::{ProviderRequest, Usage},
    agent, event, handler,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::report::{Row, median};

type Fallible<T> = Result<T, Box<dyn Error>>;

/// The task counts raced, smallest first.
const SIZES: [u64; 3] = [1_000, 5_000, 10_000];
/// What the executor reports for every task, on both sides.
const RESULT: &str = "ok ok ok ok ok ok ok ok ";
/// The goal given to the planner, on both sides.
const GOAL: &str = "Complete every task of the race";
/// The workflow's name, recorded in `workflow:started`.
const NAME: &str = "race";

/// The planner's output, as events: the plan's task titles.
#[event("plan:created")]
#[derive(Debug, Clone)]
struct PlanCreated {
    tasks: Vec<String>,
}

/// A task was handed to the executor.
#[event("task:started")]
#[derive(Debug, Clone)]
struct TaskStarted {
    index: u64,
}

/// The executor completed a task.
#[event("task:completed")]
#[derive(Debug, Clone)]
struct TaskCompleted {
    index: u64,
    result: String,
}

/// The events the handlers fold.
#[event]
#[derive(Debug, Clone)]
enum RaceEvent {
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
struct Board {
    goal: String,
    tasks: List,
    done: List,
    cursor: u64,
    #[serde(default)]
    undoable: bool,
}

impl Board {
    /// A board whose lists are plain `Vec`s.
    fn plain() -> Self {
        Self {
            tasks: List::Plain(Vec::new()),
            done: List::Plain(Vec::new()),
            ..Self::default()
        }
    }

    /// A board of plain `Vec`s whose handlers record undos.
    fn plain_undoable() -> Self {
        Self {
            undoable: true,
            ..Self::plain()
        }
    }

    /// The name of this board's kind in the race's rows.
    fn kind(&self) -> &'static str {
        match (&self.tasks, self.undoable) {
            (List::Shared(_), _) => "imbl",
            (List::Plain(_), false) => "Vec",
            (List::Plain(_), true) => "Vec+undo",
        }
    }

    /// Says, for a board whose handlers do not record undos, that this change cannot be
    /// undone (what they then record is dropped).
    fn unless_undoable(&self, undo: &mut Undo<Self>) {
        if !self.undoable {
            undo.unsupported();
        }
    }

    fn all_done(&self) -> bool {
        !self.tasks.is_empty() && self.done.len() == self.tasks.len()
    }
}

/// A list of strings on the board, in one of the two representations raced.
#[derive(Debug, Clone, Serialize, Deserialize)]
enum List {
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
    fn refilled(&self, items: impl Iterator<Item = String>) -> Self {
        match self {
            Self::Shared(_) => Self::Shared(items.collect()),
            Self::Plain(_) => Self::Plain(items.collect()),
        }
    }

    fn push(&mut self, item: String) {
        match self {
            Self::Shared(list) => list.push_back(item),
            Self::Plain(list) => list.push(item),
        }
    }

    fn pop(&mut self) {
        match self {
            Self::Shared(list) => {
                list.pop_back();
            }
            Self::Plain(list) => {
                list.pop();
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Shared(list) => list.len(),
            Self::Plain(list) => list.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, index: usize) -> Option<&String> {
        match self {
            Self::Shared(list) => list.get(index),
            Self::Plain(list) => list.get(index),
        }
    }

    fn all(&self, holds: impl Fn(&String) -> bool) -> bool {
        match self {
            Self::Shared(list) => list.iter().all(holds),
            Self::Plain(list) => list.iter().all(holds),
        }
    }
}

#[handler(RaceEvent)]
impl Board {
    fn goal_given(&mut self, input: &UserInput, undo: &mut Undo<Self>) {
        self.unless_undoable(undo);
        let goal = std::mem::replace(&mut self.goal, input.text.clone());
        undo.record(move |board| board.goal = goal);
    }

    fn planned(&mut self, plan: &PlanCreated, undo: &mut Undo<Self>) -> Emit {
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

    fn completed(&mut self, done: &TaskCompleted, undo: &mut Undo<Self>) -> Emit {
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
struct Plan {
    tasks: Vec<String>,
}

/// The executor's structured output.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Report {
    result: String,
}

/// Turns the goal into N tasks.
#[derive(Debug, Clone, Copy, Default)]
struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &Board, input: &UserInput) -> String {
        format!("Break this goal into tasks: {}", input.text)
    }

    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

/// Completes one task per activation.
#[derive(Debug, Clone, Copy, Default)]
struct Executor;

#[agent(output = Report, emits = [TaskCompleted])]
impl Executor {
    fn prompt(&self, state: &Board, task: &TaskStarted) -> String {
        let title = state
            .tasks
            .get(task.index as usize)
            .map_or("?", String::as_str);
        format!("Complete task {}: {title}", task.index)
    }

    fn on_output(&self, report: Report, task: &TaskStarted) -> TaskCompleted {
        TaskCompleted {
            index: task.index,
            result: report.result,
        }
    }
}

/// The scripted model: N task titles for the planner, [`RESULT`] for every executor call.
struct Script {
    n: u64,
}

#[async_trait]
impl Provider for Script {
    fn name(&self) -> &str {
        "race-script"
    }

    async fn complete(
        &self,
        request: ProviderRequest,
        _sink: ProviderSink,
    ) -> Result<ProviderResponse, ProviderError> {
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
        Ok(ProviderResponse {
            output,
            usage: Usage::default(),
            cost: None,
        })
    }
}

fn workflow(store: impl Store, n: u64, initial: Board) -> Fallible<Workflow<Board>> {
    Ok(Workflow::builder(NAME)
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

/// What one side measured at one N: the JSON line each side's process prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Figures {
    side: String,
    n: u64,
    /// Positions in the history: events (ours), checkpoints (LangGraph).
    positions: u64,
    done: u64,
    live_s: f64,
    walk_forward_s: f64,
    walk_back_s: f64,
    jump_s: f64,
    jump_position: u64,
    jump_cursor: u64,
    file_bytes: u64,
    peak_rss_bytes: u64,
    /// Ours only: the lists' representation, `imbl` or `Vec`.
    #[serde(default)]
    state: Option<String>,
    /// Ours only: the appends of the live run and the seconds spent in them (durable writes).
    #[serde(default)]
    appends: Option<(u64, f64)>,
    /// Ours only: the median append of the live run, and the disk's floor measured right
    /// after it in the same folder (the median sequential 1 KiB append + `fdatasync`), in
    /// seconds.
    #[serde(default)]
    append_p50_and_floor: Option<(f64, f64)>,
}

/// Fails the run when it did not do what it should: a benchmark of a broken run is worthless.
fn check(holds: bool, what: impl FnOnce() -> String) -> Fallible<()> {
    if holds {
        Ok(())
    } else {
        Err(format!("wrong result: {}", what()).into())
    }
}

/// `openharness-bench race-ours N DIR [every|redb|periodic|turn] [imbl|vec|vec-undo]`: our
/// side at one N, in a store under DIR, with the store's durability (every append durable, the
/// default, through the journal; `redb`: every append a durable redb commit, no journal; group
/// commit every 10 ms; or durable at the turn's end) and the board's lists (persistent
/// vectors, the default; plain `Vec`s; or plain `Vec`s whose handlers record undos); prints
/// one JSON line of [`Figures`].
pub(crate) fn child(
    n: Option<String>,
    dir: Option<String>,
    mode: Option<String>,
    lists: Option<String>,
) -> ExitCode {
    let initial = match lists.as_deref() {
        None | Some("imbl") => Board::default(),
        Some("vec") => Board::plain(),
        Some("vec-undo") => Board::plain_undoable(),
        Some(other) => {
            eprintln!("unknown lists `{other}`: imbl, vec or vec-undo");
            return ExitCode::from(2);
        }
    };
    let options = RedbOptions::default();
    let options = match mode.as_deref() {
        None | Some("every") => options,
        Some("redb") => options.journal(false),
        Some("periodic") => options.durability(RedbDurability::Periodic(
            std::time::Duration::from_millis(10),
        )),
        Some("turn") => options.durability(RedbDurability::TurnEnd),
        Some(other) => {
            eprintln!("unknown durability `{other}`: every, redb, periodic or turn");
            return ExitCode::from(2);
        }
    };
    let (Some(n), Some(dir)) = (n.and_then(|n| n.parse::<u64>().ok()), dir) else {
        eprintln!(
            "usage: openharness-bench race-ours N DIR [every|redb|periodic|turn] [imbl|vec|vec-undo]"
        );
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("bench race: could not start tokio: {err}");
            return ExitCode::FAILURE;
        }
    };
    let figures = runtime
        .block_on(ours(n, Path::new(&dir), options, initial))
        .and_then(|figures| Ok(serde_json::to_string(&figures)?));
    match figures {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("bench race (ours, N = {n}): {err}");
            ExitCode::FAILURE
        }
    }
}

async fn ours(n: u64, dir: &Path, options: RedbOptions, initial: Board) -> Fallible<Figures> {
    let lists = initial.kind();
    let path = dir.join("race.redb");
    let store = RedbStore::open_with(&path, options)?;
    let appends = Appends::default();
    let flow = workflow(
        Observed::new(store.clone(), appends.clone()),
        n,
        initial.clone(),
    )?;

    let started = Instant::now();
    let outcome = flow.run(RunOptions::new().input(GOAL)).await?;
    let live_s = started.elapsed().as_secs_f64();
    let (append_count, append_s, append_p50) = appends.read();
    let floor = append_floor(dir, 500)?;
    let state = &outcome.state;
    check(outcome.reason == StopReason::Until, || {
        format!("the run ended {:?}, not until", outcome.reason)
    })?;
    check(state.done.len() as u64 == n && state.cursor == n, || {
        format!(
            "done = {}, cursor = {}, not {n}",
            state.done.len(),
            state.cursor
        )
    })?;
    check(state.done.all(|r| r == RESULT), || {
        "a result is wrong".to_owned()
    })?;
    let session = outcome.session.clone();
    let len = outcome.len;
    let snapshot = store.latest_snapshot(&session, u64::MAX).await?;
    check(snapshot.map(|s| s.position) == Some(len), || {
        "the run saved no snapshot at its end".to_owned()
    })?;

    // Forward: load the session, then every position's state from 0 to len.
    let started = Instant::now();
    let mut tape = flow.load(&session).await?;
    let mut forward = Vec::with_capacity(usize::try_from(len)? + 1);
    forward.push(black_box(tape.state()).cursor);
    while tape.position() < tape.len() {
        tape.step();
        forward.push(black_box(tape.state()).cursor);
    }
    let walk_forward_s = started.elapsed().as_secs_f64();
    check(tape.len() == len && tape.state().all_done(), || {
        format!("the tape holds {} events, not {len}", tape.len())
    })?;
    drop(tape);

    // Backward: load it again, go to the end, then every position's state from len to 0.
    let started = Instant::now();
    let mut tape = flow.load(&session).await?;
    tape.step_to(tape.len());
    let mut backward = Vec::with_capacity(forward.len());
    backward.push(black_box(tape.state()).cursor);
    while tape.position() > 0 {
        tape.step_back();
        backward.push(black_box(tape.state()).cursor);
    }
    let walk_back_s = started.elapsed().as_secs_f64();
    backward.reverse();
    check(forward == backward, || {
        "the forward and backward walks saw different states".to_owned()
    })?;
    drop((tape, flow, store));

    // Jump: open the store afresh and read the state 10% in.
    let jump_position = len / 10;
    let started = Instant::now();
    let store = RedbStore::open(&path)?;
    let flow = workflow(store, n, initial)?;
    let at = flow.load_state_at(&session, jump_position).await?;
    let jump_s = started.elapsed().as_secs_f64();
    let expected = forward
        .get(usize::try_from(jump_position)?)
        .copied()
        .ok_or("the walk has no state at the jump")?;
    check(at.cursor == expected, || {
        format!("the jump read cursor {}, not {expected}", at.cursor)
    })?;
    drop(flow);

    Ok(Figures {
        side: "ours".to_owned(),
        n,
        positions: len,
        done: state.done.len() as u64,
        live_s,
        walk_forward_s,
        walk_back_s,
        jump_s,
        jump_position,
        jump_cursor: at.cursor,
        file_bytes: std::fs::metadata(&path)?.len(),
        appends: Some((append_count, append_s)),
        state: Some(lists.to_owned()),
        append_p50_and_floor: Some((append_p50, floor)),
        peak_rss_bytes: peak_rss()?,
    })
}

/// The appends of a run: how long each took, shared by its clones.
#[derive(Clone, Default)]
struct Appends(Arc<Mutex<Vec<f64>>>);

impl Appends {
    fn add(&self, seconds: f64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(seconds);
    }

    /// How many, their total seconds and their median.
    fn read(&self) -> (u64, f64, f64) {
        let took = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        (took.len() as u64, took.iter().sum(), median(took))
    }
}

/// The disk's floor for a durable append, measured in `dir`: the median of `samples`
/// sequential 1 KiB writes, each followed by `fdatasync`, to a file of its own.
fn append_floor(dir: &Path, samples: usize) -> Fallible<f64> {
    use std::io::Write as _;
    let path = dir.join("floor.bin");
    let mut file = std::fs::File::create(&path)?;
    let block = [0x5a_u8; 1024];
    let mut took = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        took.push(started.elapsed().as_secs_f64());
    }
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(median(took))
}

/// The live run's appends, counted and timed, for the profile printed beside the table.
#[async_trait]
impl StoreObserver for Appends {
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        _: &Result<u64, StoreError>,
        took: std::time::Duration,
    ) {
        self.add(took.as_secs_f64());
    }
}

/// This process's peak resident set (VmHWM), in bytes.
fn peak_rss() -> Fallible<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .ok_or("no VmHWM in /proc/self/status")?;
    Ok(kb * 1024)
}

/// `openharness-bench race`: both sides alternately at every N, then one table.
pub(crate) fn run() -> ExitCode {
    match race() {
        Ok(rows) => {
            crate::report::print(&rows);
            println!(
                "ratio = LangGraph's figure / ours for times, sizes and RSS, ours / LangGraph's for completions/s: higher is better for us"
            );
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("bench race: {err}");
            ExitCode::FAILURE
        }
    }
}

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv's Python, with the pinned LangGraph installed; `Err` says why not.
fn python() -> Fallible<PathBuf> {
    let venv = std::env::var_os("OPENHARNESS_RACE_VENV")
        .map_or_else(|| bench_dir().join("../../.race-venv"), PathBuf::from);
    let python = venv.join("bin/python");
    let requirements = bench_dir().join("race/requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)?;
    let marker = venv.join("race-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) {
        return Ok(python);
    }
    if !python.exists() {
        eprintln!("bench race: creating a virtualenv in {}", venv.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()?;
        check(status.success(), || {
            format!("python3 -m venv failed ({status})")
        })?;
    }
    eprintln!("bench race: pip install -r {}", requirements.display());
    let status = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "-r"])
        .arg(&requirements)
        .status()?;
    if !status.success() {
        return Err(format!("pip install failed ({status})").into());
    }
    std::fs::write(&marker, wanted)?;
    Ok(python)
}

/// Runs one side at one N in a temporary directory (then `after`, such as a durability) and
/// reads its JSON line.
fn side(mut command: Command, what: &str) -> Fallible<Figures> {
    side_with(&mut command, what, &[])
}

fn side_with(command: &mut Command, what: &str, after: &[&str]) -> Fallible<Figures> {
    let dir = tempfile::tempdir()?;
    let output = command.arg(dir.path()).args(after).output()?;
    if !output.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8(output.stdout)?;
    let line = stdout
        .lines()
        .last()
        .ok_or_else(|| format!("{what} printed nothing"))?;
    Ok(serde_json::from_str(line)?)
}

fn race() -> Fallible<Vec<Row>> {
    let theirs_python = match python() {
        Ok(python) => Some(python),
        Err(err) => {
            eprintln!("bench race: no LangGraph side ({err}); printing ours only");
            None
        }
    };
    let exe = std::env::current_exe()?;
    let script = bench_dir().join("race/langgraph_race.py");
    let mut results = Vec::new();
    let started = Instant::now();
    for n in SIZES {
        let mut mine = Vec::new();
        for lists in ["imbl", "vec", "vec-undo"] {
            let mut command = Command::new(&exe);
            command.arg("race-ours").arg(n.to_string());
            let figures = side_with(
                &mut command,
                &format!("our side at N = {n} ({lists})"),
                &["every", lists],
            )?;
            check(figures.done == n, || {
                format!("our done = {}, not {n}", figures.done)
            })?;
            eprintln!(
                "bench race: ours/{lists:<8} N = {n:>6}: live {:.2} s, walk {:.2} s / {:.2} s ({:.0} s in)",
                figures.live_s,
                figures.walk_forward_s,
                figures.walk_back_s,
                started.elapsed().as_secs_f64()
            );
            mine.push(figures);
        }
        let theirs = match &theirs_python {
            Some(python) => {
                let mut command = Command::new(python);
                command.arg(&script).arg(n.to_string());
                let theirs = side(command, &format!("LangGraph at N = {n}"))?;
                check(theirs.done == n, || {
                    format!("LangGraph's done = {}, not {n}", theirs.done)
                })?;
                eprintln!(
                    "bench race: LangGraph N = {n:>6}: live {:.2} s, walk {:.2} s / {:.2} s ({:.0} s in)",
                    theirs.live_s,
                    theirs.walk_forward_s,
                    theirs.walk_back_s,
                    started.elapsed().as_secs_f64()
                );
                Some(theirs)
            }
            None => None,
        };
        for figures in mine {
            results.push((figures, theirs.clone()));
        }
    }
    let mut table = rows(&results);
    table.extend(deferred(&exe, theirs_python.as_deref(), &script)?);
    Ok(table)
}

/// The N of the like-for-like rows with deferred durability.
const DEFERRED_N: u64 = 5_000;

/// Live completions/s with durability deferred on both sides, like for like: our group
/// commit every 10 ms against LangGraph's `durability="async"` (checkpoints written in the
/// background), and our durable-at-turn-end against its `"exit"` (written when the run ends).
/// Shown for information: the goals hold the durable defaults (`sync`) to account.
fn deferred(exe: &Path, python: Option<&Path>, script: &Path) -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    let n = DEFERRED_N;
    for (ours_mode, theirs_mode, what) in [
        ("periodic", "async", "group commit 10 ms vs LangGraph async"),
        ("turn", "exit", "durable at turn end vs LangGraph exit"),
    ] {
        let mut command = Command::new(exe);
        command.arg("race-ours").arg(n.to_string());
        let mine = side_with(
            &mut command,
            &format!("our side ({ours_mode})"),
            &[ours_mode],
        )?;
        check(mine.done == n, || {
            format!("our done = {}, not {n}", mine.done)
        })?;
        let theirs = match python {
            Some(python) => {
                let mut command = Command::new(python);
                command.arg(script).arg(n.to_string());
                let theirs = side_with(
                    &mut command,
                    &format!("LangGraph ({theirs_mode})"),
                    &[theirs_mode],
                )?;
                check(theirs.done == n, || {
                    format!("LangGraph's done = {}, not {n}", theirs.done)
                })?;
                Some(theirs)
            }
            None => None,
        };
        let ours = n as f64 / mine.live_s;
        let base = theirs.map(|t| n as f64 / t.live_s);
        eprintln!("bench race: {what}, N = {n}: ours {ours:.0}/s, LangGraph {base:?}/s");
        rows.push(Row {
            what: format!("live completions/s, {what}, N={n}"),
            measured: format!("{ours:.0} /s"),
            baseline: base.map_or_else(|| "(no LangGraph)".to_owned(), |b| format!("{b:.0} /s")),
            ratio: base.map_or_else(|| "-".to_owned(), |b| format!("{:.1}x", ours / b)),
            goal: "(info)",
            met: None,
        });
    }
    Ok(rows)
}

/// The goal a metric is held to at one N: its label, the least ratio (higher is better for
/// us) and whether the ratio must exceed it rather than reach it; `None` where it is shown
/// for information.
type Goal = fn(u64) -> Option<(&'static str, f64, bool)>;

/// One row group of the table: a name, the figure, how it prints, whether more is better
/// (throughput) or less (times, sizes), and its goal.
type Metric = (
    &'static str,
    fn(&Figures) -> f64,
    fn(f64) -> String,
    bool,
    Goal,
);

const METRICS: [Metric; 6] = [
    (
        "live completions/s",
        |f| f.n as f64 / f.live_s,
        |v| format!("{v:.0} /s"),
        true,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "walk forward, every state",
        |f| f.walk_forward_s,
        secs,
        false,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "walk backward, every state",
        |f| f.walk_back_s,
        secs,
        false,
        |n| (n >= 5_000).then_some((">= 10x", 10.0, false)),
    ),
    (
        "jump to 10%, fresh open",
        |f| f.jump_s,
        secs,
        false,
        |_| Some(("> 1x", 1.0, true)),
    ),
    (
        "file size (snapshots incl.)",
        |f| f.file_bytes as f64,
        megabytes,
        false,
        |n| (n == 5_000).then_some((">= 50x", 50.0, false)),
    ),
    (
        "peak RSS",
        |f| f.peak_rss_bytes as f64,
        megabytes,
        false,
        |_| Some((">= 4x", 4.0, false)),
    ),
];

fn rows(results: &[(Figures, Option<Figures>)]) -> Vec<Row> {
    let mut rows = Vec::new();
    for (what, value, show, higher_is_better, goal) in METRICS {
        for (mine, theirs) in results {
            let n = mine.n;
            let ours = value(mine);
            let base = theirs.as_ref().map(value);
            let ratio = base.map(|base| {
                if higher_is_better {
                    ours / base
                } else {
                    base / ours
                }
            });
            let (label, met) = match goal(n) {
                Some((label, least, strict)) => (
                    label,
                    ratio.map(|r| if strict { r > least } else { r >= least }),
                ),
                None => ("(info)", None),
            };
            rows.push(Row {
                what: format!("{what}{}, N={n}", lists_of(mine)),
                measured: show(ours),
                baseline: base.map_or_else(|| "(no LangGraph)".to_owned(), show),
                ratio: ratio.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}x")),
                goal: label,
                met,
            });
        }
    }
    for (mine, _) in results {
        if let Some((count, seconds)) = mine.appends {
            rows.push(Row {
                what: format!(
                    "live: time in durable appends{}, N={}",
                    lists_of(mine),
                    mine.n
                ),
                measured: format!("{} ({:.0}%)", secs(seconds), 100.0 * seconds / mine.live_s),
                baseline: format!(
                    "{count} appends, {:.3} ms each",
                    1e3 * seconds / count as f64
                ),
                ratio: "-".to_owned(),
                goal: "(info)",
                met: None,
            });
        }
        if let Some((p50, floor)) = mine.append_p50_and_floor {
            let ratio = p50 / floor;
            rows.push(Row {
                what: format!(
                    "live: durable append p50 vs the disk's floor{}, N={}",
                    lists_of(mine),
                    mine.n
                ),
                measured: format!("{:.3} ms", 1e3 * p50),
                baseline: format!("{:.3} ms (1 KiB append + fdatasync)", 1e3 * floor),
                ratio: format!("{ratio:.2}x"),
                goal: "<= 1.5x",
                met: Some(ratio <= 1.5),
            });
        }
    }
    for (mine, theirs) in results {
        rows.push(Row {
            what: format!(
                "positions (events / checkpoints){}, N={}",
                lists_of(mine),
                mine.n
            ),
            measured: format!("{} (jump to {})", mine.positions, mine.jump_position),
            baseline: theirs.as_ref().map_or_else(
                || "-".to_owned(),
                |t| format!("{} (jump to {})", t.positions, t.jump_position),
            ),
            ratio: "-".to_owned(),
            goal: "(info)",
            met: None,
        });
    }
    rows
}

/// ` [Vec state]` (or ` [Vec+undo state]`) for a run of ours with plain `Vec` lists; nothing
/// for the default (imbl).
fn lists_of(figures: &Figures) -> String {
    match figures.state.as_deref() {
        Some(lists) if lists != "imbl" => format!(" [{lists} state]"),
        _ => String::new(),
    }
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn megabytes(bytes: f64) -> String {
    format!("{:.2} MB", bytes / 1e6)
}
