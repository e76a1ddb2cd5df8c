//! `cargo xtask bench load`: `openharness serve` under load, against LangGraph's Agent Server
//! (`langgraph dev`, its in-memory runtime from PyPI) in the same run, both serving a
//! one-agent chat against the same fake OpenAI-compatible model (issue 60).
//!
//! Processes, all on 127.0.0.1 and each its own (so each one's CPU, memory and descriptors are
//! its own): the fake model ([`fake`], `openharness-bench load-fake`); our server ([`serve`],
//! `openharness-load-serve --store <redb> serve`); LangGraph's ([`langgraph`]); and this
//! process, the driver ([`driver`]), with a raw keep-alive HTTP/1.1 client ([`client`]). A
//! server is started fresh for every run and the sides run one after the other, never
//! together. Every figure's CPU and memory come from `/proc` ([`usage`]).
//!
//! The sections (`--rows` picks some; all by default):
//!
//! - **saturation**: the model answers at once (20 chunks, no delay); N sessions post turns
//!   back to back for the window (N swept, `--sessions`). Ours posts `POST /api/chat` (the AI
//!   SDK stream of the turn), LangGraph `POST /threads/{id}/runs/stream` (`messages-tuple`).
//!   Turns/s, first word and whole turn p50/p99, errors, server CPU per turn, RSS and fds.
//!   Each (side, N) runs `--rounds` times, sides alternating; the round with the median
//!   turns/s is shown. The headline: our turns/s at the largest N whose turn p99 is no worse
//!   than LangGraph's p99 at its best N, over LangGraph's best turns/s (goal >= 10x).
//! - **streamed**: the model streams its 20 chunks over 1 s (first at 50 ms); N concurrent
//!   sessions (1000 by default). The model's own first word, read by the driver straight from
//!   the fake at the same concurrency, is the baseline: goal, our first-word p99 <= 1.2x the
//!   model's. Each first word is also split in two: request → the model writing it (the
//!   server's work before the model call, plus the model's 50 ms) and model → poster (the
//!   word's way through the store and the stream). Then the same with one follower per
//!   session (`GET /sessions/{id}/events`; LangGraph's `GET /threads/{id}/stream`): how far
//!   behind the first reader each follower reads each word.
//! - **busy**: one session posting turns with the 1 s model, 1000 followers of it: follower
//!   lag p99 (behind the first reader of each word; goal <= 50 ms), and model → follower.
//! - **idle**: a fresh server; S sessions of one turn each, then S more: RSS and fds per idle
//!   session (the slope between the two); then F idle followers over those sessions, half and
//!   then all: RSS and fds per idle stream (goal: 10 000 streams at <= 50 KB each).
//! - **replicas** ([`replicas`]): two `serve` on one PostgreSQL database behind one port (a
//!   proxy here), N sessions (100) with the 1 s model, one replica SIGKILLed halfway:
//!   acknowledged turns lost (goal 0), and the slowest cut-off turn's finish after the kill
//!   (goal <= 5 s). Needs `OPENHARNESS_TEST_POSTGRES`.
//!
//! Options: `--quick` (short windows, small N: a smoke run), `--seconds S` (the window),
//! `--rounds R`, `--sessions 10,100,1000`, `--streamed-sessions N`, `--spread-ms M` (the
//! streamed sessions start their loops evenly over M ms instead of all at once),
//! `--busy-followers F`,
//! `--idle-sessions S`, `--idle-followers F`, `--replica-sessions N`,
//! `--rows saturation,streamed,busy,idle,replicas`,
//! `--no-langgraph`, `--store memory` (our server on `--store memory:` instead of a redb
//! file: the server's own cost, with no store work or disk in it; the replicas keep
//! PostgreSQL); `OPENHARNESS_LOAD_OURS_PRELOAD=lib.so` preloads a library into our
//! server only (an experiment: a candidate fix tried from outside). The suite never fails on a missed goal ([`Missed::Shown`]): on a shared
//! 2-core box the figures are noisy; read them with the machine's load printed beside them.

mod client;
mod driver;
mod fake;
mod langgraph;
mod replicas;
pub(crate) mod serve;
mod sides;
mod usage;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use driver::{Figures, Plan, Watched};
use fake::Pace;
use sides::{Fake, Kind, Server, StoreAt};

use crate::http::{millis, percentile};
use crate::report::{Fallible, Row, times};

/// Words per model answer.
const CHUNKS: u64 = 20;
/// The streamed model's whole answer.
const STREAMED: Duration = Duration::from_secs(1);

/// The options, for `--help` and a wrong one (the module docs say what each does).
const USAGE: &str = "usage: bench load [--quick] [--seconds S] [--rounds R] [--sessions 10,100,1000] \
[--streamed-sessions N] [--spread-ms M] [--busy-followers F] [--idle-sessions S] \
[--idle-followers F] [--replica-sessions N] [--rows saturation,streamed,busy,idle,replicas] \
[--no-langgraph] [--store redb|memory]";

/// What to run, from the command line.
#[derive(Debug, Clone)]
struct Options {
    window: Duration,
    rounds: usize,
    sessions: Vec<usize>,
    streamed_sessions: usize,
    /// Over how long the streamed sessions' loops start (`--spread-ms`; 0: all at once).
    streamed_spread: Duration,
    busy_followers: usize,
    idle_sessions: usize,
    idle_followers: usize,
    replica_sessions: usize,
    rows: Vec<String>,
    langgraph: bool,
    /// Our server on a memory store instead of a redb file (`--store memory`).
    memory: bool,
}

impl Options {
    fn full() -> Self {
        Self {
            window: Duration::from_secs(20),
            rounds: 3,
            sessions: vec![1, 10, 100, 1000],
            streamed_sessions: 1000,
            streamed_spread: Duration::ZERO,
            busy_followers: 1000,
            idle_sessions: 1000,
            idle_followers: 10_000,
            replica_sessions: 100,
            rows: ["saturation", "streamed", "busy", "idle", "replicas"]
                .map(str::to_owned)
                .to_vec(),
            langgraph: true,
            memory: false,
        }
    }

    fn quick() -> Self {
        Self {
            window: Duration::from_secs(5),
            rounds: 1,
            sessions: vec![10, 100],
            streamed_sessions: 100,
            busy_followers: 100,
            idle_sessions: 100,
            idle_followers: 1000,
            replica_sessions: 20,
            ..Self::full()
        }
    }

    fn parse(args: &[String]) -> Result<Self, String> {
        let mut options = if args.iter().any(|a| a == "--quick") {
            Self::quick()
        } else {
            Self::full()
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let mut value = || {
                args.next()
                    .cloned()
                    .ok_or_else(|| format!("{flag} needs a value"))
            };
            let number = |text: String| {
                text.parse::<usize>()
                    .map_err(|_| format!("{flag} {text}: not a number"))
            };
            match flag.as_str() {
                "--quick" => {}
                "--no-langgraph" => options.langgraph = false,
                "--seconds" => options.window = Duration::from_secs(number(value()?)? as u64),
                "--rounds" => options.rounds = number(value()?)?.max(1),
                "--sessions" => {
                    options.sessions = value()?
                        .split(',')
                        .map(|n| number(n.to_owned()))
                        .collect::<Result<_, _>>()?;
                }
                "--streamed-sessions" => options.streamed_sessions = number(value()?)?,
                "--spread-ms" => {
                    options.streamed_spread = Duration::from_millis(number(value()?)? as u64);
                }
                "--busy-followers" => options.busy_followers = number(value()?)?,
                "--idle-sessions" => options.idle_sessions = number(value()?)?.max(1),
                "--idle-followers" => options.idle_followers = number(value()?)?,
                "--replica-sessions" => options.replica_sessions = number(value()?)?.max(1),
                "--rows" => options.rows = value()?.split(',').map(str::to_owned).collect(),
                "--store" => match value()?.as_str() {
                    "memory" => options.memory = true,
                    "redb" => options.memory = false,
                    other => return Err(format!("--store {other}: not one of redb, memory")),
                },
                other => return Err(format!("unknown option {other}\n{USAGE}")),
            }
        }
        Ok(options)
    }

    fn wants(&self, rows: &str) -> bool {
        self.rows.iter().any(|r| r == rows)
    }
}

/// `openharness-bench load [OPTIONS]`.
pub(crate) fn run(args: &[String]) -> ExitCode {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(err) => {
            eprintln!("bench load: {err}");
            return ExitCode::from(2);
        }
    };
    crate::report::run_suite("load", crate::report::Missed::Shown, || suite(options))
}

/// `openharness-bench load-fake …`: the fake model's process.
pub(crate) fn fake_main(args: &[String]) -> ExitCode {
    fake::main(args)
}

/// Everything a section needs: the fake, where to put files, the executables.
struct Bench {
    fake: Fake,
    /// `target/load/`: stores, logs, LangGraph's project.
    dir: PathBuf,
    ours: PathBuf,
    venv: Option<PathBuf>,
    ticks: f64,
    options: Options,
    /// Runs so far, to name each one's folder.
    runs: usize,
}

async fn suite(options: Options) -> Fallible<Vec<Row>> {
    let exe = std::env::current_exe()?;
    let ours = exe.with_file_name(format!(
        "openharness-load-serve{}",
        std::env::consts::EXE_SUFFIX
    ));
    if !ours.exists() {
        return Err(format!(
            "{} is missing: build with `cargo build --release -p openharness-bench --bins`",
            ours.display()
        )
        .into());
    }
    // target/release/openharness-bench → target/load/
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the executable has no target folder")?
        .join("load");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let venv = if options.langgraph {
        match tokio::task::spawn_blocking(langgraph::venv).await? {
            Ok(venv) => Some(venv),
            Err(err) => {
                eprintln!("bench load: no LangGraph side ({err}); ours only");
                None
            }
        }
    } else {
        None
    };
    let fake = Fake::start()?;
    let mut bench = Bench {
        fake,
        dir,
        ours,
        venv,
        ticks: usage::ticks_per_second(),
        options,
        runs: 0,
    };
    header(&mut bench).await?;
    let mut rows = Vec::new();
    if bench.options.wants("saturation") {
        rows.extend(saturation(&mut bench).await?);
    }
    if bench.options.wants("streamed") {
        rows.extend(streamed(&mut bench).await?);
    }
    if bench.options.wants("busy") {
        rows.extend(busy(&mut bench).await?);
    }
    if bench.options.wants("idle") {
        rows.extend(idle(&mut bench).await?);
    }
    if bench.options.wants("replicas") {
        rows.extend(replicas::replicas(&mut bench).await?);
    }
    let ours = if bench.options.memory {
        "on a memory store (`--store memory`: nothing durable; the replicas on PostgreSQL)"
    } else {
        "on redb, every event durable"
    };
    println!(
        "ratio: ours over LangGraph for turns/s; ours (or LangGraph) over the baseline for times and sizes. \
         LangGraph is `langgraph dev` (in-memory, pickled to disk every 10 s, a 0.5 s queue poll; \
         its PostgreSQL runtime needs Docker, not available here); ours is `serve` {ours}."
    );
    Ok(rows)
}

/// Prints the machine, the limits, the versions and the fake's paces.
async fn header(bench: &mut Bench) -> Fallible<()> {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let rev = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    println!(
        "machine: {cores} cores, load average {}, ulimit -n {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        usage::open_files_limit().map_or("?".to_owned(), |n| n.to_string())
    );
    let store = if bench.options.memory {
        "EXPERIMENT: a memory store (`--store memory:`: no store work on disk, nothing durable)"
    } else {
        "redb store"
    };
    println!("ours: openharness serve (openharness-load-serve) at {rev}, {store}");
    if let Some(preload) = std::env::var_os(sides::PRELOAD_VAR) {
        println!(
            "ours: EXPERIMENT: {} preloaded into our server",
            std::path::Path::new(&preload).display()
        );
    }
    println!(
        "model: the fake at {}; saturation: {}; streamed: {}",
        bench.fake.url(),
        Pace::instant(CHUNKS).describe(),
        Pace::streamed(STREAMED, CHUNKS).describe()
    );
    if let Some(venv) = bench.venv.clone() {
        let server = start(bench, Kind::LangGraph, 1).await?;
        let mut connection = client::Connection::new(server.addr);
        let info = connection
            .send("GET", "/info", "", None)
            .await?
            .text()
            .await?;
        let info: serde_json::Value = serde_json::from_str(&info).unwrap_or_default();
        println!(
            "LangGraph: langgraph dev from {}: /info version {}, langgraph {}; pins: {}",
            venv.display(),
            info["version"],
            info["langgraph_py_version"],
            langgraph::pins()
        );
        drop(server);
    } else {
        println!("LangGraph: not run");
    }
    Ok(())
}

/// Starts a fresh server of `kind` for up to `concurrency` concurrent turns.
async fn start(bench: &mut Bench, kind: Kind, concurrency: usize) -> Fallible<Server> {
    bench.runs += 1;
    let dir = bench
        .dir
        .join(format!("run-{:03}-{}", bench.runs, kind.name()));
    std::fs::create_dir_all(&dir)?;
    match kind {
        Kind::Ours => {
            let store = if bench.options.memory {
                StoreAt::Memory
            } else {
                StoreAt::Redb(dir.join("store.redb"))
            };
            sides::start_ours(
                &bench.ours,
                &store,
                &bench.fake.url(),
                &dir.join("server.log"),
            )
            .await
        }
        Kind::LangGraph => {
            let venv = bench.venv.as_ref().ok_or("no LangGraph side")?;
            sides::start_langgraph(venv, &dir, &bench.fake.url(), concurrency).await
        }
        Kind::Model => Ok(Server::model(&bench.fake)),
    }
}

/// The sides to run: ours, and LangGraph when it can run.
fn sides(bench: &Bench) -> Vec<Kind> {
    let mut sides = vec![Kind::Ours];
    if bench.venv.is_some() {
        sides.push(Kind::LangGraph);
    }
    sides
}

/// One run of `plan` on a fresh server of `kind`, at `pace`.
async fn one(
    bench: &mut Bench,
    kind: Kind,
    plan: Plan,
    pace: Pace,
    what: &str,
) -> Fallible<Figures> {
    bench.fake.pace(pace).await?;
    let mut server = start(bench, kind, plan.sessions).await?;
    let watched = Watched {
        server: server.pid(),
        fake: bench.fake.pid(),
    };
    let figures = driver::run(kind, server.addr, plan, watched).await;
    server.check_alive()?;
    let figures = figures?;
    say(bench, kind, what, &figures);
    Ok(figures)
}

/// One line on stderr with everything a run measured.
fn say(bench: &Bench, kind: Kind, what: &str, f: &Figures) {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut line = format!(
        "bench load: {:<9} {what}: {:.0} turns/s, first word p50 {} p99 {}, turn p50 {} p99 {}, errors {}",
        kind.name(),
        f.turns_per_s(),
        millis(percentile(&f.first, 0.5)),
        millis(percentile(&f.first, 0.99)),
        millis(percentile(&f.turn, 0.5)),
        millis(percentile(&f.turn, 0.99)),
        f.errors,
    );
    if !f.first_to_model.is_empty() {
        line.push_str(&format!(
            " (request->model wrote it p50 {} p99 {}, model->poster p50 {} p99 {})",
            millis(percentile(&f.first_to_model, 0.5)),
            millis(percentile(&f.first_to_model, 0.99)),
            millis(percentile(&f.first_from_model, 0.5)),
            millis(percentile(&f.first_from_model, 0.99)),
        ));
    }
    if !f.behind_first.is_empty() || f.follower_errors > 0 {
        line.push_str(&format!(
            ", followers: behind first p99 {}, model->follower p99 {} (model->poster p99 {}), follower errors {}",
            millis(percentile(&f.behind_first, 0.99)),
            millis(percentile(&f.model_to_follower, 0.99)),
            millis(percentile(&f.model_to_poster, 0.99)),
            f.follower_errors
        ));
    }
    line.push_str(&format!(
        "; server {:.2} cores, {:.2} ms CPU/turn, RSS {} MB, {} fds; fake {:.2} cores; driver {:.2} cores; load {}",
        Figures::cores(f.server, f.window, bench.ticks),
        f.cpu_ms_per_turn(bench.ticks),
        f.server.1.rss / 1_000_000,
        f.server.1.fds,
        Figures::cores(f.fake, f.window, bench.ticks),
        Figures::cores(f.driver, f.window, bench.ticks),
        load.split_whitespace().next().unwrap_or("?"),
    ));
    eprintln!("{line}");
    for sample in &f.error_samples {
        eprintln!("bench load:   error: {sample}");
    }
}

/// A run's turns/s and turn p99, as a cell.
fn rate_cell(f: &Figures) -> String {
    format!(
        "{:.0} /s (p99 {:.0} ms)",
        f.turns_per_s(),
        percentile(&f.turn, 0.99).as_secs_f64() * 1e3
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Saturation: the N sweep at latency 0, sides alternating, `rounds` times.
async fn saturation(bench: &mut Bench) -> Fallible<Vec<Row>> {
    let pace = Pace::instant(CHUNKS);
    let sides = sides(bench);
    let mut best: Vec<(Kind, usize, Figures)> = Vec::new();
    for &n in &bench.options.sessions.clone() {
        let mut runs: Vec<Vec<Figures>> = sides.iter().map(|_| Vec::new()).collect();
        for round in 0..bench.options.rounds {
            for at in 0..sides.len() {
                // Alternate which side goes first, round by round.
                let at = (at + round) % sides.len();
                let plan = Plan {
                    sessions: n,
                    followers: 0,
                    window: bench.options.window,
                    chunks: CHUNKS,
                    spread: Duration::ZERO,
                };
                let what = format!("saturation N={n} round {}", round + 1);
                runs[at].push(one(bench, sides[at], plan, pace, &what).await?);
            }
        }
        for (at, mut figures) in runs.into_iter().enumerate() {
            figures.sort_by(|a, b| a.turns_per_s().total_cmp(&b.turns_per_s()));
            let median = figures.swap_remove(figures.len() / 2);
            best.push((sides[at], n, median));
        }
    }
    let of = |kind: Kind| best.iter().filter(move |(k, _, _)| *k == kind);
    let mut rows = Vec::new();
    for (_, n, ours) in of(Kind::Ours) {
        let theirs = of(Kind::LangGraph)
            .find(|(_, m, _)| m == n)
            .map(|(_, _, f)| f);
        rows.push(Row {
            what: format!("turns/s, N={n}, model latency 0"),
            measured: rate_cell(ours),
            baseline: theirs.map_or("(no LangGraph)".to_owned(), rate_cell),
            ratio: theirs.map_or("-".to_owned(), |t| {
                times(ours.turns_per_s() / t.turns_per_s().max(1e-9))
            }),
            goal: "(info)",
            met: None,
        });
        rows.push(Row {
            what: format!("first word p50 / p99, N={n}, latency 0"),
            measured: format!(
                "{:.1} / {:.1} ms",
                ms(percentile(&ours.first, 0.5)),
                ms(percentile(&ours.first, 0.99))
            ),
            baseline: theirs.map_or("-".to_owned(), |t| {
                format!(
                    "{:.0} / {:.0} ms",
                    ms(percentile(&t.first, 0.5)),
                    ms(percentile(&t.first, 0.99))
                )
            }),
            ratio: theirs.map_or("-".to_owned(), |t| {
                times(ms(percentile(&ours.first, 0.99)) / ms(percentile(&t.first, 0.99)).max(1e-9))
            }),
            goal: "(info)",
            met: None,
        });
        rows.push(Row {
            what: format!("server CPU per turn, N={n}"),
            measured: format!("{:.2} ms", ours.cpu_ms_per_turn(bench.ticks)),
            baseline: theirs.map_or("-".to_owned(), |t| {
                format!("{:.2} ms", t.cpu_ms_per_turn(bench.ticks))
            }),
            ratio: theirs.map_or("-".to_owned(), |t| {
                times(ours.cpu_ms_per_turn(bench.ticks) / t.cpu_ms_per_turn(bench.ticks).max(1e-9))
            }),
            goal: "(info)",
            met: None,
        });
        rows.push(Row {
            what: format!("errors, N={n}"),
            measured: ours.errors.to_string(),
            baseline: theirs.map_or("-".to_owned(), |t| t.errors.to_string()),
            ratio: "-".to_owned(),
            goal: "(info)",
            met: None,
        });
    }
    // The headline: LangGraph at its best; ours at the most turns/s with a turn p99 no worse.
    let theirs_best =
        of(Kind::LangGraph).max_by(|a, b| a.2.turns_per_s().total_cmp(&b.2.turns_per_s()));
    if let Some((_, their_n, theirs)) = theirs_best {
        let their_p99 = percentile(&theirs.turn, 0.99);
        let ours_at = of(Kind::Ours)
            .filter(|(_, _, f)| percentile(&f.turn, 0.99) <= their_p99)
            .max_by(|a, b| a.2.turns_per_s().total_cmp(&b.2.turns_per_s()));
        let ratio = ours_at.map(|(_, _, f)| f.turns_per_s() / theirs.turns_per_s().max(1e-9));
        rows.push(Row {
            what: "HEADLINE turns/s at saturation, equal p99".to_owned(),
            measured: ours_at.map_or("(none at that p99)".to_owned(), |(_, n, f)| {
                format!("{} N={n}", rate_cell(f))
            }),
            baseline: format!("{} N={their_n}", rate_cell(theirs)),
            ratio: ratio.map_or("-".to_owned(), |r| format!("{r:.1}x")),
            goal: ">= 10x",
            met: Some(ratio.is_some_and(|r| r >= 10.0)),
        });
    }
    Ok(rows)
}

/// The 1 s streamed model at N concurrent sessions: the model's own first word, ours,
/// LangGraph's; then with one follower per session.
async fn streamed(bench: &mut Bench) -> Fallible<Vec<Row>> {
    let pace = Pace::streamed(STREAMED, CHUNKS);
    let n = bench.options.streamed_sessions;
    let plan = Plan {
        sessions: n,
        followers: 0,
        window: bench.options.window,
        chunks: CHUNKS,
        spread: bench.options.streamed_spread,
    };
    let spread = match plan.spread {
        Duration::ZERO => String::new(),
        spread => format!(", starts over {} ms", spread.as_millis()),
    };
    let what = format!("streamed 1 s, N={n}{spread}");
    let model = one(bench, Kind::Model, plan, pace, &what).await?;
    let mut figures = Vec::new();
    for kind in sides(bench) {
        figures.push((kind, one(bench, kind, plan, pace, &what).await?));
    }
    let model_p99 = percentile(&model.first, 0.99);
    let mut rows = Vec::new();
    for (kind, f) in &figures {
        let p99 = percentile(&f.first, 0.99);
        let ratio = ms(p99) / ms(model_p99).max(1e-9);
        rows.push(Row {
            what: format!("first word p99, 1 s model, N={n}{spread} ({})", kind.name()),
            measured: format!(
                "{:.1} ms (p50 {:.1})",
                ms(p99),
                ms(percentile(&f.first, 0.5))
            ),
            baseline: format!("{:.1} ms (model's own)", ms(model_p99)),
            ratio: times(ratio),
            goal: if *kind == Kind::Ours {
                "<= 1.2x"
            } else {
                "(info)"
            },
            met: (*kind == Kind::Ours).then_some(ratio <= 1.2),
        });
        rows.push(Row {
            what: format!("turns/s, 1 s model, N={n}{spread} ({})", kind.name()),
            measured: rate_cell(f),
            baseline: format!("{} (model)", rate_cell(&model)),
            ratio: times(f.turns_per_s() / model.turns_per_s().max(1e-9)),
            goal: "(info)",
            met: None,
        });
    }
    // One follower per session.
    let followed = Plan {
        followers: 1,
        ..plan
    };
    let what = format!("streamed 1 s, N={n}{spread}, 1 follower each");
    let mut lags = Vec::new();
    for kind in sides(bench) {
        lags.push((kind, one(bench, kind, followed, pace, &what).await?));
    }
    rows.extend(lag_rows(
        &lags,
        &format!("N={n} sessions x 1 follower"),
        None,
    ));
    Ok(rows)
}

/// Rows of follower lag, ours against LangGraph's.
fn lag_rows(runs: &[(Kind, Figures)], what: &str, goal: Option<f64>) -> Vec<Row> {
    let ours = runs.iter().find(|(k, _)| *k == Kind::Ours).map(|(_, f)| f);
    let theirs = runs
        .iter()
        .find(|(k, _)| *k == Kind::LangGraph)
        .map(|(_, f)| f);
    let Some(ours) = ours else {
        return Vec::new();
    };
    let p99 = |f: &Figures| ms(percentile(&f.behind_first, 0.99));
    let model = |f: &Figures| ms(percentile(&f.model_to_follower, 0.99));
    vec![
        Row {
            what: format!("follower lag p99 behind first, {what}"),
            measured: format!("{:.1} ms", p99(ours)),
            // A side whose followers read no word has no lag to compare with.
            baseline: theirs.map_or("-".to_owned(), |t| {
                if t.behind_first.is_empty() {
                    "- (no word read)".to_owned()
                } else {
                    format!("{:.1} ms", p99(t))
                }
            }),
            ratio: theirs
                .filter(|t| !t.behind_first.is_empty())
                .map_or("-".to_owned(), |t| times(p99(ours) / p99(t).max(1e-9))),
            goal: if goal.is_some() { "<= 50 ms" } else { "(info)" },
            met: goal.map(|limit| p99(ours) <= limit && ours.follower_errors == 0),
        },
        Row {
            what: format!("model->follower p99, {what}"),
            measured: format!("{:.1} ms ({} err)", model(ours), ours.follower_errors),
            baseline: theirs.map_or("-".to_owned(), |t| {
                format!("{:.1} ms ({} err)", model(t), t.follower_errors)
            }),
            ratio: theirs.map_or("-".to_owned(), |t| times(model(ours) / model(t).max(1e-9))),
            goal: "(info)",
            met: None,
        },
    ]
}

/// One busy session (the 1 s model, turns back to back) with many followers.
async fn busy(bench: &mut Bench) -> Fallible<Vec<Row>> {
    let pace = Pace::streamed(STREAMED, CHUNKS);
    let followers = bench.options.busy_followers;
    check_fds(followers + 100)?;
    let plan = Plan {
        sessions: 1,
        followers,
        window: bench.options.window,
        chunks: CHUNKS,
        spread: Duration::ZERO,
    };
    let what = format!("busy session, {followers} followers");
    let mut runs = Vec::new();
    for kind in sides(bench) {
        runs.push((kind, one(bench, kind, plan, pace, &what).await?));
    }
    Ok(lag_rows(
        &runs,
        &format!("1 busy session x {followers}"),
        Some(50.0),
    ))
}

/// Fails clearly when this process may not open `needed` files.
fn check_fds(needed: usize) -> Fallible<()> {
    match usage::open_files_limit() {
        Some(limit) if (limit as usize) < needed => Err(format!(
            "ulimit -n is {limit}; this needs {needed} (raise it, or ask for fewer followers)"
        )
        .into()),
        _ => Ok(()),
    }
}

/// What an idle measurement found on one side.
struct Idle {
    per_session: f64,
    fds_per_session: f64,
    per_stream: f64,
    /// Per stream joining a session already followed (when the streams outnumber the sessions
    /// twice over).
    per_joining_stream: Option<f64>,
    fds_per_stream: f64,
    /// The server's CPU while it holds the idle streams, in cores.
    held_cores: f64,
    streams: usize,
    stream_errors: String,
}

/// Idle sessions and idle followers on a fresh server of each side.
async fn idle(bench: &mut Bench) -> Fallible<Vec<Row>> {
    let (sessions, followers) = (bench.options.idle_sessions, bench.options.idle_followers);
    check_fds(followers + 200)?;
    let mut found = Vec::new();
    for kind in sides(bench) {
        found.push((kind, idle_side(bench, kind, sessions, followers).await?));
    }
    let ours = found.iter().find(|(k, _)| *k == Kind::Ours).map(|(_, f)| f);
    let theirs = found
        .iter()
        .find(|(k, _)| *k == Kind::LangGraph)
        .map(|(_, f)| f);
    let Some(ours) = ours else {
        return Ok(Vec::new());
    };
    let kib = |bytes: f64| format!("{:.1} KiB", bytes / 1024.0);
    let count = |n: f64| format!("{n:.2}");
    let row = |what: String, ours: f64, theirs: Option<f64>, unit: &dyn Fn(f64) -> String| Row {
        what,
        measured: unit(ours),
        baseline: theirs.map_or("-".to_owned(), unit),
        ratio: theirs
            .filter(|t| *t > 1e-6)
            .map_or("-".to_owned(), |t| times(ours / t)),
        goal: "(info)",
        met: None,
    };
    let sessions_seen = format!("{sessions}->{} sessions", 2 * sessions);
    let mut rows = vec![
        row(
            format!("RSS per idle session, {sessions_seen}"),
            ours.per_session,
            theirs.map(|t| t.per_session),
            &kib,
        ),
        row(
            format!("fds per idle session, {sessions_seen}"),
            ours.fds_per_session,
            theirs.map(|t| t.fds_per_session),
            &count,
        ),
        row(
            format!("fds per idle stream, {} streams", ours.streams),
            ours.fds_per_stream,
            theirs.map(|t| t.fds_per_stream),
            &count,
        ),
    ];
    let mut stream = row(
        format!("RSS per idle stream, {} streams", ours.streams),
        ours.per_stream,
        theirs.map(|t| t.per_stream),
        &kib,
    );
    if let Some(theirs) = theirs {
        stream.baseline = format!(
            "{} ({} streams{})",
            stream.baseline, theirs.streams, theirs.stream_errors
        );
    }
    rows.push(Row {
        what: format!("server CPU holding the idle streams ({})", ours.streams),
        measured: format!("{:.2} cores", ours.held_cores),
        baseline: theirs.map_or("-".to_owned(), |t| {
            format!("{:.2} cores ({} streams)", t.held_cores, t.streams)
        }),
        ratio: "-".to_owned(),
        goal: "(info)",
        met: None,
    });
    if let Some(joining) = ours.per_joining_stream {
        rows.push(Row {
            what: "RSS per idle stream joining a followed session".to_owned(),
            measured: kib(joining),
            baseline: theirs
                .and_then(|t| t.per_joining_stream)
                .map_or("-".to_owned(), kib),
            ratio: theirs
                .and_then(|t| t.per_joining_stream)
                .map_or("-".to_owned(), |t| times(joining / t.max(1e-9))),
            goal: "(info)",
            met: None,
        });
    }
    stream.goal = "<= 50 KB";
    stream.met = Some(ours.per_stream <= 50_000.0 && ours.streams >= followers);
    rows.push(stream);
    Ok(rows)
}

/// On a fresh server: `sessions` idle sessions, then as many more; then `followers` idle
/// streams over them, half and then all.
async fn idle_side(
    bench: &mut Bench,
    kind: Kind,
    sessions: usize,
    followers: usize,
) -> Fallible<Idle> {
    bench.fake.pace(Pace::instant(CHUNKS)).await?;
    let mut server = start(bench, kind, 100).await?;
    // LangGraph's in-memory runtime pickles its state every 10 s: let one flush pass.
    let settle = match kind {
        Kind::LangGraph => Duration::from_secs(11),
        _ => Duration::from_secs(2),
    };
    let mut ids = Vec::with_capacity(2 * sessions);
    let mut marks = Vec::new();
    for _ in 0..2 {
        ids.extend(open_idle_sessions(kind, server.addr, sessions).await?);
        tokio::time::sleep(settle).await;
        marks.push(server.usage());
    }
    let mut held = driver::Followers::new();
    let mut errors = String::new();
    let half = followers / 2;
    let mut stream_marks = vec![(0, marks[1])];
    for count in [half, followers - half] {
        if let Err(err) = held.open(kind, server.addr, &ids, count).await {
            errors = format!(" (only {} opened: {err})", held.len());
            eprintln!("bench load: {} idle followers: {err}", kind.name());
            break;
        }
        tokio::time::sleep(settle).await;
        stream_marks.push((held.len(), server.usage()));
    }
    server.check_alive()?;
    // What holding the streams costs in CPU (heartbeats, and whatever else an idle stream does).
    let before = server.usage();
    let hold = Duration::from_secs(10);
    tokio::time::sleep(hold).await;
    let held_cores = (server.usage().cpu_ticks.saturating_sub(before.cpu_ticks)) as f64
        / bench.ticks
        / hold.as_secs_f64();
    let slope = |a: (usize, usage::Usage), b: (usize, usage::Usage), f: fn(usage::Usage) -> u64| {
        (f(b.1) as f64 - f(a.1) as f64) / ((b.0 as f64 - a.0 as f64).max(1.0))
    };
    let (m0, m1) = ((sessions, marks[0]), (2 * sessions, marks[1]));
    let first = stream_marks[0];
    let last = stream_marks[stream_marks.len() - 1];
    // The first half of the streams reaches every session (round robin): the second half only
    // joins sessions already followed, so its slope is a stream's own cost, without the
    // session's shared tail (our hub).
    let joining = (stream_marks.len() == 3 && half >= ids.len())
        .then(|| slope(stream_marks[1], stream_marks[2], |u| u.rss));
    let idle = Idle {
        per_session: slope(m0, m1, |u| u.rss),
        fds_per_session: slope(m0, m1, |u| u.fds),
        per_stream: slope(first, last, |u| u.rss),
        per_joining_stream: joining,
        fds_per_stream: slope(first, last, |u| u.fds),
        streams: held.len(),
        stream_errors: errors,
        held_cores,
    };
    if let Some(joining) = joining {
        // What the first half cost beyond its streams' own: the followed sessions' tails.
        let first_half = stream_marks[1].1.rss as f64 - stream_marks[0].1.rss as f64;
        let per_followed = (first_half - joining * half as f64) / ids.len() as f64;
        eprintln!(
            "bench load: {:<9} idle: a stream joining a followed session {:.1} KiB; the first stream of a session adds {:.1} KiB more (its shared tail)",
            kind.name(),
            joining / 1024.0,
            per_followed / 1024.0
        );
    }
    eprintln!(
        "bench load: {:<9} idle: {} sessions RSS {} MB, {} sessions {} MB ({:.1} KiB each); {} streams RSS {} MB ({:.1} KiB each, {:.2} fds each), held at {:.2} cores; marks {:?}",
        kind.name(),
        sessions,
        marks[0].rss / 1_000_000,
        2 * sessions,
        marks[1].rss / 1_000_000,
        idle.per_session / 1024.0,
        idle.streams,
        last.1.rss / 1_000_000,
        idle.per_stream / 1024.0,
        idle.fds_per_stream,
        idle.held_cores,
        stream_marks
            .iter()
            .map(|(n, u)| (*n, u.rss / 1_000_000))
            .collect::<Vec<_>>()
    );
    held.stop().await;
    drop(server);
    Ok(idle)
}

/// `count` sessions of one turn each, 100 at a time; their ids.
async fn open_idle_sessions(
    kind: Kind,
    addr: std::net::SocketAddr,
    count: usize,
) -> Fallible<Vec<String>> {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(100));
    let mut opening = Vec::with_capacity(count);
    for _ in 0..count {
        let gate = gate.clone();
        opening.push(tokio::spawn(async move {
            let _permit = gate.acquire_owned().await?;
            driver::one_turn(kind, addr, CHUNKS).await
        }));
    }
    let mut ids = Vec::with_capacity(count);
    for opened in opening {
        ids.push(opened.await??);
    }
    Ok(ids)
}
