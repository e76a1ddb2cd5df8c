//! The race suite: the planner-executor shape on Open Harness against the same shape on
//! LangGraph, both durable, run alternately in one go at N = 1 000, 5 000 and 10 000 tasks.
//!
//! Our side: a planner agent returns N tasks, an executor agent completes one task per
//! activation with the result `"ok " * 8`, handlers fold into `{goal, tasks, done, cursor}`
//! and the run ends (`until`) once every task is done. A scripted provider answers both
//! agents; the store is the durable default, [`RedbStore`]. Each N runs in a child process
//! (`openharness-race-child N DIR`, with the system allocator) so its peak RSS is its own; it
//! prints one JSON line.
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
//! done, and the state at the jump has the cursor the walk saw there). The jump is a fresh
//! open (read-only on our side, as the CLI's reading commands open a store) and one read,
//! timed five times on each side; the median is reported. The 10% position can flatter one
//! side, so both also jump to 50% and 90%, and our side to the last position of every stretch
//! between snapshots (where a read folds the most events past the nearest snapshot); the
//! slowest of each side's jumps is compared too. Two more rows compare
//! live completions/s at N = 5 000 with durability deferred on both sides, like for like: our
//! group commit (10 ms) against LangGraph's `durability="async"`, and our durable-at-turn-end
//! against its `"exit"`. Our side also reports its durable appends' median against the disk's
//! floor measured right after the live run in the same folder (the median sequential 1 KiB
//! append + `fdatasync`): how far the store is from what the disk allows. Every side starts
//! on a settled disk (`sync(1)` first), not behind the other side's writeback. Last, both sides'
//! durable live run at N = 5 000 again with the disk loaded by another writer
//! ([`loaded`]): the ratio on a quiet and on a busy disk, from one run. And what recording
//! state hashes costs our live run at N = 5 000 (durable, and durable at the turn's end),
//! against the same run without them, alternated.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use openharness::Agent;
use openharness::adapter::{ProviderResponse, ProviderResult, ProviderSink};
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

mod loaded;
mod measure;
mod table;
mod workflow;

use measure::*;
use table::rows;
pub(crate) use workflow::run_on;
use workflow::*;

use crate::report::Fallible;

/// The task counts raced, smallest first.
const SIZES: [u64; 3] = [1_000, 5_000, 10_000];
/// What the executor reports for every task, on both sides.
const RESULT: &str = "ok ok ok ok ok ok ok ok ";
/// The goal given to the planner, on both sides.
const GOAL: &str = "Complete every task of the race";
/// The workflow's name, recorded in `workflow:started`.
const NAME: &str = "race";
/// How many fresh opens the jump is timed over, on both sides; the median is reported.
const JUMPS: usize = 5;

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
    /// The slowest of the jumps to 10%, 50%, 90% (and on our side the last position of every
    /// stretch between snapshots): its position and its median seconds.
    #[serde(default)]
    slowest_jump: Option<(u64, f64)>,
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
    /// Ours only: the floor's mean, in seconds (set beside the appends' mean, the tail counts).
    #[serde(default)]
    floor_mean_s: Option<f64>,
    /// Ours only: the seconds one `clone` (and drop) of each distinct state of the history
    /// takes, what a backward walk that rebuilds states without undos pays at the least.
    #[serde(default)]
    clone_floor_s: Option<f64>,
}

/// Fails the run when it did not do what it should: a benchmark of a broken run is worthless.
fn check(holds: bool, what: impl FnOnce() -> String) -> Fallible<()> {
    if holds {
        Ok(())
    } else {
        Err(format!("wrong result: {}", what()).into())
    }
}

/// The seconds one `clone` (and drop) of each distinct state of `session`'s history takes:
/// the least a backward walk pays that builds each state it shows (one without undos).
/// States are told apart by their lists' lengths and cursor, all a handler changes here.
async fn clone_floor(flow: &Workflow<Board>, session: &SessionId) -> Fallible<f64> {
    let mut tape = flow.load(session).await?;
    let mut last = None;
    let mut spent = 0.0;
    loop {
        let state = tape.state();
        let key = (state.tasks.len(), state.done.len(), state.cursor);
        if last != Some(key) {
            last = Some(key);
            let started = Instant::now();
            drop(black_box(state.clone()));
            spent += started.elapsed().as_secs_f64();
        }
        if tape.position() >= tape.len() {
            return Ok(spent);
        }
        tape.step();
    }
}

/// `openharness-race-child N DIR [every|caller|redb|periodic|turn] [imbl|vec|vec-undo]`: our
/// side at one N, in a store under DIR, with the store's durability (every append durable, the
/// default, through the journal; `caller`: the same, committed on the calling thread
/// ([`RedbOptions::commit_on_caller`]); `redb`: every append a durable redb commit, no journal; group
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
        Some("caller") => options.commit_on_caller(true),
        Some("redb") => options.journal(false),
        Some("periodic") => options.durability(RedbDurability::Periodic(
            std::time::Duration::from_millis(10),
        )),
        Some("turn") => options.durability(RedbDurability::TurnEnd),
        Some(other) => {
            eprintln!("unknown durability `{other}`: every, caller, redb, periodic or turn");
            return ExitCode::from(2);
        }
    };
    // For experiments: how many bytes of journal records between checkpoints.
    let options = match std::env::var("OPENHARNESS_RACE_CHECKPOINT_BYTES") {
        Err(_) => options,
        Ok(bytes) => match bytes.parse() {
            Ok(bytes) => options.journal_checkpoint(bytes),
            Err(_) => {
                eprintln!("OPENHARNESS_RACE_CHECKPOINT_BYTES is `{bytes}`, not a byte count");
                return ExitCode::from(2);
            }
        },
    };
    let (Some(n), Some(dir)) = (n.and_then(|n| n.parse::<u64>().ok()), dir) else {
        eprintln!(
            "usage: openharness-race-child N DIR [every|caller|redb|periodic|turn] [imbl|vec|vec-undo]"
        );
        return ExitCode::from(2);
    };
    let runtime = match crate::report::runtime("race") {
        Ok(runtime) => runtime,
        Err(code) => return code,
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
    let (floor, floor_mean) = append_floor(dir, 500)?;
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
    let clone_floor_s = clone_floor(&flow, &session).await?;
    check(forward == backward, || {
        "the forward and backward walks saw different states".to_owned()
    })?;
    let stretch_ends: Vec<u64> = snapshot_positions(&store, &session, len)
        .await?
        .into_iter()
        .filter_map(|position| position.checked_sub(1))
        .collect();
    drop((tape, flow, store));

    // Jump: open the store afresh and read the state 10% in, JUMPS times (the median counts,
    // as on LangGraph's side). Opened read-only, as the CLI's reading commands (`tape`,
    // `events`) open it: a writable open marks the file in use, one more `fsync`.
    let state_at = |position: u64| {
        forward
            .get(usize::try_from(position).unwrap_or(usize::MAX))
            .copied()
            .ok_or("the walk has no state at the jump")
    };
    let jump_position = len / 10;
    let cursor = state_at(jump_position)?;
    let jump_s = jump(&path, &session, jump_position, cursor, n, &initial).await?;

    // The slowest jump: the same at 50% and 90%, and at the last position of every stretch
    // between snapshots (the most events folded past the nearest snapshot).
    let mut slowest = (jump_position, jump_s);
    for position in [len / 2, len * 9 / 10].into_iter().chain(stretch_ends) {
        let took = jump(&path, &session, position, state_at(position)?, n, &initial).await?;
        if took > slowest.1 {
            slowest = (position, took);
        }
    }

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
        jump_cursor: cursor,
        slowest_jump: Some(slowest),
        file_bytes: std::fs::metadata(&path)?.len(),
        appends: Some((append_count, append_s)),
        state: Some(lists.to_owned()),
        append_p50_and_floor: Some((append_p50, floor)),
        floor_mean_s: Some(floor_mean),
        clone_floor_s: Some(clone_floor_s),
        peak_rss_bytes: peak_rss()?,
    })
}

/// The median seconds of `JUMPS` fresh read-only opens, each reading the state at `position`
/// and checking that its cursor is `expected`, the forward walk's.
async fn jump(
    path: &Path,
    session: &SessionId,
    position: u64,
    expected: u64,
    n: u64,
    initial: &Board,
) -> Fallible<f64> {
    let mut jumps = Vec::with_capacity(JUMPS);
    for _ in 0..JUMPS {
        let started = Instant::now();
        let store = RedbStore::open_with(path, RedbOptions::default().read_only(true))?;
        let flow = workflow(store, n, initial.clone())?;
        let at = flow.load_state_at(session, position).await?;
        jumps.push(started.elapsed().as_secs_f64());
        check(at.cursor == expected, || {
            format!(
                "the jump to {position} read cursor {}, not {expected}",
                at.cursor
            )
        })?;
    }
    Ok(median(jumps))
}

/// The positions of `session`'s snapshots, newest first.
async fn snapshot_positions(
    store: &impl Store,
    session: &SessionId,
    len: u64,
) -> Fallible<Vec<u64>> {
    let mut positions = Vec::new();
    let mut at = len;
    while let Some((position, _)) = store.latest_snapshot_json(session, at).await? {
        positions.push(position);
        match position.checked_sub(1) {
            Some(before) => at = before,
            None => break,
        }
    }
    Ok(positions)
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
    let venv = crate::venv::Pinned {
        suite: "race",
        env: "OPENHARNESS_RACE_VENV",
        folder: ".race-venv",
        requirements: "race/requirements.txt",
    }
    .ready()?;
    Ok(venv.join("bin/python"))
}

/// Runs one side at one N in a temporary directory (then `after`, such as a durability) and
/// reads its JSON line.
fn side(mut command: Command, what: &str) -> Fallible<Figures> {
    side_with(&mut command, what, &[])
}

fn side_with(command: &mut Command, what: &str, after: &[&str]) -> Fallible<Figures> {
    let dir = tempfile::tempdir()?;
    settle_disk();
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

/// Lets the disk settle before a side starts: what the side before it wrote and deleted (up
/// to 2.3 GB of LangGraph's checkpoints at 10k) is flushed by `sync(1)`, so neither side's
/// `fdatasync`s queue behind the other's leftovers. Where `sync` cannot run, the side starts
/// anyway.
fn settle_disk() {
    let _ = Command::new("sync").status();
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// `openharness-race-child`, built beside this binary (`cargo build -p openharness-bench`
/// builds both).
fn child_exe() -> Fallible<PathBuf> {
    let exe = std::env::current_exe()?.with_file_name(format!(
        "openharness-race-child{}",
        std::env::consts::EXE_SUFFIX
    ));
    if exe.exists() {
        Ok(exe)
    } else {
        Err(format!(
            "{} is missing: build the bench with `cargo build --release -p openharness-bench`",
            exe.display()
        )
        .into())
    }
}

fn race() -> Fallible<Vec<Row>> {
    let theirs_python = match python() {
        Ok(python) => Some(python),
        Err(err) => {
            eprintln!("bench race: no LangGraph side ({err}); printing ours only");
            None
        }
    };
    let exe = child_exe()?;
    let script = bench_dir().join("race/langgraph_race.py");
    let mut results = Vec::new();
    let started = Instant::now();
    for n in SIZES {
        let mut mine = Vec::new();
        for lists in ["imbl", "vec", "vec-undo"] {
            let mut command = Command::new(&exe);
            command.arg(n.to_string());
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
    table.extend(loaded::loaded(&exe, theirs_python.as_deref(), &script)?);
    table.extend(state_hashes(&exe)?);
    Ok(table)
}

/// Alternations of the state-hash rows; each side's median is compared.
const HASH_ROUNDS: usize = 5;

/// What recording state hashes costs our live run at N = 5 000, durable and durable at the
/// turn's end (where the disk hides nothing): the same run with and without them
/// (`OPENHARNESS_RACE_STATE_HASHES=off`), alternated, the medians compared. Goal: <= 1.03x.
fn state_hashes(exe: &Path) -> Fallible<Vec<Row>> {
    let n = DEFERRED_N;
    let mut rows = Vec::new();
    for mode in ["every", "turn"] {
        let (mut on, mut off) = (Vec::new(), Vec::new());
        for _ in 0..HASH_ROUNDS {
            for (hashes, into) in [("on", &mut on), ("off", &mut off)] {
                let mut command = Command::new(exe);
                command
                    .env("OPENHARNESS_RACE_STATE_HASHES", hashes)
                    .arg(n.to_string());
                let figures = side_with(
                    &mut command,
                    &format!("our side ({mode}, state hashes {hashes})"),
                    &[mode],
                )?;
                check(figures.done == n, || {
                    format!("our done = {}, not {n}", figures.done)
                })?;
                into.push(figures.live_s);
            }
        }
        let (on, off) = (median(on), median(off));
        eprintln!("bench race: state hashes ({mode}), N = {n}: {on:.3} s with, {off:.3} s without");
        rows.push(Row {
            what: format!("live run with state hashes ({mode}), N={n}"),
            measured: format!("{on:.3} s"),
            baseline: format!("{off:.3} s (no hashes)"),
            ratio: crate::report::times(on / off),
            goal: "<= 1.03x",
            met: Some(on / off <= 1.03),
        });
    }
    Ok(rows)
}

/// The N of the like-for-like rows with deferred durability.
const DEFERRED_N: u64 = 5_000;

/// Live completions/s with durability deferred on both sides, like for like: our group
/// commit every 10 ms against LangGraph's `durability="async"` (checkpoints written in the
/// background), and our durable-at-turn-end against its `"exit"` (written when the run ends).
/// Group commit is held to >= 30x LangGraph's `async`; the turn-end row is shown for
/// information.
fn deferred(exe: &Path, python: Option<&Path>, script: &Path) -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    let n = DEFERRED_N;
    for (ours_mode, theirs_mode, what, goal) in [
        (
            "periodic",
            "async",
            "group commit 10 ms vs LangGraph async",
            Some((">= 30x", 30.0)),
        ),
        (
            "turn",
            "exit",
            "durable at turn end vs LangGraph exit",
            None,
        ),
    ] {
        let mut command = Command::new(exe);
        command.arg(n.to_string());
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
        let baseline = base.map_or_else(|| "(no LangGraph)".to_owned(), |b| format!("{b:.0} /s"));
        eprintln!("bench race: {what}, N = {n}: ours {ours:.0} /s, LangGraph {baseline}");
        rows.push(Row {
            what: format!("live completions/s, {what}, N={n}"),
            measured: format!("{ours:.0} /s"),
            baseline,
            ratio: base.map_or_else(|| "-".to_owned(), |b| format!("{:.1}x", ours / b)),
            goal: goal.map_or("(info)", |(label, _)| label),
            met: goal.zip(base).map(|((_, least), b)| ours / b >= least),
        });
    }
    Ok(rows)
}
