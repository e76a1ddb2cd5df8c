//! `openharness serve`: the registered workflows' sessions over HTTP on a loopback address; an
//! address other machines could reach is refused without API keys; without keys, other host
//! names are refused (DNS rebinding); CORS only when asked.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

mod serving;

fn get(port: u16, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Starts `openharness serve --addr 127.0.0.1:0 EXTRA…` in `dir`: the process, the port it
/// printed, and its first line.
fn spawn_serve(dir: &std::path::Path, extra: &[&str]) -> (std::process::Child, u16, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openharness"));
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(extra)
        .current_dir(dir)
        .env_remove("OPENHARNESS_STORE");
    serving::start_serve(command)
}

#[test]
fn serve_answers_on_loopback_and_refuses_other_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["demo"])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap();
    assert!(demo.status.success());

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.starts_with("Serving chat, planner-executor on http://127.0.0.1:"),
        "{first}"
    );
    let health = get(port, "/health");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let sessions = get(port, "/sessions");
    assert!(
        sessions.contains("\"workflow\":\"planner-executor\""),
        "{sessions}"
    );
    server.kill().unwrap();
    server.wait().unwrap();

    let refused = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["serve", "--addr", "0.0.0.0:0"])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .env_remove("OPENHARNESS_API_KEYS_FILE")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--api-keys-file"), "{stderr}");

    // With a keys file, routes need a key (health does not).
    std::fs::write(
        dir.path().join("keys"),
        "# ops
local-key
",
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--api-keys-file",
            "keys",
        ])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("(API keys required)"), "{first}");
    assert!(get(port, "/health").starts_with("HTTP/1.1 200"));
    assert!(get(port, "/sessions").starts_with("HTTP/1.1 401"));
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn serve_allows_the_cors_origins_it_is_given_and_refuses_malformed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["serve", "--cors-origin", "http://localhost:5173/"])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no path"), "{stderr}");

    let (mut server, port, first) =
        spawn_serve(dir.path(), &["--cors-origin", "http://localhost:5173"]);
    assert!(first.contains("(CORS: http://localhost:5173)"), "{first}");
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "OPTIONS /sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\
         origin: http://localhost:5173\r\naccess-control-request-method: POST\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let response = response.to_ascii_lowercase();
    assert!(
        response.contains("access-control-allow-origin: http://localhost:5173"),
        "{response}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn serve_on_port_0_prints_the_port_it_listens_on() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, first) = spawn_serve(dir.path(), &[]);
    assert_ne!(port, 0, "{first}");
    assert!(get(port, "/health").starts_with("HTTP/1.1 200"));
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn serve_runs_new_chats_on_the_chat_workflow_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["serve", "--chat-workflow", "nope"])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--chat-workflow nope"), "{stderr}");
    assert!(stderr.contains("chat, planner-executor"), "{stderr}");

    let (mut server, port, _) = spawn_serve(dir.path(), &["--chat-workflow", "chat"]);
    let response = serving::post_chat(port, "0190a8c4-5f00-7000-8000-00000000c4a7", "Hi there");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains(r#""type":"finish""#), "{response}");
    assert!(
        response.contains("You said"),
        "the chat workflow answered: {response}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

#[test]
fn the_platform_log_is_not_listed_as_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = spawn_serve(dir.path(), &[]);
    let body = r#"{"name":"helper","system_prompt":"Be brief."}"#;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "POST /v1/agents HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 201"), "{response}");
    // The agent is recorded in the platform log, which is readable by id but not listed.
    let listed = get(port, "/sessions");
    assert!(listed.starts_with("HTTP/1.1 200"), "{listed}");
    assert!(!listed.contains("openharness-platform"), "{listed}");
    assert!(get(port, "/sessions/openharness-platform").starts_with("HTTP/1.1 200"));
    server.kill().unwrap();
    server.wait().unwrap();
    let sessions = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args(["sessions"])
        .current_dir(dir.path())
        .env_remove("OPENHARNESS_STORE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&sessions.stdout);
    assert!(sessions.status.success(), "{stdout}");
    assert!(!stdout.contains("openharness-platform"), "{stdout}");
}

/// `GET path` naming `host` in `Host`.
fn get_as(port: u16, host: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serve_without_keys_refuses_other_host_names_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = spawn_serve(dir.path(), &["--allowed-host", "box.local"]);
    // DNS rebinding: another site's name pointed at 127.0.0.1 is refused, on every family.
    for path in ["/sessions", "/v1/agents", "/"] {
        let refused = get_as(port, "attacker.example", path);
        assert!(refused.starts_with("HTTP/1.1 403"), "{path}: {refused}");
        assert!(refused.contains("host_not_allowed"), "{refused}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("box.local:{port}"),
    ] {
        let answered = get_as(port, &host, "/sessions");
        assert!(answered.starts_with("HTTP/1.1 200"), "{host}: {answered}");
    }
    server.kill().unwrap();
    server.wait().unwrap();
    // With API keys the key is the guard: any name, with the key.
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "s3cret\n").unwrap();
    let (mut server, port, _) =
        spawn_serve(dir.path(), &["--api-keys-file", keys.to_str().unwrap()]);
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        stream,
        "GET /sessions HTTP/1.1\r\nhost: box.example\r\nauthorization: Bearer s3cret\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    server.kill().unwrap();
    server.wait().unwrap();
}
