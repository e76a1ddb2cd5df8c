//! `Host::query_sessions`: titles, agents, tokens, cost and open requests from each session's
//! events; search, filters, sorts and cursor pages; and what is appended after a query is
//! seen by the next one without reading the rest again.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness_host::{Host, HostError, SessionQuery, SessionSort};
use serde_json::json;

fn event(name: &'static str, payload: serde_json::Value) -> Envelope {
    Envelope::new(name, payload, None)
}

/// A recorded session: a workflow start, an input, one call of `agent` costing `cost` with
/// `tokens` tokens, and then either an open question or an idle end.
async fn record(
    store: &MemoryStore,
    workflow: &str,
    input: &str,
    agent: &str,
    tokens: u64,
    cost: f64,
    asks: bool,
) -> SessionId {
    let session = SessionId::new();
    let mut events = vec![
        event("workflow:started", json!({ "workflow": workflow })),
        event("user:input", json!({ "text": input })),
        event(
            "agent:started",
            json!({ "agentName": agent, "prompt": input }),
        ),
        event(
            "agent:completed",
            json!({
                "agentName": agent,
                "outcome": "success",
                "usage": { "inputTokens": tokens, "outputTokens": tokens },
                "cost": cost,
            }),
        ),
    ];
    if asks {
        let asked = event("input:requested", json!({ "prompt": "Publish?" }));
        let id = asked.id;
        events.push(asked);
        events.push(event(
            "workflow:completed",
            json!({ "reason": "waiting_for_input", "openRequests": [id] }),
        ));
    } else {
        events.push(event("workflow:completed", json!({ "reason": "done" })));
    }
    store.append(&session, &events, 0).await.unwrap();
    session
}

#[tokio::test]
async fn sessions_are_searched_filtered_sorted_and_paged_by_what_their_events_say() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let lisbon = record(
        &store,
        "trips",
        "Plan a trip to Lisbon",
        "planner",
        100,
        0.5,
        true,
    )
    .await;
    let porto = record(
        &store,
        "trips",
        "Plan a trip to Porto",
        "planner",
        10,
        0.05,
        false,
    )
    .await;
    let essay = record(
        &store,
        "writing",
        "Write an essay",
        "writer",
        1_000,
        2.0,
        false,
    )
    .await;

    let all = host.query_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(all.total, 3);
    let first = all.sessions.iter().find(|s| s.id == lisbon).unwrap();
    assert_eq!(first.title.as_deref(), Some("Plan a trip to Lisbon"));
    assert_eq!(first.agents, ["planner"]);
    assert_eq!(first.usage.input_tokens + first.usage.output_tokens, 200);
    assert!((first.cost - 0.5).abs() < 1e-9);
    assert_eq!(first.open_requests, 1);
    assert_eq!(first.status, SessionStatus::Waiting);
    // One session, read alone, says the same.
    let one = host.session(&lisbon).await.unwrap();
    assert_eq!(&one, first);

    let ids = |page: &openharness_host::SessionsPage| {
        page.sessions
            .iter()
            .map(|s| s.id.clone())
            .collect::<Vec<_>>()
    };
    // Search: title, any case; an agent's name; the workflow; an id's prefix.
    let found = host
        .query_sessions(&SessionQuery::default().search("LISBON"))
        .await
        .unwrap();
    assert_eq!(ids(&found), std::slice::from_ref(&lisbon));
    let found = host
        .query_sessions(&SessionQuery::default().search("writer"))
        .await
        .unwrap();
    assert_eq!(ids(&found), std::slice::from_ref(&essay));
    let prefix = &porto.as_str()[..18];
    let found = host
        .query_sessions(&SessionQuery::default().search(prefix))
        .await
        .unwrap();
    assert!(ids(&found).contains(&porto));
    // Filters.
    let waiting = host
        .query_sessions(&SessionQuery::default().status([SessionStatus::Waiting]))
        .await
        .unwrap();
    assert_eq!(ids(&waiting), std::slice::from_ref(&lisbon));
    let open = host
        .query_sessions(
            &SessionQuery::default()
                .open_request(false)
                .workflow("trips"),
        )
        .await
        .unwrap();
    assert_eq!(ids(&open), std::slice::from_ref(&porto));
    let agent = host
        .query_sessions(&SessionQuery::default().agent("planner"))
        .await
        .unwrap();
    assert_eq!(agent.total, 2);
    let later = host
        .query_sessions(
            &SessionQuery::default().since(chrono::Utc::now() + chrono::Duration::hours(1)),
        )
        .await
        .unwrap();
    assert_eq!(later.total, 0);
    // Sorts.
    let by_cost = host
        .query_sessions(&SessionQuery::default().sort(SessionSort::Cost))
        .await
        .unwrap();
    assert_eq!(
        ids(&by_cost),
        [essay.clone(), lisbon.clone(), porto.clone()]
    );
    let by_tokens = host
        .query_sessions(&SessionQuery::default().sort(SessionSort::Tokens))
        .await
        .unwrap();
    assert_eq!(
        ids(&by_tokens),
        [essay.clone(), lisbon.clone(), porto.clone()]
    );
    // Pages: two of one, then the last; every session once.
    let mut seen = Vec::new();
    let mut query = SessionQuery::default().sort(SessionSort::Cost).limit(1);
    loop {
        let page = host.query_sessions(&query).await.unwrap();
        assert_eq!(page.total, 3);
        seen.extend(ids(&page));
        match page.next_after {
            Some(cursor) => query = query.after(cursor),
            None => break,
        }
    }
    assert_eq!(seen, ids(&by_cost));
    let bad = host
        .query_sessions(&SessionQuery::default().after("not a cursor"))
        .await
        .unwrap_err();
    assert!(matches!(bad, HostError::BadCursor(_)), "{bad}");
}

#[tokio::test]
async fn what_is_appended_after_a_query_is_seen_by_the_next_one() {
    let store = MemoryStore::new();
    let host = Host::new(store.clone());
    let session = record(
        &store,
        "trips",
        "Plan a trip to Lisbon",
        "planner",
        5,
        0.0,
        true,
    )
    .await;
    let before = host.query_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(before.sessions[0].open_requests, 1);

    // The question is answered and a follow-up asked.
    let len = store.session(&session).await.unwrap().unwrap().count;
    let events = store.all_events(&session).await.unwrap();
    let asked = events.iter().find(|e| e.name == "input:requested").unwrap();
    store
        .append(
            &session,
            &[
                event(
                    "input:received",
                    json!({ "requestId": asked.id, "text": "yes" }),
                ),
                event("user:input", json!({ "text": "and a day in Sintra?" })),
                event(
                    "agent:started",
                    json!({ "agentName": "guide", "prompt": "sintra" }),
                ),
            ],
            len,
        )
        .await
        .unwrap();
    let after = host
        .query_sessions(&SessionQuery::default().search("sintra"))
        .await
        .unwrap();
    assert_eq!(after.total, 1);
    let row = &after.sessions[0];
    assert_eq!(row.open_requests, 0);
    assert_eq!(row.agents, ["planner", "guide"]);
    assert_eq!(row.title.as_deref(), Some("Plan a trip to Lisbon"));
    assert_eq!(row.status, SessionStatus::Running);

    // A cleared session that starts again is read again from its start.
    store.clear(&session).await.unwrap();
    store
        .append(
            &session,
            &[
                event("workflow:started", json!({ "workflow": "trips" })),
                event("user:input", json!({ "text": "Somewhere else" })),
            ],
            0,
        )
        .await
        .unwrap();
    let again = host.query_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(again.sessions[0].title.as_deref(), Some("Somewhere else"));
    assert!(again.sessions[0].agents.is_empty());
}

/// Fails every read of one session's events, as a store missing one of them does.
struct Unreadable(SessionId);

#[async_trait::async_trait]
impl openharness::store::StoreObserver for Unreadable {
    fn observes_reads(&self) -> bool {
        true
    }

    async fn before(
        &self,
        call: openharness::store::StoreCall<'_>,
    ) -> Result<(), openharness::StoreError> {
        match call {
            openharness::store::StoreCall::Events { session, range } if *session == self.0 => {
                Err(openharness::StoreError::Corrupt {
                    session: session.clone(),
                    seq: range.start,
                    message: "the event is missing".into(),
                })
            }
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn a_damaged_session_is_listed_and_marked_and_the_others_read_fine() {
    let store = MemoryStore::new();
    let healthy = record(&store, "chat", "Hello", "assistant", 3, 0.0, false).await;
    let damaged = record(&store, "chat", "Broken", "assistant", 3, 0.0, false).await;
    let observed = openharness::store::Observed::new(store, Unreadable(damaged.clone()));
    let host = Host::new(observed);
    let page = host.query_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(page.total, 2, "both listed");
    let row = |id: &SessionId| page.sessions.iter().find(|s| s.id == *id).unwrap();
    assert_eq!(row(&healthy).title.as_deref(), Some("Hello"));
    assert!(row(&healthy).damaged.is_none());
    let why = row(&damaged).damaged.as_deref().unwrap();
    assert!(why.contains("the event is missing"), "{why}");
    // One at a time too: the damaged one is marked, not an error.
    assert!(host.session(&damaged).await.unwrap().damaged.is_some());
    assert!(host.session(&healthy).await.unwrap().damaged.is_none());
}
