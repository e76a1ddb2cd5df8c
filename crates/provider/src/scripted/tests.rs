//! Tests of `scripted`.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::Mutex as StdMutex;

use serde_json::json;

use super::*;

fn ask(agent: &str, prompt: &str) -> ProviderRequest {
    ProviderRequest::new(agent, prompt, Arc::new(json!({ "type": "object" })))
}

/// A sink that records every event it is given.
fn recording_sink() -> (ProviderSink, Arc<StdMutex<Vec<ProviderEvent>>>) {
    let seen = Arc::new(StdMutex::new(Vec::new()));
    let sink = {
        let seen = Arc::clone(&seen);
        ProviderSink::new(move |event| seen.lock().unwrap().push(event))
    };
    (sink, seen)
}

async fn output(provider: &ScriptedProvider, agent: &str) -> Value {
    provider
        .complete(ask(agent, "p"), ProviderSink::discard())
        .await
        .unwrap()
        .output
}

#[tokio::test]
async fn replies_are_first_in_first_out_per_agent() {
    let provider = ScriptedProvider::new()
        .respond("a", Reply::output(json!(1)))
        .respond("b", Reply::output(json!("b1")))
        .respond_all("a", [Reply::output(json!(2)), Reply::output(json!(3))]);
    assert_eq!(provider.remaining("a"), 3);
    assert_eq!(output(&provider, "a").await, json!(1));
    assert_eq!(output(&provider, "b").await, json!("b1"));
    assert_eq!(output(&provider, "a").await, json!(2));
    assert_eq!(output(&provider, "a").await, json!(3));
    assert_eq!(provider.remaining("a"), 0);
}

#[tokio::test]
async fn streamed_text_concatenates_to_the_scripted_text() {
    let text = "  Hello,\tbig\n\nworld — naïve café ";
    let provider = ScriptedProvider::new()
        .respond("a", Reply::output(json!(null)).text(text).text("and more"));
    let (sink, seen) = recording_sink();
    provider
        .complete(ask("a", "p"), sink.clone())
        .await
        .unwrap();
    let deltas: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|event| match event {
            ProviderEvent::TextDelta(delta) => delta.clone(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        deltas,
        [
            "  Hello,\t",
            "big\n\n",
            "world ",
            "— ",
            "naïve ",
            "café ",
            "and ",
            "more"
        ]
    );
    assert_eq!(deltas.concat(), format!("{text}and more"));
    assert_eq!(sink.text(), format!("{text}and more"));
}

#[test]
fn chunks_cover_edge_cases() {
    assert!(chunks("").is_empty());
    assert_eq!(chunks("   "), ["   "]);
    assert_eq!(chunks("one"), ["one"]);
    assert_eq!(chunks(" a b "), [" a ", "b "]);
}

#[tokio::test]
async fn tool_calls_stream_in_script_order() {
    let provider = ScriptedProvider::new().respond(
        "a",
        Reply::output(json!(null))
            .text("Checking.")
            .tool_call(
                "c1",
                "weather",
                json!({ "city": "SF" }),
                json!({ "tempC": 15 }),
            )
            .tool_error("c2", "clock", json!({}), "no clock"),
    );
    let (sink, seen) = recording_sink();
    provider.complete(ask("a", "p"), sink).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            ProviderEvent::TextDelta("Checking.".into()),
            ProviderEvent::ToolCalled {
                server: None,
                id: "c1".into(),
                tool: "weather".into(),
                input: json!({ "city": "SF" }),
            },
            ProviderEvent::ToolResult {
                id: "c1".into(),
                tool: "weather".into(),
                output: json!({ "tempC": 15 }),
                is_error: false,
            },
            ProviderEvent::ToolCalled {
                server: None,
                id: "c2".into(),
                tool: "clock".into(),
                input: json!({}),
            },
            ProviderEvent::ToolResult {
                id: "c2".into(),
                tool: "clock".into(),
                output: json!("no clock"),
                is_error: true,
            },
        ]
    );
}

#[tokio::test]
async fn usage_and_cost_are_reported() {
    let usage = Usage {
        input_tokens: 10,
        output_tokens: 3,
        ..Usage::default()
    };
    let provider =
        ScriptedProvider::new().respond("a", Reply::output(json!(1)).usage(usage).cost(0.25));
    let response = provider
        .complete(ask("a", "p"), ProviderSink::discard())
        .await
        .unwrap();
    assert_eq!(response.usage, usage);
    assert_eq!(response.cost, Some(0.25));
}

#[tokio::test]
async fn an_exhausted_agent_gets_an_error_naming_it_and_the_count() {
    let provider = ScriptedProvider::new().respond_all(
        "planner",
        [Reply::output(json!(1)), Reply::output(json!(2))],
    );
    output(&provider, "planner").await;
    output(&provider, "planner").await;
    let err = provider
        .complete(ask("planner", "p"), ProviderSink::discard())
        .await
        .unwrap_err();
    let ProviderError::NoResponse { agent, message } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(agent, "planner");
    assert!(message.contains("all 2 scripted replies"), "{message}");
    assert!(message.contains("call 3"), "{message}");
    assert!(
        err.to_string()
            .starts_with("no response for agent `planner`: ")
    );
}

#[tokio::test]
async fn an_unscripted_agent_gets_an_error_listing_the_scripted_ones() {
    let provider = ScriptedProvider::new()
        .respond("planner", Reply::output(json!(1)))
        .fallback("executor", |_| Reply::output(json!(2)));
    let err = provider
        .complete(ask("critic", "p"), ProviderSink::discard())
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("`critic`"), "{message}");
    assert!(message.contains("`planner`, `executor`"), "{message}");

    let err = ScriptedProvider::new()
        .complete(ask("critic", "p"), ProviderSink::discard())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("the script is empty"), "{err}");
}

#[tokio::test]
async fn the_fallback_answers_once_the_queue_is_empty() {
    let provider = ScriptedProvider::new()
        .respond("executor", Reply::output(json!("scripted")))
        .fallback("executor", |request| {
            Reply::output(json!({ "task": request.prompt, "attempt": request.attempt }))
        });
    assert_eq!(output(&provider, "executor").await, json!("scripted"));
    for task in ["pack", "book"] {
        let response = provider
            .complete(ask("executor", task), ProviderSink::discard())
            .await
            .unwrap();
        assert_eq!(response.output, json!({ "task": task, "attempt": 1 }));
    }
    assert_eq!(provider.calls_for("executor"), 3);
}

#[tokio::test]
async fn a_fallback_may_read_the_record() {
    let provider = ScriptedProvider::new();
    let handle = provider.clone();
    let provider = provider.fallback("a", move |_| Reply::output(json!(handle.calls_for("a"))));
    assert_eq!(output(&provider, "a").await, json!(1));
    assert_eq!(output(&provider, "a").await, json!(2));
}

#[tokio::test]
async fn error_replies_fail_after_streaming() {
    let provider = ScriptedProvider::new().respond("a", Reply::error("overloaded").text("partial"));
    let sink = ProviderSink::discard();
    let err = provider
        .complete(ask("a", "p"), sink.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProviderError::Failed { provider, message }
            if provider == "scripted" && message == "overloaded"),
        "{err:?}"
    );
    assert_eq!(sink.text(), "partial");
}

#[tokio::test]
async fn every_request_is_recorded_with_re_asks() {
    let provider = ScriptedProvider::new()
        .respond_all("a", [Reply::output(json!("bad")), Reply::output(json!({}))]);
    let handle = provider.clone();
    provider
        .complete(ask("a", "first"), ProviderSink::discard())
        .await
        .unwrap();
    let mut reask = ask("a", "first");
    reask.attempt = 2;
    reask.previous_error = Some("expected an object".into());
    provider
        .complete(reask.clone(), ProviderSink::discard())
        .await
        .unwrap();
    let _ = provider
        .complete(ask("b", "other"), ProviderSink::discard())
        .await;

    assert_eq!(handle.calls(), 3);
    let requests = handle.requests();
    assert_eq!(requests[0], ask("a", "first"));
    assert_eq!(requests[1], reask);
    assert_eq!(requests[2].agent, "b");
    assert_eq!(handle.calls_for("a"), 2);
}

#[tokio::test]
async fn a_delayed_reply_can_be_cancelled() {
    let provider = ScriptedProvider::new().respond(
        "slow",
        Reply::output(json!(1))
            .text("never streamed")
            .delay(Duration::from_secs(3600)),
    );
    let sink = ProviderSink::discard();
    let call = provider.complete(ask("slow", "p"), sink.clone());
    let timed_out = tokio::time::timeout(Duration::from_millis(10), call).await;
    assert!(timed_out.is_err());
    assert_eq!(sink.text(), "");
    assert_eq!(provider.calls(), 1);
}

#[tokio::test]
async fn a_short_delay_still_answers() {
    let provider = ScriptedProvider::new()
        .respond("a", Reply::output(json!(1)).delay(Duration::from_millis(1)));
    assert_eq!(output(&provider, "a").await, json!(1));
}

#[tokio::test]
async fn a_paced_script_waits_before_replies_that_set_no_delay() {
    let provider = ScriptedProvider::new()
        .pace(Duration::from_millis(40))
        .respond("a", Reply::output(json!(1)))
        .respond("a", Reply::output(json!(2)).delay(Duration::ZERO));
    let started = std::time::Instant::now();
    assert_eq!(output(&provider, "a").await, json!(1));
    assert!(started.elapsed() >= Duration::from_millis(40));
    let started = std::time::Instant::now();
    assert_eq!(output(&provider, "a").await, json!(2));
    assert!(
        started.elapsed() < Duration::from_millis(40),
        "its own delay wins"
    );
}

#[test]
fn debug_shows_the_script() {
    let provider = ScriptedProvider::new()
        .respond("a", Reply::output(json!(1)))
        .fallback("b", |_| Reply::output(json!(2)));
    assert_eq!(
        format!("{provider:?}"),
        r#"ScriptedProvider { remaining: {"a": 1}, fallbacks: ["b"], calls: 0 }"#
    );
}

#[test]
fn provider_name_is_scripted() {
    assert_eq!(ScriptedProvider::new().name(), "scripted");
}
