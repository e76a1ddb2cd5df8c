//! Tests of `ui_stream`.

#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, TextDelta, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Event, adapter::Usage};

use super::*;

fn ev<E: Event>(event: &E, cause: Option<EventId>) -> Envelope {
    Envelope::typed(event, cause).unwrap()
}

fn started(agent: &str, cause: Option<EventId>) -> Envelope {
    let started = AgentStarted {
        agent: agent.into(),
        reply: Some("/reply".into()),
        ..AgentStarted::default()
    };
    ev(&started, cause)
}

fn delta(agent: &str, text: &str, attempt: u32, cause: Option<EventId>) -> Envelope {
    let delta = TextDelta {
        agent: agent.into(),
        delta: text.into(),
        attempt,
    };
    ev(&delta, cause)
}

fn completed(agent: &str, reply: &str, cause: Option<EventId>) -> Envelope {
    let completed = AgentCompleted {
        agent: agent.into(),
        outcome: Outcome::Success,
        usage: Usage::default(),
        cost: None,
        error: None,
        output: Some(json!({ "reply": reply })),
    };
    ev(&completed, cause)
}

fn done() -> Envelope {
    let done = WorkflowCompleted {
        reason: "idle".into(),
        open_requests: Vec::new(),
        errors: 0,
        queued: Vec::new(),
    };
    ev(&done, None)
}

fn texts(events: &[Envelope]) -> Vec<String> {
    let chat = serde_json::to_value(ui_messages(events)).unwrap();
    chat.as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["parts"].as_array().unwrap().clone())
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn calls_running_at_once_stream_into_parts_of_their_own() {
    let input = ev(&UserInput::new("go"), None);
    let (a, b) = (Some(input.id), Some(input.id));
    let events = [
        input.clone(),
        started("alpha", a),
        started("beta", b),
        delta("alpha", "{\"reply\": \"Al", 1, a),
        delta("beta", "{\"reply\": \"Be", 1, b),
        delta("alpha", "pha\"}", 1, a),
        completed("alpha", "Alpha", a),
        delta("beta", "ta\"}", 1, b),
        completed("beta", "Beta", b),
        done(),
    ];
    assert_eq!(texts(&events), ["go", "Alpha", "Beta"]);
    // One step for the two calls: it ends once neither runs.
    let mut stream = UiStream::new();
    let kinds: Vec<String> = events
        .iter()
        .flat_map(|e| stream.chunks(e).0)
        .map(|c| c.to_value()["type"].as_str().unwrap().to_owned())
        .filter(|k| k.ends_with("-step"))
        .collect();
    assert_eq!(kinds, ["start-step", "finish-step"]);
}

#[test]
fn approvals_asked_mid_turn_come_last_in_a_step_of_their_own() {
    use openharness_core::builtin::InputRequested;
    let input = ev(&UserInput::new("go"), None);
    let cause = Some(input.id);
    let asked = ev(&InputRequested::approval("Ship?"), cause);
    let question = ev(&InputRequested::new("Which city?"), cause);
    let events = [
        input.clone(),
        started("a", cause),
        asked.clone(),
        question,
        delta("a", "{\"reply\": \"Working", 1, cause),
        completed("a", "Working", cause),
        done(),
    ];
    let kinds = |approvals| {
        let mut stream = UiStream::with_approvals(approvals);
        events
            .iter()
            .flat_map(|e| stream.chunks(e).0)
            .map(|c| c.to_value()["type"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    // The AI SDK looks for approvals in the message's last step: after the agent's.
    assert_eq!(
        kinds(Approvals::Tool),
        [
            "start",
            "start-step",
            "data-input-requested",
            "text-start",
            "text-delta",
            "text-end",
            "data-output",
            "finish-step",
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-approval-request",
            "finish-step",
            "finish"
        ]
    );
    // Without approvals as tool parts, both requests are data parts, where they were asked.
    let data = kinds(Approvals::Data);
    assert_eq!(
        data.iter().filter(|k| *k == "data-input-requested").count(),
        2
    );
    assert!(data.iter().all(|k| !k.starts_with("tool-")), "{data:?}");
    let chat = serde_json::to_value(ui_messages_with(&events, Approvals::Tool)).unwrap();
    let parts = chat[1]["parts"].as_array().unwrap();
    assert_eq!(parts[parts.len() - 2], json!({ "type": "step-start" }));
    assert_eq!(parts[parts.len() - 1]["state"], "approval-requested");
    assert_eq!(parts[parts.len() - 1]["approval"]["id"], json!(asked.id));
}

#[test]
fn an_edited_message_replaces_itself_and_what_followed() {
    let mut first = ev(&UserInput::new("Lisbon?"), None);
    first.payload["messageId"] = "m1".into();
    let mut edited = ev(&UserInput::new("Porto?"), None);
    edited.payload["messageId"] = "m1".into();
    let events = [
        first.clone(),
        started("a", Some(first.id)),
        completed("a", "Lisbon!", Some(first.id)),
        done(),
        edited.clone(),
        started("a", Some(edited.id)),
        completed("a", "Porto!", Some(edited.id)),
        done(),
    ];
    assert_eq!(texts(&events), ["Porto?", "Porto!"]);
}

#[test]
fn a_re_asked_attempt_streams_a_new_part() {
    let input = ev(&UserInput::new("go"), None);
    let cause = Some(input.id);
    let events = [
        input.clone(),
        started("a", cause),
        delta("a", "{\"reply\": \"Sunny", 1, cause),
        delta("a", "{\"reply\": \"Sunny, 20", 2, cause),
        completed("a", "Sunny, 20", cause),
        done(),
    ];
    assert_eq!(texts(&events), ["go", "Sunny", "Sunny, 20"]);
}

#[test]
fn a_turn_cut_off_before_its_end_does_not_swallow_the_next() {
    let first = ev(&UserInput::new("one"), None);
    let second = ev(&UserInput::new("two"), None);
    let events = [
        ev(
            &WorkflowStarted {
                workflow: "chat".into(),
                code: None,
                version: None,
                commit: None,
                state_shape: None,
            },
            None,
        ),
        first.clone(),
        started("a", Some(first.id)),
        second.clone(),
        started("a", Some(second.id)),
        completed("a", "Answer two", Some(second.id)),
        done(),
    ];
    let chat = serde_json::to_value(ui_messages(&events)).unwrap();
    let roles: Vec<&str> = chat
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(chat[3]["parts"][1]["text"], "Answer two");
}

/// A `text-delta` as the stream wrote it before it was typed: a `json!` map.
fn text_delta_as_map(id: &str, delta: &str) -> String {
    json!({ "type": "text-delta", "id": id, "delta": delta }).to_string()
}

#[test]
fn a_typed_text_delta_is_the_same_json_text_as_the_map_it_replaces() {
    for text in [
        "Hello",
        "",
        "say \"hi\"\n\tand\r\\ go",
        "naïve 日本語 🎉 \u{7f}\u{0}\u{1f}",
        "</script>&<'>",
    ] {
        let chunk = UiChunk::TextDelta(UiTextDelta {
            id: "text-\"1\"".into(),
            delta: text.to_owned(),
        });
        let expected = text_delta_as_map("text-\"1\"", text);
        assert_eq!(serde_json::to_string(&chunk).unwrap(), expected);
        assert_eq!(chunk.to_value().to_string(), expected);
    }
}

#[test]
fn streamed_text_deltas_are_written_as_the_maps_they_replace_and_stored_alike() {
    let first = delta("assistant", "{\"reply\": \"Say \\\"hi\\\"\\n", 1, None);
    let events = [
        started("assistant", None),
        first.clone(),
        delta("assistant", "日本 🎉\"}", 1, None),
        completed("assistant", "Say \"hi\"\n日本 🎉", None),
        done(),
    ];
    let mut stream = UiStream::new();
    let written: Vec<String> = events
        .iter()
        .flat_map(|event| stream.chunks(event).0)
        .filter(|chunk| matches!(chunk, UiChunk::TextDelta(_)))
        .map(|chunk| serde_json::to_string(&chunk).unwrap())
        .collect();
    let id = format!("text-{}", first.id);
    assert_eq!(
        written,
        [
            text_delta_as_map(&id, "Say \"hi\"\n"),
            text_delta_as_map(&id, "日本 🎉"),
        ]
    );
    assert_eq!(texts(&events), ["Say \"hi\"\n日本 🎉"]);
}
