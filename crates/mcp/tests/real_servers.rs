//! The client against real MCP servers: the reference server (`server-everything`, from npm)
//! over stdio and over Streamable HTTP, and a server written with the official Python SDK over
//! stdio and over HTTP with a bearer token and a header. Failures — a tool error, a hang past
//! the timeout, a server that dies, one that speaks no MCP, one that cannot start — are clear
//! errors, never a hang or a panic; `tools/list_changed` re-lists the tools.
#![allow(clippy::unwrap_used, missing_docs)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use openharness_mcp::{McpClient, McpError, McpServer, toolset};
use serde_json::json;

#[tokio::test]
async fn the_reference_server_over_stdio() {
    let client = McpClient::connect(&everything_stdio()).await.unwrap();
    let names: Vec<String> = client.listed().into_iter().map(|t| t.name).collect();
    for expected in ["echo", "get-sum", "get-tiny-image"] {
        assert!(names.contains(&expected.to_owned()), "{names:?}");
    }
    let (server, _version) = client.server_info().unwrap();
    assert!(server.contains("everything"), "{server}");

    let tools = client.tools();
    let echo = tools.iter().find(|t| t.name() == "echo").unwrap();
    assert_eq!(echo.server(), Some("everything"));
    assert_eq!(echo.input_schema()["type"], "object");
    let said = echo
        .call(json!({ "message": "hi from openharness" }))
        .await
        .unwrap();
    assert_eq!(said, json!("Echo: hi from openharness"));

    let sum = client
        .call("get-sum", json!({ "a": 2, "b": 40 }))
        .await
        .unwrap();
    assert!(sum.to_string().contains("42"), "{sum}");

    let image = client.call("get-tiny-image", json!({})).await.unwrap();
    let blocks = image.as_array().unwrap();
    assert!(
        blocks
            .iter()
            .any(|b| b["type"] == "image" && b["mimeType"] == "image/png"),
        "{image}"
    );

    // Arguments the server's schema refuses are an error result, not a failure of the run.
    let refused = client
        .call("get-sum", json!({ "a": "two" }))
        .await
        .unwrap_err();
    assert!(!refused.message().is_empty());
    client.close();
}

#[tokio::test]
async fn the_reference_server_over_streamable_http() {
    let running = everything_http();
    let client = McpClient::connect(&McpServer::http("everything", &running.url))
        .await
        .unwrap();
    let said = client
        .call("echo", json!({ "message": "over http" }))
        .await
        .unwrap();
    assert_eq!(said, json!("Echo: over http"));
    assert!(client.listed().len() >= 5);
}

#[tokio::test]
async fn a_python_sdk_server_over_stdio_and_over_http_with_a_bearer_token() {
    let calls = Calls::new();
    let stdio = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    assert_eq!(
        stdio.call("add", json!({ "a": 2, "b": 3 })).await.unwrap(),
        json!({ "result": 5 })
    );

    let running = counting_http(&calls, Some("t0ken"));
    let refused = McpClient::connect(
        &McpServer::http("counting", &running.url).connect_timeout(Duration::from_secs(10)),
    )
    .await
    .unwrap_err();
    assert!(matches!(refused, McpError::Connect { .. }), "{refused}");
    let wrong_header = McpClient::connect(
        &McpServer::http("counting", &running.url)
            .bearer_token("t0ken")
            .header("X-Team", "sales"),
    )
    .await;
    assert!(wrong_header.is_err());
    let http = McpClient::connect(
        &McpServer::http("counting", &running.url)
            .bearer_token("t0ken")
            .header("X-Team", "research"),
    )
    .await
    .unwrap();
    assert_eq!(
        http.call("add", json!({ "a": 20, "b": 22 })).await.unwrap(),
        json!({ "result": 42 })
    );
    assert_eq!(calls.seen(), ["add", "add"]);
}

#[tokio::test]
async fn tool_errors_timeouts_and_a_dying_server_are_error_results() {
    let calls = Calls::new();
    let server = counting_stdio(&calls).call_timeout(Duration::from_millis(700));
    let client = McpClient::connect(&server).await.unwrap();

    let failed = client
        .call("fail", json!({ "message": "disk full" }))
        .await
        .unwrap_err();
    assert!(failed.message().contains("disk full"), "{failed}");

    let started = Instant::now();
    let slow = client
        .call("slow", json!({ "seconds": 5 }))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        slow.message()
            .contains("did not answer `slow` within 0.7 s"),
        "{slow}"
    );

    let unknown = client.call("nope", json!({})).await.unwrap_err();
    assert!(
        unknown
            .message()
            .contains("no longer offers a tool named `nope`"),
        "{unknown}"
    );
    let not_an_object = client.call("add", json!([1, 2])).await.unwrap_err();
    assert!(
        not_an_object.message().contains("must be a JSON object"),
        "{not_an_object}"
    );

    let crashed = client.call("crash", json!({})).await.unwrap_err();
    assert!(crashed.message().contains("`counting`"), "{crashed}");
    // Once it is gone every call says so, quickly.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let after = client
        .call("add", json!({ "a": 1, "b": 1 }))
        .await
        .unwrap_err();
    assert!(after.message().contains("stopped"), "{after}");
    assert!(after.message().contains("crashing on purpose"), "{after}");
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn servers_that_cannot_start_or_speak_no_mcp_are_errors_not_hangs() {
    let missing = McpClient::connect(&McpServer::stdio("ghost", "/nonexistent/mcp-server"))
        .await
        .unwrap_err();
    assert!(matches!(missing, McpError::Spawn { .. }), "{missing}");
    assert!(missing.to_string().contains("`ghost`"));

    let python = python().to_string_lossy().into_owned();
    let chatter = McpServer::stdio("chatter", &python)
        .arg("-c")
        .arg("import sys; print('hello, I am not MCP'); sys.stderr.write('no protocol here'); sys.exit(0)")
        .connect_timeout(Duration::from_secs(10));
    let started = Instant::now();
    let err = McpClient::connect(&chatter).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(err.to_string().contains("`chatter`"), "{err}");

    let sleeper = McpServer::stdio("sleeper", &python)
        .arg("-c")
        .arg("import time; time.sleep(30)")
        .connect_timeout(Duration::from_millis(500));
    let err = McpClient::connect(&sleeper).await.unwrap_err();
    assert!(matches!(err, McpError::Timeout { .. }), "{err}");

    let nobody = McpServer::http("nobody", format!("http://127.0.0.1:{}/mcp", free_port()))
        .connect_timeout(Duration::from_secs(10));
    let err = McpClient::connect(&nobody).await.unwrap_err();
    assert!(err.to_string().contains("`nobody`"), "{err}");
}

#[tokio::test]
async fn malformed_lines_from_a_server_are_skipped_and_the_call_still_answered() {
    // A line that is not JSON-RPC and a reply whose id answers no request, written on the
    // protocol's stdout in the middle of a call: skipped, the call answered, the next too.
    let calls = Calls::new();
    let server = counting_stdio(&calls).call_timeout(Duration::from_secs(3));
    let client = McpClient::connect(&server).await.unwrap();
    let answered = client.call("garbage", json!({})).await.unwrap();
    assert_eq!(answered, json!({ "result": "after the garbage" }));
    let next = client.call("add", json!({ "a": 1, "b": 2 })).await.unwrap();
    assert_eq!(next, json!({ "result": 3 }));
    assert_eq!(calls.seen(), ["garbage", "add"]);
}

#[tokio::test]
async fn a_list_changed_notification_relists_the_tools() {
    let calls = Calls::new();
    let client = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    assert!(client.listed().iter().all(|t| t.name != "grown"));
    let listings = client.listings();
    assert_eq!(
        client.call("grow", json!({})).await.unwrap(),
        json!({ "result": "grown" })
    );
    relisted(&client, listings).await;
    assert!(client.listed().iter().any(|t| t.name == "grown"));
    assert!(client.tools().iter().any(|t| t.name() == "grown"));
    assert_eq!(
        client.call("grown", json!({ "text": "up" })).await.unwrap(),
        json!({ "result": "UP" })
    );
}

#[tokio::test]
async fn names_two_sources_share_are_prefixed() {
    let calls = Calls::new();
    let a = McpClient::connect(&counting_stdio(&calls)).await.unwrap();
    let b = McpClient::connect(&counting_stdio_named("twin", &calls))
        .await
        .unwrap();
    let names: Vec<String> = toolset(Vec::new(), &[a, b])
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(names.contains(&"counting_add".to_owned()), "{names:?}");
    assert!(names.contains(&"twin_add".to_owned()), "{names:?}");
    assert!(!names.contains(&"add".to_owned()));
}
