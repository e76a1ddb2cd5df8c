//! A session another process holds: refused at once while its log says a turn runs there, and
//! waited for (the claim asked again, for a moment) when its log says that turn has ended, as
//! the other process lets go of it (a client that sends its next message the moment a stream
//! ends, to another replica).
#![allow(clippy::unwrap_used, missing_docs)]

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use openharness::adapter::{Claim, SnapshotJson, Subscription};
use openharness::prelude::*;
use openharness::store::MemoryStore;
use openharness::{SessionInfo, StoreError};
use openharness_host::{Host, HostError, TurnStart};
use openharness_testkit::inbox::gated_inbox;
use serde_json::json;

/// A memory store whose claims another process holds while `held` says so.
#[derive(Default)]
struct HeldElsewhere {
    inner: MemoryStore,
    held: AtomicBool,
    asked: AtomicUsize,
}

#[async_trait]
impl Store for HeldElsewhere {
    fn describe(&self) -> String {
        "memory, claimed elsewhere".to_owned()
    }
    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        self.inner.append(session, events, expected_seq).await
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.inner.events(session, range).await
    }
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        self.inner.session(session).await
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        self.inner.sessions().await
    }
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        self.inner.clear(session).await
    }
    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        self.inner.snapshot_json(session, position, state).await
    }
    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        self.inner.latest_snapshot_json(session, at_most).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        self.inner.subscribe(session, from_seq).await
    }
    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        if self.held.load(Ordering::SeqCst) {
            return Ok(None);
        }
        self.inner.claim(session).await
    }
}

/// A host over a [`HeldElsewhere`] store, with a session whose first turn has ended.
async fn session_with_a_turn() -> (Host, Arc<HeldElsewhere>, SessionId) {
    let store = Arc::new(HeldElsewhere::default());
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    gate.add_permits(100);
    let host = Host::new(Arc::clone(&store) as Arc<dyn Store>)
        .workflow(inbox)
        .unwrap();
    let session = SessionId::new();
    let start = TurnStart::New {
        workflow: "inbox".into(),
        input: Some("first".into()),
    };
    let started = host
        .start(&session, start, RunOptions::new())
        .await
        .unwrap();
    started.done.wait().await.unwrap();
    (host, store, session)
}

/// Waits until this host has let go of `session`.
async fn let_go(host: &Host, session: &SessionId) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.is_running(session) {
        assert!(Instant::now() < deadline, "the host never let go");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_another_process_is_letting_go_of_is_waited_for() {
    let (host, store, session) = session_with_a_turn().await;
    let_go(&host, &session).await;
    store.held.store(true, Ordering::SeqCst);
    store.asked.store(0, Ordering::SeqCst);
    let releasing = Arc::clone(&store);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        releasing.held.store(false, Ordering::SeqCst);
    });
    let started = host
        .start(
            &session,
            TurnStart::Input("second".into()),
            RunOptions::new(),
        )
        .await
        .expect("waited for the other process to let go, not refused");
    assert!(started.recorded.is_some(), "the input is recorded");
    assert!(
        store.asked.load(Ordering::SeqCst) > 1,
        "the claim was asked again"
    );
    started.done.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_turn_runs_in_another_process_is_refused_at_once() {
    let (host, store, session) = session_with_a_turn().await;
    let_go(&host, &session).await;
    // Another process's turn: its input recorded, nothing after it yet.
    let len = store.session(&session).await.unwrap().unwrap().count;
    let input = Envelope::new("user:input", json!({ "text": "elsewhere" }), None);
    store.append(&session, &[input], len).await.unwrap();
    store.held.store(true, Ordering::SeqCst);
    store.asked.store(0, Ordering::SeqCst);
    let asked_at = Instant::now();
    let refused = host
        .start(
            &session,
            TurnStart::Input("second".into()),
            RunOptions::new(),
        )
        .await
        .expect_err("busy");
    assert!(matches!(refused, HostError::Workflow(_)), "{refused}");
    assert!(refused.to_string().contains("another process"), "{refused}");
    assert!(
        asked_at.elapsed() < Duration::from_secs(1),
        "refused at once, not after waiting"
    );
    assert_eq!(store.asked.load(Ordering::SeqCst), 1, "asked once");
}
