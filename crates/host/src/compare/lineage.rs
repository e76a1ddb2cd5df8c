//! [`Lineage`]: a session's lineage read whole, as [`Host::compare`] sees it — its events
//! counted from its root (each fork's own events after the point it leaves its parent) and the
//! state edits of the forks it enters — for [`Host::bisect`], which walks it more than once.

use futures_util::StreamExt;
use openharness_core::{Envelope, SessionId};
use serde_json::Value;

use super::side::{Step, steps};
use super::{EventPlace, Segment, place};
use crate::Host;
use crate::error::HostError;

/// A session's lineage, read into memory.
pub(crate) struct Lineage {
    segments: Vec<Segment>,
    /// Its events, counted from the root: lineage seq `n` is `events[n]`.
    pub(crate) events: Vec<Envelope>,
    /// The state edits (JSON merge patches) of the forks it enters, each with the lineage seq
    /// of the first event after it.
    pub(crate) edits: Vec<(u64, Value)>,
}

impl Lineage {
    /// Where the event at lineage seq `seq` was recorded, and the position it leads to there.
    pub(crate) fn place(&self, seq: u64) -> Option<EventPlace> {
        place(&self.segments, seq)
    }
}

impl Host {
    /// `session`'s lineage, read whole.
    pub(crate) async fn read_lineage(&self, session: &SessionId) -> Result<Lineage, HostError> {
        let segments = self.lineage(session).await?;
        let (mut events, mut edits) = (Vec::new(), Vec::new());
        {
            let mut read = steps(self.store.as_ref(), &segments, 0);
            while let Some(step) = read.next().await {
                match step.map_err(self.store_error())? {
                    Step::Event(event) => events.push(event),
                    Step::Edit(patch) => edits.push((events.len() as u64, patch)),
                }
            }
        }
        Ok(Lineage {
            segments,
            events,
            edits,
        })
    }
}
