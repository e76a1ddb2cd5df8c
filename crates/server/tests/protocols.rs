//! The protocols served as projections of the log, in process. Open Responses
//! (`/v1/responses`): every route answers as `GET /openapi.json` documents it (bodies validated
//! against its schemas), errors come in the specification's shape naming the parameter, an
//! input queued behind a running turn gets the response of the turn that answers it, and every
//! response resumes at every sequence number. AG-UI (`/ag-ui/…`): a thread's stream resumed
//! after every frame of a recorded demo, a chat and its fork is exactly the rest of a whole
//! read. The official clients run in `crates/cli/tests/open_responses.rs` (Python) and
//! `packages/e2e` (JavaScript).
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use openharness::host::Host;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_server::{ServerOptions, router};
use openharness_testkit::http;
use serde_json::{Value, json};

#[event]
#[derive(Debug, Clone)]
struct AssistantReplied {
    text: String,
}

#[event]
enum ChatEvent {
    UserInput,
    AssistantReplied,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Chat {
    lines: Vec<String>,
}

#[handler(ChatEvent)]
impl Chat {
    fn heard(&mut self, input: &UserInput) {
        self.lines.push(input.text.clone());
    }
    fn replied(&mut self, reply: &AssistantReplied) {
        self.lines.push(reply.text.clone());
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    reply: String,
}

struct Assistant;

#[agent(output = Answer, reply = reply, emits = [AssistantReplied])]
impl Assistant {
    fn prompt(&self, _state: &Chat, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Answer, _input: &UserInput) -> AssistantReplied {
        AssistantReplied { text: out.reply }
    }
}

/// A server hosting `chat`, whose model echoes the prompt after `delay`.
async fn serve(delay: Duration) -> SocketAddr {
    serve_with(delay, ServerOptions::default()).await
}

/// [`serve`] with `options`.
async fn serve_with(delay: Duration, options: ServerOptions) -> SocketAddr {
    let provider = ScriptedProvider::new().fallback("assistant", move |request| {
        let output = json!({ "reply": format!("echo: {}", request.prompt) });
        Reply::output(output.clone())
            .text(output.to_string())
            .delay(delay)
    });
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(MemoryStore::new()).workflow(workflow).unwrap();
    http::serve(router(host, options)).await
}

/// Calls `method path` and checks the answer against the document's operation `template`:
/// its status is documented, and a JSON body matches the documented schema.
async fn call(
    addr: SocketAddr,
    doc: &Value,
    method: &str,
    template: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value, String) {
    let body = body.map(|body| body.to_string());
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        http::Client::new(addr).call(method, path, body.as_deref(), &[]),
    )
    .await
    .expect("the answer ends");
    let operation = &doc["paths"][template][method.to_lowercase()];
    assert!(
        operation.is_object(),
        "{method} {template} is not documented"
    );
    let documented = &operation["responses"][answer.status.to_string()];
    assert!(
        documented.is_object(),
        "{method} {path}: {} is not documented: {}",
        answer.status,
        answer.body
    );
    let content_type = answer.header("content-type").unwrap_or_default().to_owned();
    if content_type.starts_with("text/event-stream") {
        assert!(documented["content"]["text/event-stream"].is_object());
        return (answer.status, Value::Null, answer.body);
    }
    let json: Value = serde_json::from_str(answer.body.trim()).unwrap();
    let schema = &documented["content"]["application/json"]["schema"];
    let mut root = json!({ "components": doc["components"].clone() });
    match schema.get("$ref") {
        Some(reference) => root["$ref"] = reference.clone(),
        None => root = schema.clone(),
    }
    let validator = jsonschema::draft202012::new(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{method} {path}: {errors:?}\n{json:#}");
    (answer.status, json, answer.body)
}

/// The `data:` payloads of an SSE body that are JSON.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_as_documented() {
    let addr = serve(Duration::ZERO).await;
    let doc = http::Client::new(addr).get("/openapi.json").await.json();
    let (status, first, _) = call(
        addr,
        &doc,
        "POST",
        "/v1/responses",
        "/v1/responses",
        Some(json!({ "model": "chat", "input": "Hi" })),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(first["status"], "completed");
    assert_eq!(first["output"][0]["content"][0]["text"], "echo: Hi");
    let id = first["id"].as_str().unwrap().to_owned();

    let (status, _, streamed) = call(
        addr,
        &doc,
        "POST",
        "/v1/responses",
        "/v1/responses",
        Some(json!({ "model": "chat", "input": "Again", "previous_response_id": id, "stream": true })),
    )
    .await;
    assert_eq!(status, 200);
    let streamed = events(&streamed);
    let last = streamed.last().unwrap();
    assert_eq!(last["type"], "response.completed");
    assert_eq!(
        last["response"]["output"][0]["content"][0]["text"],
        "echo: Again"
    );
    assert!(
        streamed
            .last()
            .is_some_and(|e| e["sequence_number"] == streamed.len() - 1)
    );
    let second = last["response"]["id"].as_str().unwrap().to_owned();

    let (_, read, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/responses/{id}",
        &format!("/v1/responses/{second}"),
        None,
    )
    .await;
    assert_eq!(read, last["response"]);
    let (_, _, replayed) = call(
        addr,
        &doc,
        "GET",
        "/v1/responses/{id}",
        &format!("/v1/responses/{second}?stream=true&starting_after=3"),
        None,
    )
    .await;
    assert_eq!(events(&replayed), streamed[4..]);
    let (_, items, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/responses/{id}/input_items",
        &format!("/v1/responses/{second}/input_items"),
        None,
    )
    .await;
    assert_eq!(items["data"][0]["content"][0]["text"], "Again");
    let (status, ended, _) = call(
        addr,
        &doc,
        "POST",
        "/v1/responses/{id}/cancel",
        &format!("/v1/responses/{second}/cancel"),
        None,
    )
    .await;
    assert_eq!(
        (status, &ended["status"]),
        (200, &json!("completed")),
        "an ended response stays as it ended"
    );

    // Conversations: made, started by a response, read, listed, deleted.
    let (_, made, _) = call(
        addr,
        &doc,
        "POST",
        "/v1/conversations",
        "/v1/conversations",
        Some(json!({})),
    )
    .await;
    let conversation = made["id"].as_str().unwrap().to_owned();
    let (status, _, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/conversations/{id}",
        &format!("/v1/conversations/{conversation}"),
        None,
    )
    .await;
    assert_eq!(
        status, 200,
        "a made conversation reads back before its first response"
    );
    let (status, empty, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/conversations/{id}/items",
        &format!("/v1/conversations/{conversation}/items"),
        None,
    )
    .await;
    assert_eq!((status, &empty["data"]), (200, &json!([])));
    let (status, _, _) = call(
        addr,
        &doc,
        "POST",
        "/v1/responses",
        "/v1/responses",
        Some(json!({ "model": "chat", "input": "Hi", "conversation": conversation })),
    )
    .await;
    assert_eq!(status, 200);
    let (_, read, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/conversations/{id}",
        &format!("/v1/conversations/{conversation}"),
        None,
    )
    .await;
    assert_eq!(read["id"], conversation.as_str());
    let (_, items, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/conversations/{id}/items",
        &format!("/v1/conversations/{conversation}/items?order=asc"),
        None,
    )
    .await;
    assert_eq!(items["data"].as_array().unwrap().len(), 2, "{items}");
    let (status, _, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/conversations/{id}/items",
        &format!("/v1/conversations/{conversation}/items?limit=0"),
        None,
    )
    .await;
    assert_eq!(status, 400);
    let (_, deleted, _) = call(
        addr,
        &doc,
        "DELETE",
        "/v1/conversations/{id}",
        &format!("/v1/conversations/{conversation}"),
        None,
    )
    .await;
    assert_eq!(deleted["deleted"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_come_in_the_specification_shape_naming_the_parameter() {
    let addr = serve(Duration::ZERO).await;
    let doc = http::Client::new(addr).get("/openapi.json").await.json();
    let post = |body: Value| {
        let doc = doc.clone();
        async move {
            call(
                addr,
                &doc,
                "POST",
                "/v1/responses",
                "/v1/responses",
                Some(body),
            )
            .await
        }
    };
    let (status, unknown, _) = post(json!({ "model": "nope", "input": "Hi" })).await;
    assert_eq!(status, 404);
    assert_eq!(unknown["error"]["type"], "not_found");
    assert_eq!(unknown["error"]["param"], "model");
    assert_eq!(unknown["error"]["code"], "model_not_found");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("chat")
    );
    for (body, param) in [
        (
            json!({ "model": "chat", "input": "Hi", "tools": [{ "type": "function", "name": "f" }] }),
            "tools",
        ),
        (
            json!({ "model": "chat", "input": "Hi", "store": false, "background": true }),
            "store",
        ),
        (json!({ "model": "chat", "input": "" }), "input"),
        (
            json!({ "model": "chat", "input": [{ "type": "function_call_output", "call_id": "c", "output": "1" }] }),
            "input",
        ),
        (
            json!({ "model": "chat", "input": "Hi", "conversation": "a", "previous_response_id": "resp_0_a" }),
            "conversation",
        ),
    ] {
        let (status, error, _) = post(body.clone()).await;
        assert_eq!(
            (status, &error["error"]["param"]),
            (400, &json!(param)),
            "{body}"
        );
        assert_eq!(error["error"]["type"], "invalid_request_error");
    }
    for missing in ["resp_0_nobody", "resp_x", "msg_1"] {
        let (status, error, _) = call(
            addr,
            &doc,
            "GET",
            "/v1/responses/{id}",
            &format!("/v1/responses/{missing}"),
            None,
        )
        .await;
        assert_eq!(status, 404, "{missing}: {error}");
    }
    // `store: false`: answered once, then not kept for this API (the log has its turn).
    let (status, unstored, _) =
        post(json!({ "model": "chat", "input": "Once", "store": false })).await;
    assert_eq!(
        (status, &unstored["store"]),
        (200, &json!(false)),
        "{unstored}"
    );
    let id = unstored["id"].as_str().unwrap();
    let path = format!("/v1/responses/{id}");
    let (status, error, _) = call(addr, &doc, "GET", "/v1/responses/{id}", &path, None).await;
    assert_eq!(status, 404, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("store: false"),
        "{error}"
    );
    let (status, _, _) =
        post(json!({ "model": "chat", "input": "Again", "previous_response_id": id })).await;
    assert_eq!(status, 404);
    // Frontend tools are for `/v1` agents: a workflow of its own code refuses them.
    let run = json!({ "threadId": "t-tools", "runId": "r", "tools": [{ "name": "f" }],
        "messages": [{ "id": "u", "role": "user", "content": "x" }] });
    let (status, error, _) = call(
        addr,
        &doc,
        "POST",
        "/ag-ui/{workflow}",
        "/ag-ui/chat",
        Some(run),
    )
    .await;
    assert_eq!(status, 400, "{error}");
    assert!(
        error["error"]["message"].as_str().unwrap().contains("/v1"),
        "{error}"
    );
    // A position inside a turn is no response.
    let (_, first, _) = post(json!({ "model": "chat", "input": "Hi" })).await;
    let session = first["conversation"]["id"].as_str().unwrap();
    let (status, error, _) = call(
        addr,
        &doc,
        "GET",
        "/v1/responses/{id}",
        &format!("/v1/responses/resp_3_{session}"),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not where a response starts")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_queued_behind_a_running_turn_gets_the_response_of_the_turn_that_answers_it() {
    let addr = serve(Duration::from_millis(400)).await;
    let client = http::Client::new(addr);
    let first = client
        .post(
            "/v1/responses",
            &json!({ "model": "chat", "input": "one", "background": true }),
        )
        .await
        .json();
    assert_eq!(first["status"], "in_progress");
    let session = first["conversation"]["id"].as_str().unwrap().to_owned();
    let queued = client
        .call(
            "POST",
            "/v1/responses",
            Some(&json!({ "model": "chat", "input": "two", "conversation": session }).to_string()),
            &[("x-openharness-on-busy", "enqueue")],
        )
        .await;
    assert_eq!(queued.status, 200, "{}", queued.body);
    let queued: Value = serde_json::from_str(queued.body.trim()).unwrap();
    assert_eq!(queued["status"], "completed");
    assert_eq!(queued["output"][0]["content"][0]["text"], "echo: two");
    // Its id names the `input:queued` event, and reads back as the turn that answered it.
    let id = queued["id"].as_str().unwrap();
    let page = client
        .get(&format!("/sessions/{session}/events?limit=100"))
        .await
        .json();
    let seq: u64 = id
        .strip_prefix("resp_")
        .unwrap()
        .split('_')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(page["events"][seq as usize]["name"], "input:queued");
    let read = client.get(&format!("/v1/responses/{id}")).await.json();
    assert_eq!(read, queued);
    let first = client
        .get(&format!("/v1/responses/{}", first["id"].as_str().unwrap()))
        .await
        .json();
    assert_eq!(first["output"][0]["content"][0]["text"], "echo: one");
}

/// Every position of `session` that starts a response: read whole, then resumed after each of
/// its sequence numbers, each resumed read is exactly the rest of the whole one (0 lost, 0
/// repeated), and the streamed resource is the one read back. Returns how many responses.
async fn every_response_resumes_exactly(client: &http::Client, session: &str) -> usize {
    let len = client.get(&format!("/sessions/{session}")).await.json()["len"]
        .as_u64()
        .unwrap();
    let mut responses = 0;
    for seq in 0..len {
        let id = format!("resp_{seq}_{session}");
        let read = client.get(&format!("/v1/responses/{id}")).await;
        if read.status == 404 {
            continue;
        }
        assert_eq!(read.status, 200, "{id}: {}", read.body);
        responses += 1;
        let resource = read.json();
        let whole = events(
            &client
                .get(&format!("/v1/responses/{id}?stream=true"))
                .await
                .body,
        );
        assert_eq!(whole.last().unwrap()["response"], resource, "{id}");
        for (n, event) in whole.iter().enumerate() {
            assert_eq!(event["sequence_number"], n, "{id}");
            let rest = events(
                &client
                    .get(&format!(
                        "/v1/responses/{id}?stream=true&starting_after={n}"
                    ))
                    .await
                    .body,
            );
            assert_eq!(rest, whole[n + 1..], "{id} resumed after {n}");
        }
    }
    responses
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_of_a_recorded_demo_a_chat_and_its_fork_resumes_at_every_sequence_number() {
    let store = MemoryStore::new();
    let demo = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/verify-demo.jsonl"
    ))
    .unwrap();
    openharness_store::jsonl::import(&store, demo.as_slice())
        .await
        .unwrap();
    let provider = ScriptedProvider::new().fallback("assistant", |request| {
        let output = json!({ "reply": format!("echo: {}", request.prompt) });
        Reply::output(output.clone()).text(output.to_string())
    });
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(store).workflow(workflow).unwrap();
    let client = http::Client::new(http::serve(router(host, ServerOptions::default())).await);

    // The recorded planner-executor demo (73 events, not served here: read only).
    let demo = "01a24c00-cec0-7333-be6f-d3045edc9b7e";
    let demo_responses = every_response_resumes_exactly(&client, demo).await;
    assert!(demo_responses >= 2, "{demo_responses}");

    // A three-turn chat, and a fork of it made by continuing its first response.
    let first = client
        .post("/v1/responses", &json!({ "model": "chat", "input": "one" }))
        .await
        .json();
    let mut previous = first["id"].clone();
    for text in ["two", "three"] {
        let next = client
            .post(
                "/v1/responses",
                &json!({ "model": "chat", "input": text, "previous_response_id": previous }),
            )
            .await
            .json();
        previous = next["id"].clone();
    }
    let fork = client
        .post(
            "/v1/responses",
            &json!({ "model": "chat", "input": "two again", "previous_response_id": first["id"] }),
        )
        .await
        .json();
    assert_eq!(fork["output"][0]["content"][0]["text"], "echo: two again");
    let chat = first["conversation"]["id"].as_str().unwrap();
    let forked = fork["conversation"]["id"].as_str().unwrap();
    assert_ne!(chat, forked);
    assert!(every_response_resumes_exactly(&client, chat).await >= 3);
    assert!(every_response_resumes_exactly(&client, forked).await >= 1);
}

/// A thread's AG-UI stream (`GET /ag-ui/{workflow}/{thread}/events`) read whole, then resumed
/// after each of its frames (by `Last-Event-ID`): each resumed read is exactly the rest of the
/// whole one. Returns how many frames.
async fn every_ag_ui_frame_resumes_exactly(
    client: &http::Client,
    workflow: &str,
    thread: &str,
) -> usize {
    let path = format!("/ag-ui/{workflow}/{thread}/events");
    let frames = |body: &str| -> Vec<(String, Value)> {
        body.split("\n\n")
            .filter_map(|block| {
                let id = block.lines().find_map(|l| l.strip_prefix("id: "))?;
                let data = block.lines().find_map(|l| l.strip_prefix("data: "))?;
                Some((id.to_owned(), serde_json::from_str(data).unwrap()))
            })
            .collect()
    };
    let whole = frames(&client.get(&path).await.body);
    assert!(!whole.is_empty(), "{thread}");
    assert_eq!(whole[0].1["type"], "RUN_STARTED");
    assert_eq!(whole.last().unwrap().1["type"], "RUN_FINISHED");
    for (n, (id, _)) in whole.iter().enumerate() {
        let resumed = client
            .call("GET", &path, None, &[("last-event-id", id)])
            .await;
        assert_eq!(frames(&resumed.body), whole[n + 1..], "{thread} after {id}");
    }
    whole.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ag_ui_frame_of_a_recorded_demo_a_chat_and_its_fork_resumes_exactly() {
    let store = MemoryStore::new();
    let demo = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/verify-demo.jsonl"
    ))
    .unwrap();
    openharness_store::jsonl::import(&store, demo.as_slice())
        .await
        .unwrap();
    let provider = ScriptedProvider::new().fallback("assistant", |request| {
        let output = json!({ "reply": format!("echo: {}", request.prompt) });
        Reply::output(output.clone()).text(output.to_string())
    });
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(store).workflow(workflow).unwrap();
    let client = http::Client::new(http::serve(router(host, ServerOptions::default())).await);

    // The recorded planner-executor demo (73 events; not served here, so no state events).
    let demo = "01a24c00-cec0-7333-be6f-d3045edc9b7e";
    let demo_frames = every_ag_ui_frame_resumes_exactly(&client, "planner-executor", demo).await;

    // A chat of three runs through AG-UI, and a fork of it after its first run.
    let thread = "ag-ui-thread-1";
    let mut messages = Vec::new();
    for (n, text) in ["one", "two", "three"].into_iter().enumerate() {
        messages.push(json!({ "id": format!("u{n}"), "role": "user", "content": text }));
        let run = client
            .post(
                "/ag-ui/chat",
                &json!({ "threadId": thread, "runId": format!("r{n}"), "messages": messages }),
            )
            .await;
        assert_eq!(run.status, 200, "{}", run.body);
        assert!(run.body.contains("RUN_FINISHED"), "{}", run.body);
    }
    let recorded = client
        .get(&format!("/sessions/{thread}/events?limit=100"))
        .await
        .json();
    let first_end = recorded["events"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["name"] == "workflow:completed")
        .unwrap();
    let fork = client
        .post(
            &format!("/sessions/{thread}/fork"),
            &json!({ "at": "position", "position": first_end + 1, "input": "two again" }),
        )
        .await
        .json();
    let forked = fork["session"].as_str().unwrap().to_owned();
    openharness_testkit::eventually(Duration::from_secs(10), "the fork's turn ends", || {
        let client = &client;
        let forked = &forked;
        async move {
            let summary = client.get(&format!("/sessions/{forked}")).await.json();
            if summary["status"] == "idle" && summary["runningHere"] == false {
                Ok(())
            } else {
                Err(summary)
            }
        }
    })
    .await;
    let chat_frames = every_ag_ui_frame_resumes_exactly(&client, "chat", thread).await;
    let fork_frames = every_ag_ui_frame_resumes_exactly(&client, "chat", &forked).await;
    println!(
        "AG-UI frames resumed exactly after each one: demo {demo_frames}, chat {chat_frames}, fork {fork_frames}"
    );
    // A fork shows the conversation it inherits: its AG-UI snapshot and its conversation items
    // start with the parent's first turn.
    let texts = |messages: &Value, field: &str| -> Vec<String> {
        messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| match &m[field] {
                Value::String(text) => text.clone(),
                other => other[0]["text"].as_str().unwrap_or_default().to_owned(),
            })
            .collect()
    };
    let fork_stream = client
        .get(&format!("/ag-ui/chat/{forked}/events"))
        .await
        .body;
    let snapshot = events(&fork_stream)
        .into_iter()
        .rfind(|e| e["type"] == "MESSAGES_SNAPSHOT")
        .unwrap();
    assert_eq!(
        texts(&snapshot["messages"], "content"),
        ["one", "echo: one", "two again", "echo: two again"]
    );
    let items = client
        .get(&format!("/v1/conversations/{forked}/items?order=asc"))
        .await
        .json();
    assert_eq!(
        texts(&items["data"], "content"),
        ["one", "echo: one", "two again", "echo: two again"]
    );

    // The chat's stream carries the state the handlers fold.
    let whole = client
        .get(&format!("/ag-ui/chat/{thread}/events"))
        .await
        .body;
    assert!(whole.contains("STATE_DELTA"), "{whole}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_that_waits_for_its_turn_keeps_the_connection_written_to() {
    // A heartbeat far shorter than the turn: spaces come before the JSON, which still parses.
    let options = ServerOptions::default().heartbeat(Duration::from_millis(50));
    let addr = serve_with(Duration::from_millis(600), options).await;
    let answer = http::Client::new(addr)
        .post("/v1/responses", &json!({ "model": "chat", "input": "Hi" }))
        .await;
    assert_eq!(answer.status, 200);
    let spaces = answer.body.len() - answer.body.trim_start().len();
    assert!(spaces >= 3, "{spaces} spaces before the JSON");
    let response: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], "echo: Hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_queued_behind_another_turn_cannot_be_cancelled_before_it_starts() {
    let addr = serve(Duration::from_millis(800)).await;
    let client = http::Client::new(addr);
    let first = client
        .post(
            "/v1/responses",
            &json!({ "model": "chat", "input": "one", "background": true }),
        )
        .await
        .json();
    let session = first["conversation"]["id"].as_str().unwrap().to_owned();
    let queued = client
        .call(
            "POST",
            "/v1/responses",
            Some(
                &json!({ "model": "chat", "input": "two", "conversation": session, "background": true })
                    .to_string(),
            ),
            &[("x-openharness-on-busy", "enqueue")],
        )
        .await;
    let queued: Value = serde_json::from_str(queued.body.trim()).unwrap();
    assert_eq!(queued["status"], "in_progress");
    let refused = client
        .post(
            &format!("/v1/responses/{}/cancel", queued["id"].as_str().unwrap()),
            &json!({}),
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.body);
    assert_eq!(refused.json()["error"]["code"], "response_queued");
    // The running one can be: it ends cancelled, and the queued one is still answered.
    let cancelled = client
        .post(
            &format!("/v1/responses/{}/cancel", first["id"].as_str().unwrap()),
            &json!({}),
        )
        .await
        .json();
    assert_eq!(cancelled["status"], "incomplete");
    let id = queued["id"].as_str().unwrap().to_owned();
    openharness_testkit::eventually(Duration::from_secs(10), "the queued response ends", || {
        let client = &client;
        let id = &id;
        async move {
            let read = client.get(&format!("/v1/responses/{id}")).await.json();
            if read["status"] == "completed" {
                Ok(read)
            } else {
                Err(read)
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_continued_from_an_older_one_is_a_fork_that_reads_back_as_requested() {
    let client = http::Client::new(serve(Duration::ZERO).await);
    let post = |body: Value| {
        let client = client.clone();
        async move {
            let answer = client.post("/v1/responses", &body).await;
            assert_eq!(answer.status, 200, "{}", answer.body);
            serde_json::from_str::<Value>(answer.body.trim()).unwrap()
        }
    };
    let first = post(json!({ "model": "chat", "input": "one" })).await;
    let second =
        post(json!({ "model": "chat", "input": "two", "previous_response_id": first["id"] })).await;
    assert_eq!(second["conversation"], first["conversation"]);
    // From the first again: the session has moved on, so this runs in a fork.
    let forked = post(
        json!({ "model": "chat", "input": "two, again", "previous_response_id": first["id"],
        "instructions": "Be brief.", "metadata": { "try": "2" } }),
    )
    .await;
    assert_ne!(forked["conversation"], first["conversation"]);
    assert_eq!(forked["status"], "completed", "{forked}");
    // Read back, it is the response the request made: what it continued and what it echoed.
    let read = client
        .get(&format!("/v1/responses/{}", forked["id"].as_str().unwrap()))
        .await
        .json();
    for field in [
        "previous_response_id",
        "instructions",
        "metadata",
        "model",
        "output",
    ] {
        assert_eq!(read[field], forked[field], "{field}: {read}");
    }
    assert_eq!(read["previous_response_id"], first["id"]);
    let session = forked["conversation"]["id"].as_str().unwrap();
    let events = client
        .get(&format!("/sessions/{session}/events?limit=100"))
        .await
        .json();
    let input = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "user:input")
        .unwrap()
        .clone();
    assert_eq!(input["payload"]["text"], "two, again");
    assert_eq!(input["payload"]["via"], "open-responses", "{input}");
}
