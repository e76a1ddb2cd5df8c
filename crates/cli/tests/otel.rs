//! `openharness` and OpenTelemetry, against a collector on 127.0.0.1: with
//! OTEL_EXPORTER_OTLP_ENDPOINT set, `demo` exports its session live; `otel export` sends the same
//! spans again (same ids) and says how many, marked as a replay with `--replay`; without an endpoint, or to a collector that refuses,
//! it fails with one clear line. `serve` exports the sessions it records as they are recorded.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use openharness_otel::testing::Receiver;
use openharness_testkit::eventually;

mod binary;
mod serving;

fn openharness(dir: &Path, endpoint: Option<&str>, args: &[&str]) -> Output {
    let mut command = binary::command(dir);
    command.args(args);
    if let Some(endpoint) = endpoint {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    text(&output.stdout)
}

/// A collector on 127.0.0.1 and its base URL (what OTEL_EXPORTER_OTLP_ENDPOINT names).
async fn collector() -> (Receiver, String) {
    let receiver = Receiver::start().await;
    let base = receiver
        .endpoint()
        .url()
        .trim_end_matches("/v1/traces")
        .to_owned();
    (receiver, base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_exports_live_and_otel_export_sends_the_same_spans_again() {
    let (receiver, base) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_owned();

    let (dir2, base2) = (dir.clone(), base.clone());
    tokio::task::spawn_blocking(move || {
        ok(&openharness(&dir2, Some(&base2), &["demo", "--no-answer"]))
    })
    .await
    .unwrap();
    let live = receiver.spans();
    let names: BTreeSet<&str> = live.iter().map(|s| s.name.as_str()).collect();
    assert!(
        names.contains("invoke_workflow planner-executor"),
        "{names:?}"
    );
    assert!(names.contains("invoke_agent planner"), "{names:?}");
    assert!(names.contains("invoke_agent executor"), "{names:?}");
    // The demo's model is the scripted one: its calls name it; nothing is marked a replay.
    for span in live.iter().filter(|s| s.name.starts_with("invoke_agent")) {
        assert_eq!(
            span.attribute("gen_ai.provider.name").as_deref(),
            Some("scripted")
        );
    }
    assert!(
        live.iter()
            .all(|s| s.attribute("openharness.replay").is_none())
    );

    let dir2 = dir.clone();
    let sessions =
        tokio::task::spawn_blocking(move || ok(&openharness(&dir2, None, &["sessions", "--json"])))
            .await
            .unwrap();
    let sessions: serde_json::Value = serde_json::from_str(&sessions).unwrap();
    let session = sessions[0]["id"].as_str().unwrap().to_owned();

    let (dir2, base2, session2) = (dir.clone(), base.clone(), session.clone());
    let said = tokio::task::spawn_blocking(move || {
        ok(&openharness(
            &dir2,
            None,
            &["otel", "export", "--endpoint", &base2, &session2],
        ))
    })
    .await
    .unwrap();
    assert_eq!(
        said.trim(),
        format!(
            "{} spans of 1 session(s) sent to {}",
            live.len(),
            receiver.endpoint().url()
        )
    );
    let all = receiver.spans();
    assert_eq!(&all[live.len()..].len(), &live.len());
    let ids = |spans: &[openharness_otel::testing::ReceivedSpan]| {
        spans
            .iter()
            .map(|s| {
                (
                    s.span_id.clone(),
                    s.parent_span_id.clone(),
                    s.start_unix_nanos,
                )
            })
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(
        ids(&all[live.len()..]),
        ids(&live),
        "the same spans, live and after the fact"
    );

    // `--replay` marks every span of the export.
    let (dir2, base2, session2) = (dir.clone(), base.clone(), session.clone());
    tokio::task::spawn_blocking(move || {
        ok(&openharness(
            &dir2,
            None,
            &[
                "otel",
                "export",
                "--replay",
                "--endpoint",
                &base2,
                &session2,
            ],
        ))
    })
    .await
    .unwrap();
    let replayed = receiver.spans();
    let replayed = &replayed[2 * live.len()..];
    assert_eq!(replayed.len(), live.len());
    assert!(
        replayed
            .iter()
            .all(|s| s.attribute("openharness.replay").as_deref() == Some("true"))
    );

    // No endpoint: one clear line.
    let (dir2, session2) = (dir.clone(), session.clone());
    let failed = tokio::task::spawn_blocking(move || {
        openharness(&dir2, None, &["otel", "export", &session2])
    })
    .await
    .unwrap();
    assert!(!failed.status.success());
    assert!(
        text(&failed.stderr).contains("no OpenTelemetry endpoint is configured"),
        "{}",
        text(&failed.stderr)
    );

    // A collector that refuses: says which and how many.
    receiver.refuse(true);
    let (dir2, base2, session2) = (dir.clone(), base.clone(), session.clone());
    let refused = tokio::task::spawn_blocking(move || {
        openharness(
            &dir2,
            None,
            &["otel", "export", "--endpoint", &base2, &session2],
        )
    })
    .await
    .unwrap();
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("did not accept") && stderr.contains(&base),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_exports_live_the_sessions_it_records() {
    let (receiver, base) = collector().await;
    let dir = tempfile::tempdir().unwrap();
    let mut command = binary::command(dir.path());
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--chat-workflow", "chat"])
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &base);
    let (_server, port, _) = tokio::task::spawn_blocking(move || serving::start_serve(command))
        .await
        .unwrap();
    let answered = tokio::task::spawn_blocking(move || {
        serving::post_chat(port, "0190a8c4-5f00-7000-8000-0000000011e7", "Hi there")
    })
    .await
    .unwrap();
    assert_eq!(answered.status, 200, "{answered:?}");
    // The server keeps running: the spans arrive while it serves (the worker sends what it
    // closed every half second), not at its shutdown.
    let spans = eventually(
        std::time::Duration::from_secs(20),
        "serve to export the turn's spans",
        || async {
            let spans = receiver.spans();
            let names: BTreeSet<String> = spans.iter().map(|s| s.name.clone()).collect();
            if names.contains("invoke_workflow chat")
                && names.iter().any(|n| n.starts_with("invoke_agent"))
            {
                Ok(spans)
            } else {
                Err(names)
            }
        },
    )
    .await;
    let turn = spans
        .iter()
        .find(|s| s.name == "invoke_workflow chat")
        .unwrap();
    assert_eq!(
        turn.attribute("gen_ai.conversation.id").as_deref(),
        Some("0190a8c4-5f00-7000-8000-0000000011e7")
    );
    let agent = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent"))
        .unwrap();
    assert_eq!(agent.parent_span_id, turn.span_id);
    assert_eq!(agent.trace_id, turn.trace_id);
}
