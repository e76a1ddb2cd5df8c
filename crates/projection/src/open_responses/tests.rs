//! The Open Responses projection: event order, sequence numbers, the reply decoded from
//! structured output, questions, stopped and failed turns, and the resource's required fields.
#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, InputRequested, Outcome, TextDelta, UserInput, WorkflowCompleted,
};
use openharness_core::{Envelope, EventId};
use serde_json::{Value, json};

use super::*;

fn input() -> Envelope {
    Envelope::typed(&UserInput::new("Hi"), None).unwrap()
}

fn started(agent: &str, cause: Option<EventId>) -> Envelope {
    let started = AgentStarted {
        agent: agent.into(),
        reply: Some("/reply".into()),
        ..AgentStarted::default()
    };
    Envelope::typed(&started, cause).unwrap()
}

fn delta(agent: &str, text: &str, cause: Option<EventId>) -> Envelope {
    let delta = TextDelta {
        agent: agent.into(),
        delta: text.into(),
        attempt: 1,
    };
    Envelope::typed(&delta, cause).unwrap()
}

fn completed(agent: &str, reply: &str, cause: Option<EventId>) -> Envelope {
    let usage = openharness_core::adapter::Usage {
        input_tokens: 10,
        cache_read_tokens: 4,
        output_tokens: 3,
        ..Default::default()
    };
    let completed = AgentCompleted {
        agent: agent.into(),
        outcome: Outcome::Success,
        usage,
        cost: None,
        error: None,
        output: Some(json!({ "reply": reply })),
    };
    Envelope::typed(&completed, cause).unwrap()
}

fn ended(reason: &str) -> Envelope {
    let done = WorkflowCompleted {
        reason: reason.into(),
        ..WorkflowCompleted::default()
    };
    Envelope::typed(&done, None).unwrap()
}

fn run(events: &[Envelope]) -> (Vec<ResponseEvent>, ResponseStream) {
    let mut stream = ResponseStream::new(ResponseHead::new("resp_0_s", "chat", "s"));
    let out = events.iter().flat_map(|event| stream.step(event)).collect();
    (out, stream)
}

fn kinds(events: &[ResponseEvent]) -> Vec<&'static str> {
    events.iter().map(|event| event.kind).collect()
}

/// The required fields of `ResponseResource` in the specification (2026-04-24), verbatim.
const REQUIRED: &[&str] = &[
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "incomplete_details",
    "model",
    "previous_response_id",
    "instructions",
    "output",
    "error",
    "tools",
    "tool_choice",
    "truncation",
    "parallel_tool_calls",
    "text",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "top_logprobs",
    "temperature",
    "reasoning",
    "user",
    "usage",
    "max_output_tokens",
    "max_tool_calls",
    "store",
    "background",
    "service_tier",
    "metadata",
    "safety_identifier",
    "prompt_cache_key",
];

fn assert_whole(resource: &Value) {
    for field in REQUIRED {
        assert!(
            resource.get(field).is_some(),
            "the resource lacks `{field}`: {resource}"
        );
    }
}

#[test]
fn a_streamed_reply_is_its_characters_with_numbered_events() {
    let input = input();
    let cause = Some(input.id);
    let events = [
        input.clone(),
        started("assistant", cause),
        delta("assistant", "{\"reply\": \"Hel", cause),
        delta("assistant", "lo\\nthere\"}", cause),
        completed("assistant", "Hello\nthere", cause),
        ended("idle"),
    ];
    let (out, stream) = run(&events);
    assert_eq!(
        kinds(&out),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (n, event) in out.iter().enumerate() {
        let data = event.to_value();
        assert_eq!(event.sequence_number, n as u64);
        assert_eq!(data["sequence_number"], n as u64);
        assert_eq!(data["type"], event.kind);
        assert!(data.get("error").is_none(), "{data}");
    }
    let deltas: String = out
        .iter()
        .filter(|e| e.kind == "response.output_text.delta")
        .map(|e| e.to_value()["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(deltas, "Hello\nthere");
    let resource = stream.resource();
    assert_whole(&resource);
    assert_eq!(resource["output"][0]["content"][0]["text"], "Hello\nthere");
    assert_eq!(resource["output"][0]["id"], format!("msg_{}", events[2].id));
    assert_eq!(resource["usage"]["input_tokens"], 14);
    assert_eq!(
        resource["usage"]["input_tokens_details"]["cached_tokens"],
        4
    );
    assert_eq!(resource["usage"]["total_tokens"], 17);
    assert_eq!(resource["conversation"]["id"], "s");
    // The completed event carries the same resource.
    assert_eq!(out.last().unwrap().to_value()["response"], resource);
    assert!(stream.ended());
    // Nothing after the turn's end is the response's.
    let mut stream = stream;
    assert!(stream.step(&input).is_empty());
}

#[test]
fn a_running_response_shows_its_text_so_far() {
    let input = input();
    let cause = Some(input.id);
    let (_, stream) = run(&[
        input.clone(),
        started("assistant", cause),
        delta("assistant", "{\"reply\": \"Hal", cause),
    ]);
    let resource = stream.resource();
    assert_whole(&resource);
    assert_eq!(resource["status"], "in_progress");
    assert_eq!(resource["completed_at"], Value::Null);
    assert_eq!(resource["output"][0]["status"], "in_progress");
    assert_eq!(resource["output"][0]["content"][0]["text"], "Hal");
}

#[test]
fn a_question_is_a_message_and_the_response_completes() {
    let input = input();
    let asked = Envelope::typed(&InputRequested::approval("Publish?"), Some(input.id)).unwrap();
    let (out, stream) = run(&[input, asked, ended("waiting_for_input")]);
    assert_eq!(out.last().unwrap().kind, "response.completed");
    let resource = stream.resource();
    assert_eq!(resource["output"][0]["content"][0]["text"], "Publish?");
    assert_eq!(resource["output"][0]["status"], "completed");
}

#[test]
fn a_stopped_turn_is_incomplete_with_its_reason_and_keeps_what_it_said() {
    let input = input();
    let cause = Some(input.id);
    let (out, stream) = run(&[
        input.clone(),
        started("assistant", cause),
        delta("assistant", "{\"reply\": \"Par", cause),
        ended("cancelled"),
    ]);
    let tail: Vec<_> = kinds(&out).into_iter().rev().take(4).collect();
    assert_eq!(
        tail,
        [
            "response.incomplete",
            "response.output_item.done",
            "response.content_part.done",
            "response.output_text.done"
        ]
    );
    let resource = stream.resource();
    assert_eq!(resource["status"], "incomplete");
    assert_eq!(resource["incomplete_details"]["reason"], "cancelled");
    assert_eq!(resource["output"][0]["content"][0]["text"], "Par");
    assert_eq!(resource["output"][0]["status"], "incomplete");
}

#[test]
fn a_failed_turn_says_why_then_fails_the_response() {
    let input = input();
    let mut stream = ResponseStream::new(ResponseHead::new("resp_0_s", "chat", "s"));
    stream.step(&input);
    let out = stream.fail("turn_failed", "the store is gone");
    assert_eq!(kinds(&out), ["error", "response.failed"]);
    assert_eq!(out[0].to_value()["message"], "the store is gone");
    let resource = stream.resource();
    assert_eq!(resource["status"], "failed");
    assert_eq!(resource["error"]["code"], "turn_failed");
    assert!(stream.fail("again", "no").is_empty());
}

#[test]
fn calls_at_once_are_items_of_their_own_in_the_order_their_text_starts() {
    let input = input();
    let cause = Some(input.id);
    let (_, stream) = run(&[
        input.clone(),
        started("a", cause),
        started("b", cause),
        delta("b", "{\"reply\": \"B", cause),
        delta("a", "{\"reply\": \"A", cause),
        completed("a", "A!", cause),
        completed("b", "B!", cause),
        ended("idle"),
    ]);
    let texts: Vec<_> = stream.resource()["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["content"][0]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, ["B!", "A!"]);
}

#[test]
fn the_same_events_give_the_same_response_byte_for_byte() {
    let input = input();
    let cause = Some(input.id);
    let events = [
        input.clone(),
        started("assistant", cause),
        delta("assistant", "{\"reply\": \"Hi", cause),
        completed("assistant", "Hi", cause),
        ended("idle"),
    ];
    let (first, a) = run(&events);
    let (second, b) = run(&events);
    assert_eq!(first, second);
    assert_eq!(a.resource().to_string(), b.resource().to_string());
}

#[test]
fn a_call_of_a_clients_tool_is_a_function_call_item_after_the_text_before_it() {
    let input = input();
    let cause = Some(input.id);
    let called = openharness_core::builtin::ToolCalled {
        agent: "assistant".into(),
        tool_call_id: "call_7".into(),
        tool: "get_weather".into(),
        input: json!({ "location": "San Francisco, CA" }),
        server: None,
        client: true,
    };
    let called = Envelope::typed(&called, cause).unwrap();
    let mut text_started = started("assistant", cause);
    // A chat reply is the whole text output.
    text_started = {
        let mut started: AgentStarted = text_started.decode().unwrap();
        started.reply = Some(String::new());
        Envelope::typed(&started, cause).unwrap()
    };
    let done = AgentCompleted {
        agent: "assistant".into(),
        outcome: Outcome::Success,
        usage: Default::default(),
        cost: None,
        error: None,
        output: None,
    };
    let done = Envelope::typed(&done, cause).unwrap();
    let (events, stream) = run(&[
        input,
        text_started,
        delta("assistant", "Let me look.", cause),
        called.clone(),
        done,
        ended("idle"),
    ]);
    let kinds = kinds(&events);
    let at = kinds
        .iter()
        .position(|kind| *kind == "response.function_call_arguments.delta")
        .unwrap();
    assert_eq!(
        kinds[at - 2..at + 4],
        [
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ],
        "{kinds:?}"
    );
    let resource = stream.resource();
    assert_eq!(resource["status"], "completed");
    let output = resource["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "{resource}");
    assert_eq!(output[0]["content"][0]["text"], "Let me look.");
    assert_eq!(
        output[1],
        json!({ "type": "function_call", "id": format!("fc_{}", called.id), "call_id": "call_7",
            "name": "get_weather", "arguments": "{\"location\":\"San Francisco, CA\"}",
            "status": "completed" })
    );
    // Every event's data carries its type and number, in order.
    for (n, event) in events.iter().enumerate() {
        let data = event.to_value();
        assert_eq!(
            (data["sequence_number"].clone(), event.sequence_number),
            (json!(n), n as u64)
        );
        assert_eq!(data["type"], event.kind);
    }
}

/// A delta's event as the projection wrote it before it was typed: a `json!` map.
fn delta_as_map(item_id: &str, output_index: usize, delta: &str, sequence_number: u64) -> String {
    let mut data = json!({ "item_id": item_id, "output_index": output_index,
        "content_index": 0, "delta": delta, "logprobs": [] });
    data["type"] = json!("response.output_text.delta");
    data["sequence_number"] = json!(sequence_number);
    data.to_string()
}

#[test]
fn a_typed_delta_is_the_same_json_text_as_the_map_it_replaces() {
    for (index, text) in [
        "Hello",
        "",
        "say \"hi\"\n\tand\r\\ go",
        "naïve 日本語 🎉 \u{7f}\u{0}\u{1f}",
        "</script>&<'>",
    ]
    .into_iter()
    .enumerate()
    {
        let event = ResponseEvent {
            kind: "response.output_text.delta",
            sequence_number: 40 + index as u64,
            data: ResponseData::TextDelta(OutputTextDelta {
                item_id: "msg_0193e1b2-7c3a-7e0b-9d4f-5a6b7c8d9e0f".into(),
                output_index: index,
                delta: text.to_owned(),
            }),
        };
        let expected = delta_as_map(
            "msg_0193e1b2-7c3a-7e0b-9d4f-5a6b7c8d9e0f",
            index,
            text,
            40 + index as u64,
        );
        assert_eq!(event.to_json(), expected);
        assert_eq!(event.to_value().to_string(), expected);
    }
}

#[test]
fn streamed_deltas_are_written_as_the_map_they_replace() {
    let input = input();
    let events = [
        input.clone(),
        started("assistant", Some(input.id)),
        delta(
            "assistant",
            "{\"reply\": \"Say \\\"hi\\\"\\n",
            Some(input.id),
        ),
        delta("assistant", "日本 🎉\"}", Some(input.id)),
    ];
    let (out, _) = run(&events);
    let item = format!("msg_{}", events[2].id);
    let deltas: Vec<String> = out
        .iter()
        .filter(|e| e.kind == "response.output_text.delta")
        .map(ResponseEvent::to_json)
        .collect();
    assert_eq!(
        deltas,
        [
            delta_as_map(&item, 0, "Say \"hi\"\n", 4),
            delta_as_map(&item, 0, "日本 🎉", 5),
        ]
    );
}
