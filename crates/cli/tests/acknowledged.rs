//! Nothing acknowledged is lost: `openharness serve` is SIGKILLed the moment it acknowledges an
//! input — a `202` from `POST /sessions`, `…/input` or `…/answer`, the first bytes of the
//! stream of `POST /api/chat` or `POST /api/workflow` — 20 times per route, on redb and on
//! PostgreSQL (skipped, saying so, without `OPENHARNESS_TEST_POSTGRES`), while the turn is
//! still running (the scripted models answer slowly). Each time the store, read afterwards
//! by `openharness events`, holds the acknowledged input.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod serving;

/// Kills per route and store.
const KILLS: usize = 20;

/// Starts `serve` on `store`, its scripted models answering slowly: the process and its port.
fn serve(dir: &Path, store: &str) -> (std::process::Child, u16) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openharness"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
        .args(["--chat-workflow", "chat"])
        .current_dir(dir)
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "300")
        .env_remove("OPENHARNESS_STORE");
    let (child, port, _) = serving::start_serve(command);
    (child, port)
}

/// Sends `method path` with a JSON `body` and reads until the answer's head is complete: the
/// head (status line and headers). The connection is left open.
fn send(port: u16, method: &str, path: &str, body: &Value) -> (String, TcpStream) {
    let body = body.to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut byte).unwrap();
        assert!(
            n > 0,
            "{method} {path}: closed after {:?}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    (String::from_utf8_lossy(&head).into_owned(), stream)
}

/// A JSON answer to `method path`.
fn call(port: u16, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let (head, mut stream) = send(port, method, path, body);
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// The events of `session` in `store`, read by the CLI after the server is gone.
fn recorded(dir: &Path, store: &str, session: &str) -> Vec<Value> {
    let output = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["--store", store, "events", session, "--json"])
        .current_dir(dir)
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "events {session}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Array(events)) => events,
        _ => text
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect(),
    }
}

/// Whether `events` hold an event `name` whose payload's `field` is `text`.
fn holds(events: &[Value], name: &str, field: &str, text: &str) -> bool {
    events.iter().any(|event| {
        let event = event.get("event").unwrap_or(event);
        event["name"] == name && event["payload"][field] == text
    })
}

/// Waits until `session` waits for an answer; its open request's id.
fn open_request(port: u16, session: &str) -> String {
    let started = Instant::now();
    loop {
        let (status, page) = call(
            port,
            "GET",
            &format!("/sessions/{session}/events?limit=1000"),
            &json!({}),
        );
        assert_eq!(status, 200, "{page}");
        let events = page["events"].as_array().cloned().unwrap_or_default();
        let ended = events.iter().any(|e| {
            e["name"] == "workflow:completed" && e["payload"]["reason"] == "waiting_for_input"
        });
        if ended && let Some(request) = events.iter().rev().find(|e| e["name"] == "input:requested")
        {
            return request["id"].as_str().unwrap().to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{session} never waited: {page}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `session`'s turn has ended.
fn idle(port: u16, session: &str) {
    let started = Instant::now();
    loop {
        let (_, summary) = call(port, "GET", &format!("/sessions/{session}"), &json!({}));
        if summary["status"] != "running" && summary["runningHere"] == false {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "{summary}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A chat session started on the server at `port` and run to its turn's end.
fn chat_session(port: u16) -> String {
    let (status, created) = call(
        port,
        "POST",
        "/sessions",
        &json!({ "workflow": "chat", "input": "hello" }),
    );
    assert_eq!(status, 202, "{created}");
    let session = created["session"].as_str().unwrap().to_owned();
    idle(port, &session);
    session
}

/// One route's kills: `prepare` (on a fresh server) gives what to send; the server is killed
/// as soon as it acknowledges, and the store must then hold the input.
fn kills(
    dir: &Path,
    store: &str,
    route: &str,
    expected_status: &str,
    prepare: impl Fn(u16, usize) -> (String, Value, String, &'static str, &'static str, String),
) {
    for n in 0..KILLS {
        let (mut server, port) = serve(dir, store);
        let (path, body, session, event, field, text) = prepare(port, n);
        let (head, mut stream) = send(port, "POST", &path, &body);
        // Acknowledged: kill at once, mid-turn.
        server.kill().unwrap();
        server.wait().unwrap();
        assert!(head.starts_with(expected_status), "{route} #{n}: {head}");
        // A new session's id is in the answer's body (already sent with its head).
        let session = if session.is_empty() {
            let mut rest = String::new();
            let _ = stream.read_to_string(&mut rest);
            let answer: Value = serde_json::from_str(rest.trim()).unwrap_or(Value::Null);
            answer["session"].as_str().unwrap_or_default().to_owned()
        } else {
            session
        };
        assert!(
            !session.is_empty(),
            "{route} #{n}: no session in the answer"
        );
        let events = recorded(dir, store, &session);
        assert!(
            holds(&events, event, field, &text),
            "{route} #{n}: the acknowledged {event} {text:?} of {session} was lost: {events:?}"
        );
    }
}

fn every_route(dir: &Path, store: &str) {
    // A new session with its input.
    kills(dir, store, "POST /sessions", "HTTP/1.1 202", |_, n| {
        let text = format!("start {n}");
        (
            "/sessions".to_owned(),
            json!({ "workflow": "chat", "input": text }),
            String::new(),
            "user:input",
            "text",
            text,
        )
    });
    // Input to a session that exists (started and run to its end first).
    kills(
        dir,
        store,
        "POST /sessions/{id}/input",
        "HTTP/1.1 202",
        |port, n| {
            let session = chat_session(port);
            let text = format!("more {n}");
            (
                format!("/sessions/{session}/input"),
                json!({ "text": text }),
                session,
                "user:input",
                "text",
                text,
            )
        },
    );
    // The answer to a request the demo asks (whether to publish).
    kills(
        dir,
        store,
        "POST /sessions/{id}/answer",
        "HTTP/1.1 202",
        |port, n| {
            let (status, created) = call(
                port,
                "POST",
                "/sessions",
                &json!({ "workflow": "planner-executor", "input": "Release notes for 1.0" }),
            );
            assert_eq!(status, 202, "{created}");
            let session = created["session"].as_str().unwrap().to_owned();
            let request = open_request(port, &session);
            let text = format!("yes {n}");
            (
                format!("/sessions/{session}/answer"),
                json!({ "request": request, "text": text }),
                session,
                "input:received",
                "text",
                text,
            )
        },
    );
    // A chat's message: acknowledged by its stream's first bytes.
    kills(dir, store, "POST /api/chat", "HTTP/1.1 200", |_, n| {
        let session = uuid::Uuid::now_v7().to_string();
        let text = format!("chat {n}");
        let body = json!({
            "id": session,
            "messages": [{ "id": format!("m{n}"), "role": "user", "parts": [{ "type": "text", "text": text }] }],
            "trigger": "submit-message",
        });
        (
            "/api/chat".to_owned(),
            body,
            session,
            "user:input",
            "text",
            text,
        )
    });
    // The seeds' workflow handler, on a session it names.
    kills(
        dir,
        store,
        "POST /api/workflow",
        "HTTP/1.1 200",
        |port, n| {
            let session = chat_session(port);
            let text = format!("frames {n}");
            (
                "/api/workflow".to_owned(),
                json!({ "input": text, "sessionId": session }),
                session,
                "user:input",
                "text",
                text,
            )
        },
    );
}

#[test]
fn nothing_acknowledged_is_lost_when_the_server_is_killed_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.redb");
    every_route(dir.path(), store.to_str().unwrap());
}

#[test]
fn nothing_acknowledged_is_lost_when_the_server_is_killed_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(store) = runtime.block_on(serving::postgres::fresh_database("acknowledged", "ack"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    every_route(dir.path(), &store);
}
