//! The README's `/v1` walk-through, run as written: its `sh` block is read from README.md and
//! each `curl` (and `NAME=$(curl … | jq -r .id)`) is sent to a real `openharness serve` on
//! 127.0.0.1 whose default provider is a fake Anthropic server on 127.0.0.1. Only the
//! addresses and the key differ: `$OH` is the server's address, `$ANTHROPIC_API_KEY` the
//! fake's key, and the Anthropic URL the fake's. The last request, the event stream, must
//! carry the model's answer and end the turn.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::time::Duration;

use openharness::provider::testing::FakeServer;
use openharness::provider::testing::anthropic::{self as model, KEY};
use openharness_testkit::block_on;
use openharness_testkit::http::Client;
use serde_json::Value;

mod binary;
mod serving;

use binary::Killed;

/// The README's block of the `/v1` walk-through.
fn walkthrough() -> String {
    let readme = include_str!("../../../README.md");
    let start = readme
        .find("## The agent platform (`/v1`)")
        .expect("the README has a `/v1` section");
    let block = &readme[start..];
    let open = block.find("```sh\n").unwrap() + "```sh\n".len();
    let close = block[open..].find("```").unwrap();
    block[open..open + close].to_owned()
}

/// Shell words of one logical line: single quotes literal, double quotes and bare words with
/// `$NAME` expanded, adjacent pieces joined, `#` comments dropped.
fn words(line: &str, vars: &HashMap<String, String>) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = line.chars().peekable();
    let expand = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>, out: &mut String| {
        let mut name = String::new();
        while let Some(&c) = chars.peek() {
            if c.is_ascii_alphanumeric() || c == '_' {
                name.push(c);
                chars.next();
            } else {
                break;
            }
        }
        out.push_str(
            vars.get(&name)
                .unwrap_or_else(|| panic!("${name} is not set")),
        );
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                started = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                started = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '$' => expand(&mut chars, &mut word),
                        c => word.push(c),
                    }
                }
            }
            '$' => {
                started = true;
                expand(&mut chars, &mut word);
            }
            '#' if !started => break,
            c if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

struct Request {
    method: String,
    url: String,
    headers: Vec<String>,
    body: Option<String>,
}

fn curl(words: &[String]) -> Request {
    assert_eq!(words[0], "curl", "{words:?}");
    let mut request = Request {
        method: String::new(),
        url: String::new(),
        headers: Vec::new(),
        body: None,
    };
    let mut rest = words[1..].iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "-s" | "-N" => {}
            "-X" => request.method.clone_from(rest.next().unwrap()),
            "-H" => request.headers.push(rest.next().unwrap().clone()),
            "-d" => request.body = Some(rest.next().unwrap().clone()),
            url if url.starts_with("http://") => request.url = url.to_owned(),
            other => panic!("the test does not know curl's {other}"),
        }
    }
    if request.method.is_empty() {
        request.method = if request.body.is_some() {
            "POST"
        } else {
            "GET"
        }
        .to_owned();
    }
    request
}

/// Sends `request`: its status and body (for an event stream, its frames as sent until one
/// is `session.completed` or the stream ends).
fn send(request: &Request) -> (u16, String) {
    let rest = request.url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let client = Client::new(host.parse().unwrap());
    let headers: Vec<(&str, &str)> = request
        .headers
        .iter()
        .map(|header| {
            let (name, value) = header.split_once(':').unwrap();
            (name.trim(), value.trim())
        })
        .collect();
    let streams = headers
        .iter()
        .any(|(_, value)| *value == "text/event-stream");
    block_on(async {
        let mut answer = client
            .open(&request.method, path, request.body.as_deref(), &headers)
            .await
            .unwrap();
        let status = answer.status;
        let body = if streams {
            let frames = answer
                .until(Duration::from_secs(30), |frame| {
                    frame.event.as_deref() == Some("session.completed")
                })
                .await;
            frames.iter().map(ToString::to_string).collect()
        } else {
            answer.text().await.unwrap()
        };
        (status, body)
    })
}

/// `openharness serve --addr 127.0.0.1:0` in `dir` with master keys: the process and port.
fn spawn_serve(dir: &std::path::Path) -> (Killed, u16) {
    let mut command = binary::command(dir);
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .env_remove("OPENHARNESS_MASTER_KEYS_FILE")
        .env("OPENHARNESS_MASTER_KEYS", format!("k1:{}", "7e".repeat(32)));
    let (server, port, _) = serving::start_serve(command);
    (server, port)
}

#[test]
fn the_readme_platform_walkthrough_works_as_written() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let fake = runtime.block_on(FakeServer::anthropic(KEY)).unwrap();
    fake.respond(model::text("Start in Alfama, early."));
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = spawn_serve(dir.path());

    let mut vars = HashMap::from([
        ("OH".to_owned(), format!("http://127.0.0.1:{port}")),
        ("ANTHROPIC_API_KEY".to_owned(), KEY.to_owned()),
    ]);
    let block = walkthrough().replace("\\\n", " ");
    let mut sent = 0;
    let mut last = (0, String::new());
    for line in block.lines().map(str::trim).filter(|l| !l.is_empty()) {
        // The test starts the server and picks the address itself.
        if line.starts_with("export ")
            || line.starts_with("openharness ")
            || line.starts_with("OH=")
        {
            continue;
        }
        let line = line.replace("https://api.anthropic.com", &fake.base_url());
        if let Some((name, command)) = line.split_once("=$(") {
            let command = command.strip_suffix(')').unwrap();
            let (command, filter) = command.split_once(" | ").unwrap();
            assert_eq!(filter.trim(), "jq -r .id");
            let (status, body) = send(&curl(&words(command, &vars)));
            assert!((200..300).contains(&status), "{line}: {status} {body}");
            let body: Value = serde_json::from_str(&body).unwrap();
            vars.insert(name.to_owned(), body["id"].as_str().unwrap().to_owned());
        } else {
            last = send(&curl(&words(&line, &vars)));
            assert!(
                (200..300).contains(&last.0),
                "{line}: {} {}",
                last.0,
                last.1
            );
            if line.contains("/messages") {
                assert_eq!(last.0, 201, "{}", last.1);
            }
        }
        sent += 1;
    }
    assert_eq!(sent, 6, "the walk-through has six requests");
    // The stream has the question, the model's answer and the turn's end.
    let stream = &last.1;
    for needle in [
        "event: message.created",
        "Three days in Lisbon",
        "Start in Alfama, early.",
        "event: session.completed",
    ] {
        assert!(stream.contains(needle), "{needle} is not in {stream}");
    }
    // The provider row's key and model reached the model; the key is never answered.
    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    assert_eq!(requests[0].body["model"], "claude-sonnet-4-5");
    assert!(!stream.contains(KEY));

    // `openharness serve` documents `/v1` in its keyless OpenAPI document.
    let (status, doc) = send(&Request {
        method: "GET".into(),
        url: format!("http://127.0.0.1:{port}/openapi.json"),
        headers: Vec::new(),
        body: None,
    });
    assert_eq!(status, 200);
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert!(doc["paths"]["/sessions"].is_object());
    assert!(doc["paths"]["/v1/agents/{id}/sessions/{session}/messages"]["post"].is_object());
    assert!(doc["components"]["schemas"]["V1Agent"].is_object());
}
