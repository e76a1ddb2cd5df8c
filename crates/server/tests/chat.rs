//! `POST /api/chat` speaks the AI SDK 5 UI message stream that `useChat` parses (pinned chunk by
//! chunk: text, a tool call, a structured output, an error), and `GET /api/chat/{id}/stream`
//! replays a running turn from its start or answers 204.
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
    InputReceived,
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
    fn replied(&mut self, reply: &AssistantReplied) -> Emit {
        self.lines.push(reply.text.clone());
        if reply.text.ends_with('?') {
            // "Publish?" asks a yes/no decision; any other question asks for text.
            if reply.text == "Publish?" {
                return Emit::one(InputRequested::approval(reply.text.clone()));
            }
            return Emit::one(InputRequested::new(reply.text.clone()));
        }
        Emit::none()
    }
    fn answered(&mut self, answer: &InputReceived) {
        self.lines.push(format!("answer: {}", answer.text));
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    reply: String,
}

struct Assistant;

#[agent(output = Answer, emits = [AssistantReplied])]
impl Assistant {
    fn prompt(&self, _state: &Chat, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Answer, _input: &UserInput) -> AssistantReplied {
        AssistantReplied { text: out.reply }
    }
}

async fn serve(delay: Duration) -> SocketAddr {
    let provider = ScriptedProvider::new().fallback("assistant", move |request| {
        if request.prompt.contains("fail") {
            return Reply::error("the model is down");
        }
        if request.prompt.contains("json") {
            // A real model asked for structured output streams the JSON itself.
            let output = json!({ "reply": "Sunny,\nthen \"rain\" ☂" });
            return Reply::output(output.clone())
                .text(output.to_string())
                .delay(delay);
        }
        if request.prompt.contains("publish") {
            return Reply::output(json!({ "reply": "Publish?" }));
        }
        if request.prompt.contains("quiet") {
            return Reply::output(json!({ "reply": "Nothing streamed." }));
        }
        let mut reply = Reply::output(json!({ "reply": "Sunny." }));
        if request.prompt.contains("weather") {
            reply = reply.tool_call(
                "call_1",
                "weather",
                json!({ "city": "Lisbon" }),
                json!({ "sky": "clear" }),
            );
        }
        reply.text("It is sunny.").delay(delay)
    });
    serve_with(provider).await
}

/// A server hosting the chat workflow, asking `provider`.
async fn serve_with(provider: impl openharness::Provider) -> SocketAddr {
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(MemoryStore::new()).workflow(workflow).unwrap();
    http::serve(router(host, ServerOptions::default())).await
}

/// Sends a request and reads the whole answer: status, head, and the `data:` payloads.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String, Vec<String>) {
    exchange_with(addr, method, path, "", body).await
}

/// [`exchange`] with more header lines (each ending in `\r\n`).
async fn exchange_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String, Vec<String>) {
    let headers: Vec<(&str, &str)> = headers
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
        .collect();
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        http::Client::new(addr).call(method, path, Some(body), &headers),
    )
    .await
    .expect("the stream ends with the turn");
    let head: String = answer
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let data = answer
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data: ").or(line.strip_prefix("data:")))
        .map(|d| d.trim().to_owned())
        .collect();
    (answer.status, head.to_ascii_lowercase(), data)
}

fn chat_body(chat: &SessionId, text: &str) -> String {
    json!({
        "id": chat,
        "messages": [{ "id": "m1", "role": "user", "parts": [{ "type": "text", "text": text }] }],
        "trigger": "submit-message",
    })
    .to_string()
}

/// The chunks with generated ids replaced by stable placeholders.
fn stable(data: &[String]) -> Vec<Value> {
    let mut names = std::collections::HashMap::new();
    data.iter()
        .map(|d| {
            if d == "[DONE]" {
                return json!("[DONE]");
            }
            let mut chunk: Value = serde_json::from_str(d).unwrap();
            for key in ["messageId", "id"] {
                if let Some(id) = chunk.get(key).and_then(Value::as_str).map(str::to_owned) {
                    let n = names.len();
                    let name = names
                        .entry(id)
                        .or_insert_with(|| format!("<id {n}>"))
                        .clone();
                    chunk[key] = json!(name);
                }
            }
            chunk
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_is_a_ui_message_stream_usechat_can_parse() {
    let addr = serve(Duration::ZERO).await;
    let chat = SessionId::new();
    let (status, head, data) = exchange(
        addr,
        "POST",
        "/api/chat",
        &chat_body(&chat, "weather in Lisbon?"),
    )
    .await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("x-vercel-ai-ui-message-stream: v1"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    insta::assert_json_snapshot!("text_tool_output", stable(&data));

    // The same chat id continues the same session; a failing model is an `error` chunk.
    let (status, _, data) =
        exchange(addr, "POST", "/api/chat", &chat_body(&chat, "now fail")).await;
    assert_eq!(status, 200);
    insta::assert_json_snapshot!("error", stable(&data));

    // No turn runs now: resuming answers 204.
    let (status, _, data) = exchange(addr, "GET", &format!("/api/chat/{chat}/stream"), "").await;
    assert_eq!((status, data.len()), (204, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_running_chat_turn_replays_it_from_its_start() {
    let addr = serve(Duration::from_millis(400)).await;
    let chat = SessionId::new();
    let body = chat_body(&chat, "weather?");
    let posting = tokio::spawn(async move { exchange(addr, "POST", "/api/chat", &body).await });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let (status, _, resumed) = exchange(addr, "GET", &format!("/api/chat/{chat}/stream"), "").await;
    let (_, _, posted) = posting.await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        resumed, posted,
        "the resumed stream is the whole turn, from `start`"
    );
    assert_eq!(resumed.last().map(String::as_str), Some("[DONE]"));

    // Bad input: no user text, an unknown trigger.
    let empty = json!({ "id": chat, "messages": [], "trigger": "submit-message" }).to_string();
    let (status, _, _) = exchange(addr, "POST", "/api/chat", &empty).await;
    assert_eq!(status, 400);
    let unknown = chat_body(&chat, "x").replace("submit-message", "edit-message");
    let (status, _, _) = exchange(addr, "POST", "/api/chat", &unknown).await;
    assert_eq!(status, 400);
}

/// The concatenated `text-delta`s of a stream.
fn streamed_text(data: &[String]) -> String {
    data.iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|chunk| chunk["type"] == "text-delta")
        .map(|chunk| chunk["delta"].as_str().unwrap().to_owned())
        .collect()
}

/// The `messageId` of a stream's `start` chunk.
fn start_id(data: &[String]) -> String {
    data.iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|chunk| chunk["type"] == "start")
        .map(|chunk| chunk["messageId"].as_str().unwrap().to_owned())
        .unwrap()
}

async fn ui_messages(addr: SocketAddr, chat: &SessionId) -> Vec<Value> {
    let (status, _, _) = exchange(addr, "GET", &format!("/sessions/{chat}"), "").await;
    assert_eq!(status, 200);
    serde_json::from_value(get_json(addr, &format!("/sessions/{chat}/messages?shape=ui")).await)
        .unwrap()
}

async fn get_json(addr: SocketAddr, path: &str) -> Value {
    let answer = http::Client::new(addr).get(path).await;
    assert_eq!(answer.status, 200, "GET {path}: {}", answer.body);
    answer.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_streams_as_its_characters_never_as_json() {
    let addr = serve(Duration::ZERO).await;
    let chat = SessionId::new();
    let (status, _, data) =
        exchange(addr, "POST", "/api/chat", &chat_body(&chat, "json please")).await;
    assert_eq!(status, 200);
    assert_eq!(streamed_text(&data), "Sunny,\nthen \"rain\" ☂");
    for chunk in data
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
    {
        if chunk["type"] == "text-delta" {
            let delta = chunk["delta"].as_str().unwrap();
            assert!(
                !delta.contains('{') && !delta.contains("reply"),
                "JSON in a delta: {delta:?}"
            );
        }
    }

    // A model that streams nothing still gives the reply as a text part.
    let (_, _, data) = exchange(addr, "POST", "/api/chat", &chat_body(&chat, "quiet")).await;
    assert_eq!(streamed_text(&data), "Nothing streamed.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_ui_messages_have_the_streamed_ids_and_parts() {
    let addr = serve(Duration::ZERO).await;
    let chat = SessionId::new();
    let first = json!({ "id": chat, "trigger": "submit-message", "messages": [
        { "id": "client-1", "role": "user", "parts": [{ "type": "text", "text": "json please" }] }
    ] });
    let (_, _, streamed) = exchange(addr, "POST", "/api/chat", &first.to_string()).await;
    let messages = ui_messages(addr, &chat).await;
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert_eq!(messages[0]["id"], "client-1");
    assert_eq!(
        messages[0]["parts"],
        json!([{ "type": "text", "text": "json please" }])
    );
    assert_eq!(messages[1]["id"], start_id(&streamed));
    assert_eq!(messages[1]["role"], "assistant");
    let parts = messages[1]["parts"].as_array().unwrap();
    assert_eq!(parts[0], json!({ "type": "step-start" }));
    assert_eq!(
        parts[1],
        json!({ "type": "text", "text": "Sunny,\nthen \"rain\" ☂", "state": "done" })
    );
    assert_eq!(parts[2]["type"], "data-output");

    // regenerate: the newest user message again; the chat view replaces the answer.
    let regenerate = json!({ "id": chat, "trigger": "regenerate-message", "messageId": start_id(&streamed),
        "messages": [first["messages"][0]] });
    let (status, _, again) = exchange(addr, "POST", "/api/chat", &regenerate.to_string()).await;
    assert_eq!(status, 200);
    assert_eq!(streamed_text(&again), "Sunny,\nthen \"rain\" ☂");
    let messages = ui_messages(addr, &chat).await;
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["client-1", start_id(&again).as_str()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_message_to_a_waiting_session_answers_its_request() {
    let addr = serve(Duration::ZERO).await;
    let chat = SessionId::new();
    let (_, _, asked) = exchange(addr, "POST", "/api/chat", &chat_body(&chat, "publish it")).await;
    let request = asked
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|chunk| chunk["type"] == "data-input-requested")
        .expect("the request is streamed");
    assert_eq!(request["data"]["prompt"], "Publish?");

    // `sendMessage({text: "yes"})`: the answer, not a new turn with the goal "yes".
    let answer = json!({ "id": chat, "trigger": "submit-message", "messages": [
        { "id": "client-2", "role": "user", "parts": [{ "type": "text", "text": "yes" }] }
    ] });
    let (status, _, answered) = exchange(addr, "POST", "/api/chat", &answer.to_string()).await;
    assert_eq!(status, 200);
    assert_eq!(answered.last().map(String::as_str), Some("[DONE]"));
    let state = get_json(addr, &format!("/sessions/{chat}/state")).await;
    assert_eq!(
        state["state"]["lines"],
        json!(["publish it", "Publish?", "answer: yes"]),
        "{state}"
    );
    let summary = get_json(addr, &format!("/sessions/{chat}")).await;
    assert_eq!(summary["status"], "idle", "{summary}");
    let messages = ui_messages(addr, &chat).await;
    let ids: Vec<&str> = messages.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids[2], "client-2",
        "the answer keeps the client's id: {messages:#?}"
    );

    // Naming a request that is not open is refused, and records nothing.
    let wrong = json!({ "id": chat, "trigger": "submit-message", "messages": [
        { "id": "client-3", "role": "user", "parts": [{ "type": "text", "text": "no" }],
          "metadata": { "requestId": request["data"]["requestId"] } }
    ] });
    let (status, _, _) = exchange(addr, "POST", "/api/chat", &wrong.to_string()).await;
    assert_eq!(status, 409);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seeds_workflow_handler_streams_event_state_and_done_frames() {
    let addr = serve(Duration::ZERO).await;
    let frames = |data: Vec<String>| -> Vec<Value> {
        data.iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    };
    let (status, head, data) =
        exchange(addr, "POST", "/api/workflow", r#"{"input":"weather?"}"#).await;
    assert_eq!(status, 200, "{head}");
    let first = frames(data);
    let kinds: Vec<&str> = first.iter().map(|f| f["type"].as_str().unwrap()).collect();
    let events = kinds.iter().filter(|k| **k == "event").count();
    assert_eq!(&kinds[events..], ["state", "done"], "{kinds:?}");
    let seqs: Vec<u64> = first[..events]
        .iter()
        .map(|f| f["data"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, (0..events as u64).collect::<Vec<_>>());
    assert_eq!(
        first[events]["data"]["lines"],
        json!(["weather?", "Sunny."])
    );
    let done = &first[events + 1]["data"];
    assert_eq!(done["len"], events);
    assert_eq!(done["reason"], "idle");

    // One more turn on the same session: its events start where the session ended.
    let body = json!({ "input": "and tomorrow?", "sessionId": done["sessionId"] }).to_string();
    let (_, _, data) = exchange(addr, "POST", "/api/workflow", &body).await;
    let second = frames(data);
    assert_eq!(second[0]["data"]["seq"], events);
    assert_eq!(second.last().unwrap()["type"], "done");

    // Bad input answers JSON errors, not a stream.
    let unknown = json!({ "input": "x", "sessionId": SessionId::new() }).to_string();
    let (status, _, _) = exchange(addr, "POST", "/api/workflow", &unknown).await;
    assert_eq!(status, 404);
    let (status, _, _) = exchange(
        addr,
        "POST",
        "/api/workflow",
        r#"{"input":"x","record":false}"#,
    )
    .await;
    assert_eq!(status, 400);
}

/// A real OpenAI-compatible provider (the fake Chat Completions server on 127.0.0.1, which
/// streams the structured output as JSON text in 6-character pieces, as the API does): the
/// chat streams the reply's characters, never JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openai_compatible_models_json_streams_as_clean_text() {
    use openharness_provider::testing::FakeServer;
    use openharness_provider::testing::openai::{self as wire, KEY};
    use openharness_provider::{ApiKey, OpenAiProvider};

    let fake = FakeServer::openai(KEY).await.unwrap();
    let reply = "Sunny,\nthen \"rain\" \\ {not json} ☂";
    fake.respond(wire::json_output(&json!({ "reply": reply })));
    let provider = OpenAiProvider::builder(ApiKey::new(KEY))
        .base_url(fake.base_url())
        .build()
        .unwrap();
    let addr = serve_with(provider).await;
    let chat = SessionId::new();
    let (status, _, data) =
        exchange(addr, "POST", "/api/chat", &chat_body(&chat, "weather?")).await;
    assert_eq!(status, 200);
    let deltas: Vec<String> = data
        .iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|chunk| chunk["type"] == "text-delta")
        .map(|chunk| chunk["delta"].as_str().unwrap().to_owned())
        .collect();
    assert!(deltas.len() > 3, "the reply streamed in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), reply);
    let messages = ui_messages(addr, &chat).await;
    assert_eq!(messages[1]["parts"][1]["text"], reply);
}

// Approvals: a workflow that asks to publish (twice for "two releases"), and an agent that
// publishes once a request is answered.

#[event]
#[derive(Debug, Clone)]
struct ReleaseShipped {
    text: String,
}

#[event]
enum ReleaseEvent {
    UserInput,
    InputReceived,
    ReleaseShipped,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Release {
    lines: Vec<String>,
}

#[handler(ReleaseEvent)]
impl Release {
    fn heard(&mut self, input: &UserInput) -> Emit {
        self.lines.push(input.text.clone());
        let ask = Emit::one(InputRequested::approval(format!("Publish {}?", input.text)));
        if input.text.contains("two") {
            return ask.and(InputRequested::approval("And the second one?"));
        }
        ask
    }
    fn answered(&mut self, answer: &InputReceived) {
        self.lines.push(format!("answer: {}", answer.text));
    }
    fn released(&mut self, released: &ReleaseShipped) {
        self.lines.push(released.text.clone());
    }
}

struct Publisher;

#[agent(output = Answer, emits = [ReleaseShipped])]
impl Publisher {
    fn prompt(&self, _state: &Release, answer: &InputReceived) -> String {
        answer.text.clone()
    }
    fn on_output(&self, out: Answer, _answer: &InputReceived) -> ReleaseShipped {
        ReleaseShipped { text: out.reply }
    }
}

/// A server hosting the release workflow; the publisher answers after `delay`.
async fn serve_release(delay: Duration) -> SocketAddr {
    let provider = ScriptedProvider::new().fallback("publisher", move |request| {
        let reply = if request.prompt == "yes" {
            "Published."
        } else {
            "Not published."
        };
        Reply::output(json!({ "reply": reply }))
            .text(reply)
            .delay(delay)
    });
    let workflow = Workflow::builder("release")
        .initial_state(Release::default())
        .agent(Publisher)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(MemoryStore::new()).workflow(workflow).unwrap();
    http::serve(router(host, ServerOptions::default())).await
}

const TOOL_APPROVALS: &str = "x-openharness-approvals: tool\r\n";

fn chunks(data: &[String]) -> Vec<Value> {
    data.iter()
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .collect()
}

fn kinds(data: &[String]) -> Vec<String> {
    chunks(data)
        .iter()
        .map(|chunk| chunk["type"].as_str().unwrap().to_owned())
        .collect()
}

async fn events(addr: SocketAddr, chat: &SessionId) -> Vec<Value> {
    let page = get_json(addr, &format!("/sessions/{chat}/events?limit=1000")).await;
    page["events"].as_array().unwrap().clone()
}

async fn tool_chat(addr: SocketAddr, chat: &SessionId) -> Vec<Value> {
    let chat = get_json(
        addr,
        &format!("/sessions/{chat}/messages?shape=ui&approvals=tool"),
    )
    .await;
    chat.as_array().unwrap().clone()
}

/// The chat as the AI SDK posts it after `addToolApprovalResponse`: the stored messages, the
/// approval parts of the last one answered as `decide` says (by their approval id).
fn responded(
    chat: &SessionId,
    messages: &[Value],
    decide: impl Fn(&str) -> Option<Value>,
) -> String {
    let mut messages = messages.to_vec();
    for part in messages
        .last_mut()
        .unwrap()
        .get_mut("parts")
        .and_then(Value::as_array_mut)
        .unwrap()
    {
        if part["state"] == "approval-requested" {
            let id = part["approval"]["id"].as_str().unwrap().to_owned();
            if let Some(decision) = decide(&id) {
                part["state"] = json!("approval-responded");
                let mut approval = decision;
                approval["id"] = json!(id);
                part["approval"] = approval;
            }
        }
    }
    let last = messages.last().unwrap()["id"].clone();
    json!({ "id": chat, "trigger": "submit-message", "messageId": last, "messages": messages })
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_are_data_parts_unless_the_client_asks_for_tool_approvals() {
    let addr = serve_release(Duration::ZERO).await;

    // No header: exactly the AI SDK 5 stream, the approval a `data-input-requested` part.
    let plain = SessionId::new();
    let (status, _, data) = exchange(addr, "POST", "/api/chat", &chat_body(&plain, "1.0")).await;
    assert_eq!(status, 200);
    assert!(
        kinds(&data).iter().all(|k| !k.starts_with("tool-")),
        "{data:?}"
    );
    let asked = chunks(&data)
        .into_iter()
        .find(|c| c["type"] == "data-input-requested")
        .unwrap();
    assert_eq!(asked["data"]["prompt"], "Publish 1.0?");
    let stored = ui_messages(addr, &plain).await;
    assert_eq!(stored[1]["parts"][0]["type"], "data-input-requested");

    // With the header: a dynamic tool call `approval` waiting for its approval, in a last
    // step of its own; no data part.
    let chat = SessionId::new();
    let (status, _, data) = exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&chat, "1.0"),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        kinds(&data),
        [
            "start",
            "start-step",
            "tool-input-start",
            "tool-input-available",
            "tool-approval-request",
            "finish-step",
            "finish",
        ]
    );
    let chunks = chunks(&data);
    let request = chunks[4]["approvalId"].as_str().unwrap().to_owned();
    let call = format!("approval-{request}");
    assert_eq!(
        chunks[2],
        json!({ "type": "tool-input-start", "toolCallId": call, "toolName": "approval", "dynamic": true })
    );
    assert_eq!(
        chunks[3],
        json!({ "type": "tool-input-available", "toolCallId": call, "toolName": "approval",
                "input": { "prompt": "Publish 1.0?" }, "dynamic": true })
    );
    assert_eq!(chunks[4]["toolCallId"], call.as_str());
    let recorded = events(addr, &chat).await;
    let asked = recorded
        .iter()
        .find(|e| e["name"] == "input:requested")
        .unwrap();
    assert_eq!(asked["id"], request.as_str());
    assert_eq!(asked["payload"]["approval"], true);

    // The stored chat: the same part, waiting; without `approvals=tool`, the data part.
    let stored = tool_chat(addr, &chat).await;
    assert_eq!(stored.len(), 2, "{stored:#?}");
    assert_eq!(stored[1]["id"], start_id(&data));
    assert_eq!(
        stored[1]["parts"],
        json!([
            { "type": "step-start" },
            { "type": "dynamic-tool", "toolName": "approval", "toolCallId": call,
              "state": "approval-requested", "input": { "prompt": "Publish 1.0?" },
              "approval": { "id": request } }
        ])
    );
    assert_eq!(
        ui_messages(addr, &chat).await[1]["parts"][0]["type"],
        "data-input-requested"
    );

    // What is not understood is refused.
    let (status, _, _) = exchange_with(
        addr,
        "POST",
        "/api/chat",
        "x-openharness-approvals: tools\r\n",
        &chat_body(&SessionId::new(), "1.0"),
    )
    .await;
    assert_eq!(status, 400);
    for query in ["shape=ui&approvals=both", "shape=v4&approvals=tools"] {
        let (status, _, _) = exchange(
            addr,
            "GET",
            &format!("/sessions/{chat}/messages?{query}"),
            "",
        )
        .await;
        assert_eq!(status, 400, "{query}");
    }
    // A valid value with another shape is accepted (as the OpenAPI document says) and
    // changes nothing there.
    for query in ["approvals=tool", "shape=v4&approvals=data"] {
        let (status, _, _) = exchange(
            addr,
            "GET",
            &format!("/sessions/{chat}/messages?{query}"),
            "",
        )
        .await;
        assert_eq!(status, 200, "{query}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_response_answers_its_request_and_continues_the_message() {
    let addr = serve_release(Duration::ZERO).await;
    let chat = SessionId::new();
    let (_, _, asked) = exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&chat, "1.0"),
    )
    .await;
    let message = start_id(&asked);
    let before = tool_chat(addr, &chat).await;
    let request = before[1]["parts"][1]["approval"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let call = format!("approval-{request}");

    // `addToolApprovalResponse({id, approved: true, reason})` and the automatic send.
    let body = responded(&chat, &before, |_| {
        Some(json!({ "approved": true, "reason": "tests pass" }))
    });
    let (status, head, data) =
        exchange_with(addr, "POST", "/api/chat", TOOL_APPROVALS, &body).await;
    assert_eq!(status, 200, "{head}");
    let chunks = chunks(&data);
    // More of the client's message: `start` without an id, the approval's output, the turn.
    assert_eq!(chunks[0], json!({ "type": "start" }));
    assert_eq!(
        chunks[1],
        json!({ "type": "tool-output-available", "toolCallId": call, "output": { "answer": "yes" } })
    );
    assert_eq!(streamed_text(&data), "Published.");
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));

    // Recorded as the answer to that request: `yes`, with the decision and its reason.
    let recorded = events(addr, &chat).await;
    let answers: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["name"] == "input:received")
        .collect();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["payload"]["requestId"], request.as_str());
    assert_eq!(answers[0]["payload"]["text"], "yes");
    assert_eq!(answers[0]["payload"]["approved"], true);
    assert_eq!(answers[0]["payload"]["reason"], "tests pass");
    assert!(
        recorded
            .iter()
            .all(|e| e["name"] != "user:input" || e["payload"]["text"] == "1.0")
    );
    let state = get_json(addr, &format!("/sessions/{chat}/state")).await;
    assert_eq!(
        state["state"]["lines"],
        json!(["1.0", "answer: yes", "Published."])
    );

    // The stored chat: still one assistant message, its approval granted, then the turn.
    let after = tool_chat(addr, &chat).await;
    assert_eq!(after.len(), 2, "{after:#?}");
    assert_eq!(after[1]["id"], message.as_str());
    let parts = after[1]["parts"].as_array().unwrap();
    assert_eq!(
        parts[1],
        json!({ "type": "dynamic-tool", "toolName": "approval", "toolCallId": call,
                "state": "output-available", "input": { "prompt": "Publish 1.0?" },
                "output": { "answer": "yes" },
                "approval": { "id": request, "approved": true, "reason": "tests pass" } })
    );
    let types: Vec<&str> = parts.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "step-start",
            "dynamic-tool",
            "step-start",
            "text",
            "data-output"
        ]
    );
    // A data client's view of the same log: the answer is a user message `yes`.
    let data_view = ui_messages(addr, &chat).await;
    assert_eq!(data_view[2]["role"], "user");
    assert_eq!(data_view[2]["parts"][0]["text"], "yes");

    // The same decision again: the request is answered already; nothing is recorded.
    let (status, _, _) = exchange_with(addr, "POST", "/api/chat", TOOL_APPROVALS, &body).await;
    assert_eq!(status, 409);
    // An approval this server never asked: refused too.
    let unknown = body.replace(&request, &EventId::new().to_string());
    let (status, _, _) = exchange_with(addr, "POST", "/api/chat", TOOL_APPROVALS, &unknown).await;
    assert_eq!(status, 409);
    assert_eq!(events(addr, &chat).await.len(), recorded.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_approval_and_approvals_answered_with_text() {
    let addr = serve_release(Duration::ZERO).await;

    // Denied: `no`, the part `output-denied`.
    let chat = SessionId::new();
    exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&chat, "1.0"),
    )
    .await;
    let before = tool_chat(addr, &chat).await;
    let body = responded(&chat, &before, |_| Some(json!({ "approved": false })));
    // A post of decisions continues the message as tool approvals, header or not: only a
    // client shown tool approvals answers with them.
    let (status, _, data) = exchange_with(addr, "POST", "/api/chat", "", &body).await;
    assert_eq!(status, 200);
    let call = before[1]["parts"][1]["toolCallId"].clone();
    assert_eq!(
        chunks(&data)[1],
        json!({ "type": "tool-output-denied", "toolCallId": call })
    );
    assert_eq!(streamed_text(&data), "Not published.");
    let recorded = events(addr, &chat).await;
    let answer = recorded
        .iter()
        .find(|e| e["name"] == "input:received")
        .unwrap();
    assert_eq!(answer["payload"]["text"], "no");
    assert_eq!(answer["payload"]["approved"], false);
    assert!(answer["payload"].get("reason").is_none());
    let after = tool_chat(addr, &chat).await;
    assert_eq!(after[1]["parts"][1]["state"], "output-denied");
    assert_eq!(
        after[1]["parts"][1]["approval"],
        json!({ "id": before[1]["parts"][1]["approval"]["id"], "approved": false })
    );
    assert!(after[1]["parts"][1].get("output").is_none());

    // Answered with a text message instead: as any request; the stored part is settled.
    let typed = SessionId::new();
    exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&typed, "2.0"),
    )
    .await;
    let answer = json!({ "id": typed, "trigger": "submit-message", "messages": [
        { "id": "client-2", "role": "user", "parts": [{ "type": "text", "text": "yes" }] }
    ] });
    let (status, _, data) = exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &answer.to_string(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(streamed_text(&data), "Published.");
    assert!(chunks(&data)[0]["messageId"].is_string(), "a new message");
    let stored = tool_chat(addr, &typed).await;
    let roles: Vec<&str> = stored.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    assert_eq!(stored[2]["id"], "client-2");
    let part = &stored[1]["parts"][1];
    assert_eq!(part["state"], "output-available");
    assert_eq!(part["output"], json!({ "answer": "yes" }));
    assert!(part.get("approval").is_none(), "{part}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_decisions_in_one_post_are_answered_in_order_as_one_stream() {
    let addr = serve_release(Duration::ZERO).await;
    let chat = SessionId::new();
    let (_, _, asked) = exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&chat, "two releases"),
    )
    .await;
    let requests: Vec<String> = chunks(&asked)
        .iter()
        .filter(|c| c["type"] == "tool-approval-request")
        .map(|c| c["approvalId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(requests.len(), 2);
    let before = tool_chat(addr, &chat).await;
    let second = requests[1].clone();
    let body = responded(&chat, &before, |id| {
        Some(json!({ "approved": id != second }))
    });
    let (status, _, data) = exchange_with(addr, "POST", "/api/chat", TOOL_APPROVALS, &body).await;
    assert_eq!(status, 200);
    assert_eq!(streamed_text(&data), "Published.Not published.");
    assert_eq!(data.iter().filter(|d| *d == "[DONE]").count(), 1);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let state = get_json(addr, &format!("/sessions/{chat}/state")).await;
    assert_eq!(
        state["state"]["lines"],
        json!([
            "two releases",
            "answer: yes",
            "Published.",
            "answer: no",
            "Not published."
        ])
    );
    let after = tool_chat(addr, &chat).await;
    assert_eq!(after.len(), 2, "one message: {after:#?}");
    let states: Vec<&str> = after[1]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "dynamic-tool")
        .map(|p| p["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["output-available", "output-denied"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_an_approvals_turn_replays_the_whole_message() {
    let addr = serve_release(Duration::from_millis(400)).await;
    let chat = SessionId::new();
    exchange_with(
        addr,
        "POST",
        "/api/chat",
        TOOL_APPROVALS,
        &chat_body(&chat, "1.0"),
    )
    .await;
    let before = tool_chat(addr, &chat).await;
    let body = responded(&chat, &before, |_| Some(json!({ "approved": true })));
    let posting = tokio::spawn(async move {
        exchange_with(addr, "POST", "/api/chat", TOOL_APPROVALS, &body).await
    });
    tokio::time::sleep(Duration::from_millis(150)).await;
    let path = format!("/api/chat/{chat}/stream");
    let (status, _, resumed) = exchange_with(addr, "GET", &path, TOOL_APPROVALS, "").await;
    let (_, _, posted) = posting.await.unwrap();
    assert_eq!(status, 200);
    // From the message's own start (the turn that asked), through the answer's turn.
    let kinds = kinds(&resumed);
    assert_eq!(kinds[0], "start");
    assert_eq!(chunks(&resumed)[0]["messageId"], before[1]["id"]);
    assert!(
        kinds.contains(&"tool-approval-request".to_owned()),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&"tool-output-available".to_owned()),
        "{kinds:?}"
    );
    assert_eq!(streamed_text(&resumed), "Published.");
    assert_eq!(resumed.iter().filter(|d| *d == "[DONE]").count(), 1);
    assert!(resumed.ends_with(&posted[2..]), "{resumed:?}\n{posted:?}");
}
