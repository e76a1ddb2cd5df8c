//! [`Tape`]: positions, moves and snapshots over one session's events.

use std::future::Future;

use openharness_core::{
    DEFAULT_CHECKPOINT_INTERVAL, Envelope, Error, Fold, SessionId, Workflow, WorkflowState,
};
use serde::Serialize;

/// A recorded session you can step through. See the crate docs for the position rule.
pub struct Tape<S: WorkflowState> {
    workflow: Workflow<S>,
    session: SessionId,
    events: Vec<Envelope>,
    fold: Fold<S>,
    /// `snapshots[i]` is the state at position `i * interval`.
    snapshots: Vec<S>,
    interval: u64,
}

impl<S: WorkflowState> std::fmt::Debug for Tape<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tape")
            .field("session", &self.session)
            .field("position", &self.position())
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

/// Loading a recorded session as a [`Tape`]: `workflow.load(&session_id)`.
pub trait LoadTape<S: WorkflowState> {
    /// Reads the session from the workflow's store and returns a tape at position 0.
    fn load(&self, session: &SessionId) -> impl Future<Output = Result<Tape<S>, Error>> + Send;
}

impl<S: WorkflowState> LoadTape<S> for Workflow<S> {
    async fn load(&self, session: &SessionId) -> Result<Tape<S>, Error> {
        let events = self.session_events(session).await?;
        Ok(Tape::from_events(self.clone(), session.clone(), events))
    }
}

impl<S: WorkflowState> Tape<S> {
    /// A tape over `events` (a session's log from seq 0), at position 0.
    pub fn from_events(workflow: Workflow<S>, session: SessionId, events: Vec<Envelope>) -> Self {
        let initial = workflow.initial_state().clone();
        Self {
            workflow,
            session,
            events,
            fold: Fold::new(initial.clone()),
            snapshots: vec![initial],
            interval: DEFAULT_CHECKPOINT_INTERVAL,
        }
    }

    /// The session this tape plays.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The current position, in `0..=len`.
    pub fn position(&self) -> u64 {
        self.fold.position()
    }

    /// The number of events.
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

    /// Every event of the session.
    pub fn events(&self) -> &[Envelope] {
        &self.events
    }

    /// The state at the current position.
    pub fn state(&self) -> &S {
        self.fold.state()
    }

    /// Whether the tape is attached to a live run (always false for a loaded session).
    pub fn is_recording(&self) -> bool {
        false
    }

    /// Whether the tape plays a recorded session (always true for a loaded session).
    pub fn is_replaying(&self) -> bool {
        true
    }

    /// Moves one event forward (stays at `len`). Returns the new position.
    pub fn step(&mut self) -> u64 {
        let position = self.position();
        if let Some(event) = usize::try_from(position)
            .ok()
            .and_then(|i| self.events.get(i))
        {
            self.fold.apply(event, &self.events);
            self.remember_snapshot();
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
    pub fn step_to(&mut self, position: u64) -> u64 {
        let target = position.min(self.len());
        let current = self.position();
        if target < current || target - current > self.interval {
            let (at, state) = self.nearest_snapshot(target);
            self.fold = Fold::at(state, at);
        }
        while self.position() < target {
            self.step();
        }
        self.position()
    }

    /// The state at `position` (clamped), without moving the tape.
    pub fn state_at(&self, position: u64) -> S {
        let target = position.min(self.len());
        if target == self.position() {
            return self.state().clone();
        }
        let (at, state) = self.nearest_snapshot(target);
        let mut fold = Fold::at(state, at);
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        let end = usize::try_from(target).unwrap_or(usize::MAX);
        for event in self.events.get(start..end).unwrap_or_default() {
            fold.apply(event, &self.events);
        }
        fold.into_state()
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

    /// The workflow whose handlers this tape folds through.
    pub fn workflow(&self) -> &Workflow<S> {
        &self.workflow
    }

    fn nearest_snapshot(&self, target: u64) -> (u64, S) {
        let index = usize::try_from(target / self.interval)
            .unwrap_or(usize::MAX)
            .min(self.snapshots.len() - 1);
        (index as u64 * self.interval, self.snapshots[index].clone())
    }

    fn remember_snapshot(&mut self) {
        let position = self.position();
        if position.is_multiple_of(self.interval)
            && position / self.interval == self.snapshots.len() as u64
        {
            self.snapshots.push(self.state().clone());
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
