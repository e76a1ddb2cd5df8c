//! Tests of `cassette`.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

#[test]
fn each_event_belongs_to_its_calls_stream_or_the_main_one() {
    let mut log: Vec<Envelope> = Vec::new();
    let mut push = |name: &'static str, payload: Value, cause: Option<usize>| {
        let caused_by = cause.map(|i: usize| log[i].id);
        log.push(Envelope::new(name, payload, caused_by));
    };
    let completed = |agent: &str, outcome: &str| json!({ "agentName": agent, "outcome": outcome, "usage": { "inputTokens": 0, "outputTokens": 0 } });
    push("workflow:started", json!({ "workflow": "w" }), None); // 0
    push("user:input", json!({ "text": "hi" }), None); // 1
    push("note:made", json!({}), Some(1)); // 2: a handler's event
    push(
        "agent:started",
        json!({ "agentName": "a", "prompt": "p" }),
        Some(1),
    ); // 3
    push(
        "agent:started",
        json!({ "agentName": "b", "prompt": "p" }),
        Some(1),
    ); // 4
    // Another agent could not be activated: recorded with the trigger's consequences.
    push("error:occurred", json!({ "code": "agent" }), Some(1)); // 5
    push("review:written", json!({}), Some(1)); // 6: a's `on_output`
    push("agent:completed", completed("a", "success"), Some(1)); // 7
    push("review:filed", json!({}), Some(6)); // 8: a handler's event for a's output
    push(
        "text:delta",
        json!({ "agentName": "b", "delta": "x" }),
        Some(1),
    ); // 9
    push("error:occurred", json!({ "code": "agent" }), Some(1)); // 10: b failed
    push("agent:completed", completed("b", "failure"), Some(1)); // 11
    push("workflow:completed", json!({ "reason": "idle" }), None); // 12
    let streams = recorded_streams(&log, &ids(&log));
    let call = |agent: &str| Stream::Call {
        agent: agent.to_owned(),
        trigger: Some(1),
        nth: 0,
    };
    let seqs = |stream: &Stream| Vec::from(streams[stream].clone());
    assert_eq!(seqs(&Stream::Main), [0, 1, 2, 3, 4, 5, 12]);
    assert_eq!(seqs(&call("a")), [6, 7, 8]);
    assert_eq!(seqs(&call("b")), [9, 10, 11]);
    assert_eq!(streams.len(), 3);
}
