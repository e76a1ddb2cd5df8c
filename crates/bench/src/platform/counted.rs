//! A store that counts and times each kind of call it passes on, to show which store calls a
//! platform request makes and what they cost: any store [`Observed`] by a [`Tallies`].

use super::*;
use openharness::store::{Observed, StoreCall, StoreObserver};

/// A store whose calls are counted and timed, by method: where a side's turns spend their
/// store time.
pub(super) type Counted<S> = Observed<S, Tallies>;

/// `inner`, its calls counted.
pub(super) fn counted<S: Store>(inner: S) -> Counted<S> {
    Observed::new(inner, Tallies::default())
}

/// The calls of each store method and the time they took, summed.
#[derive(Default)]
pub(super) struct Tallies(Mutex<Tally>);

impl Tallies {
    /// The calls so far.
    pub(super) fn tally(&self) -> Tally {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl StoreObserver for Tallies {
    fn after(&self, operation: StoreCall<'_>, took: Duration, _succeeded: bool) {
        let mut calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = calls.entry(operation.name()).or_default();
        entry.0 += 1;
        entry.1 += took;
    }
}

/// What `after` adds to `before`.
pub(super) fn since(before: &Tally, after: &Tally) -> Tally {
    after
        .iter()
        .map(|(method, (calls, took))| {
            let (calls0, took0) = before.get(method).copied().unwrap_or_default();
            (*method, (calls - calls0, took.saturating_sub(took0)))
        })
        .filter(|(_, (calls, _))| *calls > 0)
        .collect()
}
