//! The A2A projection: the order of stream responses, the reply as artifact chunks, questions
//! (input required, then answered), queued messages, stopped and failed turns, and the `Task`
//! a read gives.
#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputQueued, InputReceived, InputRequested,
    Outcome, QueueMode, TextDelta, ToolCalled, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{Envelope, EventId};
use serde_json::{Value, json};

use super::*;

fn input(text: &str) -> Envelope {
    let mut event = Envelope::typed(&UserInput::new(text), None).unwrap();
    event.payload["messageId"] = json!("m1");
    event
}

fn workflow_started() -> Envelope {
    let started = WorkflowStarted {
        workflow: "chat".into(),
        code: None,
        version: None,
        commit: None,
        state_shape: None,
    };
    Envelope::typed(&started, None).unwrap()
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

fn completed(agent: &str, output: Value, cause: Option<EventId>) -> Envelope {
    let completed = AgentCompleted {
        agent: agent.into(),
        outcome: Outcome::Success,
        usage: openharness_core::adapter::Usage::default(),
        cost: None,
        error: None,
        output: Some(output),
    };
    Envelope::typed(&completed, cause).unwrap()
}

fn ended(reason: &str, open: Vec<EventId>, errors: u64) -> Envelope {
    let done = WorkflowCompleted {
        reason: reason.into(),
        open_requests: open,
        errors,
        ..WorkflowCompleted::default()
    };
    Envelope::typed(&done, None).unwrap()
}

fn stream() -> TaskStream {
    TaskStream::new(TaskHead::new("task_0_s", "s"))
}

fn run(stream: &mut TaskStream, events: &[Envelope]) -> Vec<Value> {
    values(events.iter().flat_map(|event| stream.step(event)).collect())
}

/// The responses as JSON values.
fn values(responses: Vec<TaskResponse>) -> Vec<Value> {
    responses.iter().map(TaskResponse::to_value).collect()
}

/// Each response's kind (`task`, `statusUpdate`, `artifactUpdate`), with the state of the
/// status it carries.
fn kinds(responses: &[Value]) -> Vec<String> {
    responses
        .iter()
        .map(|response| {
            let (kind, body) = response.as_object().unwrap().iter().next().unwrap();
            match body["status"]["state"].as_str() {
                Some(state) => format!("{kind}:{state}"),
                None => kind.clone(),
            }
        })
        .collect()
}

#[test]
fn a_reply_streams_as_one_artifact_and_the_task_completes() {
    let first = input("Hi");
    let call = started("assistant", Some(first.id));
    let events = [
        workflow_started(),
        first.clone(),
        call.clone(),
        delta("assistant", "{\"reply\": \"Hel", Some(first.id)),
        delta("assistant", "lo", Some(first.id)),
        completed("assistant", json!({ "reply": "Hello!" }), Some(first.id)),
        ended("idle", Vec::new(), 0),
    ];
    let mut task = stream();
    let responses = run(&mut task, &events);
    assert_eq!(
        kinds(&responses),
        [
            "task:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    // The opening task holds the user's message, with the client's own id.
    let opening = &responses[0]["task"];
    assert_eq!(opening["id"], "task_0_s");
    assert_eq!(opening["contextId"], "s");
    assert_eq!(opening["history"][0]["messageId"], "m1");
    assert_eq!(opening["history"][0]["role"], "ROLE_USER");
    assert_eq!(opening["history"][0]["parts"][0]["text"], "Hi");
    // The chunks: decoded text, never JSON; the first opens, the rest append, the last ends.
    let chunks: Vec<(&str, bool, bool)> = responses[1..4]
        .iter()
        .map(|r| {
            let update = &r["artifactUpdate"];
            assert_eq!(
                update["artifact"]["artifactId"],
                format!("artifact-{}", call.id)
            );
            assert_eq!(update["artifact"]["name"], "assistant");
            (
                update["artifact"]["parts"][0]["text"].as_str().unwrap(),
                update["append"].as_bool().unwrap(),
                update["lastChunk"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        chunks,
        [
            ("Hel", false, false),
            ("lo", true, false),
            ("!", true, true)
        ]
    );
    assert!(task.ended());
    let whole = task.task();
    assert_eq!(whole["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(
        whole["status"]["timestamp"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(whole["artifacts"].as_array().unwrap().len(), 1);
    assert_eq!(
        whole["artifacts"][0]["parts"],
        json!([{ "text": "Hello!" }])
    );
}

#[test]
fn a_reply_that_never_streamed_arrives_whole_in_one_last_chunk() {
    let first = input("Hi");
    let events = [
        first.clone(),
        started("assistant", Some(first.id)),
        completed("assistant", json!({ "reply": "Hello!" }), Some(first.id)),
        ended("idle", Vec::new(), 0),
    ];
    let mut task = stream();
    let responses = run(&mut task, &events);
    let update = &responses[1]["artifactUpdate"];
    assert_eq!(update["append"], false);
    assert_eq!(update["lastChunk"], true);
    assert_eq!(update["artifact"]["parts"][0]["text"], "Hello!");
}

#[test]
fn structured_output_without_text_is_a_data_artifact() {
    let first = input("plan it");
    let planner = AgentStarted {
        agent: "planner".into(),
        ..AgentStarted::default()
    };
    let events = [
        first.clone(),
        Envelope::typed(&planner, Some(first.id)).unwrap(),
        completed(
            "planner",
            json!({ "steps": ["a", "b"], "done": false }),
            Some(first.id),
        ),
        ended("idle", Vec::new(), 0),
    ];
    let mut task = stream();
    run(&mut task, &events);
    let artifact = &task.task()["artifacts"][0];
    assert_eq!(artifact["name"], "planner");
    assert_eq!(artifact["parts"][0]["data"]["steps"], json!(["a", "b"]));
    assert_eq!(artifact["parts"][0]["mediaType"], "application/json");
}

#[test]
fn a_question_requires_input_and_its_answer_continues_the_same_task() {
    let first = input("Ship it");
    let question = Envelope::typed(
        &InputRequested::approval("Publish the release notes?"),
        Some(first.id),
    )
    .unwrap();
    let asked = [
        first.clone(),
        question.clone(),
        ended("waiting_for_input", vec![question.id], 0),
    ];
    let mut task = stream();
    let responses = run(&mut task, &asked);
    assert_eq!(
        kinds(&responses),
        [
            "task:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_INPUT_REQUIRED"
        ]
    );
    assert!(task.ended());
    assert_eq!(task.waiting_for(), [question.id]);
    let status = &responses[1]["statusUpdate"]["status"];
    assert_eq!(status["message"]["role"], "ROLE_AGENT");
    assert_eq!(
        status["message"]["parts"][0]["text"],
        "Publish the release notes?"
    );
    assert_eq!(
        status["message"]["metadata"]["requestId"],
        question.id.to_string()
    );
    assert_eq!(status["message"]["metadata"]["approval"], true);

    // Another task's events while this one waits are not its own.
    let other = input("something else");
    assert!(task.step(&other).is_empty());
    assert!(task.step(&ended("idle", Vec::new(), 0)).is_empty());

    // The answer takes it back to work, in the same task.
    let answer =
        Envelope::typed(&InputReceived::new(question.id, "yes"), Some(question.id)).unwrap();
    let call = started("writer", Some(answer.id));
    let answered = [
        answer.clone(),
        call,
        completed("writer", json!({ "reply": "Published." }), Some(answer.id)),
        ended("idle", Vec::new(), 0),
    ];
    let responses = run(&mut task, &answered);
    assert_eq!(
        kinds(&responses),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    let whole = task.task();
    let history: Vec<(&str, &str)> = whole["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap(),
                m["parts"][0]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            ("ROLE_USER", "Ship it"),
            ("ROLE_AGENT", "Publish the release notes?"),
            ("ROLE_USER", "yes")
        ]
    );
    // Over: nothing more is its own.
    assert!(task.step(&input("later")).is_empty());
}

#[test]
fn a_task_waits_on_its_own_question_while_an_older_one_stays_open() {
    let older = Envelope::typed(&InputRequested::new("Which city?"), None).unwrap();
    let first = input("Plan again");
    let question = Envelope::typed(&InputRequested::new("Publish?"), Some(first.id)).unwrap();
    let mut task = stream();
    let responses = run(
        &mut task,
        &[
            first,
            question.clone(),
            ended("waiting_for_input", vec![older.id, question.id], 0),
        ],
    );
    let message = &responses.last().unwrap()["statusUpdate"]["status"]["message"];
    assert_eq!(message["parts"][0]["text"], "Publish?");
    assert_eq!(message["metadata"]["requestId"], question.id.to_string());
    assert_eq!(task.waiting_for(), [question.id]);
    // The older question's answer is not this task's.
    let other = Envelope::typed(&InputReceived::new(older.id, "Lisbon"), Some(older.id)).unwrap();
    assert!(task.step(&other).is_empty());
}

#[test]
fn a_queued_message_is_submitted_until_its_turn_begins() {
    let running = input("first");
    let queued = Envelope::typed(
        &InputQueued::new("second", QueueMode::Enqueue),
        Some(running.id),
    )
    .unwrap();
    let mut task = stream();
    let responses = values(task.step(&queued));
    assert_eq!(kinds(&responses), ["task:TASK_STATE_SUBMITTED"]);
    assert_eq!(
        responses[0]["task"]["history"][0]["parts"][0]["text"],
        "second"
    );
    // The running turn is not this task's.
    let running_reply = [
        started("assistant", Some(running.id)),
        completed("assistant", json!({ "reply": "one" }), Some(running.id)),
        ended("idle", Vec::new(), 0),
    ];
    assert!(run(&mut task, &running_reply).is_empty());
    let begins = Envelope::typed(&UserInput::new("second"), Some(queued.id)).unwrap();
    let own = [
        begins.clone(),
        started("assistant", Some(begins.id)),
        completed("assistant", json!({ "reply": "two" }), Some(begins.id)),
        ended("idle", Vec::new(), 0),
    ];
    let responses = run(&mut task, &own);
    assert_eq!(
        kinds(&responses),
        [
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_COMPLETED"
        ]
    );
    assert_eq!(task.task()["history"].as_array().unwrap().len(), 1);
}

#[test]
fn a_stopped_turn_is_canceled_with_its_text_so_far_and_a_failed_one_says_why() {
    let first = input("Hi");
    let events = [
        first.clone(),
        started("assistant", Some(first.id)),
        delta("assistant", "{\"reply\": \"Hal", Some(first.id)),
        ended("cancelled", Vec::new(), 0),
    ];
    let mut task = stream();
    let responses = run(&mut task, &events);
    assert_eq!(
        kinds(&responses),
        [
            "task:TASK_STATE_WORKING",
            "artifactUpdate",
            "artifactUpdate",
            "statusUpdate:TASK_STATE_CANCELED"
        ]
    );
    assert_eq!(responses[2]["artifactUpdate"]["lastChunk"], true);
    assert_eq!(
        responses[3]["statusUpdate"]["metadata"]["openharness"],
        "cancelled"
    );
    assert_eq!(task.task()["artifacts"][0]["parts"][0]["text"], "Hal");

    // Errors recorded: failed, the newest error as the status message.
    let first = input("Hi");
    let error = Envelope::typed(
        &ErrorOccurred::recoverable("provider", "rate limited", None),
        None,
    )
    .unwrap();
    let mut task = stream();
    let responses = run(&mut task, &[first, error, ended("idle", Vec::new(), 1)]);
    assert_eq!(
        kinds(&responses),
        [
            "task:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_FAILED"
        ]
    );
    assert_eq!(
        task.task()["status"]["message"]["parts"][0]["text"],
        "rate limited"
    );

    // A turn that failed before its end (nothing more will be recorded).
    let mut task = stream();
    run(&mut task, &[input("Hi")]);
    let responses = values(task.fail("the provider is unreachable", None));
    assert_eq!(kinds(&responses), ["statusUpdate:TASK_STATE_FAILED"]);
    assert_eq!(task.state(), TaskState::Failed);
    assert!(task.fail("again", None).is_empty());
}

#[test]
fn tool_calls_are_working_updates_and_a_replayed_stream_opens_with_the_task_so_far() {
    let first = input("weather?");
    let called = ToolCalled {
        client: false,
        agent: "assistant".into(),
        tool_call_id: "t1".into(),
        tool: "weather".into(),
        input: json!({ "city": "Lisbon" }),
        server: None,
    };
    let events = [
        workflow_started(),
        first.clone(),
        started("assistant", Some(first.id)),
        Envelope::typed(&called, Some(first.id)).unwrap(),
        delta("assistant", "{\"reply\": \"Sunny", Some(first.id)),
    ];
    let mut whole = stream();
    let responses = run(&mut whole, &events);
    assert_eq!(
        kinds(&responses),
        [
            "task:TASK_STATE_WORKING",
            "statusUpdate:TASK_STATE_WORKING",
            "artifactUpdate"
        ]
    );
    let message = &responses[1]["statusUpdate"]["status"]["message"];
    assert_eq!(message["parts"][0]["data"]["toolName"], "weather");
    assert_eq!(message["metadata"]["openharness"], "tool_call");

    // Replayed silently, then announced: the task as it stands, then what follows.
    let mut replayed = stream();
    run(&mut replayed, &events);
    let mut resumed = stream();
    for event in &events {
        resumed.step(event);
    }
    let opening = resumed.announce();
    assert_eq!(opening["task"]["artifacts"][0]["parts"][0]["text"], "Sunny");
    assert_eq!(opening["task"], replayed.task());
    let end = completed("assistant", json!({ "reply": "Sunny." }), Some(first.id));
    let rest = values(resumed.step(&end));
    assert_eq!(rest[0]["artifactUpdate"]["append"], true);
    assert_eq!(
        rest[0]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "."
    );
}

#[test]
fn states_read_back_from_their_wire_names() {
    for state in [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
        TaskState::Completed,
        TaskState::Canceled,
        TaskState::Failed,
    ] {
        assert_eq!(TaskState::parse(state.as_str()), Some(state));
    }
    assert_eq!(TaskState::parse("TASK_STATE_REJECTED"), None);
    assert!(TaskState::Canceled.is_terminal());
    assert!(!TaskState::InputRequired.is_terminal());
}

/// A text chunk as the projection wrote it before it was typed: a `json!` map.
fn chunk_as_map(artifact_id: &str, name: &str, text: &str, append: bool, last: bool) -> String {
    let artifact = json!({
        "artifactId": artifact_id,
        "name": name,
        "parts": [{ "text": text }],
    });
    json!({ "artifactUpdate": {
        "taskId": "task_0_s",
        "contextId": "s",
        "artifact": artifact,
        "append": append,
        "lastChunk": last,
    } })
    .to_string()
}

#[test]
fn a_typed_text_chunk_is_the_same_json_text_as_the_map_it_replaces() {
    for (n, text) in [
        "Hello",
        "",
        "say \"hi\"\n\tand\r\\ go",
        "naïve 日本語 🎉 \u{7f}\u{0}\u{1f}",
        "</script>&<'>",
    ]
    .into_iter()
    .enumerate()
    {
        let (append, last) = (n % 2 == 1, n % 3 == 2);
        let chunk = TaskResponse::ArtifactText(ArtifactText {
            task_id: "task_0_s".into(),
            context_id: "s".into(),
            artifact_id: "artifact-0193e1b2-7c3a-7e0b-9d4f-5a6b7c8d9e0f".into(),
            name: "assi\"stant".into(),
            text: text.to_owned(),
            append,
            last_chunk: last,
        });
        let expected = chunk_as_map(
            "artifact-0193e1b2-7c3a-7e0b-9d4f-5a6b7c8d9e0f",
            "assi\"stant",
            text,
            append,
            last,
        );
        assert_eq!(serde_json::to_string(&chunk).unwrap(), expected);
        assert_eq!(chunk.to_value().to_string(), expected);
    }
}

#[test]
fn streamed_chunks_are_written_as_the_maps_they_replace_and_the_artifact_holds_them_all() {
    let first = input("Hi");
    let call = started("assistant", Some(first.id));
    let events = [
        first.clone(),
        call.clone(),
        delta(
            "assistant",
            "{\"reply\": \"Say \\\"hi\\\"\\n",
            Some(first.id),
        ),
        delta("assistant", "日本 🎉", Some(first.id)),
        completed(
            "assistant",
            json!({ "reply": "Say \"hi\"\n日本 🎉!" }),
            Some(first.id),
        ),
    ];
    let mut task = stream();
    let chunks: Vec<String> = events
        .iter()
        .flat_map(|event| task.step(event))
        .filter(|response| matches!(response, TaskResponse::ArtifactText(_)))
        .map(|response| serde_json::to_string(&response).unwrap())
        .collect();
    let id = format!("artifact-{}", call.id);
    assert_eq!(
        chunks,
        [
            chunk_as_map(&id, "assistant", "Say \"hi\"\n", false, false),
            chunk_as_map(&id, "assistant", "日本 🎉", true, false),
            chunk_as_map(&id, "assistant", "!", true, true),
        ]
    );
    assert_eq!(
        task.task()["artifacts"][0]["parts"][0]["text"],
        "Say \"hi\"\n日本 🎉!"
    );
}
