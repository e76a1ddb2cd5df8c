//! Snapshots left behind by long reads. A state read that folds many events past the nearest
//! snapshot (a session imported from JSONL, or recorded before snapshots were saved) saves
//! snapshots on its way, one every [`EVERY`] events, so the next read of that stretch folds at
//! most [`EVERY`] events instead of the whole log. Snapshots are derived data: a store that
//! refuses one (a read-only store) is no error, the read goes on and saves no more.

use serde::Serialize;

use crate::event::SessionId;
use crate::store::{Snapshot, Store};

/// The distance between the snapshots a read leaves behind.
pub(crate) const EVERY: u64 = 1024;
/// The most snapshots one read saves (its first read of a million-event session saves the
/// first stretch; the next reads go on from there).
const MOST_PER_READ: u32 = 256;

/// What one read has saved so far.
pub(crate) struct Backfill {
    /// Where the read's fold started (its snapshot's position, or 0).
    from: u64,
    saved: u32,
    off: bool,
}

impl Backfill {
    /// A read whose fold starts at `from`.
    pub(crate) fn from(from: u64) -> Self {
        Self {
            from,
            saved: 0,
            off: false,
        }
    }

    /// Whether a snapshot is due once the fold stands at `position`: a multiple of
    /// [`EVERY`], at least [`EVERY`] past where the read started.
    pub(crate) fn due(&self, position: u64) -> bool {
        !self.off
            && position.is_multiple_of(EVERY)
            && position >= self.from + EVERY
            && self.saved < MOST_PER_READ
    }

    /// Saves `state` as the snapshot at `position` (call when [`Backfill::due`]).
    pub(crate) async fn save<S: Serialize>(
        &mut self,
        store: &dyn Store,
        session: &SessionId,
        position: u64,
        state: &S,
    ) {
        let state = match serde_json::to_value(state) {
            Ok(state) => state,
            Err(_) => {
                self.off = true;
                return;
            }
        };
        match store
            .snapshot(session, &Snapshot::new(position, state))
            .await
        {
            Ok(()) => self.saved += 1,
            Err(err) => {
                tracing::debug!(%session, position, error = %crate::ErrorChain(&err), "a read could not leave a snapshot behind; reads of this stretch fold from further back");
                self.off = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_at_multiples_a_stretch_past_the_start() {
        let backfill = Backfill::from(0);
        assert!(!backfill.due(512));
        assert!(backfill.due(EVERY));
        assert!(!backfill.due(EVERY + 1));
        assert!(backfill.due(7 * EVERY));
        let near = Backfill::from(EVERY + 10);
        assert!(
            !near.due(2 * EVERY),
            "less than a stretch past its snapshot"
        );
        assert!(near.due(3 * EVERY));
    }
}
