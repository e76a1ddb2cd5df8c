//! What a posted message carries beyond its text, through the `/v1` API over real sockets to a
//! fake Anthropic server on 127.0.0.1: image parts (by URL, as base64, as a `data:` URL) reach
//! the model as image blocks with the transcript marking them, stay in the conversation for
//! later turns, and come back in the message as posted; `controls.reasoning.effort` reaches the
//! model as `output_config.effort` for that turn only; malformed parts are `422` and record
//! nothing. Every scenario runs on a `MemoryStore` and on PostgreSQL
//! (`OPENHARNESS_TEST_POSTGRES`; skipped, saying so, when unset).
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use openharness_core::Store;
use openharness_platform::{MAX_IMAGES_PER_MESSAGE, Platform, PlatformOptions};
use openharness_provider::testing::FakeServer;
use openharness_provider::testing::anthropic::{KEY, json_output};
use serde_json::{Value, json};

mod common;
use common::client::{Client, error, master_keys, serve};
use common::on_every_store;

/// A platform whose default model is served by `fake`, an agent and a session of it: the
/// client and the session's path.
async fn session_on(store: Arc<dyn Store>, fake: &FakeServer) -> (Client, String) {
    let platform = Platform::new(store, Some(master_keys("k1", "5a")));
    let client = serve(platform, PlatformOptions::default()).await;
    let (_, provider) = client
        .send(
            "POST",
            "/v1/llm-providers",
            json!({"name": "fake", "provider_type": "anthropic", "api_key": KEY,
                   "base_url": fake.base_url(), "is_default": true}),
        )
        .await;
    let provider = provider["id"].as_str().unwrap();
    client
        .send(
            "POST",
            &format!("/v1/llm-providers/{provider}/models"),
            json!({"model_id": "claude-fake", "is_default": true}),
        )
        .await;
    let (_, agent) = client
        .send(
            "POST",
            "/v1/agents",
            json!({"name": "viewer", "system_prompt": "Describe pictures."}),
        )
        .await;
    let a = agent["id"].as_str().unwrap();
    let (_, session) = client
        .send("POST", &format!("/v1/agents/{a}/sessions"), json!({}))
        .await;
    let path = format!(
        "/v1/agents/{a}/sessions/{}",
        session["id"].as_str().unwrap()
    );
    (client, path)
}

/// The session's messages once there are `count` of them.
async fn messages(client: &Client, path: &str, count: usize) -> Vec<Value> {
    for _ in 0..1000 {
        let (_, page) = client.get(&format!("{path}/messages")).await;
        let data = page["data"].as_array().unwrap().clone();
        if data.len() >= count {
            return data;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the session never had {count} messages");
}

const PNG: &str = "iVBORw0KGgo=";

async fn images_and_reasoning_reach_the_model_and_the_message_keeps_its_images(
    store: Arc<dyn Store>,
) {
    let fake = FakeServer::anthropic(KEY).await.unwrap();
    fake.respond(json_output(&json!({"reply": "A cat and a dot."})));
    fake.respond(json_output(&json!({"reply": "A gif."})));
    let (client, path) = session_on(store, &fake).await;

    let content = json!([
        {"type": "text", "text": "What are these?"},
        {"type": "image", "url": "https://example.com/cat.png"},
        {"type": "image", "base64": PNG, "media_type": "image/png"},
    ]);
    let (status, posted) = client
        .send(
            "POST",
            &format!("{path}/messages"),
            json!({"content": content, "controls": {"reasoning": {"effort": "high"}}}),
        )
        .await;
    assert_eq!(status, 201, "{posted}");
    assert_eq!(posted["content"], content, "returned as posted");
    assert_eq!(posted["controls"], json!({"reasoning": {"effort": "high"}}));

    let said = messages(&client, &path, 2).await;
    assert_eq!(said[0]["content"], content, "read back as posted");
    assert_eq!(said[1]["content"][0]["text"], "A cat and a dot.");
    let first = &fake.requests()[0].body;
    let blocks = first["messages"][0]["content"].as_array().unwrap();
    assert_eq!(
        blocks[..2],
        [
            json!({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}}),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}),
        ]
    );
    let prompt = blocks[2]["text"].as_str().unwrap();
    assert!(
        prompt.contains("User: What are these? [image 1] [image 2]"),
        "{prompt}"
    );
    assert_eq!(first["output_config"]["effort"], "high");

    // A second message of one image (as a data: URL), no controls: the model sees the whole
    // conversation's images, and this turn asks for no effort.
    let (status, second) = client
        .send(
            "POST",
            &format!("{path}/messages"),
            json!({"content": [{"type": "image", "url": "data:image/gif;base64,R0lGODlh"}]}),
        )
        .await;
    assert_eq!(status, 201, "{second}");
    assert_eq!(
        second["content"],
        json!([{"type": "image", "base64": "R0lGODlh", "media_type": "image/gif"}]),
        "a data: URL is kept as its bytes"
    );
    messages(&client, &path, 4).await;
    let next = &fake.requests()[1].body;
    let blocks = next["messages"][0]["content"].as_array().unwrap();
    assert_eq!(blocks.len(), 4, "three images and the prompt: {blocks:?}");
    assert_eq!(blocks[2]["source"]["media_type"], "image/gif");
    let prompt = blocks[3]["text"].as_str().unwrap();
    assert!(prompt.contains("User: [image 3]"), "{prompt}");
    assert!(
        next["output_config"].get("effort").is_none(),
        "the effort was that message's: {next}"
    );
}

async fn malformed_image_parts_are_422_and_record_nothing(store: Arc<dyn Store>) {
    let fake = FakeServer::anthropic(KEY).await.unwrap();
    let (client, path) = session_on(store, &fake).await;
    let text = json!({"type": "text", "text": "Look."});
    let too_many: Vec<Value> = (0..=MAX_IMAGES_PER_MESSAGE)
        .map(|_| json!({"type": "image", "url": "https://example.com/a.png"}))
        .collect();
    let bad = [
        (
            json!([text, {"type": "image", "url": "https://example.com/a.png", "base64": PNG, "media_type": "image/png"}]),
            "not both",
        ),
        (json!([text, {"type": "image"}]), "needs `url` or `base64`"),
        (
            json!([text, {"type": "image", "base64": PNG}]),
            "needs its `media_type`",
        ),
        (
            json!([text, {"type": "image", "base64": PNG, "media_type": "image/tiff"}]),
            "`media_type` must be one of",
        ),
        (
            json!([text, {"type": "image", "base64": "not base64!", "media_type": "image/png"}]),
            "does not decode",
        ),
        (
            json!([text, {"type": "image", "url": "ftp://example.com/a.png"}]),
            "http(s) or `data:` URL",
        ),
        (
            json!([text, {"type": "image", "url": "data:image/png,rawbytes"}]),
            "`data:<media type>;base64,<bytes>`",
        ),
        (json!(too_many), "at most 20 images"),
        (
            json!([{"type": "text", "text": "  "}]),
            "non-empty text part or an image",
        ),
    ];
    for (content, says) in bad {
        let answer = client
            .send(
                "POST",
                &format!("{path}/messages"),
                json!({"content": content}),
            )
            .await;
        error(&answer, 422, "invalid");
        let message = answer.1["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{says:?} in {message:?}");
    }
    let answer = client
        .send(
            "POST",
            &format!("{path}/messages"),
            json!({"content": [text], "controls": {"reasoning": {"effort": "extreme"}}}),
        )
        .await;
    assert_eq!(answer.0, 422, "{}", answer.1);
    let (_, page) = client.get(&format!("{path}/messages")).await;
    assert_eq!(page["total"], 0, "nothing was recorded: {page}");
    assert!(fake.requests().is_empty(), "no model was asked");
}

on_every_store!(
    images_and_reasoning_reach_the_model_and_the_message_keeps_its_images,
    malformed_image_parts_are_422_and_record_nothing,
);
