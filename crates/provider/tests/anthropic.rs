//! AnthropicProvider against the fake Anthropic server: streaming, tools, structured output,
//! retries, faults, cancellation, and keys kept out of every message.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    TEXT_REPLY, answers_the_chat_with_text, ask, deltas, recording_sink, request, text_schema,
    tool_events, two_tools,
};
use openharness_core::{
    ChatMessage, Image, Provider, ProviderError, ReasoningEffort,
    adapter::{ProviderEvent, ProviderRequest},
};
use openharness_provider::anthropic::{OUTPUT_TOOL, OutputMethod};
use openharness_provider::testing::anthropic::{self as wire, KEY};
use openharness_provider::testing::{FakeResponse, FakeServer};
use openharness_provider::{AnthropicProvider, ApiKey, RetryPolicy};
use serde_json::json;

fn fast_retries() -> RetryPolicy {
    RetryPolicy::default()
        .max_retries(2)
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
}

async fn setup() -> (FakeServer, AnthropicProvider) {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .retry(fast_retries())
        .build()
        .unwrap();
    (server, provider)
}

#[tokio::test]
async fn text_streams_as_deltas_and_usage_and_cost_are_reported() {
    let (server, provider) = setup().await;
    let answer = json!({ "answer": 42, "note": "¡olá — the answer!" });
    server.respond(wire::json_output(&answer));
    let (sink, events) = recording_sink();
    let response = provider
        .complete(request("What is the answer?"), sink.clone())
        .await
        .unwrap();

    assert_eq!(response.output, answer);
    let deltas = deltas(&events.lock().unwrap());
    assert!(deltas.len() > 3, "streamed in pieces: {deltas:?}");
    assert_eq!(deltas.concat(), answer.to_string());
    assert_eq!(sink.text(), answer.to_string());
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (25, 10)
    );
    let cost = response.cost.unwrap();
    assert!(
        (cost - (25.0 * 3.0 + 10.0 * 15.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );

    let sent = &server.requests()[0];
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], "claude-sonnet-4-5");
    assert_eq!(
        sent.body["messages"],
        json!([{ "role": "user", "content": "What is the answer?" }])
    );
    let schema = &sent.body["output_config"]["format"]["schema"];
    assert_eq!(sent.body["output_config"]["format"]["type"], "json_schema");
    assert_eq!(schema["additionalProperties"], false);
    assert!(
        schema["properties"]["answer"].get("minimum").is_none(),
        "moved to the description: {schema}"
    );
}

#[tokio::test]
async fn the_agents_model_wins_over_the_default() {
    let (server, provider) = setup().await;
    server.respond(wire::json_output(&json!({ "answer": 1 })));
    let req = request("q").with_model(Some("claude-haiku-4-5".into()));
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(server.requests()[0].body["model"], "claude-haiku-4-5");
    assert!((response.cost.unwrap() - (25.0 * 1.0 + 10.0 * 5.0) / 1e6).abs() < 1e-12);
}

#[tokio::test]
async fn tool_loop_calls_two_tools_reports_them_and_sends_results_back() {
    let (server, provider) = setup().await;
    server.respond(wire::tool_calls(&[
        ("toolu_01A", "weather", json!({ "city": "Lisbon" })),
        ("toolu_01B", "population", json!({ "city": "Atlantis" })),
    ]));
    server.respond(wire::json_output(&json!({ "answer": 21 })));
    let (sink, events) = recording_sink();
    let req = request("Weather?").with_tools(two_tools());
    let response = provider.complete(req, sink).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 21 }));
    assert_eq!(
        response.usage.input_tokens,
        40 + 25,
        "usage summed over turns"
    );

    let tools = tool_events(&events.lock().unwrap());
    assert_eq!(
        tools,
        [
            ProviderEvent::ToolCalled {
                server: None,
                id: "toolu_01A".into(),
                tool: "weather".into(),
                input: json!({ "city": "Lisbon" })
            },
            ProviderEvent::ToolResult {
                id: "toolu_01A".into(),
                tool: "weather".into(),
                output: json!({ "city": "Lisbon", "celsius": 21 }),
                is_error: false
            },
            ProviderEvent::ToolCalled {
                server: None,
                id: "toolu_01B".into(),
                tool: "population".into(),
                input: json!({ "city": "Atlantis" })
            },
            ProviderEvent::ToolResult {
                id: "toolu_01B".into(),
                tool: "population".into(),
                output: json!("no census data for Atlantis"),
                is_error: true
            },
        ]
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools: Vec<_> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(tools, [json!("weather"), json!("population")]);
    assert_eq!(
        requests[0].body["tools"][0]["input_schema"]["properties"]["city"]["type"],
        "string"
    );
    let messages = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        messages[1]["content"][1],
        json!({ "type": "tool_use", "id": "toolu_01A", "name": "weather", "input": { "city": "Lisbon" } })
    );
    assert_eq!(
        messages[2]["content"],
        json!([
            { "type": "tool_result", "tool_use_id": "toolu_01A", "content": "{\"celsius\":21,\"city\":\"Lisbon\"}", "is_error": false },
            { "type": "tool_result", "tool_use_id": "toolu_01B", "content": "no census data for Atlantis", "is_error": true }
        ])
    );
}

#[tokio::test]
async fn the_tool_loop_stops_at_max_turns() {
    let (server, provider) = setup().await;
    server.fallback(|_| wire::tool_calls(&[("toolu_loop", "weather", json!({ "city": "Porto" }))]));
    let req = request("loop").with_tools(two_tools()).with_max_turns(3);
    let err = ask(&provider, req).await.unwrap_err();
    assert!(err.to_string().contains("after 3 turns"), "{err}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn recursive_schemas_use_the_forced_tool_with_the_original_schema() {
    let (server, provider) = setup().await;
    let tree = Arc::new(json!({
        "type": "object",
        "properties": { "name": { "type": "string" }, "children": { "type": "array", "items": { "$ref": "#" } } },
        "required": ["name", "children"]
    }));
    let output = json!({ "name": "root", "children": [{ "name": "leaf", "children": [] }] });
    server.respond(wire::tool_output(&output));
    let response = ask(
        &provider,
        ProviderRequest::new("tree", "grow", Arc::clone(&tree)),
    )
    .await
    .unwrap();
    assert_eq!(response.output, output);
    let body = &server.requests()[0].body;
    assert!(body.get("output_config").is_none());
    assert_eq!(
        body["tool_choice"],
        json!({ "type": "tool", "name": OUTPUT_TOOL })
    );
    assert_eq!(body["tools"][0]["input_schema"], *tree);
}

#[tokio::test]
async fn forced_tool_with_other_tools_uses_tool_choice_any() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .structured_output(OutputMethod::ForcedTool)
        .build()
        .unwrap();
    server.respond(wire::tool_calls(&[(
        "toolu_1",
        "weather",
        json!({ "city": "Lisbon" }),
    )]));
    server.respond(wire::tool_output(&json!({ "answer": 7 })));
    let response = ask(&provider, request("q").with_tools(two_tools()))
        .await
        .unwrap();
    assert_eq!(response.output, json!({ "answer": 7 }));
    assert_eq!(
        server.requests()[0].body["tool_choice"],
        json!({ "type": "any" })
    );
}

#[tokio::test]
async fn the_beta_output_format_shape_sends_its_header() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .structured_output(OutputMethod::BetaOutputFormat)
        .build()
        .unwrap();
    server.respond(wire::json_output(&json!({ "answer": 3 })));
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 3 }));
    let sent = &server.requests()[0];
    assert_eq!(
        sent.header("anthropic-beta"),
        Some("structured-outputs-2025-11-13")
    );
    assert!(sent.body["output_format"]["schema"].is_object());
}

#[tokio::test]
async fn untransformed_schemas_are_rejected_by_the_fake_like_the_real_api() {
    // Building a provider installs the crypto provider reqwest needs.
    let (server, _provider) = setup().await;
    server.respond(wire::json_output(&json!({})));
    let client = reqwest::Client::new();
    let body = json!({
        "model": "m", "max_tokens": 10, "messages": [],
        "output_config": { "format": { "type": "json_schema", "schema": *common::answer_schema() } }
    });
    let response = client
        .post(format!("{}/v1/messages", server.base_url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let text = response.text().await.unwrap();
    assert!(
        text.contains("minimum") && text.contains("additionalProperties"),
        "{text}"
    );
}

#[tokio::test]
async fn rate_limit_429_honours_retry_after_then_succeeds() {
    let (server, provider) = setup().await;
    server.respond(wire::rate_limited("1"));
    server.respond(wire::json_output(&json!({ "answer": 1 })));
    let started = std::time::Instant::now();
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 1 }));
    assert_eq!(server.request_count(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "waited the server's retry-after: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn overloaded_529_is_retried_with_backoff_until_the_budget_is_spent() {
    let (server, provider) = setup().await;
    for _ in 0..3 {
        server.respond(wire::overloaded());
    }
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert_eq!(server.request_count(), 3, "one attempt and two retries");
    match err {
        ProviderError::Api {
            status, message, ..
        } => {
            assert_eq!(status, 529);
            assert_eq!(message, "overloaded_error: Overloaded");
        }
        other => panic!("{other:?}"),
    }

    server.respond(wire::overloaded());
    server.respond(wire::json_output(&json!({ "answer": 2 })));
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 2 }));
}

#[tokio::test]
async fn x_should_retry_false_and_client_errors_are_not_retried() {
    let (server, provider) = setup().await;
    server.respond(wire::overloaded().header("x-should-retry", "false"));
    assert!(ask(&provider, request("q")).await.is_err());
    assert_eq!(server.request_count(), 1);
    server.respond(wire::error(400, "invalid_request_error", "messages: bad"));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert_eq!(server.request_count(), 2);
    assert!(
        err.to_string()
            .contains("HTTP 400: invalid_request_error: messages: bad"),
        "{err}"
    );
}

#[tokio::test]
async fn an_error_event_inside_a_200_stream_fails_after_the_text_already_streamed() {
    let (server, provider) = setup().await;
    server.respond(wire::error_in_stream("Partial answer"));
    let (sink, events) = recording_sink();
    let err = provider.complete(request("q"), sink).await.unwrap_err();
    assert!(
        err.to_string().contains("overloaded_error: Overloaded"),
        "{err}"
    );
    assert_eq!(deltas(&events.lock().unwrap()).concat(), "Partial answer");
    assert_eq!(
        server.request_count(),
        1,
        "a failure inside a stream is not retried"
    );
}

#[tokio::test]
async fn stop_reason_refusal_is_a_typed_outcome_not_an_output_to_re_ask() {
    let (server, provider) = setup().await;
    server.respond(wire::refusal("I can't help with that."));
    let err = ask(&provider, request("q")).await.unwrap_err();
    match &err {
        ProviderError::Refused { provider, message } => {
            assert_eq!(provider, "anthropic");
            assert_eq!(message, "I can't help with that.");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // Without any text, the stop reason still says what happened.
    server.respond(wire::refusal(""));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        matches!(&err, ProviderError::Refused { message, .. } if message.contains("refusal")),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 2, "a refusal is not retried");
}

#[tokio::test]
async fn a_200_json_error_instead_of_a_stream_keeps_the_servers_message() {
    let (server, provider) = setup().await;
    server.respond(FakeResponse::json(
        200,
        json!({ "type": "error", "error": { "type": "invalid_request_error", "message": "proxy: model not allowed" } }),
    ));
    let err = ask(&provider, request("q")).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("invalid_request_error: proxy: model not allowed"),
        "{message}"
    );
    assert!(!message.contains("cut mid-message"), "{message}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_stream_cut_mid_message_fails_clearly_and_keeps_the_deltas() {
    let (server, provider) = setup().await;
    // message_start, ping, block start, then two text deltas; the connection is then cut.
    let full = wire::message_events(
        &[wire::Block::Text("Hello there, world".into())],
        "end_turn",
        1,
        1,
    );
    server.respond(FakeResponse::stream(full.clone()).cut_after(5));
    let (sink, events) = recording_sink();
    let err = provider.complete(request("q"), sink).await.unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("stream broke") || message.contains("cut mid-message"),
        "{message}"
    );
    assert_eq!(deltas(&events.lock().unwrap()).concat(), "Hello there, w");

    // A clean end of the body before `message_stop` is a cut too.
    let mut truncated = full;
    truncated.truncate(truncated.len() - 2);
    server.respond(FakeResponse::stream(truncated));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        err.to_string().contains("ended before `message_stop`"),
        "{err}"
    );
}

#[tokio::test]
async fn malformed_sse_data_fails_with_the_event_name() {
    let (server, provider) = setup().await;
    let mut events = wire::message_events(&[wire::Block::Text("x".into())], "end_turn", 1, 1);
    events.insert(
        2,
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\n\n".into(),
    );
    server.respond(FakeResponse::stream(events));
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("malformed stream: the data of event `content_block_start` is not JSON"),
        "{err}"
    );
}

#[tokio::test]
async fn unknown_events_and_comments_are_ignored() {
    let (server, provider) = setup().await;
    let mut events = wire::message_events(
        &[wire::Block::Text("{\"answer\":5}".into())],
        "end_turn",
        1,
        1,
    );
    events.insert(1, ": keep-alive\n\n".into());
    events.insert(
        2,
        "event: brand_new_event\ndata: {\"type\":\"brand_new_event\"}\n\n".into(),
    );
    server.respond(FakeResponse::stream(events));
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 5 }));
}

#[tokio::test]
async fn cancelling_drops_the_http_request_promptly() {
    let (server, provider) = setup().await;
    let events = wire::message_events(&[wire::Block::Text("slow".into())], "end_turn", 1, 1);
    server.respond(FakeResponse::stream(events[..3].to_vec()).hang());
    let (sink, seen) = recording_sink();
    let call = provider.complete(request("q"), sink);
    tokio::select! {
        _ = call => panic!("the hanging stream cannot finish"),
        () = tokio::time::sleep(Duration::from_millis(300)) => {}
    }
    assert!(
        server
            .wait_for_disconnects(1, Duration::from_secs(10))
            .await,
        "the server saw the client go away"
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing streamed before the hang"
    );
}

#[tokio::test]
async fn the_idle_timeout_fails_a_silent_stream() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .timeouts(openharness_provider::Timeouts {
            connect: Duration::from_secs(5),
            idle: Duration::from_millis(200),
        })
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let events = wire::message_events(&[wire::Block::Text("slow".into())], "end_turn", 1, 1);
    server.respond(FakeResponse::stream(events[..2].to_vec()).hang());
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        err.to_string().contains("idle") || err.to_string().contains("stream broke"),
        "{err}"
    );
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(url)
        .retry(fast_retries())
        .build()
        .unwrap();
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(err.to_string().contains("request failed"), "{err}");
}

/// A writer that keeps everything logged, for the key-leak test.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_key_appears_in_no_log_error_or_debug_output() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let secret = "sk-ant-api03-very-secret-key";
    let server = FakeServer::anthropic(secret).await.unwrap();
    let builder = AnthropicProvider::builder(ApiKey::new(secret))
        .base_url(server.base_url())
        .retry(fast_retries());
    let provider = builder.clone().build().unwrap();
    // A retried 529, a success, then a 401 from a wrong key: every path that logs or errors.
    server.respond(wire::overloaded());
    server.respond(wire::json_output(&json!({ "answer": 1 })));
    ask(&provider, request("q")).await.unwrap();
    let wrong = AnthropicProvider::builder(ApiKey::new(format!("{secret}-wrong")))
        .base_url(server.base_url())
        .build()
        .unwrap();
    let err = ask(&wrong, request("q")).await.unwrap_err();

    let logged = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logged.contains("retrying"),
        "the retry was logged: {logged}"
    );
    for text in [
        logged,
        err.to_string(),
        format!("{err:?}"),
        format!("{provider:?}"),
        format!("{builder:?}"),
        format!("{wrong:?}"),
    ] {
        assert!(!text.contains(secret), "the key leaked into: {text}");
    }
    assert_eq!(
        server.requests()[0].header("x-api-key"),
        Some(secret),
        "it was sent, though"
    );
}

#[tokio::test]
async fn images_go_before_the_prompt_as_image_blocks_and_effort_goes_in_output_config() {
    let (server, provider) = setup().await;
    server.respond(wire::json_output(&json!({ "answer": 7 })));
    let req = request("What is in these pictures?")
        .with_images(vec![
            Image::url("https://example.com/cat.png"),
            Image::base64("image/png", "iVBORw0KGgo="),
        ])
        .with_reasoning(Some(ReasoningEffort::High));
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 7 }));
    let body = &server.requests()[0].body;
    assert_eq!(
        body["messages"][0]["content"],
        json!([
            { "type": "image", "source": { "type": "url", "url": "https://example.com/cat.png" } },
            { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } },
            { "type": "text", "text": "What is in these pictures?" },
        ])
    );
    assert_eq!(body["output_config"]["effort"], "high");
    assert_eq!(
        body["output_config"]["format"]["type"], "json_schema",
        "the effort sits beside the format"
    );
}

#[tokio::test]
async fn effort_with_the_forced_tool_gets_an_output_config_of_its_own() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .structured_output(OutputMethod::ForcedTool)
        .build()
        .unwrap();
    server.respond(wire::tool_output(&json!({ "answer": 1 })));
    let req = request("q").with_reasoning(Some(ReasoningEffort::Low));
    ask(&provider, req).await.unwrap();
    let body = &server.requests()[0].body;
    assert_eq!(body["output_config"], json!({ "effort": "low" }));
    assert_eq!(
        body["messages"][0]["content"], "q",
        "no images: the prompt stays a string"
    );
}

#[tokio::test]
async fn a_chat_sends_system_and_role_correct_messages_and_text_comes_back_as_text() {
    let (server, provider) = setup().await;
    server.respond(wire::text(TEXT_REPLY));
    answers_the_chat_with_text(&provider).await;
    let body = &server.requests()[0].body;
    assert_eq!(body["system"], "You are terse.");
    assert_eq!(
        body["messages"],
        json!([
            { "role": "user", "content": [
                { "type": "image", "source": { "type": "url", "url": "https://example.com/cat.png" } },
                { "type": "text", "text": "What is this?" },
            ] },
            { "role": "assistant", "content": "A cat." },
            { "role": "user", "content": "And the time?" },
            { "role": "assistant", "content": [
                { "type": "tool_use", "id": "call_1", "name": "current_time", "input": {} },
            ] },
            { "role": "user", "content": [
                { "type": "tool_result", "tool_use_id": "call_1", "content": "{\"utc\":\"12:00\"}", "is_error": false },
            ] },
            { "role": "assistant", "content": "It is noon." },
            { "role": "user", "content": "Say bye on two lines." },
        ]),
        "the empty prompt is left out: the conversation ends with the user's message"
    );
    for forcing in ["output_config", "output_format", "tool_choice", "tools"] {
        assert!(
            body.get(forcing).is_none(),
            "text mode sends no `{forcing}`: {body}"
        );
    }
}

#[tokio::test]
async fn text_mode_keeps_the_tool_loop_and_answers_with_the_last_turns_text() {
    let (server, provider) = setup().await;
    server.respond(wire::tool_calls(&[(
        "toolu_01A",
        "weather",
        json!({ "city": "Lisbon" }),
    )]));
    server.respond(wire::text("Sunny, 21 °C."));
    let req = ProviderRequest::new("assistant", "Weather in Lisbon?", text_schema())
        .with_tools(two_tools())
        .with_reasoning(Some(ReasoningEffort::Low));
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(response.output, json!("Sunny, 21 °C."));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0].body;
    assert_eq!(
        first["output_config"],
        json!({ "effort": "low" }),
        "effort only"
    );
    assert!(
        first.get("tool_choice").is_none(),
        "no forced tool: {first}"
    );
    assert_eq!(
        first["tools"].as_array().unwrap().len(),
        2,
        "the agent's tools only"
    );
    let roles: Vec<&str> = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
}

#[tokio::test]
async fn consecutive_messages_of_one_role_are_merged_and_the_prompt_comes_last() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let provider = AnthropicProvider::builder(ApiKey::new(KEY))
        .base_url(server.base_url())
        .system("Provider rules.")
        .build()
        .unwrap();
    server.respond(wire::json_output(&json!({ "answer": 3 })));
    let req = request("And now?")
        .with_system(Some("Agent rules.".into()))
        .with_messages(vec![
            ChatMessage::user("One."),
            ChatMessage::user(""),
            ChatMessage::user("Two."),
        ])
        .with_images(vec![Image::url("https://example.com/a.png")]);
    let response = ask(&provider, req).await.unwrap();
    assert_eq!(
        response.output,
        json!({ "answer": 3 }),
        "structured as before"
    );
    let body = &server.requests()[0].body;
    assert_eq!(body["system"], "Provider rules.\n\nAgent rules.");
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": [
            { "type": "text", "text": "One." },
            { "type": "text", "text": "Two." },
            { "type": "image", "source": { "type": "url", "url": "https://example.com/a.png" } },
            { "type": "text", "text": "And now?" },
        ] }]),
        "one user turn; the empty message dropped; the prompt's images before its text"
    );
    assert_eq!(body["output_config"]["format"]["type"], "json_schema");
}

/// Posts `body` to the fake as the provider would and returns the status and error message.
async fn post_raw(server: &FakeServer, body: serde_json::Value) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{}/v1/messages", server.base_url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let body: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    (
        status,
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn the_fake_refuses_messages_the_real_api_refuses() {
    let server = FakeServer::anthropic(KEY).await.unwrap();
    let ask = |messages: serde_json::Value| json!({ "model": "claude-sonnet-4-5", "max_tokens": 10, "stream": true, "messages": messages });
    let cases = [
        (
            ask(json!([{ "role": "system", "content": "x" }, { "role": "user", "content": "hi" }])),
            "Input should be 'user' or 'assistant'",
        ),
        (
            ask(
                json!([{ "role": "assistant", "content": "hi" }, { "role": "user", "content": "x" }]),
            ),
            "first message must use the \"user\" role",
        ),
        (
            ask(json!([{ "role": "user", "content": "a" }, { "role": "user", "content": "b" }])),
            "roles must alternate",
        ),
        (
            ask(json!([
                { "role": "user", "content": "a" },
                { "role": "assistant", "content": "" },
                { "role": "user", "content": "b" },
            ])),
            "non-empty",
        ),
        (
            ask(json!([
                { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "toolu_x", "content": "1" }] },
            ])),
            "unexpected `tool_use_id`",
        ),
        (
            ask(json!([
                { "role": "user", "content": "a" },
                { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_y", "name": "t", "input": {} }] },
                { "role": "user", "content": "b" },
            ])),
            "without `tool_result` blocks immediately after",
        ),
        (
            {
                let mut body = ask(json!([{ "role": "user", "content": "a" }]));
                body["system"] = json!(42);
                body
            },
            "system:",
        ),
    ];
    for (body, expected) in cases {
        let (status, message) = post_raw(&server, body.clone()).await;
        assert_eq!(status, 400, "{body}");
        assert!(
            message.contains(expected),
            "{message:?} should say {expected:?}"
        );
    }
    // And a well-formed chat passes.
    server.respond(wire::text("ok"));
    let body = ask(json!([
        { "role": "user", "content": "a" },
        { "role": "assistant", "content": [{ "type": "tool_use", "id": "toolu_z", "name": "t", "input": {} }] },
        { "role": "user", "content": [
            { "type": "tool_result", "tool_use_id": "toolu_z", "content": "1" },
            { "type": "text", "text": "and?" },
        ] },
    ]));
    assert_eq!(post_raw(&server, body).await.0, 200);
}
