//! [`Progress`]: the live view of a turn — agents starting and finishing, their streamed text,
//! questions asked and answered, errors — plus the lines a program adds for its own events
//! ([`Describe`]).

use std::io::Write;

use openharness::builtin::{Builtin, Outcome};
use openharness::{Envelope, Renderer};

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
        let builtin = Builtin::decode(event).and_then(Result::ok);
        if let Some(Builtin::TextDelta(delta)) = &builtin {
            if !self.streaming {
                let _ = write!(self.out, "    {}: ", delta.agent);
                self.streaming = true;
            }
            let _ = write!(self.out, "{}", delta.delta);
            let _ = self.out.flush();
            return;
        }
        self.end_stream();
        let line = match builtin {
            Some(Builtin::AgentStarted(started)) => Some(format!("  ▶ {} started", started.agent)),
            Some(Builtin::AgentCompleted(completed)) => Some(match completed.outcome {
                Outcome::Success => format!("  ✓ {} finished", completed.agent),
                // Why is the `error:occurred` recorded (and printed) just before: once is
                // enough.
                Outcome::Failure => format!("  ✗ {} failed", completed.agent),
                other => format!(
                    "  ✗ {} {other:?}: {}",
                    completed.agent,
                    completed.error.unwrap_or_default()
                ),
            }),
            Some(Builtin::InputRequested(request)) => {
                Some(format!("  ? {} (request {})", request.prompt, event.id))
            }
            Some(Builtin::InputReceived(answer)) => Some(format!("  answer: {}", answer.text)),
            Some(Builtin::ErrorOccurred(error)) => {
                Some(format!("  ! {}: {}", error.source, error.message))
            }
            Some(_) => None,
            None => self.describe.as_mut().and_then(|describe| describe(event)),
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
