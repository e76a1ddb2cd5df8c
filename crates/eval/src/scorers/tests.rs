//! Tests of `scorers`.

#![allow(clippy::unwrap_used)]

use openharness_core::builtin::{Outcome, ToolCalled};
use openharness_core::{Envelope, SessionId, Store, adapter::Usage};
use openharness_host::Host;
use openharness_store::MemoryStore;
use serde_json::json;

use super::*;
use crate::case::Case;
use crate::events::{EvalRecorded, RunStatus};

fn record(latency_ms: f64, cost: f64, usage: Usage, turns: u32) -> EvalRecorded {
    EvalRecorded {
        case: "c".into(),
        variant: "v".into(),
        repeat: 0,
        attempt: 1,
        session: None,
        status: RunStatus::Completed,
        error: None,
        provider: None,
        reason: Some("idle".into()),
        len: 4,
        fork_position: None,
        state_hash: None,
        latency_ms,
        usage,
        cost,
        turns,
    }
}

/// A session with two `lookup` calls, one `send` call and an agent's output.
async fn session(store: &MemoryStore) -> SessionId {
    let session = SessionId::new();
    let called = |tool: &str| {
        Envelope::typed(
            &ToolCalled {
                client: false,
                server: None,
                agent: "clerk".into(),
                tool_call_id: "t".into(),
                tool: tool.into(),
                input: json!({}),
            },
            None,
        )
        .unwrap()
    };
    let completed = Envelope::new(
        "agent:completed",
        json!({ "agentName": "clerk", "outcome": "success", "usage": Usage::default(), "output": { "answer": "42 apples" } }),
        None,
    );
    let started = Envelope::new(
        "agent:started",
        json!({ "agentName": "clerk", "prompt": "p" }),
        None,
    );
    store
        .append(
            &session,
            &[
                started,
                called("lookup"),
                called("lookup"),
                called("send"),
                completed,
            ],
            0,
        )
        .await
        .unwrap();
    assert_eq!(
        Outcome::Success,
        serde_json::from_value(json!("success")).unwrap()
    );
    session
}

#[tokio::test]
async fn built_in_scorers_read_states_outputs_events_and_measurements() {
    let store = MemoryStore::new();
    let session = session(&store).await;
    let host = Host::new(store);
    let case = Case::input("c", "q").expected(json!({ "fruit": "apples", "count": 42 }));
    let usage = Usage {
        input_tokens: 100,
        output_tokens: 20,
        ..Usage::default()
    };
    let run = record(1500.0, 0.02, usage, 2);
    let state = json!({ "count": 42, "tags": ["a", "b"], "answer": "42 apples" });
    let view = RunView::new(&host, &case, &run, &session, &state);
    let schema = json!({ "type": "object", "required": ["answer"], "properties": { "answer": { "type": "string" } } });
    let checks: Vec<(BuiltinScorer, bool, f64)> = vec![
        (predicate("p", |s| s["count"] == 42), true, 1.0),
        (
            equals("eq", Field::state("/count"), Expect::case("/count")),
            true,
            1.0,
        ),
        (
            equals("eq-miss", Field::state("/count"), json!(41)),
            false,
            0.0,
        ),
        (contains("in-list", Field::state("/tags"), "b"), true, 1.0),
        (
            contains(
                "in-output",
                Field::output("clerk", "/answer"),
                Expect::case("/fruit"),
            ),
            true,
            1.0,
        ),
        (
            matches("re", Field::output("clerk", "/answer"), r"^\d+ apples$").unwrap(),
            true,
            1.0,
        ),
        (
            json_schema("schema", Field::output("clerk", ""), &schema).unwrap(),
            true,
            1.0,
        ),
        (
            json_schema("schema-miss", Field::state("/tags"), &schema).unwrap(),
            false,
            0.0,
        ),
        (tool_called("lookup", "lookup"), true, 2.0),
        (tool_calls("few", None, 0, Some(2)), false, 3.0),
        (tool_called("never", "delete"), false, 0.0),
        (agent_calls("calls", 1), true, 1.0),
        (turns("turns", 1), false, 2.0),
        (cost("cost", 0.05), true, 0.02),
        (tokens("tokens", 100), false, 120.0),
        (latency("latency", Duration::from_secs(1)), false, 1500.0),
    ];
    for (scorer, passed, value) in checks {
        let score = scorer.score(&view).await.unwrap();
        assert_eq!(
            (score.passed, score.value),
            (passed, value),
            "{}: {:?}",
            scorer.name(),
            score.detail
        );
    }
    assert_eq!(cost("c", 1.0).better(), Better::Lower);
    assert_eq!(
        equals("e", Field::state(""), json!(1)).better(),
        Better::Higher
    );

    // What cannot be read is an error saying what is missing.
    let missing = equals("x", Field::state("/nope"), json!(1))
        .score(&view)
        .await
        .unwrap_err();
    assert_eq!(missing.0, "the final state has no field at `/nope`");
    let no_agent = equals("x", Field::output("ghost", ""), json!(1))
        .score(&view)
        .await
        .unwrap_err();
    assert_eq!(no_agent.0, "agent `ghost` never completed with an output");
    assert!(matches("bad", Field::state(""), "(").is_err());
    assert!(json_schema("bad", Field::state(""), &json!({ "type": 12 })).is_err());
}

#[test]
fn every_scorer_kind_reads_from_a_file() {
    let file = r#"
        [[scorer]]
        kind = "equals"
        name = "a"
        field = { state = "/x" }
        expect = { case = "/x" }
        [[scorer]]
        kind = "contains"
        name = "b"
        field = { agent = "clerk", pointer = "/answer" }
        expect = "apples"
        [[scorer]]
        kind = "matches"
        name = "c"
        field = { state = "/x" }
        pattern = "^a"
        [[scorer]]
        kind = "json_schema"
        name = "d"
        field = { state = "" }
        schema = { type = "object" }
        [[scorer]]
        kind = "tool_calls"
        name = "e"
        tool = "lookup"
        max = 3
        [[scorer]]
        kind = "agent_calls"
        name = "f"
        max = 4
        [[scorer]]
        kind = "turns"
        name = "g"
        max = 2
        [[scorer]]
        kind = "cost"
        name = "h"
        max = 0.5
        [[scorer]]
        kind = "tokens"
        name = "i"
        max = 1000
        [[scorer]]
        kind = "latency"
        name = "j"
        max_ms = 2000
        [[scorer]]
        kind = "judge"
        name = "k"
        workflow = "judge"
        prompt = "Rate {state} for {case}"
        score = "/score"
        pass_at = 0.5
    "#;
    #[derive(Debug, serde::Deserialize)]
    struct File {
        scorer: Vec<ScorerSpec>,
    }
    let parsed: File = toml::from_str(file).unwrap();
    let names: Vec<String> = parsed
        .scorer
        .iter()
        .map(|spec| spec.build().unwrap().name().to_owned())
        .collect();
    assert_eq!(
        names,
        ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"]
    );
    let unknown = toml::from_str::<File>("[[scorer]]\nkind = \"vibes\"\nname = \"x\"\n");
    assert!(
        unknown
            .unwrap_err()
            .to_string()
            .contains("unknown variant `vibes`")
    );
}

/// A judge naming its provider in a file: `build` cannot build providers and says so;
/// `build_with` gets the table (a variant's shape) and the judge gets the provider.
#[test]
fn a_judge_names_its_provider_in_a_file() {
    let spec: ScorerSpec = toml::from_str(
        r#"
        kind = "judge"
        name = "k"
        workflow = "judge"
        prompt = "Rate {state}"
        score = "/score"
        pass_at = 0.5
        provider = { kind = "openai", model = "gpt-4.1-mini", base_url = "http://127.0.0.1:9" }
    "#,
    )
    .unwrap();
    let ScorerSpec::Judge {
        provider: Some(provider),
        ..
    } = &spec
    else {
        panic!("{spec:?}");
    };
    assert_eq!(provider.label(), "openai:gpt-4.1-mini");
    assert_eq!(provider.base_url.as_deref(), Some("http://127.0.0.1:9"));
    let refused = spec.build().err().unwrap();
    assert!(
        refused.contains("provider `openai:gpt-4.1-mini` cannot be built here"),
        "{refused}"
    );
    let asked = std::sync::Mutex::new(Vec::new());
    let built = spec
        .build_with(&|p| {
            asked.lock().unwrap().push(p.clone());
            Ok((
                p.label(),
                std::sync::Arc::new(openharness_provider::ScriptedProvider::new()),
            ))
        })
        .unwrap();
    assert_eq!(built.name(), "k");
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        std::slice::from_ref(provider)
    );
    let failed = spec
        .build_with(&|_| Err("set OPENAI_API_KEY".to_owned()))
        .err()
        .unwrap();
    assert_eq!(failed, "judge `k`: set OPENAI_API_KEY");
    let unknown = toml::from_str::<ScorerSpec>(
        "kind = \"judge\"\nname = \"k\"\nworkflow = \"j\"\nprompt = \"p\"\nscore = \"/s\"\npass_at = 1\nprovider = { kind = \"openai\", url = \"x\" }\n",
    );
    assert!(unknown.is_err());
}
