//! A living session on a real [`Host`], exported live by two processes one after the other (a
//! server restarted while the session waits for a person): every turn's root is
//! `invoke_workflow`, linked to the turn before, even the answer's turn the second process
//! exports; the question and its answer are one span with the wait and who answered; a steer,
//! a queued input and a stop are events of the turn they reached.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::Duration;

use openharness::host::{Host, TurnStart};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{BusyPolicy, StopReason};
use openharness_otel::testing::{ReceivedSpan, Receiver};
use openharness_otel::{Collector, LiveExport, LiveOptions, SpanOptions, spans_of};
use openharness_testkit::inbox::gated_inbox;
use openharness_testkit::{LIMIT, eventually};

fn live(store: &Arc<dyn Store>, receiver: &Receiver) -> LiveExport {
    LiveExport::start(
        Arc::clone(store),
        Collector::new(&receiver.endpoint()).unwrap(),
        LiveOptions::default().flush_every(Duration::from_millis(20)),
    )
}

fn host_on(live: &LiveExport) -> (Host, Arc<tokio::sync::Semaphore>) {
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    (Host::new(live.store()).workflow(inbox).unwrap(), gate)
}

/// The id of the session's `input:queued` in `mode`.
async fn queued_id(store: &Arc<dyn Store>, session: &SessionId, mode: &str) -> String {
    let events = store.events(session, 0..u64::MAX).await.unwrap();
    events
        .iter()
        .find(|e| e.name == "input:queued" && e.payload["mode"] == mode)
        .map(|e| e.id.to_string())
        .unwrap()
}

fn roots(spans: &[ReceivedSpan]) -> Vec<&ReceivedSpan> {
    let mut roots: Vec<_> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    // By the seq of the event that began the turn (turns can begin within one millisecond).
    roots.sort_by_key(|s| {
        s.attribute("openharness.seq")
            .and_then(|seq| seq.parse::<u64>().ok())
    });
    roots
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turn_of_a_living_session_is_a_linked_root_with_the_person_in_it() {
    let receiver = Receiver::start().await;
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let session = SessionId::new();

    // The first process: a turn that asks a question and waits.
    let first = live(&memory, &receiver);
    let (host, _gate) = host_on(&first);
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
    drop(host);
    let stats = first.shutdown(Duration::from_secs(10)).await;
    assert_eq!(stats.spans_failed, 0);
    let before_restart = receiver.spans().len();

    // The second process: the answer, by Bea, then a turn held at its model call that a steer,
    // a queued input and a stop reach.
    let second = live(&memory, &receiver);
    let (host, gate) = host_on(&second);
    let request = host.unfinished(&session).await.unwrap().open_requests[0];
    host.respond(
        &session,
        request,
        "Porto".into(),
        RunOptions::new().by("bea"),
    )
    .await
    .unwrap();
    let held = host
        .start(&session, TurnStart::Input("slow".into()), RunOptions::new())
        .await
        .unwrap();
    eventually(LIMIT, "the held call to start", || async {
        let page = host
            .events(&session, None, 1000)
            .await
            .map_err(|_| "no events")?;
        let started = page
            .events
            .iter()
            .filter(|r| r.event.name == "agent:started")
            .count();
        if started >= 3 { Ok(()) } else { Err("not yet") }
    })
    .await;
    let steer = RunOptions::new().on_busy(BusyPolicy::Steer).by("bea");
    host.start(&session, TurnStart::Input("by train".into()), steer)
        .await
        .unwrap();
    let enqueue = RunOptions::new().on_busy(BusyPolicy::Enqueue);
    let queued = host
        .start(&session, TurnStart::Input("and back?".into()), enqueue)
        .await
        .unwrap();
    assert!(host.cancel(&session).await);
    gate.add_permits(8);
    held.done.wait().await.unwrap();
    queued.done.wait().await.unwrap();
    drop(host);
    let stats = second.shutdown(Duration::from_secs(10)).await;
    assert_eq!(stats.spans_failed, 0);

    let sent = receiver.spans();
    let after_restart = &sent[before_restart..];
    // What the second process sent is what an export of the whole log gives for those turns.
    let whole = spans_of(memory.as_ref(), &session, SpanOptions::default())
        .await
        .unwrap();
    for span in after_restart {
        assert!(
            whole.iter().any(|s| s.span_id.to_string() == span.span_id),
            "{} is a span of the whole log",
            span.name
        );
    }

    let turns = roots(&sent);
    let starts: Vec<_> = turns
        .iter()
        .map(|t| (t.name.as_str(), t.attribute("openharness.turn.start")))
        .collect();
    // The steer no call took and the queued input have a turn each.
    assert_eq!(turns.len(), 5, "{starts:?}");
    assert!(
        turns.iter().all(|t| t.name == "invoke_workflow inbox"),
        "{starts:?}"
    );
    assert_eq!(
        starts.iter().map(|(_, s)| s.as_deref()).collect::<Vec<_>>(),
        [
            Some("workflow:started"),
            Some("input:received"),
            Some("user:input"),
            Some("user:input"),
            Some("user:input")
        ]
    );
    // No orphans: every span's parent was sent, in its trace.
    for span in &sent {
        if !span.parent_span_id.is_empty() {
            assert!(
                sent.iter()
                    .any(|p| p.span_id == span.parent_span_id && p.trace_id == span.trace_id),
                "{}'s parent is in its trace",
                span.name
            );
        }
    }
    for pair in turns.windows(2) {
        let link = (pair[0].trace_id.clone(), pair[0].span_id.clone());
        assert!(
            pair[1].links.contains(&link),
            "{} links to the turn before",
            pair[1].name
        );
    }
    // The question: asked in the first process, answered in the second.
    // The first process sent it at its shutdown as still waiting; the second sends it whole.
    let questions: Vec<_> = sent.iter().filter(|s| s.name == "await_input").collect();
    let [waiting, question] = questions[..] else {
        panic!("the question sent twice: {questions:?}");
    };
    assert_eq!(waiting.span_id, question.span_id);
    assert_eq!(
        waiting.attribute("openharness.input.waiting").as_deref(),
        Some("true")
    );
    assert_eq!(question.attribute("openharness.input.waiting"), None);
    assert_eq!(question.parent_span_id, turns[0].span_id);
    assert_eq!(
        question
            .attribute("openharness.input.answered_by")
            .as_deref(),
        Some("bea")
    );
    assert_eq!(
        question
            .attribute("openharness.input.answer_trace_id")
            .as_deref(),
        Some(turns[1].trace_id.as_str())
    );
    let waited: i64 = question
        .attribute("openharness.input.wait_ms")
        .unwrap()
        .parse()
        .unwrap();
    assert!(waited >= 0);
    assert!(
        turns[1]
            .links
            .contains(&(question.trace_id.clone(), question.span_id.clone()))
    );
    // The turns of the steer no call took and of the queued input name them, and who wrote.
    let steer_id = queued_id(&memory, &session, "steer").await;
    assert_eq!(
        turns[3].attribute("openharness.input.queued_id"),
        Some(steer_id)
    );
    assert_eq!(
        turns[3].attribute("openharness.input.by").as_deref(),
        Some("bea")
    );
    assert!(turns[4].attribute("openharness.input.queued_id").is_some());
    let held_root = whole
        .iter()
        .find(|s| s.span_id.to_string() == turns[2].span_id)
        .unwrap();
    let events: Vec<_> = held_root.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(events, ["input:queued", "input:queued", "stop:requested"]);
    let modes: Vec<_> = held_root.events[..2]
        .iter()
        .map(|e| {
            e.attributes
                .iter()
                .find(|kv| kv.key.as_str() == "openharness.input.mode")
                .map(|kv| kv.value.as_str().into_owned())
        })
        .collect();
    assert_eq!(modes, [Some("steer".into()), Some("enqueue".into())]);
}
