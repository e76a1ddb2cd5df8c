//! The sessions suite: continuing a session of a million events, finding its unfinished work
//! and the heap a turn needs all cost what the session's tail costs, not what its length costs.
//!
//! One durable [`RedbStore`] in a temporary directory holds a 1 000 000-event session and a
//! 1 000-event one of the same workflow, whose state (a counter and a bounded ring of recent
//! items) is the same size whatever the session's length. Each turn is scripted by a handler:
//! `user:input` makes it emit one `tally:ticked`, so a turn records three events.

use std::collections::VecDeque;
use std::hint::black_box;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use openharness::builtin::{AgentStarted, UserInput, WorkflowCompleted, WorkflowStarted};
use openharness::store::{Observed, RedbStore, StoreObserver};
use openharness::tape::LoadTape;
use openharness::{
    Emit, Envelope, Event, Pattern, RunOptions, RunOutcome, SessionId, SessionStatus, StopReason,
    Store, StoreError, Workflow, renderer_fn,
};
use openharness::{event, handler};
use serde::{Deserialize, Serialize};

use crate::HEAP;
use crate::report::Row;

use crate::report::Fallible;

/// Events in the long session.
const LONG: u64 = 1_000_000;
/// Events in the short session the long one's turn memory is compared with.
const SHORT: u64 = 1_000;
/// Events per append while the sessions are written.
const BATCH: u64 = 10_000;
/// Interleaved rounds of the continue timing: a round is a few milliseconds, mostly two
/// fsyncs, whose latency varies on a shared machine.
const ROUNDS: usize = 21;
/// Interleaved rounds of the `unfinished` timing (each is well under a millisecond).
const UNFINISHED_ROUNDS: usize = 31;
/// Turns on each session whose heap peak is measured.
const MEMORY_ROUNDS: usize = 5;
/// Uncaused events in the cut-off tail of the long session.
const CUT_OFF_TAIL: u64 = 300;
/// Recent items the state keeps, whatever the session's length.
const RING: usize = 16;
/// The workflow's name, recorded in `workflow:started`.
const NAME: &str = "sessions-bench";

/// An item was handled: the counter goes up and the item joins the recent ones.
#[event("tally:ticked")]
#[derive(Debug, Clone)]
struct Ticked {
    n: u64,
}

/// The events the handlers react to.
#[event]
#[derive(Debug, Clone)]
enum TallyEvent {
    UserInput,
    Ticked,
}

/// A state of fixed size: a counter, the inputs seen and a ring of the latest items.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Tally {
    count: u64,
    inputs: u64,
    recent: VecDeque<u64>,
}

#[handler(TallyEvent)]
impl Tally {
    /// The scripted turn: every input is answered with one item.
    fn input(&mut self, _input: &UserInput) -> Emit {
        self.inputs += 1;
        Emit::one(Ticked { n: self.count + 1 })
    }

    fn ticked(&mut self, ticked: &Ticked) {
        self.count += 1;
        if self.recent.len() == RING {
            self.recent.pop_front();
        }
        self.recent.push_back(ticked.n);
    }
}

pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("sessions", crate::report::Missed::Shown, suite)
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

/// Event `seq` of a recorded session of `len` events: `workflow:started`, items, and
/// `workflow:completed` last, as an imported session of one long turn.
fn recorded_event(seq: u64, len: u64) -> Fallible<Envelope> {
    Ok(if seq == 0 {
        Envelope::typed(
            &WorkflowStarted {
                workflow: NAME.to_owned(),
                code: None,
                version: None,
                commit: None,
                state_shape: None,
            },
            None,
        )?
    } else if seq + 1 == len {
        Envelope::typed(&completed(), None)?
    } else {
        Envelope::typed(&Ticked { n: seq }, None)?
    })
}

fn completed() -> WorkflowCompleted {
    WorkflowCompleted {
        reason: StopReason::Idle.as_str().to_owned(),
        open_requests: Vec::new(),
        errors: 0,
        queued: Vec::new(),
    }
}

/// Writes a session of `len` events in appends of [`BATCH`].
async fn write_session(store: &RedbStore, session: &SessionId, len: u64) -> Fallible<()> {
    let mut seq = 0;
    while seq < len {
        let end = (seq + BATCH).min(len);
        let batch = (seq..end)
            .map(|seq| recorded_event(seq, len))
            .collect::<Fallible<Vec<_>>>()?;
        store.append(session, &batch, seq).await?;
        seq = end;
    }
    Ok(())
}

/// The options of every measured turn: the defaults (no guard stops a legitimate turn).
fn turn_options() -> RunOptions {
    RunOptions::new()
}

/// A turn timed from the call of `send` until its first append (`user:input` and what its
/// handler emitted) was durable, and until a renderer saw that `user:input` (renderers see
/// events only once they are durable, on a thread of their own).
struct TimedTurn {
    first_event: Duration,
    rendered: Duration,
    whole: Duration,
    outcome: RunOutcome<Tally>,
}

async fn timed_turn(
    store: &Timed,
    workflow: &Workflow<Tally>,
    session: &SessionId,
    text: &str,
) -> Fallible<TimedTurn> {
    let (tx, rx) = mpsc::channel();
    let renderer = renderer_fn(Pattern::Exact(UserInput::NAME.to_owned()), move |event| {
        let _ = tx.send((
            Instant::now(),
            event.payload["text"].as_str().map(str::to_owned),
        ));
    });
    store.observer().arm();
    let started = Instant::now();
    let outcome = workflow
        .send(session, text, turn_options().renderer(renderer))
        .await?;
    let whole = started.elapsed();
    // The renderers are drained before `send` returns.
    let (seen_at, seen) = rx
        .try_recv()
        .map_err(|_| format!("the renderer never saw the turn's `user:input`: {outcome:?}"))?;
    check(seen.as_deref() == Some(text), || {
        format!("the renderer saw {seen:?}, not the input {text:?}")
    })?;
    let durable = store
        .observer()
        .first_append()
        .ok_or("the turn appended nothing to the store")?;
    Ok(TimedTurn {
        first_event: durable.duration_since(started),
        rendered: seen_at.duration_since(started),
        whole,
        outcome,
    })
}

/// Checks a turn on a session that held `before` items and `inputs` inputs.
fn check_turn(outcome: &RunOutcome<Tally>, first_seq: u64, before: &Tally) -> Fallible<()> {
    let state = &outcome.state;
    check(outcome.reason == StopReason::Idle, || {
        format!("the turn ended {:?}, not idle", outcome.reason)
    })?;
    check(outcome.first_seq == first_seq, || {
        format!(
            "the turn began at seq {}, not {first_seq}",
            outcome.first_seq
        )
    })?;
    check(outcome.len == first_seq + 3, || {
        format!(
            "the turn recorded {} events, not 3",
            outcome.len - first_seq
        )
    })?;
    check(
        state.count == before.count + 1
            && state.inputs == before.inputs + 1
            && state.recent.back() == Some(&(before.count + 1)),
        || format!("the continued state is {state:?}, after {before:?}"),
    )
}

/// The heap a turn needed at its peak, above what was allocated when it began.
async fn turn_peak(
    workflow: &Workflow<Tally>,
    session: &SessionId,
    text: &str,
) -> Fallible<(usize, RunOutcome<Tally>)> {
    let before = HEAP.current_usage();
    HEAP.reset_peak_usage();
    let outcome = workflow.send(session, text, turn_options()).await?;
    Ok((HEAP.peak_usage().saturating_sub(before), outcome))
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

fn best(samples: &[Duration]) -> Duration {
    samples.iter().copied().min().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: usize) -> String {
    format!("{:.2} MB", bytes as f64 / 1e6)
}

fn ratio(measured: Duration, baseline: Duration) -> f64 {
    measured.as_secs_f64() / baseline.as_secs_f64()
}

/// Notes when the first append since [`arm`](Self::arm) returned, that is when the turn's
/// first batch was durable. Clones share the note.
#[derive(Clone, Default)]
struct FirstAppend(Arc<Mutex<Option<Instant>>>);

impl FirstAppend {
    /// Forgets the append noted last: the next one is noted.
    fn arm(&self) {
        *self.slot() = None;
    }

    /// When the first append since [`arm`](Self::arm) was durable.
    fn first_append(&self) -> Option<Instant> {
        *self.slot()
    }

    fn slot(&self) -> MutexGuard<'_, Option<Instant>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl StoreObserver for FirstAppend {
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        result: &Result<u64, StoreError>,
        _: Duration,
    ) {
        if result.is_ok() {
            self.slot().get_or_insert_with(Instant::now);
        }
    }
}

/// The store the workflow records into: a [`RedbStore`] whose first append of a turn is noted.
type Timed = Arc<Observed<RedbStore, FirstAppend>>;

/// Opens the store and a workflow on it. A store opened afresh has no pages cached, as in a
/// new process that continues a session.
fn open(path: &Path) -> Fallible<(Timed, Workflow<Tally>)> {
    let store: Timed = Arc::new(Observed::new(
        RedbStore::open(path)?,
        FirstAppend::default(),
    ));
    let workflow = Workflow::builder(NAME)
        .initial_state(Tally::default())
        .shared_store(store.clone())
        .build()?;
    Ok((store, workflow))
}

/// The state of a session of `len` events as [`recorded_event`] writes it.
fn imported(len: u64) -> Tally {
    Tally {
        count: len - 2,
        inputs: 0,
        recent: (len - 1 - RING as u64..len - 1).collect(),
    }
}

async fn suite() -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    let mut infos = Vec::new();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("sessions.redb");
    let long = SessionId::new();
    let short = SessionId::new();
    eprintln!("bench sessions: writing a {LONG}-event session to a temporary redb store…");
    let started = Instant::now();
    {
        let store = RedbStore::open(&path)?;
        write_session(&store, &long, LONG).await?;
        write_session(&store, &short, SHORT).await?;
    }
    eprintln!(
        "bench sessions: written in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The first continue of an imported session has no snapshot: it folds the whole log, and
    // saves the snapshot every later turn starts from. Each runs on a store opened afresh.
    let (first, first_peak) = {
        let (store, workflow) = open(&path)?;
        let before = HEAP.current_usage();
        HEAP.reset_peak_usage();
        let first = timed_turn(&store, &workflow, &long, "first").await?;
        let peak = HEAP.peak_usage().saturating_sub(before);
        let kept = HEAP.current_usage().saturating_sub(before);
        eprintln!(
            "bench sessions: the first continue of the 1M session read its whole log and left {} allocated after it (the store's page cache)",
            mb(kept)
        );
        check_turn(&first.outcome, LONG, &imported(LONG))?;
        let snapshot = store.latest_snapshot(&long, u64::MAX).await?;
        check(
            snapshot.as_ref().map(|s| s.position) == Some(first.outcome.len),
            || format!("the first turn saved no snapshot at its end ({snapshot:?})"),
        )?;
        (first, peak)
    };
    let (short_first_peak, short_first) = {
        let (_store, workflow) = open(&path)?;
        turn_peak(&workflow, &short, "first").await?
    };
    check_turn(&short_first, SHORT, &imported(SHORT))?;
    infos.push(Row {
        what: "1st continue of 1M, no snapshot: 1st event".to_owned(),
        measured: ms(first.first_event),
        baseline: format!("whole turn {}", ms(first.whole)),
        ratio: "-".to_owned(),
        goal: "(info)",
        met: None,
    });
    infos.push(Row {
        what: "1st continue heap peak (incl. redb cache)".to_owned(),
        measured: mb(first_peak),
        baseline: format!("{} (1K session)", mb(short_first_peak)),
        ratio: format!("{:.2}x", first_peak as f64 / short_first_peak as f64),
        goal: "(info)",
        met: None,
    });

    // 3. The heap a turn needs at its peak (its own and the store's cache of what it reads),
    // on the long session and on the short one, each on a store opened afresh. Both sessions
    // have a snapshot at their first turn's end and tails of the same length.
    let (mut len, mut state) = (first.outcome.len, first.outcome.state);
    let (mut short_len, mut short_state) = (short_first.len, short_first.state);
    let mut long_peaks = Vec::new();
    let mut short_peaks = Vec::new();
    for round in 0..MEMORY_ROUNDS {
        let text = format!("memory {round}");
        let (_store, workflow) = open(&path)?;
        let (peak, outcome) = turn_peak(&workflow, &long, &text).await?;
        check_turn(&outcome, len, &state)?;
        long_peaks.push(peak);
        (len, state) = (outcome.len, outcome.state);
        drop((_store, workflow));
        let (_store, workflow) = open(&path)?;
        let (peak, outcome) = turn_peak(&workflow, &short, &text).await?;
        check_turn(&outcome, short_len, &short_state)?;
        short_peaks.push(peak);
        (short_len, short_state) = (outcome.len, outcome.state);
    }
    let long_peak = long_peaks.iter().copied().max().unwrap_or_default();
    let short_peak = short_peaks.iter().copied().max().unwrap_or_default();
    let share = long_peak as f64 / short_peak as f64;
    let memory = Row {
        what: "turn heap peak: 1M vs 1K session, max".to_owned(),
        measured: mb(long_peak),
        baseline: mb(short_peak),
        ratio: format!("{share:.2}x"),
        goal: "<= 1.2x",
        met: Some(share <= 1.2),
    };

    let (store, workflow) = open(&path)?;
    // 1. A turn on the long session, snapshot present, against reading its state and one
    // append, in interleaved rounds.
    let scratch = SessionId::new();
    let mut scratch_len = 0;
    let mut turns = Vec::new();
    let mut wholes = Vec::new();
    let mut rendered = Vec::new();
    let mut baselines = Vec::new();
    for round in 0..ROUNDS {
        let started = Instant::now();
        let loaded = workflow.load_state_at(&long, len).await?;
        let event = Envelope::typed(&Ticked { n: round as u64 }, None)?;
        scratch_len = store.append(&scratch, &[event], scratch_len).await?;
        baselines.push(started.elapsed());
        check(loaded.count == state.count, || {
            format!(
                "load_state_at read count {}, not {}",
                loaded.count, state.count
            )
        })?;
        let turn = timed_turn(&store, &workflow, &long, &format!("round {round}")).await?;
        check_turn(&turn.outcome, len, &state)?;
        turns.push(turn.first_event);
        wholes.push(turn.whole);
        rendered.push(turn.rendered);
        len = turn.outcome.len;
        state = turn.outcome.state;
    }
    let (turn, baseline) = (median(&turns), median(&baselines));
    let continued = ratio(turn, baseline);
    rows.push(Row {
        what: "continue 1M: 1st event durable, median".to_owned(),
        measured: format!("{} (best {})", ms(turn), ms(best(&turns))),
        baseline: format!("{} (best {})", ms(baseline), ms(best(&baselines))),
        ratio: format!("{continued:.2}x"),
        goal: "<= 1.5x",
        met: Some(continued <= 1.5),
    });
    let seen = median(&rendered);
    infos.push(Row {
        what: "continue 1M: 1st event rendered, median".to_owned(),
        measured: format!("{} (best {})", ms(seen), ms(best(&rendered))),
        baseline: "state + 1 append, as above".to_owned(),
        ratio: format!("{:.2}x", ratio(seen, baseline)),
        goal: "(info)",
        met: None,
    });
    let whole = median(&wholes);
    infos.push(Row {
        what: "continue 1M: whole turn, median".to_owned(),
        measured: format!("{} (best {})", ms(whole), ms(best(&wholes))),
        baseline: "state + 1 append, as above".to_owned(),
        ratio: format!("{:.2}x", ratio(whole, baseline)),
        goal: "(info)",
        met: None,
    });

    // 2. Cut the long session's last turn off: an input, its item, a few hundred more items
    // and an agent call that never completed, after the snapshot of a turn boundary.
    let input = Envelope::typed(&UserInput::new("cut off"), None)?;
    let cause = Some(input.id);
    let mut tail = vec![input, Envelope::typed(&Ticked { n: 0 }, cause)?];
    for n in 0..CUT_OFF_TAIL {
        tail.push(Envelope::typed(&Ticked { n }, None)?);
    }
    tail.push(Envelope::typed(
        &AgentStarted {
            agent: "helper".to_owned(),
            prompt: "carry on".to_owned(),
            ..AgentStarted::default()
        },
        cause,
    )?);
    len = store.append(&long, &tail, len).await?;
    let snapshot_at = store
        .latest_snapshot(&long, len)
        .await?
        .map(|s| s.position)
        .ok_or("the long session lost its snapshot")?;
    let mut derived = Vec::new();
    let mut baselines = Vec::new();
    for _ in 0..UNFINISHED_ROUNDS {
        let started = Instant::now();
        let snapshot = store
            .latest_snapshot(&long, len)
            .await?
            .ok_or("the long session lost its snapshot")?;
        let position = snapshot.position;
        let state: Tally = serde_json::from_value(snapshot.state)?;
        let events = store.events(&long, position..len).await?;
        baselines.push(started.elapsed());
        black_box((state, events));
        let started = Instant::now();
        let report = workflow.unfinished(&long).await?;
        derived.push(started.elapsed());
        check(
            report.len == len
                && report.status == SessionStatus::Running
                && report.snapshot_at == snapshot_at
                && report.open_calls.len() == 1
                && report.open_calls.first().map(|c| c.agent.as_str()) == Some("helper")
                && report.unrecorded.is_empty()
                && report.open_requests.is_empty(),
            || format!("unfinished reported {report:?}"),
        )?;
    }
    let (found, baseline) = (median(&derived), median(&baselines));
    let share = ratio(found, baseline);
    rows.push(Row {
        what: "unfinished of 1M (cut-off tail), median".to_owned(),
        measured: format!("{} (best {})", ms(found), ms(best(&derived))),
        baseline: format!("{} (best {})", ms(baseline), ms(best(&baselines))),
        ratio: format!("{share:.2}x"),
        goal: "<= 2x",
        met: Some(share <= 2.0),
    });
    rows.push(memory);
    rows.extend(infos);
    eprintln!(
        "bench sessions: the cut-off tail is {} events after the snapshot at {snapshot_at}",
        len - snapshot_at
    );
    Ok(rows)
}
