//! State hashes in the log: every committed batch that changes the state records the hash of
//! the state after it, and `Workflow::check_state` folds a recording through today's handlers
//! and names the first position where the state parts — the bug a handler that changes only
//! what it does to the state hides from every event comparison.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::WorkflowState;
use openharness::adapter::state_hash;
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness_example_planner_executor as example;

/// A refund the clerk issued.
#[event]
#[derive(Debug, Clone)]
pub struct RefundIssued {
    pub amount: u64,
}

#[event]
pub enum RefundEvent {
    UserInput,
    RefundIssued,
}

/// The refunds, as the fixed handler keeps them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Refunds {
    pub refunded_total: u64,
    pub refunds: Vec<u64>,
}

fn issue(input: &UserInput) -> Emit {
    match input.text.strip_prefix("refund ").map(str::parse::<u64>) {
        Some(Ok(amount)) => Emit::one(RefundIssued { amount }),
        _ => Emit::none(),
    }
}

#[handler(RefundEvent)]
impl Refunds {
    fn input(&mut self, input: &UserInput) -> Emit {
        issue(input)
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.refunded_total += refund.amount;
        self.refunds.push(refund.amount);
    }
}

/// The same state with the planted bug: cents counted as units. It emits the same events.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BuggyRefunds {
    pub refunded_total: u64,
    pub refunds: Vec<u64>,
}

#[handler(RefundEvent)]
impl BuggyRefunds {
    fn input(&mut self, input: &UserInput) -> Emit {
        issue(input)
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.refunded_total += refund.amount * 100;
        self.refunds.push(refund.amount);
    }
}

fn workflow<S: WorkflowState + Default>(store: MemoryStore) -> Workflow<S> {
    Workflow::builder("refunds")
        .initial_state(S::default())
        .store(store)
        .build()
        .unwrap()
}

/// A session of two turns recorded by the fixed code.
async fn recorded(store: &MemoryStore) -> SessionId {
    let fixed = workflow::<Refunds>(store.clone());
    let first = fixed.run(RunOptions::new().input("hello")).await.unwrap();
    for input in ["refund 39", "refund 1"] {
        fixed
            .send(&first.session, input, RunOptions::new())
            .await
            .unwrap();
    }
    first.session
}

#[tokio::test]
async fn the_fixed_code_reproduces_every_recorded_hash() {
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let check = workflow::<Refunds>(store)
        .check_state(&session)
        .await
        .unwrap();
    assert!(check.checked >= 2, "{check:?}");
    assert_eq!(check.divergence, None);
}

#[tokio::test]
async fn a_state_only_bug_is_caught_at_the_first_batch_it_changes() {
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let events = store.events(&session, 0..u64::MAX).await.unwrap();
    let buggy = workflow::<BuggyRefunds>(store.clone());
    let check = buggy.check_state(&session).await.unwrap();
    let divergence = check.divergence.expect("the planted bug is caught");
    // The first batch that recorded a refund: its last event carries the hash.
    let refund = events
        .iter()
        .position(|e| e.name == "refund:issued")
        .unwrap() as u64;
    assert!(divergence.seq >= refund, "{divergence:?}");
    assert!(
        events[refund as usize..=divergence.seq as usize]
            .iter()
            .filter(|e| e.state_hash.is_some())
            .count()
            == 1,
        "the first hash at or after the refund: {divergence:?}"
    );
    assert_eq!(divergence.today["refunded_total"], 3900);
    assert_ne!(divergence.recorded_hash, divergence.today_hash);
    // No snapshot of the live run's state at hand: no patch, today's state is shown.
    assert_eq!(divergence.recorded, None);
    // A snapshot the live run saves (as long sessions get) before the state next changes
    // gives the recorded state and the patch to today's.
    let fixed = workflow::<Refunds>(store.clone());
    let at = divergence.seq + 1;
    let live = serde_json::to_value(fixed.state_at(&session, at).await.unwrap()).unwrap();
    store
        .snapshot(&session, &openharness::adapter::Snapshot::new(at + 1, live))
        .await
        .unwrap();
    let again = buggy
        .check_state(&session)
        .await
        .unwrap()
        .divergence
        .unwrap();
    assert_eq!(again.seq, divergence.seq);
    assert_eq!(again.recorded.as_ref().unwrap()["refunded_total"], 39);
    let patch = serde_json::to_value(again.patch.as_ref().unwrap()).unwrap();
    assert_eq!(patch[0]["path"], "/refunded_total", "{patch}");
    assert_eq!(patch[0]["value"], 3900, "{patch}");
    // Every event matches: only the state tells the two codes apart.
    assert_eq!(
        serde_json::to_value(fixed.state_at(&session, u64::MAX).await.unwrap()).unwrap()["refunds"],
        serde_json::json!([39, 1])
    );
}

#[tokio::test]
async fn a_recording_made_before_hashes_were_recorded_still_loads_and_checks_nothing() {
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let mut events = store.events(&session, 0..u64::MAX).await.unwrap();
    for event in &mut events {
        event.state_hash = None;
    }
    let old = MemoryStore::new();
    old.append(&session, &events, 0).await.unwrap();
    let buggy = workflow::<BuggyRefunds>(old);
    let check = buggy.check_state(&session).await.unwrap();
    assert_eq!(check.checked, 0);
    assert_eq!(check.divergence, None);
    assert_eq!(
        buggy.state_at(&session, u64::MAX).await.unwrap().refunds,
        vec![39, 1]
    );
}

/// In a real session (the demo: agents, a question, an answer), each recorded hash is the
/// hash of the state read back at the position just after its event, and every batch that
/// changed the state recorded one.
#[tokio::test]
async fn each_recorded_hash_is_the_state_read_back_there() {
    let store = MemoryStore::new();
    let workflow = example::workflow(store.clone(), example::scripted_provider()).unwrap();
    let waiting = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    workflow
        .respond(
            &waiting.session,
            waiting.open_requests[0],
            "yes",
            RunOptions::new(),
        )
        .await
        .unwrap();
    let events = store.events(&waiting.session, 0..u64::MAX).await.unwrap();
    let hashed: Vec<u64> = (0..events.len() as u64)
        .filter(|&seq| events[seq as usize].state_hash.is_some())
        .collect();
    assert!(hashed.len() >= 2, "{hashed:?}");
    let positions: Vec<u64> = hashed.iter().map(|seq| seq + 1).collect();
    let states = workflow
        .states_at(&waiting.session, &positions)
        .await
        .unwrap();
    for ((seq, (_, state)), event) in hashed
        .iter()
        .zip(states)
        .zip(hashed.iter().map(|&seq| &events[seq as usize]))
    {
        assert_eq!(
            event.state_hash.as_deref(),
            Some(state_hash(&state).unwrap().as_str()),
            "the hash at seq {seq}"
        );
    }
    // The last event of the session closes a batch that changed the state.
    let final_state = workflow.state_at(&waiting.session, u64::MAX).await.unwrap();
    let last_hash = events
        .iter()
        .rev()
        .find_map(|e| e.state_hash.clone())
        .unwrap();
    assert_eq!(last_hash, state_hash(&final_state).unwrap());
    let check = workflow.check_state(&waiting.session).await.unwrap();
    assert_eq!(check.checked, hashed.len() as u64);
    assert_eq!(check.divergence, None);
}

/// `Host::replay` (what `openharness replay` runs): every event of the re-execution matches,
/// and only the state check tells the buggy code from the fixed one.
#[tokio::test]
async fn a_replay_parts_on_the_state_when_every_event_matches() {
    use openharness::host::Host;
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let fixed = Host::new(store.clone())
        .workflow(workflow::<Refunds>(store.clone()))
        .unwrap();
    let replayed = fixed.replay(&session).await.unwrap();
    assert!(replayed.matched, "{replayed:?}");
    assert!(replayed.state_hashes_checked >= 2, "{replayed:?}");
    let buggy = Host::new(store.clone())
        .workflow(workflow::<BuggyRefunds>(store))
        .unwrap();
    let replayed = buggy.replay(&session).await.unwrap();
    assert!(!replayed.matched);
    assert_eq!(replayed.divergence, None, "every event matches");
    let parted = replayed.state_divergence.unwrap();
    assert_eq!(parted.event, "refund:issued");
    assert_eq!(parted.today["refunded_total"], 3900);
}

/// The same handlers three times: as first written, reformatted with comments, and with the
/// planted bug. The fingerprint sees the body, not the formatting.
pub mod versions {
    use super::RefundEvent;
    use openharness::prelude::*;

    pub mod first {
        use super::*;
        #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
        pub struct Refunds {
            pub refunded_total: u64,
        }
        #[handler(RefundEvent, partial)]
        impl Refunds {
            fn refunded(&mut self, refund: &super::super::RefundIssued) {
                self.refunded_total += refund.amount;
            }
        }
    }

    pub mod reformatted {
        use super::*;
        #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
        pub struct Refunds {
            pub refunded_total: u64,
        }
        #[handler(RefundEvent, partial)]
        impl Refunds {
            /// Adds the refund (a doc comment is not code).
            fn refunded(&mut self, refund: &super::super::RefundIssued) {
                // Nor is a comment.
                self.refunded_total += refund.amount;
            }
        }
    }

    pub mod buggy {
        use super::*;
        #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
        pub struct Refunds {
            pub refunded_total: u64,
        }
        #[handler(RefundEvent, partial)]
        impl Refunds {
            fn refunded(&mut self, refund: &super::super::RefundIssued) {
                self.refunded_total += refund.amount * 100;
            }
        }
    }
}

#[test]
fn the_fingerprint_sees_a_handler_body_and_not_its_formatting() {
    use openharness::Handler;
    let first = <versions::first::Refunds as Handler>::CODE;
    assert_eq!(first.len(), 16);
    assert_eq!(<versions::reformatted::Refunds as Handler>::CODE, first);
    assert_ne!(<versions::buggy::Refunds as Handler>::CODE, first);
}

/// A state with a `HashSet` (its order differs in every process) records no hashes: another
/// process could not reproduce them, and a check would part where nothing changed.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Tags {
    pub tags: std::collections::HashSet<String>,
}

#[handler(RefundEvent, partial)]
impl Tags {
    fn input(&mut self, input: &UserInput) {
        self.tags.extend(input.text.split(' ').map(str::to_owned));
    }
}

#[tokio::test]
async fn a_state_whose_json_is_not_reproducible_records_no_hashes() {
    let store = MemoryStore::new();
    let tags = workflow::<Tags>(store.clone());
    let outcome = tags
        .run(RunOptions::new().input("a b c d e f g h i j"))
        .await
        .unwrap();
    let events = store.events(&outcome.session, 0..u64::MAX).await.unwrap();
    assert!(events.iter().all(|e| e.state_hash.is_none()), "{events:?}");
    let check = tags.check_state(&outcome.session).await.unwrap();
    assert_eq!((check.checked, check.divergence), (0, None));
}

#[tokio::test]
async fn a_cassette_replay_fails_on_a_state_only_bug_where_every_event_matches() {
    use openharness::tape::{Cassette, TapeError};
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let fixed = workflow::<Refunds>(store.clone());
    let cassette = Cassette::load(&fixed, &session).await.unwrap();
    cassette.replay(&fixed, RunOptions::new()).await.unwrap();

    let buggy = workflow::<BuggyRefunds>(store.clone());
    let expected = buggy
        .check_state(&session)
        .await
        .unwrap()
        .divergence
        .unwrap();
    match cassette.replay(&buggy, RunOptions::new()).await {
        Err(TapeError::StateDiverged(divergence)) => {
            assert_eq!(divergence.seq, expected.seq);
            let message = TapeError::StateDiverged(divergence).to_string();
            assert!(message.contains("every event matches"), "{message}");
        }
        other => panic!("the state-only bug passed the cassette: {other:?}"),
    }
}

/// The refunds with a field added since the recording: every hash would differ, no bug.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct NotedRefunds {
    pub refunded_total: u64,
    pub refunds: Vec<u64>,
    pub note: Option<String>,
}

#[handler(RefundEvent)]
impl NotedRefunds {
    fn input(&mut self, input: &UserInput) -> Emit {
        issue(input)
    }
    fn refunded(&mut self, refund: &RefundIssued) {
        self.refunded_total += refund.amount;
        self.refunds.push(refund.amount);
    }
}

#[tokio::test]
async fn a_state_whose_fields_changed_is_not_compared_and_says_why() {
    let store = MemoryStore::new();
    let session = recorded(&store).await;
    let noted = workflow::<NotedRefunds>(store.clone());
    let check = noted.check_state(&session).await.unwrap();
    assert_eq!(check.divergence, None, "{check:?}");
    assert_eq!(check.checked, 0);
    let change = check.shape_changed.expect("the added field is seen");
    assert_ne!(change.recorded, change.today);
    // The same fields with another handler are still compared, and part.
    let buggy = workflow::<BuggyRefunds>(store);
    let check = buggy.check_state(&session).await.unwrap();
    assert_eq!(check.shape_changed, None);
    assert!(check.divergence.is_some());
}
