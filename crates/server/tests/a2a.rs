//! A2A (`/a2a/{workflow}`) in process: the cards and the JSON-RPC endpoint answer as
//! `GET /openapi.json` documents them, refusals carry the specification's error codes, and
//! every task of a recorded demo, of a chat and of its fork resumes after every frame with
//! exactly the rest of a whole read. The official SDKs' flows run in
//! `crates/cli/tests/a2a_sdk.rs` and `packages/e2e/test/a2a.test.ts`.
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

/// A host of `chat` over `store`, whose model streams `{"reply": "echo: <prompt>"}`.
fn host(store: MemoryStore) -> Host {
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
    Host::new(store).workflow(workflow).unwrap()
}

async fn serve(store: MemoryStore) -> SocketAddr {
    http::serve(router(host(store), ServerOptions::default())).await
}

/// One SSE frame: its `id:` and its `data:` as JSON.
#[derive(Debug, Clone, PartialEq)]
struct Frame {
    id: Option<String>,
    data: Value,
}

/// The frames of an SSE body (comments and `retry:` left out).
fn frames(body: &str) -> Vec<Frame> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(value).unwrap());
                }
            }
            Some(Frame { id, data: data? })
        })
        .collect()
}

/// `method` with `params` on `/a2a/chat`, with `A2A-Version: 1.0` and `headers`.
async fn rpc(
    client: &http::Client,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> http::Response {
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
    let mut all = vec![("a2a-version", "1.0")];
    all.extend_from_slice(headers);
    tokio::time::timeout(
        Duration::from_secs(20),
        client.call("POST", "/a2a/chat", Some(&body.to_string()), &all),
    )
    .await
    .expect("the answer ends")
}

/// The `result` of a JSON-RPC answer (a panic showing the error otherwise).
fn result(answer: &http::Response) -> Value {
    let body: Value = serde_json::from_str(answer.body.trim()).unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], 7);
    assert!(body.get("error").is_none(), "{body}");
    body["result"].clone()
}

/// The `error.code` of a JSON-RPC answer.
fn code(answer: &http::Response) -> i64 {
    let body: Value = serde_json::from_str(answer.body.trim()).unwrap();
    assert_eq!(answer.status, 200, "{}", answer.body);
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {body}"))
}

fn message(text: &str, extra: Value) -> Value {
    let mut message = json!({ "messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{ "text": text }] });
    if let (Value::Object(message), Value::Object(extra)) = (&mut message, extra) {
        message.extend(extra);
    }
    json!({ "message": message })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_routes_answer_as_documented_with_the_specification_codes() {
    let client = http::Client::new(serve(MemoryStore::new()).await);
    let doc = client.get("/openapi.json").await.json();
    let documented = |template: &str, method: &str, status: u16| {
        assert!(
            doc["paths"][template][method]["responses"][status.to_string()].is_object(),
            "{method} {template} {status} is not documented"
        );
    };
    // The cards: the only workflow is the default one.
    for path in [
        "/a2a/chat/.well-known/agent-card.json",
        "/.well-known/agent-card.json",
    ] {
        let card = client.get(path).await;
        assert_eq!(card.status, 200, "{path}");
        assert!(card.header("cache-control").unwrap().contains("max-age"));
        let card = card.json();
        assert_eq!(card["name"], "chat");
        let url = card["supportedInterfaces"][0]["url"].as_str().unwrap();
        assert!(
            url.starts_with("http://127.0.0.1:") && url.ends_with("/a2a/chat"),
            "{url}"
        );
    }
    documented("/a2a/{target}/.well-known/agent-card.json", "get", 200);
    documented("/.well-known/agent-card.json", "get", 200);
    let missing = client.get("/a2a/nope/.well-known/agent-card.json").await;
    assert_eq!(missing.status, 404);
    documented("/a2a/{target}/.well-known/agent-card.json", "get", 404);

    // A blocking send: the task, over, with the reply as an artifact.
    let task =
        result(&rpc(&client, "SendMessage", message("hi", json!({})), &[]).await)["task"].clone();
    documented("/a2a/{target}", "post", 200);
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "echo: hi");
    assert_eq!(task["history"][0]["messageId"], "m-hi");
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();
    // Read back; the history trimmed.
    let read = result(
        &rpc(
            &client,
            "GetTask",
            json!({ "id": id, "historyLength": 0 }),
            &[],
        )
        .await,
    );
    assert_eq!(read["artifacts"], task["artifacts"]);
    assert_eq!(read["history"], json!([]));
    // A streamed send in the same context: every frame has the request's id and a frame id.
    let streamed = rpc(
        &client,
        "SendStreamingMessage",
        message("again", json!({ "contextId": context })),
        &[],
    )
    .await;
    assert!(
        streamed
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let streamed = frames(&streamed.body);
    assert!(streamed.iter().all(|f| f.data["id"] == 7 && f.id.is_some()));
    assert_eq!(streamed[0].data["result"]["task"]["contextId"], context);
    let last = &streamed.last().unwrap().data["result"]["statusUpdate"];
    assert_eq!(last["status"]["state"], "TASK_STATE_COMPLETED");

    // The same message sent again (a client that lost the answer) records nothing and
    // answers the same task, blocking or streamed.
    let len = client.get(&format!("/sessions/{context}")).await.json()["len"].clone();
    let again = rpc(
        &client,
        "SendMessage",
        message("again", json!({ "contextId": context })),
        &[],
    )
    .await;
    assert_eq!(result(&again)["task"]["id"], last["taskId"]);
    let again = rpc(
        &client,
        "SendStreamingMessage",
        message("again", json!({ "contextId": context })),
        &[],
    )
    .await;
    let again = frames(&again.body);
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].data["result"]["task"]["id"], last["taskId"]);
    assert_eq!(
        client.get(&format!("/sessions/{context}")).await.json()["len"],
        len
    );

    // Its tasks, newest first: the streamed one, then the first.
    let listed = result(&rpc(&client, "ListTasks", json!({ "contextId": context }), &[]).await);
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    let streamed_id = last["taskId"].as_str().unwrap();
    assert_eq!(ids, [streamed_id, id]);
    assert_eq!(listed["totalSize"], 2);
    assert_eq!(listed["nextPageToken"], "");
    assert!(listed["tasks"][0].get("artifacts").is_none());
    let paged = result(
        &rpc(
            &client,
            "ListTasks",
            json!({ "pageSize": 1, "includeArtifacts": true, "status": "TASK_STATE_COMPLETED" }),
            &[],
        )
        .await,
    );
    assert_eq!(paged["tasks"][0]["id"], streamed_id);
    assert_eq!(
        paged["tasks"][0]["artifacts"][0]["parts"][0]["text"],
        "echo: again"
    );
    assert_eq!(paged["nextPageToken"], "1");
    let rest = result(
        &rpc(
            &client,
            "ListTasks",
            json!({ "pageSize": 1, "pageToken": "1" }),
            &[],
        )
        .await,
    );
    assert_eq!(rest["tasks"][0]["id"], id);

    // Refusals, each with its code.
    let refusals = [
        ("GetTask", json!({ "id": "task_99_nowhere" }), -32001),
        ("GetTask", json!({}), -32602),
        ("CancelTask", json!({ "id": id }), -32002),
        ("SubscribeToTask", json!({ "id": id }), -32004),
        (
            "SendMessage",
            message("more", json!({ "taskId": id })),
            -32004,
        ),
        (
            "SendMessage",
            message("x", json!({ "taskId": id, "contextId": "other" })),
            -32602,
        ),
        (
            "SendMessage",
            json!({ "message": { "role": "ROLE_USER", "parts": [] } }),
            -32602,
        ),
        ("ListTasks", json!({ "status": "TASK_STATE_DONE" }), -32602),
        ("GetExtendedAgentCard", json!({}), -32007),
        ("CreateTaskPushNotificationConfig", json!({}), -32003),
        ("message/send", json!({}), -32601),
    ];
    for (method, params, expected) in refusals {
        let answer = rpc(&client, method, params.clone(), &[]).await;
        assert_eq!(
            code(&answer),
            expected,
            "{method} {params}: {}",
            answer.body
        );
    }
    let get = json!({ "jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": { "id": id } })
        .to_string();
    for version in [&[("a2a-version", "0.3")][..], &[]] {
        let old = client.call("POST", "/a2a/chat", Some(&get), version).await;
        assert_eq!(code(&old), -32009, "{version:?}");
    }
    let unreadable = client
        .call("POST", "/a2a/chat", Some("{"), &[("a2a-version", "1.0")])
        .await;
    assert_eq!(code(&unreadable), -32700);
    let nowhere = client
        .call("POST", "/a2a/nope", Some("{}"), &[("a2a-version", "1.0")])
        .await;
    assert_eq!(nowhere.status, 404);
    documented("/a2a/{target}", "post", 404);
}

/// The frames of `SubscribeToTask` of task `id` after the frame `after`.
async fn subscribe(client: &http::Client, id: &str, after: &str) -> Vec<Frame> {
    let answer = rpc(
        client,
        "SubscribeToTask",
        json!({ "id": id }),
        &[("last-event-id", after)],
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    frames(&answer.body)
}

/// Every position of `session` that starts a task: read whole (from before its first frame),
/// then resumed after each frame, each resumed read is exactly the rest of the whole one (0
/// lost, 0 repeated); a whole read of a task that is over ends as `GetTask` reads it, and a
/// read after its last frame is empty. Returns how many tasks.
async fn every_task_resumes_exactly(client: &http::Client, session: &str) -> usize {
    let len = client.get(&format!("/sessions/{session}")).await.json()["len"]
        .as_u64()
        .unwrap();
    let mut tasks = 0;
    for seq in 0..len {
        let id = format!("task_{seq}_{session}");
        let read = rpc(client, "GetTask", json!({ "id": id }), &[]).await;
        let body: Value = serde_json::from_str(read.body.trim()).unwrap();
        if body["error"]["code"] == -32001 {
            continue;
        }
        let task = result(&read);
        tasks += 1;
        let whole = subscribe(client, &id, &format!("{seq}.0")).await;
        assert!(!whole.is_empty(), "{id}");
        assert!(
            whole[0].data["result"]["task"].is_object(),
            "{id}: {:?}",
            whole[0]
        );
        let end = &whole.last().unwrap().data["result"]["statusUpdate"]["status"];
        let state = end["state"].as_str().unwrap();
        assert!(
            [
                "TASK_STATE_COMPLETED",
                "TASK_STATE_INPUT_REQUIRED",
                "TASK_STATE_CANCELED",
                "TASK_STATE_FAILED"
            ]
            .contains(&state),
            "{id} ends {state}"
        );
        if state != "TASK_STATE_INPUT_REQUIRED" {
            assert_eq!(*end, task["status"], "{id}");
        }
        for (n, frame) in whole.iter().enumerate() {
            let after = frame.id.clone().unwrap();
            if n + 1 == whole.len() && state == "TASK_STATE_INPUT_REQUIRED" {
                // After the question, a resumed stream waits for the answer: not read here.
                continue;
            }
            let rest = subscribe(client, &id, &after).await;
            assert_eq!(rest, whole[n + 1..], "{id} resumed after {after}");
        }
    }
    tasks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_of_a_recorded_demo_a_chat_and_its_fork_resumes_after_every_frame() {
    let store = MemoryStore::new();
    let demo = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/verify-demo.jsonl"
    ))
    .unwrap();
    openharness_store::jsonl::import(&store, demo.as_slice())
        .await
        .unwrap();
    let client = http::Client::new(serve(store).await);

    // The recorded planner-executor demo (73 events, not served here: read only), whose
    // question was answered in the same task.
    let demo = "01a24c00-cec0-7333-be6f-d3045edc9b7e";
    let demo_tasks = every_task_resumes_exactly(&client, demo).await;
    assert!(demo_tasks >= 2, "{demo_tasks}");

    // A three-turn chat, and a fork of it after its first turn, continued by A2A.
    let first = result(&rpc(&client, "SendMessage", message("one", json!({})), &[]).await);
    let chat = first["task"]["contextId"].as_str().unwrap().to_owned();
    for text in ["two", "three"] {
        let next = rpc(
            &client,
            "SendMessage",
            message(text, json!({ "contextId": chat })),
            &[],
        )
        .await;
        assert_eq!(
            result(&next)["task"]["status"]["state"],
            "TASK_STATE_COMPLETED"
        );
    }
    let events = client
        .get(&format!("/sessions/{chat}/events?limit=1000"))
        .await
        .json();
    let after_first = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["name"] == "workflow:completed")
        .unwrap()
        + 1;
    let fork = client
        .post(
            &format!("/sessions/{chat}/fork"),
            &json!({ "at": "position", "position": after_first }),
        )
        .await
        .json();
    let forked = fork["session"].as_str().unwrap().to_owned();
    for _ in 0..200 {
        if client.get(&format!("/sessions/{forked}")).await.json()["status"] != "running" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let in_fork = rpc(
        &client,
        "SendMessage",
        message("two again", json!({ "contextId": forked })),
        &[],
    )
    .await;
    let in_fork = result(&in_fork)["task"].clone();
    assert_eq!(
        in_fork["artifacts"][0]["parts"][0]["text"],
        "echo: two again"
    );
    assert!(every_task_resumes_exactly(&client, &chat).await >= 3);
    assert!(every_task_resumes_exactly(&client, &forked).await >= 1);
}
