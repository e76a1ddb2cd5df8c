//! ClaudeCliProvider against a fake `claude` executable printing recorded-shape stream-json.
#![cfg(unix)]
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{
    TEXT_REPLY, answers_the_chat_with_text, ask, deltas, recording_sink, request, tool_events,
    two_tools,
};
use openharness_core::{
    Provider,
    adapter::{ProviderEvent, ProviderSink},
};
use openharness_provider::ClaudeCliProvider;
use openharness_provider::testing::FakeClaude;
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;

#[tokio::test]
async fn text_streams_from_partial_messages_and_the_result_gives_output_usage_and_cost() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::success(
        "Forty-two.",
        Some(json!({ "answer": 42 })),
    ))
    .unwrap();
    let provider = ClaudeCliProvider::new()
        .program(fake.program())
        .model("sonnet")
        .persist_session(false);
    let (sink, events) = recording_sink();
    let response = provider
        .complete(request("What is the answer?").with_max_turns(4), sink)
        .await
        .unwrap();

    assert_eq!(response.output, json!({ "answer": 42 }));
    assert_eq!(
        deltas(&events.lock().unwrap()),
        FakeClaude::deltas("Forty-two."),
        "streamed once, not repeated by the assistant message"
    );
    assert_eq!(
        (
            response.usage.input_tokens,
            response.usage.output_tokens,
            response.usage.cache_read_tokens
        ),
        (12, 8, 40)
    );
    assert_eq!(response.cost, Some(0.00123));

    let args = fake.args(1);
    for expected in [
        "-p",
        "--verbose",
        "--include-partial-messages",
        "--no-session-persistence",
    ] {
        assert!(
            args.contains(&expected.to_owned()),
            "{expected} in {args:?}"
        );
    }
    let after = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1].clone())
    };
    assert_eq!(after("--output-format").as_deref(), Some("stream-json"));
    assert_eq!(after("--input-format").as_deref(), Some("stream-json"));
    assert_eq!(after("--max-turns").as_deref(), Some("4"));
    assert_eq!(after("--model").as_deref(), Some("sonnet"));
    let schema: serde_json::Value = serde_json::from_str(&after("--json-schema").unwrap()).unwrap();
    assert_eq!(schema["properties"]["answer"]["type"], "integer");
    assert_eq!(
        fake.stdin(1),
        json!({ "type": "user", "message": { "role": "user", "content": "What is the answer?" } })
    );
}

#[tokio::test]
async fn without_partial_messages_the_assistant_text_is_reported_and_text_results_are_parsed() {
    let fake = FakeClaude::new().unwrap();
    let lines: Vec<_> = FakeClaude::success("{\"answer\": 7}", None)
        .into_iter()
        .filter(|l| l["type"] != "stream_event")
        .collect();
    fake.push_run(&lines).unwrap();
    let provider = ClaudeCliProvider::new()
        .program(fake.program())
        .include_partial_messages(false);
    let (sink, events) = recording_sink();
    let response = provider.complete(request("q"), sink).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 7 }));
    assert_eq!(deltas(&events.lock().unwrap()), ["{\"answer\": 7}"]);
    assert!(
        !fake
            .args(1)
            .contains(&"--include-partial-messages".to_owned())
    );
}

#[tokio::test]
async fn the_clis_own_tool_use_is_reported_as_calls_and_results() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::with_tool_use(
        "Done.",
        json!({ "answer": 2026 }),
    ))
    .unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    let (sink, events) = recording_sink();
    let response = provider.complete(request("year?"), sink).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 2026 }));
    let tools = tool_events(&events.lock().unwrap());
    assert_eq!(
        tools,
        [
            ProviderEvent::ToolCalled {
                server: None,
                id: "toolu_01Bash".into(),
                tool: "Bash".into(),
                input: json!({ "command": "date -u" })
            },
            ProviderEvent::ToolResult {
                id: "toolu_01Bash".into(),
                tool: "Bash".into(),
                output: json!("Sun Nov 22 20:00:00 UTC 2026"),
                is_error: false
            },
        ]
    );
}

#[tokio::test]
async fn an_error_result_fails_with_its_subtype_and_errors() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::failure(
        "error_max_turns",
        &["Reached maximum number of turns (2)"],
    ))
    .unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("`error_max_turns`: Reached maximum number of turns (2)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_process_that_ends_without_a_result_fails_with_its_stderr() {
    let fake = FakeClaude::new().unwrap();
    // `--verbose` is mandatory; without it the fake exits 1 like the real CLI.
    let provider = ClaudeCliProvider::new().program(fake.program());
    fake.push_run(&[json!({ "type": "system", "subtype": "init" })])
        .unwrap();
    let err = ask(&provider, request("q")).await.unwrap_err();
    assert!(err.to_string().contains("without a result"), "{err}");

    let missing = ClaudeCliProvider::new().program(fake.program().with_file_name("no-such-claude"));
    let err = ask(&missing, request("q")).await.unwrap_err();
    assert!(err.to_string().contains("could not start"), "{err}");
}

#[tokio::test]
async fn agents_with_tools_are_refused_with_an_explanation() {
    let fake = FakeClaude::new().unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    let err = ask(&provider, request("q").with_tools(two_tools()))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("weather, population"), "{err}");
    assert_eq!(fake.calls(), 0);
}

#[tokio::test]
async fn cancelling_kills_the_process() {
    let fake = FakeClaude::new().unwrap();
    let mut lines = FakeClaude::success("slow", None);
    lines.truncate(3);
    fake.push_hanging_run(&lines).unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    tokio::select! {
        _ = provider.complete(request("q"), ProviderSink::discard()) => panic!("the run hangs"),
        () = tokio::time::sleep(Duration::from_millis(500)) => {}
    }
    let pid = fake.pid(1).unwrap();
    eventually(
        LIMIT,
        &format!("the fake claude (pid {pid}) to be killed"),
        || async {
            let probe = std::process::Command::new("kill")
                .args(["-0", &pid.to_string()])
                .output()
                .unwrap();
            if probe.status.success() {
                Err("alive")
            } else {
                Ok(())
            }
        },
    )
    .await;
}

#[tokio::test]
async fn images_reach_the_cli_as_image_blocks_of_the_user_message() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::success("Done.", Some(json!({ "answer": 1 }))))
        .unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    let req = request("Describe it.").with_images(vec![openharness_core::Image::base64(
        "image/gif",
        "R0lGODlh",
    )]);
    ask(&provider, req).await.unwrap();
    assert_eq!(
        fake.stdin(1)["message"]["content"],
        json!([
            { "type": "image", "source": { "type": "base64", "media_type": "image/gif", "data": "R0lGODlh" } },
            { "type": "text", "text": "Describe it." },
        ])
    );
}

#[tokio::test]
async fn a_chat_asks_for_text_with_the_system_prompt_and_the_conversation_as_a_transcript() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::success(TEXT_REPLY, None))
        .unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    answers_the_chat_with_text(&provider).await;
    let args = fake.args(1);
    assert!(
        !args.iter().any(|a| a == "--json-schema"),
        "no schema for text: {args:?}"
    );
    let system = args.iter().position(|a| a == "--system-prompt").unwrap();
    assert_eq!(args[system + 1], "You are terse.");
    let content = &fake.stdin(1)["message"]["content"];
    assert_eq!(
        content[0],
        json!({ "type": "image", "source": { "type": "url", "url": "https://example.com/cat.png" } })
    );
    assert_eq!(
        content[1]["text"],
        "Conversation so far:\n\
         User: What is this? [1 image(s), attached above]\n\
         Assistant: A cat.\n\
         User: And the time?\n\
         Assistant: [called `current_time` with {}]\n\
         Tool `current_time`: {\"utc\":\"12:00\"}\n\
         Assistant: It is noon.\n\
         User: Say bye on two lines.\n\n\
         Answer the user's latest message."
    );
}

#[tokio::test]
async fn a_structured_request_keeps_its_json_schema_and_a_text_result_stays_json_parsed() {
    let fake = FakeClaude::new().unwrap();
    fake.push_run(&FakeClaude::success("{\"answer\": 9}", None))
        .unwrap();
    let provider = ClaudeCliProvider::new().program(fake.program());
    let response = ask(&provider, request("q")).await.unwrap();
    assert_eq!(response.output, json!({ "answer": 9 }));
    let args = fake.args(1);
    assert!(args.iter().any(|a| a == "--json-schema"), "{args:?}");
    assert!(!args.iter().any(|a| a == "--system-prompt"), "{args:?}");
    assert_eq!(
        fake.stdin(1)["message"]["content"],
        "q",
        "the prompt alone, as before"
    );
}
