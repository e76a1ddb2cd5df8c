//! [`Progress`]: the live view of a turn — agents starting and finishing, their streamed text,
//! the task count, questions asked and answered, the release decision and chat replies.

use std::io::Write;

use openharness::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputReceived, InputRequested, Outcome, TextDelta,
};
use openharness::{Envelope, Event, Renderer};
use openharness_example_chat::AssistantReplied;
use openharness_example_planner_executor::{
    PlanCreated, ReleaseDeclined, ReleasePublished, TaskCompleted, TaskStarted,
};

/// Prints progress as events are recorded.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    total: usize,
    done: usize,
    streaming: bool,
}

impl Progress {
    fn end_stream(&mut self, out: &mut impl Write) {
        if std::mem::take(&mut self.streaming) {
            let _ = writeln!(out);
        }
    }
}

impl Renderer for Progress {
    fn render(&mut self, event: &Envelope) {
        let mut out = std::io::stdout().lock();
        if event.is::<TextDelta>() {
            if let Ok(delta) = event.decode::<TextDelta>() {
                if !self.streaming {
                    let _ = write!(out, "    {}: ", delta.agent);
                    self.streaming = true;
                }
                let _ = write!(out, "{}", delta.delta);
                let _ = out.flush();
            }
            return;
        }
        self.end_stream(&mut out);
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
            PlanCreated::NAME => event.decode::<PlanCreated>().ok().map(|plan| {
                self.total = plan.tasks.len();
                let list: Vec<_> = plan
                    .tasks
                    .iter()
                    .enumerate()
                    .map(|(i, t)| format!("      {}. {t}", i + 1))
                    .collect();
                format!("  plan: {} tasks\n{}", self.total, list.join("\n"))
            }),
            TaskStarted::NAME => event
                .decode::<TaskStarted>()
                .ok()
                .map(|t| format!("  task {}/{}: {}", t.index + 1, self.total, t.title)),
            TaskCompleted::NAME => event.decode::<TaskCompleted>().ok().map(|_| {
                self.done += 1;
                format!("  [{}/{} tasks done]", self.done, self.total)
            }),
            InputRequested::NAME => event
                .decode::<InputRequested>()
                .ok()
                .map(|r| format!("  ? {} (request {})", r.prompt, event.id)),
            InputReceived::NAME => event
                .decode::<InputReceived>()
                .ok()
                .map(|a| format!("  answer: {}", a.text)),
            ReleasePublished::NAME => Some("  release published".to_owned()),
            ReleaseDeclined::NAME => event
                .decode::<ReleaseDeclined>()
                .ok()
                .map(|d| format!("  release not published (answer: {:?})", d.answer)),
            AssistantReplied::NAME => event
                .decode::<AssistantReplied>()
                .ok()
                .map(|r| format!("  assistant: {}", r.reply)),
            ErrorOccurred::NAME => event
                .decode::<ErrorOccurred>()
                .ok()
                .map(|e| format!("  ! {}: {}", e.source, e.message)),
            _ => None,
        };
        if let Some(line) = line {
            let _ = writeln!(out, "{line}");
        }
    }

    fn finish(&mut self) {
        let mut out = std::io::stdout().lock();
        self.end_stream(&mut out);
        let _ = out.flush();
    }
}
