//! The crash verifier for living sessions: a child process runs a multi-agent workflow with a
//! tool against a slow fake OpenAI-compatible server in this (parent) process; the parent
//! SIGKILLs it at random moments at least [`KILLS`] times, resuming in a fresh process after
//! each kill, until the run completes. Then the session must hold what an uninterrupted
//! reference run holds (ids and timestamps aside), with contiguous seqs, causes that point
//! back, unique ids, no completed call asked again, and every interrupted call closed as
//! `interrupted` exactly once.
//!
//! The workflow: a planner splits the goal into [`TASKS`] tasks; executors work through them
//! in [`LANES`] lanes (task `i` completing starts task `i + LANES`), each calling the
//! `inspect` tool before answering; a reviewer reviews every completed task while the next
//! one runs. The run ends when every task is done and reviewed.
//!
//! One kill in five lands while the child starts (before or while it opens the store and
//! derives the session); the others 5 to 150 ms after it says it is about to run the turn.
//! A session that completes before enough kills were made is checked and another begins.
//! `a_call_interrupted_twice_is_run_again_by_the_second_resume` is the smallest log the kills
//! found wrong: a resume killed after it re-started an interrupted call.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use openharness::builtin::Outcome;
use openharness::prelude::*;
use openharness::provider::testing::{self, FakeResponse, FakeServer, RecordedRequest};
use openharness::provider::{ApiKey, OpenAiProvider};
use openharness::store::{MemoryStore, RedbStore};
use openharness::{FnTool, Tool};
use openharness_testkit::random::SplitMix;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Set (to `store path`, `session`, `base url`, one a line) in the child's environment.
const CHILD_ENV: &str = "OPENHARNESS_TEST_RESUME_CHILD";
/// At least this many SIGKILLs per run of the test.
const KILLS: u32 = 50;
/// How many tasks the planner makes.
const TASKS: usize = 40;
/// How many executors work at once.
const LANES: usize = 2;
/// How long the fake takes to stream one answer (spread over its chunks), so that kills
/// land while calls are in flight.
const ANSWER_TIME: Duration = Duration::from_millis(30);
/// The longest a child that is not killed may take to finish the run.
const FINAL_TIMEOUT: Duration = Duration::from_secs(60);
/// What the child prints once it is about to run or resume the turn.
const READY: &str = "crash-child-ready";
const GOAL: &str = "Migrate the billing service to the new ledger";
const WORKFLOW: &str = "crash-resume";

// ---------------------------------------------------------------------------------------------
// The workflow
// ---------------------------------------------------------------------------------------------

#[event]
#[derive(Debug, Clone, PartialEq)]
struct PlanCreated {
    tasks: Vec<String>,
}

#[event]
#[derive(Debug, Clone, PartialEq)]
struct TaskStarted {
    index: usize,
    title: String,
}

#[event]
#[derive(Debug, Clone, PartialEq)]
struct TaskCompleted {
    index: usize,
    summary: String,
}

#[event]
#[derive(Debug, Clone, PartialEq)]
struct TaskReviewed {
    index: usize,
    verdict: String,
}

#[event]
enum MigrationEvent {
    UserInput,
    PlanCreated,
    TaskStarted,
    TaskCompleted,
    TaskReviewed,
}

/// The folded state. `started` counts the starts of each task, so a task started twice shows
/// (and the order in which the lanes started them, which concurrency decides, does not).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Migration {
    goal: Option<String>,
    tasks: Vec<String>,
    started: BTreeMap<usize, u32>,
    summaries: BTreeMap<usize, String>,
    verdicts: BTreeMap<usize, String>,
}

impl Migration {
    fn is_done(&self) -> bool {
        !self.tasks.is_empty()
            && self.summaries.len() == self.tasks.len()
            && self.verdicts.len() == self.tasks.len()
    }

    fn start(&self, index: usize, emit: &mut Emit) {
        if let Some(title) = self.tasks.get(index) {
            emit.push(TaskStarted {
                index,
                title: title.clone(),
            });
        }
    }
}

#[handler(MigrationEvent)]
impl Migration {
    fn goal_given(&mut self, input: &UserInput) {
        self.goal = Some(input.text.clone());
    }

    fn planned(&mut self, plan: &PlanCreated) -> Emit {
        self.tasks = plan.tasks.clone();
        let mut emit = Emit::none();
        for lane in 0..LANES {
            self.start(lane, &mut emit);
        }
        emit
    }

    fn task_started(&mut self, started: &TaskStarted) {
        *self.started.entry(started.index).or_default() += 1;
    }

    fn task_completed(&mut self, done: &TaskCompleted) -> Emit {
        self.summaries.insert(done.index, done.summary.clone());
        let mut emit = Emit::none();
        self.start(done.index + LANES, &mut emit);
        emit
    }

    fn task_reviewed(&mut self, reviewed: &TaskReviewed) {
        self.verdicts
            .insert(reviewed.index, reviewed.verdict.clone());
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Plan {
    tasks: Vec<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Report {
    summary: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Verdict {
    verdict: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Inspect {
    task: String,
}

struct Planner;

#[agent(output = Plan, emits = [PlanCreated])]
impl Planner {
    fn prompt(&self, _state: &Migration, input: &UserInput) -> String {
        format!("Plan {TASKS} tasks for: {}", input.text)
    }

    fn on_output(&self, plan: Plan, _input: &UserInput) -> PlanCreated {
        PlanCreated { tasks: plan.tasks }
    }
}

/// Written out (not with `#[agent]`) because it offers a tool.
struct Executor;

impl Agent for Executor {
    type State = Migration;
    type Trigger = TaskStarted;
    type Output = Report;
    const NAME: &'static str = "executor";
    const EMITS: &'static [&'static str] = &[TaskCompleted::NAME];

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let inspect = FnTool::new(
            "inspect",
            "Inspects the code a task touches.",
            |args: Inspect| async move {
                // Slow enough that some kills land while a tool runs.
                tokio::time::sleep(Duration::from_millis(4)).await;
                Ok::<_, String>(json!({ "files": checksum(&args.task) % 17 + 1 }))
            },
        );
        vec![Arc::new(inspect)]
    }

    fn max_turns(&self) -> u32 {
        3
    }

    fn prompt(&self, state: &Migration, task: &TaskStarted) -> String {
        format!(
            "Execute: {}\nTask {} of {}, towards: {}",
            task.title,
            task.index + 1,
            state.tasks.len(),
            state.goal.as_deref().unwrap_or("?")
        )
    }

    fn on_output(&self, report: Report, task: &TaskStarted) -> Emit {
        Emit::one(TaskCompleted {
            index: task.index,
            summary: report.summary,
        })
    }
}

struct Reviewer;

#[agent(output = Verdict, emits = [TaskReviewed])]
impl Reviewer {
    fn prompt(&self, _state: &Migration, done: &TaskCompleted) -> String {
        format!("Review task {}: {}", done.index, done.summary)
    }

    fn on_output(&self, verdict: Verdict, done: &TaskCompleted) -> TaskReviewed {
        TaskReviewed {
            index: done.index,
            verdict: verdict.verdict,
        }
    }
}

fn workflow(store: impl Store, base_url: &str) -> Workflow<Migration> {
    let provider = OpenAiProvider::builder(ApiKey::new(testing::openai::KEY))
        .base_url(base_url)
        .build()
        .expect("the provider builds");
    Workflow::builder(WORKFLOW)
        .initial_state(Migration::default())
        .agent(Planner)
        .agent(Executor)
        .agent(Reviewer)
        .until(Migration::is_done)
        .store(store)
        .provider(provider)
        .build()
        .expect("the workflow builds")
}

fn checksum(text: &str) -> u64 {
    text.bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
}

// ---------------------------------------------------------------------------------------------
// The fake model
// ---------------------------------------------------------------------------------------------

/// The agent a request is for (the structured output's schema name) and its prompt.
type CallKey = (String, String);

fn key_of(request: &RecordedRequest) -> CallKey {
    let agent = request.body["response_format"]["json_schema"]["name"]
        .as_str()
        .unwrap_or("?")
        .to_owned();
    (agent, request.prompt())
}

/// The fake's answer, a function of the request alone: the planner gets the task list; an
/// executor first a call of `inspect`, then (once the tool result is in the conversation) a
/// report made of the prompt and the result; the reviewer a verdict on the prompt. Each answer
/// is streamed over [`ANSWER_TIME`].
fn answer(request: &RecordedRequest) -> FakeResponse {
    let (agent, prompt) = key_of(request);
    let first_line = prompt.lines().next().unwrap_or_default().to_owned();
    let output = match agent.as_str() {
        "planner" => {
            let tasks: Vec<String> = (0..TASKS)
                .map(|i| format!("migrate table {i:02}"))
                .collect();
            json!({ "tasks": tasks })
        }
        "executor" => {
            let tool_result = request.body["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["role"] == "tool")
                .filter_map(|m| m["content"].as_str())
                .next_back();
            match tool_result {
                None => {
                    let task = first_line.trim_start_matches("Execute: ");
                    let id = format!("call_{}", checksum(task));
                    // About ten chunks.
                    return testing::openai::tool_calls(&[(
                        &id,
                        "inspect",
                        json!({ "task": task }),
                    )])
                    .delay(ANSWER_TIME / 10);
                }
                Some(result) => {
                    json!({ "summary": format!("{first_line} done; inspected {result}") })
                }
            }
        }
        "reviewer" => json!({ "verdict": format!("approved after reading: {first_line}") }),
        other => {
            return testing::openai::error(400, "invalid_request_error", &format!("agent {other}"));
        }
    };
    // Ten HTTP chunks of several SSE events each, whatever the answer's length.
    let events = testing::openai::text_chunks(&output.to_string());
    let chunks: Vec<String> = events
        .chunks(events.len().div_ceil(10))
        .map(<[String]>::concat)
        .collect();
    FakeResponse::stream(chunks).delay(ANSWER_TIME / 10)
}

fn start_fake(runtime: &tokio::runtime::Runtime) -> FakeServer {
    let fake = runtime
        .block_on(FakeServer::openai(testing::openai::KEY))
        .expect("the fake server starts on 127.0.0.1");
    fake.fallback(answer);
    fake
}

/// How many requests the fake received per (agent, prompt).
fn counts(fake: &FakeServer) -> HashMap<CallKey, usize> {
    let mut counts = HashMap::new();
    for request in fake.requests() {
        *counts.entry(key_of(&request)).or_default() += 1;
    }
    counts
}

// ---------------------------------------------------------------------------------------------
// The child
// ---------------------------------------------------------------------------------------------

/// The child: starts the session (or resumes it when it exists) and runs it to `until`. A
/// no-op unless the crash test started this process.
#[test]
fn crash_child_runs_or_resumes_the_workflow() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let [path, session, base_url] = spec.lines().collect::<Vec<_>>()[..] else {
        panic!("bad child spec {spec:?}");
    };
    let session: SessionId = session.parse().expect("a session id");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = RedbStore::open(path).expect("the store opens");
        let exists = store
            .session(&session)
            .await
            .expect("the store reads")
            .is_some();
        let workflow = workflow(store, base_url);
        // The parent times most kills from here: starting a debug test binary and building
        // an HTTP client take tens of milliseconds, which would otherwise eat the kill window.
        println!("{READY}");
        let outcome = if exists {
            workflow.resume(&session, RunOptions::new()).await
        } else {
            workflow
                .run(RunOptions::new().session(session).input(GOAL))
                .await
        }
        .expect("the turn runs");
        assert!(
            outcome.state.is_done(),
            "the turn ended ({}) before the run was done: {:?}",
            outcome.reason.as_str(),
            outcome.state
        );
    });
}

/// A running child, and word of when it is ready to run the turn.
struct Running {
    child: Child,
    ready: mpsc::Receiver<()>,
    reader: std::thread::JoinHandle<()>,
}

fn spawn_child(path: &Path, session: &SessionId, base_url: &str, stderr: &Path) -> Running {
    let stderr = std::fs::File::create(stderr).expect("the child's stderr file");
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "crash_child_runs_or_resumes_the_workflow",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            CHILD_ENV,
            format!("{}\n{session}\n{base_url}", path.display()),
        )
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("the child starts");
    let stdout = child.stdout.take().expect("the child's stdout");
    let (tx, ready) = mpsc::channel();
    // Reads the child's stdout to its end (so the child never blocks on a full pipe).
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains(READY) {
                let _ = tx.send(());
            }
        }
    });
    Running {
        child,
        ready,
        reader,
    }
}

/// Waits for `child` at most `limit`; kills it and fails the test if it takes longer.
fn wait_for(child: &mut Child, limit: Duration, stderr: &Path) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            return status;
        }
        if Instant::now() >= deadline {
            child.kill().expect("kill the stuck child");
            child.wait().expect("reap the stuck child");
            panic!(
                "the final child did not finish within {limit:?}; its stderr:\n{}",
                std::fs::read_to_string(stderr).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---------------------------------------------------------------------------------------------
// Reading a log
// ---------------------------------------------------------------------------------------------

/// One agent call: its `agent:started` and, once recorded, its `agent:completed`.
#[derive(Debug, Clone)]
struct Call {
    started_seq: u64,
    started_id: EventId,
    agent: String,
    prompt: String,
    completed: Option<(u64, Outcome, Option<Value>)>,
}

/// A session's log, with its agent calls paired.
struct Log {
    events: Vec<(u64, Envelope)>,
    calls: Vec<Call>,
    /// What broke the pairing rule: an `agent:started` while the same (cause, agent) call was
    /// open, or an `agent:completed` with no open call to close.
    pairing_errors: Vec<String>,
}

impl Log {
    fn read(events: Vec<(u64, Envelope)>) -> Self {
        let mut calls: Vec<Call> = Vec::new();
        let mut open: HashMap<(Option<EventId>, String), usize> = HashMap::new();
        let mut pairing_errors = Vec::new();
        for (seq, event) in &events {
            if event.name == AgentStarted::NAME {
                let started: AgentStarted = event.decode().expect("agent:started decodes");
                let key = (event.caused_by, started.agent.clone());
                if let Some(&other) = open.get(&key) {
                    pairing_errors.push(format!(
                        "seq {seq}: `{}` started again while its call started at seq {} is open",
                        started.agent, calls[other].started_seq
                    ));
                }
                open.insert(key, calls.len());
                calls.push(Call {
                    started_seq: *seq,
                    started_id: event.id,
                    agent: started.agent,
                    prompt: started.prompt,
                    completed: None,
                });
            } else if event.name == AgentCompleted::NAME {
                let completed: AgentCompleted = event.decode().expect("agent:completed decodes");
                match open.remove(&(event.caused_by, completed.agent.clone())) {
                    Some(at) => {
                        calls[at].completed = Some((*seq, completed.outcome, completed.output))
                    }
                    None => pairing_errors.push(format!(
                        "seq {seq}: `{}` completed ({:?}) with no open call of the same cause",
                        completed.agent, completed.outcome
                    )),
                }
            }
        }
        Self {
            events,
            calls,
            pairing_errors,
        }
    }

    fn open_calls(&self) -> impl Iterator<Item = &Call> {
        self.calls.iter().filter(|c| c.completed.is_none())
    }

    fn succeeded(&self) -> impl Iterator<Item = &Call> {
        self.calls
            .iter()
            .filter(|c| matches!(c.completed, Some((_, Outcome::Success, _))))
    }

    /// The workflow's own events (not built-in), as (name, payload), sorted: what the
    /// handlers and agents made, whatever order concurrency gave them.
    fn domain_events(&self) -> Vec<(String, String)> {
        let mut domain: Vec<(String, String)> = self
            .events
            .iter()
            .filter(|(_, e)| !openharness::builtin::is_builtin(&e.name))
            .map(|(_, e)| (e.name.to_string(), e.payload.to_string()))
            .collect();
        domain.sort();
        domain
    }

    /// Every successful call as (agent, prompt, output), sorted.
    fn outputs(&self) -> Vec<(String, String, String)> {
        let mut outputs: Vec<_> = self
            .succeeded()
            .map(|c| {
                let output = c.completed.as_ref().and_then(|(_, _, o)| o.clone());
                (
                    c.agent.clone(),
                    c.prompt.clone(),
                    output.unwrap_or(Value::Null).to_string(),
                )
            })
            .collect();
        outputs.sort();
        outputs
    }

    /// The log without text deltas, one event a line, for failure messages.
    fn dump(&self) -> String {
        let index: HashMap<EventId, u64> = self.events.iter().map(|(s, e)| (e.id, *s)).collect();
        let mut out = String::new();
        for (seq, event) in &self.events {
            if event.name == TextDelta::NAME {
                continue;
            }
            let cause = event
                .caused_by
                .map(|c| index.get(&c).map_or("?".to_owned(), u64::to_string))
                .unwrap_or_default();
            let mut payload = event.payload.to_string();
            payload.truncate(110);
            out.push_str(&format!(
                "{seq:>5} {:<20} <-{cause:<5} {payload}\n",
                event.name
            ));
        }
        out
    }
}

async fn read_log(store: &impl Store, session: &SessionId) -> Log {
    let count = store
        .session(session)
        .await
        .expect("the store reads")
        .map_or(0, |info| info.count);
    let mut stream = store.stream_events(session, 0..count);
    let mut events = Vec::new();
    while let Some(recorded) = stream.next().await {
        let recorded = recorded.expect("an event reads");
        events.push((recorded.seq, recorded.event));
    }
    Log::read(events)
}

/// Whether the store holds a snapshot saved inside the log's last turn (past its last
/// `workflow:completed`, before its end), as a turn saves them once it is long.
async fn snapshot_inside_turn(store: &impl Store, session: &SessionId, log: &Log) -> bool {
    let len = log.events.len() as u64;
    let turn_start = log
        .events
        .iter()
        .rposition(|(_, e)| e.name == "workflow:completed")
        .map_or(0, |i| i as u64 + 1);
    store
        .latest_snapshot(session, len.saturating_sub(1))
        .await
        .expect("the store reads snapshots")
        .is_some_and(|s| s.position > turn_start)
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

/// The uninterrupted run every crashed run is compared with.
struct Reference {
    state: Value,
    domain: Vec<(String, String)>,
    outputs: Vec<(String, String, String)>,
    counts: HashMap<CallKey, usize>,
}

fn reference_run(runtime: &tokio::runtime::Runtime) -> Reference {
    let fake = start_fake(runtime);
    let store = MemoryStore::new();
    let workflow = workflow(store.clone(), &fake.base_url());
    let outcome = runtime
        .block_on(workflow.run(RunOptions::new().input(GOAL)))
        .expect("the reference run");
    assert_eq!(outcome.reason, StopReason::Until);
    assert!(outcome.state.is_done(), "{:?}", outcome.state);
    assert_eq!(outcome.state.started.len(), TASKS);
    assert!(outcome.state.started.values().all(|n| *n == 1));
    let log = runtime.block_on(read_log(&store, &outcome.session));
    assert!(log.pairing_errors.is_empty(), "{:?}", log.pairing_errors);
    assert_eq!(log.succeeded().count(), 1 + 2 * TASKS, "{}", log.dump());
    assert_eq!(log.succeeded().count(), log.calls.len());
    let counts = counts(&fake);
    let executor_requests: usize = counts
        .iter()
        .filter(|((agent, _), _)| agent == "executor")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(
        executor_requests,
        2 * TASKS,
        "every executor calls the tool once, then answers"
    );
    assert!(
        log.events.iter().any(|(_, e)| e.name == "tool:result"),
        "the tool ran"
    );
    Reference {
        state: serde_json::to_value(&outcome.state).unwrap(),
        domain: log.domain_events(),
        outputs: log.outputs(),
        counts,
    }
}

/// What the parent learned about one crashed session, kill by kill.
#[derive(Default)]
struct Tracker {
    kills: u32,
    resumes: u32,
    /// `agent:started` ids whose call was open in the log right after some kill.
    cut: HashSet<EventId>,
    /// For each call whose success was recorded before some kill: the fake's count for it
    /// then.
    frozen: HashMap<CallKey, usize>,
    /// How many calls had succeeded at the last kill.
    succeeded: usize,
    /// Kills after which the store held a snapshot saved inside the cut-off turn (which a
    /// resume must pass over).
    after_mid_turn_snapshot: u32,
}

impl Tracker {
    /// After a kill: notes the open calls and freezes the counts of the completed ones.
    fn after_kill(&mut self, log: &Log, fake: &FakeServer) {
        assert!(
            log.pairing_errors.is_empty(),
            "after kill {}: {:?}\n{}",
            self.kills,
            log.pairing_errors,
            log.dump()
        );
        self.cut.extend(log.open_calls().map(|c| c.started_id));
        self.succeeded = log.succeeded().count();
        let counts = counts(fake);
        for call in log.succeeded() {
            let key = (call.agent.clone(), call.prompt.clone());
            let now = counts.get(&key).copied().unwrap_or(0);
            let then = *self.frozen.entry(key).or_insert(now);
            assert_eq!(
                now,
                then,
                "after kill {}: `{}` (completed at seq {}) was asked again: {then} -> {now} requests\n{}",
                self.kills,
                call.agent,
                call.started_seq,
                log.dump()
            );
        }
    }
}

/// Runs one session to the end through kills (until `kills_wanted` kills were made in all,
/// then one child runs it to completion), checks it against `reference` and returns what
/// happened.
fn crashed_run(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    round: u32,
    kills_wanted: u32,
    rng: &mut SplitMix,
    reference: &Reference,
) -> Tracker {
    let fake = start_fake(runtime);
    let path = dir.join(format!("round-{round}.redb"));
    let stderr: PathBuf = dir.join(format!("round-{round}.stderr"));
    let session = SessionId::new();
    let mut tracker = Tracker::default();
    let mut exists = false;
    let mut children = 0u32;
    loop {
        children += 1;
        assert!(children < 10 * KILLS, "the run never completes");
        if exists {
            tracker.resumes += 1;
        }
        let Running {
            mut child,
            ready,
            reader,
        } = spawn_child(&path, &session, &fake.base_url(), &stderr);
        let status = if tracker.kills < kills_wanted {
            if rng.below(5) == 0 {
                // Early: while the child starts, opens the store, derives the session.
                std::thread::sleep(Duration::from_millis(rng.below(60)));
            } else {
                // While the turn runs (a child that fails before it is ready is reported
                // below).
                let _ = ready.recv_timeout(Duration::from_secs(10));
                std::thread::sleep(Duration::from_millis(5 + rng.below(146)));
            }
            match child.try_wait().expect("the child can be waited for") {
                Some(status) => Some(status),
                None => {
                    child.kill().expect("SIGKILL the child");
                    child.wait().expect("reap the child");
                    tracker.kills += 1;
                    None
                }
            }
        } else {
            Some(wait_for(&mut child, FINAL_TIMEOUT, &stderr))
        };
        reader.join().expect("the stdout reader");
        if let Some(status) = status {
            if !status.success() {
                let store = RedbStore::open(&path).expect("the store opens");
                let log = runtime.block_on(read_log(&store, &session));
                panic!(
                    "round {round}: a child failed ({status}) after {} kills; its stderr:\n{}\nthe log:\n{}",
                    tracker.kills,
                    std::fs::read_to_string(&stderr).unwrap_or_default(),
                    log.dump()
                );
            }
            break;
        }
        // The dead child released the store: look at what it left.
        let store = RedbStore::open(&path).unwrap_or_else(|err| {
            panic!(
                "after kill {}, the store does not open: {err}",
                tracker.kills
            )
        });
        let log = runtime.block_on(read_log(&store, &session));
        exists = !log.events.is_empty();
        tracker.after_kill(&log, &fake);
        if runtime.block_on(snapshot_inside_turn(&store, &session, &log)) {
            tracker.after_mid_turn_snapshot += 1;
        }
    }

    let store = RedbStore::open(&path).expect("the store opens after the run");
    let log = runtime.block_on(read_log(&store, &session));
    let workflow = workflow(store, &fake.base_url());
    check(&log, &tracker, &fake, reference, &workflow);
    // Nothing is left to resume, and a resume records nothing and asks nothing.
    let requests = fake.request_count();
    let again = runtime
        .block_on(workflow.resume(&session, RunOptions::new()))
        .expect("a resume of the finished session");
    assert_eq!(again.reason, StopReason::NothingUnfinished);
    assert_eq!(again.len, log.events.len() as u64);
    assert_eq!(
        serde_json::to_value(&again.state).unwrap(),
        reference.state,
        "the state derived from the finished log"
    );
    assert_eq!(fake.request_count(), requests);
    tracker
}

/// The invariants of a session that completed through kills.
fn check(
    log: &Log,
    tracker: &Tracker,
    fake: &FakeServer,
    reference: &Reference,
    workflow: &Workflow<Migration>,
) {
    let dump = log.dump();
    // Seqs are contiguous from 0, ids unique, every cause earlier.
    let mut seen = HashSet::new();
    for (i, (seq, event)) in log.events.iter().enumerate() {
        assert_eq!(*seq, i as u64, "seqs are contiguous\n{dump}");
        if let Some(cause) = event.caused_by {
            assert!(
                seen.contains(&cause),
                "seq {seq} ({}) is caused by an event that is not earlier\n{dump}",
                event.name
            );
        }
        assert!(
            seen.insert(event.id),
            "seq {seq}: event id {} appears twice\n{dump}",
            event.id
        );
    }
    let names: Vec<&str> = log.events.iter().map(|(_, e)| e.name.as_ref()).collect();
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == WorkflowStarted::NAME)
            .count(),
        1,
        "{dump}"
    );
    assert_eq!(
        names.iter().filter(|n| **n == UserInput::NAME).count(),
        1,
        "{dump}"
    );
    assert_eq!(
        names
            .iter()
            .filter(|n| **n == WorkflowCompleted::NAME)
            .count(),
        1,
        "only the last turn ended normally\n{dump}"
    );
    let (_, last) = log.events.last().expect("a log");
    let completed: WorkflowCompleted = last.decode().expect("the last event is workflow:completed");
    assert_eq!(completed.reason, "until", "{dump}");
    assert!(
        !names.contains(&"error:occurred"),
        "no error was recorded\n{dump}"
    );

    // Every agent:started is answered by exactly one agent:completed (same cause, same agent)
    // before that call starts again; the calls a kill cut are exactly the ones closed as
    // interrupted, and their re-runs succeeded.
    assert!(
        log.pairing_errors.is_empty(),
        "{:?}\n{dump}",
        log.pairing_errors
    );
    for call in &log.calls {
        let Some((seq, outcome, _)) = &call.completed else {
            panic!(
                "`{}` started at seq {} never completed\n{dump}",
                call.agent, call.started_seq
            );
        };
        let cut = tracker.cut.contains(&call.started_id);
        let expected = if cut {
            Outcome::Interrupted
        } else {
            Outcome::Success
        };
        assert_eq!(
            *outcome, expected,
            "`{}` started at seq {} (open after a kill: {cut}) completed at seq {seq}\n{dump}",
            call.agent, call.started_seq
        );
    }
    let interrupted = log
        .calls
        .iter()
        .filter(|c| matches!(c.completed, Some((_, Outcome::Interrupted, _))))
        .count();
    assert_eq!(interrupted, tracker.cut.len());

    // No call whose success was recorded before a kill was asked again since; a call never
    // interrupted made exactly the requests it makes in the reference run.
    let counts = counts(fake);
    for (key, then) in &tracker.frozen {
        assert_eq!(
            counts.get(key),
            Some(then),
            "`{}` completed before a kill and was asked again: {key:?}\n{dump}",
            key.0
        );
    }
    let mut keys: Vec<&CallKey> = counts.keys().collect();
    keys.sort();
    let mut reference_keys: Vec<&CallKey> = reference.counts.keys().collect();
    reference_keys.sort();
    assert_eq!(keys, reference_keys, "the same calls were made");
    let retried: HashSet<CallKey> = log
        .calls
        .iter()
        .filter(|c| tracker.cut.contains(&c.started_id))
        .map(|c| (c.agent.clone(), c.prompt.clone()))
        .collect();
    for (key, n) in &counts {
        let expected = reference.counts[key];
        if retried.contains(key) {
            assert!(*n >= expected, "{key:?}: {n} requests < {expected}");
        } else {
            assert_eq!(*n, expected, "{key:?} was never interrupted\n{dump}");
        }
    }

    // The same work as the reference run: the same outputs, events and state.
    assert_eq!(log.outputs(), reference.outputs, "{dump}");
    assert_eq!(log.domain_events(), reference.domain, "{dump}");
    let events: Vec<Envelope> = log.events.iter().map(|(_, e)| e.clone()).collect();
    assert_eq!(
        serde_json::to_value(workflow.fold(&events)).unwrap(),
        reference.state,
        "the state folded from the log"
    );
}

#[test]
fn sigkilled_sessions_resume_to_the_state_of_an_uninterrupted_run() {
    let started = Instant::now();
    let seed = SplitMix::seed_from_clock();
    let mut rng = SplitMix::new(seed);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let reference = reference_run(&runtime);
    let reference_time = started.elapsed();

    let dir = tempfile::tempdir().unwrap();
    let (mut kills, mut resumes, mut interrupted, mut rounds) = (0, 0, 0, 0);
    let mut after_mid_turn_snapshot = 0;
    let mut succeeded_at_last_kill = 0;
    // A session that completes before enough kills were made is checked, and another begins.
    while kills < KILLS {
        rounds += 1;
        let tracker = crashed_run(
            &runtime,
            dir.path(),
            rounds,
            KILLS - kills,
            &mut rng,
            &reference,
        );
        kills += tracker.kills;
        resumes += tracker.resumes;
        interrupted += tracker.cut.len();
        after_mid_turn_snapshot += tracker.after_mid_turn_snapshot;
        succeeded_at_last_kill = tracker.succeeded;
    }
    eprintln!(
        "crash_resume (seed {seed}): {kills} SIGKILLs, {resumes} resumes, {interrupted} calls \
         interrupted and run again, {after_mid_turn_snapshot} kills after a snapshot saved \
         mid-turn, {rounds} session(s), {succeeded_at_last_kill} of {} calls done at the last \
         kill; reference run {reference_time:.1?}, all {:.1?}",
        1 + 2 * TASKS,
        started.elapsed()
    );
    assert!(
        interrupted > 0,
        "no kill landed while a call was open; the test did not test resuming calls"
    );
    assert!(
        after_mid_turn_snapshot > 0,
        "no kill landed after a snapshot saved mid-turn; the test did not test resuming past one"
    );
}

/// The smallest case of a kill during a resume: the planner's call was interrupted, closed as
/// `interrupted` by a resume and started again, and that process was killed too. The second
/// resume must run the call again, as the first did.
#[test]
fn a_call_interrupted_twice_is_run_again_by_the_second_resume() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let fake = start_fake(&runtime);
    let store = MemoryStore::new();
    let workflow = workflow(store.clone(), &fake.base_url());
    let session = SessionId::new();
    let input = Envelope::typed(&UserInput::new(GOAL), None).unwrap();
    let started = AgentStarted {
        agent: "planner".into(),
        prompt: format!("Plan {TASKS} tasks for: {GOAL}"),
        ..AgentStarted::default()
    };
    let interrupted = AgentCompleted {
        agent: "planner".into(),
        outcome: Outcome::Interrupted,
        usage: Default::default(),
        cost: None,
        error: Some("the process running this call stopped before it completed".into()),
        output: None,
    };
    let log = [
        Envelope::typed(
            &WorkflowStarted {
                workflow: WORKFLOW.into(),
                code: None,
                version: None,
                commit: None,
                state_shape: None,
            },
            None,
        )
        .unwrap(),
        input.clone(),
        Envelope::typed(&started, Some(input.id)).unwrap(),
        Envelope::typed(&interrupted, Some(input.id)).unwrap(),
        Envelope::typed(&started, Some(input.id)).unwrap(),
    ];
    runtime
        .block_on(store.append(&session, &log, 0))
        .expect("the log is stored");

    let unfinished = runtime.block_on(workflow.unfinished(&session)).unwrap();
    assert_eq!(unfinished.open_calls.len(), 1, "{unfinished:?}");
    let outcome = runtime
        .block_on(workflow.resume(&session, RunOptions::new()))
        .expect("the resume runs");
    let events = runtime.block_on(store.all_events(&session)).unwrap();
    let log = runtime.block_on(read_log(&store, &session));
    assert!(
        !events.iter().any(|e| e.name == ErrorOccurred::NAME),
        "the second resume gave up on the planner's call:\n{}",
        log.dump()
    );
    assert_eq!(outcome.reason, StopReason::Until, "{}", log.dump());
    assert!(outcome.state.is_done());
}
