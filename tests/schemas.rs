//! The wire types' JSON Schemas (`openharness::host::wire_schemas`, checked in under `schemas/`)
//! against the JSON Open Harness really writes: every event of real sessions (each built-in
//! payload against its own schema), the host's answers, session metadata and the chat
//! projections. A schema that disagrees with a serde shape fails here.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};

use openharness::BusyPolicy;
use openharness::builtin::{Builtin, NAMES};
use openharness::host::{ForkPoint, Host, TurnStart, wire_schemas};
use openharness::prelude::*;
use openharness::projection::to_ui_messages;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness_example_planner_executor as demo;
use openharness_testkit::inbox::gated_inbox;
use openharness_testkit::notes::{Notes, Scribe};
use openharness_testkit::{LIMIT, eventually};
use serde::Serialize;
use serde_json::{Value, json};

/// Every wire schema, compiled, by name.
struct Schemas(BTreeMap<&'static str, jsonschema::Validator>);

impl Schemas {
    fn new() -> Self {
        let mut validators = BTreeMap::new();
        for wire in wire_schemas() {
            let validator = jsonschema::validator_for(wire.schema.as_value())
                .unwrap_or_else(|err| panic!("{} is not a valid schema: {err}", wire.name));
            assert!(
                validators.insert(wire.name, validator).is_none(),
                "two schemas named {}",
                wire.name
            );
        }
        Self(validators)
    }

    /// The errors of `json` against the schema `name` (empty when it is valid).
    fn errors(&self, name: &str, json: &Value) -> Vec<String> {
        let validator = self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("no schema {name}"));
        validator.iter_errors(json).map(|e| e.to_string()).collect()
    }

    /// Asserts that `value`, serialized, matches the schema `name`; returns the JSON.
    fn check(&self, name: &str, value: &impl Serialize) -> Value {
        let json = serde_json::to_value(value).unwrap();
        let errors = self.errors(name, &json);
        assert!(errors.is_empty(), "{name} rejects {json:#}: {errors:#?}");
        json
    }
}

/// A second workflow (the shared note-taking one), for what the demo never records: tool
/// calls, a failed agent.
fn notes() -> Workflow<Notes> {
    let provider = ScriptedProvider::new()
        .respond(
            "scribe",
            Reply::output(json!({ "note": "looked it up" }))
                .text("Let me look.")
                .tool_call(
                    "c1",
                    "search",
                    json!({ "q": "weather" }),
                    json!({ "tempC": 21 }),
                )
                .tool_error("c2", "search", json!({ "q": "" }), "empty query")
                .cost(0.002),
        )
        // The second turn: an output that is rejected (output:rejected), then a failure.
        .respond("scribe", Reply::output(json!({ "nope": 1 })).text("Hmm."))
        .respond(
            "scribe",
            Reply::error("the model is overloaded").text("Again."),
        );
    Workflow::builder("notes")
        .initial_state(Notes::default())
        .agent(Scribe)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap()
}

#[tokio::test]
async fn real_sessions_and_the_hosts_answers_match_the_wire_schemas() {
    let schemas = Schemas::new();
    let store = MemoryStore::new();
    let planner = demo::workflow(MemoryStore::new(), demo::scripted_provider()).unwrap();
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    let host = Host::new(store.clone())
        .workflow(planner)
        .unwrap()
        .workflow(notes())
        .unwrap()
        .workflow(inbox)
        .unwrap();

    // Turns: one that ends waiting for a person, its answer, a fork, tools, a re-asked and
    // then failed agent.
    let waiting = host
        .run(
            demo::WORKFLOW_NAME,
            Some(demo::DEMO_GOAL.into()),
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(waiting.reason, StopReason::WaitingForInput);
    let outcome = schemas.check("TurnOutcome", &waiting);
    assert_eq!(outcome["reason"], "waiting_for_input");
    let session = waiting.session.clone();
    let answered = host
        .respond(
            &session,
            waiting.open_requests[0],
            "yes".into(),
            RunOptions::new(),
        )
        .await
        .unwrap();
    schemas.check("TurnOutcome", &answered);
    let fork = host
        .fork(
            &session,
            ForkPoint::Position { position: 3 },
            RunOptions::new(),
        )
        .await
        .unwrap();
    schemas.check("TurnOutcome", &fork);
    let noted = host
        .run("notes", Some("weather?".into()), RunOptions::new())
        .await
        .unwrap();
    schemas.check("TurnOutcome", &noted);
    let failed = host
        .send(&noted.session, "again".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(failed.errors, 1);
    schemas.check("TurnOutcome", &failed);
    schemas.check("ForkPoint", &ForkPoint::Position { position: 3 });
    second_inputs(&host, &gate, &schemas).await;

    // Sessions, pages of events and every event, each built-in payload on its own.
    let payloads: BTreeMap<&str, &str> = wire_schemas()
        .iter()
        .filter_map(|wire| Some((wire.event?, wire.name)))
        .collect();
    let mut seen = BTreeSet::new();
    let mut part_types = BTreeSet::new();
    let sessions = host.sessions().await.unwrap();
    assert_eq!(sessions.len(), 4);
    for summary in &sessions {
        schemas.check("SessionSummary", summary);
        let page = host.events(&summary.id, None, 10_000).await.unwrap();
        schemas.check("EventsPage", &page);
        for recorded in &page.events {
            schemas.check("Recorded", recorded);
            schemas.check("Envelope", &recorded.event);
            if let Some(decoded) = Builtin::decode(&recorded.event) {
                let name = payloads[decoded.unwrap().name()];
                schemas.check(name, &recorded.event.payload);
                seen.insert(recorded.event.name.to_string());
            }
        }
        for position in 0..=page.len {
            schemas.check(
                "TapeView",
                &host.tape_view(&summary.id, position).await.unwrap(),
            );
        }
        for state in host.states_at(&summary.id, &[0, page.len]).await.unwrap() {
            schemas.check("StateAt", &state);
        }
        let messages = host.messages_at(&summary.id, page.len).await.unwrap();
        for message in &messages {
            schemas.check("Message", message);
        }
        for message in to_ui_messages(&messages) {
            let json = schemas.check("UiMessage", &message);
            for part in json["parts"].as_array().unwrap() {
                part_types.insert(part["type"].as_str().unwrap().to_owned());
            }
        }
        schemas.check("Unfinished", &host.unfinished(&summary.id).await.unwrap());
    }
    for info in store.sessions().await.unwrap() {
        schemas.check("SessionInfo", &info);
    }
    // The sessions above record every built-in event, so every payload schema was exercised.
    let all: BTreeSet<String> = NAMES.iter().map(|name| name.to_string()).collect();
    assert_eq!(seen, all, "built-in events not recorded by this test");
    assert_eq!(
        payloads.keys().copied().collect::<BTreeSet<_>>(),
        NAMES.iter().copied().collect()
    );

    assert_eq!(
        part_types,
        BTreeSet::from([
            "data-output".to_owned(),
            "text".to_owned(),
            "tool-search".to_owned()
        ])
    );

    // The schemas are strict enough to catch a field that changed its name or its type.
    let mut renamed = outcome.clone();
    let first_seq = renamed["firstSeq"].take();
    renamed.as_object_mut().unwrap().remove("firstSeq");
    renamed["first_seq"] = first_seq;
    assert!(!schemas.errors("TurnOutcome", &renamed).is_empty());
    let mut retyped = outcome;
    retyped["reason"] = json!("waiting");
    assert!(!schemas.errors("TurnOutcome", &retyped).is_empty());
    let text = json!({ "type": "text", "text": "hi", "state": "done", "extra": 1 });
    assert!(!schemas.errors("UiPart", &text).is_empty());
}

/// A session of the inbox with what arrives while its turns run: a steer the running call
/// takes (`input:steered`), an input queued after it (`input:queued`), a rollback
/// (`turn:rolled_back`) and a stop (`stop:requested`).
async fn second_inputs(host: &Host, gate: &tokio::sync::Semaphore, schemas: &Schemas) {
    let session = SessionId::new();
    let calls = |n: usize| {
        let session = session.clone();
        move || {
            let session = session.clone();
            async move {
                let page = host
                    .events(&session, None, 1000)
                    .await
                    .map_err(|_| 0_usize)?;
                let started = page
                    .events
                    .iter()
                    .filter(|r| r.event.name == "agent:started")
                    .count();
                if started >= n { Ok(()) } else { Err(started) }
            }
        }
    };
    let start = TurnStart::New {
        workflow: "inbox".into(),
        input: Some("slow".into()),
    };
    let held = host
        .start(&session, start, RunOptions::new())
        .await
        .unwrap();
    eventually(LIMIT, "the first call", calls(1)).await;
    let second = |text: &str, policy: BusyPolicy| {
        let session = session.clone();
        let options = RunOptions::new().on_busy(policy);
        let start = TurnStart::Input(text.into());
        async move { host.start(&session, start, options).await.unwrap() }
    };
    second("in capitals", BusyPolicy::Steer).await;
    let later = second("later", BusyPolicy::Enqueue).await;
    gate.add_permits(1);
    schemas.check("TurnOutcome", &held.done.wait().await.unwrap());
    schemas.check("TurnOutcome", &later.done.wait().await.unwrap());
    let abandoned = second("slow", BusyPolicy::Enqueue).await;
    eventually(LIMIT, "the abandoned call", calls(3)).await;
    let instead = second("instead", BusyPolicy::Rollback).await;
    assert_eq!(
        abandoned.done.wait().await.unwrap().reason,
        StopReason::RolledBack
    );
    schemas.check("TurnOutcome", &instead.done.wait().await.unwrap());
    let stopped = second("slow", BusyPolicy::Enqueue).await;
    eventually(LIMIT, "the stopped call", calls(5)).await;
    assert!(host.cancel(&session).await);
    assert_eq!(
        stopped.done.wait().await.unwrap().reason,
        StopReason::Cancelled
    );
    eventually(LIMIT, "the inbox to be given up", || async {
        if host.is_running(&session) {
            Err("running")
        } else {
            Ok(())
        }
    })
    .await;
}
