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
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    let host = Host::new(MemoryStore::new()).workflow(workflow).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        async move { axum::serve(listener, router(host, ServerOptions::default())).await },
    );
    addr
}

/// Sends a request and reads the whole answer: status, head, and the `data:` payloads.
async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, String, Vec<String>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut response))
        .await
        .expect("the stream ends with the turn")
        .unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text[9..12].parse().unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let data = body
        .lines()
        .filter_map(|line| line.strip_prefix("data: ").or(line.strip_prefix("data:")))
        .map(|d| d.trim().to_owned())
        .collect();
    (status, head.to_ascii_lowercase(), data)
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
    let regenerate = chat_body(&chat, "x").replace("submit-message", "regenerate-message");
    let (status, _, _) = exchange(addr, "POST", "/api/chat", &regenerate).await;
    assert_eq!(status, 400);
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
