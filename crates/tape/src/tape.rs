//! [`Tape`]: positions, moves, snapshots, diffs, searches and playback over one session.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use openharness_core::builtin::SessionForked;
use openharness_core::{
    Envelope, Event, Fold, Pattern, Renderer, RunOptions, RunOutcome, SessionId, Snapshot, Store,
    StoreError, Workflow, WorkflowState, renderer_fn,
};
use serde::Serialize;
use tokio::sync::mpsc::{UnboundedReceiver, error::TryRecvError, unbounded_channel};
use tokio::task::JoinHandle;

use crate::error::TapeError;
use crate::snapshots::{Calibration, FineCache};

/// How deep a chain of forks may be (a fork of a fork of ...) before loading gives up; it
/// also stops a corrupt log whose forks form a cycle.
const MAX_FORK_DEPTH: usize = 64;

/// A recorded (or recording) session you can step through. See the crate docs for the
/// position rule.
///
/// ```
/// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_tape::TapeError> {
/// use openharness_tape::LoadTape;
/// let mut tape = workflow.load(&id).await?;
/// tape.step_to(tape.len());                       // the final state
/// let back = tape.find_name_back("task:started"); // the last task that started
/// let patch = tape.diff(0, tape.len())?;          // everything the run changed
/// # let _ = (back, patch); Ok(()) }
/// ```
pub struct Tape<S: WorkflowState> {
    workflow: Workflow<S>,
    session: SessionId,
    events: Vec<Envelope>,
    /// The cursor: the state at the current position.
    fold: Fold<S>,
    /// `snapshots[i]` is the state at position `i * interval`; `snapshots[0]` is the initial
    /// state (the workflow's, or the parent's state at the fork point for a forked session).
    snapshots: Vec<S>,
    interval: u64,
    /// Folds ahead of the cursor to lay down snapshots as events arrive.
    indexer: Fold<S>,
    /// States inside one segment between two snapshots, so that stepping back is cheap.
    fine: Option<FineCache<S>>,
    calibration: Calibration,
    live: Option<Live<S>>,
    paused: Arc<AtomicBool>,
    playing: bool,
}

/// The run behind a recording tape.
struct Live<S> {
    rx: UnboundedReceiver<Envelope>,
    run: Option<JoinHandle<Result<RunOutcome<S>, openharness_core::Error>>>,
    ended: bool,
}

impl<S: WorkflowState> std::fmt::Debug for Tape<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tape")
            .field("session", &self.session)
            .field("position", &self.position())
            .field("len", &self.len())
            .field("status", &self.status())
            .field("snapshot_interval", &self.interval)
            .finish_non_exhaustive()
    }
}

/// What a tape is doing, as [`Tape::status`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TapeStatus {
    /// Replaying, not playing: moves happen only when asked.
    Idle,
    /// Attached to a live run that is still recording; the tape grows.
    Recording,
    /// [`Tape::play`] or [`Tape::play_to`] is running.
    Playing,
    /// A play was paused with [`Tape::pause`] (or a [`Pauser`]).
    Paused,
}

/// How fast [`Tape::play`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Pacing {
    /// As fast as possible (yielding to other tasks now and then).
    #[default]
    Instant,
    /// This long between two events.
    Every(Duration),
    /// The recorded gaps between events, divided by `speed` (2.0 plays twice as fast), each
    /// gap capped at one second.
    Recorded {
        /// The speed-up factor (values at or below 0 play instantly).
        speed: f64,
    },
}

/// A handle that pauses a tape's playback from elsewhere (another task, a key handler).
///
/// ```
/// # fn demo<S: openharness_core::WorkflowState>(tape: &openharness_tape::Tape<S>) {
/// let pauser = tape.pauser();
/// // ... hand `pauser` to a task; `pauser.pause()` stops a running `tape.play(..)`
/// pauser.pause();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Pauser(Arc<AtomicBool>);

impl Pauser {
    /// Stops the running play after the event it is on.
    pub fn pause(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Loading a recorded session as a [`Tape`]: `workflow.load(&session_id)`.
pub trait LoadTape<S: WorkflowState> {
    /// Reads the session from the workflow's store and returns a tape at position 0.
    ///
    /// A forked session starts from its parent's state at the fork point (read from the
    /// same store), so its position 0 is that state.
    ///
    /// A chain of forks deeper than 64 sessions (or a cycle of them, which only a corrupt
    /// store holds) fails with [`openharness_core::Error::Store`] and
    /// [`openharness_core::StoreError::Corrupt`].
    fn load(
        &self,
        session: &SessionId,
    ) -> impl Future<Output = Result<Tape<S>, openharness_core::Error>> + Send;

    /// The state at `position` (clamped) of a stored session, read from the store without
    /// loading the whole session: the store's latest persisted snapshot at or before
    /// `position` (see [`Tape::persist_snapshots`]) and the events after it. Without a
    /// usable snapshot (none saved, or one that no longer decodes into `S`), folds from the
    /// start.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>, id: openharness_core::SessionId) -> Result<(), openharness_core::Error> {
    /// use openharness_tape::LoadTape;
    /// let state = workflow.load_state_at(&id, 100_000).await?;
    /// # let _ = state; Ok(()) }
    /// ```
    fn load_state_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> impl Future<Output = Result<S, openharness_core::Error>> + Send;
}

impl<S: WorkflowState> LoadTape<S> for Workflow<S> {
    async fn load(&self, session: &SessionId) -> Result<Tape<S>, openharness_core::Error> {
        // Read in chunks and fold each chunk while the store reads the next one, so a replay
        // costs little more than the read itself.
        let store = self.store();
        let failed = |source| openharness_core::Error::Store {
            store: store.describe(),
            session: Some(session.clone()),
            source,
        };
        let first = store.events(session, 0..LOAD_CHUNK).await.map_err(failed)?;
        if first.is_empty() {
            return Err(openharness_core::Error::SessionNotFound(session.clone()));
        }
        check_workflow(self, session, &first)?;
        let initial = base_state(self, session, &first, 0).await?;
        let full = first.len() as u64 == LOAD_CHUNK;
        let mut tape = Tape::from_events_at(self.clone(), session.clone(), first, initial);
        let mut pending = if full {
            let start = tape.len();
            Some(
                store
                    .events(session, start..start + LOAD_CHUNK)
                    .await
                    .map_err(failed)?,
            )
        } else {
            None
        };
        while let Some(chunk) = pending.take().filter(|c| !c.is_empty()) {
            let more = chunk.len() as u64 == LOAD_CHUNK;
            let start = tape.len() + chunk.len() as u64;
            tape.events.extend(chunk);
            let indexing = tokio::task::spawn_blocking(move || {
                tape.index();
                tape
            });
            if more {
                let (indexed, next) = tokio::join!(
                    join(indexing),
                    store.events(session, start..start + LOAD_CHUNK)
                );
                tape = indexed;
                pending = Some(next.map_err(failed)?);
            } else {
                tape = join(indexing).await;
            }
        }
        Ok(tape)
    }

    async fn load_state_at(
        &self,
        session: &SessionId,
        position: u64,
    ) -> Result<S, openharness_core::Error> {
        let store = self.store();
        let failed = |source| openharness_core::Error::Store {
            store: store.describe(),
            session: Some(session.clone()),
            source,
        };
        // Read the snapshot and the events a dense snapshot would need at the same time.
        let window = position.saturating_sub(PERSISTED_INTERVAL);
        let (snapshot, recent) = tokio::join!(
            store.latest_snapshot(session, position),
            store.events(session, window..position)
        );
        let snapshot = snapshot
            .map_err(failed)?
            .filter(|s| s.position > 0)
            .and_then(|s| match serde_json::from_value::<S>(s.state) {
                Ok(state) => Some((s.position, state)),
                Err(err) => {
                    tracing::warn!(%session, position = s.position, error = %err, "a persisted snapshot does not decode; folding from the start");
                    None
                }
            });
        let (state, events) = match snapshot {
            Some((at, state)) if at >= window => {
                let skip = usize::try_from(at - window).unwrap_or(usize::MAX);
                let mut recent = recent.map_err(failed)?;
                (state, recent.split_off(skip.min(recent.len())))
            }
            Some((at, state)) => (
                state,
                store.events(session, at..position).await.map_err(failed)?,
            ),
            None => {
                let mut events = self.session_events(session).await?;
                let initial = base_state(self, session, &events, 0).await?;
                events.truncate(usize::try_from(position).unwrap_or(usize::MAX));
                (initial, events)
            }
        };
        // Positions relative to `at`: the fold reads only this slice of the log.
        let mut fold = Fold::new(state);
        for event in &events {
            fold.apply(event, &events);
        }
        Ok(fold.into_state())
    }
}

/// The densest interval of snapshots [`Tape::persist_snapshots`] saves.
const PERSISTED_INTERVAL: u64 = 256;

/// How many events [`LoadTape::load`] reads at a time.
const LOAD_CHUNK: u64 = 16_384;

/// Waits for a blocking task, passing its panic on.
async fn join<T>(task: tokio::task::JoinHandle<T>) -> T {
    match task.await {
        Ok(value) => value,
        Err(err) => std::panic::resume_unwind(err.into_panic()),
    }
}

/// Fails when the first events name another workflow (as [`Workflow::session_events`] does).
fn check_workflow<S: WorkflowState>(
    workflow: &Workflow<S>,
    session: &SessionId,
    events: &[Envelope],
) -> Result<(), openharness_core::Error> {
    let recorded = events
        .iter()
        .find(|e| e.name == "workflow:started")
        .and_then(|e| e.payload["workflow"].as_str());
    match recorded {
        Some(recorded) if recorded != workflow.name() => {
            Err(openharness_core::Error::WrongWorkflow {
                session: session.clone(),
                recorded: recorded.to_owned(),
                workflow: workflow.name().to_owned(),
            })
        }
        _ => Ok(()),
    }
}

/// The state a session starts from: the workflow's initial state, or for a fork the parent's
/// state at the fork point.
fn base_state<'a, S: WorkflowState>(
    workflow: &'a Workflow<S>,
    session: &'a SessionId,
    events: &'a [Envelope],
    depth: usize,
) -> std::pin::Pin<Box<dyn Future<Output = Result<S, openharness_core::Error>> + Send + 'a>> {
    Box::pin(async move {
        let Some(forked) = events
            .first()
            .filter(|e| e.name == SessionForked::NAME)
            .and_then(|e| e.decode::<SessionForked>().ok())
        else {
            return Ok(workflow.initial_state().clone());
        };
        if depth >= MAX_FORK_DEPTH {
            return Err(openharness_core::Error::Store {
                store: workflow.store().describe(),
                session: Some(session.clone()),
                source: StoreError::Corrupt {
                    session: session.clone(),
                    seq: 0,
                    message: format!(
                        "it is forked from a chain of more than {MAX_FORK_DEPTH} sessions (a cycle?)"
                    ),
                },
            });
        }
        let parent_events = workflow.session_events(&forked.parent).await?;
        let parent_base = base_state(workflow, &forked.parent, &parent_events, depth + 1).await?;
        let parent = Tape::from_events_at(
            workflow.clone(),
            forked.parent.clone(),
            parent_events,
            parent_base,
        );
        Ok(parent.state_at(forked.position))
    })
}

impl<S: WorkflowState> Tape<S> {
    /// A tape over `events` (a session's log from seq 0), at position 0, starting from the
    /// workflow's initial state.
    pub fn from_events(workflow: Workflow<S>, session: SessionId, events: Vec<Envelope>) -> Self {
        let initial = workflow.initial_state().clone();
        Self::from_events_at(workflow, session, events, initial)
    }

    /// A tape over `events` whose position 0 is `initial` (for a forked session: the
    /// parent's state at the fork point).
    ///
    /// Folds the whole log once to lay down snapshots; the snapshot interval is chosen from
    /// the measured per-event fold cost and the sizes of the state and the events (see
    /// [`TapeStats`]).
    pub fn from_events_at(
        workflow: Workflow<S>,
        session: SessionId,
        events: Vec<Envelope>,
        initial: S,
    ) -> Self {
        let calibration = Calibration::measure(&initial, &events);
        let interval = calibration.interval();
        Self::build(workflow, session, events, initial, calibration, interval)
    }

    fn build(
        workflow: Workflow<S>,
        session: SessionId,
        events: Vec<Envelope>,
        initial: S,
        calibration: Calibration,
        interval: u64,
    ) -> Self {
        let mut tape = Self {
            workflow,
            session,
            events,
            fold: Fold::new(initial.clone()),
            indexer: Fold::new(initial.clone()).with_checkpoint_interval(interval),
            snapshots: vec![initial],
            interval,
            fine: None,
            calibration,
            live: None,
            paused: Arc::new(AtomicBool::new(false)),
            playing: false,
        };
        tape.index();
        tape
    }

    /// The same tape with snapshots every `interval` events (at least 1) instead of the
    /// measured choice; for tests that want many snapshot boundaries.
    #[must_use]
    pub fn with_snapshot_interval(self, interval: u64) -> Self {
        let position = self.position();
        let initial = self.snapshots[0].clone();
        let mut tape = Self::build(
            self.workflow,
            self.session,
            self.events,
            initial,
            self.calibration,
            interval.max(1),
        );
        tape.live = self.live;
        tape.step_to(position);
        tape
    }

    /// Starts `workflow` on a tokio task and returns its tape, which grows as the run records
    /// events ([`Tape::is_recording`] is true until the run ends). Call [`Tape::refresh`] to
    /// take in what was recorded so far, [`Tape::play`] to follow the run, and
    /// [`Tape::wait`] for its outcome. Must be called inside a tokio runtime.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) -> Result<(), openharness_tape::TapeError> {
    /// use openharness_core::RunOptions;
    /// use openharness_tape::Tape;
    /// let mut tape = Tape::record(&workflow, RunOptions::new().input("go"));
    /// assert!(tape.is_recording() || tape.len() > 0);
    /// let outcome = tape.wait().await?;   // the run is over; the tape holds every event
    /// assert_eq!(tape.len(), outcome.len);
    /// # Ok(()) }
    /// ```
    pub fn record(workflow: &Workflow<S>, options: RunOptions) -> Self {
        let session = options.session_id().cloned().unwrap_or_default();
        let (tx, rx) = unbounded_channel();
        let forward = renderer_fn(Pattern::Any, move |event: &Envelope| {
            let _ = tx.send(event.clone());
        });
        let options = options.session(session.clone()).renderer(forward);
        let runner = workflow.clone();
        let run = tokio::spawn(async move { runner.run(options).await });
        let initial = workflow.initial_state().clone();
        let calibration = Calibration::measure(&initial, &[]);
        let interval = calibration.interval();
        let mut tape = Self::build(
            workflow.clone(),
            session,
            Vec::new(),
            initial,
            calibration,
            interval,
        );
        tape.live = Some(Live {
            rx,
            run: Some(run),
            ended: false,
        });
        tape
    }

    /// Takes in the events a live run recorded since the last call. Returns the new length.
    /// Does nothing on a replaying tape.
    pub fn refresh(&mut self) -> u64 {
        let mut arrived = false;
        if let Some(live) = &mut self.live {
            loop {
                match live.rx.try_recv() {
                    Ok(event) => {
                        self.events.push(event);
                        arrived = true;
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        live.ended = true;
                        break;
                    }
                }
            }
        }
        if arrived {
            self.index();
        }
        self.len()
    }

    /// Waits until a live run records more events (true) or ends (false).
    async fn wait_for_events(&mut self) -> bool {
        let Some(live) = &mut self.live else {
            return false;
        };
        if live.ended {
            return false;
        }
        match live.rx.recv().await {
            Some(event) => {
                self.events.push(event);
                self.refresh();
                self.index();
                true
            }
            None => {
                live.ended = true;
                false
            }
        }
    }

    /// Waits for a live run to end, takes in all its events and returns its outcome.
    /// A replaying tape has no run: that is [`TapeError::NotRecording`].
    pub async fn wait(&mut self) -> Result<RunOutcome<S>, TapeError> {
        let handle = self
            .live
            .as_mut()
            .and_then(|live| live.run.take())
            .ok_or_else(|| TapeError::NotRecording(self.session.clone()))?;
        let outcome = handle.await.map_err(|err| TapeError::RunTask {
            session: self.session.clone(),
            message: err.to_string(),
        })?;
        while self.wait_for_events().await {}
        Ok(outcome?)
    }

    /// The session this tape plays.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The current position, in `0..=len`.
    pub fn position(&self) -> u64 {
        self.fold.position()
    }

    /// The number of events (so far, for a recording tape).
    pub fn len(&self) -> u64 {
        self.events.len() as u64
    }

    /// Whether the tape has no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The event that led to the current position (`None` at position 0).
    pub fn current(&self) -> Option<&Envelope> {
        self.event_at(self.position())
    }

    /// The event that leads to position `position` (event `position - 1`), if any.
    pub fn event_at(&self, position: u64) -> Option<&Envelope> {
        let index = usize::try_from(position.checked_sub(1)?).ok()?;
        self.events.get(index)
    }

    /// Every event of the session (so far).
    pub fn events(&self) -> &[Envelope] {
        &self.events
    }

    /// The state at the current position.
    pub fn state(&self) -> &S {
        self.fold.state()
    }

    /// The state at position 0.
    pub fn initial_state(&self) -> &S {
        &self.snapshots[0]
    }

    /// Whether the tape is attached to a live run that has not ended yet (as of the last
    /// [`Tape::refresh`]).
    pub fn is_recording(&self) -> bool {
        self.live.as_ref().is_some_and(|live| !live.ended)
    }

    /// Whether the tape plays recorded events only (not attached to a running run).
    pub fn is_replaying(&self) -> bool {
        !self.is_recording()
    }

    /// What the tape is doing.
    pub fn status(&self) -> TapeStatus {
        if self.playing {
            TapeStatus::Playing
        } else if self.paused.load(Ordering::SeqCst) {
            TapeStatus::Paused
        } else if self.is_recording() {
            TapeStatus::Recording
        } else {
            TapeStatus::Idle
        }
    }

    /// Moves one event forward (stays at `len`). Returns the new position.
    pub fn step(&mut self) -> u64 {
        if self.position() == self.len() {
            self.refresh();
        }
        let position = self.position();
        if let Some(event) = usize::try_from(position)
            .ok()
            .and_then(|i| self.events.get(i))
        {
            self.fold.apply(event, &self.events);
        }
        self.position()
    }

    /// Moves one event back (stays at 0). Returns the new position.
    pub fn step_back(&mut self) -> u64 {
        self.step_to(self.position().saturating_sub(1))
    }

    /// Moves to position 0.
    pub fn rewind(&mut self) -> u64 {
        self.step_to(0)
    }

    /// Moves to `position`, clamped to `0..=len`. Returns the new position.
    ///
    /// Folds at most one snapshot interval of events: forwards from the current position
    /// when it is close, otherwise from the nearest snapshot (or, going backwards, from the
    /// states kept for the segment being walked).
    pub fn step_to(&mut self, position: u64) -> u64 {
        if position > self.len() {
            self.refresh();
        }
        let target = position.min(self.len());
        let current = self.position();
        if target >= current && target - current <= self.interval {
            self.fold_cursor_to(target);
            return self.position();
        }
        if target < current {
            self.ensure_fine(target);
        }
        let (at, state) = self.nearest(target);
        // Going forwards past the nearest known state, the cursor is the better start.
        if current < at || current > target {
            self.fold = Fold::at(state.clone(), at);
        }
        self.fold_cursor_to(target);
        self.position()
    }

    fn fold_cursor_to(&mut self, target: u64) {
        let start = usize::try_from(self.position()).unwrap_or(usize::MAX);
        let end = usize::try_from(target).unwrap_or(usize::MAX);
        for event in self.events.get(start..end).unwrap_or_default() {
            self.fold.apply(event, &self.events);
        }
    }

    /// The state at `position` (clamped), without moving the tape.
    pub fn state_at(&self, position: u64) -> S {
        let target = position.min(self.len());
        if target == self.position() {
            return self.state().clone();
        }
        let (at, state) = self.nearest(target);
        if self.position() <= target && self.position() > at {
            self.fold_from(self.state().clone(), self.position(), target)
        } else {
            self.fold_from(state.clone(), at, target)
        }
    }

    fn fold_from(&self, state: S, at: u64, target: u64) -> S {
        let mut fold = Fold::at(state, at);
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        let end = usize::try_from(target).unwrap_or(usize::MAX);
        for event in self.events.get(start..end).unwrap_or_default() {
            fold.apply(event, &self.events);
        }
        fold.into_state()
    }

    /// The state at `a` turned into the state at `b`, as an RFC 6902 JSON patch.
    ///
    /// `diff(p - 1, p)` is what the event at `p` changed.
    ///
    /// ```
    /// # fn demo<S: openharness_core::WorkflowState>(tape: &openharness_tape::Tape<S>) -> Result<(), openharness_tape::TapeError> {
    /// let patch = tape.diff(0, tape.len())?;
    /// for op in &patch.0 {
    ///     println!("{op}");          // e.g. {"op":"replace","path":"/completed","value":3}
    /// }
    /// # Ok(()) }
    /// ```
    pub fn diff(&self, a: u64, b: u64) -> Result<json_patch::Patch, TapeError> {
        let encode = |position: u64| {
            serde_json::to_value(self.state_at(position))
                .map_err(|source| TapeError::Encode { position, source })
        };
        Ok(json_patch::diff(&encode(a)?, &encode(b)?))
    }

    /// Moves forward to the first position `p > position` whose event and state match
    /// `pred(event p - 1, state at p)`. Returns the new position, or `None` (and stays) if
    /// none does.
    pub fn find(&mut self, mut pred: impl FnMut(&Envelope, &S) -> bool) -> Option<u64> {
        self.refresh();
        let mut probe = self.fold.clone();
        let start = usize::try_from(self.position()).unwrap_or(usize::MAX);
        for event in self.events.get(start..).unwrap_or_default() {
            probe.apply(event, &self.events);
            if pred(event, probe.state()) {
                self.fold = probe;
                return Some(self.position());
            }
        }
        None
    }

    /// Moves back to the last position `0 < p < position` whose event and state match
    /// `pred(event p - 1, state at p)`. Returns the new position, or `None` (and stays).
    pub fn find_back(&mut self, mut pred: impl FnMut(&Envelope, &S) -> bool) -> Option<u64> {
        let end = self.position().saturating_sub(1);
        let mut segment_end = end;
        while segment_end > 0 {
            let (at, state) = self.snapshot_at_or_before(segment_end - 1);
            let mut fold = Fold::at(state.clone(), at);
            let mut found = None;
            let from = usize::try_from(at).unwrap_or(usize::MAX);
            let to = usize::try_from(segment_end).unwrap_or(usize::MAX);
            for event in self.events.get(from..to).unwrap_or_default() {
                fold.apply(event, &self.events);
                if pred(event, fold.state()) {
                    found = Some(fold.position());
                }
            }
            if let Some(position) = found {
                return Some(self.step_to(position));
            }
            segment_end = at;
        }
        None
    }

    /// Moves forward to the next event named `name` (the position right after it).
    /// Returns the new position, or `None` (and stays).
    pub fn find_name(&mut self, name: &str) -> Option<u64> {
        self.refresh();
        let start = usize::try_from(self.position()).unwrap_or(usize::MAX);
        let index = self
            .events
            .get(start..)?
            .iter()
            .position(|e| e.name == name)?;
        Some(self.step_to((start + index + 1) as u64))
    }

    /// Moves back to the previous event named `name` before the current one (the position
    /// right after it). Returns the new position, or `None` (and stays).
    pub fn find_name_back(&mut self, name: &str) -> Option<u64> {
        let end = usize::try_from(self.position().saturating_sub(1)).unwrap_or(usize::MAX);
        let index = self
            .events
            .get(..end)?
            .iter()
            .rposition(|e| e.name == name)?;
        Some(self.step_to((index + 1) as u64))
    }

    /// Plays to the end, handing each event to `renderer` (its patterns apply), at `pacing`.
    /// On a recording tape, follows the run until it ends. Stops early on [`Tape::pause`].
    /// Returns the position reached.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(mut tape: openharness_tape::Tape<S>) {
    /// use openharness_core::renderer_fn;
    /// use openharness_tape::Pacing;
    /// let mut printer = renderer_fn("*".parse().unwrap(), |event| println!("{}", event.name));
    /// tape.play(&mut printer, Pacing::Instant).await;
    /// assert_eq!(tape.position(), tape.len());
    /// # }
    /// ```
    pub async fn play<R: Renderer + ?Sized>(&mut self, renderer: &mut R, pacing: Pacing) -> u64 {
        self.play_to(u64::MAX, renderer, pacing).await
    }

    /// Plays forward to `position` (clamped to the end of the run), like [`Tape::play`].
    pub async fn play_to<R: Renderer + ?Sized>(
        &mut self,
        position: u64,
        renderer: &mut R,
        pacing: Pacing,
    ) -> u64 {
        self.paused.store(false, Ordering::SeqCst);
        self.playing = true;
        let patterns = renderer.patterns();
        let mut played = 0u64;
        while self.position() < position && !self.paused.load(Ordering::SeqCst) {
            if self.position() == self.len() {
                self.refresh();
                if self.position() == self.len() && !self.wait_for_events().await {
                    break;
                }
            }
            let gap = match pacing {
                Pacing::Instant => None,
                Pacing::Every(gap) => Some(gap),
                Pacing::Recorded { speed } => self.recorded_gap(speed),
            };
            match gap {
                Some(gap) if !gap.is_zero() => tokio::time::sleep(gap).await,
                _ if played % 256 == 255 => tokio::task::yield_now().await,
                _ => {}
            }
            if self.paused.load(Ordering::SeqCst) {
                break;
            }
            self.step();
            played += 1;
            if let Some(event) = self.current()
                && patterns.iter().any(|p| p.matches(&event.name))
                && let Err(panic) = catch_unwind(AssertUnwindSafe(|| renderer.render(event)))
            {
                tracing::error!(event = %event.name, panic = ?panic.downcast_ref::<&str>(), "a renderer panicked during playback");
            }
        }
        self.playing = false;
        self.position()
    }

    /// The recorded time between the current event and the next one, divided by `speed`.
    fn recorded_gap(&self, speed: f64) -> Option<Duration> {
        if speed <= 0.0 {
            return None;
        }
        let next = self.event_at(self.position() + 1)?;
        let previous = self.current()?;
        let gap = (next.timestamp - previous.timestamp).to_std().ok()?;
        Some(gap.div_f64(speed).min(Duration::from_secs(1)))
    }

    /// Stops a running play after its current event (a no-op when not playing). Use a
    /// [`Pauser`] to pause from another task while `play` holds the tape.
    pub fn pause(&self) {
        if self.playing {
            self.paused.store(true, Ordering::SeqCst);
        }
    }

    /// A handle that pauses this tape's playback from elsewhere.
    pub fn pauser(&self) -> Pauser {
        Pauser(Arc::clone(&self.paused))
    }

    /// A serializable view of the current position: `{position, len, current, state}`.
    pub fn view(&self) -> TapeView<'_, S> {
        TapeView {
            position: self.position(),
            len: self.len(),
            current: self.current(),
            state: self.state(),
        }
    }

    /// Saves snapshots of this session to the workflow's store, so that
    /// [`LoadTape::load_state_at`] reads few events: one every `min(K, 256)` events, `K`
    /// being the tape's interval (stored snapshots cost disk, not memory, so they may be
    /// denser than the tape's). Returns how many were saved.
    pub async fn persist_snapshots(&self) -> Result<u64, TapeError> {
        let every = self.interval.min(PERSISTED_INTERVAL);
        let store = self.workflow.store();
        let mut fold = Fold::new(self.snapshots[0].clone());
        let mut saved = 0;
        for event in &self.events {
            fold.apply(event, &self.events);
            let position = fold.position();
            if !position.is_multiple_of(every) {
                continue;
            }
            let state = serde_json::to_value(fold.state())
                .map_err(|source| TapeError::Encode { position, source })?;
            store
                .snapshot(&self.session, &Snapshot::new(position, state))
                .await
                .map_err(|source| openharness_core::Error::Store {
                    store: store.describe(),
                    session: Some(self.session.clone()),
                    source,
                })?;
            saved += 1;
        }
        Ok(saved)
    }

    /// The workflow whose handlers this tape folds through.
    pub fn workflow(&self) -> &Workflow<S> {
        &self.workflow
    }

    /// How the tape keeps its snapshots, and what they cost.
    ///
    /// Serializes every snapshot to measure it: meant for benchmarks and diagnostics, not
    /// for hot paths.
    pub fn stats(&self) -> TapeStats {
        let snapshot_bytes = self
            .snapshots
            .iter()
            .map(crate::snapshots::encoded_len)
            .sum();
        let event_bytes = self.events.iter().map(crate::snapshots::encoded_len).sum();
        TapeStats {
            interval: self.interval,
            snapshots: self.snapshots.len() as u64,
            snapshot_bytes,
            event_bytes,
            fold_nanos_per_event: self.calibration.fold_nanos,
        }
    }

    /// The last snapshot at or before `target`, with its position.
    fn snapshot_at_or_before(&self, target: u64) -> (u64, &S) {
        let index = usize::try_from(target / self.interval)
            .unwrap_or(usize::MAX)
            .min(self.snapshots.len() - 1);
        (index as u64 * self.interval, &self.snapshots[index])
    }

    /// The latest known state at or before `target`: a snapshot or a state of the fine cache.
    fn nearest(&self, target: u64) -> (u64, &S) {
        let snapshot = self.snapshot_at_or_before(target);
        match self.fine.as_ref().and_then(|f| f.at_or_before(target)) {
            Some(fine) if fine.0 > snapshot.0 => fine,
            _ => snapshot,
        }
    }

    /// Makes sure the fine cache covers the segment holding `target`.
    fn ensure_fine(&mut self, target: u64) {
        let (base, _) = self.snapshot_at_or_before(target);
        if self.fine.as_ref().is_some_and(|f| f.base() == base) || self.interval < 16 {
            return;
        }
        let end = (base + self.interval).min(self.len());
        let (_, state) = self.snapshot_at_or_before(target);
        self.fine = Some(FineCache::build(
            state.clone(),
            base,
            end,
            self.interval,
            &self.events,
        ));
    }

    /// Folds the events not yet indexed, keeping a snapshot every `interval` events.
    fn index(&mut self) {
        let start = usize::try_from(self.indexer.position()).unwrap_or(usize::MAX);
        let end = self.events.len();
        for index in start..end {
            self.indexer.apply(&self.events[index], &self.events);
            let position = self.indexer.position();
            if position.is_multiple_of(self.interval) {
                self.snapshots.push(self.indexer.state().clone());
            }
        }
        // A live segment that grew invalidates a fine cache over it.
        if let Some(fine) = &self.fine
            && fine.end() < (fine.base() + self.interval).min(self.len())
        {
            self.fine = None;
        }
    }
}

/// What `openharness tape <id> --at N --json` prints.
#[derive(Debug, Serialize)]
pub struct TapeView<'a, S> {
    /// Current position.
    pub position: u64,
    /// Number of events.
    pub len: u64,
    /// The event that led here (`null` at position 0).
    pub current: Option<&'a Envelope>,
    /// The state at this position.
    pub state: &'a S,
}

/// How a tape keeps snapshots, from [`Tape::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TapeStats {
    /// Events between two snapshots.
    pub interval: u64,
    /// Snapshots kept (including the initial state).
    pub snapshots: u64,
    /// The snapshots' size, as JSON.
    pub snapshot_bytes: u64,
    /// The events' size, as JSON.
    pub event_bytes: u64,
    /// The measured cost of folding one event, in nanoseconds.
    pub fold_nanos_per_event: f64,
}
