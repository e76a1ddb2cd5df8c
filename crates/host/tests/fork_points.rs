//! Forks where a person is in the loop: at a point before a question, while it is pending,
//! after its answer, after a steer, after a queued input and inside an interrupted turn.
//! Each child starts from the parent's state there (its `session:forked` records that
//! state's hash, which is checked against the parent's state read again), and the next
//! request it sends a model is the one that state calls for. A fork at a pending question
//! takes another answer than the parent got, and a fork where nothing is pending refuses an
//! answer with nothing recorded.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::builtin::SessionForked;
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{BusyPolicy, StopReason};
use openharness_core::adapter::json_hash;
use openharness_host::{ForkAnswer, ForkPoint, ForkStart, Host, HostError, TurnStart};
use openharness_testkit::inbox::gated_inbox;
use openharness_testkit::{LIMIT, eventually};
use serde_json::Value;

async fn events(host: &Host, session: &SessionId) -> Vec<Envelope> {
    let page = host.events(session, None, 1000).await.unwrap();
    page.events.into_iter().map(|r| r.event).collect()
}

/// The position right after the `nth` (from 1) event named `name`.
fn after(events: &[Envelope], name: &str, nth: usize) -> u64 {
    let seq = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name == name)
        .nth(nth - 1)
        .unwrap_or_else(|| panic!("no {name} #{nth}"))
        .0;
    seq as u64 + 1
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

/// The prompts of the agent calls `session` started from seq `from` on.
async fn prompts(host: &Host, session: &SessionId, from: usize) -> Vec<String> {
    events(host, session).await[from..]
        .iter()
        .filter(|e| e.name == "agent:started")
        .map(|e| e.payload["prompt"].as_str().unwrap().to_owned())
        .collect()
}

/// Forks `parent` at `position` (with `answer`, then `input`), waits for its turns, and checks
/// the child began from the parent's state there: returns the child.
async fn fork(
    host: &Host,
    parent: &SessionId,
    position: u64,
    answer: Option<&str>,
    input: Option<&str>,
) -> SessionId {
    let child = SessionId::new();
    let start = TurnStart::Fork(Box::new(ForkStart {
        parent: parent.clone(),
        at: ForkPoint::Position { position },
        state_edit: None,
        input: input.map(str::to_owned),
        answer: answer.map(|text| ForkAnswer {
            request: None,
            text: text.to_owned(),
        }),
        provider: None,
    }));
    let started = host.start(&child, start, RunOptions::new()).await.unwrap();
    started.done.wait().await.unwrap();
    settled(host, &child).await;
    let first = events(host, &child).await.remove(0);
    let forked = first.decode::<SessionForked>().unwrap();
    assert_eq!(forked.position, position);
    let parent_state: Value = host.state_at(parent, position).await.unwrap();
    assert_eq!(
        forked.state_hash.as_deref(),
        Some(json_hash(&parent_state).as_str()),
        "the fork at {position} began from the parent's state there"
    );
    assert!(
        !host.session(&child).await.unwrap().status.is_running(),
        "the fork at {position} is left running"
    );
    child
}

#[tokio::test]
async fn forks_around_a_person_start_from_the_parents_state_and_ask_what_it_calls_for() {
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    let host = Host::new(MemoryStore::new()).workflow(inbox).unwrap();
    let parent = SessionId::new();
    let options = || RunOptions::new().session(parent.clone());
    host.run("inbox", Some("a".into()), options())
        .await
        .unwrap();
    // A question, pending at the end of this turn, answered "yes".
    let asked = host
        .send(&parent, "ask".into(), RunOptions::new())
        .await
        .unwrap();
    assert_eq!(asked.reason, StopReason::WaitingForInput);
    let request = asked.open_requests[0];
    host.respond(&parent, request, "yes".into(), RunOptions::new())
        .await
        .unwrap();
    settled(&host, &parent).await;
    // A steer taken by a held call, an input queued during one, and an interrupted one.
    let held = |text: &str| {
        let (host, parent, text) = (host.clone(), parent.clone(), text.to_owned());
        async move {
            let before = prompts(&host, &parent, 0).await.len();
            let started = host
                .start(&parent, TurnStart::Input(text), RunOptions::new())
                .await
                .unwrap();
            let calls = |n: usize| {
                let (host, parent) = (host.clone(), parent.clone());
                move || {
                    let (host, parent) = (host.clone(), parent.clone());
                    async move {
                        let seen = prompts(&host, &parent, 0).await;
                        if seen.len() >= n { Ok(()) } else { Err(seen) }
                    }
                }
            };
            eventually(LIMIT, "the held call", calls(before + 1)).await;
            started
        }
    };
    let second = |text: &str, policy: BusyPolicy| {
        let options = RunOptions::new().on_busy(policy);
        host.start(&parent, TurnStart::Input(text.into()), options)
    };
    let steered = held("slow").await;
    second("s1", BusyPolicy::Steer).await.unwrap();
    gate.add_permits(1);
    steered.done.wait().await.unwrap();
    let queued = held("slow").await;
    let q1 = second("q1", BusyPolicy::Enqueue).await.unwrap();
    gate.add_permits(1);
    queued.done.wait().await.unwrap();
    q1.done.wait().await.unwrap();
    let interrupted = held("slow").await;
    let i1 = second("i1", BusyPolicy::Interrupt).await.unwrap();
    assert_eq!(
        interrupted.done.wait().await.unwrap().reason,
        StopReason::Interrupted
    );
    i1.done.wait().await.unwrap();
    settled(&host, &parent).await;
    // From here on, calls a fork runs again are not held.
    gate.add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    let log = events(&host, &parent).await;
    let parent_prompts = prompts(&host, &parent, 0).await;

    // Before the question: the child asks it again, the same way.
    let before_question = after(&log, "workflow:completed", 1);
    let child = fork(&host, &parent, before_question, None, Some("ask")).await;
    assert_eq!(prompts(&host, &child, 0).await, ["a + ask"]);

    // While it is pending: another answer than the parent got reaches the next call.
    let pending = after(&log, "workflow:completed", 2);
    let child = fork(&host, &parent, pending, Some("no"), None).await;
    assert_eq!(prompts(&host, &child, 0).await, ["a + ask + answered no"]);
    let state = host.state_at(&child, u64::MAX).await.unwrap();
    assert_eq!(state["inputs"][2], "answered no");
    assert_eq!(
        host.state_at(&parent, u64::MAX).await.unwrap()["inputs"][2],
        "answered yes",
        "the parent keeps its own answer"
    );
    // Where nothing is pending, an answer is refused and nothing is recorded.
    let before = host.sessions().await.unwrap().len();
    let refused = host
        .start(
            &SessionId::new(),
            TurnStart::Fork(Box::new(ForkStart {
                parent: parent.clone(),
                at: ForkPoint::Position {
                    position: before_question,
                },
                state_edit: None,
                input: None,
                answer: Some(ForkAnswer {
                    request: None,
                    text: "no".into(),
                }),
                provider: None,
            })),
            RunOptions::new(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(refused, HostError::NothingToAnswer { .. }),
        "{refused}"
    );
    assert_eq!(
        host.sessions().await.unwrap().len(),
        before,
        "nothing recorded"
    );

    // After the answer: the next input sees the answer.
    let answered = after(&log, "workflow:completed", 3);
    let child = fork(&host, &parent, answered, None, Some("z")).await;
    assert_eq!(
        prompts(&host, &child, 0).await,
        ["a + ask + answered yes + z"]
    );

    // After a steer was taken: the cut call runs again from its start; what was steered into
    // it is in the fork's state and log, and the call is not given it again.
    let after_steer = after(&log, "input:steered", 1);
    let child = fork(&host, &parent, after_steer, None, None).await;
    assert_eq!(
        prompts(&host, &child, 0).await,
        ["a + ask + answered yes + slow"],
        "the call cut by the fork point runs again with its prompt"
    );
    assert_eq!(
        host.state_at(&child, u64::MAX).await.unwrap()["steered"],
        serde_json::json!(["s1"])
    );

    // After a steer was recorded and before a call took it: the fork runs the cut call again
    // and answers the steer it inherited (queued again in its own log) in a turn of its own.
    let steer_queued = after(&log, "input:queued", 1);
    let child = fork(&host, &parent, steer_queued, None, None).await;
    assert_eq!(
        prompts(&host, &child, 0).await,
        [
            "a + ask + answered yes + slow",
            "a + ask + answered yes + slow + s1"
        ]
    );

    // After a queued input: the fork finishes the held call, then answers the input it
    // inherited (queued again in its own log), as the parent did.
    let after_queued = after(&log, "input:queued", 2);
    let child = fork(&host, &parent, after_queued, None, None).await;
    settled(&host, &child).await;
    let child_prompts = prompts(&host, &child, 0).await;
    let parent_after: Vec<_> = parent_prompts
        .iter()
        .filter(|p| p.ends_with("slow + slow") || p.ends_with("slow + slow + q1"))
        .cloned()
        .collect();
    assert_eq!(
        child_prompts, parent_after,
        "the fork asks what the parent asked next"
    );

    // Inside the interrupted turn (its call started, the interrupt not yet recorded): the
    // fork never saw the interrupt, so it runs the cut call again and ends there.
    let interrupted_call = after(
        &log,
        "agent:started",
        log.iter().filter(|e| e.name == "agent:started").count() - 1,
    );
    let child = fork(&host, &parent, interrupted_call, None, None).await;
    let state = host.state_at(&child, u64::MAX).await.unwrap();
    assert_eq!(
        prompts(&host, &child, 0).await,
        [state["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect::<Vec<_>>()
            .join(" + ")],
    );
    assert!(
        !state["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "i1")
    );
}
