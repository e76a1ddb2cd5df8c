//! A session's feedback (`openharness_host::feedback`): annotations checked and recorded on a
//! log beside the session (its own log untouched), online scores, and session lists that
//! filter and sort by them.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness_host::feedback::{AnnotationAdded, Better, Thumbs, TurnScored, feedback_log};
use openharness_host::{Host, HostError, SessionQuery, SessionQueryWords, SessionSort};
use serde_json::json;

/// A recorded session of one idle turn that was given `input`.
async fn record(store: &MemoryStore, input: &str) -> SessionId {
    let session = SessionId::new();
    let events = [
        Envelope::new("workflow:started", json!({ "workflow": "chat" }), None),
        Envelope::new("user:input", json!({ "text": input }), None),
        Envelope::new("workflow:completed", json!({ "reason": "idle" }), None),
    ];
    store.append(&session, &events, 0).await.unwrap();
    session
}

fn scored(scorer: &str, value: f64) -> TurnScored {
    TurnScored {
        scorer: scorer.to_owned(),
        turn: 3,
        first_seq: 1,
        value: Some(value),
        passed: value >= 0.5,
        better: Better::Higher,
        detail: None,
        judge_session: None,
    }
}

#[tokio::test]
async fn an_annotation_is_recorded_beside_the_session_and_read_back_with_who_and_when() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let session = record(&store, "Book Lisbon").await;
    let before = store.all_events(&session).await.unwrap();
    let added = host
        .annotate(
            &session,
            AnnotationAdded::by("  ana@example.com ")
                .thumbs(Thumbs::Down)
                .label(" wrong-city ")
                .note("booked Porto")
                .turn(3),
        )
        .await
        .unwrap();
    assert_eq!(added.event.by, "ana@example.com");
    assert_eq!(added.event.labels, ["wrong-city"]);
    // The session's own log is as it was: no position moved.
    assert_eq!(store.all_events(&session).await.unwrap(), before);
    let log = store
        .all_events(&feedback_log(&session).unwrap())
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].name, "annotation:added");
    let feedback = host.feedback(&session).await.unwrap();
    assert_eq!(feedback.annotations.len(), 1);
    assert_eq!(feedback.annotations[0].id, added.id);
    assert_eq!(feedback.annotations[0].at, added.at);
    assert_eq!(feedback.annotations[0].event.turn, Some(3));
    assert_eq!(feedback.thumbs_score(), Some(0.0));
    // The feedback log is not a session of the list.
    let all = host.query_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(all.total, 1);
    assert_eq!(all.sessions[0].id, session);
}

#[tokio::test]
async fn bad_annotations_are_refused_saying_why_and_record_nothing() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let session = record(&store, "hello").await;
    let refused = |annotation: AnnotationAdded| {
        let host = host.clone();
        let session = session.clone();
        async move { host.annotate(&session, annotation).await.unwrap_err() }
    };
    let says = |err: HostError, words: &str| match err {
        HostError::BadFeedback(why) => assert!(why.contains(words), "{why}"),
        other => panic!("{other:?}"),
    };
    says(refused(AnnotationAdded::by("ana")).await, "says something");
    says(
        refused(AnnotationAdded::by(" ").thumbs(Thumbs::Up)).await,
        "`by`",
    );
    says(
        refused(AnnotationAdded::by("ana").label("")).await,
        "label is empty",
    );
    says(
        refused(AnnotationAdded::by("ana").label("x".repeat(65))).await,
        "longer than 64",
    );
    says(
        refused(AnnotationAdded::by("ana").note("n".repeat(10_001))).await,
        "longer than 10000",
    );
    says(
        refused(AnnotationAdded::by("ana").thumbs(Thumbs::Up).turn(4)).await,
        "turn 4",
    );
    says(
        refused(AnnotationAdded::by("ana").thumbs(Thumbs::Up).turn(0)).await,
        "turn 0",
    );
    says(
        refused(AnnotationAdded::by("ana").thumbs(Thumbs::Up).turn(2)).await,
        "no turn of session",
    );
    let log = feedback_log(&session).unwrap();
    host.annotate(&session, AnnotationAdded::by("bo").note("fine"))
        .await
        .unwrap();
    says(
        host.annotate(&log, AnnotationAdded::by("ana").thumbs(Thumbs::Up))
            .await
            .unwrap_err(),
        "is a feedback log",
    );
    let mut many = AnnotationAdded::by("ana");
    for n in 0..33 {
        many = many.label(format!("l{n}"));
    }
    says(refused(many).await, "at most 32");
    assert!(matches!(
        host.annotate(
            &SessionId::new(),
            AnnotationAdded::by("ana").thumbs(Thumbs::Up)
        )
        .await,
        Err(HostError::SessionNotFound(_))
    ));
    // Only the one good annotation was recorded.
    assert_eq!(store.all_events(&log).await.unwrap().len(), 1);
}

#[tokio::test]
async fn thumbs_count_each_persons_latest() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let session = record(&store, "hello").await;
    for (by, thumbs) in [
        ("ana", Thumbs::Down),
        ("bo", Thumbs::Up),
        ("ana", Thumbs::Up),
        ("cy", Thumbs::Down),
    ] {
        host.annotate(&session, AnnotationAdded::by(by).thumbs(thumbs))
            .await
            .unwrap();
    }
    let feedback = host.feedback(&session).await.unwrap();
    assert_eq!(feedback.thumbs_score(), Some(2.0 / 3.0));
    let summary = host.session(&session).await.unwrap();
    let said = summary.annotations.unwrap();
    assert_eq!((said.count, said.up, said.down), (4, 2, 1));
}

#[tokio::test]
async fn lists_filter_and_sort_by_online_score_annotation_and_label() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let a = record(&store, "a").await;
    let b = record(&store, "b").await;
    let c = record(&store, "c").await;
    let unscored = record(&store, "d").await;
    host.record_scores(&a, &[scored("helpful", 0.9)])
        .await
        .unwrap();
    host.record_scores(&b, &[scored("helpful", 0.2), scored("polite", 1.0)])
        .await
        .unwrap();
    host.record_scores(&c, &[scored("helpful", 0.5)])
        .await
        .unwrap();
    // The latest score counts: `a` was re-scored lower.
    host.record_scores(&a, &[scored("helpful", 0.7)])
        .await
        .unwrap();
    host.annotate(&b, AnnotationAdded::by("ana").label("rude"))
        .await
        .unwrap();

    let ids = |page: openharness_host::SessionsPage| -> Vec<SessionId> {
        page.sessions.into_iter().map(|s| s.id).collect()
    };
    let lowest = host
        .query_sessions(
            &SessionQuery::default()
                .scorer("helpful")
                .sort(SessionSort::LowestScore),
        )
        .await
        .unwrap();
    assert_eq!(lowest.sessions[2].scores["helpful"], 0.7);
    assert_eq!(ids(lowest), [b.clone(), c.clone(), a.clone()]);
    let highest = host
        .query_sessions(
            &SessionQuery::default()
                .scorer("helpful")
                .sort(SessionSort::Score),
        )
        .await
        .unwrap();
    assert_eq!(ids(highest), [a.clone(), c.clone(), b.clone()]);
    // Sorted by a score without filtering on it: the unscored go last.
    let mut words = SessionQueryWords::default();
    words.scorer = Some("polite".into());
    words.sort = Some("score".into());
    let polite = host
        .query_sessions(&words.into_query().unwrap())
        .await
        .unwrap();
    assert_eq!(ids(polite), std::slice::from_ref(&b));
    let bounded = host
        .query_sessions(
            &SessionQuery::default()
                .scorer("helpful")
                .min_score(0.5)
                .max_score(0.8),
        )
        .await
        .unwrap();
    let mut found = ids(bounded);
    found.sort();
    let mut expected = vec![a.clone(), c.clone()];
    expected.sort();
    assert_eq!(found, expected);
    // An annotation queue: those nobody annotated yet.
    let queue = host
        .query_sessions(&SessionQuery::default().annotated(false))
        .await
        .unwrap();
    assert_eq!(queue.total, 3);
    assert!(!ids(queue).contains(&b));
    let rude = host
        .query_sessions(&SessionQuery::default().label("rude"))
        .await
        .unwrap();
    assert_eq!(ids(rude), std::slice::from_ref(&b));
    // A plain list (no feedback filter or sort) fills in the page's feedback too.
    let plain = host.query_sessions(&SessionQuery::default()).await.unwrap();
    let row = |id: &SessionId| plain.sessions.iter().find(|s| &s.id == id).unwrap();
    assert_eq!(row(&a).scores["helpful"], 0.7);
    assert_eq!(row(&b).annotations.as_ref().unwrap().labels, ["rude"]);
    assert!(row(&unscored).annotations.is_none() && row(&unscored).scores.is_empty());
    // What is recorded after a query is seen by the next.
    host.annotate(&unscored, AnnotationAdded::by("bo").thumbs(Thumbs::Up))
        .await
        .unwrap();
    let queue = host
        .query_sessions(&SessionQuery::default().annotated(false))
        .await
        .unwrap();
    assert_eq!(queue.total, 2);
    let plain = host.query_sessions(&SessionQuery::default()).await.unwrap();
    let row = plain.sessions.iter().find(|s| s.id == unscored).unwrap();
    assert_eq!(row.annotations.as_ref().unwrap().up, 1);
}

/// Scorers score turns concurrently, so a later turn's score may be recorded first: the
/// summary shows the latest turn's, not the last recorded.
#[tokio::test]
async fn a_sessions_score_is_its_latest_turns_whatever_order_they_were_recorded_in() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let session = record(&store, "a").await;
    let at = |turn: u64, value: f64| TurnScored {
        turn,
        ..scored("helpful", value)
    };
    host.record_scores(&session, &[at(9, 0.9), at(3, 0.1)])
        .await
        .unwrap();
    let summary = host.session(&session).await.unwrap();
    assert_eq!(summary.scores.get("helpful"), Some(&0.9));
    // A turn scored again (a rescore) counts as its latest.
    host.record_scores(&session, &[at(9, 0.4)]).await.unwrap();
    let summary = host.session(&session).await.unwrap();
    assert_eq!(summary.scores.get("helpful"), Some(&0.4));
}
