//! Nothing acknowledged is lost: `openharness serve` is SIGKILLed the moment it acknowledges an
//! input — a `202` from `POST /sessions`, `…/input` or `…/answer`, the first bytes of the
//! stream of `POST /api/chat` or `POST /api/workflow` — 20 times per route, on redb and on
//! PostgreSQL (skipped, saying so, without `OPENHARNESS_TEST_POSTGRES`), while the turn is
//! still running (the scripted models answer slowly). Each time the store, read afterwards
//! by `openharness events`, holds the acknowledged input.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::time::Duration;

use openharness_testkit::http::Client;
use openharness_testkit::{block_on, eventually};
use serde_json::{Value, json};

mod binary;
mod serving;

/// Kills per route and store.
const KILLS: usize = 20;

/// How long a session may take to wait for an answer or end its turn.
const TURN: Duration = Duration::from_secs(60);

/// Starts `serve` on `store`, its scripted models answering slowly: the process and the kit's
/// client of it.
fn serve(dir: &Path, store: &str) -> (binary::Killed, Client) {
    let mut command = binary::command(dir);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
        .args(["--chat-workflow", "chat"])
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "300");
    let (child, port, _) = serving::start_serve(command);
    (child, serving::client(port))
}

/// A JSON answer to `method path` with the JSON `body`: its status and body (`null` when it
/// is not JSON).
async fn call(client: &Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let answer = client.send(method, path, body).await;
    (answer.status, answer.json_or_null())
}

/// The events of `session` in `store`, read by the CLI after the server is gone.
fn recorded(dir: &Path, store: &str, session: &str) -> Vec<Value> {
    let output = binary::command(dir)
        .args(["--store", store, "events", session, "--json"])
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
fn open_request(client: &Client, session: &str) -> String {
    let path = format!("/sessions/{session}/events?limit=1000");
    block_on(eventually(TURN, &format!("{session} to wait"), || async {
        let (status, page) = call(client, "GET", &path, &json!({})).await;
        assert_eq!(status, 200, "{page}");
        let events = page["events"].as_array().cloned().unwrap_or_default();
        let ended = events.iter().any(|e| {
            e["name"] == "workflow:completed" && e["payload"]["reason"] == "waiting_for_input"
        });
        match events.iter().rev().find(|e| e["name"] == "input:requested") {
            Some(request) if ended => Ok(request["id"].as_str().unwrap().to_owned()),
            _ => Err(page),
        }
    }))
}

/// Waits until `session`'s turn has ended.
fn idle(client: &Client, session: &str) {
    let path = format!("/sessions/{session}");
    block_on(eventually(
        TURN,
        &format!("{session} to end its turn"),
        || async {
            let (_, summary) = call(client, "GET", &path, &json!({})).await;
            if summary["status"] != "running" && summary["runningHere"] == false {
                Ok(())
            } else {
                Err(summary)
            }
        },
    ));
}

/// A chat session started on `client`'s server and run to its turn's end.
fn chat_session(client: &Client) -> String {
    let (status, created) = block_on(call(
        client,
        "POST",
        "/sessions",
        &json!({ "workflow": "chat", "input": "hello" }),
    ));
    assert_eq!(status, 202, "{created}");
    let session = created["session"].as_str().unwrap().to_owned();
    idle(client, &session);
    session
}

/// One route's kills: `prepare` (on a fresh server) gives what to send; the server is killed
/// as soon as it acknowledges (the answer's head has arrived, its body may still be
/// streaming), and the store must then hold the input.
fn kills(
    dir: &Path,
    store: &str,
    route: &str,
    expected_status: u16,
    prepare: impl Fn(&Client, usize) -> (String, Value, String, &'static str, &'static str, String),
) {
    for n in 0..KILLS {
        let (server, client) = serve(dir, store);
        let (path, body, session, event, field, text) = prepare(&client, n);
        let (status, session, refused) = block_on(async {
            let answer = client
                .open("POST", &path, Some(&body.to_string()), &[])
                .await
                .unwrap();
            // Acknowledged: kill at once, mid-turn.
            drop(server);
            let status = answer.status;
            if status != expected_status {
                let why = answer.text().await.unwrap_or_default();
                return (status, session, why);
            }
            // A new session's id is in the answer's body (already sent with its head).
            if !session.is_empty() {
                return (status, session, String::new());
            }
            let rest = answer.text().await.unwrap_or_default();
            let answer: Value = serde_json::from_str(rest.trim()).unwrap_or(Value::Null);
            (
                status,
                answer["session"].as_str().unwrap_or_default().to_owned(),
                String::new(),
            )
        });
        assert_eq!(status, expected_status, "{route} #{n}: {refused}");
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
    kills(dir, store, "POST /sessions", 202, |_, n| {
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
    kills(dir, store, "POST /sessions/{id}/input", 202, |client, n| {
        let session = chat_session(client);
        let text = format!("more {n}");
        (
            format!("/sessions/{session}/input"),
            json!({ "text": text }),
            session,
            "user:input",
            "text",
            text,
        )
    });
    // The answer to a request the demo asks (whether to publish).
    kills(
        dir,
        store,
        "POST /sessions/{id}/answer",
        202,
        |client, n| {
            let (status, created) = block_on(call(
                client,
                "POST",
                "/sessions",
                &json!({ "workflow": "planner-executor", "input": "Release notes for 1.0" }),
            ));
            assert_eq!(status, 202, "{created}");
            let session = created["session"].as_str().unwrap().to_owned();
            let request = open_request(client, &session);
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
    kills(dir, store, "POST /api/chat", 200, |_, n| {
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
    kills(dir, store, "POST /api/workflow", 200, |client, n| {
        let session = chat_session(client);
        let text = format!("frames {n}");
        (
            "/api/workflow".to_owned(),
            json!({ "input": text, "sessionId": session }),
            session,
            "user:input",
            "text",
            text,
        )
    });
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
    let Some(database) = runtime.block_on(serving::postgres::fresh_database("acknowledged", "ack"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    every_route(dir.path(), &database.url);
}
