//! [`TurnProgress`]: the live view of a turn — agents starting and finishing, their streamed text,
//! their tool calls and what the tools returned, questions asked and answered, errors — plus the lines a program adds for its own events
//! ([`Describe`]).

use std::io::Write;

use openharness::builtin::{Builtin, Outcome};
use openharness::{Envelope, Renderer};

use crate::Output;

/// A line (or several) for an event that is not built in, or `None` to print nothing. Made
/// once per turn, so it may keep counts (tasks planned, tasks done).
pub type Describe = Box<dyn FnMut(&Envelope) -> Option<String> + Send>;

/// Prints progress as events are recorded.
pub struct TurnProgress {
    out: Output,
    describe: Option<Describe>,
    streaming: bool,
}

impl std::fmt::Debug for TurnProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnProgress")
            .field("streaming", &self.streaming)
            .finish_non_exhaustive()
    }
}

impl TurnProgress {
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

impl Renderer for TurnProgress {
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
            Some(Builtin::ToolCalled(called)) => Some(format!(
                "    → {} calls {}({})",
                called.agent,
                called.tool,
                clip(&called.input.to_string())
            )),
            Some(Builtin::ToolResult(result)) => Some(format!(
                "    {} {} {}",
                if result.is_error { "✗" } else { "←" },
                result.tool,
                clip(&match &result.output {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
            )),
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

/// At most 120 characters of `text`, on one line.
fn clip(text: &str) -> String {
    let line = text.replace('\n', " ");
    if line.chars().count() > 120 {
        format!("{}…", line.chars().take(120).collect::<String>())
    } else {
        line
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use openharness::builtin::{ToolCalled, ToolResult};

    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn tool_calls_and_results_are_shown() {
        let written = Shared::default();
        let mut progress = TurnProgress::new(Output::new(written.clone()), None);
        let called = ToolCalled {
            client: false,
            server: None,
            agent: "clerk".into(),
            tool_call_id: "t1".into(),
            tool: "lookup_order".into(),
            input: serde_json::json!({ "id": 42 }),
        };
        let result = ToolResult {
            agent: "clerk".into(),
            tool_call_id: "t1".into(),
            tool: "lookup_order".into(),
            output: serde_json::json!("shipped\non Monday"),
            is_error: false,
        };
        progress.render(&Envelope::typed(&called, None).unwrap());
        progress.render(&Envelope::typed(&result, None).unwrap());
        let text = String::from_utf8(written.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "    → clerk calls lookup_order({\"id\":42})\n    ← lookup_order shipped on Monday\n"
        );
        assert_eq!(clip(&"x".repeat(130)).chars().count(), 121);
    }
}
