//! The mapping, checked on hand-made logs: the span tree (snapshots), ids that do not change,
//! content off by default, forks, unfinished calls and calls run again.

use chrono::{DateTime, TimeZone, Utc};
use openharness_core::{Envelope, EventId, SessionId};
use opentelemetry::Value;
use opentelemetry::trace::Status;
use serde_json::{Value as Json, json};

use super::{SessionSpans, SpanOptions};
use crate::span::Span;

fn at(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(1_790_000_000_000 + ms)
        .single()
        .expect("a valid time")
}

/// An event recorded `ms` milliseconds into the run, with a fixed id.
fn event(
    n: u128,
    ms: i64,
    name: &'static str,
    payload: Json,
    caused_by: Option<EventId>,
) -> Envelope {
    let mut event = Envelope::new(name, payload, caused_by);
    event.id = EventId::from_uuid(uuid_of(n));
    event.timestamp = at(ms);
    event
}

fn uuid_of(n: u128) -> uuid::Uuid {
    uuid::Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 | n)
}

fn session(id: &str) -> SessionId {
    id.parse().expect("a session id")
}

/// A turn: a planner calls a tool twice in one round and answers; an executor fails.
fn recorded() -> Vec<Envelope> {
    let input = EventId::from_uuid(uuid_of(1));
    vec![
        event(
            0,
            0,
            "workflow:started",
            json!({ "workflow": "triage", "code": "abc123", "version": "0.1.0" }),
            None,
        ),
        event(
            1,
            1,
            "user:input",
            json!({ "text": "the printer is on fire" }),
            None,
        ),
        event(
            2,
            2,
            "agent:started",
            json!({ "agentName": "planner", "model": "claude-test", "system": "You plan.", "prompt": "Plan: the printer is on fire" }),
            Some(input),
        ),
        event(
            3,
            10,
            "text:delta",
            json!({ "agentName": "planner", "delta": "Looking" }),
            Some(input),
        ),
        event(
            4,
            20,
            "tool:called",
            json!({ "agentName": "planner", "toolId": "call-1", "toolName": "search", "input": { "q": "printer fire" } }),
            Some(input),
        ),
        event(
            5,
            21,
            "tool:called",
            json!({ "agentName": "planner", "toolId": "call-2", "toolName": "weather", "input": { "city": "Oslo" } }),
            Some(input),
        ),
        event(
            6,
            30,
            "tool:result",
            json!({ "agentName": "planner", "toolId": "call-2", "toolName": "weather", "output": "cold", "isError": false }),
            Some(input),
        ),
        event(
            7,
            35,
            "tool:result",
            json!({ "agentName": "planner", "toolId": "call-1", "toolName": "search", "output": "no results", "isError": true }),
            Some(input),
        ),
        event(
            8,
            50,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "success", "output": { "tasks": ["call the fire brigade"] },
            "usage": { "inputTokens": 120, "outputTokens": 30, "cacheReadTokens": 100 }, "cost": 0.002 }),
            Some(input),
        ),
        event(
            9,
            51,
            "plan:created",
            json!({ "tasks": ["call the fire brigade"] }),
            Some(input),
        ),
        event(
            10,
            52,
            "agent:started",
            json!({ "agentName": "executor", "prompt": "Do: call the fire brigade" }),
            Some(EventId::from_uuid(uuid_of(9))),
        ),
        event(
            11,
            60,
            "output:rejected",
            json!({ "agentName": "executor", "attempt": 1, "output": {}, "errors": ["missing summary"] }),
            Some(EventId::from_uuid(uuid_of(9))),
        ),
        event(
            12,
            61,
            "agent:completed",
            json!({ "agentName": "executor", "outcome": "failure", "error": "the output never matched its schema",
            "usage": { "inputTokens": 40, "outputTokens": 8 } }),
            Some(EventId::from_uuid(uuid_of(9))),
        ),
        event(
            13,
            62,
            "error:occurred",
            json!({ "code": "agent", "message": "executor failed", "recoverable": true }),
            None,
        ),
        event(
            14,
            70,
            "workflow:completed",
            json!({ "reason": "idle", "errors": 1 }),
            None,
        ),
    ]
}

/// A span as a snapshot shows it: ids as hex, parents by name, times in ms from the start.
fn shape(spans: &[Span]) -> Json {
    let name_of = |id| {
        spans
            .iter()
            .find(|s| s.span_id == id)
            .map_or_else(|| format!("{id}"), |s| s.name.clone())
    };
    Json::Array(
        spans
            .iter()
            .map(|span| {
                let attributes: serde_json::Map<String, Json> = span
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.as_str().to_owned(), json_of(&kv.value)))
                    .collect();
                json!({
                    "name": span.name,
                    "traceId": span.trace_id.to_string(),
                    "spanId": span.span_id.to_string(),
                    "parent": span.parent.map(name_of),
                    "kind": format!("{:?}", span.kind),
                    "startMs": (span.start - at(0)).num_milliseconds(),
                    "endMs": (span.end - at(0)).num_milliseconds(),
                    "status": match &span.status {
                        Status::Unset => Json::Null,
                        Status::Ok => json!("ok"),
                        Status::Error { description } => json!({ "error": description }),
                    },
                    "attributes": attributes,
                    "events": span.events.iter().map(|e| json!({ "name": e.name, "atMs": (e.time - at(0)).num_milliseconds() })).collect::<Vec<_>>(),
                    "links": span.links.iter().map(|l| json!({ "traceId": l.trace_id.to_string(), "spanId": l.span_id.to_string() })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

fn json_of(value: &Value) -> Json {
    match value {
        Value::Bool(b) => json!(b),
        Value::I64(n) => json!(n),
        Value::F64(n) => json!(n),
        Value::String(s) => json!(s.as_str()),
        other => json!(other.to_string()),
    }
}

#[test]
fn a_turn_becomes_a_workflow_span_with_agent_chat_and_tool_spans() {
    let spans = SessionSpans::map(session("s-1"), &recorded(), SpanOptions::default());
    insta::assert_json_snapshot!(shape(&spans));
}

#[test]
fn the_same_log_maps_to_the_same_spans_and_another_session_to_other_ids() {
    let once = SessionSpans::map(session("s-1"), &recorded(), SpanOptions::default());
    let again = SessionSpans::map(session("s-1"), &recorded(), SpanOptions::default());
    assert_eq!(once, again);
    let other = SessionSpans::map(session("s-2"), &recorded(), SpanOptions::default());
    for (a, b) in once.iter().zip(&other) {
        assert_ne!(a.span_id, b.span_id);
        assert_ne!(a.trace_id, b.trace_id);
    }
    // Ids are unique within the session.
    let mut ids: Vec<_> = once.iter().map(|s| s.span_id).collect();
    ids.sort_by_key(|id| id.to_bytes());
    ids.dedup();
    assert_eq!(ids.len(), once.len());
}

const CONTENT: &[&str] = &[
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "input.value",
];

#[test]
fn content_is_off_unless_turned_on() {
    let off = SessionSpans::map(session("s-1"), &recorded(), SpanOptions::default());
    let has = |spans: &[Span], key: &str| spans.iter().any(|s| s.attribute(key).is_some());
    for key in CONTENT {
        assert!(!has(&off, key), "{key} recorded without content");
    }
    let on = SessionSpans::map(
        session("s-1"),
        &recorded(),
        SpanOptions::default().content(true),
    );
    for key in CONTENT {
        assert!(has(&on, key), "{key} missing with content on");
    }
    let chat = on
        .iter()
        .find(|s| s.name == "chat claude-test")
        .expect("the planner's first model call");
    let input = chat
        .attribute("gen_ai.input.messages")
        .expect("its input")
        .as_str();
    assert!(input.contains("Plan: the printer is on fire"), "{input}");
    // Same ids with or without content.
    let ids = |spans: &[Span]| spans.iter().map(|s| s.span_id).collect::<Vec<_>>();
    assert_eq!(ids(&off), ids(&on));
}

#[test]
fn a_fork_links_its_first_span_to_the_parents_span_at_the_fork_position() {
    let parent = recorded();
    // Fork at position 6: after the planner's two tool calls, inside the weather call.
    let mut prefix = SessionSpans::new(session("s-1"), SpanOptions::default());
    for (seq, event) in (0u64..).zip(&parent[..6]) {
        prefix.push(seq, event);
    }
    let at_fork = prefix
        .position_span()
        .expect("a span open at the fork position");
    let parent_spans = SessionSpans::map(session("s-1"), &parent, SpanOptions::default());
    let weather = parent_spans
        .iter()
        .find(|s| s.name == "execute_tool weather")
        .expect("the weather call");
    assert_eq!(at_fork, weather.reference());

    let fork = vec![
        event(
            100,
            100,
            "session:forked",
            json!({ "parentSessionId": "s-1", "forkIndex": 6, "workflow": "triage" }),
            None,
        ),
        event(
            101,
            101,
            "agent:started",
            json!({ "agentName": "planner", "model": "claude-test", "prompt": "again" }),
            None,
        ),
        event(
            102,
            110,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "success", "usage": { "inputTokens": 5, "outputTokens": 1 } }),
            None,
        ),
        event(
            103,
            111,
            "workflow:completed",
            json!({ "reason": "idle" }),
            None,
        ),
    ];
    let mut mapping = SessionSpans::new(session("s-1-fork"), SpanOptions::default());
    mapping.link_fork(at_fork);
    let mut spans = Vec::new();
    for (seq, event) in (0u64..).zip(&fork) {
        spans.extend(mapping.push(seq, event));
    }
    spans.extend(mapping.finish());
    let root = spans
        .iter()
        .find(|s| s.parent.is_none())
        .expect("the fork's turn");
    assert_eq!(root.name, "invoke_workflow triage");
    assert_eq!(root.links, vec![weather.reference()]);
    assert_eq!(
        root.attribute("openharness.fork.parent_span_id")
            .map(Value::as_str)
            .as_deref(),
        Some(weather.span_id.to_string().as_str())
    );
    assert_eq!(
        root.attribute("openharness.fork.parent")
            .map(Value::as_str)
            .as_deref(),
        Some("s-1")
    );
    assert_eq!(
        root.attribute("openharness.fork.position"),
        Some(&Value::I64(6))
    );
    assert!(spans.iter().all(|s| s.trace_id == root.trace_id));
}

#[test]
fn a_log_that_ends_inside_an_agent_call_closes_it_as_unfinished() {
    let events = &recorded()[..5]; // up to the planner's first tool call
    let spans = SessionSpans::map(session("s-1"), events, SpanOptions::default());
    let names: Vec<_> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "chat claude-test",
            "execute_tool search",
            "invoke_agent planner",
            "invoke_workflow triage"
        ]
    );
    for span in &spans[1..] {
        assert_eq!(
            span.attribute("openharness.unfinished"),
            Some(&Value::Bool(true)),
            "{}",
            span.name
        );
        assert!(matches!(span.status, Status::Error { .. }));
        assert_eq!(span.end, at(20));
    }
}

#[test]
fn a_call_run_again_after_a_crash_is_marked() {
    let input = EventId::from_uuid(uuid_of(1));
    let events = vec![
        event(
            0,
            0,
            "workflow:started",
            json!({ "workflow": "triage" }),
            None,
        ),
        event(
            1,
            1,
            "agent:started",
            json!({ "agentName": "planner", "prompt": "p" }),
            Some(input),
        ),
        // The process died; `resume` closes the call and runs it again.
        event(
            2,
            500,
            "workflow:started",
            json!({ "workflow": "triage" }),
            None,
        ),
        event(
            3,
            501,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "interrupted", "error": "the process ended", "usage": { "inputTokens": 0, "outputTokens": 0 } }),
            Some(input),
        ),
        event(
            4,
            502,
            "agent:started",
            json!({ "agentName": "planner", "prompt": "p" }),
            Some(input),
        ),
        event(
            5,
            510,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "success", "usage": { "inputTokens": 3, "outputTokens": 1 } }),
            Some(input),
        ),
        event(
            6,
            511,
            "workflow:completed",
            json!({ "reason": "idle" }),
            None,
        ),
    ];
    let spans = SessionSpans::map(session("s-1"), &events, SpanOptions::default().replay(true));
    let agents: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent planner")
        .collect();
    assert_eq!(agents.len(), 2);
    // The first turn's call was closed with its turn when the next turn began.
    assert_eq!(
        agents[0].attribute("openharness.unfinished"),
        Some(&Value::Bool(true))
    );
    assert_eq!(agents[0].end, at(1));
    assert_eq!(
        agents[1].attribute("openharness.agent.rerun"),
        Some(&Value::Bool(true))
    );
    assert!(
        spans
            .iter()
            .all(|s| s.attribute("openharness.replay") == Some(&Value::Bool(true)))
    );
}

#[test]
fn concurrent_calls_of_one_agent_are_told_apart_by_their_trigger() {
    let (a, b) = (
        EventId::from_uuid(uuid_of(50)),
        EventId::from_uuid(uuid_of(51)),
    );
    let events = vec![
        event(
            0,
            0,
            "workflow:started",
            json!({ "workflow": "race" }),
            None,
        ),
        event(
            1,
            1,
            "agent:started",
            json!({ "agentName": "executor", "prompt": "a" }),
            Some(a),
        ),
        event(
            2,
            2,
            "agent:started",
            json!({ "agentName": "executor", "prompt": "b" }),
            Some(b),
        ),
        event(
            3,
            10,
            "agent:completed",
            json!({ "agentName": "executor", "outcome": "success", "usage": { "inputTokens": 1, "outputTokens": 1 } }),
            Some(a),
        ),
        event(
            4,
            20,
            "agent:completed",
            json!({ "agentName": "executor", "outcome": "success", "usage": { "inputTokens": 2, "outputTokens": 2 } }),
            Some(b),
        ),
        event(
            5,
            21,
            "workflow:completed",
            json!({ "reason": "idle" }),
            None,
        ),
    ];
    let spans = SessionSpans::map(session("s-1"), &events, SpanOptions::default());
    let agents: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "invoke_agent executor")
        .collect();
    assert_eq!((agents[0].start, agents[0].end), (at(1), at(10)));
    assert_eq!((agents[1].start, agents[1].end), (at(2), at(20)));
    assert_eq!(
        agents[1].attribute("gen_ai.usage.input_tokens"),
        Some(&Value::I64(2))
    );
}

#[test]
fn the_recorded_provider_names_the_calls_and_a_cassettes_answers_are_replays() {
    let input = EventId::from_uuid(uuid_of(1));
    let call = |n: u128, provider: &str| {
        [
            event(
                n,
                n as i64,
                "agent:started",
                json!({ "agentName": "planner", "provider": provider, "model": "m", "prompt": "p" }),
                Some(input),
            ),
            event(
                n + 1,
                n as i64 + 1,
                "agent:completed",
                json!({ "agentName": "planner", "outcome": "success", "usage": { "inputTokens": 1, "outputTokens": 1 } }),
                Some(input),
            ),
        ]
    };
    let mut events = vec![event(
        0,
        0,
        "workflow:started",
        json!({ "workflow": "triage" }),
        None,
    )];
    events.extend(call(1, "anthropic"));
    events.extend(call(3, "claude-cli"));
    events.extend(call(5, "cassette"));
    // A call recorded before providers were: no provider attribute at all.
    events.push(event(
        7,
        7,
        "agent:started",
        json!({ "agentName": "planner", "prompt": "p" }),
        Some(input),
    ));
    let spans = SessionSpans::map(session("s-1"), &events, SpanOptions::default());
    let named = |span: &Span| {
        span.attribute("gen_ai.provider.name").map(|v| match v {
            Value::String(s) => s.as_str().to_owned(),
            other => format!("{other:?}"),
        })
    };
    let calls: Vec<(&str, Option<String>, bool)> = spans
        .iter()
        .filter(|s| s.name.starts_with("invoke_agent") || s.name.starts_with("chat"))
        .map(|s| {
            (
                if s.name.starts_with("chat") {
                    "chat"
                } else {
                    "agent"
                },
                named(s),
                s.attribute("openharness.replay") == Some(&Value::Bool(true)),
            )
        })
        .collect();
    let expected = |provider: Option<&str>, replay: bool| {
        [
            ("chat", provider.map(str::to_owned), replay),
            ("agent", provider.map(str::to_owned), replay),
        ]
    };
    let mut want = Vec::new();
    want.extend(expected(Some("anthropic"), false));
    want.extend(expected(Some("anthropic"), false)); // the `claude` CLI: Anthropic's models
    want.extend(expected(Some("cassette"), true));
    want.extend(expected(None, false));
    assert_eq!(calls, want);
}

mod people;
