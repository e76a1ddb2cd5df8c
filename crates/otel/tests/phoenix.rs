//! Against a real Arize Phoenix (the pinned `arize-phoenix` from PyPI, installed into
//! `target/phoenix-venv` on first use, started on 127.0.0.1 by the test): a session recorded on
//! a live-exporting store and a fork of it arrive as GenAI spans, read back through Phoenix's
//! REST API with their names, parents, `gen_ai.*` attributes and the fork's link; exporting
//! both again after the fact sends the same ids, and Phoenix still holds one span per id.
#![allow(clippy::unwrap_used, missing_docs)]

mod kit;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::tape::At;
use openharness_otel::{
    Collector, Endpoint, LiveExport, LiveOptions, SpanOptions, export_sessions, spans_of,
};
use openharness_testkit::{eventually, http::Client};
use serde_json::Value;

/// Every span Phoenix holds in its default project, by span id.
async fn phoenix_spans(phoenix: &Client) -> BTreeMap<String, Value> {
    let mut spans = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = "/v1/projects/default/spans?limit=1000".to_owned();
        if let Some(cursor) = &cursor {
            path.push_str(&format!("&cursor={cursor}"));
        }
        let answer = phoenix.get(&path).await;
        if answer.status == 404 {
            return spans; // no project before the first span arrives
        }
        let body = answer.json();
        for span in body["data"].as_array().expect("a page of spans") {
            let id = span["context"]["span_id"]
                .as_str()
                .expect("a span id")
                .to_owned();
            spans.insert(id, span.clone());
        }
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return spans,
        }
    }
}

/// Phoenix's spans once it holds `count` of them (it ingests in the background).
async fn eventually_spans(phoenix: &Client, count: usize) -> BTreeMap<String, Value> {
    let what = format!("Phoenix to hold {count} spans");
    eventually(Duration::from_secs(60), &what, || async {
        let spans = phoenix_spans(phoenix).await;
        if spans.len() >= count {
            Ok(spans)
        } else {
            Err(spans.into_keys().collect::<Vec<_>>())
        }
    })
    .await
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_a_session_and_its_fork_arrive_in_phoenix_with_identical_ids_on_re_export() {
    let phoenix = kit::Phoenix::start().await;
    let endpoint = Endpoint::base(&phoenix.base);

    // Live: record a session and a fork of it on a store that exports as it records.
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let live = LiveExport::start(
        Arc::clone(&memory),
        Collector::new(&endpoint).unwrap(),
        LiveOptions::default().flush_every(Duration::from_millis(100)),
    );
    let desk = kit::desk(live.store());
    let parent = desk
        .run(RunOptions::new().input("Where is order A-17?"))
        .await
        .unwrap();
    let events = memory.all_events(&parent.session).await.unwrap();
    // The fork starts inside the tool call (after `tool:called`): the agent call runs again.
    let tool_called = events.iter().position(|e| e.name == "tool:called").unwrap() as u64;
    let fork = desk
        .fork(&parent.session, At::position(tool_called + 1))
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    let stats = live.shutdown(Duration::from_secs(30)).await;
    assert_eq!(stats.spans_failed, 0, "{stats:?}");
    assert_eq!(stats.events_dropped, 0, "{stats:?}");

    // What the mapping says the two sessions are.
    let expected_parent = spans_of(memory.as_ref(), &parent.session, SpanOptions::default())
        .await
        .unwrap();
    let expected_fork = spans_of(memory.as_ref(), &fork.session, SpanOptions::default())
        .await
        .unwrap();
    let expected: BTreeSet<String> = expected_parent
        .iter()
        .chain(&expected_fork)
        .map(|s| s.span_id.to_string())
        .collect();
    assert_eq!(stats.spans_sent as usize, expected.len(), "{stats:?}");

    let received = eventually_spans(&phoenix.client, expected.len()).await;
    let received_ids: BTreeSet<String> = received.keys().cloned().collect();
    assert_eq!(
        received_ids, expected,
        "Phoenix holds exactly the mapped spans"
    );

    // Names and parents: workflow → agent → model calls and the tool call.
    let by_name = |session: &SessionId, name: &str| -> Vec<&Value> {
        received
            .values()
            .filter(|s| s["name"] == name && attr(s, "gen_ai.conversation.id") == session.as_str())
            .collect()
    };
    let root = by_name(&parent.session, "invoke_workflow desk");
    assert_eq!(root.len(), 1);
    let root = root[0];
    assert!(root["parent_id"].is_null());
    assert_eq!(attr(root, "gen_ai.operation.name"), "invoke_workflow");
    let agent = by_name(&parent.session, "invoke_agent support")[0];
    assert_eq!(agent["parent_id"], root["context"]["span_id"]);
    assert_eq!(agent["context"]["trace_id"], root["context"]["trace_id"]);
    assert_eq!(attr(agent, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(agent, "gen_ai.agent.name"), "support");
    assert_eq!(attr(agent, "gen_ai.request.model"), "scripted-model");
    assert_eq!(attr(agent, "gen_ai.usage.input_tokens"), 12);
    assert_eq!(attr(agent, "gen_ai.usage.output_tokens"), 5);
    let chats = by_name(&parent.session, "chat scripted-model");
    assert_eq!(
        chats.len(),
        2,
        "one model call before the tool result, one after"
    );
    for chat in &chats {
        assert_eq!(chat["parent_id"], agent["context"]["span_id"]);
        assert_eq!(attr(chat, "gen_ai.operation.name"), "chat");
    }
    let tool = by_name(&parent.session, "execute_tool lookup_order")[0];
    assert_eq!(tool["parent_id"], agent["context"]["span_id"]);
    assert_eq!(attr(tool, "gen_ai.tool.name"), "lookup_order");
    assert_eq!(attr(tool, "gen_ai.tool.call.id"), "call-1");
    assert_eq!(attr(tool, "gen_ai.operation.name"), "execute_tool");
    // Content is off by default.
    assert!(
        received
            .values()
            .all(|s| attr(s, "gen_ai.input.messages").is_null()
                && attr(s, "gen_ai.tool.call.arguments").is_null())
    );

    // The fork's root links to the parent's span at the fork position: the tool call.
    let fork_root = by_name(&fork.session, "invoke_workflow desk")[0];
    assert_eq!(
        attr(fork_root, "openharness.fork.parent"),
        parent.session.as_str()
    );
    assert_eq!(
        attr(fork_root, "openharness.fork.parent_span_id"),
        &tool["context"]["span_id"]
    );
    assert_eq!(
        attr(fork_root, "openharness.fork.parent_trace_id"),
        &tool["context"]["trace_id"]
    );
    let link = &expected_fork
        .iter()
        .find(|s| s.parent.is_none())
        .unwrap()
        .links;
    assert_eq!(link.len(), 1, "the OTLP link itself is sent too");

    // After the fact, again: the same spans, the same ids; Phoenix still holds one of each.
    let collector = Collector::new(&endpoint).unwrap();
    let report = export_sessions(
        memory.as_ref(),
        &[parent.session.clone(), fork.session.clone()],
        &collector,
        SpanOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(report.spans, expected.len());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = phoenix_spans(&phoenix.client).await;
    assert_eq!(again.keys().cloned().collect::<BTreeSet<_>>(), expected);
    for (id, span) in &again {
        assert_eq!(span["context"], received[id]["context"]);
        assert_eq!(span["parent_id"], received[id]["parent_id"]);
        assert_eq!(span["start_time"], received[id]["start_time"]);
    }
}
