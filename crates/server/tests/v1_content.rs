//! What a posted message carries and what the model is asked, through the `/v1` API over real
//! sockets to a fake Anthropic server on 127.0.0.1: the agent's system prompt as `system` and
//! the conversation as role-correct messages, the reply asked for as plain text and streamed
//! as clean text (`message.delta`s that concatenate to the stored reply); image parts (by URL,
//! as base64, as a `data:` URL) reach the model as image blocks of their own message, stay in
//! the conversation for later turns, and come back in the message as posted;
//! `controls.reasoning.effort` reaches the model as `output_config.effort` for that turn only;
//! malformed parts are `422` and record nothing. Every scenario runs on a `MemoryStore` and on PostgreSQL
//! (`OPENHARNESS_TEST_POSTGRES`; skipped, saying so, when unset).
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness_core::Store;
use openharness_platform::{MAX_IMAGES_PER_MESSAGE, Platform};
use openharness_provider::testing::FakeServer;
use openharness_provider::testing::anthropic::{KEY, text};
use openharness_server::ServerOptions;
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};

#[path = "v1_common/mod.rs"]
mod common;
use common::client::{Client, error, master_keys, serve};
use common::on_every_store;

/// A platform whose default model is served by `fake`, an agent and a session of it: the
/// client and the session's path.
async fn session_on(store: Arc<dyn Store>, fake: &FakeServer) -> (Client, String) {
    let platform = Platform::new(store, Some(master_keys("k1", "5a")));
    let client = serve(platform, ServerOptions::default()).await;
    client
        .default_model(
            json!({"name": "fake", "provider_type": "anthropic", "api_key": KEY,
                   "base_url": fake.base_url(), "is_default": true}),
            "claude-fake",
        )
        .await;
    let a = &client.agent("viewer", "Describe pictures.").await;
    let path = client.session(a).await;
    (client, path)
}

/// The session's messages once there are `count` of them and its turn has ended (so the next
/// message may be posted).
async fn messages(client: &Client, path: &str, count: usize) -> Vec<Value> {
    let what = format!("{count} messages with the turn ended");
    eventually(LIMIT, &what, || async {
        let (_, page) = client.get(&format!("{path}/messages")).await;
        let data = page["data"].as_array().unwrap().clone();
        let (_, session) = client.get(path).await;
        if data.len() >= count
            && session["status"] == "pending"
            && session["finished_at"].is_string()
        {
            Ok(data)
        } else {
            Err((data.len(), session["status"].clone()))
        }
    })
    .await
}

const PNG: &str = "iVBORw0KGgo=";

async fn images_and_reasoning_reach_the_model_and_the_message_keeps_its_images(
    store: Arc<dyn Store>,
) {
    let fake = FakeServer::anthropic(KEY).await.unwrap();
    fake.respond(text("A cat and a dot."));
    fake.respond(text("A gif."));
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
    let cat =
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}});
    let dot = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}});
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [cat, dot, {"type": "text", "text": "What are these?"}]}]),
        "the message's images go with it, before its text"
    );
    assert_eq!(
        first["output_config"],
        json!({"effort": "high"}),
        "the effort, and no JSON format: the reply is asked for as text"
    );

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
    let gif = json!({"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"}});
    assert_eq!(
        next["messages"],
        json!([
            {"role": "user", "content": [cat, dot, {"type": "text", "text": "What are these?"}]},
            {"role": "assistant", "content": "A cat and a dot."},
            {"role": "user", "content": [gif]},
        ]),
        "the whole conversation, each image in its own message"
    );
    assert!(
        next.get("output_config").is_none(),
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

/// A reply with what JSON would escape: newlines, quotes, a backslash, non-ASCII.
const REPLY: &str = "Two lines:\n\"quoted\" and C:\\temp\n— ¡sí! {\"reply\": 1}";

async fn the_reply_streams_as_clean_text_that_is_the_stored_message(store: Arc<dyn Store>) {
    let fake = FakeServer::anthropic(KEY).await.unwrap();
    fake.respond(text(REPLY));
    let (client, path) = session_on(store, &fake).await;
    let (status, posted) = client.say(&path, "Say it.").await;
    assert_eq!(status, 201, "{posted}");
    let said = messages(&client, &path, 2).await;
    assert_eq!(said[1]["role"], "assistant");
    assert_eq!(said[1]["content"], json!([{"type": "text", "text": REPLY}]));

    let events = format!("{path}/events?limit=100");
    let notes = eventually(LIMIT, "a session.completed notification", || async {
        let (_, page) = client.get(&events).await;
        let notes = page["data"].as_array().unwrap().clone();
        if notes.iter().any(|n| n["type"] == "session.completed") {
            Ok(notes)
        } else {
            Err(notes.len())
        }
    })
    .await;
    let deltas: Vec<&str> = notes
        .iter()
        .filter(|n| n["type"] == "message.delta")
        .map(|n| n["data"]["delta"].as_str().unwrap())
        .collect();
    assert!(deltas.len() > 3, "streamed in pieces: {deltas:?}");
    assert_eq!(
        deltas.concat(),
        REPLY,
        "the deltas are the reply's characters, no JSON around or inside them"
    );

    let asked = &fake.requests()[0].body;
    assert_eq!(
        asked["system"], "Describe pictures.",
        "the system prompt as `system`"
    );
    assert_eq!(
        asked["messages"],
        json!([{"role": "user", "content": "Say it."}]),
        "the conversation as messages, no transcript"
    );
    for forcing in ["output_config", "output_format", "tool_choice"] {
        assert!(asked.get(forcing).is_none(), "no JSON asked for: {asked}");
    }
}

on_every_store!(
    the_reply_streams_as_clean_text_that_is_the_stored_message,
    images_and_reasoning_reach_the_model_and_the_message_keeps_its_images,
    malformed_image_parts_are_422_and_record_nothing,
);
