//! `Host::bisect` on the planted bugs: two sessions whose events all match but whose states
//! part (one recorded by the fixed ledger, one by the arithmetic bug), two sessions whose
//! events part (the dropped follow-up event), a session against its re-execution through
//! buggy code, and a fork against its parent. Each names the first position, what produced
//! it, the chain of causes back to the input and the state field by field — worked out here
//! from the recordings, not read back from the answer.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::host::{Host, PartKind, Producer};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{Store, WorkflowState};
use openharness_planted_bugs::bugs::{Arithmetic, DroppedEvent, renamed::RenamedField};
use openharness_planted_bugs::ledger::Ledger;
use openharness_planted_bugs::workflow;
use serde_json::json;

const INPUTS: [&str; 3] = [
    "order widget 2 1250",
    "order gadget 1 500",
    "refund widget 1250",
];

/// Records the three inputs with the handlers of `S` into `store`.
async fn record<S: WorkflowState + Default>(store: &MemoryStore) -> SessionId {
    let ledger = workflow::<S>().unwrap().with_store(store.clone());
    let first = ledger
        .run(RunOptions::new().input(INPUTS[0]))
        .await
        .unwrap();
    for input in &INPUTS[1..] {
        ledger
            .send(&first.session, *input, RunOptions::new())
            .await
            .unwrap();
    }
    first.session
}

/// A host over `store` with the ledger's handlers of `S`.
fn hosting<S: WorkflowState + Default>(store: &MemoryStore) -> Host {
    Host::new(store.clone())
        .workflow(workflow::<S>().unwrap().with_store(store.clone()))
        .unwrap()
}

fn seq_of(events: &[Envelope], name: &str) -> u64 {
    events.iter().position(|e| e.name == name).unwrap() as u64
}

/// The first event at or after `seq` that recorded a state hash.
fn first_hash_from(events: &[Envelope], seq: u64) -> u64 {
    (seq..events.len() as u64)
        .find(|&s| events[s as usize].state_hash.is_some())
        .unwrap()
}

fn chain(parting: &openharness::host::Parting) -> Vec<(u64, String)> {
    parting
        .causes
        .iter()
        .map(|c| (c.seq, c.name.clone()))
        .collect()
}

#[tokio::test]
async fn two_sessions_whose_states_part_while_every_event_matches() {
    let store = MemoryStore::new();
    let fixed = record::<Ledger>(&store).await;
    let buggy = record::<Arithmetic>(&store).await;
    let events = store.all_events(&buggy).await.unwrap();
    let refund = seq_of(&events, "refund:issued");
    let input = refund - 1;
    assert_eq!(events[input as usize].name, "user:input");
    // Today's (fixed) handlers reproduce the fixed session's every state, so the states are
    // compared wherever the buggy one recorded a hash: the first from the refund on parts.
    // From the buggy code's side, it is the other way round.
    let fixed_events = store.all_events(&fixed).await.unwrap();
    let expected = first_hash_from(&events, refund);
    let expected_from_the_buggy_side = first_hash_from(&fixed_events, refund);

    let host = hosting::<Ledger>(&store);
    let bisection = host.bisect(&fixed, Some(&buggy)).await.unwrap();
    let parting = bisection.parting.clone().expect("the states part");
    assert_eq!(parting.kind, PartKind::State);
    assert_eq!(parting.seq, expected);
    assert!(bisection.states_compared >= 2, "{bisection:?}");
    assert!(parting.agreed_after.is_some_and(|seq| seq < refund));
    assert_eq!(
        parting.produced_by,
        Producer::EventHandler {
            event: "refund:issued".into(),
            seq: refund
        }
    );
    assert_eq!(
        chain(&parting),
        [
            (refund, "refund:issued".to_owned()),
            (input, "user:input".to_owned())
        ]
    );
    // Today's (fixed) refund handler, field by field: the suspects.
    let run = &parting.handlers[0];
    assert_eq!((run.seq, run.event.as_str()), (refund, "refund:issued"));
    let refunded = run
        .changes
        .iter()
        .find(|c| c.path == "/refunded_cents")
        .unwrap();
    assert_eq!(
        (&refunded.from, &refunded.to),
        (&Some(json!(0)), &Some(json!(1250)))
    );
    // The buggy side's state is known only by its hash: today's handlers fold it otherwise.
    assert_eq!(parting.state, None);
    assert!(parting.state_unknown.as_deref().unwrap().starts_with("b's"));
    let [a_hash, b_hash] = parting.hashes.clone().unwrap();
    assert_eq!(
        events[parting.seq as usize].state_hash.as_deref(),
        Some(b_hash.as_str())
    );
    assert_ne!(a_hash, b_hash);

    // A snapshot of the buggy run's state there, as a long session's live run saves one:
    // then both states are known, and differ field by field.
    let live = hosting::<Arithmetic>(&store)
        .state_at(&buggy, parting.seq + 1)
        .await
        .unwrap();
    store
        .snapshot(
            &buggy,
            &openharness::adapter::Snapshot::new(parting.seq + 1, live),
        )
        .await
        .unwrap();
    let parting = host
        .bisect(&fixed, Some(&buggy))
        .await
        .unwrap()
        .parting
        .unwrap();
    let state = parting.state.expect("both states are known now");
    let changed: Vec<String> = state.iter().map(ToString::to_string).collect();
    assert_eq!(changed, ["/refunded_cents: 1250 → 125000"], "{changed:?}");

    // From the buggy code's side, the fixed session is the one whose state is not today's.
    let parting = hosting::<Arithmetic>(&store)
        .bisect(&fixed, Some(&buggy))
        .await
        .unwrap()
        .parting
        .unwrap();
    assert_eq!(
        (parting.kind, parting.seq),
        (PartKind::State, expected_from_the_buggy_side)
    );
    assert!(parting.state_unknown.unwrap().starts_with("a's"));
    // A session against itself agrees, states included.
    let same = host.bisect(&fixed, Some(&fixed)).await.unwrap();
    assert_eq!(same.parting, None);
    assert!(same.states_compared >= 2);
}

#[tokio::test]
async fn two_sessions_whose_events_part_at_a_dropped_follow_up() {
    let store = MemoryStore::new();
    let fixed = record::<Ledger>(&store).await;
    let dropped = record::<DroppedEvent>(&store).await;
    let events = store.all_events(&fixed).await.unwrap();
    let earned = seq_of(&events, "points:earned");
    let placed = seq_of(&events, "order:placed");
    let parting = hosting::<Ledger>(&store)
        .bisect(&fixed, Some(&dropped))
        .await
        .unwrap()
        .parting
        .unwrap();
    assert_eq!((parting.kind, parting.seq), (PartKind::Events, earned));
    assert_eq!(parting.a.as_ref().unwrap().name, "points:earned");
    assert_eq!(parting.a.as_ref().unwrap().caused_by, Some(placed));
    assert_eq!(parting.b.as_ref().unwrap().name, "workflow:completed");
    assert_eq!(
        parting.produced_by,
        Producer::EventHandler {
            event: "order:placed".into(),
            seq: placed
        }
    );
    assert_eq!(
        chain(&parting),
        [
            (earned, "points:earned".to_owned()),
            (placed, "order:placed".to_owned()),
            (placed - 1, "user:input".to_owned()),
        ]
    );
    let points = json!(events[earned as usize].payload["points"]);
    let state: Vec<String> = parting
        .state
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(state, [format!("/points: {points} → 0")]);
}

#[tokio::test]
async fn a_session_against_its_replay_through_buggy_code() {
    let store = MemoryStore::new();
    let session = record::<Ledger>(&store).await;
    let events = store.all_events(&session).await.unwrap();
    let refund = seq_of(&events, "refund:issued");

    // The arithmetic: the state, at the first hash from the refund on.
    let parting = hosting::<Arithmetic>(&store)
        .bisect(&session, None)
        .await
        .unwrap()
        .parting
        .unwrap();
    assert_eq!(
        (parting.kind, parting.seq),
        (PartKind::State, first_hash_from(&events, refund))
    );
    assert_eq!(parting.handlers.len(), 1, "{:?}", parting.handlers);
    assert_eq!(parting.handlers[0].seq, refund);
    assert_eq!(chain(&parting)[0], (refund, "refund:issued".to_owned()));

    // The renamed field: the first order's payload, field by field, and the state the
    // recording folds to today (an old payload decodes to a quantity of 0).
    let placed = seq_of(&events, "order:placed");
    let parting = hosting::<RenamedField>(&store)
        .bisect(&session, None)
        .await
        .unwrap()
        .parting
        .unwrap();
    assert_eq!((parting.kind, parting.seq), (PartKind::Events, placed));
    let mut payload: Vec<String> = parting.payload.iter().map(ToString::to_string).collect();
    payload.sort();
    assert_eq!(payload, ["/qty: (none) → 2", "/quantity: 2 → (none)"]);
    assert_eq!(
        parting.produced_by,
        Producer::EventHandler {
            event: "user:input".into(),
            seq: placed - 1
        }
    );
    let state = parting.state.unwrap();
    let quantity = state
        .iter()
        .find(|c| c.path == "/orders/0/quantity")
        .unwrap();
    assert_eq!(
        (&quantity.from, &quantity.to),
        (&Some(json!(0)), &Some(json!(2)))
    );

    // The fixed code replays it.
    let same = hosting::<Ledger>(&store)
        .bisect(&session, None)
        .await
        .unwrap();
    assert_eq!(same.parting, None);
    assert!(same.states_compared >= 2);
}

#[tokio::test]
async fn a_fork_and_its_parent_part_at_the_fork_s_own_input() {
    let store = MemoryStore::new();
    let parent = record::<Ledger>(&store).await;
    let events = store.all_events(&parent).await.unwrap();
    // After the first turn, where the parent's second input is.
    let second = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == "user:input")
        .nth(1)
        .unwrap()
        .0 as u64;
    let ledger = workflow::<Ledger>().unwrap().with_store(store.clone());
    let fork = ledger
        .fork(&parent, openharness::tape::At::position(second))
        .await
        .unwrap()
        .run(RunOptions::new().input("order lamp 1 4000"))
        .await
        .unwrap();
    let parting = hosting::<Ledger>(&store)
        .bisect(&parent, Some(&fork.session))
        .await
        .unwrap()
        .parting
        .unwrap();
    // Counted from the root: the fork's own input stands where the parent's second was.
    assert_eq!((parting.kind, parting.seq), (PartKind::Events, second));
    assert_eq!(parting.produced_by, Producer::Input);
    let payload: Vec<String> = parting.payload.iter().map(ToString::to_string).collect();
    assert_eq!(
        payload,
        ["/text: \"order gadget 1 500\" → \"order lamp 1 4000\""]
    );
}

/// An event an agent's call recorded is put down to that agent and the event that activated
/// the call: the demo against a fork of it whose model answers without streaming text.
#[tokio::test]
async fn an_agent_s_event_is_put_down_to_its_call() {
    use openharness::provider::{Reply, ScriptedProvider};
    use openharness_example_planner_executor as planner;
    let store = MemoryStore::new();
    let demo = planner::workflow(store.clone(), planner::scripted_provider()).unwrap();
    let waiting = demo
        .run(RunOptions::new().input(planner::DEMO_GOAL))
        .await
        .unwrap();
    let plain = ScriptedProvider::new()
        .fallback("executor", |_| Reply::output(json!({ "summary": "Done." })));
    let fork = demo
        .with_provider(plain)
        .fork(
            &waiting.session,
            openharness::tape::At::nth("task:completed", 1),
        )
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    let host = Host::new(store.clone())
        .workflow(planner::workflow(store.clone(), ScriptedProvider::new()).unwrap())
        .unwrap();
    let parting = host
        .bisect(&waiting.session, Some(&fork.session))
        .await
        .unwrap()
        .parting
        .unwrap();
    let events = store.all_events(&waiting.session).await.unwrap();
    let forked_at = events
        .iter()
        .position(|e| e.name == "task:completed")
        .unwrap()
        + 1;
    assert_eq!(parting.kind, PartKind::Events);
    assert!(parting.seq as usize >= forked_at, "{parting:?}");
    // The demo's executor streamed its report there; the fork's did not.
    let seq = parting.seq as usize;
    assert_eq!(events[seq].name, "text:delta");
    let trigger = events[..seq]
        .iter()
        .rposition(|e| e.name == "task:started")
        .unwrap() as u64;
    assert_eq!(
        parting.produced_by,
        Producer::Agent {
            agent: "executor".into(),
            trigger: Some(trigger)
        }
    );
    assert_eq!(chain(&parting)[1], (trigger, "task:started".to_owned()));
    assert_eq!(chain(&parting).last().unwrap().1, "user:input");
}
