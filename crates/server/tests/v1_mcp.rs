//! MCP servers as a platform capability: a platform started with the Python SDK's server (over
//! stdio) lists it as `mcp:counting` with the server's tools, an agent given it has them, and
//! a message whose model calls `add` reaches the server once, recorded with its name. An
//! unknown `mcp:` capability is refused like any other.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness_core::Store;
use openharness_mcp::McpClient;
use openharness_platform::Platform;
use openharness_provider::{Reply, ScriptedProvider};
use openharness_server::ServerOptions;
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;

#[path = "v1_common/mod.rs"]
mod common;
#[path = "../../mcp/tests/common/mod.rs"]
mod servers;

use common::client::serve;
use common::on_every_store;

on_every_store!(an_agent_given_an_mcp_capability_calls_the_servers_tools);

async fn an_agent_given_an_mcp_capability_calls_the_servers_tools(store: Arc<dyn Store>) {
    let calls = servers::Calls::new();
    let counting = McpClient::connect(&servers::counting_stdio(&calls))
        .await
        .unwrap();
    let scripted =
        ScriptedProvider::new().fallback("assistant", |_request| {
            Reply::output_with(|results| json!(format!("2 + 40 = {}", results[0]["result"])))
                .run_tool("call-1", "add", json!({ "a": 2, "b": 40 }))
        });
    let platform = Platform::new(Arc::clone(&store), None)
        .with_provider(Arc::new(scripted))
        .with_mcp_servers(vec![counting]);
    let client = serve(platform, ServerOptions::default()).await;

    let (status, capability) = client.get("/v1/capabilities/mcp:counting").await;
    assert_eq!(status, 200, "{capability}");
    assert_eq!(capability["status"], "available");
    assert_eq!(
        capability["tools"],
        json!(["add", "slow", "fail", "crash", "garbage", "grow"])
    );
    let (_, all) = client.get("/v1/capabilities?search=mcp").await;
    assert_eq!(all["data"].as_array().unwrap().len(), 1, "{all}");
    let (_, document) = client.get("/openapi.json").await;
    let allowed = document.to_string();
    assert!(
        allowed.contains("mcp:counting"),
        "the OpenAPI enum names it"
    );

    let a = &client.agent("calc", "Add.").await;
    let capabilities = format!("/v1/agents/{a}/capabilities");
    client
        .refuses(
            "PUT",
            &capabilities,
            json!({"capabilities": ["mcp:nowhere"]}),
            422,
            "invalid",
        )
        .await;
    let (status, set) = client
        .send(
            "PUT",
            &capabilities,
            json!({"capabilities": ["mcp:counting"]}),
        )
        .await;
    assert_eq!(status, 200, "{set}");

    let path = client.session(a).await;
    let (status, posted) = client.say(&path, "What is 2 + 40?").await;
    assert_eq!(status, 201, "{posted}");
    eventually(LIMIT, "the turn to finish", || async {
        let (_, read) = client.get(&path).await;
        if read["finished_at"].is_string() {
            Ok(())
        } else {
            Err(read)
        }
    })
    .await;
    let events = client.get(&format!("{path}/events?limit=100")).await.1;
    assert_eq!(calls.seen(), ["add"], "the server was called once");
    let text = events.to_string();
    assert!(text.contains("2 + 40 = 42"), "{text}");
}
