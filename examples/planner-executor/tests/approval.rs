//! The release waits for a person: the demo's turn ends waiting for input once every task is
//! done, "yes" publishes, anything else records that it was not published, and a request can
//! be answered only once.
#![allow(clippy::unwrap_used)]

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{Error, RunOutcome};
use openharness_example_planner_executor::{
    self as example, PlanState, Release, ReleaseDeclined, ReleasePublished,
};

async fn waiting(store: MemoryStore) -> (Workflow<PlanState>, RunOutcome<PlanState>) {
    let workflow = example::workflow(store, example::scripted_provider()).unwrap();
    let outcome = workflow
        .run(RunOptions::new().input(example::DEMO_GOAL))
        .await
        .unwrap();
    (workflow, outcome)
}

fn named<'a>(events: &'a [Envelope], name: &str) -> Vec<&'a Envelope> {
    events.iter().filter(|e| e.name == name).collect()
}

#[tokio::test]
async fn the_turn_ends_waiting_with_one_request_asked_after_the_last_task() {
    let store = MemoryStore::new();
    let (_, outcome) = waiting(store.clone()).await;
    assert_eq!(outcome.reason, StopReason::WaitingForInput);
    assert!(outcome.state.awaits_approval());
    let events = store.all_events(&outcome.session).await.unwrap();
    let requests = named(&events, InputRequested::NAME);
    assert_eq!(requests.len(), 1);
    assert_eq!(outcome.open_requests, [requests[0].id]);
    let asked: InputRequested = requests[0].decode().unwrap();
    assert_eq!(asked.prompt, example::PUBLISH_PROMPT);
    // Asked by the last task's completion, after every task was done.
    let cause = events
        .iter()
        .find(|e| Some(e.id) == requests[0].caused_by)
        .unwrap();
    assert_eq!(cause.name, "task:completed");
    assert_eq!(cause.payload["index"], 2);
    let sessions = store.sessions().await.unwrap();
    assert_eq!(sessions[0].status, SessionStatus::Waiting);
}

#[tokio::test]
async fn yes_publishes_and_ends_the_run() {
    let store = MemoryStore::new();
    let (workflow, first) = waiting(store.clone()).await;
    let request = first.open_requests[0];
    let outcome = workflow
        .respond(&first.session, request, " Yes ", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(outcome.reason, StopReason::Until);
    assert_eq!(outcome.state.release, Some(Release::Published));
    let events = store.all_events(&first.session).await.unwrap();
    let tail: Vec<&str> = events[first.len as usize..]
        .iter()
        .map(|e| e.name.as_ref())
        .collect();
    assert_eq!(
        tail,
        [
            "input:received",
            ReleasePublished::NAME,
            "workflow:completed"
        ]
    );
    assert_eq!(events[first.len as usize].caused_by, Some(request));
    assert_eq!(
        store.sessions().await.unwrap()[0].status,
        SessionStatus::Idle
    );

    // Answered once: a second answer is refused and records nothing.
    let again = workflow
        .respond(&first.session, request, "yes", RunOptions::new())
        .await;
    assert!(
        matches!(again, Err(Error::RequestNotOpen { .. })),
        "{again:?}"
    );
    assert_eq!(
        store.all_events(&first.session).await.unwrap().len(),
        events.len()
    );
}

#[tokio::test]
async fn any_other_answer_records_that_it_was_not_published() {
    let store = MemoryStore::new();
    let (workflow, first) = waiting(store.clone()).await;
    let outcome = workflow
        .respond(
            &first.session,
            first.open_requests[0],
            "not yet",
            RunOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(outcome.reason, StopReason::Idle);
    assert_eq!(outcome.state.release, Some(Release::Declined));
    assert!(!outcome.state.is_published());
    let events = store.all_events(&first.session).await.unwrap();
    assert!(named(&events, ReleasePublished::NAME).is_empty());
    let declined: ReleaseDeclined = named(&events, ReleaseDeclined::NAME)[0].decode().unwrap();
    assert_eq!(declined.answer, "not yet");
}

#[test]
fn only_yes_approves() {
    for yes in ["yes", "YES", " y ", "Yes\n"] {
        assert!(example::approves(yes), "{yes:?}");
    }
    for no in ["no", "", "yes please", "ok", "n"] {
        assert!(!example::approves(no), "{no:?}");
    }
}

#[tokio::test]
async fn a_new_goal_on_a_published_session_plans_and_asks_again() {
    let store = MemoryStore::new();
    let (workflow, first) = waiting(store.clone()).await;
    workflow
        .respond(
            &first.session,
            first.open_requests[0],
            "yes",
            RunOptions::new(),
        )
        .await
        .unwrap();
    // A fresh script: the session's next turn plans the new goal from the start.
    let again = workflow
        .with_provider(example::scripted_provider())
        .send(&first.session, "Ship version 0.2", RunOptions::new())
        .await
        .unwrap();
    assert_eq!(again.reason, StopReason::WaitingForInput);
    assert_eq!(again.state.goal.as_deref(), Some("Ship version 0.2"));
    assert!(again.state.awaits_approval());
    assert_eq!(again.open_requests.len(), 1);
    assert_ne!(again.open_requests[0], first.open_requests[0]);
}
