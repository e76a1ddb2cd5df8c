//! `cargo xtask bench turns`: what owning turns in the host costs and buys.
//!
//! - **The claim per turn.** On redb (whose claims are granted in process): a continue through
//!   the host (its registry, the session's driver, the acknowledgement once the input is
//!   durable) against the same continue by the workflow alone, alternated; goal p50 ≤ 1.1×.
//!   On PostgreSQL, when `OPENHARNESS_TEST_POSTGRES` is set (a schema of its own, dropped
//!   after): a continue through the host that claims the session (a fenced advisory lock, one
//!   round trip, and appends that check the fence) against the same host over the same store
//!   with claims granted in process, as native turns ran before the host claimed them; goal
//!   p50 ≤ 1.3×. The host against the workflow alone there is shown for information.
//! - **Steer latency.** A tool-using agent on the OpenAI-compatible provider against a fake
//!   model server on 127.0.0.1: the model calls a tool that takes [`TOOL`]; an input steered
//!   in while the tool runs must be in the next request the model server receives. Measured:
//!   from the steer's post to that request, against the tool call's length plus 50 ms (the
//!   goal: at most one tool call + 50 ms, so a ratio ≤ 1.0).

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use openharness::builtin::UserInput;
use openharness::host::{Host, TurnStart};
use openharness::store::RedbStore;
use openharness::{RunOptions, SessionId, Store, Workflow};
use openharness_core::adapter::CommandRecorded;
use openharness_core::{BusyPolicy, FnTool};
use openharness_provider::testing::{FakeServer, openai};
use openharness_provider::{ApiKey, OpenAiProvider};

use crate::http::{millis, percentile};
use crate::report::{Fallible, Row, times};

/// Continues per side of the claim comparison.
const ROUNDS: usize = 200;

/// Steers measured.
const STEERS: usize = 20;

/// How long the steer bench's tool takes.
const TOOL: Duration = Duration::from_millis(200);

/// The ticks workflow of the server suite, on `store`.
fn ticks(store: Arc<dyn Store>) -> Fallible<Workflow<crate::server::Ticks>> {
    Ok(Workflow::builder("ticks")
        .initial_state(crate::server::Ticks::default())
        .shared_store(store)
        .build()?)
}

/// Continue → input durable through the host (over `store`, or over `baseline` when given:
/// the same store claimed otherwise) against the workflow alone or that second host,
/// alternated: sorted.
async fn claim_cost(
    store: Arc<dyn Store>,
    baseline: Option<Arc<dyn Store>>,
) -> Fallible<(Vec<Duration>, Vec<Duration>)> {
    let workflow = ticks(Arc::clone(&store))?;
    let host = Host::shared(Arc::clone(&store)).workflow(workflow.clone())?;
    let other = match baseline {
        Some(store) => Some(Host::shared(store).workflow(workflow.clone())?),
        None => None,
    };
    let session = SessionId::new();
    host.run(
        "ticks",
        Some("3".into()),
        RunOptions::new().session(session.clone()),
    )
    .await?;
    let (mut hosted, mut alone) = (Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS));
    for _ in 0..ROUNDS {
        while host.is_running(&session) {
            tokio::task::yield_now().await;
        }
        let started = Instant::now();
        let turn = host
            .start(&session, TurnStart::Input("3".into()), RunOptions::new())
            .await?;
        hosted.push(started.elapsed());
        turn.done.wait().await?;
        while host.is_running(&session) {
            tokio::task::yield_now().await;
        }

        if let Some(other) = &other {
            let started = Instant::now();
            let turn = other
                .start(&session, TurnStart::Input("3".into()), RunOptions::new())
                .await?;
            alone.push(started.elapsed());
            turn.done.wait().await?;
            while other.is_running(&session) {
                tokio::task::yield_now().await;
            }
            continue;
        }
        let (recorded, heard) = tokio::sync::oneshot::channel::<CommandRecorded>();
        let started = Instant::now();
        let turn = {
            let (workflow, session) = (workflow.clone(), session.clone());
            tokio::spawn(async move {
                workflow
                    .send(&session, "3", RunOptions::new().acknowledge(recorded))
                    .await
            })
        };
        heard.await?;
        alone.push(started.elapsed());
        turn.await??;
    }
    hosted.sort();
    alone.sort();
    Ok((hosted, alone))
}

/// The rows of one comparison: `what` measured against `against`, p50 held to `goal`.
fn claim_rows(
    rows: &mut Vec<Row>,
    what: &str,
    against: &str,
    goal: Option<(f64, &'static str)>,
    (hosted, alone): (Vec<Duration>, Vec<Duration>),
) {
    let (a, b) = (percentile(&hosted, 0.5), percentile(&alone, 0.5));
    let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    rows.push(Row {
        what: format!("{what} p50"),
        measured: millis(a),
        baseline: format!("{} {against}", millis(b)),
        ratio: times(ratio),
        goal: goal.map_or("(info)", |(_, label)| label),
        met: goal.map(|(goal, _)| ratio <= goal),
    });
    let (a, b) = (percentile(&hosted, 0.99), percentile(&alone, 0.99));
    rows.push(Row {
        what: format!("{what} p99"),
        measured: millis(a),
        baseline: format!("{} {against}", millis(b)),
        ratio: times(a.as_secs_f64() / b.as_secs_f64().max(1e-9)),
        goal: "(info)",
        met: None,
    });
}

/// A store that grants every claim in process, as native turns ran before the host claimed
/// them through the store: the baseline of the claim's own cost.
struct Unclaimed(Arc<dyn Store>);

#[async_trait::async_trait]
impl Store for Unclaimed {
    fn describe(&self) -> String {
        self.0.describe()
    }
    async fn claim(
        &self,
        _session: &SessionId,
    ) -> Result<Option<openharness_core::adapter::Claim>, openharness::StoreError> {
        Ok(Some(openharness_core::adapter::Claim::unshared()))
    }
    async fn append(
        &self,
        session: &SessionId,
        events: &[openharness::Envelope],
        expected_seq: u64,
    ) -> Result<u64, openharness::StoreError> {
        self.0.append(session, events, expected_seq).await
    }
    async fn events(
        &self,
        session: &SessionId,
        range: std::ops::Range<u64>,
    ) -> Result<Vec<openharness::Envelope>, openharness::StoreError> {
        self.0.events(session, range).await
    }
    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: std::ops::Range<u64>,
        folds: openharness::adapter::Folded,
    ) -> Result<Vec<openharness::Envelope>, openharness::StoreError> {
        self.0.events_for_fold(session, range, folds).await
    }
    async fn session(
        &self,
        session: &SessionId,
    ) -> Result<Option<openharness::SessionInfo>, openharness::StoreError> {
        self.0.session(session).await
    }
    async fn sessions(&self) -> Result<Vec<openharness::SessionInfo>, openharness::StoreError> {
        self.0.sessions().await
    }
    async fn clear(&self, session: &SessionId) -> Result<(), openharness::StoreError> {
        self.0.clear(session).await
    }
    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), openharness::StoreError> {
        self.0.snapshot_json(session, position, state).await
    }
    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, openharness::adapter::SnapshotJson)>, openharness::StoreError> {
        self.0.latest_snapshot_json(session, at_most).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<openharness::adapter::Subscription, openharness::StoreError> {
        self.0.subscribe(session, from_seq).await
    }
    async fn sync(&self) -> Result<(), openharness::StoreError> {
        self.0.sync().await
    }
}

/// The `researcher` of the steer bench: asks its model, which calls `lookup` once.
#[derive(Debug, Clone, Copy)]
struct Researcher;

#[derive(Debug, serde::Deserialize, openharness::schemars::JsonSchema)]
#[schemars(crate = "openharness::schemars")]
struct Found {
    found: String,
}

#[openharness::event("found:noted")]
#[derive(Debug, Clone)]
struct Noted {
    found: String,
}

#[openharness::event]
#[derive(Debug, Clone)]
enum NoteEvent {
    UserInput,
    Noted,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Notes {
    notes: Vec<String>,
}

#[openharness::handler(NoteEvent)]
impl Notes {
    fn input(&mut self, _input: &UserInput) {}
    fn noted(&mut self, noted: &Noted) {
        self.notes.push(noted.found.clone());
    }
}

#[derive(serde::Deserialize, openharness::schemars::JsonSchema)]
#[schemars(crate = "openharness::schemars")]
struct NoArguments {}

#[openharness::agent(output = Found, emits = [Noted], tools = [lookup()])]
impl Researcher {
    fn prompt(&self, _state: &Notes, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Found, _input: &UserInput) -> Noted {
        Noted { found: out.found }
    }
}

fn lookup() -> FnTool<NoArguments> {
    FnTool::new("lookup", "Looks it up (slowly).", |_: NoArguments| async {
        tokio::time::sleep(TOOL).await;
        Ok::<_, std::convert::Infallible>(serde_json::json!({ "found": "it" }))
    })
}

/// From each steer's post to the model request that holds it: sorted.
async fn steer_latency() -> Fallible<Vec<Duration>> {
    let server = FakeServer::openai(openai::KEY).await?;
    // When each request arrived, and whether it held a steer.
    let arrivals: Arc<Mutex<Vec<(Instant, bool)>>> = Arc::default();
    {
        let arrivals = Arc::clone(&arrivals);
        server.fallback(move |request| {
            let steered = request.body.to_string().contains("steered in");
            let first = !request.body.to_string().contains("\"role\":\"tool\"");
            arrivals
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((Instant::now(), steered));
            if first {
                openai::tool_calls(&[("c1", "lookup", serde_json::json!({}))])
            } else {
                openai::json_output(&serde_json::json!({ "found": "it" }))
            }
        });
    }
    let provider = OpenAiProvider::builder(ApiKey::new(openai::KEY))
        .base_url(server.base_url())
        .model("bench")
        .build()?;
    let workflow = Workflow::builder("research")
        .initial_state(Notes::default())
        .agent(Researcher)
        .store(openharness::store::MemoryStore::new())
        .provider(provider)
        .build()?;
    let host = Host::new(openharness::store::MemoryStore::new()).workflow(workflow)?;
    let mut latencies = Vec::with_capacity(STEERS);
    for round in 0..STEERS {
        arrivals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        let session = SessionId::new();
        let start = TurnStart::New {
            workflow: "research".into(),
            input: Some(format!("question {round}")),
        };
        let turn = host.start(&session, start, RunOptions::new()).await?;
        // The tool is running once its call is recorded.
        loop {
            let page = host.events(&session, None, 100).await?;
            if page.events.iter().any(|r| r.event.name == "tool:called") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let posted = Instant::now();
        let options = RunOptions::new().on_busy(BusyPolicy::Steer);
        host.start(&session, TurnStart::Input("steered in".into()), options)
            .await?;
        turn.done.wait().await?;
        let arrived = arrivals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(_, steered)| *steered)
            .map(|(at, _)| *at)
            .ok_or("no model request held the steered input")?;
        latencies.push(arrived.saturating_duration_since(posted));
        while host.is_running(&session) {
            tokio::task::yield_now().await;
        }
    }
    drop(server);
    latencies.sort();
    Ok(latencies)
}

async fn suite() -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    eprintln!("claim per turn, {ROUNDS} continues each side (redb)…");
    let dir = tempfile::tempdir()?;
    let redb: Arc<dyn Store> = Arc::new(RedbStore::open(dir.path().join("store.redb"))?);
    claim_rows(
        &mut rows,
        "continue → input durable, host (redb)",
        "workflow alone",
        Some((1.1, "<= 1.1x")),
        claim_cost(redb, None).await?,
    );
    match std::env::var("OPENHARNESS_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => {
            eprintln!("claim per turn, {ROUNDS} continues each side (PostgreSQL)…");
            let schema = format!("bench_turns_{}", std::process::id());
            let measured = async {
                let store: Arc<dyn Store> = Arc::new(
                    openharness::store::PostgresStore::connect_in_schema(&url, &schema).await?,
                );
                let unclaimed: Arc<dyn Store> = Arc::new(Unclaimed(Arc::clone(&store)));
                let claimed = claim_cost(Arc::clone(&store), Some(unclaimed)).await?;
                let alone = claim_cost(store, None).await?;
                Ok::<_, crate::report::BoxError>((claimed, alone))
            }
            .await;
            if let Err(err) = crate::platform::drop_schema(&url, &schema).await {
                eprintln!("bench turns: could not drop schema {schema}: {err}");
            }
            let (claimed, alone) = measured?;
            claim_rows(
                &mut rows,
                "continue → input durable, claimed (PostgreSQL)",
                "not claimed",
                Some((1.3, "<= 1.3x")),
                claimed,
            );
            claim_rows(
                &mut rows,
                "continue → input durable, host (PostgreSQL)",
                "workflow alone",
                None,
                alone,
            );
        }
        _ => eprintln!(
            "OPENHARNESS_TEST_POSTGRES is not set: the PostgreSQL claim rows (and the 1.3x goal) are skipped"
        ),
    }
    eprintln!("steer → next model request, {STEERS} steers into a {TOOL:?} tool call…");
    let steers = steer_latency().await?;
    let bound = TOOL + Duration::from_millis(50);
    for (name, p) in [("p50", 0.5), ("max", 1.0)] {
        let latency = percentile(&steers, p);
        let ratio = latency.as_secs_f64() / bound.as_secs_f64();
        rows.push(Row {
            what: format!("steer posted → request holding it, {name}"),
            measured: millis(latency),
            baseline: format!("{} tool + 50 ms", millis(TOOL)),
            ratio: times(ratio),
            goal: "<= 1.0x",
            met: Some(ratio <= 1.0),
        });
    }
    Ok(rows)
}

/// Runs the suite and prints its table.
pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("turns", crate::report::Missed::Shown, suite)
}
