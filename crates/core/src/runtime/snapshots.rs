//! When a turn saves snapshots: at its end after a long tail, and as it goes, spaced by the
//! state's size (see the runtime's module docs).

use super::*;

/// A run's account of its session's snapshots: where the latest is, how large it is, what
/// the run recorded since, and so when the next is due (see the module docs).
pub(super) struct Snapshots {
    /// The position of the session's latest snapshot.
    pub(super) at: u64,
    /// The size of the latest snapshot's JSON in bytes, once known.
    pub(super) bytes: Option<u64>,
    /// Where the spacing counts from: the run's start or the latest snapshot this run saved
    /// (or tried to), whichever is later.
    pub(super) since: u64,
    /// The bytes of the events recorded since `since` (counted once `bytes` is known).
    pub(super) recorded_bytes: u64,
    /// Whether this run saved a snapshot mid-turn.
    pub(super) saved_mid_turn: bool,
    /// Whether mid-turn snapshots are off for this run (the state does not serialize).
    pub(super) off: bool,
}

impl Snapshots {
    /// A run starting at `len` on a session whose latest snapshot is at `at`, of `bytes`.
    pub(super) fn after(at: u64, bytes: Option<u64>, len: u64) -> Self {
        Self {
            at,
            bytes,
            since: at.max(len),
            recorded_bytes: 0,
            saved_mid_turn: false,
            off: false,
        }
    }

    /// Counts durable events towards the next snapshot.
    pub(super) fn recorded(&mut self, events: &[Envelope]) {
        if self.bytes.is_some() {
            self.recorded_bytes += events.iter().map(event_bytes).sum::<u64>();
        }
    }

    /// Whether a snapshot is due mid-turn, with `len` events recorded.
    pub(super) fn mid_turn_due(&self, len: u64) -> bool {
        let events = len - self.since;
        match self.bytes {
            _ if self.off => false,
            None => events >= SNAPSHOT_TAIL,
            Some(bytes) => {
                events >= MIN_SNAPSHOT_EVENTS
                    && self.recorded_bytes >= bytes.saturating_mul(SNAPSHOT_SPACING)
            }
        }
    }

    /// Whether a snapshot is due at the turn's end, with `len` events recorded.
    pub(super) fn turn_end_due(&self, len: u64) -> bool {
        len - self.at >= SNAPSHOT_TAIL || (self.saved_mid_turn && len > self.at)
    }

    /// A snapshot of `bytes` was saved (or tried) at `len`: the spacing counts from there.
    pub(super) fn tried(&mut self, len: u64, bytes: u64) {
        self.since = len;
        self.bytes = Some(bytes);
        self.recorded_bytes = 0;
    }
}

/// The bytes an event counts towards the next snapshot: its payload's and name's JSON, and
/// [`ENVELOPE_BYTES`] for the rest of its envelope.
pub(super) fn event_bytes(event: &Envelope) -> u64 {
    json_len(&event.payload)
        .saturating_add(event.name.len() as u64)
        .saturating_add(ENVELOPE_BYTES)
}
