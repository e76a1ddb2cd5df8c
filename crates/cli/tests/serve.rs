//! `openharness serve`: the registered workflows' sessions over HTTP on a loopback address; an
//! address other machines could reach is refused without API keys; without keys, other host
//! names are refused (DNS rebinding); CORS only when asked.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness_testkit::block_on;
use openharness_testkit::http::Response;

mod binary;
mod serving;

/// `GET path` on the server on `port`, with `headers`.
fn get(port: u16, path: &str, headers: &[(&str, &str)]) -> Response {
    block_on(serving::client(port).call("GET", path, None, headers))
}

/// A port of 127.0.0.1 that was free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `openharness serve --addr 127.0.0.1:0 EXTRA…` in `dir`: the process (killed when
/// dropped), the port it printed, and its first line.
fn spawn_serve(dir: &std::path::Path, extra: &[&str]) -> (binary::Killed, u16, String) {
    let mut command = binary::command(dir);
    command.args(["serve", "--addr", "127.0.0.1:0"]).args(extra);
    serving::start_serve(command)
}

#[test]
fn serve_answers_on_loopback_and_refuses_other_addresses() {
    let dir = tempfile::tempdir().unwrap();
    let demo = binary::command(dir.path()).args(["demo"]).output().unwrap();
    assert!(demo.status.success());

    let port = free_port();
    let mut command = binary::command(dir.path());
    command.args(["serve", "--addr", &format!("127.0.0.1:{port}")]);
    let (server, printed, first) = serving::start_serve(command);
    assert_eq!(printed, port, "{first}");
    assert!(
        first.starts_with("Serving chat, planner-executor on http://127.0.0.1:"),
        "{first}"
    );
    let health = get(port, "/health", &[]);
    assert_eq!(health.status, 200, "{health:?}");
    let sessions = get(port, "/sessions", &[]).body;
    assert!(
        sessions.contains("\"workflow\":\"planner-executor\""),
        "{sessions}"
    );
    drop(server);

    let refused = binary::command(dir.path())
        .args(["serve", "--addr", "0.0.0.0:0"])
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
    let (_server, port, first) = spawn_serve(dir.path(), &["--api-keys-file", "keys"]);
    assert!(first.contains("(API keys required)"), "{first}");
    assert_eq!(get(port, "/health", &[]).status, 200);
    assert_eq!(get(port, "/sessions", &[]).status, 401);
}

#[test]
fn serve_allows_the_cors_origins_it_is_given_and_refuses_malformed_ones() {
    let dir = tempfile::tempdir().unwrap();
    let refused = binary::command(dir.path())
        .args(["serve", "--cors-origin", "http://localhost:5173/"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("no path"), "{stderr}");

    let (_server, port, first) =
        spawn_serve(dir.path(), &["--cors-origin", "http://localhost:5173"]);
    assert!(first.contains("(CORS: http://localhost:5173)"), "{first}");
    let response = block_on(serving::client(port).call(
        "OPTIONS",
        "/sessions",
        None,
        &[
            ("origin", "http://localhost:5173"),
            ("access-control-request-method", "POST"),
        ],
    ));
    assert_eq!(
        response.header("access-control-allow-origin"),
        Some("http://localhost:5173"),
        "{response:?}"
    );
}

#[test]
fn serve_on_port_0_prints_the_port_it_listens_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port, first) = spawn_serve(dir.path(), &[]);
    assert_ne!(port, 0, "{first}");
    assert_eq!(get(port, "/health", &[]).status, 200);
}

#[test]
fn serve_port_listens_on_loopback_and_conflicts_with_addr() {
    let dir = tempfile::tempdir().unwrap();
    let free = free_port();
    let mut command = binary::command(dir.path());
    command.args(["serve", "--port", &free.to_string()]);
    let (_server, port, first) = serving::start_serve(command);
    assert_eq!(port, free, "{first}");
    assert_eq!(get(port, "/health", &[]).status, 200);

    let both = binary::command(dir.path())
        .args(["serve", "--port", "0", "--addr", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(both.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}

#[test]
fn serve_runs_new_chats_on_the_chat_workflow_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let refused = binary::command(dir.path())
        .args(["serve", "--chat-workflow", "nope"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--chat-workflow nope"), "{stderr}");
    assert!(stderr.contains("chat, planner-executor"), "{stderr}");

    let (_server, port, _) = spawn_serve(dir.path(), &["--chat-workflow", "chat"]);
    let response = serving::post_chat(port, "0190a8c4-5f00-7000-8000-00000000c4a7", "Hi there");
    assert_eq!(response.status, 200, "{response:?}");
    assert!(response.body.contains(r#""type":"finish""#), "{response:?}");
    assert!(
        response.body.contains("You said"),
        "the chat workflow answered: {response:?}"
    );
}

#[test]
fn the_platform_log_is_not_listed_as_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let (server, port, _) = spawn_serve(dir.path(), &[]);
    let body = serde_json::json!({ "name": "helper", "system_prompt": "Be brief." });
    let response = block_on(serving::client(port).post("/v1/agents", &body));
    assert_eq!(response.status, 201, "{response:?}");
    // The agent is recorded in the platform log, which is readable by id but not listed.
    let listed = get(port, "/sessions", &[]);
    assert_eq!(listed.status, 200, "{listed:?}");
    assert!(!listed.body.contains("openharness-platform"), "{listed:?}");
    assert_eq!(get(port, "/sessions/openharness-platform", &[]).status, 200);
    drop(server);
    let sessions = binary::command(dir.path())
        .args(["sessions"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&sessions.stdout);
    assert!(sessions.status.success(), "{stdout}");
    assert!(!stdout.contains("openharness-platform"), "{stdout}");
}

#[test]
fn serve_without_keys_refuses_other_host_names_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (server, port, _) = spawn_serve(dir.path(), &["--allowed-host", "box.local"]);
    // DNS rebinding: another site's name pointed at 127.0.0.1 is refused, on every family.
    for path in ["/sessions", "/v1/agents", "/"] {
        let refused = get(port, path, &[("host", "attacker.example")]);
        assert_eq!(refused.status, 403, "{path}: {refused:?}");
        assert!(refused.body.contains("host_not_allowed"), "{refused:?}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("box.local:{port}"),
    ] {
        let answered = get(port, "/sessions", &[("host", &host)]);
        assert_eq!(answered.status, 200, "{host}: {answered:?}");
    }
    drop(server);
    // With API keys the key is the guard: any name, with the key.
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "s3cret\n").unwrap();
    let (_server, port, _) = spawn_serve(dir.path(), &["--api-keys-file", keys.to_str().unwrap()]);
    let response = block_on(serving::client(port).with_key(Some("s3cret")).call(
        "GET",
        "/sessions",
        None,
        &[("host", "box.example")],
    ));
    assert_eq!(response.status, 200, "{response:?}");
}

#[test]
fn serve_holds_the_streams_and_connections_it_is_told_to() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port, _) = spawn_serve(
        dir.path(),
        &[
            "--chat-workflow",
            "chat",
            "--max-streams-per-session",
            "2",
            "--max-connections",
            "4",
        ],
    );
    let chat = "0190a8c4-5f00-7000-8000-00000000c4a8";
    assert_eq!(serving::post_chat(port, chat, "Hi").status, 200);
    let path = format!("/sessions/{chat}/events");
    let client = serving::client(port);
    block_on(async {
        let first = client.events(&path, &[]).await;
        let second = client.events(&path, &[]).await;
        assert_eq!((first.status, second.status), (200, 200));
        let third = client.events(&path, &[]).await;
        assert_eq!(third.status, 429, "a third stream of one session");
        drop((first, second));
        // The server sees the two closed when their connections end: a stream opens again.
        openharness_testkit::eventually(
            std::time::Duration::from_secs(10),
            "a stream of the session after two closed",
            || async {
                let again = client.events(&path, &[]).await.status;
                if again == 200 { Ok(()) } else { Err(again) }
            },
        )
        .await;
    });
    drop(_server);

    // A server of its own, so no connection of the streams above is still closing: four
    // silent connections fill the cap; a fifth closes the one silent longest.
    let (_server, port, _) = spawn_serve(dir.path(), &["--max-connections", "4"]);
    use std::io::Read;
    let mut silent: Vec<_> = (0..4)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(get(port, "/health", &[]).status, 200);
    silent[0]
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        silent[0].read(&mut [0; 1]).unwrap(),
        0,
        "the oldest silent connection was closed"
    );
}
