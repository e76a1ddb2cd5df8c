//! The AG-UI projection: event order and the 1.0 client's rules (every message and step
//! closed before `RUN_FINISHED`, no nulls), state deltas, tool calls, interrupts, a stopped
//! turn, a failure, and rejoining a run under way.
#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, InputRequested, Outcome, TextDelta, ToolCalled, ToolResult,
    UserInput, WorkflowCompleted,
};
use openharness_core::{Envelope, EventId};
use serde_json::{Value, json};

use super::*;

fn input(text: &str) -> Envelope {
    let mut input = Envelope::typed(&UserInput::new(text), None).unwrap();
    input.payload["messageId"] = json!("u1");
    input
}

fn started(cause: Option<EventId>) -> Envelope {
    let started = AgentStarted {
        agent: "assistant".into(),
        reply: Some("/reply".into()),
        ..AgentStarted::default()
    };
    Envelope::typed(&started, cause).unwrap()
}

fn delta(text: &str, cause: Option<EventId>) -> Envelope {
    let delta = TextDelta {
        agent: "assistant".into(),
        delta: text.into(),
        attempt: 1,
    };
    Envelope::typed(&delta, cause).unwrap()
}

fn completed(reply: &str, cause: Option<EventId>) -> Envelope {
    let completed = AgentCompleted {
        agent: "assistant".into(),
        outcome: Outcome::Success,
        usage: Default::default(),
        cost: None,
        error: None,
        output: Some(json!({ "reply": reply })),
    };
    Envelope::typed(&completed, cause).unwrap()
}

fn ended(reason: &str, open: Vec<EventId>) -> Envelope {
    let done = WorkflowCompleted {
        reason: reason.into(),
        open_requests: open,
        ..WorkflowCompleted::default()
    };
    Envelope::typed(&done, None).unwrap()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// What the 1.0 client's verifier checks: opened before used, closed before the run ends,
/// no null anywhere.
fn assert_verifiable(events: &[Value]) {
    let mut messages = std::collections::HashSet::new();
    let mut steps = std::collections::HashSet::new();
    for event in events {
        assert!(!event.to_string().contains("null"), "a null in {event}");
        let id = event["messageId"].as_str().unwrap_or_default().to_owned();
        match event["type"].as_str().unwrap() {
            "TEXT_MESSAGE_START" => assert!(messages.insert(id)),
            "TEXT_MESSAGE_CONTENT" => assert!(messages.contains(&id)),
            "TEXT_MESSAGE_END" => assert!(messages.remove(&id)),
            "STEP_STARTED" => assert!(steps.insert(event["stepName"].clone())),
            "STEP_FINISHED" => assert!(steps.remove(&event["stepName"])),
            "RUN_FINISHED" => assert!(
                messages.is_empty() && steps.is_empty(),
                "{messages:?} {steps:?}"
            ),
            _ => {}
        }
    }
}

/// The events as JSON values.
fn values(events: Vec<AgUiEvent>) -> Vec<Value> {
    events.iter().map(AgUiEvent::to_value).collect()
}

#[test]
fn a_reply_streams_as_its_characters_in_a_step_and_the_run_finishes_with_its_result() {
    let input = input("Hi");
    let cause = Some(input.id);
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let events: Vec<Value> = [
        input.clone(),
        started(cause),
        delta("{\"reply\": \"Hel", cause),
        delta("lo\"}", cause),
        completed("Hello", cause),
        ended("idle", Vec::new()),
    ]
    .iter()
    .flat_map(|event| values(run.step(event, None)))
    .collect();
    assert_verifiable(&events);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hello");
    let finished = events.last().unwrap();
    assert_eq!(finished["outcome"]["type"], "success");
    assert_eq!(finished["result"], json!({ "reply": "Hello" }));
    let messages = run.messages();
    assert_eq!(
        messages[0],
        json!({ "id": "u1", "role": "user", "content": "Hi" })
    );
    assert_eq!(messages[1]["content"], "Hello");
    assert!(run.ended());
}

#[test]
fn state_changes_are_json_patches_from_the_snapshot() {
    let input = input("Hi");
    let mut run = AgUiStream::new("t", "r", Vec::new(), Some(json!({ "lines": [] })));
    let first = values(run.step(&input, Some(json!({ "lines": ["Hi"] }))));
    assert_eq!(
        kinds(&first),
        ["RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA"]
    );
    assert_eq!(first[1]["snapshot"], json!({ "lines": [] }));
    assert_eq!(
        first[2]["delta"],
        json!([{ "op": "add", "path": "/lines/0", "value": "Hi" }])
    );
    // The same state again: no delta.
    let again = values(run.step(&started(Some(input.id)), Some(json!({ "lines": ["Hi"] }))));
    assert_eq!(kinds(&again), ["STEP_STARTED"]);
}

#[test]
fn a_tool_call_and_its_result_are_a_call_and_a_tool_message_after_it() {
    let input = input("weather?");
    let cause = Some(input.id);
    let called = ToolCalled {
        client: false,
        agent: "assistant".into(),
        tool_call_id: "call_1".into(),
        tool: "weather".into(),
        input: json!({ "city": "Lisbon" }),
        server: None,
    };
    let result = ToolResult {
        agent: "assistant".into(),
        tool_call_id: "call_1".into(),
        tool: "weather".into(),
        output: json!({ "sky": "clear" }),
        is_error: false,
    };
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let events: Vec<Value> = [
        input.clone(),
        started(cause),
        delta("Let me look.", cause),
        Envelope::typed(&called, cause).unwrap(),
        Envelope::typed(&result, cause).unwrap(),
        completed("Sunny.", cause),
        ended("idle", Vec::new()),
    ]
    .iter()
    .flat_map(|event| values(run.step(event, None)))
    .collect();
    assert_verifiable(&events);
    assert_eq!(
        kinds(&events)[1..],
        [
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "CUSTOM",
            "STEP_FINISHED",
            "MESSAGES_SNAPSHOT",
            "RUN_FINISHED",
        ]
    );
    let roles: Vec<&str> = run
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "assistant", "tool", "assistant"]
    );
    assert_eq!(run.messages()[3]["content"], "{\"sky\":\"clear\"}");
}

#[test]
fn a_question_is_an_interrupt_after_a_messages_snapshot() {
    let input = input("publish");
    let asked = Envelope::typed(&InputRequested::approval("Publish?"), Some(input.id)).unwrap();
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let events: Vec<Value> = [
        input,
        asked.clone(),
        ended("waiting_for_input", vec![asked.id]),
    ]
    .iter()
    .flat_map(|event| values(run.step(event, None)))
    .collect();
    assert_eq!(
        kinds(&events),
        ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    );
    let outcome = &events[2]["outcome"];
    assert_eq!(outcome["type"], "interrupt");
    assert_eq!(outcome["interrupts"][0]["id"], json!(asked.id));
    assert_eq!(outcome["interrupts"][0]["reason"], "confirmation");
    assert_eq!(outcome["interrupts"][0]["message"], "Publish?");
}

#[test]
fn a_stopped_turn_closes_what_it_opened_and_is_cancelled() {
    let input = input("long");
    let cause = Some(input.id);
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let events: Vec<Value> = [
        input.clone(),
        started(cause),
        delta("{\"reply\": \"Par", cause),
        ended("cancelled", Vec::new()),
    ]
    .iter()
    .flat_map(|event| values(run.step(event, None)))
    .collect();
    assert_verifiable(&events);
    assert_eq!(events.last().unwrap()["outcome"]["type"], "cancelled");
}

#[test]
fn a_failed_turn_is_a_run_error() {
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let events = values(run.fail("turn_failed", "the store is gone"));
    assert_eq!(kinds(&events), ["RUN_STARTED", "RUN_ERROR"]);
    assert!(run.fail("again", "no").is_empty());
}

#[test]
fn rejoining_a_run_under_way_gives_the_state_the_conversation_and_the_open_message() {
    let input = input("Hi");
    let cause = Some(input.id);
    let mut whole = AgUiStream::new("t", "r", Vec::new(), Some(json!({})));
    let events = [
        input.clone(),
        started(cause),
        delta("{\"reply\": \"Hel", cause),
        delta("lo\"}", cause),
        completed("Hello", cause),
        ended("idle", Vec::new()),
    ];
    // Joined after the first delta: what the client then applies gives the same conversation.
    let mut joined = AgUiStream::new("t", "r", Vec::new(), Some(json!({})));
    for event in &events[..3] {
        joined.step(event, None);
    }
    let mut after = values(joined.rejoin());
    assert_eq!(
        kinds(&after),
        [
            "RUN_STARTED",
            "STATE_SNAPSHOT",
            "MESSAGES_SNAPSHOT",
            "STEP_STARTED",
            "TEXT_MESSAGE_START"
        ]
    );
    assert_eq!(after[2]["messages"][1]["content"], "Hel");
    for event in &events[3..] {
        after.extend(values(joined.step(event, None)));
    }
    assert_verifiable(&after);
    for event in &events {
        whole.step(event, None);
    }
    assert_eq!(joined.messages(), whole.messages());
}

/// A `TEXT_MESSAGE_CONTENT` as the projection wrote it before it was typed: a `json!` map.
fn content_as_map(message_id: &str, delta: &str) -> String {
    json!({ "type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta }).to_string()
}

#[test]
fn a_typed_text_content_is_the_same_json_text_as_the_map_it_replaces() {
    for text in [
        "Hello",
        "",
        "say \"hi\"\n\tand\r\\ go",
        "naïve 日本語 🎉 \u{7f}\u{0}\u{1f}",
        "</script>&<'>",
    ] {
        let event = AgUiEvent::TextContent(TextMessageContent {
            message_id: "u\"1\n".into(),
            delta: text.to_owned(),
        });
        let expected = content_as_map("u\"1\n", text);
        assert_eq!(serde_json::to_string(&event).unwrap(), expected);
        assert_eq!(event.to_value().to_string(), expected);
    }
}

#[test]
fn streamed_text_is_written_as_the_maps_it_replaces() {
    let input = input("Hi");
    let cause = Some(input.id);
    let mut run = AgUiStream::new("t", "r", Vec::new(), None);
    let first = delta("{\"reply\": \"Say \\\"hi\\\"\\n", cause);
    let events = [
        input.clone(),
        started(cause),
        first.clone(),
        delta("日本 🎉\"}", cause),
    ];
    let written: Vec<String> = events
        .iter()
        .flat_map(|event| run.step(event, None))
        .filter(|event| matches!(event, AgUiEvent::TextContent(_)))
        .map(|event| serde_json::to_string(&event).unwrap())
        .collect();
    let id = format!("msg-{}", first.id);
    assert_eq!(
        written,
        [
            content_as_map(&id, "Say \"hi\"\n"),
            content_as_map(&id, "日本 🎉"),
        ]
    );
}
