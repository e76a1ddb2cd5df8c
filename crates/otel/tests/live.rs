//! The live export and the after-the-fact export against a collector on 127.0.0.1
//! ([`Receiver`]): a full queue drops and counts but loses no span (dropped events are read
//! back from the store); a refusing collector never fails a run and is counted; the fork's
//! link is on the wire; a refused after-the-fact export is a typed error.
#![allow(clippy::unwrap_used, missing_docs)]

mod kit;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::tape::At;
use openharness_otel::testing::{Receiver, small_turn};
use openharness_otel::{
    Collector, LiveExport, LiveOptions, OtelError, SpanOptions, export_sessions, spans_of,
};

/// One small turn, appended one event at a time as a run would.
async fn record_turn(store: &dyn Store, session: &SessionId) {
    let events = small_turn();
    for (seq, event) in (0u64..).zip(events) {
        store.append(session, &[event], seq).await.unwrap();
    }
}

async fn expected_ids(store: &dyn Store, sessions: &[SessionId]) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for session in sessions {
        for span in spans_of(store, session, SpanOptions::default())
            .await
            .unwrap()
        {
            ids.insert(span.span_id.to_string());
        }
    }
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_drops_and_counts_but_no_span_is_lost() {
    let receiver = Receiver::start().await;
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let live = LiveExport::start(
        Arc::clone(&memory),
        Collector::new(&receiver.endpoint()).unwrap(),
        LiveOptions::default().queue(1),
    );
    let store = live.store();
    let sessions: Vec<SessionId> = (0..300)
        .map(|i| format!("burst-{i}").parse().unwrap())
        .collect();
    for session in &sessions {
        record_turn(store.as_ref(), session).await;
    }
    let stats = live.shutdown(Duration::from_secs(30)).await;
    assert_eq!(stats.events_queued, 300 * 6);
    assert!(
        stats.events_dropped > 0,
        "a queue of one should overflow: {stats:?}"
    );
    assert_eq!(stats.events_recovered, stats.events_dropped, "{stats:?}");
    assert_eq!(stats.spans_failed, 0);
    let expected = expected_ids(memory.as_ref(), &sessions).await;
    assert_eq!(expected.len(), 300 * 5);
    let received: Vec<String> = receiver.spans().into_iter().map(|s| s.span_id).collect();
    assert_eq!(received.len(), expected.len(), "each span sent once");
    assert_eq!(received.into_iter().collect::<BTreeSet<_>>(), expected);
    assert_eq!(stats.spans_sent as usize, expected.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_collector_never_fails_a_run_and_its_losses_are_counted() {
    let receiver = Receiver::start().await;
    receiver.refuse(true);
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let live = LiveExport::start(
        Arc::clone(&memory),
        Collector::new(&receiver.endpoint()).unwrap(),
        LiveOptions::default(),
    );
    let outcome = kit::desk(live.store())
        .run(RunOptions::new().input("Where is A-17?"))
        .await
        .unwrap();
    assert_eq!(outcome.state.answers, ["shipped"]);
    let stats = live.shutdown(Duration::from_secs(30)).await;
    let produced = spans_of(memory.as_ref(), &outcome.session, SpanOptions::default())
        .await
        .unwrap()
        .len();
    assert_eq!(stats.spans_sent, 0);
    assert_eq!(stats.spans_failed as usize, produced, "{stats:?}");

    // After the fact, a refusal is an error that says where and how many.
    let err = export_sessions(
        memory.as_ref(),
        std::slice::from_ref(&outcome.session),
        &Collector::new(&receiver.endpoint()).unwrap(),
        SpanOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, OtelError::Refused { spans, .. } if spans == produced),
        "{err}"
    );
    assert!(err.to_string().contains(receiver.endpoint().url()), "{err}");
    // An unknown session is one too.
    let err = export_sessions(
        memory.as_ref(),
        &["nope".parse().unwrap()],
        &Collector::new(&receiver.endpoint()).unwrap(),
        SpanOptions::default(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, OtelError::UnknownSession(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fork_link_is_on_the_wire_and_re_export_sends_the_same_bytes() {
    let receiver = Receiver::start().await;
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let desk = kit::desk(Arc::clone(&memory));
    let parent = desk
        .run(RunOptions::new().input("Where is A-17?"))
        .await
        .unwrap();
    let fork = desk
        .fork(&parent.session, At::position(3))
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    let collector = Collector::new(&receiver.endpoint()).unwrap();
    let sessions = [parent.session.clone(), fork.session.clone()];
    let first = export_sessions(
        memory.as_ref(),
        &sessions,
        &collector,
        SpanOptions::default(),
    )
    .await
    .unwrap();
    let once = receiver.spans();
    export_sessions(
        memory.as_ref(),
        &sessions,
        &collector,
        SpanOptions::default(),
    )
    .await
    .unwrap();
    let twice = receiver.spans();
    assert_eq!(once.len(), first.spans);
    assert_eq!(&twice[..once.len()], &once[..], "the first export");
    assert_eq!(
        &twice[once.len()..],
        &once[..],
        "the second sends exactly the same"
    );

    let parent_spans = spans_of(memory.as_ref(), &parent.session, SpanOptions::default())
        .await
        .unwrap();
    let mut position =
        openharness_otel::SessionSpans::new(parent.session.clone(), SpanOptions::default());
    for (seq, event) in (0u64..).zip(memory.events(&parent.session, 0..3).await.unwrap()) {
        position.push(seq, &event);
    }
    let target = position.position_span().unwrap();
    assert!(parent_spans.iter().any(|s| s.reference() == target));
    let root = once
        .iter()
        .find(|s| s.parent_span_id.is_empty() && !s.links.is_empty())
        .expect("the fork's root, linked");
    assert_eq!(
        root.links,
        vec![(target.trace_id.to_string(), target.span_id.to_string())]
    );
}
