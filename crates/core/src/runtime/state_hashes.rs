//! When a turn records its state's hash ([`Envelope::state_hash`](crate::Envelope::state_hash)):
//! after each batch that changed the state, as long as hashing has taken at most a hundredth of
//! the turn's time so far, and always with the turn's last batch. A small state is hashed after
//! every such batch; a state so large that hashing it each time would slow the turn (a board of
//! thousands of tasks, one changed per batch) gets fewer hashes, spread through the turn, and
//! hashing costs it about 1% (plus its first and last hash, which are always taken). A state
//! that another process could not hash the same (see `record.rs`) stops the turn's hashing.

use std::time::{Duration, Instant};

/// The hashing a turn has done, and whether its state changed since the last hash.
pub(super) struct StateHashes {
    /// Whether the workflow records hashes at all (`WorkflowBuilder::state_hashes`).
    enabled: bool,
    /// Whether an event folded since the last hash changed the state.
    changed: bool,
    /// When the turn started.
    since: Instant,
    /// The time spent hashing so far.
    spent: Duration,
}

/// The share of a turn's time hashing may take: one hundredth (1%). With the first and the
/// last hash, which are always taken, a 5 000-task race run measured 1.06x its time without
/// hashes at one fiftieth; the goal is 1.03x.
const SHARE: u32 = 100;

impl StateHashes {
    pub(super) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            changed: false,
            since: Instant::now(),
            spent: Duration::ZERO,
        }
    }

    /// An event changed the state.
    pub(super) fn changed(&mut self) {
        self.changed = true;
    }

    /// Whether the batch about to be recorded records the hash: the state changed since the
    /// last one, and hashing is within its share of the turn's time (or the batch ends the
    /// turn).
    pub(super) fn due(&self, ends_turn: bool) -> bool {
        self.enabled
            && self.changed
            && (ends_turn || self.spent.saturating_mul(SHARE) <= self.since.elapsed())
    }

    /// A hash was taken, in `took`.
    pub(super) fn hashed(&mut self, took: Duration) {
        self.changed = false;
        self.spent += took;
    }

    /// No more hashes this turn (the state cannot be hashed reproducibly).
    pub(super) fn stop(&mut self) {
        self.enabled = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_is_due_after_a_change_within_the_share_and_always_at_the_end() {
        let mut hashes = StateHashes::new(true);
        assert!(!hashes.due(true), "nothing changed");
        hashes.changed();
        assert!(hashes.due(false));
        // An hour of hashing in a turn that has just begun: only its end records one.
        hashes.hashed(Duration::from_secs(3600));
        hashes.changed();
        assert!(!hashes.due(false));
        assert!(hashes.due(true));
        let mut off = StateHashes::new(false);
        off.changed();
        assert!(!off.due(true), "turned off");
        hashes.stop();
        assert!(!hashes.due(true), "stopped");
    }
}
