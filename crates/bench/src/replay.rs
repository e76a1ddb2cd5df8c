//! The replay suite: `openharness replay --all` over many recorded demo sessions ([`Replayer`]:
//! each session re-executed through today's code with every agent answered from its recording,
//! and folded through today's handlers against its recorded state hashes), against recording
//! the same sessions with the scripted model in the same run.
//!
//! N demo sessions (the planner-executor demo's two turns: the plan, three tasks, the question
//! and its answer; 73 events each) are recorded into a store in memory, two at a time (the
//! machine's two workers), then all replayed with the replayer's default parallelism. The
//! goal is the issue's: at least 5 000 sessions a minute on two cores; the ratio to recording
//! them shows what a replay costs beside the run it checks. `OPENHARNESS_BENCH_REPLAY_SESSIONS`
//! sets N (default 10 000).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use openharness::host::{Host, Replayer, SessionQuery};
use openharness::store::MemoryStore;
use openharness::{RunOptions, Store};
use openharness_example_planner_executor as example;
use tokio::task::JoinSet;

use crate::report::{Fallible, Row, times};

/// Sessions recorded and replayed, unless `OPENHARNESS_BENCH_REPLAY_SESSIONS` says otherwise.
const SESSIONS: usize = 10_000;

/// The goal, in sessions a minute.
const GOAL_PER_MINUTE: f64 = 5_000.0;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("replay", crate::report::Missed::Shown, suite)
}

/// Records the demo's two turns once into `store`.
async fn record_one(store: Arc<dyn Store>) -> Fallible<()> {
    let workflow = example::workflow(MemoryStore::new(), example::scripted_provider())?
        .with_shared_store(store);
    let waiting = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await?;
    let request = *waiting
        .open_requests
        .first()
        .ok_or("the demo did not ask to publish")?;
    workflow
        .respond(&waiting.session, request, "yes", RunOptions::new())
        .await?;
    Ok(())
}

async fn suite() -> Fallible<Vec<Row>> {
    let n = std::env::var("OPENHARNESS_BENCH_REPLAY_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SESSIONS);
    eprintln!("bench replay: recording {n} demo sessions…");
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    let mut next = 0;
    // Two at a time: as many as the runtime's workers.
    while next < n || !tasks.is_empty() {
        while next < n && tasks.len() < 2 {
            tasks.spawn(record_one(Arc::clone(&store)));
            next += 1;
        }
        if let Some(joined) = tasks.join_next().await {
            joined??;
        }
    }
    let recording = started.elapsed().as_secs_f64();

    eprintln!("bench replay: replaying them…");
    let workflow = example::workflow(MemoryStore::new(), example::scripted_provider())?;
    let host = Host::shared(Arc::clone(&store)).workflow(workflow)?;
    let replayer = Replayer::new(host);
    let sessions = replayer.sessions(&SessionQuery::default()).await?;
    if sessions.len() != n {
        return Err(format!("{} sessions listed, not {n}", sessions.len()).into());
    }
    let report = replayer.run(sessions, |_, _| {}).await;
    if !report.all_matched() || report.matched as usize != n {
        return Err(format!(
            "the replays did not all match: {} matched, {} parted, {} failed",
            report.matched,
            report.parted.len(),
            report.failed.len()
        )
        .into());
    }
    let per_minute = n as f64 / report.seconds * 60.0;
    Ok(vec![Row {
        what: format!("replay --all of {n} demo sessions"),
        measured: format!("{:.1} s ({per_minute:.0}/min)", report.seconds),
        baseline: format!("{recording:.1} s (recording)"),
        ratio: times(report.seconds / recording),
        goal: ">= 5000/min",
        met: Some(per_minute >= GOAL_PER_MINUTE),
    }])
}
