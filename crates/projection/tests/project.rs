//! `project_messages` and `MessageProjection`, event by event: which message and part each
//! built-in event opens, extends or closes.

#![allow(clippy::unwrap_used)]

use openharness_core::Envelope;
use openharness_core::adapter::Usage;
use openharness_core::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, Outcome, TextComplete, TextDelta, ToolCalled,
    ToolResult, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_projection::{
    Message, MessageProjection, Part, Role, TextState, ToolState, project_messages, to_ui_messages,
};
use serde_json::{Value, json};

mod common;
use common::{ev, id};

fn input(n: u128, text: &str) -> Envelope {
    ev(n, UserInput::new(text), None)
}

fn started(n: u128, agent: &str, cause: Option<u128>) -> Envelope {
    let started = AgentStarted {
        agent: agent.into(),
        prompt: "prompt".into(),
        ..AgentStarted::default()
    };
    ev(n, started, cause)
}

fn delta(n: u128, agent: &str, delta: &str, cause: Option<u128>) -> Envelope {
    let delta = TextDelta {
        agent: agent.into(),
        delta: delta.into(),
        attempt: 1,
    };
    ev(n, delta, cause)
}

fn delta_of(n: u128, agent: &str, delta: &str, attempt: u32, cause: Option<u128>) -> Envelope {
    let delta = TextDelta {
        agent: agent.into(),
        delta: delta.into(),
        attempt,
    };
    ev(n, delta, cause)
}

fn complete(n: u128, agent: &str, text: &str, cause: Option<u128>) -> Envelope {
    let complete = TextComplete {
        agent: agent.into(),
        text: text.into(),
    };
    ev(n, complete, cause)
}

fn called(n: u128, agent: &str, call: &str, tool: &str, input: Value) -> Envelope {
    let called = ToolCalled {
        client: false,
        server: None,
        agent: agent.into(),
        tool_call_id: call.into(),
        tool: tool.into(),
        input,
    };
    ev(n, called, None)
}

fn result(n: u128, agent: &str, call: &str, output: Value, is_error: bool) -> Envelope {
    let result = ToolResult {
        agent: agent.into(),
        tool_call_id: call.into(),
        tool: "tool".into(),
        output,
        is_error,
    };
    ev(n, result, None)
}

fn completed(n: u128, agent: &str, cause: Option<u128>) -> Envelope {
    let completed = AgentCompleted {
        agent: agent.into(),
        outcome: Outcome::Success,
        usage: Usage::default(),
        cost: None,
        error: None,
        output: None,
    };
    ev(n, completed, cause)
}

fn text(text: &str, state: TextState) -> Part {
    Part::Text {
        text: text.into(),
        state,
    }
}

const STREAMING: TextState = TextState::Streaming;
const DONE: TextState = TextState::Done;

#[test]
fn a_structured_output_is_a_part_of_its_message_and_a_data_part_of_its_ui_message() {
    let mut done = completed(3, "reviewer", Some(1));
    done.payload["output"] = json!({ "approved": true, "reply": "Refund sent." });
    let messages = project_messages(&[
        input(1, "Where is my refund?"),
        started(2, "reviewer", Some(1)),
        done,
    ]);
    assert_eq!(
        messages[1].parts,
        [Part::Output {
            agent: "reviewer".into(),
            output: json!({ "approved": true, "reply": "Refund sent." }),
        }],
        "a non-streaming agent's message is not empty"
    );
    assert_eq!(messages[1].content, "", "content stays the text");
    let v4 = serde_json::to_value(&messages[1].parts[0]).unwrap();
    assert_eq!(v4["type"], "output");
    let ui = serde_json::to_value(to_ui_messages(&messages)).unwrap();
    assert_eq!(
        ui[1]["parts"][0],
        json!({
            "type": "data-output",
            "data": { "agent": "reviewer", "output": { "approved": true, "reply": "Refund sent." } },
        })
    );
    // A failed call has no output, and no part for it.
    let failed = project_messages(&[started(2, "reviewer", None), completed(3, "reviewer", None)]);
    assert!(failed[0].parts.is_empty());
}

#[test]
fn user_input_adds_a_user_message_with_one_text_part() {
    let messages = project_messages(&[input(1, "plan a trip")]);
    assert_eq!(
        messages,
        [Message {
            id: format!("msg-{}", id(1)),
            role: Role::User,
            name: None,
            content: "plan a trip".into(),
            parts: vec![text("plan a trip", DONE)],
            events: vec![id(1)],
        }]
    );
}

#[test]
fn agent_started_opens_an_assistant_message_named_for_the_agent() {
    let messages = project_messages(&[input(1, "go"), started(2, "planner", Some(1))]);
    assert_eq!(messages.len(), 2);
    let planner = &messages[1];
    assert_eq!(planner.id, "msg-00000000-0000-0000-0000-000000000002");
    assert_eq!(planner.role, Role::Assistant);
    assert_eq!(planner.name.as_deref(), Some("planner"));
    assert!(planner.parts.is_empty());
    assert_eq!(planner.content, "");
    assert_eq!(planner.events, [id(2)]);
}

#[test]
fn a_new_attempt_replaces_the_rejected_attempts_text() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta_of(2, "a", "not json", 1, None),
        delta_of(3, "a", "{\"n\":", 2, None),
        delta_of(4, "a", "1}", 2, None),
    ]);
    assert_eq!(messages[0].parts, [text("{\"n\":1}", STREAMING)]);
    let messages = project_messages(&[
        started(1, "a", None),
        delta_of(2, "a", "not json", 1, None),
        delta_of(3, "a", "{\"n\":1}", 2, None),
        complete(4, "a", "{\"n\":1}", None),
    ]);
    assert_eq!(messages[0].parts, [text("{\"n\":1}", DONE)]);
    assert_eq!(messages[0].content, "{\"n\":1}");
}

#[test]
fn deltas_append_to_the_current_text_part_while_streaming() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "Hel", None),
        delta(3, "a", "lo", None),
    ]);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].parts, [text("Hello", STREAMING)]);
    assert_eq!(messages[0].content, "Hello");
    assert_eq!(messages[0].events, [id(1), id(2), id(3)]);
}

#[test]
fn a_delta_with_no_open_message_opens_one() {
    let messages = project_messages(&[delta(7, "a", "hi", None)]);
    assert_eq!(messages[0].id, format!("msg-{}", id(7)));
    assert_eq!(messages[0].name.as_deref(), Some("a"));
    assert_eq!(messages[0].parts, [text("hi", STREAMING)]);
    assert_eq!(messages[0].events, [id(7)]);
}

#[test]
fn text_complete_replaces_the_deltas_and_marks_the_part_done() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "Hel", None),
        delta(3, "a", "l", None),
        complete(4, "a", "Hello!", None),
    ]);
    assert_eq!(messages[0].parts, [text("Hello!", DONE)]);
    assert_eq!(messages[0].events, [id(1), id(2), id(3), id(4)]);
}

#[test]
fn text_complete_keeps_text_around_tool_calls_in_place() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "Checking. ", None),
        called(3, "a", "c1", "weather", json!({})),
        delta(4, "a", "Sun", None),
        complete(5, "a", "Checking. Sunny.", None),
    ]);
    let parts = &messages[0].parts;
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[0], text("Checking. ", DONE));
    assert!(matches!(parts[1], Part::Tool { .. }));
    assert_eq!(parts[2], text("Sunny.", DONE));
    assert_eq!(messages[0].content, "Checking. Sunny.");
}

#[test]
fn text_complete_that_disagrees_with_earlier_parts_replaces_them() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "draft ", None),
        called(3, "a", "c1", "t", json!({})),
        delta(4, "a", "more", None),
        complete(5, "a", "final", None),
    ]);
    let parts = &messages[0].parts;
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0], text("final", DONE));
    assert!(matches!(parts[1], Part::Tool { .. }));
}

#[test]
fn text_complete_without_deltas_adds_a_done_part() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "one", None),
        complete(3, "a", "one", None),
        complete(4, "a", "two", None),
    ]);
    assert_eq!(messages[0].parts, [text("one", DONE), text("two", DONE)]);
    // A later delta starts a new part rather than reopening a finished one.
    let messages = project_messages(&[
        started(1, "a", None),
        complete(2, "a", "one", None),
        delta(3, "a", "two", None),
    ]);
    assert_eq!(
        messages[0].parts,
        [text("one", DONE), text("two", STREAMING)]
    );
}

#[test]
fn a_tool_call_and_its_result_make_one_part() {
    let messages = project_messages(&[
        started(1, "a", None),
        called(2, "a", "c1", "weather", json!({ "city": "Lisbon" })),
    ]);
    assert_eq!(
        messages[0].parts,
        [Part::Tool {
            tool_call_id: "c1".into(),
            tool_name: "weather".into(),
            input: json!({ "city": "Lisbon" }),
            output: None,
            error_text: None,
            state: ToolState::InputAvailable,
        }]
    );

    let messages = project_messages(&[
        started(1, "a", None),
        called(2, "a", "c1", "weather", json!({ "city": "Lisbon" })),
        called(3, "a", "c2", "clock", json!({})),
        result(4, "a", "c1", json!({ "tempC": 24 }), false),
        result(5, "a", "c2", json!({ "code": 503 }), true),
    ]);
    assert_eq!(
        messages[0].parts,
        [
            Part::Tool {
                tool_call_id: "c1".into(),
                tool_name: "weather".into(),
                input: json!({ "city": "Lisbon" }),
                output: Some(json!({ "tempC": 24 })),
                error_text: None,
                state: ToolState::OutputAvailable,
            },
            Part::Tool {
                tool_call_id: "c2".into(),
                tool_name: "clock".into(),
                input: json!({}),
                output: None,
                error_text: Some(r#"{"code":503}"#.into()),
                state: ToolState::OutputError,
            },
        ]
    );
    assert_eq!(messages[0].events, [id(1), id(2), id(3), id(4), id(5)]);
}

#[test]
fn a_string_error_is_the_error_text_as_is() {
    let messages = project_messages(&[
        called(1, "a", "c1", "t", json!({})),
        result(2, "a", "c1", json!("rate limited"), true),
    ]);
    assert!(matches!(
        &messages[0].parts[0],
        Part::Tool { error_text: Some(e), state: ToolState::OutputError, .. } if e == "rate limited"
    ));
}

#[test]
fn a_result_finds_its_call_in_a_closed_message() {
    let messages = project_messages(&[
        started(1, "a", None),
        called(2, "a", "c1", "t", json!({})),
        completed(3, "a", None),
        result(4, "a", "c1", json!(1), false),
    ]);
    assert_eq!(messages.len(), 1);
    assert!(matches!(
        &messages[0].parts[0],
        Part::Tool { output: Some(o), state: ToolState::OutputAvailable, .. } if *o == json!(1)
    ));
    assert_eq!(messages[0].events, [id(1), id(2), id(3), id(4)]);
}

#[test]
fn a_result_without_a_call_is_kept_with_no_input() {
    let messages =
        project_messages(&[started(1, "a", None), result(2, "a", "c9", json!(1), false)]);
    assert_eq!(
        messages[0].parts,
        [Part::Tool {
            tool_call_id: "c9".into(),
            tool_name: "tool".into(),
            input: Value::Null,
            output: Some(json!(1)),
            error_text: None,
            state: ToolState::OutputAvailable,
        }]
    );
}

#[test]
fn agent_completed_closes_the_message_and_finishes_streaming_text() {
    let messages = project_messages(&[
        started(1, "a", None),
        delta(2, "a", "partial", None),
        completed(3, "a", None),
        delta(4, "a", "again", None),
    ]);
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].parts, [text("partial", DONE)]);
    assert_eq!(messages[0].events, [id(1), id(2), id(3)]);
    // After closing, the agent's next event opens a new message.
    assert_eq!(messages[1].id, format!("msg-{}", id(4)));
    assert_eq!(messages[1].parts, [text("again", STREAMING)]);
}

#[test]
fn agent_completed_with_nothing_open_is_ignored() {
    assert!(project_messages(&[completed(1, "a", None)]).is_empty());
}

#[test]
fn interleaved_agents_each_get_their_own_message() {
    let messages = project_messages(&[
        input(1, "go"),
        started(2, "planner", Some(1)),
        started(3, "critic", Some(1)),
        delta(4, "planner", "Plan ", Some(1)),
        delta(5, "critic", "Hmm ", Some(1)),
        delta(6, "planner", "A.", Some(1)),
        completed(7, "planner", Some(1)),
        delta(8, "critic", "fine.", Some(1)),
        completed(9, "critic", Some(1)),
    ]);
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].name.as_deref(), Some("planner"));
    assert_eq!(messages[1].content, "Plan A.");
    assert_eq!(messages[1].events, [id(2), id(4), id(6), id(7)]);
    assert_eq!(messages[2].name.as_deref(), Some("critic"));
    assert_eq!(messages[2].content, "Hmm fine.");
    assert_eq!(messages[2].events, [id(3), id(5), id(8), id(9)]);
}

#[test]
fn concurrent_calls_of_one_agent_are_told_apart_by_their_trigger() {
    // Two tasks (events 1 and 2) each activate the executor.
    let messages = project_messages(&[
        input(1, "task one"),
        input(2, "task two"),
        started(3, "executor", Some(1)),
        started(4, "executor", Some(2)),
        delta(5, "executor", "one", Some(1)),
        delta(6, "executor", "two", Some(2)),
        completed(7, "executor", Some(1)),
        delta(8, "executor", " done", Some(2)),
        completed(9, "executor", Some(2)),
    ]);
    assert_eq!(messages[2].content, "one");
    assert_eq!(messages[2].events, [id(3), id(5), id(7)]);
    assert_eq!(messages[3].content, "two done");
    assert_eq!(messages[3].events, [id(4), id(6), id(8), id(9)]);
    assert_eq!(messages[3].parts, [text("two done", DONE)]);
}

#[test]
fn events_caused_by_the_opening_event_attach_to_it() {
    let messages = project_messages(&[
        started(1, "a", None),
        started(2, "a", None),
        delta(3, "a", "first", Some(1)),
    ]);
    assert_eq!(messages[0].content, "first");
    assert_eq!(messages[1].content, "");
}

#[test]
fn other_events_and_undecodable_payloads_are_ignored() {
    let workflow = WorkflowStarted {
        workflow: "w".into(),
        code: None,
        version: None,
        commit: None,
        state_shape: None,
    };
    let error = ErrorOccurred::recoverable("agent", "boom", None);
    let done = WorkflowCompleted {
        reason: "idle".into(),
        open_requests: Vec::new(),
        errors: 0,
        queued: Vec::new(),
    };
    let mut malformed = input(4, "x");
    malformed.payload = json!({ "txt": 1 });
    let mut custom = input(5, "x");
    custom.name = "plan:created".into();
    let messages = project_messages(&[
        ev(1, workflow, None),
        ev(2, error, None),
        ev(3, done, None),
        malformed,
        custom,
    ]);
    assert!(messages.is_empty());
}

#[test]
fn incremental_and_batch_projections_agree() {
    let events = [
        input(1, "go"),
        started(2, "a", Some(1)),
        delta(3, "a", "x", Some(1)),
        completed(4, "a", Some(1)),
    ];
    let mut projection = MessageProjection::new();
    for (n, event) in events.iter().enumerate() {
        projection.apply(event);
        assert_eq!(projection.messages(), project_messages(&events[..=n]));
    }
}
