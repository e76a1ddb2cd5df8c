//! `/v1` agents as the targets of the three protocols, served as `openharness serve` serves
//! them (the platform's agent chat registered in the router's host): an Open Responses `model`,
//! an AG-UI path and an A2A endpoint name an agent as `agent:<name-or-id>` (or by its plain
//! name), its sessions are that agent's platform sessions, and every turn — the first and the
//! ones that continue it through any surface — runs with the agent's instructions and model.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use openharness_core::Store;
use openharness_host::Host;
use openharness_platform::Platform;
use openharness_provider::{Reply, ScriptedProvider};
use openharness_server::{ServerOptions, router};
use openharness_store::MemoryStore;
use openharness_testkit::http;
use serde_json::{Value, json};

/// The platform's model: says which instructions and model it was given, and the latest user
/// message; offered `get_weather`, it calls it, and then reads its output.
fn model() -> ScriptedProvider {
    ScriptedProvider::new().fallback("assistant", |request| {
        let returned = request
            .messages
            .iter()
            .rev()
            .find_map(|message| match message {
                openharness_core::ChatMessage::Tool { output, .. } => Some(output.clone()),
                _ => None,
            });
        if let Some(output) = returned {
            let text = format!("It is {}", output.as_str().unwrap_or_default());
            return Reply::output(json!(text.clone())).text(text);
        }
        if request.tools.get("get_weather").is_some() {
            return Reply::output(json!("")).text("Checking.").run_tool(
                "call_1",
                "get_weather",
                json!({ "location": "San Francisco, CA" }),
            );
        }
        let latest = request
            .messages
            .iter()
            .rev()
            .find_map(|message| match message {
                openharness_core::ChatMessage::User { text, .. } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let text = format!(
            "[{}|{}] heard: {latest}",
            request.system.clone().unwrap_or_default(),
            request.model.clone().unwrap_or_default()
        );
        Reply::output(json!(text.clone())).text(text)
    })
}

async fn serve() -> http::Client {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let platform = Platform::new(Arc::clone(&store), None)
        .with_provider(Arc::new(model()))
        .with_host(Host::shared(store))
        .unwrap();
    let host = platform.host().clone();
    let addr = http::serve(router(host, ServerOptions::default().platform(platform))).await;
    http::Client::new(addr).with_timeout(Duration::from_secs(20))
}

/// Creates the agent `name` (instructions `Be <name>.`, model `m-<name>`): its id.
async fn agent(client: &http::Client, name: &str) -> String {
    let answer = client
        .post(
            "/v1/agents",
            &json!({ "name": name, "system_prompt": format!("Be {name}."), "default_model_id": null }),
        )
        .await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    answer.json()["id"].as_str().unwrap().to_owned()
}

/// The ids of agent `id`'s sessions, as `/v1` lists them.
async fn sessions_of(client: &http::Client, id: &str) -> Vec<String> {
    let listed = client.get(&format!("/v1/agents/{id}/sessions")).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    listed.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|session| session["id"].as_str().unwrap().to_owned())
        .collect()
}

fn output_text(response: &Value) -> String {
    response["output"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_responses_runs_an_agent_and_continues_it_with_its_instructions() {
    let client = serve().await;
    let support = agent(&client, "support").await;
    agent(&client, "sales").await;

    let first = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "input": "Hello" }),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let first: Value = serde_json::from_str(first.body.trim()).unwrap();
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["model"], "agent:support");
    assert_eq!(output_text(&first), "[Be support.|] heard: Hello");
    let conversation = first["conversation"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        sessions_of(&client, &support).await,
        vec![conversation.clone()]
    );

    // Continued by its plain name: the host gives the turn the agent's instructions again.
    let second = client
        .post(
            "/v1/responses",
            &json!({ "model": "support", "input": "Again", "previous_response_id": first["id"] }),
        )
        .await;
    let second: Value = serde_json::from_str(second.body.trim()).unwrap();
    assert_eq!(second["status"], "completed", "{second}");
    assert_eq!(output_text(&second), "[Be support.|] heard: Again");
    assert_eq!(second["conversation"]["id"], conversation.as_str());

    // Another agent cannot continue it; an unknown name is 404 naming what is served.
    let other = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:sales", "input": "x", "previous_response_id": first["id"] }),
        )
        .await;
    assert_eq!(other.status, 400, "{}", other.body);
    assert!(
        other.body.contains("not a session of agent `sales`"),
        "{}",
        other.body
    );
    let unknown = client
        .post("/v1/responses", &json!({ "model": "nobody", "input": "x" }))
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let error = unknown.json()["error"].clone();
    assert_eq!(error["code"], "model_not_found");
    assert_eq!(error["param"], "model");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("agent:<name-or-id>"),
        "{error}"
    );

    // By its id, too.
    let by_id = client
        .post(
            "/v1/responses",
            &json!({ "model": format!("agent:{support}"), "input": "By id" }),
        )
        .await;
    let by_id: Value = serde_json::from_str(by_id.body.trim()).unwrap();
    assert_eq!(output_text(&by_id), "[Be support.|] heard: By id");
    assert_eq!(sessions_of(&client, &support).await.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_threads_of_an_agent_are_its_sessions() {
    let client = serve().await;
    let support = agent(&client, "support").await;
    let thread = uuid::Uuid::now_v7().to_string();
    let run = |run_id: &str, messages: Value| {
        json!({ "threadId": thread, "runId": run_id, "messages": messages, "tools": [],
                "context": [], "state": {}, "forwardedProps": {} })
    };
    let first = client
        .post(
            "/ag-ui/agent:support",
            &run(
                "r1",
                json!([{ "id": "u1", "role": "user", "content": "Hi there" }]),
            ),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(first.body.contains("RUN_FINISHED"), "{}", first.body);
    assert!(
        first.body.contains("[Be support.|] heard: Hi there"),
        "{}",
        first.body
    );
    assert_eq!(sessions_of(&client, &support).await, vec![thread.clone()]);

    let second = client
        .post(
            "/ag-ui/support",
            &run(
                "r2",
                json!([{ "id": "u1", "role": "user", "content": "Hi there" },
                       { "id": "u2", "role": "user", "content": "More" }]),
            ),
        )
        .await;
    assert!(
        second.body.contains("[Be support.|] heard: More"),
        "{}",
        second.body
    );
    let history = client
        .get(&format!("/ag-ui/agent:support/{thread}/events"))
        .await;
    assert_eq!(history.status, 200, "{}", history.body);
    assert_eq!(
        history.body.matches("RUN_FINISHED").count(),
        2,
        "{}",
        history.body
    );

    // An agent's threads are UUIDs, as its sessions are.
    let refused = client
        .post(
            "/ag-ui/agent:support",
            &json!({ "threadId": "not-a-uuid", "runId": "r", "messages": [{ "id": "u", "role": "user", "content": "x" }] }),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("UUIDs"), "{}", refused.body);
}

async fn rpc(client: &http::Client, target: &str, method: &str, params: Value) -> Value {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let answer = client
        .call(
            "POST",
            &format!("/a2a/{target}"),
            Some(&body.to_string()),
            &[("a2a-version", "1.0")],
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    serde_json::from_str(answer.body.trim()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_serves_an_agent_with_a_card_and_lists_only_its_tasks() {
    let client = serve().await;
    agent(&client, "support").await;
    agent(&client, "sales").await;
    let card = client
        .get("/a2a/agent:support/.well-known/agent-card.json")
        .await;
    assert_eq!(card.status, 200, "{}", card.body);
    assert!(
        card.json()["supportedInterfaces"][0]["url"]
            .as_str()
            .unwrap()
            .contains("/a2a/agent"),
        "{}",
        card.body
    );
    let message = |text: &str| json!({ "message": { "messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{ "text": text }] } });
    let sent = rpc(&client, "agent:support", "SendMessage", message("ping")).await;
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert!(
        task.to_string().contains("[Be support.|] heard: ping"),
        "{task}"
    );
    rpc(&client, "agent:sales", "SendMessage", message("pong")).await;

    let listed = rpc(&client, "agent:support", "ListTasks", json!({})).await;
    let tasks = listed["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{listed}");
    assert_eq!(tasks[0]["contextId"], task["contextId"]);

    // The other agent's context is refused on this endpoint.
    let mut wrong = message("again");
    wrong["message"]["contextId"] = task["contextId"].clone();
    let refused = rpc(&client, "agent:sales", "SendMessage", wrong).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_responses_function_tools_run_on_the_client_and_their_output_continues() {
    let client = serve().await;
    agent(&client, "support").await;
    let weather = json!({ "type": "function", "name": "get_weather", "description": "Weather.",
        "parameters": { "type": "object", "properties": { "location": { "type": "string" } } } });
    let first = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "input": "Weather in SF?", "tools": [weather] }),
        )
        .await;
    let first: Value = serde_json::from_str(first.body.trim()).unwrap();
    assert_eq!(first["status"], "completed", "{first}");
    let output = first["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "{first}");
    assert_eq!(output[0]["content"][0]["text"], "Checking.");
    let call = &output[1];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_1");
    assert_eq!(call["name"], "get_weather");
    assert_eq!(call["arguments"], r#"{"location":"San Francisco, CA"}"#);

    // An output for a call nobody made is refused, and records nothing.
    let stranger = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "previous_response_id": first["id"],
                "input": [{ "type": "function_call_output", "call_id": "call_9", "output": "x" }] }),
        )
        .await;
    assert_eq!(stranger.status, 400, "{}", stranger.body);
    assert_eq!(stranger.json()["error"]["param"], "input");

    // The client ran it: its output continues the conversation, streamed this time.
    let second = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "previous_response_id": first["id"], "stream": true,
                "input": [{ "type": "function_call_output", "call_id": "call_1", "output": "64 degrees and clear" }] }),
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(
        second.body.contains("It is 64 degrees and clear"),
        "{}",
        second.body
    );
    assert!(
        second.body.contains("event: response.completed"),
        "{}",
        second.body
    );

    // Answered once: the same output again is refused.
    let again = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "conversation": first["conversation"]["id"],
                "input": [{ "type": "function_call_output", "call_id": "call_1", "output": "64" }] }),
        )
        .await;
    assert_eq!(again.status, 400, "{}", again.body);

    // The log: the call recorded as the client's, its output on the next input.
    let session = first["conversation"]["id"].as_str().unwrap();
    let events = client
        .get(&format!("/sessions/{session}/events?limit=100"))
        .await
        .json();
    let events = events["events"].as_array().unwrap();
    let called = events.iter().find(|e| e["name"] == "tool:called").unwrap();
    assert_eq!(called["payload"]["client"], true, "{called}");
    assert!(
        events.iter().all(|e| e["name"] != "tool:result"),
        "the server ran nothing"
    );
    let answered = events
        .iter()
        .filter(|e| e["name"] == "user:input")
        .nth(1)
        .unwrap();
    assert_eq!(
        answered["payload"]["toolResults"],
        json!([{ "toolId": "call_1", "output": "64 degrees and clear" }])
    );

    // Tools of another kind than `function` are refused.
    let refused = client
        .post(
            "/v1/responses",
            &json!({ "model": "agent:support", "input": "x", "tools": [{ "type": "web_search" }] }),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.json()["error"]["param"], "tools");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_frontend_tools_run_on_the_client_and_their_result_continues_the_run() {
    let client = serve().await;
    agent(&client, "support").await;
    let thread = uuid::Uuid::now_v7().to_string();
    let tools = json!([{ "name": "get_weather", "description": "Weather.",
        "parameters": { "type": "object", "properties": { "location": { "type": "string" } } } }]);
    let asked = json!({ "id": "u1", "role": "user", "content": "Weather in SF?" });
    let first = client
        .post(
            "/ag-ui/agent:support",
            &json!({ "threadId": thread, "runId": "r1", "messages": [asked], "tools": tools }),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert!(
        first.body.contains(r#""toolCallName":"get_weather""#),
        "{}",
        first.body
    );
    assert!(first.body.contains("TOOL_CALL_END"), "{}", first.body);
    assert!(
        !first.body.contains("TOOL_CALL_RESULT"),
        "the server ran nothing"
    );
    assert!(first.body.contains("RUN_FINISHED"), "{}", first.body);

    // The client ran it and sends its result (no new user message).
    let messages = json!([asked,
        { "id": "a1", "role": "assistant", "toolCalls": [{ "id": "call_1", "type": "function",
            "function": { "name": "get_weather", "arguments": "{}" } }] },
        { "id": "t1", "role": "tool", "toolCallId": "call_1", "content": "64 degrees" }]);
    let second = client
        .post(
            "/ag-ui/agent:support",
            &json!({ "threadId": thread, "runId": "r2", "messages": messages, "tools": tools }),
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(second.body.contains("It is 64 degrees"), "{}", second.body);
    assert!(
        second
            .body
            .contains(r#""role":"tool","toolCallId":"call_1""#)
            || second.body.contains(r#""toolCallId":"call_1""#),
        "the snapshot holds the tool message: {}",
        second.body
    );
}
