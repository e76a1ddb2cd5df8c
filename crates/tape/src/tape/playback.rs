//! Playback: [`Tape::play`] and [`Tape::play_to`] feed renderers at a [`Pacing`] until the
//! end, a target or a [`Pauser`].

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use openharness_core::{Renderer, WorkflowState};

use super::Tape;

/// How fast [`Tape::play`] moves.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[non_exhaustive]
pub enum Pacing {
    /// As fast as possible (yielding to other tasks now and then).
    #[default]
    Instant,
    /// This long between two events.
    Every(Duration),
    /// The recorded gaps between events, divided by `speed` (2.0 plays twice as fast), each
    /// gap capped at one second.
    Recorded {
        /// The speed-up factor (values at or below 0 play instantly).
        speed: f64,
    },
}

/// A handle that pauses a tape's playback from elsewhere (another task, a key handler).
///
/// ```
/// # fn demo<S: openharness_core::WorkflowState>(tape: &openharness_tape::Tape<S>) {
/// let pauser = tape.pauser();
/// // ... hand `pauser` to a task; `pauser.pause()` stops a running `tape.play(..)`
/// pauser.pause();
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Pauser(pub(super) Arc<AtomicBool>);

impl Pauser {
    /// Stops the running play after the event it is on.
    pub fn pause(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl<S: WorkflowState> Tape<S> {
    /// Plays to the end, handing each event to `renderer` (its patterns apply), at `pacing`.
    /// On a recording tape, follows the run until it ends. Stops early on [`Tape::pause`].
    /// Returns the position reached.
    ///
    /// ```
    /// # async fn demo<S: openharness_core::WorkflowState>(mut tape: openharness_tape::Tape<S>) {
    /// use openharness_core::renderer_fn;
    /// use openharness_tape::Pacing;
    /// let mut printer = renderer_fn("*".parse().unwrap(), |event| println!("{}", event.name));
    /// tape.play(&mut printer, Pacing::Instant).await;
    /// assert_eq!(tape.position(), tape.len());
    /// # }
    /// ```
    pub async fn play<R: Renderer + ?Sized>(&mut self, renderer: &mut R, pacing: Pacing) -> u64 {
        self.play_to(u64::MAX, renderer, pacing).await
    }

    /// Plays forward to `position` (clamped to the end of the run), like [`Tape::play`].
    pub async fn play_to<R: Renderer + ?Sized>(
        &mut self,
        position: u64,
        renderer: &mut R,
        pacing: Pacing,
    ) -> u64 {
        self.paused.store(false, Ordering::SeqCst);
        self.playing = true;
        let patterns = renderer.patterns();
        let mut played = 0u64;
        while self.position() < position && !self.paused.load(Ordering::SeqCst) {
            if self.position() == self.len() {
                self.refresh();
                if self.position() == self.len() && !self.wait_for_events().await {
                    break;
                }
            }
            let gap = match pacing {
                Pacing::Instant => None,
                Pacing::Every(gap) => Some(gap),
                Pacing::Recorded { speed } => self.recorded_gap(speed),
            };
            match gap {
                Some(gap) if !gap.is_zero() => tokio::time::sleep(gap).await,
                _ if played % 256 == 255 => tokio::task::yield_now().await,
                _ => {}
            }
            if self.paused.load(Ordering::SeqCst) {
                break;
            }
            self.step();
            played += 1;
            if let Some(event) = self.current()
                && patterns.iter().any(|p| p.matches(&event.name))
                && let Err(panic) = catch_unwind(AssertUnwindSafe(|| renderer.render(event)))
            {
                tracing::error!(event = %event.name, panic = ?panic.downcast_ref::<&str>(), "a renderer panicked during playback");
            }
        }
        self.playing = false;
        self.position()
    }

    /// The recorded time between the current event and the next one, divided by `speed`.
    fn recorded_gap(&self, speed: f64) -> Option<Duration> {
        if speed <= 0.0 {
            return None;
        }
        let next = self.event_at(self.position() + 1)?;
        let previous = self.current()?;
        let gap = (next.timestamp - previous.timestamp).to_std().ok()?;
        Some(gap.div_f64(speed).min(Duration::from_secs(1)))
    }

    /// Stops a running play after its current event (a no-op when not playing). Use a
    /// [`Pauser`] to pause from another task while `play` holds the tape.
    pub fn pause(&self) {
        if self.playing {
            self.paused.store(true, Ordering::SeqCst);
        }
    }

    /// A handle that pauses this tape's playback from elsewhere.
    pub fn pauser(&self) -> Pauser {
        Pauser(Arc::clone(&self.paused))
    }
}
