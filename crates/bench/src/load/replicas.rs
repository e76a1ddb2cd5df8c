//! Two `serve` replicas on one PostgreSQL database behind one port, one killed mid-load: are
//! acknowledged turns lost, and how soon does the other finish the turns it cut off?
//!
//! A database of its own on the server `OPENHARNESS_TEST_POSTGRES` names (the section says it
//! skipped without it), dropped afterwards. Two `openharness-load-serve … serve` over it, and a
//! TCP proxy in this process ([`Proxy`]) that clients know as the only address: each new
//! connection goes to the next replica round robin, and to the other when one refuses. N
//! sessions post turns with the 1 s streamed model (so turns are always in flight); halfway
//! through the window replica A is SIGKILLed. A turn is **acknowledged** once its
//! `POST /api/chat` answered `200` (our server answers only once the input is durable). A
//! stream the kill cuts is a **cut-off** turn: its session stops posting and reads the
//! session's log through the proxy every 100 ms until the turn's reply is in it (the other
//! replica's recovery resumes it), and the time from the kill to then is noted. After the
//! window, every session's log is read whole: an acknowledged turn without a reply after its
//! input is **lost** (goal 0); an input recorded twice is counted too.
//!
//! LangGraph's Agent Server on PostgreSQL needs its Docker image (its PostgreSQL runtime is not
//! on PyPI); the section says so instead of a figure.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

use super::client::Connection;
use super::driver::{self, Recording};
use super::fake::Pace;
use super::sides::{self, Kind, StoreAt};
use super::{Bench, CHUNKS, STREAMED};
use crate::report::{Fallible, Row};

/// The variable naming the PostgreSQL server (a database of it is created for the run).
const POSTGRES_ENV: &str = "OPENHARNESS_TEST_POSTGRES";

/// How long a cut-off turn may take to show up finished before it counts as lost.
const SETTLE: Duration = Duration::from_secs(30);

/// A TCP proxy on 127.0.0.1: each accepted connection is piped to the next live backend.
struct Proxy {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Proxy {
    async fn start(backends: Vec<SocketAddr>) -> Fallible<Self> {
        let listener: TcpListener = super::fake::listen(0, 4096)?;
        let addr = listener.local_addr()?;
        let next = Arc::new(AtomicUsize::new(0));
        let backends = Arc::new(backends);
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let (next, backends) = (next.clone(), backends.clone());
                tokio::spawn(async move {
                    let _ = inbound.set_nodelay(true);
                    let first = next.fetch_add(1, Ordering::Relaxed);
                    for at in 0..backends.len() {
                        let backend = backends[(first + at) % backends.len()];
                        if let Ok(mut outbound) = TcpStream::connect(backend).await {
                            let _ = outbound.set_nodelay(true);
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        });
        Ok(Self { addr, task })
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A database of its own on the PostgreSQL server, dropped by [`Database::drop_now`].
struct Database {
    url: String,
    admin_url: String,
    name: String,
}

impl Database {
    async fn create(admin_url: &str) -> Fallible<Self> {
        let (admin, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        let name = format!(
            "oh_load_{}_{}",
            std::process::id(),
            super::fake::unix_ns() / 1_000_000
        );
        admin
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await?;
        Ok(Self {
            url: replace_dbname(admin_url, &name),
            admin_url: admin_url.to_owned(),
            name,
        })
    }

    async fn drop_now(self) -> Fallible<()> {
        let (admin, connection) =
            tokio_postgres::connect(&self.admin_url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ))
            .await?;
        Ok(())
    }
}

/// `url` (a URL or a `key=value` connection string) naming `database` instead.
fn replace_dbname(url: &str, database: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let (base, query) = url
            .split_once('?')
            .map_or((url, None), |(b, q)| (b, Some(q)));
        let scheme_end = base.find("://").map_or(0, |i| i + 3);
        let root = base[scheme_end..]
            .find('/')
            .map_or(base, |i| &base[..scheme_end + i]);
        match query {
            Some(query) => format!("{root}/{database}?{query}"),
            None => format!("{root}/{database}"),
        }
    } else {
        format!("{url} dbname={database}")
    }
}

/// What one session's loop saw.
#[derive(Default)]
struct SessionLog {
    session: String,
    /// Turns answered `200`.
    acknowledged: Vec<u64>,
    /// Turns that streamed to their end.
    completed: u64,
    /// Cut-off turns: (turn, when its reply was seen in the log; none if never).
    cut: Vec<(u64, Option<Instant>)>,
    errors: Vec<String>,
}

/// The section: runs, then rows.
pub(super) async fn replicas(bench: &mut Bench) -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    let Ok(admin) = std::env::var(POSTGRES_ENV) else {
        eprintln!("bench load: replicas skipped: {POSTGRES_ENV} is not set");
        return Ok(rows);
    };
    let database = Database::create(&admin).await?;
    let outcome = run(bench, &database.url).await;
    if let Err(err) = database.drop_now().await {
        eprintln!("bench load: the database was not dropped: {err}");
    }
    let outcome = outcome?;
    let n = bench.options.replica_sessions;
    let acknowledged: usize = outcome.logs.iter().map(|l| l.acknowledged.len()).sum();
    let completed: u64 = outcome.logs.iter().map(|l| l.completed).sum();
    let cut: Vec<&(u64, Option<Instant>)> = outcome.logs.iter().flat_map(|l| &l.cut).collect();
    let slowest = cut
        .iter()
        .map(|(_, done)| done.map(|at| at.saturating_duration_since(outcome.killed)))
        .collect::<Option<Vec<_>>>()
        .map(|times| times.into_iter().max().unwrap_or_default());
    let errors: usize = outcome.logs.iter().map(|l| l.errors.len()).sum();
    eprintln!(
        "bench load: replicas: {acknowledged} acknowledged, {completed} streamed to the end, {} cut off, {} lost, {} recorded twice, {errors} failed before acknowledgement; slowest cut-off turn finished {} after the kill",
        cut.len(),
        outcome.lost,
        outcome.duplicated,
        slowest.map_or("never".to_owned(), |d| format!("{:.2} s", d.as_secs_f64()))
    );
    for log in outcome.logs.iter().filter(|l| !l.errors.is_empty()).take(3) {
        eprintln!("bench load:   {}: {}", log.session, log.errors[0]);
    }
    rows.push(Row {
        what: format!("turns/s, 2 PostgreSQL replicas, 1 s model, N={n}"),
        measured: format!("{:.0} /s", outcome.turns_per_s),
        baseline: format!("{errors} failed unacked"),
        ratio: "-".to_owned(),
        goal: "(info)",
        met: None,
    });
    rows.push(Row {
        what: "acknowledged turns lost, a replica killed".to_owned(),
        measured: format!("{} lost", outcome.lost),
        baseline: format!("{acknowledged} acknowledged"),
        ratio: format!("{} twice", outcome.duplicated),
        goal: "0",
        met: Some(outcome.lost == 0),
    });
    rows.push(Row {
        what: "cut-off turns finished by the other".to_owned(),
        measured: slowest.map_or("some never".to_owned(), |d| {
            format!("{:.2} s slowest", d.as_secs_f64())
        }),
        baseline: format!("{} cut off", cut.len()),
        ratio: "-".to_owned(),
        goal: "<= 5 s",
        met: Some(slowest.is_some_and(|d| d <= Duration::from_secs(5)) && !cut.is_empty()),
    });
    rows.push(Row {
        what: "LangGraph Agent Server on PostgreSQL".to_owned(),
        measured: "-".to_owned(),
        baseline: "not run: needs Docker".to_owned(),
        ratio: "-".to_owned(),
        goal: "(info)",
        met: None,
    });
    Ok(rows)
}

/// What a failover run found.
struct Outcome {
    logs: Vec<SessionLog>,
    killed: Instant,
    turns_per_s: f64,
    lost: usize,
    duplicated: usize,
}

async fn run(bench: &mut Bench, url: &str) -> Fallible<Outcome> {
    bench.fake.pace(Pace::streamed(STREAMED, CHUNKS)).await?;
    let store = StoreAt::Postgres(url.to_owned());
    let dir = bench.dir.join("replicas");
    std::fs::create_dir_all(&dir)?;
    let a = sides::start_ours(&bench.ours, &store, &bench.fake.url(), &dir.join("a.log")).await?;
    let mut b =
        sides::start_ours(&bench.ours, &store, &bench.fake.url(), &dir.join("b.log")).await?;
    let proxy = Proxy::start(vec![a.addr, b.addr]).await?;
    let addr = proxy.addr;
    let n = bench.options.replica_sessions;

    // Sessions, each with one turn, spread over both replicas by the proxy.
    let mut opening = Vec::with_capacity(n);
    for _ in 0..n {
        opening.push(tokio::spawn(async move {
            let mut connection = Connection::new(addr);
            let session = driver::open_session(Kind::Ours, &mut connection).await?;
            driver::turn(
                Kind::Ours,
                &mut connection,
                &session,
                0,
                &Recording::off(),
                &mut Vec::new(),
            )
            .await?;
            Fallible::Ok((connection, session))
        }));
    }
    let mut sessions = Vec::with_capacity(n);
    for opened in opening {
        sessions.push(opened.await??);
    }

    let window = bench.options.window;
    let started = Instant::now();
    let closes = started + window;
    let kill_at = started + window / 2;
    let killed = Arc::new(Mutex::new(None::<Instant>));
    let killer = {
        let killed = killed.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(kill_at.into()).await;
            let at = Instant::now();
            drop(a);
            *killed.lock().unwrap_or_else(PoisonError::into_inner) = Some(at);
            eprintln!("bench load: replicas: replica A killed (SIGKILL)");
        })
    };
    let mut loops = Vec::with_capacity(n);
    for (mut connection, session) in sessions {
        loops.push(tokio::spawn(async move {
            let mut log = SessionLog {
                session: session.clone(),
                acknowledged: vec![0],
                ..SessionLog::default()
            };
            let mut k = 1;
            while Instant::now() < closes {
                let outcome = driver::turn(
                    Kind::Ours,
                    &mut connection,
                    &session,
                    k,
                    &Recording::off(),
                    &mut Vec::new(),
                )
                .await;
                match outcome {
                    Ok(_) => {
                        log.acknowledged.push(k);
                        log.completed += 1;
                    }
                    Err(failed) if failed.acknowledged => {
                        connection.close();
                        log.acknowledged.push(k);
                        let done = wait_for_reply(addr, &session, k).await;
                        log.cut.push((k, done));
                    }
                    Err(failed) => {
                        connection.close();
                        log.errors.push(failed.why);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
                k += 1;
            }
            log
        }));
    }
    let mut logs = Vec::with_capacity(n);
    for looped in loops {
        logs.push(looped.await?);
    }
    killer.await?;
    let killed = killed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .ok_or("replica A was not killed")?;
    let turns_per_s = logs.iter().map(|l| l.completed).sum::<u64>() as f64 / window.as_secs_f64();

    // Every acknowledged turn must have its reply in the log.
    let (mut lost, mut duplicated) = (0, 0);
    for log in &logs {
        let turns = read_turns(addr, &log.session).await?;
        for k in &log.acknowledged {
            match turns.get(k) {
                Some(&(inputs, true)) => duplicated += usize::from(inputs > 1),
                Some(&(inputs, false)) => {
                    lost += 1;
                    duplicated += usize::from(inputs > 1);
                    eprintln!(
                        "bench load: replicas: session {} turn {k}: no reply after its input",
                        log.session
                    );
                }
                None => {
                    lost += 1;
                    eprintln!(
                        "bench load: replicas: session {} turn {k}: its input is not in the log",
                        log.session
                    );
                }
            }
        }
    }
    b.check_alive()?;
    drop(proxy);
    drop(b);
    Ok(Outcome {
        logs,
        killed,
        turns_per_s,
        lost,
        duplicated,
    })
}

/// Reads `session`'s log through the proxy every 100 ms until turn `k` has its reply; when it
/// was seen (none within [`SETTLE`]).
async fn wait_for_reply(addr: SocketAddr, session: &str, k: u64) -> Option<Instant> {
    let deadline = Instant::now() + SETTLE;
    while Instant::now() < deadline {
        if let Ok(turns) = read_turns(addr, session).await
            && turns.get(&k).is_some_and(|&(_, replied)| replied)
        {
            return Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Each turn of `session`'s log (by the number in its input's text): how many times its
/// input was recorded, and whether a reply came after it (before the next input).
async fn read_turns(addr: SocketAddr, session: &str) -> Fallible<HashMap<u64, (usize, bool)>> {
    let mut connection = Connection::new(addr);
    let mut turns: HashMap<u64, (usize, bool)> = HashMap::new();
    let mut queued = std::collections::HashSet::new();
    let mut current = None;
    let mut after: Option<u64> = None;
    loop {
        let path = match after {
            Some(after) => format!("/sessions/{session}/events?limit=1000&after={after}"),
            None => format!("/sessions/{session}/events?limit=1000"),
        };
        let answer = connection.send("GET", &path, "", None).await?;
        let status = answer.status;
        let body = answer.text().await?;
        if status != 200 {
            return Err(format!("GET {path}: {status} {body}").into());
        }
        let page: Value = serde_json::from_str(&body)?;
        for event in page["events"].as_array().into_iter().flatten() {
            match event["name"].as_str() {
                Some(name @ ("user:input" | "input:queued")) => {
                    let text = event["payload"]["text"].as_str().unwrap_or("");
                    current = text
                        .strip_prefix("Hello, turn ")
                        .and_then(|k| k.parse::<u64>().ok());
                    // A queued input is answered by a later turn's `user:input` caused by it:
                    // the same input, not a second one.
                    let answers_queued = name == "user:input"
                        && event["causedBy"]
                            .as_str()
                            .is_some_and(|cause| queued.contains(cause));
                    if name == "input:queued"
                        && let Some(id) = event["id"].as_str()
                    {
                        queued.insert(id.to_owned());
                    }
                    if let Some(k) = current.filter(|_| !answers_queued) {
                        turns.entry(k).or_insert((0, false)).0 += 1;
                    }
                }
                Some("assistant:replied") => {
                    if let Some(entry) = current.and_then(|k| turns.get_mut(&k)) {
                        entry.1 = true;
                    }
                }
                _ => {}
            }
        }
        match page["nextAfter"].as_u64() {
            Some(next) => after = Some(next),
            None => return Ok(turns),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_named_in_either_spelling() {
        assert_eq!(
            replace_dbname("postgres://postgres@127.0.0.1:5432/test", "oh_x"),
            "postgres://postgres@127.0.0.1:5432/oh_x"
        );
        assert_eq!(
            replace_dbname("postgres://u@h/test?sslmode=disable", "oh_x"),
            "postgres://u@h/oh_x?sslmode=disable"
        );
        assert_eq!(
            replace_dbname("host=/tmp user=postgres", "oh_x"),
            "host=/tmp user=postgres dbname=oh_x"
        );
    }
}
