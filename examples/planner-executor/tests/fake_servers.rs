//! The planner-executor workflow end to end against each fake model server (Anthropic,
//! OpenAI-compatible, the claude CLI), re-asks of invalid structured output through the
//! runtime, tools offered by an agent, and a recorded run replayed through the tape with no
//! model request at all.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use openharness::Tool;
use openharness::builtin::{AgentCompleted, ErrorOccurred, Outcome, ToolCalled, ToolResult};
use openharness::prelude::*;
use openharness::provider::testing::{self, FakeClaude, FakeServer, RecordedRequest};
use openharness::provider::{AnthropicProvider, ApiKey, ClaudeCliProvider, OpenAiProvider};
use openharness::store::MemoryStore;
use openharness::tape::LoadTape;
use openharness_example_planner_executor::{
    self as example, Executor, Plan, PlanCreated, PlanState, TaskStatus,
};
use serde_json::{Value, json};

/// The first event of type `E` in `events`, decoded (the test fails when there is none).
fn first<E: Event>(events: &[Envelope]) -> E {
    let event = events
        .iter()
        .find(|e| e.name == E::NAME)
        .unwrap_or_else(|| panic!("no {} event", E::NAME));
    event
        .decode()
        .unwrap_or_else(|err| panic!("{} does not decode: {err}", E::NAME))
}

const TASKS: [&str; 3] = [
    "Write the changelog",
    "Tag the release",
    "Publish the crate",
];

/// The structured answer a good model gives to a planner-executor prompt.
fn answer(prompt: &str) -> Value {
    if prompt.starts_with("You are a planner") {
        json!({ "tasks": TASKS })
    } else {
        let task = prompt
            .lines()
            .find_map(|l| {
                l.split_once(": ")
                    .filter(|(k, _)| k.starts_with("Complete task"))
                    .map(|(_, t)| t)
            })
            .unwrap_or("?");
        json!({ "summary": format!("Did: {task}.") })
    }
}

fn assert_done(state: &PlanState) {
    assert!(state.is_done(), "{state:?}");
    let titles: Vec<_> = state.tasks.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, TASKS);
    assert!(state.tasks.iter().all(|t| t.status == TaskStatus::Done));
    assert_eq!(
        state.tasks[1].result.as_deref(),
        Some("Did: Tag the release.")
    );
}

fn names(events: &[Envelope]) -> Vec<&str> {
    events.iter().map(|e| e.name.as_ref()).collect()
}

async fn anthropic() -> (FakeServer, AnthropicProvider) {
    let server = FakeServer::anthropic(testing::anthropic::KEY)
        .await
        .unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::anthropic::json_output(&answer(&request.prompt()))
    });
    let provider = AnthropicProvider::builder(ApiKey::new(testing::anthropic::KEY))
        .base_url(server.base_url())
        .build()
        .unwrap();
    (server, provider)
}

#[tokio::test]
async fn runs_end_to_end_against_the_fake_anthropic_server_and_replays_with_no_requests() {
    let (server, provider) = anthropic().await;
    let store = MemoryStore::new();
    let workflow = example::workflow(store.clone(), provider).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    assert_done(&outcome.state);
    assert_eq!(
        server.request_count(),
        4,
        "one planner and three executor requests"
    );
    assert_eq!(outcome.usage.input_tokens, 4 * 25);
    assert!(outcome.cost > 0.0, "the Anthropic price table gives a cost");

    let events = store.all_events(&outcome.session).await.unwrap();
    assert!(names(&events).contains(&"text:delta"));
    let completed: Vec<_> = events
        .iter()
        .filter(|e| e.name == "agent:completed")
        .map(|e| e.decode::<AgentCompleted>().unwrap())
        .collect();
    assert_eq!(completed.len(), 4);
    assert!(
        completed.iter().all(|c| c.outcome == Outcome::Success
            && c.usage.output_tokens == 10
            && c.cost.is_some())
    );

    // Replay through the tape: the same states, and the model server hears nothing.
    let before = server.request_count();
    let mut tape = workflow.load(&outcome.session).await.unwrap();
    tape.step_to(tape.len());
    assert_eq!(tape.state(), &outcome.state);
    let plan_at = events
        .iter()
        .position(|e| e.name == "plan:created")
        .unwrap() as u64
        + 1;
    tape.step_to(plan_at);
    assert_eq!(tape.state().tasks.len(), 3);
    assert_eq!(tape.state().completed, 0);
    assert_eq!(
        server.request_count(),
        before,
        "replay made zero provider requests"
    );
}

#[tokio::test]
async fn runs_end_to_end_against_the_fake_openai_server() {
    let server = FakeServer::openai(testing::openai::KEY).await.unwrap();
    server.fallback(|request: &RecordedRequest| {
        testing::openai::json_output(&answer(&request.prompt()))
    });
    let provider = OpenAiProvider::builder(ApiKey::new(testing::openai::KEY))
        .base_url(server.base_url())
        .build()
        .unwrap();
    let outcome = example::workflow(MemoryStore::new(), provider)
        .unwrap()
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    assert_done(&outcome.state);
    assert_eq!(server.request_count(), 4);
    let planner = &server.requests()[0].body["response_format"]["json_schema"];
    assert_eq!(
        (planner["name"].as_str(), planner["strict"].as_bool()),
        (Some("planner"), Some(true))
    );
}

#[cfg(unix)]
#[tokio::test]
async fn runs_end_to_end_against_a_fake_claude_cli() {
    let fake = FakeClaude::new().unwrap();
    let plan = answer("You are a planner");
    fake.push_run(&FakeClaude::success("Planning.", Some(plan)))
        .unwrap();
    for task in TASKS {
        let summary = json!({ "summary": format!("Did: {task}.") });
        fake.push_run(&FakeClaude::success("Working.", Some(summary)))
            .unwrap();
    }
    let provider = ClaudeCliProvider::new().program(fake.program());
    let outcome = example::workflow(MemoryStore::new(), provider)
        .unwrap()
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    assert_done(&outcome.state);
    assert_eq!(fake.calls(), 4);
    assert!((outcome.cost - 4.0 * 0.00123).abs() < 1e-9);
    assert!(
        fake.stdin(2)["message"]["content"]
            .as_str()
            .unwrap()
            .contains("Complete task 1 of 3: Write the changelog")
    );
}

#[tokio::test]
async fn invalid_output_is_re_asked_with_the_validation_error_and_then_accepted() {
    let (server, provider) = anthropic().await;
    // The planner first answers with tasks that are not strings.
    server.respond(testing::anthropic::json_output(&json!({ "tasks": [1, 2] })));
    let store = MemoryStore::new();
    let outcome = example::workflow(store.clone(), provider)
        .unwrap()
        .run(RunOptions::new().input("goal"))
        .await
        .unwrap();
    assert_done(&outcome.state);
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let reask = requests[1].prompt();
    assert!(reask.starts_with("You are a planner"), "{reask}");
    assert!(
        reask.contains("was rejected: output does not match the schema"),
        "{reask}"
    );
    assert!(
        reask.contains("at `/tasks/0`"),
        "the validator names the place: {reask}"
    );
    let events = store.all_events(&outcome.session).await.unwrap();
    assert!(!names(&events).contains(&"error:occurred"));
}

#[tokio::test]
async fn output_that_never_validates_ends_in_error_occurred_after_the_bound() {
    let server = FakeServer::anthropic(testing::anthropic::KEY)
        .await
        .unwrap();
    server.fallback(|_| testing::anthropic::text("I would rather not answer in JSON."));
    let provider = AnthropicProvider::builder(ApiKey::new(testing::anthropic::KEY))
        .base_url(server.base_url())
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let outcome = example::workflow(store.clone(), provider)
        .unwrap()
        .run(RunOptions::new().input("goal"))
        .await
        .unwrap();
    assert!(!outcome.state.is_done());
    assert_eq!(
        server.request_count(),
        3,
        "the default bound is three attempts"
    );
    let events = store.all_events(&outcome.session).await.unwrap();
    let error = first::<ErrorOccurred>(&events);
    assert!(
        error.message.contains("agent `planner` failed")
            && error.message.contains("after 3 attempts"),
        "{}",
        error.message
    );
    let completed = first::<AgentCompleted>(&events);
    assert_eq!(completed.outcome, Outcome::Failure);
    assert_eq!(
        completed.usage.input_tokens,
        3 * 25,
        "usage of every attempt is counted"
    );
}

#[tokio::test]
async fn a_provider_failure_keeps_the_streamed_text_and_fails_the_agent() {
    let (server, provider) = anthropic().await;
    server.respond(testing::anthropic::error_in_stream(
        "Thinking about the plan",
    ));
    let store = MemoryStore::new();
    let outcome = example::workflow(store.clone(), provider)
        .unwrap()
        .run(RunOptions::new().input("goal"))
        .await
        .unwrap();
    let events = store.all_events(&outcome.session).await.unwrap();
    let text: String = events
        .iter()
        .filter(|e| e.name == "text:delta")
        .map(|e| e.payload["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Thinking about the plan");
    let completed = first::<AgentCompleted>(&events);
    assert_eq!(completed.outcome, Outcome::Failure);
    assert!(completed.error.unwrap().contains("overloaded_error"));
}

/// A planner that may ask for the current time before planning.
struct TimedPlanner;

impl Agent for TimedPlanner {
    type State = PlanState;
    type Trigger = UserInput;
    type Output = Plan;
    const NAME: &'static str = "planner";
    const EMITS: &'static [&'static str] = &[PlanCreated::NAME];

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![Arc::new(openharness::provider::tools::CurrentTime)]
    }

    fn max_turns(&self) -> u32 {
        3
    }

    fn prompt(&self, _state: &PlanState, input: &UserInput) -> String {
        format!("You are a planner. Goal: {}", input.text)
    }

    fn on_output(&self, plan: Plan, _input: &UserInput) -> Emit {
        Emit::one(PlanCreated { tasks: plan.tasks })
    }
}

#[tokio::test]
async fn an_agents_tools_reach_the_model_and_every_call_is_recorded() {
    let (server, provider) = anthropic().await;
    server.respond(testing::anthropic::tool_calls(&[(
        "toolu_01Now",
        "current_time",
        json!({}),
    )]));
    let store = MemoryStore::new();
    let workflow = Workflow::builder(example::WORKFLOW_NAME)
        .initial_state(PlanState::default())
        .agent(TimedPlanner)
        .agent(Executor)
        .until(PlanState::is_done)
        .store(store.clone())
        .provider(provider)
        .build()
        .unwrap();
    let outcome = workflow.run(RunOptions::new().input("goal")).await.unwrap();
    assert_done(&outcome.state);
    let requests = server.requests();
    assert_eq!(requests[0].body["tools"][0]["name"], "current_time");
    assert!(
        requests[4].body.get("tools").is_none(),
        "the executor has no tools"
    );

    let events = store.all_events(&outcome.session).await.unwrap();
    let called = first::<ToolCalled>(&events);
    assert_eq!(
        (
            called.agent.as_str(),
            called.tool.as_str(),
            called.tool_call_id.as_str()
        ),
        ("planner", "current_time", "toolu_01Now")
    );
    let result = first::<ToolResult>(&events);
    assert!(!result.is_error);
    assert!(result.output["utc"].as_str().unwrap().ends_with('Z'));
    // The tool result went back to the model in the second request.
    assert_eq!(
        requests[1].body["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01Now"
    );
}

#[tokio::test]
async fn the_fake_server_rejects_a_wrong_key_and_the_agent_fails_without_leaking_it() {
    let server = FakeServer::anthropic(testing::anthropic::KEY)
        .await
        .unwrap();
    let secret = "sk-ant-wrong-key-abcdef";
    let provider = AnthropicProvider::builder(ApiKey::new(secret))
        .base_url(server.base_url())
        .build()
        .unwrap();
    assert!(!format!("{provider:?}").contains(secret));
    let store = MemoryStore::new();
    let outcome = example::workflow(store.clone(), provider)
        .unwrap()
        .run(RunOptions::new().input("goal"))
        .await
        .unwrap();
    let events = store.all_events(&outcome.session).await.unwrap();
    let log = serde_json::to_string(&events).unwrap();
    assert!(log.contains("authentication_error"), "{log}");
    assert!(
        !log.contains(secret),
        "the key is nowhere in the recorded log"
    );
    assert_eq!(server.request_count(), 1, "401 is not retried");
}
