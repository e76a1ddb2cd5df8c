//! A whole session projected into messages and AI SDK `UIMessage`s: snapshots and determinism.

#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, Outcome, TextComplete, TextDelta, ToolCalled,
    ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Envelope, adapter::Usage};
use openharness_projection::{project_messages, to_ui_messages};
use serde_json::json;

mod common;
use common::ev;

fn delta(n: u128, agent: &str, delta: &str) -> Envelope {
    let delta = TextDelta {
        agent: agent.into(),
        delta: delta.into(),
        attempt: 1,
    };
    ev(n, delta, Some(2))
}

fn completed(n: u128, agent: &str, outcome: Outcome) -> Envelope {
    let completed = AgentCompleted {
        agent: agent.into(),
        outcome,
        usage: Usage {
            input_tokens: 100,
            output_tokens: 20,
            ..Usage::default()
        },
        cost: Some(0.001),
        error: None,
        output: None,
    };
    ev(n, completed, Some(2))
}

/// A planner and a researcher answering one input at the same time; the researcher calls two
/// tools, one of which fails, and writes text around them.
fn session() -> Vec<Envelope> {
    let workflow = WorkflowStarted {
        workflow: "trip".into(),
        code: None,
        version: None,
        commit: None,
        state_shape: None,
    };
    let input = UserInput::new("Plan a weekend in Lisbon");
    let started = |agent: &str| AgentStarted {
        agent: agent.into(),
        model: Some("claude-sonnet-4-5".into()),
        prompt: "Plan a weekend in Lisbon".into(),
        ..AgentStarted::default()
    };
    let called = |call: &str, tool: &str, input| ToolCalled {
        client: false,
        server: None,
        agent: "researcher".into(),
        tool_call_id: call.into(),
        tool: tool.into(),
        input,
    };
    let result = |call: &str, tool: &str, output, is_error| ToolResult {
        agent: "researcher".into(),
        tool_call_id: call.into(),
        tool: tool.into(),
        output,
        is_error,
    };
    let complete = |agent: &str, text: &str| TextComplete {
        agent: agent.into(),
        text: text.into(),
    };
    vec![
        ev(1, workflow, None),
        ev(2, input, Some(1)),
        ev(3, started("planner"), Some(2)),
        delta(4, "planner", "Two "),
        ev(5, started("researcher"), Some(2)),
        delta(6, "planner", "days: "),
        ev(
            7,
            called("call-1", "getWeather", json!({ "city": "Lisbon" })),
            Some(2),
        ),
        delta(8, "researcher", "Sunny "),
        delta(9, "planner", "Alfama, then Belém."),
        ev(
            10,
            result("call-1", "getWeather", json!({ "tempC": 24 }), false),
            Some(2),
        ),
        ev(
            11,
            complete("planner", "Two days: Alfama, then Belém."),
            Some(2),
        ),
        completed(12, "planner", Outcome::Success),
        ev(
            13,
            called("call-2", "searchFlights", json!({ "to": "LIS" })),
            Some(2),
        ),
        ev(
            14,
            result("call-2", "searchFlights", json!("rate limited"), true),
            Some(2),
        ),
        delta(15, "researcher", "all "),
        delta(16, "researcher", "weekend."),
        ev(17, complete("researcher", "Sunny all weekend."), Some(2)),
        ev(
            18,
            ErrorOccurred::recoverable("agent", "ignored by the projection", None),
            Some(2),
        ),
        completed(19, "researcher", Outcome::Success),
        ev(
            20,
            WorkflowCompleted {
                reason: "idle".into(),
                open_requests: Vec::new(),
                errors: 0,
                queued: Vec::new(),
            },
            None,
        ),
    ]
}

#[test]
fn messages_snapshot() {
    insta::assert_json_snapshot!("messages", project_messages(&session()));
}

#[test]
fn ui_messages_snapshot() {
    insta::assert_json_snapshot!("ui_messages", to_ui_messages(&project_messages(&session())));
}

#[test]
fn the_same_events_give_byte_identical_json() {
    let first = serde_json::to_string(&project_messages(&session())).unwrap();
    let second = serde_json::to_string(&project_messages(&session())).unwrap();
    assert_eq!(first, second);
    let first = serde_json::to_string(&to_ui_messages(&project_messages(&session()))).unwrap();
    let second = serde_json::to_string(&to_ui_messages(&project_messages(&session()))).unwrap();
    assert_eq!(first, second);
}

#[test]
fn messages_survive_a_json_round_trip() {
    let messages = project_messages(&session());
    let json = serde_json::to_string(&messages).unwrap();
    let back: Vec<openharness_projection::Message> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, messages);
}

#[test]
fn a_stored_log_round_trip_projects_the_same() {
    // Events as they come back from a store (JSON) project like the originals.
    let events = session();
    let stored: Vec<Envelope> =
        serde_json::from_str(&serde_json::to_string(&events).unwrap()).unwrap();
    assert_eq!(project_messages(&stored), project_messages(&events));
}
