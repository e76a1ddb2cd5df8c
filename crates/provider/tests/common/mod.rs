//! Helpers shared by the provider tests: a sink that records events, schemas and tools.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use openharness_core::{
    FnTool, Provider, Tool,
    adapter::{ProviderEvent, ProviderRequest, ProviderResult, ProviderSink, Toolbox},
};
use serde_json::{Value, json};

/// A sink and the events it received.
pub fn recording_sink() -> (ProviderSink, Arc<Mutex<Vec<ProviderEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&events);
    (
        ProviderSink::new(move |e| record.lock().unwrap().push(e)),
        events,
    )
}

/// The text deltas among `events`.
pub fn deltas(events: &[ProviderEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::TextDelta(d) => Some(d.clone()),
            _ => None,
        })
        .collect()
}

/// Everything but the text deltas among `events`: the tool calls and results, in order.
pub fn tool_events(events: &[ProviderEvent]) -> Vec<ProviderEvent> {
    events
        .iter()
        .filter(|e| !matches!(e, ProviderEvent::TextDelta(_)))
        .cloned()
        .collect()
}

/// Sends `request` to `provider`, discarding what it streams.
pub async fn ask(provider: &impl Provider, request: ProviderRequest) -> ProviderResult {
    provider.complete(request, ProviderSink::discard()).await
}

/// The schema of a small answer: `{ "answer": integer, "note"?: string }`.
pub fn answer_schema() -> Arc<Value> {
    Arc::new(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Answer",
        "type": "object",
        "properties": {
            "answer": { "type": "integer", "format": "int64", "minimum": 0 },
            "note": { "type": ["string", "null"] }
        },
        "required": ["answer"]
    }))
}

pub fn request(prompt: &str) -> ProviderRequest {
    ProviderRequest::new("oracle", prompt, answer_schema())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct CityArgs {
    /// The city.
    pub city: String,
}

/// Two tools: `weather` (succeeds) and `population` (fails for any city but Lisbon).
pub fn two_tools() -> Toolbox {
    let weather = FnTool::new("weather", "Current weather.", |args: CityArgs| async move {
        Ok::<_, String>(json!({ "city": args.city, "celsius": 21 }))
    });
    let population = FnTool::new(
        "population",
        "Population of a city.",
        |args: CityArgs| async move {
            if args.city == "Lisbon" {
                Ok(json!(545_000))
            } else {
                Err(format!("no census data for {}", args.city))
            }
        },
    );
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(weather), Arc::new(population)];
    Toolbox::new(tools)
}

/// The schema of a `String` output: a request for plain text.
pub fn text_schema() -> Arc<Value> {
    Arc::new(schemars::schema_for!(String).to_value())
}

/// A reply with a newline, quotes and a backslash: what must come back as text, not JSON.
pub const TEXT_REPLY: &str = "Bye, \"friend\".\nSee C:\\temp — ¡adiós!";

/// A chat asking for plain text: a system prompt and a conversation of every role (a user
/// message with an image, an assistant answer, a tool call and its result), ending with the
/// user's latest message, and no prompt after it.
pub fn chat_request() -> ProviderRequest {
    use openharness_core::{ChatMessage, Image, adapter::ChatToolCall};
    ProviderRequest::new("assistant", "", text_schema())
        .with_system(Some("You are terse.".into()))
        .with_messages(vec![
            ChatMessage::user("What is this?")
                .with_images(vec![Image::url("https://example.com/cat.png")]),
            ChatMessage::assistant("A cat."),
            ChatMessage::user("And the time?"),
            ChatMessage::tool_calls(
                "",
                vec![ChatToolCall {
                    id: "call_1".into(),
                    name: "current_time".into(),
                    input: json!({}),
                }],
            ),
            ChatMessage::tool_result("call_1", "current_time", json!({ "utc": "12:00" }), false),
            ChatMessage::assistant("It is noon."),
            ChatMessage::user("Say bye on two lines."),
        ])
}

/// Sends [`chat_request`] to `provider` and checks what every provider answers it with when the
/// model replies [`TEXT_REPLY`]: that text as the output (a JSON string), streamed as text
/// deltas that add up to it.
pub async fn answers_the_chat_with_text(provider: &impl Provider) {
    let (sink, events) = recording_sink();
    let response = provider.complete(chat_request(), sink).await.unwrap();
    assert_eq!(
        response.output,
        json!(TEXT_REPLY),
        "the text, as a JSON string"
    );
    assert_eq!(deltas(&events.lock().unwrap()).concat(), TEXT_REPLY);
}
