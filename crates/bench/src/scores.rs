//! `cargo xtask bench scores`: what online scoring costs a served turn.
//!
//! Two servers in this process, each on a redb store of its own, serve the planner-executor
//! example on a scripted model; one scores every finished turn in the background
//! ([`OnlineScorers`]: a predicate on the state, a regex on the executor's output, the agent
//! calls and the cost — four scorers, two of which read the turn's events), the other does
//! not. A served turn is `POST /api/workflow` with a new goal, answered to its `done` frame
//! (a plan, its tasks run, the approval asked). Turns alternate between the two servers, one
//! at a time, so a score being computed in the background competes with the next turn on
//! either side alike. Compared: the p50 (and p99) of the two sides' turns; goal: scoring adds
//! at most 5% to the p50. Checked after: every turn of the scored side was scored, none of the
//! other's.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use openharness::host::Host;
use openharness::store::RedbStore;
use openharness_eval::{Field, OnlineScorers, OnlineScoring, scorers};
use openharness_example_planner_executor as example;

use crate::http::{millis, percentile, request};
use crate::report::{Fallible, Row, times};

/// Turns per side.
const TURNS: usize = 400;
/// Turns per side before measuring (warm caches, a grown store).
const WARMUP: usize = 40;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("scores", crate::report::Missed::Fails, suite)
}

/// A served planner-executor on a redb store in `dir`, scored online when `scored`.
async fn server(
    dir: &std::path::Path,
    name: &str,
    scored: bool,
) -> Fallible<(std::net::SocketAddr, Host, Option<OnlineScoring>)> {
    let store = RedbStore::open(dir.join(format!("{name}.redb")))?;
    let workflow = example::workflow(store.clone(), example::scripted_provider())?;
    let host = Host::new(store).workflow(workflow)?;
    let scoring = scored.then(|| {
        let published = scorers::predicate("published", |state| state["release"] == "published");
        let says_done = scorers::matches(
            "says-done",
            Field::output("executor", "/summary"),
            "(?i)\\bdone\\b",
        )?;
        Ok::<_, crate::report::BoxError>(
            OnlineScorers::new()
                .scorer(example::WORKFLOW_NAME, published)
                .scorer(example::WORKFLOW_NAME, says_done)
                .scorer(example::WORKFLOW_NAME, scorers::agent_calls("calls", 20))
                .scorer(example::WORKFLOW_NAME, scorers::cost("cost", 1.0))
                .start(&host),
        )
    });
    let scoring = scoring.transpose()?;
    let app =
        openharness_server::router(host.clone(), openharness_server::ServerOptions::default());
    let addr = crate::http::serve(app).await?;
    Ok((addr, host, scoring))
}

/// One served turn: a new goal, answered to its `done` frame; how long it took.
async fn turn(addr: std::net::SocketAddr, n: usize) -> Fallible<Duration> {
    let body = format!(
        r#"{{"input":"Ship version 0.{n} of our tool","workflow":"{}"}}"#,
        example::WORKFLOW_NAME
    );
    let started = Instant::now();
    let (status, answer) = request(addr, "POST", "/api/workflow", Some(&body)).await?;
    let took = started.elapsed();
    if status != 200 || !answer.contains("\"done\"") {
        return Err(format!("POST /api/workflow: {status} {answer}").into());
    }
    Ok(took)
}

async fn suite() -> Fallible<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let (scored_addr, scored_host, scoring) = server(dir.path(), "scored", true).await?;
    let (plain_addr, plain_host, _) = server(dir.path(), "plain", false).await?;
    let scoring = scoring.ok_or("the scored server has no scoring")?;
    eprintln!(
        "bench scores: {TURNS} served turns per side, alternated, after {WARMUP} warm-up turns each…"
    );
    for n in 0..WARMUP {
        turn(scored_addr, n).await?;
        turn(plain_addr, n).await?;
    }
    let (mut scored, mut plain) = (Vec::with_capacity(TURNS), Vec::with_capacity(TURNS));
    for n in WARMUP..WARMUP + TURNS {
        // Which side goes first alternates too.
        if n % 2 == 0 {
            scored.push(turn(scored_addr, n).await?);
            plain.push(turn(plain_addr, n).await?);
        } else {
            plain.push(turn(plain_addr, n).await?);
            scored.push(turn(scored_addr, n).await?);
        }
    }
    // Every scored turn's scores are recorded (in the background: wait for the last ones).
    let want = (WARMUP + TURNS) as u64;
    let deadline = Instant::now() + Duration::from_secs(30);
    while scoring.stats().scored < want && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = scoring.stats();
    if stats.scored != want || stats.missed != 0 || stats.failed != 0 {
        return Err(format!("the scored side scored {stats:?}, expected {want} turns").into());
    }
    let scored_sessions = scored_host
        .query_sessions(&openharness::host::SessionQuery::default().scorer("published"))
        .await?;
    let unscored = plain_host
        .query_sessions(&openharness::host::SessionQuery::default().scorer("published"))
        .await?;
    if scored_sessions.total != want || unscored.total != 0 {
        return Err(format!(
            "scored sessions listed: {} of {want}, on the plain side {}",
            scored_sessions.total, unscored.total
        )
        .into());
    }
    scored.sort_unstable();
    plain.sort_unstable();
    let (p50, base50) = (percentile(&scored, 0.5), percentile(&plain, 0.5));
    let (p99, base99) = (percentile(&scored, 0.99), percentile(&plain, 0.99));
    let ratio50 = p50.as_secs_f64() / base50.as_secs_f64().max(1e-9);
    let ratio99 = p99.as_secs_f64() / base99.as_secs_f64().max(1e-9);
    Ok(vec![
        Row {
            what: format!("served turn p50, {} scorers online", 4),
            measured: millis(p50),
            baseline: format!("{} unscored", millis(base50)),
            ratio: times(ratio50),
            goal: "<= 1.05x",
            met: Some(ratio50 <= 1.05),
        },
        Row {
            what: "served turn p99, scored online".to_owned(),
            measured: millis(p99),
            baseline: format!("{} unscored", millis(base99)),
            ratio: times(ratio99),
            goal: "(info)",
            met: None,
        },
    ])
}
