//! `cargo xtask bench chat`: what streaming an agent's reply as text costs `/api/chat`.
//!
//! One agent call streams a long reply as 20,000 small fragments. Measured: the UI message
//! stream's work per fragment when the fragments are the model's JSON (`{"reply": "…"}`,
//! escapes included) and the reply's characters are decoded out of it (`ReplyDecoder`, a
//! character at a time), each chunk serialized as the server writes it. Baseline, in the same
//! run: the same stream over the same number of fragments of plain text (what streaming raw
//! deltas costs: each fragment passed through whole). Rounds alternate between the two and the
//! median of each is compared; goal: decoding costs at most 5% more.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use openharness::builtin::{AgentCompleted, AgentStarted, Outcome, TextDelta, WorkflowCompleted};
use openharness::{Envelope, adapter::Usage};
use openharness_projection::UiStream;
use serde_json::json;

use crate::report::Row;

const FRAGMENTS: usize = 20_000;
const ROUNDS: usize = 15;

/// An agent call whose deltas are `fragments`, recorded with `reply` as its reply pointer.
fn call(reply: Option<&str>, fragments: &[String], output: serde_json::Value) -> Vec<Envelope> {
    let mut events = Vec::with_capacity(fragments.len() + 3);
    let started = AgentStarted {
        agent: "assistant".into(),
        prompt: "Tell me a long story.".into(),
        reply: reply.map(str::to_owned),
        ..AgentStarted::default()
    };
    events.extend(Envelope::typed(&started, None));
    for fragment in fragments {
        let delta = TextDelta {
            agent: "assistant".into(),
            delta: fragment.clone(),
            attempt: 1,
        };
        events.extend(Envelope::typed(&delta, None));
    }
    let completed = AgentCompleted {
        agent: "assistant".into(),
        outcome: Outcome::Success,
        usage: Usage::default(),
        cost: None,
        error: None,
        output: Some(output),
    };
    events.extend(Envelope::typed(&completed, None));
    let done = WorkflowCompleted {
        reason: "idle".into(),
        open_requests: Vec::new(),
        errors: 0,
        queued: Vec::new(),
    };
    events.extend(Envelope::typed(&done, None));
    events
}

/// The chunks' serialized bytes (as the SSE writer makes them) and the time it took.
fn stream(events: &[Envelope]) -> (usize, Duration) {
    let start = Instant::now();
    let mut stream = UiStream::new();
    let mut bytes = 0;
    for event in events {
        let (chunks, _) = stream.chunks(event);
        bytes += chunks
            .iter()
            .map(|c| serde_json::to_string(c).unwrap_or_default().len())
            .sum::<usize>();
    }
    (std::hint::black_box(bytes), start.elapsed())
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

/// Runs the suite and prints its table.
pub(crate) fn run() -> ExitCode {
    // A story of FRAGMENTS words with a line break and a quote now and then.
    let words: Vec<String> = (0..FRAGMENTS)
        .map(|i| match i % 50 {
            0 => "\"quoted\"\n".to_owned(),
            _ => format!("word{} ", i % 7),
        })
        .collect();
    let story: String = words.concat();
    let output = json!({ "reply": story });
    // The model's JSON, cut into as many fragments as the story has words.
    let source = output.to_string();
    let per = source.len().div_ceil(FRAGMENTS);
    let chars: Vec<char> = source.chars().collect();
    let json_fragments: Vec<String> = chars.chunks(per).map(|c| c.iter().collect()).collect();
    let json_call = call(Some("/reply"), &json_fragments, output.clone());
    let prose_call = call(Some("/reply"), &words, output);

    let (mut ours, mut baseline) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        // Alternate which side goes first, so neither always runs on a warmer cache.
        if round % 2 == 0 {
            ours.push(stream(&json_call).1);
            baseline.push(stream(&prose_call).1);
        } else {
            baseline.push(stream(&prose_call).1);
            ours.push(stream(&json_call).1);
        }
    }
    let (ours, baseline) = (median(ours), median(baseline));
    let ratio = ours.as_secs_f64() / baseline.as_secs_f64();
    let per_fragment = |d: Duration| d.as_secs_f64() * 1e9 / FRAGMENTS as f64;
    let rows = [Row {
        what: format!("reply decoded from JSON, {FRAGMENTS} fragments"),
        measured: format!("{:.0} ns/fragment", per_fragment(ours)),
        baseline: format!("{:.0} ns/fragment raw", per_fragment(baseline)),
        ratio: format!("{ratio:.3}x"),
        goal: "<= 1.05x",
        met: Some(ratio <= 1.05),
    }];
    crate::report::print(&rows);
    if rows.iter().all(|row| row.met != Some(false)) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
