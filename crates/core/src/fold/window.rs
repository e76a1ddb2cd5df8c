//! The fold's restore window: the events since the fold's last checkpoint, kept so a panicking
//! handler's effects can be rolled back without keeping the log.

use super::{Applied, Fold};
use crate::Envelope;

/// The events a [`Fold`] may need to re-apply after a panic: those since its checkpoint.
#[derive(Debug)]
pub(crate) struct Window {
    events: Vec<Envelope>,
    start: u64,
}

impl Window {
    /// An empty window whose next event is at seq `start`.
    pub(crate) fn new(start: u64) -> Self {
        Self {
            events: Vec::new(),
            start,
        }
    }

    /// Folds `event`, keeps it and forgets what the fold can no longer need.
    pub(crate) fn apply<S: crate::Handler>(
        &mut self,
        fold: &mut Fold<S>,
        event: Envelope,
    ) -> Applied {
        let applied = fold.apply_windowed(&event, &self.events, self.start);
        self.events.push(event);
        self.trim(fold.checkpoint_position());
        applied
    }

    /// Folds `event` and keeps it, forgetting nothing (the caller trims).
    pub(crate) fn apply_kept<S: crate::Handler>(
        &mut self,
        fold: &mut Fold<S>,
        event: Envelope,
    ) -> (Applied, &Envelope) {
        let applied = fold.apply_windowed(&event, &self.events, self.start);
        self.events.push(event);
        let kept = self
            .events
            .last()
            .unwrap_or_else(|| unreachable!("just pushed"));
        (applied, kept)
    }

    /// Forgets the events before seq `keep_from`.
    pub(crate) fn trim(&mut self, keep_from: u64) {
        if keep_from > self.start {
            let drop = usize::try_from(keep_from - self.start)
                .unwrap_or(usize::MAX)
                .min(self.events.len());
            self.events.drain(..drop);
            self.start += drop as u64;
        }
    }

    /// The kept events from seq `from` on.
    pub(crate) fn from(&self, from: u64) -> &[Envelope] {
        let skip = usize::try_from(from.saturating_sub(self.start)).unwrap_or(usize::MAX);
        self.events.get(skip..).unwrap_or_default()
    }

    /// The latest kept event, to change before it is recorded.
    pub(crate) fn last_mut(&mut self) -> Option<&mut Envelope> {
        self.events.last_mut()
    }

    /// The kept event at seq `seq`.
    pub(crate) fn get(&self, seq: u64) -> Option<&Envelope> {
        let index = usize::try_from(seq.checked_sub(self.start)?).ok()?;
        self.events.get(index)
    }
}
