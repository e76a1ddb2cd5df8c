//! Runtime semantics of the event loop: store failure, handler and renderer panics,
//! cancellation, guards, output validation and re-asking.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openharness::builtin::{AgentCompleted, ErrorOccurred, Outcome, OutputRejected};
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::{FailingStore, MemoryStore};
use openharness::{CancellationToken, Error, Pattern, StopReason, renderer_fn};
use openharness_testkit::events::{first, names};

/// A counter workflow: every `count:added` adds to the total; `count:added` with `amount` 13
/// makes the handler panic; an agent answers `user:input` with a number to add.
#[event]
#[derive(Debug, Clone)]
struct CountAdded {
    amount: i64,
}

#[event]
enum CounterEvent {
    UserInput,
    CountAdded,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Counter {
    total: i64,
    inputs: Vec<String>,
}

#[handler(CounterEvent)]
impl Counter {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.inputs.push(input.text.clone());
        Emit::none()
    }

    fn added(&mut self, added: &CountAdded) {
        self.total += added.amount;
        assert!(added.amount != 13, "13 is unlucky");
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Amount {
    amount: i64,
}

struct Adder;

#[agent(output = Amount, emits = [CountAdded])]
impl Adder {
    fn prompt(&self, state: &Counter, input: &UserInput) -> String {
        format!("total {} · {}", state.total, input.text)
    }

    fn on_output(&self, output: Amount, _input: &UserInput) -> CountAdded {
        CountAdded {
            amount: output.amount,
        }
    }
}

fn counter(store: impl Store, provider: ScriptedProvider) -> Workflow<Counter> {
    Workflow::builder("counter")
        .initial_state(Counter::default())
        .agent(Adder)
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_panicking_handler_becomes_error_occurred_and_the_run_goes_on() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new()
        .respond("adder", Reply::output(serde_json::json!({ "amount": 5 })))
        .respond("adder", Reply::output(serde_json::json!({ "amount": 13 })))
        .respond("adder", Reply::output(serde_json::json!({ "amount": 7 })));
    let wf = counter(store.clone(), provider);
    // Three inputs, one run each, in the same workflow: the second one panics.
    let first = wf.run(RunOptions::new().input("a")).await.unwrap();
    assert_eq!(first.state.total, 5);
    let second = wf.run(RunOptions::new().input("b")).await.unwrap();
    // The state is as before the panicking event: the amount was not added.
    assert_eq!(
        second.state.total, 0,
        "a fresh run starts from the initial state"
    );
    let events = store.all_events(&second.session).await.unwrap();
    let panicked = events.iter().position(|e| e.name == "count:added").unwrap();
    // The error is recorded after the agent's final events (recorded as one batch), caused by
    // the event whose handler panicked.
    let error = events[panicked..]
        .iter()
        .find(|e| e.name == "error:occurred")
        .unwrap();
    assert_eq!(error.caused_by, Some(events[panicked].id));
    let payload = error.decode::<ErrorOccurred>().unwrap();
    assert_eq!(payload.source, "handler");
    assert!(
        payload.message.contains("13 is unlucky"),
        "{}",
        payload.message
    );
    // The run went on to the end.
    assert_eq!(events.last().unwrap().name, "workflow:completed");
    assert_eq!(
        second.state.inputs,
        vec!["b".to_owned()],
        "state before the panic is kept"
    );
    // Replaying the log gives the same state as the live run.
    assert_eq!(
        serde_json::to_value(wf.fold(&events)).unwrap(),
        serde_json::to_value(&second.state).unwrap()
    );
    // So does reading the state from the store right after the panicking event (a read that
    // folds without copying the state first, and starts over when a handler panics).
    let after_panic = wf
        .load_state_at(&second.session, panicked as u64 + 1)
        .await
        .unwrap();
    assert_eq!(after_panic.total, 0, "the panicking event is rolled back");
    assert_eq!(after_panic.inputs, vec!["b".to_owned()]);
}

#[tokio::test]
async fn a_failing_store_stops_the_run_with_a_typed_error_and_loses_no_acknowledged_event() {
    // How many appends a run that never fails makes (events are batched causally, so fewer
    // appends than events).
    let clean = FailingStore::fail_from(MemoryStore::new(), u64::MAX);
    counter(
        clean.clone(),
        ScriptedProvider::new().respond(
            "adder",
            Reply::output(serde_json::json!({ "amount": 2 })).text("adding two"),
        ),
    )
    .run(RunOptions::new().input("go"))
    .await
    .unwrap();
    let appends = clean.succeeded();
    assert!(appends >= 3, "a run makes several appends: {appends}");
    let mut kept = Vec::new();
    for fail_at in 1..=appends {
        let inner = MemoryStore::new();
        let store = FailingStore::fail_from(inner.clone(), fail_at);
        let acknowledged = store.clone();
        let seen = Arc::new(Mutex::new(Vec::<Envelope>::new()));
        let seen_by_renderer = Arc::clone(&seen);
        let provider = ScriptedProvider::new().respond(
            "adder",
            Reply::output(serde_json::json!({ "amount": 2 })).text("adding two"),
        );
        let wf = counter(store, provider);
        let session = SessionId::new();
        let result = wf
            .run(
                RunOptions::new()
                    .session(session.clone())
                    .input("go")
                    .renderer(renderer_fn(Pattern::Any, move |e| {
                        seen_by_renderer.lock().unwrap().push(e.clone())
                    })),
            )
            .await;
        let err = result.expect_err("the store fails, so the run must fail");
        match &err {
            Error::Store {
                store,
                session: Some(failed),
                source,
            } => {
                assert_eq!(failed, &session);
                assert!(
                    store.contains("memory") || !store.is_empty(),
                    "names the store: {store}"
                );
                assert!(
                    source.to_string().contains("injected"),
                    "carries the cause: {source}"
                );
            }
            other => panic!("expected a store error, got {other:?}"),
        }
        let stored = inner.all_events(&session).await.unwrap();
        let rendered = seen.lock().unwrap().clone();
        // The runtime only shows an event after the store acknowledged it, and every
        // acknowledged event is in the log.
        assert_eq!(
            acknowledged.succeeded(),
            fail_at - 1,
            "the run stops at the first failed append"
        );
        kept.push(stored.len());
        assert_eq!(
            rendered, stored,
            "renderers saw exactly the acknowledged events (fail at {fail_at})"
        );
    }
    assert_eq!(kept[0], 0, "a failed first append records nothing");
    assert!(
        kept.windows(2).all(|w| w[0] < w[1]),
        "each acknowledged append is kept: {kept:?}"
    );
}

#[tokio::test]
async fn cancellation_ends_running_agents_as_interrupted_and_keeps_what_they_emitted() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new().respond(
        "adder",
        Reply::output(serde_json::json!({ "amount": 1 })).delay(Duration::from_secs(30)),
    );
    let wf = counter(store.clone(), provider);
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        canceller.cancel();
    });
    let started = std::time::Instant::now();
    let outcome = wf
        .run(RunOptions::new().input("slow").cancel_token(cancel))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "cancellation is prompt"
    );
    assert_eq!(outcome.reason, StopReason::Cancelled);
    let events = store.all_events(&outcome.session).await.unwrap();
    assert_eq!(
        names(&events),
        [
            "workflow:started",
            "user:input",
            "agent:started",
            "agent:completed",
            "workflow:completed"
        ]
    );
    let completed = events[3].decode::<AgentCompleted>().unwrap();
    assert_eq!(completed.outcome, Outcome::Interrupted);
    assert_eq!(completed.agent, "adder");
}

/// Counts `Store::sync` calls and the appends made since the last one.
#[derive(Default, Clone)]
struct Syncs(Arc<Mutex<(u32, u32)>>);

#[async_trait::async_trait]
impl openharness::store::StoreObserver for Syncs {
    fn after_append(
        &self,
        _: &SessionId,
        _: &[Envelope],
        _: &Result<u64, openharness::StoreError>,
        _: Duration,
    ) {
        self.0.lock().unwrap().1 += 1;
    }
    fn after_sync(&self, result: &Result<(), openharness::StoreError>) {
        assert!(result.is_ok());
        let mut counts = self.0.lock().unwrap();
        *counts = (counts.0 + 1, 0);
    }
}

#[tokio::test]
async fn every_turn_ends_with_a_sync_after_its_last_append() {
    let syncs = Syncs::default();
    let store = openharness::store::Observed::new(MemoryStore::new(), syncs.clone());
    let provider = ScriptedProvider::new().fallback("adder", |_| {
        Reply::output(serde_json::json!({ "amount": 2 }))
    });
    let wf = counter(store, provider);
    let first = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(
        *syncs.0.lock().unwrap(),
        (1, 0),
        "synced once, after the last append"
    );
    wf.send(&first.session, "y", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(*syncs.0.lock().unwrap(), (2, 0));
}

#[tokio::test]
async fn invalid_output_is_re_asked_with_the_error_then_accepted() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new()
        .respond(
            "adder",
            Reply::output(serde_json::json!({ "amount": "five" })),
        )
        .respond("adder", Reply::output(serde_json::json!({ "amount": 5 })));
    let wf = counter(store.clone(), provider.clone());
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(outcome.state.total, 5);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].attempt, 2);
    assert!(
        requests[1]
            .previous_error
            .as_deref()
            .unwrap()
            .contains("invalid type"),
        "{:?}",
        requests[1].previous_error
    );
}

#[tokio::test]
async fn a_re_ask_keeps_only_the_accepted_text_and_records_the_rejected_output() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new()
        .respond(
            "adder",
            Reply::output(serde_json::json!({ "amount": "five" })).text("five, I think"),
        )
        .respond(
            "adder",
            Reply::output(serde_json::json!({ "amount": 5 })).text("{\"amount\": 5}"),
        );
    let wf = counter(store.clone(), provider);
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(outcome.state.total, 5);
    let events = store.all_events(&outcome.session).await.unwrap();
    let complete = first::<TextComplete>(&events);
    assert_eq!(
        complete.text, "{\"amount\": 5}",
        "not glued to the rejected attempt's text"
    );
    let deltas: Vec<(u32, String)> = events
        .iter()
        .filter(|e| e.name == TextDelta::NAME)
        .map(|e| {
            let delta = e.decode::<TextDelta>().unwrap();
            (delta.attempt, delta.delta)
        })
        .collect();
    let attempt = |n: u32| -> String {
        deltas
            .iter()
            .filter(|(a, _)| *a == n)
            .map(|(_, d)| d.as_str())
            .collect()
    };
    assert_eq!(attempt(1), "five, I think");
    assert_eq!(attempt(2), "{\"amount\": 5}");
    let first_delta = events.iter().find(|e| e.name == TextDelta::NAME).unwrap();
    assert!(
        first_delta.payload.get("attempt").is_none(),
        "attempt 1 is left off the wire: {}",
        first_delta.payload
    );

    let rejected: Vec<_> = events
        .iter()
        .filter(|e| e.name == OutputRejected::NAME)
        .collect();
    assert_eq!(rejected.len(), 1);
    let trigger = events.iter().find(|e| e.name == UserInput::NAME).unwrap();
    assert_eq!(rejected[0].caused_by, Some(trigger.id));
    let payload = rejected[0].decode::<OutputRejected>().unwrap();
    assert_eq!(payload.agent, "adder");
    assert_eq!(payload.attempt, 1);
    assert_eq!(payload.output, serde_json::json!({ "amount": "five" }));
    assert!(
        payload.errors[0].contains("invalid type"),
        "{:?}",
        payload.errors
    );
    // In the agent's final batch: before its agent:completed, after the last delta.
    let at = |name: &str| events.iter().position(|e| e.name == name).unwrap();
    let last_delta = events
        .iter()
        .rposition(|e| e.name == TextDelta::NAME)
        .unwrap();
    assert!(last_delta < at(OutputRejected::NAME));
    assert!(at(OutputRejected::NAME) < at(AgentCompleted::NAME));
}

#[tokio::test]
async fn output_that_never_matches_ends_the_agent_as_failure_with_error_occurred() {
    let store = MemoryStore::new();
    let bad = || Reply::output(serde_json::json!({ "nope": true }));
    let provider = ScriptedProvider::new()
        .respond("adder", bad())
        .respond("adder", bad())
        .respond("adder", bad());
    let wf = counter(store.clone(), provider.clone());
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(provider.requests().len(), 3, "bounded re-asks");
    let events = store.all_events(&outcome.session).await.unwrap();
    let error = first::<ErrorOccurred>(&events);
    assert_eq!(error.source, "agent");
    assert!(error.message.contains("amount"), "{}", error.message);
    let completed = first::<AgentCompleted>(&events);
    assert_eq!(completed.outcome, Outcome::Failure);
    assert_eq!(outcome.state.total, 0);
}

#[tokio::test]
async fn a_provider_error_fails_the_agent_not_the_run() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new().respond("adder", Reply::error("model overloaded"));
    let wf = counter(store.clone(), provider);
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(outcome.reason, StopReason::Idle);
    let events = store.all_events(&outcome.session).await.unwrap();
    let completed = first::<AgentCompleted>(&events);
    assert_eq!(completed.outcome, Outcome::Failure);
    assert!(completed.error.unwrap().contains("model overloaded"));
}

/// A provider that panics: at once, or after waiting a while (in a later poll).
struct Panicking {
    after: Option<Duration>,
}

#[async_trait::async_trait]
impl openharness::Provider for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }

    async fn complete(
        &self,
        _request: openharness::adapter::ProviderRequest,
        _sink: openharness::adapter::ProviderSink,
    ) -> openharness::adapter::ProviderResult {
        if let Some(after) = self.after {
            tokio::time::sleep(after).await;
        }
        panic!("the provider broke");
    }
}

#[tokio::test]
async fn a_panicking_provider_fails_the_agent_not_the_run() {
    for after in [None, Some(Duration::from_millis(20))] {
        let store = MemoryStore::new();
        let wf = Workflow::builder("counter")
            .initial_state(Counter::default())
            .agent(Adder)
            .store(store.clone())
            .provider(Panicking { after })
            .build()
            .unwrap();
        let outcome = tokio::time::timeout(
            Duration::from_secs(10),
            wf.run(RunOptions::new().input("x")),
        )
        .await
        .expect("the run ends: a panicking provider must not leave it waiting")
        .unwrap();
        assert_eq!(outcome.reason, StopReason::Idle, "{after:?}");
        let events = store.all_events(&outcome.session).await.unwrap();
        let completed = first::<AgentCompleted>(&events);
        assert_eq!(completed.outcome, Outcome::Failure);
        let reason = completed.error.unwrap();
        assert!(
            reason.contains("panicking failed: panicked: the provider broke"),
            "{reason}"
        );
        assert_eq!(first::<ErrorOccurred>(&events).source, "agent");
    }
}

#[tokio::test]
async fn a_refusal_is_not_re_asked_and_is_recorded_with_its_text() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new()
        .respond("adder", Reply::refusal("I won't add numbers today."))
        .respond("adder", Reply::output(serde_json::json!({ "amount": 5 })));
    let wf = counter(store.clone(), provider.clone());
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(provider.requests().len(), 1, "a refusal is not re-asked");
    assert_eq!(outcome.state.total, 0);
    let events = store.all_events(&outcome.session).await.unwrap();
    let error = first::<ErrorOccurred>(&events);
    assert_eq!(error.source, "refusal");
    assert_eq!(error.message, "I won't add numbers today.");
    assert_eq!(error.context.as_ref().unwrap()["agentName"], "adder");
    let completed = first::<AgentCompleted>(&events);
    assert_eq!(completed.outcome, Outcome::Failure);
    let reason = completed.error.unwrap();
    assert!(
        reason.contains("refused: I won't add numbers today."),
        "{reason}"
    );
    assert!(!reason.contains("schema"), "{reason}");
}

#[tokio::test]
async fn a_panicking_or_slow_renderer_never_breaks_or_blocks_the_loop() {
    let store = MemoryStore::new();
    let provider =
        ScriptedProvider::new().respond("adder", Reply::output(serde_json::json!({ "amount": 3 })));
    let wf = counter(store.clone(), provider);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_after_panic = Arc::clone(&seen);
    let outcome = wf
        .run(
            RunOptions::new()
                .input("x")
                .renderer(renderer_fn(Pattern::Any, |_| panic!("renderer bug")))
                .renderer(renderer_fn("*:started".parse().unwrap(), |_| {
                    std::thread::sleep(Duration::from_millis(50))
                }))
                .renderer(renderer_fn(Pattern::Any, move |e| {
                    seen_after_panic.lock().unwrap().push(e.name.to_string())
                })),
        )
        .await
        .unwrap();
    assert_eq!(outcome.state.total, 3);
    let stored = store.all_events(&outcome.session).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        names(&stored),
        "the healthy renderer saw every event in order"
    );
}

#[tokio::test]
async fn renderer_patterns_filter_events() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new().respond(
        "adder",
        Reply::output(serde_json::json!({ "amount": 3 })).text("a b c"),
    );
    let wf = counter(store, provider);
    let collect = |pattern: &str| {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&seen);
        (
            seen,
            renderer_fn(pattern.parse().unwrap(), move |e| {
                sink.lock().unwrap().push(e.name.to_string())
            }),
        )
    };
    let (deltas, r1) = collect("text:delta");
    let (completed, r2) = collect("*:completed");
    let (agents, r3) = collect("agent:*");
    wf.run(
        RunOptions::new()
            .input("x")
            .renderer(r1)
            .renderer(r2)
            .renderer(r3),
    )
    .await
    .unwrap();
    let deltas = deltas.lock().unwrap();
    assert!(!deltas.is_empty() && deltas.iter().all(|n| n == "text:delta"));
    assert_eq!(
        *completed.lock().unwrap(),
        ["agent:completed", "workflow:completed"]
    );
    assert_eq!(
        *agents.lock().unwrap(),
        ["agent:started", "agent:completed"]
    );
}

#[tokio::test]
async fn guards_stop_the_run() {
    let provider =
        ScriptedProvider::new().respond("adder", Reply::output(serde_json::json!({ "amount": 1 })));
    let wf = counter(MemoryStore::new(), provider);
    let outcome = wf
        .run(RunOptions::new().input("x").max_events(2))
        .await
        .unwrap();
    assert_eq!(outcome.reason, StopReason::MaxEvents);
    assert_eq!(outcome.len, 3, "two events, then workflow:completed");

    let provider = ScriptedProvider::new();
    let wf = counter(MemoryStore::new(), provider.clone());
    let outcome = wf
        .run(RunOptions::new().input("x").max_agent_calls(0))
        .await
        .unwrap();
    assert_eq!(outcome.reason, StopReason::MaxAgentCalls);
    assert_eq!(provider.requests().len(), 0);
}

#[tokio::test]
async fn until_ends_the_run_and_unknown_events_are_skipped_on_replay() {
    let provider =
        ScriptedProvider::new().respond("adder", Reply::output(serde_json::json!({ "amount": 4 })));
    let store = MemoryStore::new();
    let wf = Workflow::builder("counter")
        .initial_state(Counter::default())
        .agent(Adder)
        .until(|s: &Counter| s.total >= 4)
        .store(store.clone())
        .provider(provider)
        .build()
        .unwrap();
    let outcome = wf.run(RunOptions::new().input("x")).await.unwrap();
    assert_eq!(outcome.reason, StopReason::Until);
    let mut events = store.all_events(&outcome.session).await.unwrap();
    assert_eq!(
        events
            .last()
            .unwrap()
            .decode::<WorkflowCompleted>()
            .unwrap()
            .reason,
        "until"
    );
    // An event from a future version of the workflow does not break replay.
    events.insert(
        2,
        Envelope::new("plan:invented", serde_json::json!({ "x": 1 }), None),
    );
    assert_eq!(wf.fold(&events).total, 4);
}

#[tokio::test]
async fn building_without_a_store_or_provider_is_a_clear_error() {
    let err = Workflow::<Counter>::builder("counter")
        .initial_state(Counter::default())
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("no store"), "{err}");
    let err = Workflow::<Counter>::builder("counter")
        .initial_state(Counter::default())
        .store(MemoryStore::new())
        .agent(Adder)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("no provider"), "{err}");
}

/// `RunOptions::input_id` records the turn's `user:input` with the id the caller chose, on a
/// new session and on a recorded one, and no other event of the turn gets it.
#[tokio::test]
async fn a_chosen_input_id_is_the_recorded_user_inputs() {
    let store = MemoryStore::new();
    let provider = ScriptedProvider::new().fallback("adder", |_| {
        Reply::output(serde_json::json!({ "amount": 1 }))
    });
    let wf = counter(store.clone(), provider);
    let chosen = EventId::new();
    let first = wf
        .run(RunOptions::new().input("x").input_id(chosen))
        .await
        .unwrap();
    let again = EventId::new();
    wf.send(&first.session, "y", RunOptions::new().input_id(again))
        .await
        .unwrap();
    let events = store.all_events(&first.session).await.unwrap();
    let inputs: Vec<EventId> = events
        .iter()
        .filter(|e| e.name == "user:input")
        .map(|e| e.id)
        .collect();
    assert_eq!(inputs, [chosen, again]);
    for id in [chosen, again] {
        assert_eq!(events.iter().filter(|e| e.id == id).count(), 1);
    }
}
