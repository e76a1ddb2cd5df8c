//! `Host::compare` folds both sessions while it reads them: the state patch where they part
//! is the one their states derived afterwards give, for plain sessions, for forks whose
//! edited state is entered mid-read, and for long sessions read a page at a time.
#![allow(clippy::unwrap_used, missing_docs)]

use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness_host::{EventPlace, ForkPoint, Host, SessionComparison};
use openharness_testkit::notes::{Notes, Scribe};

fn host(store: &MemoryStore) -> Host {
    let notes = Workflow::builder("notes")
        .initial_state(Notes::default())
        .agent(Scribe)
        .store(MemoryStore::new())
        .provider(ScriptedProvider::new().fallback("scribe", |request| {
            Reply::output(serde_json::json!({ "note": request.prompt.to_uppercase() }))
        }))
        .build()
        .unwrap();
    Host::new(store.clone()).workflow(notes).unwrap()
}

/// A session of the notes workflow with one turn per input.
async fn session(host: &Host, inputs: &[&str]) -> SessionId {
    let first = host
        .run("notes", Some(inputs[0].to_owned()), RunOptions::new())
        .await
        .unwrap();
    for input in &inputs[1..] {
        host.send(&first.session, (*input).to_owned(), RunOptions::new())
            .await
            .unwrap();
    }
    first.session
}

/// The state patch `compared` should carry: between each side's state just after the first
/// differing event, derived afresh (`b_at` maps the lineage position to `b`'s own).
async fn derived_patch(
    host: &Host,
    compared: &SessionComparison,
    b_at: impl Fn(u64) -> u64,
) -> json_patch::Patch {
    let after = compared.agree + 1;
    let a = host
        .state_at(&compared.a, after.min(compared.a_len))
        .await
        .unwrap();
    let b = host
        .state_at(&compared.b, b_at(after.min(compared.b_len)))
        .await
        .unwrap();
    json_patch::diff(&a, &b)
}

/// The event recorded at `place` (the one leading to its position there).
async fn recorded_at(store: &MemoryStore, place: &EventPlace) -> openharness_core::Envelope {
    let events = store
        .events(&place.session, place.position - 1..place.position)
        .await
        .unwrap();
    events.into_iter().next().expect("an event at the place")
}

#[tokio::test]
async fn the_state_patch_where_two_sessions_part_is_the_derived_one() {
    let store = MemoryStore::new();
    let host = host(&store);
    let a = session(&host, &["one", "two", "three"]).await;
    let b = session(&host, &["one", "two", "four"]).await;
    let compared = host.compare(&a, &b).await.unwrap();
    let divergence = compared.divergence.clone().unwrap();
    // Each side's event is where it says it was recorded: that session, after `agree` events.
    for (event, place, session) in [
        (&divergence.a, &divergence.a_at, &a),
        (&divergence.b, &divergence.b_at, &b),
    ] {
        let place = place.as_ref().unwrap();
        assert_eq!(
            (&place.session, place.position),
            (session, compared.agree + 1)
        );
        assert_eq!(
            recorded_at(&store, place).await.id,
            event.as_ref().unwrap().id
        );
    }
    assert_eq!(divergence.a.unwrap().name, "user:input");
    let patch = divergence.state_patch.unwrap();
    assert_eq!(patch, derived_patch(&host, &compared, |p| p).await);

    // One session longer than the other: the shorter one's state is its last.
    let longer = session(&host, &["one", "two", "three", "five"]).await;
    let compared = host.compare(&a, &longer).await.unwrap();
    let divergence = compared.divergence.clone().unwrap();
    assert!(divergence.a.is_none());
    assert!(divergence.a_at.is_none());
    assert_eq!(divergence.b_at.as_ref().unwrap().session, longer);
    assert_eq!(compared.agree, compared.a_len);
    let patch = divergence.state_patch.unwrap();
    assert_eq!(patch, derived_patch(&host, &compared, |p| p).await);
}

#[tokio::test]
async fn an_inherited_event_where_they_part_is_placed_in_the_parent_that_recorded_it() {
    let store = MemoryStore::new();
    let host = host(&store);
    let parent = session(&host, &["one", "two"]).await;
    let len = host.session(&parent).await.unwrap().len;
    let fork = host
        .prepare_fork(&parent, ForkPoint::Position { position: len })
        .await
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap()
        .session;
    let other = session(&host, &["one", "another"]).await;
    let compared = host.compare(&fork, &other).await.unwrap();
    let divergence = compared.divergence.clone().unwrap();
    // The fork's side of it is its parent's second input: recorded by the parent.
    let at_a = divergence.a_at.clone().unwrap();
    assert_eq!(
        (&at_a.session, at_a.position),
        (&parent, compared.agree + 1)
    );
    assert_eq!(
        recorded_at(&store, &at_a).await.id,
        divergence.a.unwrap().id
    );
    assert_eq!(divergence.b_at.unwrap().session, other);
}

#[tokio::test]
async fn a_forks_edited_state_entered_while_reading_is_in_its_state() {
    let store = MemoryStore::new();
    let host = host(&store);
    let parent = session(&host, &["one", "two"]).await;
    // A root with the parent's events: nothing of the two lineages is shared, so the fork's
    // edit is met while both are read.
    let copy = SessionId::new();
    let events = store.all_events(&parent).await.unwrap();
    store.append(&copy, &events, 0).await.unwrap();

    let fork_at = host
        .session(&parent)
        .await
        .unwrap()
        .len
        .saturating_sub(1)
        .min(6);
    let prepared = host
        .prepare_fork(&parent, ForkPoint::Position { position: fork_at })
        .await
        .unwrap();
    let edited = prepared
        .edit_state(&serde_json::json!({ "notes": ["EDITED"] }))
        .unwrap()
        .run(RunOptions::new())
        .await
        .unwrap();
    let compared = host.compare(&copy, &edited.session).await.unwrap();
    assert_eq!(compared.agree, fork_at);
    // The fork parts at its first own event after `session:forked` (its own position 2),
    // the copy at its event after the fork point.
    let divergence = compared.divergence.clone().unwrap();
    let (at_a, at_b) = (divergence.a_at.unwrap(), divergence.b_at.unwrap());
    assert_eq!((&at_b.session, at_b.position), (&edited.session, 2));
    assert_eq!(
        recorded_at(&store, &at_b).await.id,
        divergence.b.unwrap().id
    );
    assert_eq!((&at_a.session, at_a.position), (&copy, fork_at + 1));
    assert_eq!(
        recorded_at(&store, &at_a).await.id,
        divergence.a.unwrap().id
    );
    let patch = compared.divergence.clone().unwrap().state_patch.unwrap();
    assert!(
        serde_json::to_string(&patch).unwrap().contains("EDITED"),
        "{patch:?}"
    );
    // Lineage position p of the fork is its own position 1 + (p - fork_at).
    let derived = derived_patch(&host, &compared, |p| 1 + p.saturating_sub(fork_at)).await;
    assert_eq!(patch, derived);
}

#[tokio::test]
async fn long_sessions_are_compared_across_pages() {
    let store = MemoryStore::new();
    let host = host(&store);
    let inputs: Vec<String> = (0..400).map(|i| format!("note {i}")).collect();
    let mut other = inputs.clone();
    other[390] = "another note".to_owned();
    let a = session(
        &host,
        &inputs.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let b = session(&host, &other.iter().map(String::as_str).collect::<Vec<_>>()).await;
    let compared = host.compare(&a, &b).await.unwrap();
    // More than a page of the store and a batch of the folds.
    assert!(compared.agree > 1_024, "{}", compared.agree);
    let divergence = compared.divergence.clone().unwrap();
    assert_eq!(
        divergence.b.as_ref().unwrap().payload["text"],
        "another note"
    );
    let patch = divergence.state_patch.unwrap();
    assert_eq!(patch, derived_patch(&host, &compared, |p| p).await);
    // A session against itself agrees everywhere.
    let same = host.compare(&a, &a).await.unwrap();
    assert!(same.divergence.is_none());
    assert_eq!(same.agree, same.a_len);
}
