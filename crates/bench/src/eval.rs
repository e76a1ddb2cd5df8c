//! The eval suite: what running sessions as an experiment costs over running them by hand,
//! how fast recorded runs are scored again, and what forking a recording saves.
//!
//! 1. Throughput: 100 cases × 3 variants × 5 repeats (1 500 runs) of the planner-executor
//!    example on a scripted model, each variant asking a provider of its own, every run scored
//!    by one predicate, as an [`Experiment`]. Baseline, in the same run: the same 1 500 sessions
//!    by a plain loop of `Workflow::run` and `respond("yes")`, as many at once as the
//!    experiment runs ([`CONCURRENCY`]). Rounds alternate between the two, each on a fresh
//!    store, and the medians are compared. Goal: the experiment keeps at least 90% of the
//!    loop's throughput on a [`RedbStore`] (the store users get by default); the same figures
//!    on a [`MemoryStore`] are shown for information.
//! 2. Re-scoring the last round's 1 500 runs with three built-in scorers, two of which read the
//!    runs' events. Baseline: reading every run's events once, as many at once. Goal: 2 s.
//! 3. Forking: one recorded session of 20 tasks, the model taking 2 ms a call; 3 variants × 5
//!    repeats forked right after its 15th `task:started`, against the same variants and repeats
//!    run from the input. Counted: the model calls of each; the forks must re-send none of the
//!    prefix's calls (no planner call, no executor call of a task before the fork point, none
//!    to the recording's own model).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use openharness::host::Host;
use openharness::store::{MemoryStore, RedbStore};
use openharness::{RunOptions, SessionId, Store, adapter::ProviderRequest};
use openharness_eval::{
    Case, Experiment, ExperimentRecord, Field, ForkAt, Ran, Scorer, Variant, rescore, scorers,
};
use openharness_example_planner_executor as example;
use openharness_provider::{Reply, ScriptedProvider};
use serde_json::json;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::report::{BoxError, Fallible, Row, times};

/// Cases of the throughput experiment.
const CASES: usize = 100;
/// Variants of every experiment, each with its own model.
const VARIANTS: usize = 3;
/// Runs per case and variant.
const REPEATS: u32 = 5;
/// Runs of the throughput experiment.
const RUNS: usize = CASES * VARIANTS * REPEATS as usize;
/// Runs at once: the experiment's `concurrency` and the loop's semaphore alike.
const CONCURRENCY: usize = 8;
/// Rounds of each side, alternating; medians are compared.
const ROUNDS: usize = 5;
/// Tasks the model plans in the throughput runs.
const TASKS: usize = 3;
/// Tasks of the recorded session the forks start from.
const FORK_TASKS: usize = 20;
/// The forks start right after this `task:started` (1-based): its task and the later ones
/// are the suffix.
const FORK_AT: usize = 15;
/// What a model call takes in the forking runs.
const MODEL_LATENCY: Duration = Duration::from_millis(2);

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("eval", crate::report::Missed::Fails, suite)
}

async fn suite() -> Fallible<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let redb = |file: &str| -> Fallible<RedbStore> {
        Ok(RedbStore::open(dir.path().join(format!("{file}.redb")))?)
    };
    eprintln!("bench eval: {RUNS} runs per side, {ROUNDS} rounds each side, on redb…");
    let (on_redb, host, name) = throughput("redb", true, redb).await?;
    eprintln!("bench eval: the same on MemoryStore…");
    let (in_memory, _, _) = throughput("memory", false, |_| Ok(MemoryStore::new())).await?;
    eprintln!("bench eval: re-scoring {RUNS} runs…");
    let rescored = rescoring(&host, &name).await?;
    eprintln!("bench eval: forking a {FORK_TASKS}-task recording against running it again…");
    let forked = forking(dir.path()).await?;
    Ok([on_redb, in_memory, rescored]
        .into_iter()
        .chain(forked)
        .collect())
}

/// Fails the suite when a measured run did not do what it should: a benchmark of a broken run
/// is worthless.
fn check(holds: bool, what: impl FnOnce() -> String) -> Fallible<()> {
    if holds {
        Ok(())
    } else {
        Err(format!("wrong result: {}", what()).into())
    }
}

/// A scripted model that plans `tasks` tasks for any goal and reports every task done.
fn model(tasks: usize) -> ScriptedProvider {
    let plan: Vec<String> = (1..=tasks).map(|n| format!("task {n}")).collect();
    ScriptedProvider::new()
        .fallback("planner", move |_| Reply::output(json!({ "tasks": plan })))
        .fallback("executor", |_| {
            Reply::output(json!({ "summary": "Task done." }))
        })
}

/// The goal of throughput case `case`.
fn goal(case: usize) -> String {
    format!("Ship version 0.{case} of our command-line tool")
}

/// The scorer every run is scored by as it finishes.
fn published() -> scorers::BuiltinScorer {
    scorers::predicate("published", |state| state["release"] == "published")
}

/// Runs `experiment` with the bench's repeats, scorer and concurrency and one variant per
/// model: what it ran, and how long that took.
async fn run_variants(
    experiment: Experiment,
    models: &[ScriptedProvider],
) -> Fallible<(Ran, Duration)> {
    let experiment = experiment
        .repeats(REPEATS)
        .scorer(published())
        .concurrency(CONCURRENCY);
    let experiment = models
        .iter()
        .enumerate()
        .fold(experiment, |experiment, (i, model)| {
            experiment.variant(
                Variant::new(format!("variant-{i}"))
                    .provider(format!("scripted-{i}"), model.clone()),
            )
        });
    let started = Instant::now();
    let ran = experiment.run().await?;
    Ok((ran, started.elapsed()))
}

/// Checks that an experiment ran `runs` runs, none failed and every one published.
fn check_ran(ran: &Ran, runs: usize) -> Fallible<()> {
    check(ran.ran == runs && ran.failed == 0, || {
        format!("{} runs ran, {} failed, not {runs}", ran.ran, ran.failed)
    })?;
    let passed = ran
        .record
        .runs
        .values()
        .filter(|entry| entry.scores.get("published").is_some_and(|s| s.passed))
        .count();
    check(passed == runs, || {
        format!("{passed} of {runs} runs published")
    })
}

/// Checks that the throughput models answered every call of the 1 500 runs: a plan and
/// [`TASKS`] reports each.
fn check_calls(models: &[ScriptedProvider]) -> Fallible<()> {
    let calls: usize = models.iter().map(ScriptedProvider::calls).sum();
    check(calls == RUNS * (1 + TASKS), || {
        format!("the models got {calls} calls, not {}", RUNS * (1 + TASKS))
    })
}

/// The baseline: the 1 500 sessions by hand, `run` then `respond("yes")`, [`CONCURRENCY`] at
/// once, in the experiment's order (case, variant, repeat).
async fn plain_loop<S: Store + Clone>(store: S) -> Fallible<Duration> {
    let models: Vec<ScriptedProvider> = (0..VARIANTS).map(|_| model(TASKS)).collect();
    let workflows = models
        .iter()
        .map(|model| example::workflow(store.clone(), model.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let semaphore = Arc::new(Semaphore::new(CONCURRENCY));
    let mut runs = JoinSet::new();
    let started = Instant::now();
    for case in 0..CASES {
        for workflow in &workflows {
            for _ in 0..REPEATS {
                let (workflow, semaphore) = (workflow.clone(), Arc::clone(&semaphore));
                runs.spawn(async move {
                    let _permit = semaphore.acquire_owned().await?;
                    let first = workflow.run(RunOptions::new().input(goal(case))).await?;
                    let request = *first.open_requests.first().ok_or("the run asked nothing")?;
                    let done = workflow
                        .respond(&first.session, request, "yes", RunOptions::new())
                        .await?;
                    Ok::<_, BoxError>(done.state.is_published())
                });
            }
        }
    }
    let mut published = 0;
    while let Some(run) = runs.join_next().await {
        published += usize::from(run??);
    }
    let took = started.elapsed();
    check(published == RUNS, || {
        format!("the loop published {published} of {RUNS} releases")
    })?;
    check_calls(&models)?;
    Ok(took)
}

/// The same 1 500 sessions as experiment `name`, on a host over `store`; the host is returned
/// for re-scoring.
async fn experiment<S: Store + Clone>(store: S, name: &str) -> Fallible<(Duration, Host)> {
    let models: Vec<ScriptedProvider> = (0..VARIANTS).map(|_| model(TASKS)).collect();
    // The registered workflow's own model is never asked: every variant brings its own.
    let workflow = example::workflow(store.clone(), ScriptedProvider::new())?;
    let host = Host::new(store).workflow(workflow)?;
    let cases =
        (0..CASES).map(|case| Case::input(format!("case-{case}"), goal(case)).answers(["yes"]));
    let experiment = Experiment::new(name, host.clone()).cases(cases);
    let (ran, took) = run_variants(experiment, &models).await?;
    check_ran(&ran, RUNS)?;
    check_calls(&models)?;
    Ok((took, host))
}

/// Throughput rounds on stores `open` makes (one per side and round, named by its argument),
/// alternating which side goes first; the row compares the medians (held to the goal when
/// `held`). Also returns the last experiment's host and name.
async fn throughput<S: Store + Clone>(
    label: &str,
    held: bool,
    open: impl Fn(&str) -> Fallible<S>,
) -> Fallible<(Row, Host, String)> {
    let (mut loops, mut evals, mut last) = (Vec::new(), Vec::new(), None);
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            loops.push(plain_loop(open(&format!("loop-{round}"))?).await?);
        }
        let name = format!("throughput-{round}");
        let (took, host) = experiment(open(&format!("eval-{round}"))?, &name).await?;
        evals.push(took);
        last = Some((host, name));
        if round % 2 == 1 {
            loops.push(plain_loop(open(&format!("loop-{round}"))?).await?);
        }
        eprintln!(
            "bench eval: {label} round {round}: loop {}, experiment {}",
            ms(loops[round]),
            ms(took)
        );
    }
    let (host, name) = last.ok_or("no round ran")?;
    let rate = |d: Duration| RUNS as f64 / d.as_secs_f64();
    let (ours, baseline) = (rate(median(&evals)), rate(median(&loops)));
    let ratio = ours / baseline;
    let row = Row {
        what: format!("experiment vs plain loop, {RUNS} runs, {label}"),
        measured: format!("{ours:.0} runs/s"),
        baseline: format!("{baseline:.0} runs/s"),
        ratio: times(ratio),
        goal: if held { ">= 0.9x" } else { "(info)" },
        met: held.then_some(ratio >= 0.9),
    };
    Ok((row, host, name))
}

/// Re-scores experiment `name` with three scorers against reading its runs' events, in
/// alternating rounds.
async fn rescoring(host: &Host, name: &str) -> Fallible<Row> {
    let store = host.store().as_ref();
    let record = ExperimentRecord::load(store, name).await?;
    let sessions: Vec<SessionId> = record
        .runs
        .values()
        .filter_map(|entry| entry.run.session.clone())
        .collect();
    check(sessions.len() == RUNS, || {
        format!("{} sessions recorded, not {RUNS}", sessions.len())
    })?;
    let reported = scorers::contains(
        "reported-done",
        Field::output("executor", "/summary"),
        "done",
    );
    let scorers: [Arc<dyn Scorer>; 3] = [
        Arc::new(scorers::predicate("all-tasks-done", |state| {
            state["completed"] == TASKS
        })),
        Arc::new(reported),
        Arc::new(scorers::agent_calls("agent-calls", 1 + TASKS as u64)),
    ];
    let (mut rescores, mut reads) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            reads.push(read_runs(store, &sessions).await?);
        }
        let started = Instant::now();
        let done = rescore(host, name, &scorers, CONCURRENCY).await?;
        rescores.push(started.elapsed());
        check(
            done.runs == RUNS && done.scores == RUNS * scorers.len(),
            || format!("re-scored {done:?}, not {RUNS} runs"),
        )?;
        if round % 2 == 1 {
            reads.push(read_runs(store, &sessions).await?);
        }
    }
    let record = ExperimentRecord::load(store, name).await?;
    let passed = record
        .runs
        .values()
        .flat_map(|entry| entry.scores.values())
        .filter(|score| score.passed)
        .count();
    check(passed == RUNS * (1 + scorers.len()), || {
        format!("{passed} scores passed, not every one")
    })?;
    let (took, baseline) = (median(&rescores), median(&reads));
    Ok(Row {
        what: format!("re-score {RUNS} runs, 3 scorers, redb"),
        measured: ms(took),
        baseline: format!("read events {}", ms(baseline)),
        ratio: format!("{:.2}x", took.as_secs_f64() / baseline.as_secs_f64()),
        goal: "<= 2 s",
        met: Some(took <= Duration::from_secs(2)),
    })
}

/// Reads every session's events, [`CONCURRENCY`] at once: the least a re-scoring that reads
/// events does.
async fn read_runs(store: &dyn Store, sessions: &[SessionId]) -> Fallible<Duration> {
    let started = Instant::now();
    let mut reads = futures_util::stream::iter(sessions)
        .map(|session| store.all_events(session))
        .buffer_unordered(CONCURRENCY);
    let mut events = 0;
    while let Some(read) = reads.next().await {
        events += read?.len();
    }
    let took = started.elapsed();
    check(events > RUNS, || format!("only {events} events read"))?;
    Ok(took)
}

/// What the runs of one forking experiment asked their models and how long they took.
struct Spent {
    took: Duration,
    calls: usize,
    /// Calls the recording's prefix already made: a plan, or a task before the fork point.
    prefix: usize,
}

/// Whether `request` asks again for something the recording's prefix holds: the plan, or the
/// report of a task completed before the fork point (the example's executor prompt says
/// "Complete task 3 of 20").
fn in_prefix(request: &ProviderRequest) -> bool {
    request.agent == "planner"
        || (1..FORK_AT).any(|n| request.prompt.contains(&format!("Complete task {n} of ")))
}

/// Experiment `name` of [`VARIANTS`] × [`REPEATS`] runs of `case`, each variant on a fresh
/// model taking [`MODEL_LATENCY`] a call.
async fn variants_of(host: &Host, name: String, case: Case) -> Fallible<Spent> {
    let models: Vec<ScriptedProvider> = (0..VARIANTS)
        .map(|_| model(FORK_TASKS).pace(MODEL_LATENCY))
        .collect();
    let experiment = Experiment::new(name, host.clone()).case(case);
    let (ran, took) = run_variants(experiment, &models).await?;
    check_ran(&ran, VARIANTS * REPEATS as usize)?;
    let requests: Vec<ProviderRequest> =
        models.iter().flat_map(ScriptedProvider::requests).collect();
    Ok(Spent {
        took,
        calls: requests.len(),
        prefix: requests.iter().filter(|r| in_prefix(r)).count(),
    })
}

/// Records a [`FORK_TASKS`]-task session, then runs its variants forked after the
/// [`FORK_AT`]th `task:started` against running them from the input, in alternating rounds.
async fn forking(dir: &Path) -> Fallible<Vec<Row>> {
    let store = RedbStore::open(dir.join("fork.redb"))?;
    let recorder = model(FORK_TASKS).pace(MODEL_LATENCY);
    let workflow = example::workflow(store.clone(), recorder.clone())?;
    let first = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await?;
    let request = *first
        .open_requests
        .first()
        .ok_or("the recording asked nothing")?;
    let done = workflow
        .respond(&first.session, request, "yes", RunOptions::new())
        .await?;
    check(
        done.state.is_published() && done.state.completed == FORK_TASKS,
        || format!("the recording ended {:?}", done.state),
    )?;
    let recorded_calls = recorder.calls();
    let host = Host::new(store).workflow(workflow)?;
    let at = ForkAt::event("task:started", FORK_AT);
    let from_recording = Case::recording("release", first.session, at).answers(["yes"]);
    let from_input = Case::input("release", example::DEMO_GOAL).answers(["yes"]);

    let (mut forks, mut inputs) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round % 2 == 0 {
            inputs.push(variants_of(&host, format!("input-{round}"), from_input.clone()).await?);
        }
        forks.push(variants_of(&host, format!("fork-{round}"), from_recording.clone()).await?);
        if round % 2 == 1 {
            inputs.push(variants_of(&host, format!("input-{round}"), from_input.clone()).await?);
        }
    }
    let runs = VARIANTS * REPEATS as usize;
    // Every round asks the same: the scripted models are deterministic.
    let (fork, input) = (&forks[0], &inputs[0]);
    check(input.calls == runs * (1 + FORK_TASKS), || {
        format!("the runs from the input made {} calls", input.calls)
    })?;
    let resent = forks.iter().map(|f| f.prefix).sum::<usize>() + recorder.calls() - recorded_calls;
    let took = |spent: &[Spent]| median(&spent.iter().map(|s| s.took).collect::<Vec<_>>());
    let (fork_took, input_took) = (took(&forks), took(&inputs));
    let calls = |spent: &Spent| spent.calls as f64;
    Ok(vec![
        Row {
            what: format!("forks at task {FORK_AT}/{FORK_TASKS}: model calls, {runs} runs"),
            measured: format!("{} calls", fork.calls),
            baseline: format!("{} from input", input.calls),
            ratio: format!("{:.2}x", calls(fork) / calls(input)),
            goal: "(info)",
            met: None,
        },
        Row {
            what: "forks: prefix calls re-sent, all rounds".to_owned(),
            measured: format!("{resent} calls"),
            baseline: format!("{} not spent", input.calls - fork.calls),
            ratio: "-".to_owned(),
            goal: "= 0",
            met: Some(resent == 0),
        },
        Row {
            what: "forks vs from input: wall time, median".to_owned(),
            measured: ms(fork_took),
            baseline: ms(input_took),
            ratio: format!("{:.2}x", fork_took.as_secs_f64() / input_took.as_secs_f64()),
            goal: "(info)",
            met: None,
        },
    ])
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}
