//! [`Progress`]: the live view of a turn — agents starting and finishing, their streamed text,
//! questions asked and answered, errors — plus the lines a program adds for its own events
//! ([`Describe`]).

use std::io::Write;

use openharness::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, Outcome, TextDelta,
};
use openharness::{Envelope, Event, Renderer};

use crate::Output;

/// A line (or several) for an event that is not built in, or `None` to print nothing. Made
/// once per turn, so it may keep counts (tasks planned, tasks done).
pub type Describe = Box<dyn FnMut(&Envelope) -> Option<String> + Send>;

/// Prints progress as events are recorded.
pub struct Progress {
    out: Output,
    describe: Option<Describe>,
    streaming: bool,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

impl Progress {
    /// A view writing to `out`, with `describe` for events that are not built in.
    pub fn new(out: Output, describe: Option<Describe>) -> Self {
        Self {
            out,
            describe,
            streaming: false,
        }
    }

    fn end_stream(&mut self) {
        if std::mem::take(&mut self.streaming) {
            let _ = writeln!(self.out);
        }
    }
}

impl Renderer for Progress {
    fn render(&mut self, event: &Envelope) {
        if event.is::<TextDelta>() {
            if let Ok(delta) = event.decode::<TextDelta>() {
                if !self.streaming {
                    let _ = write!(self.out, "    {}: ", delta.agent);
                    self.streaming = true;
                }
                let _ = write!(self.out, "{}", delta.delta);
                let _ = self.out.flush();
            }
            return;
        }
        self.end_stream();
        let line = match event.name.as_ref() {
            AgentStarted::NAME => event
                .decode::<AgentStarted>()
                .ok()
                .map(|s| format!("  ▶ {} started", s.agent)),
            AgentCompleted::NAME => {
                event
                    .decode::<AgentCompleted>()
                    .ok()
                    .map(|c| match c.outcome {
                        Outcome::Success => format!("  ✓ {} finished", c.agent),
                        other => {
                            format!("  ✗ {} {other:?}: {}", c.agent, c.error.unwrap_or_default())
                        }
                    })
            }
            InputRequested::NAME => event
                .decode::<InputRequested>()
                .ok()
                .map(|r| format!("  ? {} (request {})", r.prompt, event.id)),
            InputReceived::NAME => event
                .decode::<InputReceived>()
                .ok()
                .map(|a| format!("  answer: {}", a.text)),
            ErrorOccurred::NAME => event
                .decode::<ErrorOccurred>()
                .ok()
                .map(|e| format!("  ! {}: {}", e.source, e.message)),
            _ => self.describe.as_mut().and_then(|describe| describe(event)),
        };
        if let Some(line) = line {
            let _ = writeln!(self.out, "{line}");
        }
    }

    fn finish(&mut self) {
        self.end_stream();
        let _ = self.out.flush();
    }
}
