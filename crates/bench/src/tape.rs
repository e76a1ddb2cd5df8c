//! The tape suite: how fast recorded sessions replay, step back and jump, and how little the
//! snapshots cost; and what handlers that record undos save a walk back over a growing
//! plain-`Vec` state.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use openharness::store::{MemoryStore, RedbStore};
use openharness::tape::{LoadTape, Tape};
use openharness::{
    Emit, Envelope, Handler, SessionId, Store, Undo, Workflow, WorkflowState, adapter::Fold,
};
use openharness::{event, handler};

use crate::report::{Row, times};
use serde::{Deserialize, Serialize};

/// Events in the stored session (the step-back figures are taken at position 100 000).
const STORED: u64 = 120_000;
/// Events in the in-memory session for jumps, folding and snapshot memory.
const LONG: u64 = 1_000_000;
/// Slots in the state: 1 280 `u64`s are 10 KB.
const SLOTS: usize = 1_280;

/// A counter went up.
#[event("slot:bumped")]
#[derive(Debug, Clone)]
pub(crate) struct Bumped {
    slot: u32,
    by: u64,
}

/// A counter went back to its base value.
#[event("slot:reset")]
#[derive(Debug, Clone)]
pub(crate) struct Reset {
    slot: u32,
}

/// Every counter was multiplied.
#[event("slots:scaled")]
#[derive(Debug, Clone)]
pub(crate) struct Scaled {
    factor: u64,
}

/// The benchmark's events.
#[event]
#[derive(Debug, Clone)]
pub(crate) enum BenchEvent {
    Bumped,
    Reset,
    Scaled,
}

/// A 10 KB state (its JSON is about 11 KB).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Counters {
    slots: Vec<u64>,
}

impl Counters {
    pub(crate) fn new() -> Self {
        Self {
            slots: (0..SLOTS as u64).map(|i| 1_000_000 + i).collect(),
        }
    }
}

fn bump(state: &mut Counters, event: &Bumped) {
    let len = state.slots.len();
    state.slots[event.slot as usize % len] += event.by;
}

fn reset(state: &mut Counters, event: &Reset) {
    let len = state.slots.len();
    state.slots[event.slot as usize % len] = 1_000_000;
}

fn scale(state: &mut Counters, event: &Scaled) {
    let first = state.slots.first_mut();
    if let Some(first) = first {
        *first = first.wrapping_mul(event.factor);
    }
}

#[handler(BenchEvent)]
impl Counters {
    fn bumped(&mut self, event: &Bumped) {
        bump(self, event);
    }

    fn reset(&mut self, event: &Reset) {
        reset(self, event);
    }

    fn scaled(&mut self, event: &Scaled) {
        scale(self, event);
    }
}

/// An entry was written (the undo row's one event).
#[event("entry:added")]
#[derive(Debug, Clone)]
pub(crate) struct EntryAdded {
    text: String,
}

/// The undo row's events.
#[event]
#[derive(Debug, Clone)]
pub(crate) enum JournalEvent {
    EntryAdded,
}

/// A plain-`Vec` state whose handler records how to take its entry back.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct UndoJournal {
    entries: Vec<String>,
}

#[handler(JournalEvent)]
impl UndoJournal {
    fn added(&mut self, event: &EntryAdded, undo: &mut Undo<Self>) {
        self.entries.push(event.text.clone());
        undo.record(|journal| {
            journal.entries.pop();
        });
    }
}

/// The same state without undos: a step back copies it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct CopyJournal {
    entries: Vec<String>,
}

#[handler(JournalEvent)]
impl CopyJournal {
    fn added(&mut self, event: &EntryAdded) {
        self.entries.push(event.text.clone());
    }
}

/// Events in the undo row's session: its state grows to this many strings.
const WALKED: u64 = 10_000;

/// Walks a tape of `events` from its end back to 0, reading the state at every position.
fn walk_back<S: WorkflowState + Default>(
    events: &[Envelope],
) -> Result<Duration, Box<dyn std::error::Error>> {
    let workflow = Workflow::builder("journal")
        .initial_state(S::default())
        .store(MemoryStore::new())
        .build()?;
    let mut tape = Tape::from_events(workflow, SessionId::new(), events.to_vec());
    tape.step_to(tape.len());
    let started = Instant::now();
    while tape.position() > 0 {
        black_box(tape.step_back());
        black_box(tape.state());
    }
    Ok(started.elapsed())
}

/// The baseline for dispatch: a hand-written match calling the same functions, with the
/// same signature as a handler (it returns the emitted events, here none).
fn static_apply(state: &mut Counters, event: &BenchEvent) -> Emit {
    match event {
        BenchEvent::Bumped(e) => bump(state, e),
        BenchEvent::Reset(e) => reset(state, e),
        BenchEvent::Scaled(e) => scale(state, e),
    }
    Emit::none()
}

/// Event `i` of a generated session: mostly bumps, a few resets and scales.
fn typed(i: u64) -> BenchEvent {
    let slot = (i.wrapping_mul(7_919) % SLOTS as u64) as u32;
    match i % 64 {
        0 => BenchEvent::Reset(Reset { slot }),
        32 => BenchEvent::Scaled(Scaled { factor: 1 }),
        _ => BenchEvent::Bumped(Bumped { slot, by: 1 }),
    }
}

pub(crate) fn envelope(i: u64) -> Envelope {
    let (name, payload) = match typed(i) {
        BenchEvent::Bumped(e) => (
            "slot:bumped",
            serde_json::json!({ "slot": e.slot, "by": e.by }),
        ),
        BenchEvent::Reset(e) => ("slot:reset", serde_json::json!({ "slot": e.slot })),
        BenchEvent::Scaled(e) => ("slots:scaled", serde_json::json!({ "factor": e.factor })),
    };
    Envelope::new(name, payload, None)
}

pub(crate) fn session_events(len: u64) -> Vec<Envelope> {
    let mut events = Vec::with_capacity(len as usize);
    events.push(Envelope::new(
        "workflow:started",
        serde_json::json!({ "workflow": "bench" }),
        None,
    ));
    events.extend((1..len).map(envelope));
    events
}

fn percentile(samples: &mut [Duration], percent: usize) -> Duration {
    samples.sort_unstable();
    let index = (samples.len() * percent / 100).min(samples.len().saturating_sub(1));
    samples.get(index).copied().unwrap_or_default()
}

fn p99(mut samples: Vec<Duration>) -> Duration {
    percentile(&mut samples, 99)
}

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let value = f();
        best = best.min(started.elapsed());
        last = Some(value);
    }
    match last {
        Some(value) => (best, value),
        None => (Duration::ZERO, f()),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// A small deterministic generator for jump targets.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("tape", crate::report::Missed::Shown, suite)
}

async fn suite() -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let mut rows = Vec::new();
    eprintln!("bench tape: writing a {STORED}-event session to a temporary redb store…");
    let dir = tempfile::tempdir()?;
    let store = RedbStore::open(dir.path().join("bench.redb"))?;
    let session = SessionId::new();
    let events = session_events(STORED);
    for (seq, batch) in (0..).step_by(1_000).zip(events.chunks(1_000)) {
        store.append(&session, batch, seq).await?;
    }
    drop(events);
    let workflow = Workflow::builder("bench")
        .initial_state(Counters::new())
        .store(store.clone())
        .build()?;

    // 1. Replay (load + fold into a tape with snapshots) against loading alone: the best of
    // seven interleaved rounds each, so a noisy moment on the machine hits both alike.
    let mut load = Duration::MAX;
    let mut replay = Duration::MAX;
    for _ in 0..7 {
        let started = Instant::now();
        black_box(store.all_events(&session).await?);
        load = load.min(started.elapsed());
        let started = Instant::now();
        let mut tape = workflow.load(&session).await?;
        tape.step_to(tape.len());
        black_box(tape.state());
        replay = replay.min(started.elapsed());
    }
    let rate = |d: Duration| STORED as f64 / d.as_secs_f64() / 1e6;
    let ratio = load.as_secs_f64() / replay.as_secs_f64();
    rows.push(Row {
        what: "replay rate (load + fold) vs load rate".to_owned(),
        measured: format!("{:.2} M ev/s", rate(replay)),
        baseline: format!("{:.2} M ev/s", rate(load)),
        ratio: times(ratio),
        goal: ">= 0.9x",
        met: Some(ratio >= 0.9),
    });

    // 2. Handler dispatch (the #[handler] match) against a hand-written static match.
    let typed_events: Vec<BenchEvent> = (1..LONG).map(typed).collect();
    let (dispatch, _) = best_of(5, || {
        let mut state = Counters::new();
        for event in black_box(&typed_events) {
            black_box(state.apply(event));
        }
        state
    });
    let (static_match, _) = best_of(5, || {
        let mut state = Counters::new();
        for event in black_box(&typed_events) {
            black_box(static_apply(&mut state, event));
        }
        state
    });
    drop(typed_events);
    let per = |d: Duration| d.as_secs_f64() * 1e9 / (LONG - 1) as f64;
    let ratio = per(dispatch) / per(static_match);
    rows.push(Row {
        what: "handler dispatch vs static match".to_owned(),
        measured: format!("{:.2} ns/ev", per(dispatch)),
        baseline: format!("{:.2} ns/ev", per(static_match)),
        ratio: times(ratio),
        goal: "<= 2x",
        met: Some(ratio <= 2.0),
    });

    // 3. Folding recorded events (decode + dispatch) into a 10 KB state.
    eprintln!("bench tape: generating a {LONG}-event session in memory…");
    let long = session_events(LONG);
    let (fold_time, _) = best_of(3, || {
        let mut fold = Fold::new(Counters::new());
        for event in &long {
            fold.apply(event, &long);
        }
        fold.into_state()
    });
    let (clone_time, _) = best_of(3, || black_box(Counters::new()).clone());
    let fold_rate = LONG as f64 / fold_time.as_secs_f64();
    let clone_per_event = clone_time.as_secs_f64() * 1e9;
    rows.push(Row {
        what: "fold rate, 10 KB state".to_owned(),
        measured: format!("{:.2} M ev/s", fold_rate / 1e6),
        baseline: format!("state clone {clone_per_event:.0} ns"),
        ratio: format!(
            "{:.2}x clone",
            (fold_time.as_secs_f64() * 1e9 / LONG as f64) / clone_per_event
        ),
        goal: ">= 1 M ev/s",
        met: Some(fold_rate >= 1e6),
    });

    // 4. Step back at position 100 000, from the store and from the tape.
    let tape = workflow.load(&session).await?;
    let saved = tape.persist_snapshots().await?;
    let mut from_store = Vec::new();
    for position in (99_000..100_000).rev() {
        let started = Instant::now();
        black_box(workflow.load_state_at(&session, position).await?);
        from_store.push(started.elapsed());
    }
    let store_p50 = percentile(&mut from_store, 50);
    let store_p99 = p99(from_store);
    rows.push(Row {
        what: "step back at 100k from the store, p99".to_owned(),
        measured: format!("{} (p50 {})", ms(store_p99), ms(store_p50)),
        baseline: format!("{saved} snapshots in store"),
        ratio: format!("{:.2}x goal", store_p99.as_secs_f64() / 2e-3),
        goal: "<= 2 ms",
        met: Some(store_p99 <= Duration::from_millis(2)),
    });
    let mut tape = tape;
    tape.step_to(100_000);
    let mut from_tape = Vec::new();
    for _ in 0..2_000 {
        let started = Instant::now();
        black_box(tape.step_back());
        from_tape.push(started.elapsed());
    }
    let (step_forward, _) = best_of(1, || {
        for _ in 0..2_000 {
            black_box(tape.step());
        }
    });
    let tape_p50 = percentile(&mut from_tape, 50);
    let tape_p99 = p99(from_tape);
    rows.push(Row {
        what: "step back at 100k from the tape, p99".to_owned(),
        measured: format!("{} (p50 {})", us(tape_p99), us(tape_p50)),
        baseline: format!("step {}", us(step_forward / 2_000)),
        ratio: format!("{:.2}x goal", tape_p99.as_secs_f64() / 1e-4),
        goal: "<= 0.1 ms",
        met: Some(tape_p99 <= Duration::from_micros(100)),
    });
    drop(tape);

    // 5. Any jump in a 1M-event session, and 6. the snapshots' memory.
    let session = SessionId::new();
    let (build, mut tape) = best_of(1, || {
        Tape::from_events(workflow.clone(), session.clone(), long.clone())
    });
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut jumps = Vec::new();
    let mut worst = Duration::ZERO;
    for _ in 0..1_000 {
        let target = rng.next() % (LONG + 1);
        let started = Instant::now();
        black_box(tape.step_to(target));
        let took = started.elapsed();
        worst = worst.max(took);
        jumps.push(took);
    }
    let jump_p99 = p99(jumps);
    rows.push(Row {
        what: "random jump in 1M events, p99 (max)".to_owned(),
        measured: format!("{} ({})", ms(jump_p99), ms(worst)),
        baseline: format!("tape build {}", ms(build)),
        ratio: format!("{:.2}x goal", worst.as_secs_f64() / 16e-3),
        goal: "<= 16 ms",
        met: Some(worst <= Duration::from_millis(16)),
    });
    let stats = tape.stats();
    let share = stats.snapshot_bytes as f64 / stats.event_bytes as f64;
    rows.push(Row {
        what: "snapshot memory / decoded event bytes".to_owned(),
        measured: format!(
            "{:.1} MB ({} x every {})",
            stats.snapshot_bytes as f64 / 1e6,
            stats.snapshots,
            stats.interval
        ),
        baseline: format!("{:.1} MB events", stats.event_bytes as f64 / 1e6),
        ratio: format!("{:.1}%", share * 100.0),
        goal: "<= 10%",
        met: Some(share <= 0.10),
    });
    eprintln!(
        "bench tape: measured fold cost {:.0} ns/event chose a snapshot interval of {}",
        stats.fold_nanos_per_event, stats.interval
    );
    drop(tape);

    // 7. A walk back over a growing plain-`Vec` state: handlers recording undos against the
    // same handlers copying.
    let entries = (0..WALKED)
        .map(|i| {
            Envelope::typed(
                &EntryAdded {
                    text: format!("entry {i}: ok ok ok ok"),
                },
                None,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let undoing = walk_back::<UndoJournal>(&entries)?;
    let copying = walk_back::<CopyJournal>(&entries)?;
    let ratio = copying.as_secs_f64() / undoing.as_secs_f64();
    rows.push(Row {
        what: format!("walk back {WALKED} events, plain Vec state, undos vs copying"),
        measured: ms(undoing),
        baseline: ms(copying),
        ratio: format!("{ratio:.0}x"),
        goal: ">= 10x",
        met: Some(ratio >= 10.0),
    });
    Ok(rows)
}
