//! Two `openharness serve` processes on one PostgreSQL database: a session started on A
//! streams on B (live tails cross processes through the store), and a turn a crash cut off is
//! finished by one of them, once, with no client call (each runs the host's recovery); input
//! then starts a turn on either. Skipped, saying so, without `OPENHARNESS_TEST_POSTGRES`.
#![allow(clippy::unwrap_used, missing_docs)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use openharness_testkit::http::Client;
use openharness_testkit::{block_on, eventually};
use serde_json::Value;

mod binary;
mod serving;

use binary::Killed;

/// A `serve` process, killed when dropped, and the kit's client of it.
struct Serve {
    _server: Killed,
    client: Client,
}

fn serve(dir: &Path, store: &str) -> Serve {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openharness"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
        .current_dir(dir);
    let (server, port, first) = serving::start_serve(command);
    assert!(first.starts_with("Serving"), "{first}");
    Serve {
        _server: server,
        client: serving::client(port),
    }
}

/// One JSON request (`body` as its raw text): the status and the body as JSON, `null` when
/// it is not JSON.
fn json(server: &Serve, method: &str, path: &str, body: &str) -> (u16, Value) {
    let response = block_on(server.client.call(
        method,
        path,
        Some(body),
        &[("accept", "application/json")],
    ));
    (response.status, response.json_or_null())
}

/// The seqs of an event stream read until the turn's `workflow:completed`.
fn stream_until_completed(server: &Serve, session: &str) -> Vec<u64> {
    let path = format!("/sessions/{session}/events");
    block_on(async {
        // Until B has seen the session's first append, it answers 404.
        let events = eventually(
            Duration::from_secs(20),
            "the session to reach B",
            || async {
                let events = server.client.events(&path, &[]).await;
                if events.status == 404 {
                    Err(events.status)
                } else {
                    Ok(events)
                }
            },
        );
        let mut events = events.await;
        assert_eq!(events.status, 200, "{:?}", events.headers);
        let frames = events
            .until(Duration::from_secs(20), |frame| {
                frame.event.as_deref() == Some("workflow:completed")
            })
            .await;
        assert!(
            frames
                .last()
                .is_some_and(|frame| frame.event.as_deref() == Some("workflow:completed")),
            "the stream ended before the turn did: {frames:?}"
        );
        frames
            .iter()
            .filter(|frame| frame.id.is_some())
            .map(|frame| frame.seq())
            .collect()
    })
}

#[test]
fn two_servers_on_one_postgresql_share_sessions_live_and_finish_a_cut_turn_once() {
    let Ok(url) = std::env::var("OPENHARNESS_TEST_POSTGRES") else {
        eprintln!("skipped: OPENHARNESS_TEST_POSTGRES is not set (CI sets it; see .ci/run)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let a = serve(dir.path(), &url);
    let b = serve(dir.path(), &url);

    // Started on A, followed on B.
    let (status, created) = json(
        &a,
        "POST",
        "/sessions",
        r#"{"workflow":"chat","input":"Hi from A"}"#,
    );
    assert_eq!(status, 202, "{created}");
    let session = created["session"].as_str().unwrap().to_owned();
    let seen_on_b = stream_until_completed(&b, &session);
    let (_, page) = json(
        &a,
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

    // A turn a crash cut off (imported as such): the servers finish it with no client call.
    let cut = {
        let export = binary::command(dir.path())
            .args(["export", &session, "--store", &url])
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
        // The export was edited (cut, another session id): its hash chains no longer hold.
        let import = binary::command(dir.path())
            .args([
                "import",
                file.to_str().unwrap(),
                "--ignore-chain",
                "--store",
                &url,
            ])
            .output()
            .unwrap();
        assert!(
            import.status.success(),
            "{}",
            String::from_utf8_lossy(&import.stderr)
        );
        copy
    };
    // Neither server is asked: the recovery both run finds the cut turn and one of them
    // finishes it, once (the other sees the claim held, or the turn ended).
    let summary = format!("/sessions/{cut}");
    let completed = |server: &Serve| {
        let (_, page) = json(
            server,
            "GET",
            &format!("/sessions/{cut}/events?limit=1000"),
            "",
        );
        page["events"].as_array().map_or(0, |events| {
            events
                .iter()
                .filter(|e| e["name"] == "workflow:completed")
                .count()
        })
    };
    block_on(eventually(
        Duration::from_secs(20),
        "a server to finish the cut turn on its own",
        || async {
            let summary = a.client.get(&summary).await.json_or_null();
            if summary["status"] == "idle" {
                Ok(())
            } else {
                Err(summary)
            }
        },
    ));
    // Three recovery rounds later, still finished once.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(completed(&a), 1, "the cut turn finished once");

    // Then input on either server is a turn.
    let (status, started) = json(
        &b,
        "POST",
        &format!("/sessions/{cut}/input"),
        r#"{"text":"more"}"#,
    );
    assert_eq!(status, 202, "{started}");
    block_on(eventually(
        Duration::from_secs(20),
        "the input's turn to end",
        || async {
            let summary = a.client.get(&summary).await.json_or_null();
            if summary["status"] == "idle"
                && summary["len"].as_u64() > started["recorded"]["seq"].as_u64()
            {
                Ok(())
            } else {
                Err(summary)
            }
        },
    ));
    assert_eq!(completed(&b), 2);
}

/// A fresh id in the shape the store writes.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("test-{nanos:x}")
}
