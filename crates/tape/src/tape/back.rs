//! Stepping a [`Tape`] backwards: reverting the events the cursor folded (undos), moving the
//! cursor over events that ran no handler, and otherwise taking states from a stretch laid
//! down by one fold forward from the nearest snapshot.

use openharness_core::WorkflowState;
use openharness_core::adapter::Fold;

use super::Tape;

/// The memory a backward stretch may hold, as the states' encoded size.
const STRETCH_BYTES: f64 = 16.0 * 1024.0 * 1024.0;

/// The most states a backward stretch holds.
const MAX_STRETCH: u64 = 256;

impl<S: WorkflowState> Tape<S> {
    /// Moves backwards to `target`.
    ///
    /// When the state's handlers record undos: by reverting the events the cursor folded
    /// last, or, past them, by folding from the snapshot at or before `target` (recording, so
    /// the next steps back revert). Otherwise: over events that ran no handler (an agent's
    /// streamed events, say) by moving the cursor alone; else from the stretch of states the
    /// last backward fold laid down when it covers `target` (no fold, no clone), else by
    /// folding from the nearest known state and keeping the states before `target` for the
    /// next steps.
    pub(super) fn step_back_to(&mut self, target: u64) {
        let distance = self.position() - target;
        if distance <= self.undo.len() as u64 {
            for _ in 0..distance {
                self.fold.revert(&mut self.undo);
                if !self.reverted_to_the_snapshot() {
                    // The cursor is on the snapshot, undos are off: the rest the copying way.
                    if self.position() > target {
                        self.step_back_to(target);
                    }
                    return;
                }
            }
            return;
        }
        if !self.undo.gave_up() {
            let (at, state) = self.snapshot_at_or_before(target);
            let fold = Fold::at(state.clone(), at).restoring().quiet();
            self.set_cursor(fold);
            self.fold_cursor_to(target);
            // Folded the slow way only if a handler turned out not to record undos; either
            // way the cursor is at `target`.
            return;
        }
        if !self.changed_between(target, self.position()) {
            self.fold.rewind_unchanged(target);
            // The undos recorded for the events stepped over would be reverted next otherwise.
            self.undo.clear();
            return;
        }
        if target < self.stretch_end {
            let keep = self.stretch.partition_point(|(at, _)| *at <= target);
            self.stretch.truncate(keep);
            if let Some((at, state)) = self.stretch.pop() {
                // No handler ran between `at` and `target`: its state is theirs.
                self.stretch_end = at;
                self.set_cursor(Fold::at(state, target).restoring().quiet());
                return;
            }
        }
        let most = self
            .calibration
            .states_within(STRETCH_BYTES)
            .clamp(1, MAX_STRETCH);
        let (segment, _) = self.snapshot_at_or_before(target);
        let lowest = self.stretch_floor(segment, target, most);
        // A stretch that reaches the segment's snapshot folds from it; a shorter one from the
        // segment's finer states.
        if lowest > segment {
            self.ensure_fine(lowest);
        }
        let (at, state) = self.nearest(lowest);
        let mut fold = Fold::at(state.clone(), at).restoring().quiet();
        let mut stretch = Vec::new();
        let from = usize::try_from(at).unwrap_or(usize::MAX);
        let to = usize::try_from(target).unwrap_or(usize::MAX);
        for event in self.events.get(from..to).unwrap_or_default() {
            let position = fold.position();
            if position == lowest
                || (position > lowest && self.changed_between(position - 1, position))
            {
                stretch.push((position, fold.state().clone()));
            }
            fold.apply(event, &self.events);
        }
        self.stretch = stretch;
        self.stretch_end = target;
        self.set_cursor(fold);
    }

    /// Whether an event from position `from` up to `to` ran a handler when indexed (an event
    /// not indexed yet counts as one that did).
    fn changed_between(&self, from: u64, to: u64) -> bool {
        let from = usize::try_from(from).unwrap_or(usize::MAX);
        let to = usize::try_from(to).unwrap_or(usize::MAX);
        if to > self.handled.len() {
            return true;
        }
        self.handled
            .get(from..to)
            .is_none_or(|handled| handled.contains(&true))
    }

    /// The lowest position (not below `at`) a backward stretch ending at `target` starts at,
    /// holding at most `most` states: one for its start and one per event that ran a handler.
    fn stretch_floor(&self, at: u64, target: u64, most: u64) -> u64 {
        let mut kept = 1;
        let mut lowest = target;
        while lowest > at {
            if self.changed_between(lowest - 1, lowest) {
                if kept == most {
                    break;
                }
                kept += 1;
            }
            lowest -= 1;
        }
        lowest
    }

    /// Where undoing has brought the cursor onto a snapshot, checks that it reached the
    /// snapshot's state: a handler whose undo is wrong would otherwise show wrong states on
    /// every step back. On a mismatch, logs it once, puts the snapshot's state on the cursor
    /// and stops using undos for this tape (stepping back copies from then on); returns
    /// whether the undos held.
    fn reverted_to_the_snapshot(&mut self) -> bool {
        let position = self.position();
        let (at, snapshot) = self.snapshot_at_or_before(position);
        if at != position {
            return true;
        }
        let same = match (
            serde_json::to_value(self.fold.state()),
            serde_json::to_value(snapshot),
        ) {
            (Ok(reverted), Ok(folded)) => reverted == folded,
            _ => true, // a state that does not serialize cannot be checked this way
        };
        if same {
            return true;
        }
        tracing::warn!(
            session = %self.session,
            position,
            "undoing events did not give back the state folding reaches (a handler's undo is wrong); this tape steps back by copying from now on"
        );
        let fold = Fold::at(snapshot.clone(), position).restoring().quiet();
        self.set_cursor(fold);
        self.undo.unsupported();
        false
    }
}
