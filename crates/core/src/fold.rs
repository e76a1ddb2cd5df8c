//! [`Fold`]: applying recorded events to a state, one at a time, safely.
//!
//! Both the live event loop and every replay fold through this type, so a run and its replay
//! agree by construction. A handler that panics leaves the state exactly as it was before the
//! event: the fold keeps a checkpoint (a clone every few hundred events and after every panic)
//! and re-derives the state from it and the log, so no per-event clone is needed.
//!
//! Checkpoints cost a clone of the state, so they are spaced by what they cost: when a clone
//! takes more than a twentieth of the time since the previous checkpoint, the interval doubles
//! (up to [`MAX_CHECKPOINT_INTERVAL`]); when clones become cheap again it halves back towards
//! [`DEFAULT_CHECKPOINT_INTERVAL`]. The first checkpoint is taken lazily, before the first
//! event is applied, so a fold made only to hold a state (a tape stepping backwards) clones
//! nothing.
//!
//! What a fold could not apply is counted in [`Skipped`] ([`Fold::skipped`]): events whose name
//! the workflow does not know, and events whose name it knows but whose payload no longer
//! decodes (the state silently diverges there, so callers should say so). Each distinct
//! (name, kind) is also logged once per fold. Handled events pay nothing for this.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::builtin;
use crate::contained::{panic_message, quietly};
use crate::emit::Emit;
use crate::event::{Decoded, Envelope, Event, EventSet};
use crate::handler::Handler;
use crate::undo::Undo;

mod window;
pub(crate) use window::Window;

/// What applying one event did.
#[derive(Debug)]
pub enum Applied {
    /// The handler ran; these are the events it emitted.
    Handled(Emit),
    /// The event is not in the workflow's event set (a built-in event the workflow does not
    /// handle, or an event from another version of the workflow), or the state has no
    /// handler for it ([`Handler::handles`]); the state is unchanged.
    Skipped,
    /// The handler panicked; the state is unchanged. Carries the panic message.
    Panicked(String),
    /// The name is known but the payload did not decode; the state is unchanged.
    Undecodable(String),
}

/// Folds a log into a state, one event at a time.
///
/// ```
/// # use openharness_core::{*, adapter::*};
/// # #[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// # struct Tick;
/// # impl Event for Tick { const NAME: &'static str = "clock:ticked"; }
/// # enum Events { Tick(Tick) }
/// # impl EventSet for Events {
/// #     const NAMES: &'static [&'static str] = &["clock:ticked"];
/// #     fn name(&self) -> &'static str { "clock:ticked" }
/// #     fn decode(name: &str, p: &serde_json::Value) -> Result<Decoded<Self>, serde_json::Error> {
/// #         if name == "clock:ticked" { Ok(Decoded::Known(Events::Tick(serde_json::from_value(p.clone())?))) } else { Ok(Decoded::Unknown) }
/// #     }
/// #     fn to_payload(&self) -> Result<serde_json::Value, serde_json::Error> { Ok(serde_json::Value::Null) }
/// # }
/// # #[derive(Clone, Default, serde::Serialize)]
/// # struct Clock { ticks: u64 }
/// # impl Handler for Clock {
/// #     type Events = Events;
/// #     fn apply(&mut self, _: &Events) -> Emit { self.ticks += 1; Emit::none() }
/// # }
/// let log = vec![Envelope::typed(&Tick, None).unwrap(), Envelope::typed(&Tick, None).unwrap()];
/// let mut fold = Fold::new(Clock::default());
/// for event in &log {
///     fold.apply(event, &log);
/// }
/// assert_eq!(fold.state().ticks, 2);
/// assert_eq!(fold.position(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Fold<S> {
    state: S,
    position: u64,
    /// The state at `checkpoint_position`; `None` until the first event is applied.
    checkpoint: Option<S>,
    checkpoint_position: u64,
    checkpoint_interval: u64,
    /// Whether the interval follows what checkpoints cost.
    adaptive: bool,
    /// When the last checkpoint was taken.
    checkpointed_at: Option<Instant>,
    skipped: Skipped,
    /// Whether skipped events are logged (a fold that re-folds what another already folded
    /// stays quiet, so one replay warns once).
    warn: bool,
    /// The (name, undecodable?) pairs already logged.
    warned: HashSet<(Box<str>, bool)>,
    /// Whether checkpoints are taken (see [`Fold::without_checkpoints`]).
    checkpoints: bool,
    /// Whether a handler panicked in a fold without checkpoints, leaving the state as the
    /// panic left it.
    spoiled: bool,
    /// Decodes the state a `turn:rolled_back` restores (see [`Fold::restoring`]).
    restore: Option<Restore<S>>,
}

/// Decodes a state from its JSON (what a `turn:rolled_back` carries).
type Restore<S> = fn(&serde_json::Value) -> Result<S, serde_json::Error>;

/// How many positions [`Skipped`] keeps of each kind (the counts go on past it).
pub const SKIPPED_POSITIONS: usize = 32;

/// What a fold skipped: counts, and the positions (seqs) of the first
/// [`SKIPPED_POSITIONS`] of each kind, so memory stays bounded however long the log.
///
/// Built-in events the workflow does not handle are not counted: skipping them is normal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Skipped {
    /// Events whose name the workflow does not know (another version's events).
    pub unknown: u64,
    /// Events whose name the workflow knows but whose payload does not decode.
    pub undecodable: u64,
    /// The seqs of the first unknown events.
    pub unknown_at: Vec<u64>,
    /// The first undecodable events: where, which and why.
    pub undecodable_at: Vec<UndecodableEvent>,
}

/// One event a fold could not decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UndecodableEvent {
    /// Its seq.
    pub seq: u64,
    /// Its name.
    pub name: String,
    /// Why it does not decode.
    pub error: String,
}

impl Skipped {
    /// How many events were skipped, of both kinds.
    pub fn total(&self) -> u64 {
        self.unknown + self.undecodable
    }

    /// Whether nothing was skipped.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    fn unknown(&mut self, seq: u64) {
        self.unknown += 1;
        if self.unknown_at.len() < SKIPPED_POSITIONS {
            self.unknown_at.push(seq);
        }
    }

    fn undecodable(&mut self, seq: u64, name: &str, error: &str) {
        self.undecodable += 1;
        if self.undecodable_at.len() < SKIPPED_POSITIONS {
            self.undecodable_at.push(UndecodableEvent {
                seq,
                name: name.to_owned(),
                error: error.to_owned(),
            });
        }
    }
}

/// Default (and smallest adaptive) distance between two checkpoints of a [`Fold`].
pub const DEFAULT_CHECKPOINT_INTERVAL: u64 = 256;

/// The largest distance between two checkpoints that adapting to a costly clone reaches.
pub const MAX_CHECKPOINT_INTERVAL: u64 = 1 << 16;

impl<S: Handler + serde::de::DeserializeOwned> Fold<S> {
    /// The same fold, honouring `turn:rolled_back` (the state a rollback carries replaces the
    /// state): what every fold of a workflow's session needs, and what the runtime, recovery
    /// and tapes use. A fold made without it counts such an event as undecodable.
    ///
    /// ```
    /// # use openharness_core::{*, adapter::*};
    /// # fn demo<S: WorkflowState>(state: S, rollback: Envelope) {
    /// let mut fold = Fold::new(state).restoring();
    /// fold.apply(&rollback, std::slice::from_ref(&rollback));
    /// # }
    /// ```
    #[must_use]
    pub fn restoring(mut self) -> Self {
        self.restore = Some(|value| S::deserialize(value));
        self
    }
}

impl<S: Handler> Fold<S> {
    /// Starts from `initial` at position 0.
    pub fn new(initial: S) -> Self {
        Self::at(initial, 0)
    }

    /// Starts from `state`, which is the state after the first `position` events.
    pub fn at(state: S, position: u64) -> Self {
        Self {
            state,
            position,
            checkpoint: None,
            checkpoint_position: position,
            checkpoint_interval: DEFAULT_CHECKPOINT_INTERVAL,
            adaptive: true,
            checkpointed_at: None,
            skipped: Skipped::default(),
            warn: true,
            warned: HashSet::new(),
            checkpoints: true,
            spoiled: false,
            restore: None,
        }
    }

    /// Sets how many events pass between two checkpoints (at least 1), fixed instead of
    /// following what checkpoints cost.
    #[must_use]
    pub fn with_checkpoint_interval(mut self, interval: u64) -> Self {
        self.checkpoint_interval = interval.max(1);
        self.adaptive = false;
        self
    }

    /// The same fold, logging nothing about the events it skips (it still counts them): for
    /// a fold over events another fold already reported.
    #[must_use]
    pub fn quiet(mut self) -> Self {
        self.warn = false;
        self
    }

    /// The same fold, taking no checkpoints: for a read that can start over, where copying
    /// the state for a checkpoint would cost more than the fold (a state of plain `Vec`s
    /// copies in time proportional to its size). A handler that panics leaves the state as
    /// the panic left it and [`Fold::spoiled`] says so; the reader then folds again with a
    /// fold that takes checkpoints, which gives the state the live run had. The window such a
    /// fold needs is empty ([`Fold::checkpoint_position`] is always its position).
    #[must_use]
    pub(crate) fn without_checkpoints(mut self) -> Self {
        self.checkpoints = false;
        self
    }

    /// Whether a handler panicked in a fold made [`Fold::without_checkpoints`]: its state is
    /// then not to be used.
    pub(crate) fn spoiled(&self) -> bool {
        self.spoiled
    }

    /// How many events pass between two checkpoints now.
    pub fn checkpoint_interval(&self) -> u64 {
        self.checkpoint_interval
    }

    /// The current state.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// Takes the state out.
    pub fn into_state(self) -> S {
        self.state
    }

    /// What this fold skipped so far (unknown names, undecodable payloads), with positions.
    pub fn skipped(&self) -> &Skipped {
        &self.skipped
    }

    /// How many events have been applied (the position of [`Fold::state`]).
    pub fn position(&self) -> u64 {
        self.position
    }

    /// Applies `event`, which must be the event at seq [`Fold::position`].
    ///
    /// `log` is the session's log from seq 0 and must contain at least every event before
    /// `event`; it is read only when a handler panics, to rebuild the state from the last
    /// checkpoint.
    pub fn apply(&mut self, event: &Envelope, log: &[Envelope]) -> Applied {
        self.apply_windowed(event, log, 0)
    }

    /// Applies `event` like [`Fold::apply`], with only a window of the log: `window` holds the
    /// events from seq `window_start` on, and must hold at least the events from
    /// [`Fold::checkpoint_position`] up to `event`. A caller that keeps no more than that
    /// window holds memory bounded by the checkpoint interval, not by the session's length.
    ///
    /// ```
    /// # use openharness_core::{*, adapter::*};
    /// # fn fold_all<S: Handler>(mut fold: Fold<S>, events: impl Iterator<Item = Envelope>) -> S {
    /// let mut window: Vec<Envelope> = Vec::new();
    /// let mut window_start = fold.position();
    /// for event in events {
    ///     fold.apply_windowed(&event, &window, window_start);
    ///     window.push(event);
    ///     // Drop what the fold can no longer need.
    ///     let keep_from = fold.checkpoint_position();
    ///     window.drain(..(keep_from - window_start) as usize);
    ///     window_start = keep_from;
    /// }
    /// fold.into_state()
    /// # }
    /// ```
    pub fn apply_windowed(
        &mut self,
        event: &Envelope,
        window: &[Envelope],
        window_start: u64,
    ) -> Applied {
        self.apply_with(event, window, window_start, None)
    }

    /// Applies `event` like [`Fold::apply`], recording in `undo` how to take it back (see
    /// [`Undo`]): [`Fold::revert`] then steps back over it in the time its change takes.
    pub fn apply_recording(
        &mut self,
        event: &Envelope,
        log: &[Envelope],
        undo: &mut Undo<S>,
    ) -> Applied {
        undo.begin_event();
        self.apply_with(event, log, 0, Some(undo))
    }

    /// Steps back over the latest event `undo` recorded: the fold is one position earlier,
    /// with the state it had there. `false` (and nothing changed) when `undo` holds no event.
    ///
    /// `undo` must be the one this fold's [`Fold::apply_recording`] calls filled, and the
    /// state must not have been replaced since.
    pub fn revert(&mut self, undo: &mut Undo<S>) -> bool {
        if self.position == 0 || !undo.revert(&mut self.state) {
            return false;
        }
        self.position -= 1;
        if self.checkpoint_position > self.position {
            // The checkpoint is ahead of the state now; the next apply takes a fresh one.
            self.checkpoint = None;
            self.checkpoint_position = self.position;
        }
        true
    }

    /// Moves the fold back to `position` (no later than its own), keeping its state: for a
    /// caller that knows none of the events from `position` on ran a handler (each was
    /// [`Applied::Skipped`], [`Applied::Undecodable`] or [`Applied::Panicked`] when folded),
    /// so this state is also the state after `position` events. A tape steps back over an
    /// agent's streamed events this way without copying the state.
    ///
    /// ```
    /// # use openharness_core::{*, adapter::*};
    /// # fn demo<S: Handler + PartialEq + std::fmt::Debug>(state: S) {
    /// let mut fold = Fold::at(state.clone(), 5);
    /// fold.rewind_unchanged(3);
    /// assert_eq!((fold.position(), fold.state()), (3, &state));
    /// fold.rewind_unchanged(9); // never forwards
    /// assert_eq!(fold.position(), 3);
    /// # }
    /// ```
    pub fn rewind_unchanged(&mut self, position: u64) {
        self.position = position.min(self.position);
        if self.checkpoint_position > self.position {
            // The checkpoint is ahead of the state now; the next apply takes a fresh one.
            self.checkpoint = None;
            self.checkpoint_position = self.position;
        }
    }

    fn apply_with(
        &mut self,
        event: &Envelope,
        window: &[Envelope],
        window_start: u64,
        undo: Option<&mut Undo<S>>,
    ) -> Applied {
        if self.checkpoint.is_none() && self.checkpoints {
            self.take_checkpoint();
        }
        let applied = if event.name == builtin::TurnRolledBack::NAME {
            self.roll_back(event, undo)
        } else {
            self.dispatch(event, window, window_start, undo)
        };
        self.position += 1;
        if !self.checkpoints {
            // Nothing to restore from: the fold never needs an event it applied again.
            self.checkpoint_position = self.position;
        } else if matches!(applied, Applied::Panicked(_))
            || self.position - self.checkpoint_position >= self.checkpoint_interval
        {
            self.take_checkpoint();
        }
        applied
    }

    /// Honours a `turn:rolled_back`: the state becomes the one it carries (recording in `undo`
    /// how to give the state before it back). A fold that cannot decode states (made without
    /// [`Fold::restoring`]) or a state that no longer decodes leaves the state as it is and
    /// counts the event as undecodable.
    fn roll_back(&mut self, event: &Envelope, undo: Option<&mut Undo<S>>) -> Applied {
        let restored = match self.restore {
            Some(decode) => decode(&event.payload["state"]),
            None => Err(serde::de::Error::custom(
                "this fold cannot restore a state (made without `Fold::restoring`)",
            )),
        };
        match restored {
            Ok(state) => {
                let before = std::mem::replace(&mut self.state, state);
                if let Some(undo) = undo {
                    undo.record(move |state| *state = before);
                }
                Applied::Handled(Emit::none())
            }
            Err(err) => self.undecodable(
                event,
                err.to_string(),
                "a rollback's state does not decode; the state is left as it was",
            ),
        }
    }

    /// Applies `event` through the workflow's handlers.
    fn dispatch(
        &mut self,
        event: &Envelope,
        window: &[Envelope],
        window_start: u64,
        undo: Option<&mut Undo<S>>,
    ) -> Applied {
        match S::Events::decode_envelope(event) {
            Ok(Decoded::Known(typed)) if !S::handles(&typed) => Applied::Skipped,
            Ok(Decoded::Known(typed)) => self.handle(&typed, window, window_start, undo),
            Ok(Decoded::Several(events)) => {
                // An upcast split the recorded event: today's events apply in turn, at its
                // position, and what they emit is emitted together.
                let mut undo = undo;
                let mut emitted = Emit::none();
                let mut handled = false;
                for typed in events.iter().filter(|typed| S::handles(typed)) {
                    handled = true;
                    match self.handle(typed, window, window_start, undo.as_deref_mut()) {
                        Applied::Handled(emit) => emitted.append(emit),
                        other => return other,
                    }
                }
                if handled {
                    Applied::Handled(emitted)
                } else {
                    Applied::Skipped
                }
            }
            Ok(Decoded::Unknown) => {
                if !builtin::is_builtin(&event.name) {
                    self.skipped.unknown(self.position);
                    if self.first_warning(&event.name, false) {
                        tracing::warn!(event = %event.name, seq = self.position, "skipping an event this workflow does not know");
                    }
                }
                Applied::Skipped
            }
            Err(err) => self.undecodable(
                event,
                err.to_string(),
                "skipping an event whose payload does not decode",
            ),
        }
    }

    /// Applies one decoded event through the handlers; a panic restores the state from the
    /// checkpoint (or spoils the fold).
    fn handle(
        &mut self,
        typed: &S::Events,
        window: &[Envelope],
        window_start: u64,
        undo: Option<&mut Undo<S>>,
    ) -> Applied {
        let applied = match undo {
            Some(undo) => {
                let outcome = quietly(|| self.state.apply_undoable(typed, undo));
                if outcome.is_err() {
                    // The state goes back to the checkpoint, not to before this event.
                    undo.unsupported();
                }
                outcome
            }
            None => quietly(|| self.state.apply(typed)),
        };
        match applied {
            Ok(emit) => Applied::Handled(emit),
            Err(panic) => {
                let message = panic_message(panic.as_ref());
                if self.checkpoints {
                    self.restore(window, window_start);
                } else {
                    self.spoiled = true;
                }
                Applied::Panicked(message)
            }
        }
    }

    /// Counts `event` as undecodable (`error`), warning with `what` the first time.
    fn undecodable(&mut self, event: &Envelope, error: String, what: &str) -> Applied {
        self.skipped.undecodable(self.position, &event.name, &error);
        if self.first_warning(&event.name, true) {
            tracing::warn!(event = %event.name, seq = self.position, %error, "{what}");
        }
        Applied::Undecodable(error)
    }

    /// Whether (`name`, `undecodable`) is logged for the first time by this fold.
    fn first_warning(&mut self, name: &str, undecodable: bool) -> bool {
        self.warn && self.warned.insert((Box::from(name), undecodable))
    }

    /// Copies the state as the checkpoint, and adapts the interval to what the copy cost.
    fn take_checkpoint(&mut self) {
        let started = Instant::now();
        self.checkpoint = Some(self.state.clone());
        let cloning = started.elapsed();
        if self.adaptive
            && let Some(since) = self.checkpointed_at
        {
            let between = started.saturating_duration_since(since);
            if cloning.saturating_mul(20) > between {
                self.checkpoint_interval =
                    (self.checkpoint_interval * 2).min(MAX_CHECKPOINT_INTERVAL);
            } else if cloning.saturating_mul(200) < between.max(Duration::from_micros(1)) {
                self.checkpoint_interval =
                    (self.checkpoint_interval / 2).max(DEFAULT_CHECKPOINT_INTERVAL);
            }
        }
        self.checkpointed_at = Some(Instant::now());
        self.checkpoint_position = self.position;
    }

    /// The position of the fold's checkpoint: the earliest event a panic may need to re-apply.
    pub fn checkpoint_position(&self) -> u64 {
        self.checkpoint_position
    }

    /// Rebuilds the state before the current event from the checkpoint and the log window.
    fn restore(&mut self, window: &[Envelope], window_start: u64) {
        let Some(checkpoint) = &self.checkpoint else {
            return; // taken before every first apply, so never missing here
        };
        self.state = checkpoint.clone();
        let index = |position: u64| {
            usize::try_from(position.saturating_sub(window_start)).unwrap_or(usize::MAX)
        };
        let (from, to) = (index(self.checkpoint_position), index(self.position));
        if self.checkpoint_position < window_start || window.len() < to {
            tracing::error!(
                checkpoint = self.checkpoint_position,
                window_start,
                "a handler panicked and the log window misses events since the checkpoint; the state goes back to the checkpoint"
            );
        }
        for event in window.get(from..to).unwrap_or_default() {
            if event.name == builtin::TurnRolledBack::NAME {
                if let Some(Ok(state)) = self.restore.map(|decode| decode(&event.payload["state"]))
                {
                    self.state = state;
                }
                continue;
            }
            // Events between the checkpoint and now did not panic the first time; a handler
            // that panics only sometimes is not pure, and its effect is dropped again here.
            match S::Events::decode_envelope(event) {
                Ok(Decoded::Known(typed)) => {
                    let _ = quietly(|| self.state.apply(&typed));
                }
                Ok(Decoded::Several(events)) => {
                    for typed in &events {
                        let _ = quietly(|| self.state.apply(typed));
                    }
                }
                Ok(Decoded::Unknown) | Err(_) => {}
            }
        }
    }
}

/// A [`Fold`] fed events by value, in order, that keeps the window of the log a panicking
/// handler needs by itself: for callers that stream a session and want only the state at
/// its end (comparing two sessions while reading them, say). Memory stays bounded by the
/// checkpoint interval, not by the session's length.
///
/// ```
/// # use openharness_core::{*, adapter::*};
/// # fn demo<S: Handler>(initial: S, events: Vec<Envelope>) -> S {
/// let mut fold = StreamedFold::at(initial, 0);
/// for event in events {
///     fold.apply(event);
/// }
/// fold.into_state()
/// # }
/// ```
#[derive(Debug)]
pub struct StreamedFold<S> {
    fold: Fold<S>,
    window: Window,
}

impl<S: Handler> StreamedFold<S> {
    /// Starts from `state`, the state after the first `position` events.
    pub fn at(state: S, position: u64) -> Self {
        Self {
            fold: Fold::at(state, position),
            window: Window::new(position),
        }
    }

    /// The same fold, taking no checkpoints (see [`Fold::without_checkpoints`]).
    #[must_use]
    pub(crate) fn without_checkpoints(mut self) -> Self {
        self.fold = self.fold.without_checkpoints();
        self
    }

    /// The same fold, logging nothing about the events it skips (see [`Fold::quiet`]).
    #[must_use]
    pub fn quiet(mut self) -> Self {
        self.fold = self.fold.quiet();
        self
    }
}

impl<S: Handler + serde::de::DeserializeOwned> StreamedFold<S> {
    /// The same fold, honouring `turn:rolled_back` (see [`Fold::restoring`]).
    #[must_use]
    pub fn restoring(mut self) -> Self {
        self.fold = self.fold.restoring();
        self
    }
}

impl<S: Handler> StreamedFold<S> {
    /// Whether a handler panicked in a fold without checkpoints (see [`Fold::spoiled`]).
    pub(crate) fn spoiled(&self) -> bool {
        self.fold.spoiled()
    }

    /// Applies `event`, the event at seq [`StreamedFold::position`].
    pub fn apply(&mut self, event: Envelope) -> Applied {
        self.window.apply(&mut self.fold, event)
    }

    /// The current state.
    pub fn state(&self) -> &S {
        self.fold.state()
    }

    /// Takes the state out.
    pub fn into_state(self) -> S {
        self.fold.into_state()
    }

    /// How many events have been applied, counted from the start position.
    pub fn position(&self) -> u64 {
        self.fold.position()
    }

    /// What the fold skipped so far.
    pub fn skipped(&self) -> &Skipped {
        self.fold.skipped()
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    use super::*;
    use crate::event::Event;

    #[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
    struct Added {
        amount: i64,
    }
    impl Event for Added {
        const NAME: &'static str = "number:added";
    }

    enum Events {
        Added(Added),
    }
    impl EventSet for Events {
        const NAMES: &'static [&'static str] = &[Added::NAME];
        fn name(&self) -> &'static str {
            Added::NAME
        }
        fn decode(name: &str, payload: &Value) -> Result<Decoded<Self>, serde_json::Error> {
            if name == Added::NAME {
                Ok(Decoded::Known(Self::Added(Added::deserialize(payload)?)))
            } else {
                Ok(Decoded::Unknown)
            }
        }
        fn to_payload(&self) -> Result<Value, serde_json::Error> {
            match self {
                Self::Added(a) => serde_json::to_value(a),
            }
        }
    }

    /// Adds, but panics halfway through a negative amount (after mutating the state).
    #[derive(Debug, Clone, Default, PartialEq)]
    struct Sum {
        total: i64,
        seen: u32,
    }
    impl Handler for Sum {
        type Events = Events;
        fn apply(&mut self, event: &Events) -> Emit {
            let Events::Added(added) = event;
            self.seen += 1;
            self.total += added.amount;
            assert!(added.amount >= 0, "negative amount");
            Emit::none()
        }
    }

    fn added(amount: i64) -> Envelope {
        Envelope::new(Added::NAME, serde_json::json!({ "amount": amount }), None)
    }

    #[test]
    fn a_panicking_handler_leaves_the_state_as_before_the_event() {
        for interval in [1, 2, 3, 256] {
            let log = vec![
                added(1),
                added(2),
                added(-5),
                added(4),
                added(-1),
                added(10),
            ];
            let mut fold = Fold::new(Sum::default()).with_checkpoint_interval(interval);
            let mut outcomes = Vec::new();
            for event in &log {
                outcomes.push(matches!(fold.apply(event, &log), Applied::Panicked(_)));
            }
            assert_eq!(outcomes, [false, false, true, false, true, false]);
            assert_eq!(
                fold.state(),
                &Sum { total: 17, seen: 4 },
                "interval {interval}"
            );
            assert_eq!(fold.position(), 6);
        }
    }

    #[test]
    fn unknown_and_undecodable_events_are_skipped() {
        let log = vec![
            added(1),
            Envelope::new("plan:invented", Value::Null, None),
            Envelope::new(
                "text:delta",
                serde_json::json!({ "agent": "a", "delta": "x" }),
                None,
            ),
            Envelope::new(Added::NAME, serde_json::json!({ "amount": "NaN" }), None),
            added(2),
        ];
        let mut fold = Fold::new(Sum::default());
        let applied: Vec<_> = log.iter().map(|e| fold.apply(e, &log)).collect();
        assert!(matches!(applied[1], Applied::Skipped));
        assert!(matches!(applied[2], Applied::Skipped));
        assert!(matches!(applied[3], Applied::Undecodable(_)));
        assert_eq!(fold.state().total, 3);
        assert_eq!(fold.position(), 5);
        // The built-in `text:delta` is not counted: skipping it is normal.
        let skipped = fold.skipped();
        assert_eq!((skipped.unknown, skipped.undecodable), (1, 1));
        assert_eq!(skipped.unknown_at, vec![1]);
        assert_eq!(skipped.undecodable_at.len(), 1);
        assert_eq!(skipped.undecodable_at[0].seq, 3);
        assert_eq!(skipped.undecodable_at[0].name, Added::NAME);
        assert!(skipped.undecodable_at[0].error.contains("invalid type"));
        assert_eq!(skipped.total(), 2);
    }

    #[test]
    fn skipped_positions_are_bounded_and_counts_go_on() {
        let n = SKIPPED_POSITIONS as u64 + 10;
        let log: Vec<_> = (0..n)
            .flat_map(|_| {
                [
                    Envelope::new("plan:invented", Value::Null, None),
                    Envelope::new(Added::NAME, serde_json::json!({ "amount": [] }), None),
                ]
            })
            .collect();
        let mut fold = Fold::new(Sum::default());
        for event in &log {
            fold.apply(event, &log);
        }
        let skipped = fold.skipped();
        assert_eq!((skipped.unknown, skipped.undecodable), (n, n));
        assert_eq!(skipped.unknown_at.len(), SKIPPED_POSITIONS);
        assert_eq!(skipped.undecodable_at.len(), SKIPPED_POSITIONS);
        assert_eq!(skipped.unknown_at[..3], [0, 2, 4]);
        assert_eq!(fold.warned.len(), 2, "one warning per (name, kind)");
    }
}
