//! Offline tools: a scripted model asks for the agent's real tool (`Reply::run_tool`); the tool
//! really runs, the call and its real result are recorded, and the reply's output is made from
//! what it returned (`Reply::output_with`). A failing tool and a tool the agent does not offer
//! give error results, as with a real model.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use openharness::builtin::{ToolCalled, ToolResult};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::{FnTool, Tool};
use serde::Deserialize;
use serde_json::json;

#[event("reply:drafted")]
#[derive(Debug, Clone)]
struct ReplyDrafted {
    text: String,
}

#[event]
enum SupportEvent {
    ReplyDrafted,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Desk {
    replies: Vec<String>,
}

#[handler(SupportEvent)]
impl Desk {
    fn drafted(&mut self, drafted: &ReplyDrafted) {
        self.replies.push(drafted.text.clone());
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Draft {
    text: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Lookup {
    order: String,
}

/// Offers `lookup_order`, which counts its calls and fails for unknown orders.
struct Responder {
    calls: Arc<AtomicUsize>,
}

impl Agent for Responder {
    type State = Desk;
    type Trigger = UserInput;
    type Output = Draft;
    const NAME: &'static str = "responder";
    const EMITS: &'static [&'static str] = &[ReplyDrafted::NAME];

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let calls = Arc::clone(&self.calls);
        let lookup = FnTool::new(
            "lookup_order",
            "Finds an order's status.",
            move |args: Lookup| {
                calls.fetch_add(1, Ordering::SeqCst);
                async move {
                    match args.order.as_str() {
                        "A-17" => Ok(json!({ "order": "A-17", "status": "shipped" })),
                        other => Err(format!("no order {other}")),
                    }
                }
            },
        );
        vec![Arc::new(lookup)]
    }

    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        input.text.clone()
    }

    fn on_output(&self, draft: Draft, _input: &UserInput) -> Emit {
        Emit::one(ReplyDrafted { text: draft.text })
    }
}

#[tokio::test]
async fn a_scripted_model_calls_the_agents_real_tool_and_reads_its_result() {
    let calls = Arc::new(AtomicUsize::new(0));
    let provider = ScriptedProvider::new().respond(
        "responder",
        Reply::output_with(|results| {
            json!({ "text": format!(
                "A-17 is {}; {}; {}",
                results[0]["status"].as_str().unwrap_or("?"),
                results[1].as_str().unwrap_or("?"),
                results[2].as_str().unwrap_or("?"),
            ) })
        })
        .text("Let me look. ")
        .run_tool("call-1", "lookup_order", json!({ "order": "A-17" }))
        .run_tool("call-2", "lookup_order", json!({ "order": "Z-9" }))
        .run_tool("call-3", "refund", json!({ "order": "A-17" })),
    );
    let store = MemoryStore::new();
    let workflow = Workflow::builder("support")
        .initial_state(Desk::default())
        .agent(Responder {
            calls: Arc::clone(&calls),
        })
        .store(store.clone())
        .provider(provider)
        .build()
        .unwrap();
    let outcome = workflow
        .run(RunOptions::default().input("Where is A-17?"))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the real tool ran twice");
    assert_eq!(
        outcome.state.replies,
        [
            "A-17 is shipped; no order Z-9; there is no tool named `refund`; the tools are: lookup_order"
        ]
    );

    let events = store.events(&outcome.session, 0..u64::MAX).await.unwrap();
    let called: Vec<ToolCalled> = events
        .iter()
        .filter(|e| e.name == ToolCalled::NAME)
        .map(|e| e.decode().unwrap())
        .collect();
    let results: Vec<ToolResult> = events
        .iter()
        .filter(|e| e.name == ToolResult::NAME)
        .map(|e| e.decode().unwrap())
        .collect();
    assert_eq!(called.len(), 3);
    assert_eq!(called[0].input, json!({ "order": "A-17" }));
    assert_eq!(
        (results[0].output.clone(), results[0].is_error),
        (json!({ "order": "A-17", "status": "shipped" }), false),
        "the tool's real result is recorded"
    );
    assert_eq!(
        (results[1].output.clone(), results[1].is_error),
        (json!("no order Z-9"), true)
    );
    assert!(results[2].is_error);
}
