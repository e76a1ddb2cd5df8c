//! Replays of the planner-executor demo: its event flow, final state and projected messages
//! pinned by insta snapshots, byte-identical replays, and the tape's position rule.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::projection::project_messages;
use openharness::store::MemoryStore;
use openharness::tape::{LoadTape, Tape};
use openharness_example_planner_executor::{self as example, PlanState};

/// Runs the demo into a fresh memory store and loads its tape.
async fn demo_tape() -> Tape<PlanState> {
    let workflow = example::workflow(MemoryStore::new(), example::scripted_provider()).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    assert!(outcome.state.is_done());
    workflow.load(&outcome.session).await.unwrap()
}

/// The event flow without ids and timestamps: name, payload and which earlier event caused it.
fn flow(events: &[Envelope]) -> Vec<serde_json::Value> {
    events
        .iter()
        .enumerate()
        .map(|(seq, event)| {
            let cause = event.caused_by.and_then(|id| events.iter().position(|e| e.id == id));
            serde_json::json!({ "seq": seq, "name": event.name, "payload": event.payload, "causedBy": cause })
        })
        .collect()
}

#[tokio::test]
async fn demo_event_flow() {
    let tape = demo_tape().await;
    insta::assert_json_snapshot!("demo_event_flow", flow(tape.events()));
}

#[tokio::test]
async fn demo_final_state() {
    let mut tape = demo_tape().await;
    tape.step_to(tape.len());
    insta::assert_json_snapshot!("demo_final_state", tape.state());
}

#[tokio::test]
async fn demo_projected_messages() {
    let tape = demo_tape().await;
    let messages = serde_json::to_value(project_messages(tape.events())).unwrap();
    insta::assert_json_snapshot!(
        "demo_projected_messages",
        ids_as_seqs(messages, tape.events())
    );
}

/// Replaces every event id (and `msg-<event id>` message id) with the event's seq, so the
/// snapshot pins which events each message links back to.
fn ids_as_seqs(value: serde_json::Value, events: &[Envelope]) -> serde_json::Value {
    use serde_json::Value;
    let seq_of = |id: &str| events.iter().position(|e| e.id.to_string() == id);
    match value {
        Value::String(s) => {
            if let Some(seq) = seq_of(&s) {
                Value::String(format!("event #{seq}"))
            } else if let Some(seq) = s.strip_prefix("msg-").and_then(seq_of) {
                Value::String(format!("msg-<event #{seq}>"))
            } else {
                Value::String(s)
            }
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| ids_as_seqs(v, events)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, ids_as_seqs(v, events)))
                .collect(),
        ),
        other => other,
    }
}

#[tokio::test]
async fn replaying_a_session_100_times_gives_byte_identical_state_at_every_position() {
    let tape = demo_tape().await;
    let workflow = tape.workflow().clone();
    let expected: Vec<String> = (0..=tape.len())
        .map(|p| serde_json::to_string(&tape.state_at(p)).unwrap())
        .collect();
    for _ in 0..100 {
        let mut replay = workflow.load(tape.session()).await.unwrap();
        for (position, state) in expected.iter().enumerate() {
            assert_eq!(replay.step_to(position as u64), position as u64);
            assert_eq!(
                &serde_json::to_string(replay.state()).unwrap(),
                state,
                "position {position}"
            );
        }
    }
}

#[tokio::test]
async fn tape_positions_follow_the_one_rule() {
    let mut tape = demo_tape().await;
    let len = tape.len();
    assert!(
        len > 15,
        "the demo is long enough for the scenarios ({len})"
    );
    let initial = serde_json::to_value(tape.workflow().initial_state()).unwrap();

    // Position 0: the initial state, no current event; stepping back stays at 0.
    assert_eq!(tape.position(), 0);
    assert!(tape.current().is_none());
    assert_eq!(serde_json::to_value(tape.state()).unwrap(), initial);
    assert_eq!(tape.step_back(), 0);

    // step() moves one event; current at p > 0 is event p - 1.
    assert_eq!(tape.step(), 1);
    assert_eq!(tape.current().unwrap().name, "workflow:started");
    assert_eq!(tape.current(), tape.events().first());

    // stepTo(5).
    assert_eq!(tape.step_to(5), 5);
    assert_eq!(tape.current(), tape.events().get(4));

    // Step back from 15 to every earlier position: same state as a fresh fold.
    for target in (0..15).rev() {
        tape.step_to(15);
        while tape.position() > target {
            tape.step_back();
        }
        let fresh = tape.workflow().fold(&tape.events()[..target as usize]);
        assert_eq!(
            serde_json::to_value(tape.state()).unwrap(),
            serde_json::to_value(&fresh).unwrap()
        );
        assert_eq!(
            tape.current(),
            target
                .checked_sub(1)
                .and_then(|i| tape.events().get(i as usize))
        );
    }

    // At len, step() stays; step_to clamps.
    assert_eq!(tape.step_to(len), len);
    assert_eq!(tape.step(), len);
    assert_eq!(tape.step_to(len + 5), len);
    assert_eq!(tape.current(), tape.events().last());
    assert_eq!(tape.rewind(), 0);
    assert_eq!(tape.events().len() as u64, len);
}

mod moves {
    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Move {
        Step,
        StepBack,
        StepTo(u64),
        Rewind,
    }

    fn a_move() -> impl Strategy<Value = Move> {
        prop_oneof![
            Just(Move::Step),
            Just(Move::StepBack),
            (0u64..40).prop_map(Move::StepTo),
            Just(Move::Rewind)
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_sequence_of_moves_matches_a_fresh_fold(moves in proptest::collection::vec(a_move(), 1..40)) {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let mut tape = runtime.block_on(demo_tape());
            for m in moves {
                match m {
                    Move::Step => { tape.step(); }
                    Move::StepBack => { tape.step_back(); }
                    Move::StepTo(p) => { tape.step_to(p); }
                    Move::Rewind => { tape.rewind(); }
                }
                let position = tape.position();
                prop_assert!(position <= tape.len());
                let fresh = tape.workflow().fold(&tape.events()[..position as usize]);
                prop_assert_eq!(serde_json::to_string(tape.state()).unwrap(), serde_json::to_string(&fresh).unwrap());
            }
        }
    }
}
