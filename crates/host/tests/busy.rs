//! A second input while a turn runs, under each busy policy, through the host: `reject`
//! records nothing; `enqueue`, `interrupt`, `rollback` and `steer` are recorded at once as
//! `input:queued` and answered as their mode says; a stop is recorded as `stop:requested`.
//! Each session is then folded again through today's handlers (the state it ended with), and
//! forked at every position (each fork lives: it ends with nothing left running).
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness::builtin::{InputQueued, InputSteered, QueueMode, TurnRolledBack};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{BusyPolicy, StopReason};
use openharness_host::{ForkPoint, Host, HostError, TurnStart};
use openharness_testkit::inbox::gated_inbox;
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;
use tokio::sync::Semaphore;

fn host() -> (Host, Arc<Semaphore>) {
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    (Host::new(MemoryStore::new()).workflow(inbox).unwrap(), gate)
}

/// Starts a session whose first turn is held at its model call.
async fn held_session(host: &Host) -> (SessionId, openharness_host::TurnDone) {
    let session = SessionId::new();
    let start = TurnStart::New {
        workflow: "inbox".into(),
        input: Some("slow".into()),
    };
    let started = host
        .start(&session, start, RunOptions::new())
        .await
        .unwrap();
    assert_eq!(
        started.recorded.map(|r| r.seq),
        Some(0),
        "acknowledged at its first event"
    );
    eventually(LIMIT, "the agent call to start", || async {
        let page = host
            .events(&session, None, 100)
            .await
            .map_err(|_| "no events")?;
        if page.events.iter().any(|r| r.event.name == "agent:started") {
            Ok(())
        } else {
            Err("not yet")
        }
    })
    .await;
    (session, started.done)
}

async fn second(
    host: &Host,
    session: &SessionId,
    text: &str,
    policy: BusyPolicy,
) -> Result<openharness_host::Started, HostError> {
    let options = RunOptions::new().on_busy(policy);
    host.start(session, TurnStart::Input(text.into()), options)
        .await
}

async fn names(host: &Host, session: &SessionId) -> Vec<String> {
    let page = host.events(session, None, 1000).await.unwrap();
    page.events
        .iter()
        .map(|r| r.event.name.to_string())
        .collect()
}

async fn settled(host: &Host, session: &SessionId) {
    eventually(LIMIT, "the host to give the session up", || async {
        if host.is_running(session) {
            Err("running")
        } else {
            Ok(())
        }
    })
    .await;
}

/// The session folded again through today's handlers gives the state its last turn ended
/// with, and a fork at every position lives: it ends with nothing left running (the gate
/// opened, so a call a fork runs again is not held).
async fn replays_and_forks(
    host: &Host,
    gate: &Semaphore,
    session: &SessionId,
    last: &serde_json::Value,
) {
    gate.add_permits(Semaphore::MAX_PERMITS / 2);
    let len = host.session(session).await.unwrap().len;
    assert_eq!(
        &host.state_at(session, len).await.unwrap(),
        last,
        "the fold of the log is the state the turn ended with"
    );
    // Re-executed with every second input given at its recorded position and every call
    // answered from the recording, today's code records the same events.
    let replayed = host.replay(session).await.unwrap();
    assert!(replayed.matched, "replay parts: {:?}", replayed.divergence);
    for position in 0..=len {
        let fork = host
            .fork(session, ForkPoint::Position { position }, RunOptions::new())
            .await
            .unwrap_or_else(|err| panic!("fork at {position}: {err}"));
        settled(host, &fork.session).await;
        let status = host.session(&fork.session).await.unwrap().status;
        assert!(
            !status.is_running(),
            "the fork at {position} is left {status}"
        );
    }
}

#[tokio::test]
async fn reject_refuses_and_records_nothing() {
    let (host, gate) = host();
    let (session, done) = held_session(&host).await;
    let before = names(&host, &session).await;
    let refused = second(&host, &session, "b", BusyPolicy::Reject)
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            HostError::Workflow(openharness::Error::SessionBusy { .. })
        ),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("nothing was recorded"),
        "{refused}"
    );
    assert_eq!(names(&host, &session).await, before);
    gate.add_permits(1);
    let outcome = done.wait().await.unwrap();
    assert_eq!(outcome.state["inputs"], json!(["slow"]));
}

#[tokio::test]
async fn enqueue_records_at_once_and_answers_after_the_running_turn() {
    let (host, gate) = host();
    let (session, first) = held_session(&host).await;
    let queued = second(&host, &session, "b", BusyPolicy::Enqueue)
        .await
        .unwrap();
    let recorded = queued.recorded.unwrap();
    let events = host.events(&session, None, 100).await.unwrap().events;
    let event = &events[recorded.seq as usize].event;
    assert_eq!(
        (event.name.as_ref(), event.id),
        ("input:queued", recorded.id)
    );
    assert_eq!(
        event.decode::<InputQueued>().unwrap().mode,
        QueueMode::Enqueue
    );
    gate.add_permits(1);
    let first = first.wait().await.unwrap();
    assert_eq!(
        first.queued.len(),
        1,
        "the first turn ends with the input queued"
    );
    let answered = queued.done.wait().await.unwrap();
    assert_eq!(answered.state["inputs"], json!(["slow", "b"]));
    assert_eq!(answered.state["notes"], json!(["slow", "slow + b"]));
    assert!(answered.queued.is_empty());
    // The answering turn begins with a user:input caused by the queued input.
    let events = host.events(&session, None, 100).await.unwrap().events;
    let answer = &events[answered.first_seq as usize].event;
    assert_eq!(
        (answer.name.as_ref(), answer.caused_by),
        ("user:input", Some(recorded.id))
    );
    settled(&host, &session).await;
    assert_eq!(
        host.session(&session).await.unwrap().status,
        SessionStatus::Idle
    );
    replays_and_forks(&host, &gate, &session, &answered.state).await;
}

#[tokio::test]
async fn two_queued_inputs_are_answered_in_order_each_in_its_turn() {
    let (host, gate) = host();
    let (session, _first) = held_session(&host).await;
    let b = second(&host, &session, "b", BusyPolicy::Enqueue)
        .await
        .unwrap();
    let c = second(&host, &session, "c", BusyPolicy::Enqueue)
        .await
        .unwrap();
    gate.add_permits(1);
    let b = b.done.wait().await.unwrap();
    let c = c.done.wait().await.unwrap();
    assert!(b.first_seq < c.first_seq);
    assert_eq!(
        c.state["notes"],
        json!(["slow", "slow + b", "slow + b + c"])
    );
    replays_and_forks(&host, &gate, &session, &c.state).await;
}

#[tokio::test]
async fn interrupt_stops_the_turn_and_answers_with_both_inputs() {
    let (host, gate) = host();
    let (session, first) = held_session(&host).await;
    let interrupted = second(&host, &session, "b", BusyPolicy::Interrupt)
        .await
        .unwrap();
    let first = first.wait().await.unwrap();
    assert_eq!(first.reason, StopReason::Interrupted);
    let answered = interrupted.done.wait().await.unwrap();
    // Both inputs in the state; the first one's call was cut (closed interrupted), the new
    // turn's call saw both.
    assert_eq!(answered.state["inputs"], json!(["slow", "b"]));
    assert_eq!(answered.state["notes"], json!(["slow + b"]));
    let names = names(&host, &session).await;
    assert!(
        names.iter().filter(|n| *n == "workflow:completed").count() == 2,
        "{names:?}"
    );
    replays_and_forks(&host, &gate, &session, &answered.state).await;
}

#[tokio::test]
async fn rollback_restores_the_state_before_the_turn_and_answers() {
    let (host, gate) = host();
    let session = SessionId::new();
    // A finished turn first, so the state before the abandoned one is not the initial one.
    host.run(
        "inbox",
        Some("a".into()),
        RunOptions::new().session(session.clone()),
    )
    .await
    .unwrap();
    settled(&host, &session).await;
    let started = host
        .start(&session, TurnStart::Input("slow".into()), RunOptions::new())
        .await
        .unwrap();
    let turn_start = started.recorded.unwrap().seq;
    eventually(LIMIT, "the held call", || async {
        let names = names(&host, &session).await;
        if names.iter().filter(|n| *n == "agent:started").count() == 2 {
            Ok(())
        } else {
            Err("not yet")
        }
    })
    .await;
    let rolled = second(&host, &session, "b", BusyPolicy::Rollback)
        .await
        .unwrap();
    let abandoned = started.done.wait().await.unwrap();
    assert_eq!(abandoned.reason, StopReason::RolledBack);
    assert_eq!(
        abandoned.state["inputs"],
        json!(["a"]),
        "the abandoned turn's input is gone from the state"
    );
    let events = host.events(&session, None, 100).await.unwrap().events;
    let rollback = events
        .iter()
        .find(|r| r.event.name == "turn:rolled_back")
        .unwrap();
    let rollback = rollback.event.decode::<TurnRolledBack>().unwrap();
    assert_eq!(rollback.from, turn_start);
    assert_eq!(
        rollback.state,
        host.state_at(&session, turn_start).await.unwrap()
    );
    let answered = rolled.done.wait().await.unwrap();
    assert_eq!(answered.state["inputs"], json!(["a", "b"]));
    assert_eq!(answered.state["notes"], json!(["a", "a + b"]));
    replays_and_forks(&host, &gate, &session, &answered.state).await;
    // A tape steps back over the rollback to the abandoned turn's state, and forward again.
    let at = host.session(&session).await.unwrap().len;
    let seq = events
        .iter()
        .position(|r| r.event.name == "turn:rolled_back")
        .unwrap() as u64;
    let states = host.states_at(&session, &[seq, seq + 1, at]).await.unwrap();
    assert_eq!(states[0].state["inputs"], json!(["a", "slow"]));
    assert_eq!(states[1].state["inputs"], json!(["a"]));
}

#[tokio::test]
async fn a_steer_reaches_the_running_call_and_needs_no_turn_of_its_own() {
    let (host, gate) = host();
    let (session, first) = held_session(&host).await;
    let steered = second(&host, &session, "use capitals", BusyPolicy::Steer)
        .await
        .unwrap();
    let queued = steered.recorded.unwrap();
    gate.add_permits(1);
    let first = first.wait().await.unwrap();
    assert!(first.queued.is_empty(), "taken by the running call");
    assert_eq!(
        first.state["notes"],
        json!(["slow | steered: use capitals"])
    );
    assert_eq!(first.state["steered"], json!(["use capitals"]));
    let events = host.events(&session, None, 100).await.unwrap().events;
    let took = events
        .iter()
        .find(|r| r.event.name == "input:steered")
        .unwrap();
    assert_eq!(
        took.event.decode::<InputSteered>().unwrap().queued,
        queued.id
    );
    assert_eq!(
        steered.done.wait().await.unwrap().first_seq,
        first.first_seq,
        "answered by the turn it entered"
    );
    replays_and_forks(&host, &gate, &session, &first.state).await;
}

#[tokio::test]
async fn a_steer_no_call_takes_is_answered_in_a_turn_of_its_own() {
    let (host, gate) = host();
    let (session, first) = held_session(&host).await;
    let steered = second(&host, &session, "x", BusyPolicy::Steer)
        .await
        .unwrap();
    // The call takes it only when the gate opens; stopping first leaves it queued.
    assert!(host.cancel(&session).await);
    let first = first.wait().await.unwrap();
    assert_eq!(first.reason, StopReason::Cancelled);
    gate.add_permits(1);
    let answered = steered.done.wait().await.unwrap();
    assert_eq!(answered.state["inputs"], json!(["slow", "x"]));
    replays_and_forks(&host, &gate, &session, &answered.state).await;
}

#[tokio::test]
async fn a_stop_is_an_event_and_inputs_queued_before_it_are_still_answered() {
    let (host, gate) = host();
    let (session, first) = held_session(&host).await;
    let queued = second(&host, &session, "b", BusyPolicy::Enqueue)
        .await
        .unwrap();
    assert!(host.cancel(&session).await);
    assert_eq!(first.wait().await.unwrap().reason, StopReason::Cancelled);
    let answered = queued.done.wait().await.unwrap();
    assert_eq!(answered.state["notes"], json!(["slow + b"]));
    let names = names(&host, &session).await;
    let stop = names.iter().position(|n| n == "stop:requested").unwrap();
    let end = names
        .iter()
        .position(|n| n == "workflow:completed")
        .unwrap();
    assert!(stop < end, "{names:?}");
    replays_and_forks(&host, &gate, &session, &answered.state).await;
}

#[tokio::test]
async fn a_second_input_as_the_first_turn_starts_is_queued_or_refused_never_run_after_unrecorded() {
    for policy in [BusyPolicy::Enqueue, BusyPolicy::Reject] {
        let (host, gate) = host();
        let session = SessionId::new();
        let first = {
            let (host, session) = (host.clone(), session.clone());
            tokio::spawn(async move {
                let start = TurnStart::New {
                    workflow: "inbox".into(),
                    input: Some("slow".into()),
                };
                host.start(&session, start, RunOptions::new()).await
            })
        };
        // The session is registered before its first turn has recorded anything.
        while !host.is_running(&session) {
            tokio::task::yield_now().await;
        }
        let second = second(&host, &session, "b", policy).await;
        let first = first.await.unwrap().unwrap();
        match policy {
            BusyPolicy::Reject => {
                let refused = second.unwrap_err();
                assert!(refused.to_string().contains("busy"), "{refused}");
            }
            _ => {
                let queued = second.unwrap();
                let recorded = queued.recorded.unwrap();
                assert!(
                    recorded.seq > 0,
                    "recorded after the first turn's first events"
                );
                let events = host.events(&session, None, 100).await.unwrap().events;
                assert_eq!(events[recorded.seq as usize].event.name, "input:queued");
                gate.add_permits(1);
                let answered = queued.done.wait().await.unwrap();
                assert_eq!(answered.state["inputs"], json!(["slow", "b"]));
            }
        }
        gate.add_permits(1);
        first.done.wait().await.unwrap();
    }
}

/// Recovery's scan lists a session while its turn runs; by the time it resumes it, the turn
/// has ended asking a question, and a person answers at once. The resume has nothing to
/// finish: the answer runs after it, never refused as busy (409 on the wire).
#[tokio::test]
async fn an_answer_while_a_resume_finds_nothing_to_finish_is_run_after_it_not_refused() {
    let (host, gate) = host();
    gate.add_permits(Semaphore::MAX_PERMITS / 2);
    let session = SessionId::new();
    let start = TurnStart::New {
        workflow: "inbox".into(),
        input: Some("ask".into()),
    };
    let asked = host
        .start(&session, start, RunOptions::new())
        .await
        .unwrap();
    let asked = asked.done.wait().await.unwrap();
    assert_eq!(asked.reason, StopReason::WaitingForInput);
    settled(&host, &session).await;
    let request = host
        .events(&session, None, 100)
        .await
        .unwrap()
        .events
        .iter()
        .rev()
        .find(|r| r.event.name == "input:requested")
        .map(|r| r.event.id)
        .unwrap();
    let answer = TurnStart::Answer {
        request,
        text: "this one".into(),
    };
    // Polled first, the resume holds the session before it has read whether anything is cut
    // off; the answer comes right then.
    let (resumed, answered) = tokio::join!(
        host.start(&session, TurnStart::Resume, RunOptions::new()),
        host.start(&session, answer, RunOptions::new()),
    );
    let answered = answered.unwrap_or_else(|err| panic!("the answer was refused: {err}"));
    let resumed = resumed.unwrap();
    assert!(resumed.recorded.is_none(), "the resume had nothing to do");
    let at = answered.recorded.unwrap().seq;
    let answered = answered.done.wait().await.unwrap();
    assert!(
        answered.state["inputs"]
            .as_array()
            .unwrap()
            .contains(&json!("answered this one")),
        "{}",
        answered.state
    );
    let events = host.events(&session, None, 100).await.unwrap().events;
    assert_eq!(events[at as usize].event.name, "input:received");
}
