//! The platform suite: the `/v1` API (the platform served by the server, as `openharness serve`
//! serves it) against the native routes, in one run, both answering with the same scripted model through the same agent.
//!
//! - **Post message → first `message.delta`**: `CLIENTS` sessions at once, each with an event
//!   stream open, post a message (`POST /v1/agents/{a}/sessions/{s}/messages`) and time it to
//!   the first `message.delta` on the stream (the model's first streamed word), then read on to
//!   `turn.completed` (the turn's last notification). The baseline is the native server's continue → first event
//!   (`POST /sessions/{id}/input` → the turn's first event on `GET /sessions/{id}/events`) at the
//!   same concurrency, on the same store, its host running the same agent-chat workflow with
//!   the same scripted model. The two sides alternate in blocks of rounds. Goal on PostgreSQL:
//!   p99 ≤ 1.3× the baseline's p99. The same rows on redb are reported. Where the time goes
//!   is shown beside them: the time to the platform's first notification (`message.created`,
//!   the recorded message: the event the baseline times), and each store method's calls per
//!   turn and mean time on both sides (the store is wrapped in a counter, the same for both).
//! - **Messages answered per second**: the same `CLIENTS` each post a message and wait for its
//!   answer (`turn.completed`; `workflow:completed` for the baseline) again and again for
//!   `THROUGHPUT_FOR`, on redb in a temporary directory and on PostgreSQL.
//! - **Failover** (a replica killed mid-turn) is measured with real processes by
//!   `crates/cli/tests/failover.rs`; a row points at it.
//!
//! PostgreSQL is `OPENHARNESS_TEST_POSTGRES` (each run in a schema of its own, left behind);
//! without it the PostgreSQL rows are skipped. A post that finds the session's last turn still
//! giving up its claim (`409`, both sides) is posted again 1 ms later, timed from the post that
//! was taken; how often that happened is reported.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use openharness::builtin::WorkflowCompleted;
use openharness::host::Host;
use openharness::store::{PostgresStore, RedbStore};
use openharness::{BoxedProvider, Event, SessionId, Store};
use openharness_platform::{ChatAgent, Platform, agent_chat_workflow};
use openharness_provider::{Reply, ScriptedProvider};
use openharness_server::{ServerOptions, router};

use crate::http::{Subscriber, field, millis, percentile, post_expecting, request, serve};
use crate::report::{BoxError, Fallible, Row, times};
use crate::server::settled_len;

mod counted;
use counted::*;

/// Sessions answered at once.
const CLIENTS: usize = 50;
/// Messages each session posts per side for the latency figures, in `BLOCKS` alternating
/// blocks.
const ROUNDS: usize = 20;
const BLOCKS: usize = 2;
/// How long each side posts for in the throughput figures.
const THROUGHPUT_FOR: Duration = Duration::from_secs(8);
/// The scripted answer, streamed one word per `message.delta`.
const ANSWER: &str = "Sure: here is a short answer, streamed word by word as a model would.";
const SYSTEM_PROMPT: &str = "Be brief.";
/// A post's body on each side.
const MESSAGE: &str = r#"{"content":[{"type":"text","text":"Hello there"}]}"#;
const INPUT: &str = r#"{"text":"Hello there"}"#;

/// The model both sides ask: every call of the `assistant` streams `ANSWER`, then answers it.
fn model() -> BoxedProvider {
    Arc::new(ScriptedProvider::new().fallback("assistant", |_| {
        Reply::output(serde_json::json!(ANSWER)).text(ANSWER)
    }))
}

/// Calls of each store method and the time they took, summed.
type Tally = BTreeMap<&'static str, (u64, Duration)>;

/// One turn's figures: the time to its first event of interest and to its first event at all
/// (the same for the baseline; `message.created` for the platform), and the posts refused
/// because the previous turn was still ending.
struct Turn {
    first: Duration,
    recorded: Duration,
    retries: u64,
}

/// Posts `body` to `path` until the answer is not `409` (then it must be `expected`), setting
/// `started` to when the post that was taken began.
async fn post(
    addr: SocketAddr,
    path: &str,
    body: &str,
    expected: u16,
    started: &mut Instant,
    retries: &mut u64,
) -> Fallible<()> {
    loop {
        *started = Instant::now();
        let (status, answer) = request(addr, "POST", path, Some(body)).await?;
        if status == expected {
            return Ok(());
        }
        if status != 409 {
            return Err(format!("POST {path}: {status} {answer}").into());
        }
        *retries += 1;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A platform session with its event stream open.
struct PlatformClient {
    addr: SocketAddr,
    /// `/v1/agents/{a}/sessions/{s}`.
    path: String,
    stream: Subscriber,
}

impl PlatformClient {
    /// Posts a message; the time to the first `message.delta`, once `turn.completed` is read.
    async fn message(&mut self) -> Fallible<Turn> {
        let Self { addr, path, stream } = self;
        let messages = format!("{path}/messages");
        let mut started = Instant::now();
        let mut retries = 0;
        let posted = post(*addr, &messages, MESSAGE, 201, &mut started, &mut retries);
        let first = async {
            let mut recorded = None;
            loop {
                let (_, name) = stream.next().await?;
                let at = Instant::now();
                recorded.get_or_insert(at);
                match name.as_str() {
                    "message.delta" => return Ok::<_, BoxError>((at, recorded.unwrap_or(at))),
                    "session.failed" => return Err("a turn failed".into()),
                    _ => {}
                }
            }
        };
        let (posted, first) = tokio::join!(posted, first);
        posted?;
        let (first, recorded) = first?;
        // A turn's last notification is `turn.completed` (after `session.completed`, of the same
        // event): reading up to it leaves nothing of this turn to be taken for the next one's.
        loop {
            let (_, name) = stream.next().await?;
            match name.as_str() {
                "turn.completed" => break,
                "session.failed" | "turn.failed" => return Err("a turn failed".into()),
                _ => {}
            }
        }
        Ok(Turn {
            first: first.saturating_duration_since(started),
            recorded: recorded.saturating_duration_since(started),
            retries,
        })
    }
}

/// A native session with its event stream open.
struct NativeClient {
    addr: SocketAddr,
    session: String,
    stream: Subscriber,
    /// The seq the next turn starts at.
    len: u64,
}

impl NativeClient {
    /// Continues the session; the time to the turn's first event, once `workflow:completed` is
    /// read.
    async fn message(&mut self) -> Fallible<Turn> {
        let Self {
            addr,
            session,
            stream,
            len,
        } = self;
        let input = format!("/sessions/{session}/input");
        let mut started = Instant::now();
        let mut retries = 0;
        let posted = post(*addr, &input, INPUT, 202, &mut started, &mut retries);
        let first = async {
            loop {
                let (seq, _) = stream.next().await?;
                if seq >= *len {
                    return Ok::<_, BoxError>((Instant::now(), seq));
                }
            }
        };
        let (posted, first) = tokio::join!(posted, first);
        posted?;
        let (first, seq) = first?;
        if seq != *len {
            return Err(format!("the turn's first event is {seq}, not {len}").into());
        }
        loop {
            let (seq, name) = stream.next().await?;
            if name == WorkflowCompleted::NAME {
                *len = seq + 1;
                break;
            }
        }
        let first = first.saturating_duration_since(started);
        Ok(Turn {
            first,
            recorded: first,
            retries,
        })
    }
}

/// The platform on `store`, answering with the scripted model: its clients, one per session
/// of one agent, each having had one (unmeasured) turn.
async fn platform_clients(store: Arc<dyn Store>) -> Fallible<Vec<PlatformClient>> {
    // Served as `openharness serve` serves it: beside the native routes, on one HTTP layer.
    let host = Host::shared(Arc::clone(&store));
    let platform = Platform::new(store, None).with_provider(model());
    let addr = serve(router(host, ServerOptions::default().platform(platform))).await?;
    let body = format!(r#"{{"name":"bench","system_prompt":"{SYSTEM_PROMPT}"}}"#);
    let agent = post_expecting(addr, "/v1/agents", &body, 201).await?;
    let agent = field(&agent, "id").ok_or("no agent id")?;
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let sessions = format!("/v1/agents/{agent}/sessions");
        let session = post_expecting(addr, &sessions, "{}", 201).await?;
        let session = field(&session, "id").ok_or("no session id")?;
        let path = format!("{sessions}/{session}");
        let stream = Subscriber::open(addr, &format!("{path}/events"), None).await?;
        let mut client = PlatformClient { addr, path, stream };
        client.message().await?;
        clients.push(client);
    }
    Ok(clients)
}

/// The native server on `store`, its host running the agent-chat workflow with the same agent
/// and model: its clients, one per session, each started with one turn.
async fn native_clients(store: Arc<dyn Store>) -> Fallible<Vec<NativeClient>> {
    let workflow = agent_chat_workflow(
        Arc::clone(&store),
        model(),
        ChatAgent::new(SYSTEM_PROMPT, None, &[]),
    )?;
    let host = Host::shared(store).workflow(workflow)?;
    let addr = serve(router(host.clone(), ServerOptions::default())).await?;
    let body = format!(
        r#"{{"workflow":"{}","input":"Hello there"}}"#,
        openharness_platform::WORKFLOW_NAME
    );
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        let created = post_expecting(addr, "/sessions", &body, 202).await?;
        let session = field(&created, "session").ok_or("no session id")?;
        let id: SessionId = session.parse()?;
        let len = settled(&host, &id).await?;
        let stream = Subscriber::open(addr, &format!("/sessions/{session}/events"), None).await?;
        let mut client = NativeClient {
            addr,
            session,
            stream,
            len: 0,
        };
        // Read the first turn off the stream; nothing may follow its `workflow:completed`.
        loop {
            let (seq, name) = client.stream.next().await?;
            if name == WorkflowCompleted::NAME {
                client.len = seq + 1;
                break;
            }
        }
        if client.len != len {
            return Err(format!(
                "events follow workflow:completed: the session has {len}, the stream {}",
                client.len
            )
            .into());
        }
        clients.push(client);
    }
    Ok(clients)
}

/// The session's length once its first turn is over (it may not be recorded yet when the
/// server answers).
async fn settled(host: &Host, id: &SessionId) -> Fallible<u64> {
    for _ in 0..5_000 {
        if let Ok(len) = settled_len(host, id).await {
            return Ok(len);
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Err(format!("session {id} did not settle").into())
}

/// Something that answers messages, one session per client.
trait Client: Send + 'static {
    fn turn(&mut self) -> impl Future<Output = Fallible<Turn>> + Send;
}

impl Client for PlatformClient {
    fn turn(&mut self) -> impl Future<Output = Fallible<Turn>> + Send {
        self.message()
    }
}

impl Client for NativeClient {
    fn turn(&mut self) -> impl Future<Output = Fallible<Turn>> + Send {
        self.message()
    }
}

/// What the clients did together: every turn's time to its first event, the posts retried, and
/// the turns per second.
#[derive(Default)]
struct Load {
    firsts: Vec<Duration>,
    recorded: Vec<Duration>,
    retries: u64,
    turns: u64,
    elapsed: Duration,
}

impl Load {
    fn add(&mut self, other: Load) {
        self.firsts.extend(other.firsts);
        self.recorded.extend(other.recorded);
        self.retries += other.retries;
        self.turns += other.turns;
        self.elapsed += other.elapsed;
    }

    fn per_second(&self) -> f64 {
        self.turns as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Every client at once, each taking `rounds` turns, or turns until `until` when given; the
/// clients are handed back.
async fn drive<C: Client>(
    clients: Vec<C>,
    rounds: usize,
    until: Option<Instant>,
) -> Fallible<(Vec<C>, Load)> {
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            tokio::spawn(async move {
                let mut load = Load::default();
                let mut round = 0;
                loop {
                    let more = match until {
                        Some(until) => Instant::now() < until,
                        None => round < rounds,
                    };
                    if !more {
                        break;
                    }
                    let turn = client.turn().await?;
                    load.firsts.push(turn.first);
                    load.recorded.push(turn.recorded);
                    load.retries += turn.retries;
                    load.turns += 1;
                    round += 1;
                }
                Ok::<_, BoxError>((client, load))
            })
        })
        .collect();
    let mut clients = Vec::with_capacity(tasks.len());
    let mut total = Load::default();
    for task in tasks {
        let (client, load) = task.await??;
        clients.push(client);
        total.add(load);
    }
    total.elapsed = started.elapsed();
    Ok((clients, total))
}

/// One store's rows: latency (held to the goal when `goal` says so) and throughput.
async fn store_rows<S: Store>(
    name: &str,
    counted: Arc<Counted<S>>,
    goal: bool,
) -> Fallible<Vec<Row>> {
    eprintln!("{name}: {CLIENTS} platform sessions and {CLIENTS} native ones, one turn each…");
    let store: Arc<dyn Store> = counted.clone();
    let mut platform = platform_clients(Arc::clone(&store)).await?;
    let mut native = native_clients(store).await?;

    eprintln!("{name}: {ROUNDS} messages per session each side, {CLIENTS} at once…");
    let (mut ours, mut base) = (Load::default(), Load::default());
    let (mut ours_calls, mut base_calls) = (Tally::new(), Tally::new());
    for _ in 0..BLOCKS {
        let before = counted.observer().tally();
        let (back, load) = drive(native, ROUNDS / BLOCKS, None).await?;
        native = back;
        base.add(load);
        let middle = counted.observer().tally();
        let (back, load) = drive(platform, ROUNDS / BLOCKS, None).await?;
        platform = back;
        ours.add(load);
        for (tally, added) in [
            (&mut base_calls, since(&before, &middle)),
            (&mut ours_calls, since(&middle, &counted.observer().tally())),
        ] {
            for (method, (calls, took)) in added {
                let entry = tally.entry(method).or_default();
                entry.0 += calls;
                entry.1 += took;
            }
        }
    }
    for load in [&mut ours, &mut base] {
        load.firsts.sort();
        load.recorded.sort();
    }
    let mut rows = Vec::new();
    for (label, p, held) in [("p50", 0.5, false), ("p99", 0.99, goal)] {
        let (a, b) = (percentile(&ours.firsts, p), percentile(&base.firsts, p));
        let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        rows.push(Row {
            what: format!("message → first delta {label}, {CLIENTS} ({name})"),
            measured: millis(a),
            baseline: format!("{} continue", millis(b)),
            ratio: times(ratio),
            goal: if held { "<= 1.3x" } else { "(info)" },
            met: held.then_some(ratio <= 1.3),
        });
    }
    // Where the platform's time goes: its first notification is the message recorded, the
    // event the baseline times.
    for (label, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (percentile(&ours.recorded, p), percentile(&base.firsts, p));
        rows.push(Row {
            what: format!("  of which → message.created {label}"),
            measured: millis(a),
            baseline: format!("{} continue", millis(b)),
            ratio: times(a.as_secs_f64() / b.as_secs_f64().max(1e-9)),
            goal: "(info)",
            met: None,
        });
    }
    // The store calls of a turn on each side, and their mean time.
    let methods: std::collections::BTreeSet<&str> = ours_calls
        .keys()
        .chain(base_calls.keys())
        .copied()
        .collect();
    let per_turn = |tally: &Tally, method: &str, turns: usize| {
        let (calls, took) = tally.get(method).copied().unwrap_or_default();
        let mean = took.as_secs_f64() * 1e3 / calls.max(1) as f64;
        format!("{:.2} × {mean:.2} ms", calls as f64 / turns.max(1) as f64)
    };
    for method in methods {
        rows.push(Row {
            what: format!("  store.{method} calls/turn × mean"),
            measured: per_turn(&ours_calls, method, ours.firsts.len()),
            baseline: per_turn(&base_calls, method, base.firsts.len()),
            ratio: "-".into(),
            goal: "(info)",
            met: None,
        });
    }
    rows.push(Row {
        what: format!("  turns / posts retried on 409 ({name})"),
        measured: format!("{} / {}", ours.firsts.len(), ours.retries),
        baseline: format!("{} / {}", base.firsts.len(), base.retries),
        ratio: "-".into(),
        goal: "(info)",
        met: None,
    });

    eprintln!("{name}: messages answered for {THROUGHPUT_FOR:?} each side, {CLIENTS} at once…");
    let (_, base) = drive(native, 0, Some(Instant::now() + THROUGHPUT_FOR)).await?;
    let (_, ours) = drive(platform, 0, Some(Instant::now() + THROUGHPUT_FOR)).await?;
    rows.push(Row {
        what: format!("messages answered/s, {CLIENTS} sessions ({name})"),
        measured: format!("{:.0} /s", ours.per_second()),
        baseline: format!("{:.0} /s continue", base.per_second()),
        ratio: times(ours.per_second() / base.per_second().max(1e-9)),
        goal: "(info)",
        met: None,
    });
    Ok(rows)
}

async fn suite() -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    let dir = tempfile::tempdir()?;
    let redb = Arc::new(counted(RedbStore::open(dir.path().join("store.redb"))?));
    rows.extend(store_rows("redb", redb, false).await?);
    match std::env::var("OPENHARNESS_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => {
            let schema = format!("bench_platform_{}", std::process::id());
            let measured = async {
                let postgres = Arc::new(counted(
                    PostgresStore::connect_in_schema(&url, &schema).await?,
                ));
                store_rows("PostgreSQL", postgres, true).await
            }
            .await;
            // Dropped whether the rows were measured or not, so no run leaves its schema; a
            // failed measurement is the error to report, a failed drop only a warning.
            if let Err(err) = drop_schema(&url, &schema).await {
                eprintln!("bench platform: could not drop schema {schema}: {err}");
            }
            rows.extend(measured?);
        }
        _ => eprintln!(
            "OPENHARNESS_TEST_POSTGRES is not set: the PostgreSQL rows (and the 1.3× goal) are skipped"
        ),
    }
    rows.push(Row {
        what: "failover (SIGKILL a replica mid-turn)".into(),
        measured: "cli tests/failover.rs".into(),
        baseline: "-".into(),
        ratio: "-".into(),
        goal: "see the test",
        met: None,
    });
    Ok(rows)
}

/// Drops the schema a PostgreSQL run used, with its tables.
pub(crate) async fn drop_schema(url: &str, schema: &str) -> Fallible<()> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
    let connection = tokio::spawn(connection);
    let dropped = client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"))
        .await;
    drop(client);
    let _ = connection.await;
    Ok(dropped?)
}

/// Runs the suite and prints its table; a missed goal fails the process.
pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("platform", crate::report::Missed::Fails, suite)
}
