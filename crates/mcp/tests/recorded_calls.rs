//! An agent on the scripted model calls a real MCP server's tool (the Python SDK's server, over
//! stdio): the call is recorded with the server's name, and stepping through the recording, a
//! cassette re-execution and a fork's prefix read it from the log — the server counts its calls,
//! and none of those reaches it. Only a fork's new suffix calls it again. A tool the server adds
//! while the workflow runs reaches the agent at its next call.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::sync::Arc;

use common::{Calls, counting_stdio, relisted};
use openharness::Tool;
use openharness::builtin::{ToolCalled, ToolResult};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::tape::{At, Cassette, LoadTape};
use openharness_mcp::McpClient;
use openharness_testkit::events::first;
use serde::Deserialize;
use serde_json::json;

#[event("answer:given")]
#[derive(Debug, Clone)]
struct AnswerGiven {
    text: String,
}

#[event]
enum DeskEvent {
    AnswerGiven,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Desk {
    answers: Vec<String>,
}

#[handler(DeskEvent)]
impl Desk {
    fn answered(&mut self, given: &AnswerGiven) {
        self.answers.push(given.text.clone());
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Answer {
    text: String,
}

/// Answers sums with the MCP server's `add` (and any tool the server offers when it is asked).
struct Calculator {
    server: McpClient,
}

impl Agent for Calculator {
    type State = Desk;
    type Trigger = UserInput;
    type Output = Answer;
    const NAME: &'static str = "calculator";
    const EMITS: &'static [&'static str] = &[AnswerGiven::NAME];

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        // Asked at each activation: the server's tools as last listed.
        self.server.tools()
    }

    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, answer: Answer, _input: &UserInput) -> Emit {
        Emit::one(AnswerGiven { text: answer.text })
    }
}

/// The scripted model: adds `a` and `b` with the server's tool and answers with the result.
fn adds(a: i64, b: i64) -> Reply {
    Reply::output_with(|results| json!({ "text": format!("the sum is {}", results[0]["result"]) }))
        .run_tool(format!("call-{a}-{b}"), "add", json!({ "a": a, "b": b }))
}

fn workflow(store: &MemoryStore, client: &McpClient, provider: ScriptedProvider) -> Workflow<Desk> {
    Workflow::builder("desk")
        .initial_state(Desk::default())
        .agent(Calculator {
            server: client.clone(),
        })
        .store(store.clone())
        .provider(provider)
        .build()
        .unwrap()
}

#[tokio::test]
async fn replays_cassettes_and_a_forks_prefix_never_call_the_server() {
    let calls = Calls::new();
    let client = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    let store = MemoryStore::new();

    // Recorded: one real call.
    let live = workflow(
        &store,
        &client,
        ScriptedProvider::new().respond("calculator", adds(2, 3)),
    );
    let recorded = live.run(RunOptions::new().input("2 + 3?")).await.unwrap();
    assert_eq!(recorded.state.answers, ["the sum is 5"]);
    assert_eq!(calls.seen(), ["add"]);
    let events = store.events(&recorded.session, 0..u64::MAX).await.unwrap();
    let called = first::<ToolCalled>(&events);
    assert_eq!(called.server.as_deref(), Some("counting"));
    assert_eq!(called.tool, "add");
    let result = first::<ToolResult>(&events);
    assert_eq!(result.output, json!({ "result": 5 }));
    assert!(!result.is_error);

    // Stepping through the recording, forwards and back: no call.
    let mut tape = live.load(&recorded.session).await.unwrap();
    while tape.position() < tape.len() {
        tape.step();
    }
    assert_eq!(tape.state().answers, ["the sum is 5"]);
    while tape.position() > 0 {
        tape.step_back();
    }
    assert_eq!(calls.seen(), ["add"], "the tape called the server");

    // Re-executed from its cassette, by a workflow whose agent holds the live MCP tools and a
    // model with no script: the recorded result is served, the server is not called.
    let offline = workflow(&store, &client, ScriptedProvider::new());
    let replayed = Cassette::load(&offline, &recorded.session)
        .await
        .unwrap()
        .replay(&offline, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(replayed.state.answers, ["the sum is 5"]);
    assert_eq!(calls.seen(), ["add"], "the cassette called the server");

    // A fork at the end of the recording, sent a new question: the prefix's call is read from
    // the log; only the new question's call reaches the server.
    let forker = workflow(
        &store,
        &client,
        ScriptedProvider::new().respond("calculator", adds(20, 22)),
    );
    let fork = forker
        .fork(&recorded.session, At::position(recorded.len))
        .await
        .unwrap();
    let forked = fork.run(RunOptions::new()).await.unwrap();
    assert_eq!(forked.state.answers, ["the sum is 5"]);
    assert_eq!(calls.seen(), ["add"], "the fork's prefix called the server");
    let continued = forker
        .send(&forked.session, "20 + 22?", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(continued.state.answers, ["the sum is 5", "the sum is 42"]);
    assert_eq!(calls.seen(), ["add", "add"]);
}

#[tokio::test]
async fn a_failing_server_tool_is_an_error_result_the_run_survives() {
    let calls = Calls::new();
    let client = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    let store = MemoryStore::new();
    let reply =
        Reply::output_with(|results| json!({ "text": format!("tool said: {}", results[0]) }))
            .run_tool("call-1", "fail", json!({ "message": "quota exceeded" }));
    let live = workflow(
        &store,
        &client,
        ScriptedProvider::new().respond("calculator", reply),
    );
    let outcome = live.run(RunOptions::new().input("try")).await.unwrap();
    assert!(
        outcome.state.answers[0].contains("quota exceeded"),
        "{:?}",
        outcome.state.answers
    );
    let events = store.events(&outcome.session, 0..u64::MAX).await.unwrap();
    let result = first::<ToolResult>(&events);
    assert!(result.is_error);
    assert_eq!(calls.seen(), ["fail"]);
}

#[tokio::test]
async fn a_tool_the_server_adds_reaches_the_agent_at_its_next_call() {
    let calls = Calls::new();
    let client = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    let store = MemoryStore::new();
    // `grow` makes the server add `grown` and send `tools/list_changed`.
    let grow = Reply::output(json!({ "text": "grew" })).run_tool("call-1", "grow", json!({}));
    let use_grown = Reply::output_with(|results| json!({ "text": results[0]["result"].clone() }))
        .run_tool("call-2", "grown", json!({ "text": "up" }));
    let live = workflow(
        &store,
        &client,
        ScriptedProvider::new()
            .respond("calculator", grow)
            .respond("calculator", use_grown),
    );
    let listings = client.listings();
    let first = live.run(RunOptions::new().input("grow")).await.unwrap();
    assert_eq!(first.state.answers, ["grew"]);
    relisted(&client, listings).await;
    // The same workflow, the same agent: its next call is offered the new tool.
    let second = live
        .send(&first.session, "use it", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(second.state.answers, ["grew", "UP"]);
    assert_eq!(calls.seen(), ["grow", "grown"]);
}
