//! Snapshots left behind by long reads. A state read that folds many events past the nearest
//! snapshot (a session imported from JSONL, or recorded before snapshots were saved) saves
//! snapshots on its way, one every [`EVERY`] events, so the next read of that stretch folds at
//! most [`EVERY`] events instead of the whole log. The read only encodes them; they are written
//! after it has answered, by a task of their own, so the read waits for no disk. Snapshots are
//! derived data: a store that refuses one is no error, and no more of that read's are written;
//! on a store that saves none ([`Store::saves_snapshots`], a read-only store) a read encodes
//! none (encoding a large state costs as much as folding a thousand events).

use std::sync::Arc;

use serde::Serialize;

use crate::event::SessionId;
use crate::store::{Snapshot, Store};

/// The distance between the snapshots a read leaves behind.
pub(crate) const EVERY: u64 = 1024;
/// The most snapshots one read saves (its first read of a million-event session saves the
/// first stretch; the next reads go on from there).
const MOST_PER_READ: usize = 256;

/// What one read has encoded so far.
pub(crate) struct Backfill {
    /// Where the read's fold started (its snapshot's position, or 0).
    from: u64,
    encoded: Vec<Snapshot>,
    off: bool,
}

impl Backfill {
    /// A read whose fold starts at `from`, from `store`.
    pub(crate) fn new(from: u64, store: &dyn Store) -> Self {
        Self {
            from,
            encoded: Vec::new(),
            off: !store.saves_snapshots(),
        }
    }

    /// Whether a snapshot is due once the fold stands at `position`: a multiple of
    /// [`EVERY`], at least [`EVERY`] past where the read started.
    pub(crate) fn due(&self, position: u64) -> bool {
        !self.off
            && position.is_multiple_of(EVERY)
            && position >= self.from + EVERY
            && self.encoded.len() < MOST_PER_READ
    }

    /// Keeps `state` as the snapshot at `position` (call when [`Backfill::due`]).
    pub(crate) fn keep<S: Serialize>(&mut self, position: u64, state: &S) {
        match serde_json::to_value(state) {
            Ok(state) => self.encoded.push(Snapshot::new(position, state)),
            Err(_) => self.off = true,
        }
    }

    /// Writes the kept snapshots to `store` in a task of their own, in order, stopping at the
    /// first the store refuses (outside a tokio runtime: none).
    pub(crate) fn write(self, store: Arc<dyn Store>, session: &SessionId) {
        // Outside a tokio runtime (a read driven by another executor) nothing is written.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.encoded.is_empty() {
            return;
        }
        let session = session.clone();
        runtime.spawn(async move {
            for snapshot in self.encoded {
                if let Err(err) = store.snapshot(&session, &snapshot).await {
                    tracing::debug!(%session, position = snapshot.position, error = %crate::adapter::ErrorChain(&err), "a read could not leave a snapshot behind; reads of this stretch fold from further back");
                    return;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_at_multiples_a_stretch_past_the_start() {
        let mut store = crate::store::tests::VecStore::new(0);
        store.saves = true;
        let backfill = Backfill::new(0, &store);
        assert!(!backfill.due(512));
        assert!(backfill.due(EVERY));
        assert!(!backfill.due(EVERY + 1));
        assert!(backfill.due(7 * EVERY));
        let near = Backfill::new(EVERY + 10, &store);
        assert!(
            !near.due(2 * EVERY),
            "less than a stretch past its snapshot"
        );
        assert!(near.due(3 * EVERY));
    }

    #[test]
    fn a_store_that_saves_no_snapshots_gets_none_prepared() {
        let store = crate::store::tests::VecStore::new(0);
        assert!(!store.saves_snapshots());
        let backfill = Backfill::new(0, &store);
        assert!(
            !backfill.due(EVERY),
            "a snapshot prepared for a read-only store"
        );
    }
}
