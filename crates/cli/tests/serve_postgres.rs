//! Two `openharness serve` processes on one PostgreSQL database: a session started on A
//! streams on B (live tails cross processes through the store), and a session whose turn has
//! not ended (as B sees one running on A, or one a crash cut off) is busy on both; `resume` on
//! B finishes it. Skipped, saying so, without `OPENHARNESS_TEST_POSTGRES`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `serve` process, killed when dropped.
struct Serve {
    child: Child,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path, store: &str) -> Serve {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_openharness"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--store",
            store,
        ])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("Serving"), "{first}");
    Serve { child, port }
}

/// One request with `Connection: close`: the status and the raw body.
fn call(port: u16, method: &str, path: &str, body: &str, accept: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\naccept: {accept}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

fn json(port: u16, method: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let (status, body) = call(port, method, path, body, "application/json");
    // Bodies may be chunked: take the JSON object between the first `{` and the last `}`.
    let json = body
        .find('{')
        .and_then(|start| body.rfind('}').map(|end| &body[start..=end]))
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(serde_json::Value::Null);
    (status, json)
}

/// The seqs of an event stream read until the turn's `workflow:completed`.
fn stream_until_completed(port: u16, session: &str) -> Vec<u64> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        write!(
            stream,
            "GET /sessions/{session}/events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        reader.read_line(&mut head).unwrap();
        if head.contains(" 404 ") {
            // B has not seen the session's first append yet.
            assert!(Instant::now() < deadline, "the session never reached B");
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        assert!(head.contains(" 200 "), "{head}");
        let mut seqs = Vec::new();
        let mut line = String::new();
        while reader.read_line(&mut line).unwrap() > 0 {
            if let Some(id) = line.trim_end().strip_prefix("id: ") {
                seqs.push(id.parse().unwrap());
            }
            if line.trim_end() == "event: workflow:completed" {
                // Read on to its id line, then stop.
                line.clear();
                reader.read_line(&mut line).unwrap();
                if let Some(id) = line.trim_end().strip_prefix("id: ") {
                    seqs.push(id.parse().unwrap());
                }
                return seqs;
            }
            line.clear();
        }
        panic!("the stream ended before the turn did");
    }
}

#[test]
fn two_servers_on_one_postgresql_share_sessions_live_and_refuse_a_turn_that_has_not_ended() {
    let Ok(url) = std::env::var("OPENHARNESS_TEST_POSTGRES") else {
        eprintln!("skipped: OPENHARNESS_TEST_POSTGRES is not set (CI sets it; see .ci/run)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), &url);
    let b = serve(dir.path(), &url);

    // Started on A, followed on B.
    let (status, created) = json(
        a.port,
        "POST",
        "/sessions",
        r#"{"workflow":"chat","input":"Hi from A"}"#,
    );
    assert_eq!(status, 202, "{created}");
    let session = created["session"].as_str().unwrap().to_owned();
    let seen_on_b = stream_until_completed(b.port, &session);
    let (_, page) = json(
        a.port,
        "GET",
        &format!("/sessions/{session}/events?limit=1000"),
        "",
    );
    let len = page["len"].as_u64().unwrap();
    assert_eq!(
        seen_on_b,
        (0..len).collect::<Vec<_>>(),
        "B saw every event once, in order"
    );

    // A turn that has not ended (here: one a crash cut off, imported as such) is busy on both
    // servers, whichever started it; B's resume finishes it.
    let cut = {
        let export = Command::new(env!("CARGO_BIN_EXE_openharness"))
            .args(["export", &session, "--store", &url])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(export.status.success());
        let text = String::from_utf8(export.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let last_started = lines
            .iter()
            .rposition(|l| l.contains("\"name\":\"agent:started\""))
            .unwrap();
        // A new session id, so the original stays as it is.
        let copy = uuid_like();
        let kept: Vec<String> = lines[..=last_started]
            .iter()
            .map(|l| l.replace(&session, &copy))
            .collect();
        let events = kept.iter().filter(|l| l.contains("\"seq\"")).count();
        let file = dir.path().join("cut.jsonl");
        std::fs::write(
            &file,
            kept.join("\n")
                + &format!("\n{{\"session\":\"{copy}\",\"end\":true,\"count\":{events}}}\n"),
        )
        .unwrap();
        let import = Command::new(env!("CARGO_BIN_EXE_openharness"))
            .args(["import", file.to_str().unwrap(), "--store", &url])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            import.status.success(),
            "{}",
            String::from_utf8_lossy(&import.stderr)
        );
        copy
    };
    for port in [a.port, b.port] {
        let (status, busy) = json(
            port,
            "POST",
            &format!("/sessions/{cut}/input"),
            r#"{"text":"more"}"#,
        );
        assert_eq!(
            (status, busy["error"]["code"].as_str()),
            (409, Some("session_busy")),
            "{busy}"
        );
    }
    let (status, _) = json(b.port, "POST", &format!("/sessions/{cut}/resume"), "");
    assert_eq!(status, 202);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, summary) = json(a.port, "GET", &format!("/sessions/{cut}"), "");
        if summary["status"] == "idle" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the resume never finished: {summary}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A fresh id in the shape the store writes.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("test-{nanos:x}")
}
