//! The otel suite: what exporting spans live costs a run, and whether a burst loses any.
//!
//! 1. Overhead: the race shape (a planner, then N = 2 000 executor calls, on the durable
//!    redb store; see [`crate::race`]) run with live export to a collector on 127.0.0.1
//!    (on a runtime of its own, as a collector would be a process of its own) against the same
//!    run without, in 21 rounds of one each, each side first in every other round; the figure
//!    is the median of the rounds' ratios (the two runs of a round share the disk's state of
//!    the moment, which drifts more between rounds than the export costs), with the median
//!    wall times beside it (the flush after the run is shown apart). Goal: ≤ 1.05×.
//! 2. Burst: 10 000 events/s for three seconds (turns of six events: a workflow, an agent
//!    call with a model call split by a tool call) appended to a live-exporting store; every
//!    span produced must be sent, or counted as failed: sent + failed = produced, and the
//!    collector holds exactly the sent ones. The collector is `openharness_otel::testing::Receiver`
//!    (OTLP/HTTP protobuf decoded in this process), or Arize Phoenix when
//!    `OPENHARNESS_BENCH_PHOENIX` names its base URL (spans are then counted through its REST
//!    API).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness::store::{MemoryStore, RedbOptions, RedbStore};
use openharness::{SessionId, Store};
use openharness_otel::testing::{Receiver, SMALL_TURN_SPANS, small_turn};
use openharness_otel::{Collector, Endpoint, LiveExport, LiveOptions};

use crate::report::{Row, median};

use crate::report::Fallible;

const TASKS: u64 = 2_000;
const ROUNDS: usize = 21;
const BURST_RATE: u64 = 10_000;
const BURST_SECONDS: u64 = 3;

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("otel", crate::report::Missed::Shown, suite)
}

async fn suite() -> Fallible<Vec<Row>> {
    let mut rows = overhead().await?;
    rows.extend(burst().await?);
    Ok(rows)
}

/// One race run on a fresh redb file, with live export when `endpoint` is given: the run's
/// seconds, the flush's seconds and the spans sent.
async fn race_once(endpoint: Option<&Endpoint>) -> Fallible<(f64, f64, u64, u64)> {
    let dir = tempfile::tempdir()?;
    let store: Arc<dyn Store> = Arc::new(RedbStore::open_with(
        dir.path().join("race.redb"),
        RedbOptions::default(),
    )?);
    let live = match endpoint {
        Some(endpoint) => Some(LiveExport::start(
            Arc::clone(&store),
            Collector::new(endpoint)?,
            LiveOptions::default(),
        )),
        None => None,
    };
    let recording = live
        .as_ref()
        .map_or_else(|| Arc::clone(&store), LiveExport::store);
    let started = Instant::now();
    crate::race::run_on(recording, TASKS).await?;
    let run_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let (sent, failed) = match live {
        Some(live) => {
            let stats = live.shutdown(Duration::from_secs(120)).await;
            (stats.spans_sent, stats.spans_failed)
        }
        None => (0, 0),
    };
    Ok((run_s, started.elapsed().as_secs_f64(), sent, failed))
}

/// A receiver on a runtime of its own (one worker thread), as a collector would be a process
/// of its own: decoding what it is sent does not take the measured run's tokio workers.
fn receiver_apart() -> Fallible<(tokio::runtime::Runtime, Receiver)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let receiver = runtime.block_on(Receiver::start());
    Ok((runtime, receiver))
}

async fn overhead() -> Fallible<Vec<Row>> {
    let (collector_runtime, receiver) = tokio::task::block_in_place(receiver_apart)?;
    let endpoint = receiver.endpoint();
    // One of each first, unmeasured: page cache, allocator, connections.
    race_once(None).await?;
    race_once(Some(&endpoint)).await?;
    let (mut plain, mut live, mut flush, mut ratios) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut spans = 0;
    for round in 0..ROUNDS {
        // Each side goes first in every other round: the second run of a pair finds the disk
        // busier with the first one's writes.
        let mut without = None;
        if round % 2 == 0 {
            without = Some(race_once(None).await?.0);
        }
        let (run_s, flush_s, sent, failed) = race_once(Some(&endpoint)).await?;
        if failed > 0 {
            return Err(format!("{failed} spans of a race run were not exported").into());
        }
        if round % 2 == 1 {
            without = Some(race_once(None).await?.0);
        }
        let without = without.unwrap_or(run_s);
        // The two runs of a round ran on the same disk at nearly the same moment: their ratio
        // is what the export added, with the disk's drift between rounds cancelled out.
        ratios.push(run_s / without);
        plain.push(without);
        live.push(run_s);
        flush.push(flush_s);
        spans = sent;
    }
    drop(receiver);
    tokio::task::block_in_place(move || drop(collector_runtime));
    let (plain, live, flush) = (median(plain), median(live), median(flush));
    let ratio = median(ratios);
    Ok(vec![
        Row {
            what: format!("race N={TASKS}: run with live export (median of rounds)"),
            measured: format!("{live:.3} s"),
            baseline: format!("{plain:.3} s (no export)"),
            ratio: format!("{ratio:.3}x"),
            goal: "<= 1.05x",
            met: Some(ratio <= 1.05),
        },
        Row {
            what: format!("race N={TASKS}: flush after the run"),
            measured: format!("{flush:.3} s"),
            baseline: format!("{spans} spans"),
            ratio: "-".to_owned(),
            goal: "(info)",
            met: None,
        },
    ])
}

async fn burst() -> Fallible<Vec<Row>> {
    let phoenix = std::env::var("OPENHARNESS_BENCH_PHOENIX").ok();
    let (collector_runtime, receiver) = tokio::task::block_in_place(receiver_apart)?;
    let (endpoint, collector_name) = match &phoenix {
        Some(base) => (Endpoint::base(base), "Phoenix"),
        None => (receiver.endpoint(), "127.0.0.1 receiver"),
    };
    let before = match &phoenix {
        Some(base) => phoenix_count(base).await?,
        None => 0,
    };
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let live = LiveExport::start(
        Arc::clone(&store),
        Collector::new(&endpoint)?,
        LiveOptions::default(),
    );
    let recording = live.store();
    let total = BURST_RATE * BURST_SECONDS;
    let turns = total / 6;
    let per_ms = BURST_RATE / 1000;
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut appended = 0u64;
    'turns: for t in 0..turns {
        let session: SessionId = format!("burst-{t}").parse()?;
        for (seq, event) in (0u64..).zip(small_turn()) {
            if appended.is_multiple_of(per_ms) {
                tick.tick().await;
            }
            recording.append(&session, &[event], seq).await?;
            appended += 1;
            if appended >= total {
                break 'turns;
            }
        }
    }
    let rate = appended as f64 / started.elapsed().as_secs_f64();
    let stats = live.shutdown(Duration::from_secs(120)).await;
    let produced = turns * SMALL_TURN_SPANS;
    let received = match &phoenix {
        Some(base) => {
            // Phoenix ingests in the background, slowly (its SQLite store: minutes for the
            // burst): wait while it makes progress, up to half an hour.
            let started = Instant::now();
            let (mut last, mut progressed) = (0, Instant::now());
            loop {
                let count = phoenix_count(base).await?.saturating_sub(before);
                if count > last {
                    (last, progressed) = (count, Instant::now());
                }
                if count >= stats.spans_sent
                    || progressed.elapsed() > Duration::from_secs(60)
                    || started.elapsed() > Duration::from_secs(1800)
                {
                    break count;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        None => receiver.spans().len() as u64,
    };
    drop(receiver);
    tokio::task::block_in_place(move || drop(collector_runtime));
    let accounted = stats.spans_sent + stats.spans_failed;
    Ok(vec![
        Row {
            what: format!("burst into {collector_name}: events/s appended"),
            measured: format!("{rate:.0}"),
            baseline: format!("{BURST_RATE} asked"),
            ratio: format!("{:.3}x", rate / BURST_RATE as f64),
            goal: "(info)",
            met: None,
        },
        Row {
            what: "burst: spans sent + failed = produced".to_owned(),
            measured: format!("{} + {}", stats.spans_sent, stats.spans_failed),
            baseline: format!("{produced} produced"),
            ratio: format!("{:.3}x", accounted as f64 / produced as f64),
            goal: "= 1x",
            met: Some(accounted == produced),
        },
        Row {
            what: "burst: spans the collector holds".to_owned(),
            measured: format!("{received}"),
            baseline: format!("{} sent", stats.spans_sent),
            ratio: format!("{:.3}x", received as f64 / stats.spans_sent.max(1) as f64),
            goal: "= sent",
            met: Some(received == stats.spans_sent),
        },
        Row {
            what: "burst: events dropped by the queue / read back".to_owned(),
            measured: format!("{}", stats.events_dropped),
            baseline: format!("{} read back", stats.events_recovered),
            ratio: "-".to_owned(),
            goal: "= read back",
            met: Some(stats.events_dropped == stats.events_recovered),
        },
    ])
}

/// How many spans Phoenix's default project holds (through its REST API, page by page).
async fn phoenix_count(base: &str) -> Fallible<u64> {
    let client = reqwest::Client::new();
    let mut count = 0;
    let mut cursor: Option<String> = None;
    loop {
        let mut url = format!("{base}/v1/projects/default/spans?limit=1000");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let response = client.get(&url).send().await?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(0);
        }
        let body: serde_json::Value = serde_json::from_str(&response.text().await?)?;
        count += body["data"].as_array().map_or(0, Vec::len) as u64;
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(count),
        }
    }
}
