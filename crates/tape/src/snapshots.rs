//! Choosing the snapshot interval from measurements, and the fine cache that makes walking
//! backwards cheap.
//!
//! A tape keeps the state every `K` events. A jump folds at most `K` events from the nearest
//! snapshot, so `K` is bounded by a time budget divided by the measured per-event fold cost;
//! the snapshots' memory is `len / K` states, so `K` is bounded below by keeping that under a
//! share of the events' own size. When the two disagree, memory wins and the fine cache
//! keeps backwards walks cheap: the first step back into a segment folds it once and keeps
//! `√K` states inside it, so each further step back folds at most `√K` events.

use std::io::Write;
use std::time::Instant;

use openharness_core::{Envelope, Handler, adapter::Fold};
use serde::Serialize;

/// How long folding from a snapshot to any position may take, in nanoseconds.
const FOLD_BUDGET_NANOS: f64 = 50_000.0;
/// The share of the events' size the snapshots may take (with a safety margin under 10%).
const SNAPSHOT_SHARE: f64 = 0.08;
/// How many events the calibration folds.
const CALIBRATION_EVENTS: usize = 1024;
/// Bounds of the interval.
const MIN_INTERVAL: u64 = 16;
const MAX_INTERVAL: u64 = 1 << 16;

/// What the tape measured to choose its snapshot interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Calibration {
    /// Nanoseconds to fold one event.
    pub(crate) fold_nanos: f64,
    /// Bytes of one state, as JSON.
    state_bytes: f64,
    /// Bytes of one event, as JSON, on average.
    event_bytes: f64,
}

impl Calibration {
    /// Folds up to [`CALIBRATION_EVENTS`] events from `initial`, timing it, and measures the
    /// state and the events.
    pub(crate) fn measure<S: Handler + Serialize>(initial: &S, events: &[Envelope]) -> Self {
        let sample = &events[..events.len().min(CALIBRATION_EVENTS)];
        let mut fold = Fold::new(initial.clone()).quiet();
        let started = Instant::now();
        for event in sample {
            fold.apply(event, sample);
        }
        let elapsed = started.elapsed().as_nanos() as f64;
        let fold_nanos = if sample.is_empty() {
            1_000.0
        } else {
            (elapsed / sample.len() as f64).max(1.0)
        };
        let event_bytes = if sample.is_empty() {
            200.0
        } else {
            sample.iter().map(encoded_len).sum::<u64>() as f64 / sample.len() as f64
        };
        Self {
            fold_nanos,
            state_bytes: encoded_len(fold.state()).max(encoded_len(initial)) as f64,
            event_bytes: event_bytes.max(1.0),
        }
    }

    /// The snapshot interval: as many events as fit in the time budget, but never so few
    /// that the snapshots outgrow their share of memory.
    /// How many states of the measured size fit in `bytes`.
    pub(crate) fn states_within(&self, bytes: f64) -> u64 {
        (bytes / self.state_bytes.max(1.0)) as u64
    }

    pub(crate) fn interval(&self) -> u64 {
        let by_time = FOLD_BUDGET_NANOS / self.fold_nanos;
        let by_memory = self.state_bytes / (SNAPSHOT_SHARE * self.event_bytes);
        (by_time.max(by_memory).ceil() as u64).clamp(MIN_INTERVAL, MAX_INTERVAL)
    }
}

/// The size of `value` as JSON, without building the JSON.
pub(crate) fn encoded_len<T: Serialize>(value: &T) -> u64 {
    struct Count(u64);
    impl Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// States every `step` positions inside one segment `[base, end]`.
pub(crate) struct FineCache<S> {
    base: u64,
    end: u64,
    step: u64,
    /// `states[j]` is the state at `base + j * step`.
    states: Vec<S>,
}

impl<S: openharness_core::WorkflowState> FineCache<S> {
    /// Folds `events[base..end]` from `state` (the state at `base`).
    pub(crate) fn build(state: S, base: u64, end: u64, interval: u64, events: &[Envelope]) -> Self {
        let step = (interval as f64).sqrt().ceil().max(1.0) as u64;
        let mut states = vec![state.clone()];
        let mut fold = Fold::at(state, base).restoring().quiet();
        let from = usize::try_from(base).unwrap_or(usize::MAX);
        let to = usize::try_from(end).unwrap_or(usize::MAX);
        for event in events.get(from..to).unwrap_or_default() {
            fold.apply(event, events);
            if (fold.position() - base).is_multiple_of(step) {
                states.push(fold.state().clone());
            }
        }
        Self {
            base,
            end,
            step,
            states,
        }
    }

    /// The first position the cache covers.
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// The last position the cache covers.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// The latest cached state at or before `target`, if `target` is in the segment.
    pub(crate) fn at_or_before(&self, target: u64) -> Option<(u64, &S)> {
        if target < self.base || target > self.end {
            return None;
        }
        let index = usize::try_from((target - self.base) / self.step)
            .unwrap_or(usize::MAX)
            .min(self.states.len() - 1);
        Some((self.base + index as u64 * self.step, &self.states[index]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calibration(fold_nanos: f64, state_bytes: f64, event_bytes: f64) -> Calibration {
        Calibration {
            fold_nanos,
            state_bytes,
            event_bytes,
        }
    }

    #[test]
    fn the_interval_follows_the_fold_cost_when_states_are_small() {
        // 500 ns per event: 100 events fit in 50 µs; a 100-byte state needs only ~6.
        assert_eq!(calibration(500.0, 100.0, 200.0).interval(), 100);
        // A slower fold gives a shorter interval (but not under the minimum).
        assert_eq!(calibration(2_000.0, 100.0, 200.0).interval(), 25);
        assert_eq!(calibration(1e9, 100.0, 200.0).interval(), MIN_INTERVAL);
    }

    #[test]
    fn the_interval_keeps_snapshots_under_their_memory_share() {
        // A 10 KB state over 100-byte events: snapshots every 1280 events take 8%.
        let c = calibration(100.0, 10_240.0, 100.0);
        let k = c.interval();
        assert_eq!(k, 1280);
        assert!(10_240.0 / k as f64 <= 0.1 * 100.0);
    }

    #[test]
    fn encoded_len_is_the_json_length() {
        let value = serde_json::json!({ "a": [1, 2, 3], "b": "text" });
        assert_eq!(
            encoded_len(&value),
            serde_json::to_vec(&value).map_or(0, |v| v.len() as u64)
        );
    }
}
