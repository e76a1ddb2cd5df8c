//! Cassette re-execution of concurrent agents: one input fans out to three reviewers at once,
//! each streaming text and calling a tool with jittered delays, and each review activates its
//! own call of one summarizer (three concurrent calls of the same agent, each activated by
//! another event). The agents' events interleave differently on every run; a re-execution
//! from the cassette must still match the recording every time, and a real change must still
//! be reported at the right event.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use openharness::Provider;
use openharness::adapter::{
    ProviderEvent, ProviderRequest, ProviderResponse, ProviderResult, ProviderSink,
};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::tape::{Cassette, Divergence, TapeError};
use openharness::{adapter::Usage, schemars};
use openharness_testkit::random::SplitMix;
use serde::Deserialize;
use serde_json::json;

const REVIEWERS: [&str; 3] = ["legal", "security", "style"];

#[event("review:written")]
#[derive(Debug, Clone)]
struct ReviewWritten {
    reviewer: String,
    verdict: String,
}

#[event("review:filed")]
#[derive(Debug, Clone)]
struct ReviewFiled {
    reviewer: String,
}

#[event("summary:written")]
#[derive(Debug, Clone)]
struct SummaryWritten {
    reviewer: String,
    text: String,
}

#[event]
enum ReviewEvent {
    ReviewWritten,
    SummaryWritten,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Desk {
    reviews: Vec<String>,
    summaries: Vec<String>,
}

#[handler(ReviewEvent)]
impl Desk {
    /// Files every review: an event a handler emits when an agent's output arrives.
    fn review_written(&mut self, review: &ReviewWritten) -> Emit {
        self.reviews.push(review.reviewer.clone());
        Emit::one(ReviewFiled {
            reviewer: review.reviewer.clone(),
        })
    }

    fn summary_written(&mut self, summary: &SummaryWritten) {
        self.summaries.push(summary.text.clone());
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Review {
    verdict: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Summary {
    text: String,
}

/// Reviewer `N` of [`REVIEWERS`], activated by the input; `prefix` goes before its prompt.
struct Reviewer<const N: usize> {
    prefix: &'static str,
}

impl<const N: usize> Agent for Reviewer<N> {
    type State = Desk;
    type Trigger = UserInput;
    type Output = Review;
    const NAME: &'static str = REVIEWERS[N];
    const EMITS: &'static [&'static str] = &[ReviewWritten::NAME];

    fn prompt(&self, _desk: &Desk, input: &UserInput) -> String {
        format!("{}Review for {}: {}", self.prefix, REVIEWERS[N], input.text)
    }

    fn on_output(&self, review: Review, _input: &UserInput) -> Emit {
        Emit::one(ReviewWritten {
            reviewer: REVIEWERS[N].to_owned(),
            verdict: review.verdict,
        })
    }
}

/// Summarizes one review: three concurrent calls, one per review.
struct Summarizer;

impl Agent for Summarizer {
    type State = Desk;
    type Trigger = ReviewWritten;
    type Output = Summary;
    const NAME: &'static str = "summarizer";
    const EMITS: &'static [&'static str] = &[SummaryWritten::NAME];

    fn prompt(&self, _desk: &Desk, review: &ReviewWritten) -> String {
        format!(
            "Summarize the {} review: {}",
            review.reviewer, review.verdict
        )
    }

    fn on_output(&self, summary: Summary, review: &ReviewWritten) -> Emit {
        Emit::one(SummaryWritten {
            reviewer: review.reviewer.clone(),
            text: summary.text,
        })
    }
}

/// A model whose answers depend only on the prompt, streamed word by word around a tool call
/// with a random pause before every event, so concurrent calls interleave differently on
/// every run.
struct Jittery {
    seed: AtomicU64,
}

impl Jittery {
    fn new() -> Self {
        Self {
            seed: AtomicU64::new(SplitMix::seed_from_clock()),
        }
    }

    async fn pause(&self) {
        // Each pause its own seed, drawn from a shared counter.
        let seed = self.seed.fetch_add(1, Ordering::Relaxed);
        let pause = SplitMix::new(seed).below(3_000);
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
}

#[async_trait]
impl Provider for Jittery {
    fn name(&self) -> &str {
        "jittery"
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let agent = request.agent.clone();
        for word in ["Looking ", "into ", "it. "] {
            self.pause().await;
            sink.emit(ProviderEvent::TextDelta(word.to_owned()));
        }
        self.pause().await;
        let input = json!({ "about": request.prompt });
        sink.emit(ProviderEvent::ToolCalled {
            id: format!("{agent}-1"),
            tool: "lookup".to_owned(),
            input: input.clone(),
            server: None,
        });
        self.pause().await;
        sink.emit(ProviderEvent::ToolResult {
            id: format!("{agent}-1"),
            tool: "lookup".to_owned(),
            output: json!({ "found": format!("notes on {}", request.prompt) }),
            is_error: false,
        });
        for word in ["Done ", "now."] {
            self.pause().await;
            sink.emit(ProviderEvent::TextDelta(word.to_owned()));
        }
        self.pause().await;
        let output = if agent == Summarizer::NAME {
            json!({ "text": format!("in short: {}", request.prompt) })
        } else {
            json!({ "verdict": format!("{agent} approves {}", request.prompt) })
        };
        Ok(ProviderResponse::new(output, Usage::default(), None))
    }
}

/// The workflow; `prefix` goes before the legal reviewer's prompt, and without `summarize`
/// no review is summarized.
fn workflow(store: MemoryStore, prefix: &'static str, summarize: bool) -> Workflow<Desk> {
    let builder = Workflow::builder("reviews")
        .initial_state(Desk::default())
        .agent(Reviewer::<0> { prefix })
        .agent(Reviewer::<1> { prefix: "" })
        .agent(Reviewer::<2> { prefix: "" });
    let builder = if summarize {
        builder.agent(Summarizer)
    } else {
        builder
    };
    builder
        .store(store)
        .provider(Jittery::new())
        .build()
        .unwrap()
}

/// The order in which a session's calls used their tools: what differs between runs.
async fn tool_order(store: &MemoryStore, session: &SessionId) -> Vec<String> {
    store
        .events(session, 0..u64::MAX)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.name == "tool:called")
        .map(|e| e.payload["agentName"].as_str().unwrap_or("?").to_owned())
        .collect()
}

async fn record(store: &MemoryStore) -> SessionId {
    let outcome = workflow(store.clone(), "", true)
        .run(RunOptions::new().input("the release notes"))
        .await
        .unwrap();
    assert_eq!(outcome.state.reviews.len(), 3);
    assert_eq!(outcome.state.summaries.len(), 3);
    outcome.session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_agents_re_execute_from_their_cassette_every_time() {
    let store = MemoryStore::new();
    let recorded = record(&store).await;
    let workflow = workflow(store.clone(), "", true);
    let cassette = Cassette::load(&workflow, &recorded).await.unwrap();
    let len = store.events(&recorded, 0..u64::MAX).await.unwrap().len() as u64;

    let mut orders = HashSet::from([tool_order(&store, &recorded).await]);
    let mut matched = 0;
    for _ in 0..10 {
        match cassette.replay(&workflow, RunOptions::new()).await {
            Ok(outcome) => {
                assert_eq!(outcome.len, len);
                assert_eq!(outcome.state.summaries.len(), 3);
                orders.insert(tool_order(&store, &outcome.session).await);
                matched += 1;
            }
            Err(err) => panic!("re-execution {} diverged: {err}", matched + 1),
        }
    }
    assert_eq!(matched, 10);
    // The test means something only if the calls really interleaved differently.
    assert!(
        orders.len() > 1,
        "every run called the tools in one order: {orders:?}"
    );
}

/// The seq of the first `agent:started` of `agent` in `recorded`.
async fn first_started(store: &MemoryStore, recorded: &SessionId, agent: &str) -> u64 {
    let events = store.events(recorded, 0..u64::MAX).await.unwrap();
    events
        .iter()
        .position(|e| e.name == "agent:started" && e.payload["agentName"] == agent)
        .unwrap() as u64
}

/// Replays `recorded` with `changed` three times (its calls interleave differently each
/// time): each replay's divergence, which every one must report.
async fn divergences(changed: &Workflow<Desk>, recorded: &SessionId) -> Vec<Divergence> {
    let cassette = Cassette::load(changed, recorded).await.unwrap();
    let mut found = Vec::new();
    for _ in 0..3 {
        let err = cassette
            .replay(changed, RunOptions::new())
            .await
            .unwrap_err();
        let TapeError::Diverged(divergence) = err else {
            panic!("expected a divergence, got {err}");
        };
        found.push(*divergence);
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_changed_prompt_in_a_concurrent_session_is_reported_at_its_agent_started() {
    let store = MemoryStore::new();
    let recorded = record(&store).await;
    // The recorded `agent:started` of the legal reviewer.
    let legal_started = first_started(&store, &recorded, "legal").await;
    let changed = workflow(store.clone(), "Be strict. ", true);
    for divergence in divergences(&changed, &recorded).await {
        assert_eq!(divergence.seq, legal_started, "{divergence}");
        let expected = divergence.expected.as_ref().unwrap();
        let actual = divergence.actual.as_ref().unwrap();
        assert_eq!(expected.name, "agent:started");
        assert_eq!(
            actual.payload["prompt"],
            "Be strict. Review for legal: the release notes"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_missing_call_in_a_concurrent_session_is_reported_at_its_first_agent_started() {
    let store = MemoryStore::new();
    let recorded = record(&store).await;
    let first_summary = first_started(&store, &recorded, "summarizer").await;
    let changed = workflow(store.clone(), "", false);
    for divergence in divergences(&changed, &recorded).await {
        assert_eq!(divergence.seq, first_summary, "{divergence}");
        assert_eq!(divergence.expected.as_ref().unwrap().name, "agent:started");
        assert_eq!(divergence.actual, None);
    }
}
