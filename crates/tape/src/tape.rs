//! [`Tape`]: positions, moves, snapshots, diffs and searches over one session; loading
//! (`load`), live recording (`live`) and playback (`playback`) live in submodules.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use openharness_core::{
    Envelope, SessionId, Undo, Workflow, WorkflowState,
    adapter::{Applied, Fold, Skipped},
};
use serde::Serialize;

use crate::error::TapeError;
use crate::snapshots::{Calibration, FineCache};

mod back;
mod live;
mod load;
mod playback;

use live::Live;
pub use load::LoadTape;
pub use playback::{Pacing, Pauser};

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
    /// How to take back the events the cursor folded last (for states whose handlers take
    /// `undo`): stepping back over them reverts their change instead of copying a state.
    undo: Undo<S>,
    /// `snapshots[i]` is the state at position `i * interval`; `snapshots[0]` is the initial
    /// state (the workflow's, or the parent's state at the fork point for a forked session).
    snapshots: Vec<S>,
    interval: u64,
    /// Folds ahead of the cursor to lay down snapshots as events arrive.
    indexer: Fold<S>,
    /// States inside one segment between two snapshots, so that stepping back is cheap.
    fine: Option<FineCache<S>>,
    /// Whether the event at each index ran one of the state's handlers when the indexer
    /// folded it: stepping back over one that did not leaves the state as it is.
    handled: Vec<bool>,
    /// States laid down by the last backward step that folded, each with its position: the
    /// state at the first position, and at each later one below `stretch_end` whose event
    /// ran a handler. The state at a position in between is the entry at or before it;
    /// further steps back take them without folding or cloning.
    stretch: Vec<(u64, S)>,
    stretch_end: u64,
    calibration: Calibration,
    live: Option<Live<S>>,
    paused: Arc<AtomicBool>,
    playing: bool,
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
        let mut tape = Self::unindexed(workflow, session, events, initial, calibration, interval);
        tape.index();
        tape
    }

    /// A tape over `events` whose snapshots are not laid down yet: call [`Tape::index`]
    /// before moving it.
    fn unindexed(
        workflow: Workflow<S>,
        session: SessionId,
        events: Vec<Envelope>,
        initial: S,
        calibration: Calibration,
        interval: u64,
    ) -> Self {
        Self {
            workflow,
            session,
            events,
            fold: Fold::new(initial.clone()).restoring().quiet(),
            undo: Undo::recording(),
            indexer: Fold::new(initial.clone())
                .restoring()
                .with_checkpoint_interval(interval),
            snapshots: vec![initial],
            interval,
            fine: None,
            handled: Vec::new(),
            stretch: Vec::new(),
            stretch_end: 0,
            calibration,
            live: None,
            paused: Arc::new(AtomicBool::new(false)),
            playing: false,
        }
    }

    /// The same tape with snapshots every `interval` events (at least 1) instead of the
    /// measured choice; for tests that want many snapshot boundaries.
    #[must_use]
    pub fn with_snapshot_interval(self, interval: u64) -> Self {
        let position = self.position();
        let initial = self.snapshots[0].clone();
        let mut tape = Self::unindexed(
            self.workflow,
            self.session,
            self.events,
            initial,
            self.calibration,
            interval.max(1),
        );
        tape.index();
        tape.live = self.live;
        tape.step_to(position);
        tape
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

    /// What folding this session's events skipped: events whose name the workflow does not
    /// know, and events whose payload no longer decodes (where the states shown diverge from
    /// the recorded run's), with their seqs. Counts the session's own events (not a fork's
    /// parent's), each once however often the tape moves.
    pub fn skipped(&self) -> &Skipped {
        self.indexer.skipped()
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
            self.fold
                .apply_recording(event, &self.events, &mut self.undo);
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
            self.step_back_to(target);
            return self.position();
        }
        let (at, state) = self.nearest(target);
        // Going forwards past the nearest known state, the cursor is the better start.
        if current < at || current > target {
            let fold = Fold::at(state.clone(), at).restoring().quiet();
            self.set_cursor(fold);
        }
        self.fold_cursor_to(target);
        self.position()
    }

    /// Folds the cursor forward to `target`, recording undos.
    fn fold_cursor_to(&mut self, target: u64) {
        let start = usize::try_from(self.position()).unwrap_or(usize::MAX);
        let end = usize::try_from(target).unwrap_or(usize::MAX);
        for event in self.events.get(start..end).unwrap_or_default() {
            self.fold
                .apply_recording(event, &self.events, &mut self.undo);
        }
    }

    /// Replaces the cursor; the undos recorded for the old one no longer apply.
    fn set_cursor(&mut self, fold: Fold<S>) {
        self.fold = fold;
        self.undo.clear();
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
        let mut fold = Fold::at(state, at).restoring().quiet();
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
                self.set_cursor(probe);
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
            let mut fold = Fold::at(state.clone(), at).restoring().quiet();
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

    /// A serializable view of the current position: `{position, len, current, state,
    /// skipped}`.
    pub fn view(&self) -> TapeView<'_, S> {
        TapeView {
            position: self.position(),
            len: self.len(),
            current: self.current(),
            state: self.state(),
            skipped: self.skipped(),
        }
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
            let applied = self.indexer.apply(&self.events[index], &self.events);
            self.handled.push(matches!(applied, Applied::Handled(_)));
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
    /// What folding the session skipped ([`Tape::skipped`]).
    pub skipped: &'a Skipped,
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
