//! A living session's turns as traces: every turn a root linked to the turn before, a question
//! and its answer as a span, and what a person did to a running turn as span events.

use super::*;

fn id(n: u128) -> EventId {
    EventId::from_uuid(uuid_of(n))
}

/// Three turns: the first asks a question and waits; a person answers it (the second turn),
/// steers it, queues another input and stops it; the third answers the queued input and is
/// rolled back by a third input.
fn living() -> Vec<Envelope> {
    vec![
        event(
            0,
            0,
            "workflow:started",
            json!({ "workflow": "trip" }),
            None,
        ),
        event(
            1,
            1,
            "user:input",
            json!({ "text": "Plan a trip", "by": "ana" }),
            None,
        ),
        event(
            2,
            2,
            "agent:started",
            json!({ "agentName": "planner", "model": "m1", "prompt": "Plan" }),
            Some(id(1)),
        ),
        event(
            3,
            10,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "success", "output": {}, "usage": { "inputTokens": 5, "outputTokens": 2 } }),
            Some(id(1)),
        ),
        event(
            4,
            11,
            "input:requested",
            json!({ "prompt": "Which city?" }),
            Some(id(3)),
        ),
        event(
            5,
            12,
            "workflow:completed",
            json!({ "reason": "waiting_for_input", "openRequests": [id(4)] }),
            None,
        ),
        // A minute later, Bea answers.
        event(
            6,
            60_012,
            "input:received",
            json!({ "requestId": id(4), "text": "Porto", "by": "bea" }),
            Some(id(4)),
        ),
        event(
            7,
            60_013,
            "agent:started",
            json!({ "agentName": "planner", "model": "m1", "prompt": "Porto" }),
            Some(id(6)),
        ),
        event(
            8,
            60_020,
            "input:queued",
            json!({ "text": "by train", "mode": "steer" }),
            None,
        ),
        event(
            9,
            60_021,
            "input:steered",
            json!({ "agentName": "planner", "queued": id(8), "text": "by train" }),
            Some(id(6)),
        ),
        event(
            10,
            60_030,
            "input:queued",
            json!({ "text": "and back?", "mode": "enqueue" }),
            None,
        ),
        event(
            11,
            60_031,
            "stop:requested",
            json!({ "reason": "the user pressed stop" }),
            None,
        ),
        event(
            12,
            60_032,
            "agent:completed",
            json!({ "agentName": "planner", "outcome": "interrupted", "output": null, "usage": { "inputTokens": 5, "outputTokens": 0 } }),
            Some(id(6)),
        ),
        event(
            13,
            60_033,
            "workflow:completed",
            json!({ "reason": "cancelled", "queued": [{ "id": id(10), "seq": 10 }] }),
            None,
        ),
        // The queued input's turn, rolled back by another input.
        event(
            14,
            60_040,
            "user:input",
            json!({ "text": "and back?" }),
            Some(id(10)),
        ),
        event(
            15,
            60_041,
            "input:queued",
            json!({ "text": "no, to Faro", "mode": "rollback" }),
            None,
        ),
        event(
            16,
            60_042,
            "turn:rolled_back",
            json!({ "from": 14, "state": {}, "stateHash": "abc" }),
            None,
        ),
        event(
            17,
            60_043,
            "workflow:completed",
            json!({ "reason": "rolled_back", "queued": [{ "id": id(15), "seq": 15 }] }),
            None,
        ),
    ]
}

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn text(span: &Span, key: &str) -> Option<String> {
    span.attribute(key).map(|v| v.as_str().into_owned())
}

#[test]
fn every_turn_has_a_root_linked_to_the_turn_before() {
    let spans = SessionSpans::map(session("s-1"), &living(), SpanOptions::default());
    let turns = named(&spans, "invoke_workflow trip");
    assert_eq!(turns.len(), 3, "{:#?}", shape(&spans));
    let starts: Vec<_> = turns
        .iter()
        .map(|t| text(t, "openharness.turn.start"))
        .collect();
    assert_eq!(
        starts,
        [
            Some("workflow:started".into()),
            Some("input:received".into()),
            Some("user:input".into())
        ]
    );
    // No orphans: every span but the roots has its parent in its own trace.
    for span in &spans {
        match span.parent {
            None => assert!(
                span.name.starts_with("invoke_workflow"),
                "{} is a root",
                span.name
            ),
            Some(parent) => assert!(
                spans
                    .iter()
                    .any(|p| p.span_id == parent && p.trace_id == span.trace_id),
                "{}'s parent is in its trace",
                span.name
            ),
        }
    }
    assert!(turns[0].links.is_empty());
    for pair in turns.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        assert_ne!(before.trace_id, after.trace_id, "a trace per turn");
        assert!(after.links.contains(&before.reference()));
        assert_eq!(
            text(after, "openharness.turn.previous_span_id"),
            Some(before.span_id.to_string())
        );
    }
    // The queued input's turn names it; nobody's turn stays unfinished.
    assert_eq!(
        text(turns[2], "openharness.input.queued_id"),
        Some(id(10).to_string())
    );
    assert_eq!(text(turns[0], "openharness.input.by"), Some("ana".into()));
    assert!(
        turns
            .iter()
            .all(|t| t.attribute("openharness.unfinished").is_none())
    );
}

#[test]
fn a_question_and_its_answer_are_a_span_with_the_wait_and_who_answered() {
    let spans = SessionSpans::map(session("s-1"), &living(), SpanOptions::default());
    let turns = named(&spans, "invoke_workflow trip");
    let [question] = named(&spans, "await_input")[..] else {
        panic!("one question: {:#?}", shape(&spans));
    };
    assert_eq!(
        question.parent,
        Some(turns[0].span_id),
        "under the turn that asked"
    );
    assert_eq!(question.trace_id, turns[0].trace_id);
    assert_eq!((question.start, question.end), (at(11), at(60_012)));
    assert_eq!(
        question.attribute("openharness.input.wait_ms"),
        Some(&Value::I64(60_001))
    );
    assert_eq!(
        text(question, "openharness.input.answered_by"),
        Some("bea".into())
    );
    assert_eq!(
        text(question, "openharness.input.request_id"),
        Some(id(4).to_string())
    );
    assert_eq!(
        text(question, "openharness.input.answer_trace_id"),
        Some(turns[1].trace_id.to_string())
    );
    assert!(
        turns[1].links.contains(&question.reference()),
        "the answer's turn links to it"
    );
    assert_eq!(
        text(turns[1], "openharness.input.answered_by"),
        Some("bea".into())
    );
    // What was asked and answered is content: off by default.
    assert!(question.attribute("openharness.input.prompt").is_none());
    let with = SessionSpans::map(
        session("s-1"),
        &living(),
        SpanOptions::default().content(true),
    );
    let question = named(&with, "await_input")[0];
    assert_eq!(
        text(question, "openharness.input.prompt"),
        Some("Which city?".into())
    );
    assert_eq!(
        text(question, "openharness.input.answer"),
        Some("Porto".into())
    );
}

#[test]
fn queue_steer_stop_and_rollback_are_events_of_the_running_turn() {
    let spans = SessionSpans::map(session("s-1"), &living(), SpanOptions::default());
    let turns = named(&spans, "invoke_workflow trip");
    let events = |turn: &Span| -> Vec<(String, Option<String>)> {
        turn.events
            .iter()
            .map(|e| {
                let mode = e
                    .attributes
                    .iter()
                    .find(|kv| kv.key.as_str() == "openharness.input.mode")
                    .map(|kv| kv.value.as_str().into_owned());
                (e.name.clone(), mode)
            })
            .collect()
    };
    assert_eq!(events(turns[0]), []);
    assert_eq!(
        events(turns[1]),
        [
            ("input:queued".into(), Some("steer".into())),
            ("input:steered".into(), None),
            ("input:queued".into(), Some("enqueue".into())),
            ("stop:requested".into(), None),
        ]
    );
    assert_eq!(
        events(turns[2]),
        [
            ("input:queued".into(), Some("rollback".into())),
            ("turn:rolled_back".into(), None)
        ]
    );
    let stop = &turns[1].events[3];
    assert_eq!(stop.time, at(60_031));
    assert_eq!(
        stop.attributes
            .iter()
            .find(|kv| kv.key.as_str() == "openharness.stop.reason")
            .map(|kv| kv.value.as_str().into_owned()),
        Some("the user pressed stop".into())
    );
    assert_eq!(
        text(turns[1], "openharness.turn.reason"),
        Some("cancelled".into())
    );
    // The steered text is content too.
    assert!(
        turns[1]
            .events
            .iter()
            .flat_map(|e| &e.attributes)
            .all(|kv| kv.key.as_str() != "openharness.input.text")
    );
}

#[test]
fn a_question_still_waiting_closes_as_waiting_not_as_an_error() {
    let spans = SessionSpans::map(session("s-1"), &living()[..6], SpanOptions::default());
    let [question] = named(&spans, "await_input")[..] else {
        panic!("one question: {:#?}", shape(&spans));
    };
    assert_eq!(
        question.attribute("openharness.input.waiting"),
        Some(&Value::Bool(true))
    );
    assert_eq!(question.status, Status::Unset);
    assert_eq!(question.end, at(12));
}

#[test]
fn the_living_session_maps_to_this_tree() {
    let spans = SessionSpans::map(session("s-1"), &living(), SpanOptions::default());
    insta::assert_json_snapshot!(shape(&spans));
}
