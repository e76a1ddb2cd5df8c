//! OpenAiProvider against the fake Chat Completions server: streaming, tool-call fragments,
//! strict structured output, retries, faults and cancellation.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    TEXT_REPLY, answers_the_chat_with_text, ask, deltas, recording_sink, request, text_schema,
    two_tools,
};
use openharness_core::{
    Image, Provider, ProviderError, ReasoningEffort,
    adapter::{ProviderEvent, ProviderRequest, ProviderSink},
};
use openharness_provider::testing::openai::{self as wire, KEY};
use openharness_provider::testing::{FakeResponse, FakeServer};
use openharness_provider::{ApiKey, OpenAiProvider, Pricing, RetryPolicy};
use serde_json::json;

async fn setup() -> (FakeServer, OpenAiProvider) {
    let server = FakeServer::openai(KEY).await.unwrap();
    let provider = OpenAiProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .retry(RetryPolicy::default().backoff(Duration::from_millis(1), Duration::from_millis(5)))
        .build()
        .unwrap();
    (server, provider)
}

#[tokio::test]
async fn text_streams_and_strict_structured_output_round_trips_optional_fields() {
    let (server, provider) = setup().await;
    // Strict mode makes `note` required and nullable, so the model sends `"note": null`.
    server.respond(wire::json_output(&json!({ "answer": 42, "note": null })));
    let (sink, events) = recording_sink();
    let response = provider
        .complete(request("What is the answer?"), sink)
        .await
        .unwrap();
    assert_eq!(
        response.output,
        json!({ "answer": 42 }),
        "the null of an optional field is removed"
    );
    let deltas = deltas(&events.lock().unwrap());
    assert!(deltas.len() > 2);
    assert_eq!(deltas.concat(), r#"{"answer":42,"note":null}"#);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (67, 31)
    );
    assert_eq!(response.cost, None, "no pricing configured");

    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        sent.body["stream_options"],
        json!({ "include_usage": true })
    );
    let format = &sent.body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "oracle");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["answer", "note"])
    );
    assert_eq!(
        sent.body["messages"],
        json!([{ "role": "user", "content": "What is the answer?" }])
    );
}

#[tokio::test]
async fn schemas_that_cannot_be_strict_are_sent_non_strict() {
    let (server, provider) = setup().await;
    let map = Arc::new(json!({
        "type": "object",
        "properties": { "scores": { "type": "object", "additionalProperties": { "type": "integer" } } },
        "required": ["scores"]
    }));
    server.respond(wire::json_output(&json!({ "scores": { "a": 1 } })));
    let response = ask(
        &provider,
        ProviderRequest::new("scorer", "score", Arc::clone(&map)),
    )
    .await
    .unwrap();
    assert_eq!(response.output, json!({ "scores": { "a": 1 } }));
    let format = &server.requests()[0].body["response_format"]["json_schema"];
    assert_eq!(format["strict"], false);
    assert_eq!(format["schema"], *map);
}

#[tokio::test]
async fn tool_call_fragments_are_assembled_by_index_and_results_sent_back() {
    let (server, provider) = setup().await;
    server.respond(wire::tool_calls(&[
        (
            "call_PieqNSej6kM9hgYbcQdbZSaC",
            "weather",
            json!({ "city": "Tokyo" }),
        ),
        ("call_Z2", "population", json!({ "city": "Lisbon" })),
    ]));
    server.respond(wire::json_output(&json!({ "answer": 545000 })));
    let (sink, events) = recording_sink();
    let response = provider
        .complete(request("q").with_tools(two_tools()), sink)
        .await
        .unwrap();
    assert_eq!(response.output, json!({ "answer": 545000 }));
    assert_eq!(response.usage.input_tokens, 80 + 67);

    let calls: Vec<_> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ToolResult {
                id,
                output,
                is_error,
                ..
            } => Some((id.clone(), output.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_PieqNSej6kM9hgYbcQdbZSaC".to_owned(),
                json!({ "city": "Tokyo", "celsius": 21 }),
                false
            ),
            ("call_Z2".to_owned(), json!(545000), false),
        ]
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"][1]["function"]["name"],
        "population"
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        "{\"city\":\"Tokyo\"}"
    );
    assert_eq!(
        messages[2],
        json!({ "role": "tool", "tool_call_id": "call_PieqNSej6kM9hgYbcQdbZSaC", "content": "{\"celsius\":21,\"city\":\"Tokyo\"}" })
    );
    assert_eq!(messages[3]["tool_call_id"], "call_Z2");
}

#[tokio::test]
async fn a_server_repeating_the_function_name_in_every_fragment_calls_the_tool_once_by_name() {
    let (server, provider) = setup().await;
    server.respond(wire::tool_calls_repeating_names(&[(
        "call_1",
        "weather",
        json!({ "city": "Tokyo" }),
    )]));
    server.respond(wire::json_output(&json!({ "answer": 1 })));
    let (sink, events) = recording_sink();
    provider
        .complete(request("q").with_tools(two_tools()), sink)
        .await
        .unwrap();
    let called: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::ToolCalled { tool, .. } => Some(tool.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(called, ["weather"]);
}

#[tokio::test]
async fn rate_limit_honours_retry_after_ms_and_pricing_gives_a_cost() {
    let server = FakeServer::openai(KEY).await.unwrap();
    let provider = OpenAiProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .pricing(Pricing::per_million(2.0, 8.0))
        .build()
        .unwrap();
    server.respond(wire::rate_limited("20"));
    server.respond(wire::json_output(&json!({ "answer": 1 })));
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(server.request_count(), 2);
    assert!((response.cost.unwrap() - (67.0 * 2.0 + 31.0 * 8.0) / 1e6).abs() < 1e-12);
}

#[tokio::test]
async fn server_errors_are_retried_and_then_reported_with_the_apis_message() {
    let (server, provider) = setup().await;
    for _ in 0..3 {
        server.respond(wire::error(
            503,
            "server_error",
            "The engine is currently overloaded",
        ));
    }
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert_eq!(server.request_count(), 3);
    assert!(
        matches!(&err, ProviderError::Api { status: 503, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("server_error: The engine is currently overloaded"),
        "{err}"
    );
}

#[tokio::test]
async fn a_wrong_key_is_a_401_that_is_not_retried_and_does_not_show_the_key() {
    let (server, _) = setup().await;
    let provider = OpenAiProvider::builder(ApiKey::new("sk-wrong-secret-999"))
        .base_url(server.base_url())
        .build()
        .unwrap();
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert_eq!(server.request_count(), 1);
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    assert!(
        !err.to_string().contains("sk-wrong-secret-999")
            && !format!("{err:?}").contains("sk-wrong-secret-999")
    );
}

#[tokio::test]
async fn an_error_line_inside_a_200_stream_fails_the_request() {
    let (server, provider) = setup().await;
    server.respond(wire::error_in_stream("Partial"));
    let (sink, events) = recording_sink();
    let err = provider.complete(request("q"), sink).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("the stream reported an error: The server had an error"),
        "{err}"
    );
    assert_eq!(deltas(&events.lock().unwrap()).concat(), "Partial");
}

#[tokio::test]
async fn a_200_that_is_not_an_event_stream_fails_with_the_servers_own_message() {
    let (server, provider) = setup().await;
    // A gateway answering 200 with a JSON error instead of a stream.
    server.respond(FakeResponse::json(
        200,
        json!({ "error": { "message": "upstream model is loading", "type": "gateway_error" } }),
    ));
    let err = ask(&provider, request("q")).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("upstream model is loading"), "{message}");
    assert!(message.contains("application/json"), "{message}");
    assert!(!message.contains("cut mid-message"), "{message}");
    assert_eq!(server.request_count(), 1, "not retried");

    // Not JSON: the start of the body, shortened.
    let page = format!("<html>{}</html>", "x".repeat(2000));
    server.respond(FakeResponse::body(200, "text/html", page));
    let err = ask(&provider, request("q")).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("text/html"), "{message}");
    assert!(message.contains("<html>xxx"), "{message}");
    assert!(
        message.len() < 700,
        "the body is cut to 500 characters: {message}"
    );
}

#[tokio::test]
async fn a_refusal_is_a_typed_outcome_carrying_the_models_words() {
    let (server, provider) = setup().await;
    server.respond(wire::refusal("I'm sorry, I can't help with that request."));
    let (sink, events) = recording_sink();
    let err = provider.complete(request("q"), sink).await.unwrap_err();
    match &err {
        ProviderError::Refused { provider, message } => {
            assert_eq!(provider, "openai");
            assert_eq!(message, "I'm sorry, I can't help with that request.");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(
        deltas(&events.lock().unwrap()).is_empty(),
        "a refusal is not output text"
    );
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_stream_cut_before_done_fails() {
    let (server, provider) = setup().await;
    let chunks = wire::text_chunks("Hello there, world");
    server.respond(FakeResponse::stream(chunks[..3].to_vec()));
    let (sink, events) = recording_sink();
    let err = provider.complete(request("q"), sink).await.unwrap_err();
    assert!(err.to_string().contains("cut mid-message"), "{err}");
    assert_eq!(deltas(&events.lock().unwrap()).concat(), "Hello there,");

    server.respond(FakeResponse::stream(chunks).cut_after(2));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        err.to_string().contains("stream broke") || err.to_string().contains("cut mid-message"),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_chunks_fail_and_comments_are_skipped() {
    let (server, provider) = setup().await;
    let mut chunks = wire::text_chunks("{\"answer\":9}");
    chunks.insert(1, ": OPENROUTER PROCESSING\n\n".into());
    server.respond(FakeResponse::stream(chunks.clone()));
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 9 }));

    chunks.insert(2, "data: {\"id\":\"chatcmpl-x\",\"choices\":[{\n\n".into());
    server.respond(FakeResponse::stream(chunks));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(err.to_string().contains("malformed stream"), "{err}");
}

#[tokio::test]
async fn cancelling_drops_the_http_request_promptly() {
    let (server, provider) = setup().await;
    server.respond(FakeResponse::stream(wire::text_chunks("slow")[..2].to_vec()).hang());
    tokio::select! {
        _ = provider.complete(request("q"), ProviderSink::discard()) => panic!("the hanging stream cannot finish"),
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    assert!(
        server
            .wait_for_disconnects(1, Duration::from_secs(10))
            .await
    );
}

#[tokio::test]
async fn images_follow_the_prompt_as_image_url_parts_and_effort_is_reasoning_effort() {
    let (server, provider) = setup().await;
    server.respond(wire::json_output(&json!({ "answer": 7, "note": null })));
    let req = request("What is in these pictures?")
        .with_images(vec![
            Image::url("https://example.com/cat.png"),
            Image::base64("image/jpeg", "/9j/4AAQ"),
        ])
        .with_reasoning(Some(ReasoningEffort::Medium));
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 7 }));
    let body = &server.requests()[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap();
    assert_eq!(
        user["content"],
        json!([
            { "type": "text", "text": "What is in these pictures?" },
            { "type": "image_url", "image_url": { "url": "https://example.com/cat.png" } },
            { "type": "image_url", "image_url": { "url": "data:image/jpeg;base64,/9j/4AAQ" } },
        ])
    );
    assert_eq!(body["reasoning_effort"], "medium");
}

#[tokio::test]
async fn a_chat_sends_a_system_message_and_role_correct_messages_and_text_comes_back_as_text() {
    let server = FakeServer::openai(KEY).await.unwrap();
    let provider = OpenAiProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .system("Provider rules.")
        .build()
        .unwrap();
    server.respond(wire::text(TEXT_REPLY));
    answers_the_chat_with_text(&provider).await;
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"],
        json!([
            { "role": "system", "content": "Provider rules.\n\nYou are terse." },
            { "role": "user", "content": [
                { "type": "text", "text": "What is this?" },
                { "type": "image_url", "image_url": { "url": "https://example.com/cat.png" } },
            ] },
            { "role": "assistant", "content": "A cat." },
            { "role": "user", "content": "And the time?" },
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "current_time", "arguments": "{}" } },
            ] },
            { "role": "tool", "tool_call_id": "call_1", "content": "{\"utc\":\"12:00\"}" },
            { "role": "assistant", "content": "It is noon." },
            { "role": "user", "content": "Say bye on two lines." },
        ]),
        "the empty prompt is left out: the conversation ends with the user's message"
    );
    assert!(
        body.get("response_format").is_none(),
        "text mode sends no response_format: {body}"
    );
}

#[tokio::test]
async fn text_mode_keeps_the_tool_loop_and_a_structured_chat_keeps_its_schema() {
    let (server, provider) = setup().await;
    server.respond(wire::tool_calls(&[(
        "call_w",
        "weather",
        json!({ "city": "Lisbon" }),
    )]));
    server.respond(wire::text("Sunny."));
    let req = ProviderRequest::new("assistant", "Weather?", text_schema()).with_tools(two_tools());
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(response.output, json!("Sunny."));
    let second = &server.requests()[1].body;
    let roles: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert!(second.get("response_format").is_none());

    // A structured request with a conversation keeps `response_format` exactly as before.
    server.respond(wire::json_output(&json!({ "answer": 5, "note": null })));
    let req = request("Now?").with_messages(vec![
        openharness_core::ChatMessage::user("Before."),
        openharness_core::ChatMessage::assistant("Noted."),
    ]);
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 5 }));
    let body = &server.requests()[2].body;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        body["messages"],
        json!([
            { "role": "user", "content": "Before." },
            { "role": "assistant", "content": "Noted." },
            { "role": "user", "content": "Now?" },
        ])
    );
}

#[tokio::test]
async fn the_fake_refuses_messages_the_real_api_refuses() {
    let server = FakeServer::openai(KEY).await.unwrap();
    let client = reqwest::Client::new();
    let cases = [
        (
            json!([{ "role": "robot", "content": "hi" }]),
            "Invalid value: 'robot'",
        ),
        (
            json!([{ "role": "user", "content": "hi" }, { "role": "tool", "tool_call_id": "call_x", "content": "1" }]),
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            json!([
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": null, "tool_calls": [{ "id": "call_y", "type": "function", "function": { "name": "t", "arguments": "{}" } }] },
                { "role": "user", "content": "and?" },
            ]),
            "did not have response messages: call_y",
        ),
        (
            json!([{ "role": "user", "content": "hi" }, { "role": "assistant", "content": null }]),
            "expected a string, got null",
        ),
    ];
    for (messages, expected) in cases {
        let response = client
            .post(format!("{}/chat/completions", server.base_url()))
            .header("authorization", format!("Bearer {KEY}"))
            .header("content-type", "application/json")
            .body(json!({ "model": "gpt-4.1", "stream": true, "messages": messages }).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{messages}");
        let body: serde_json::Value =
            serde_json::from_str(&response.text().await.unwrap()).unwrap();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(expected),
            "{message:?} should say {expected:?}"
        );
    }
}
