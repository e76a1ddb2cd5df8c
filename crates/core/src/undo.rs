//! [`Undo`]: how a handler says what undoes its change, so a tape steps back over an event in
//! time proportional to the change instead of the state.

/// One recorded step back.
type Op<S> = Box<dyn FnOnce(&mut S) + Send + Sync>;

/// How many events an [`Undo`] keeps the closures of before it forgets the oldest half.
const KEPT_EVENTS: usize = 1 << 16;

/// The closures that undo the events applied since the tape last started folding, newest
/// last, grouped by event.
///
/// A tape going back one position needs the state before the last event. Without help it
/// copies a state it kept earlier and folds forward from there: for a state of plain `Vec`s
/// and `HashMap`s that copy costs as much as the whole state, at every step. A handler that
/// takes `undo: &mut Undo<Self>` records, as it changes the state, a closure that reverts the
/// change (pop what it pushed, put back what it replaced); the tape runs those closures
/// instead, and a step back costs what the event changed.
///
/// An undo must give back exactly the state before the event. A tape checks that whenever
/// undoing brings it onto one of its snapshots: on a mismatch it logs a warning naming the
/// position, puts the snapshot's state back and steps back by copying from then on, so a
/// wrong undo shows wrong states at most until the next snapshot.
///
/// Live runs pass an `Undo` that records nothing ([`Undo::is_recording`] is `false`, and
/// [`Undo::record`] drops the closure without boxing it), so recording costs nothing where
/// nobody steps back.
///
/// ```
/// use openharness_core::{Emit, Undo};
/// # #[derive(Clone, Default)]
/// # struct Board { done: Vec<String> }
/// impl Board {
///     fn completed(&mut self, result: &str, undo: &mut Undo<Self>) -> Emit {
///         self.done.push(result.to_owned());
///         undo.record(|board| {
///             board.done.pop();
///         });
///         Emit::none()
///     }
/// }
///
/// let mut board = Board::default();
/// let mut undo = Undo::recording();
/// undo.begin_event();
/// board.completed("ok", &mut undo);
/// assert_eq!(board.done.len(), 1);
/// assert!(undo.revert(&mut board));
/// assert!(board.done.is_empty());
/// ```
///
/// In a handler written with `#[handler]`, take it as a third parameter,
/// `undo: &mut Undo<Self>`, and call [`Undo::record`] (or [`Undo::keep`]) for each change
/// you make. Handlers that do not take it still work: the tape steps back over their events
/// by copying and folding, as before.
pub struct Undo<S> {
    recording: bool,
    ops: Vec<Op<S>>,
    /// `events[i]` is where event `i`'s closures start in `ops`.
    events: Vec<usize>,
    /// Whether an event was applied that could not be undone (a handler without `undo`, or
    /// one that panicked).
    gave_up: bool,
    /// Whether the current event said it cannot be undone: what it records after is dropped.
    event_gave_up: bool,
}

impl<S> std::fmt::Debug for Undo<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Undo")
            .field("recording", &self.recording)
            .field("events", &self.events.len())
            .field("ops", &self.ops.len())
            .field("gave_up", &self.gave_up)
            .finish_non_exhaustive()
    }
}

impl<S> Default for Undo<S> {
    fn default() -> Self {
        Self::off()
    }
}

impl<S> Undo<S> {
    /// An `Undo` that records nothing: what live runs and plain folds pass to handlers.
    pub fn off() -> Self {
        Self {
            recording: false,
            ops: Vec::new(),
            events: Vec::new(),
            gave_up: false,
            event_gave_up: false,
        }
    }

    /// An `Undo` that keeps what handlers record.
    pub fn recording() -> Self {
        Self {
            recording: true,
            ..Self::off()
        }
    }

    /// Whether what handlers record is kept. A handler whose undo needs an expensive capture
    /// (a clone of a big field) can skip it when this is `false`.
    pub fn is_recording(&self) -> bool {
        self.recording
    }

    /// Records `op`, which must turn the state as the handler leaves it back into the state
    /// as it was before this part of the change. Several calls in one handler are undone in
    /// reverse order.
    pub fn record(&mut self, op: impl FnOnce(&mut S) + Send + Sync + 'static) {
        if self.keeps() {
            self.ops.push(Box::new(op));
        }
    }

    /// Records the whole of `state` as it is now, to be put back: the simplest correct undo
    /// for a handler that rewrites much of the state (it clones the state, and only when
    /// recording).
    pub fn keep(&mut self, state: &S)
    where
        S: Clone + Send + Sync + 'static,
    {
        if self.keeps() {
            let before = state.clone();
            self.ops
                .push(Box::new(move |state: &mut S| *state = before));
        }
    }

    /// Says that this handler's change cannot be undone: a tape steps back over the event by
    /// copying and folding instead. Handlers that do not take `undo` say this implicitly.
    pub fn unsupported(&mut self) {
        if self.recording {
            self.ops.clear();
            self.events.clear();
            self.gave_up = true;
            self.event_gave_up = true;
        }
    }

    /// Whether what a handler records now is kept.
    fn keeps(&self) -> bool {
        self.recording && !self.event_gave_up
    }

    /// Starts the closures of the next event. Called by the fold before each event.
    pub fn begin_event(&mut self) {
        if !self.recording {
            return;
        }
        self.event_gave_up = false;
        if self.events.len() >= KEPT_EVENTS {
            let drop_events = KEPT_EVENTS / 2;
            let drop_ops = self.events[drop_events];
            self.ops.drain(..drop_ops);
            self.events.drain(..drop_events);
            for start in &mut self.events {
                *start -= drop_ops;
            }
        }
        self.events.push(self.ops.len());
    }

    /// How many of the latest events can be undone.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event can be undone.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Whether an event was applied that could not be undone.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    /// Forgets every recorded event (the state was replaced from elsewhere).
    pub fn clear(&mut self) {
        self.ops.clear();
        self.events.clear();
    }

    /// Undoes the latest recorded event on `state`; `false` (and nothing done) if there is
    /// none.
    pub fn revert(&mut self, state: &mut S) -> bool {
        let Some(start) = self.events.pop() else {
            return false;
        };
        for op in self.ops.drain(start..).rev() {
            op(state);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_s_closures_run_newest_first() {
        let mut undo = Undo::<Vec<u32>>::recording();
        let mut state = vec![1];
        undo.begin_event();
        state.push(2);
        undo.record(|s| assert_eq!(s.pop(), Some(2)));
        state[0] = 10;
        undo.record(|s| s[0] = 1);
        undo.begin_event();
        state.push(3);
        undo.record(|s| assert_eq!(s.pop(), Some(3)));
        assert_eq!(undo.len(), 2);
        assert!(undo.revert(&mut state));
        assert_eq!(state, vec![10, 2]);
        assert!(undo.revert(&mut state));
        assert_eq!(state, vec![1]);
        assert!(!undo.revert(&mut state));
    }

    #[test]
    fn an_event_that_changed_nothing_is_undone_by_nothing() {
        let mut undo = Undo::<u32>::recording();
        undo.begin_event();
        undo.begin_event();
        let mut state = 5;
        assert!(undo.revert(&mut state) && undo.revert(&mut state));
        assert_eq!(state, 5);
        assert!(undo.is_empty());
    }

    #[test]
    fn unsupported_forgets_everything_and_is_remembered() {
        let mut undo = Undo::<u32>::recording();
        undo.begin_event();
        undo.record(|s| *s -= 1);
        assert!(!undo.is_empty() && !undo.gave_up());
        undo.begin_event();
        undo.unsupported();
        undo.record(|s| *s -= 1); // dropped: this event cannot be undone
        assert!(undo.is_empty() && undo.gave_up());
        undo.begin_event();
        undo.record(|s| *s -= 1);
        assert_eq!(undo.len(), 1);
        assert!(undo.gave_up(), "remembered");
    }

    #[test]
    fn off_records_nothing() {
        let mut undo = Undo::<u32>::off();
        undo.begin_event();
        undo.record(|s| *s = 0);
        undo.keep(&7);
        assert!(undo.is_empty() && !undo.gave_up());
    }

    #[test]
    fn keep_puts_the_whole_state_back() {
        let mut undo = Undo::recording();
        let mut state = vec![1, 2, 3];
        undo.begin_event();
        undo.keep(&state);
        state = vec![9];
        assert!(undo.revert(&mut state));
        assert_eq!(state, vec![1, 2, 3]);
    }

    #[test]
    fn the_oldest_half_is_forgotten_past_the_limit() {
        let mut undo = Undo::<u64>::recording();
        let mut state = 0;
        for _ in 0..=KEPT_EVENTS {
            undo.begin_event();
            state += 1;
            undo.record(|s| *s -= 1);
        }
        assert_eq!(undo.len(), KEPT_EVENTS / 2 + 1);
        while undo.revert(&mut state) {}
        assert_eq!(state, KEPT_EVENTS as u64 / 2);
    }
}
