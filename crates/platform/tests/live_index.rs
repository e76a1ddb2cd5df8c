//! The index a posted message is checked against is kept current by a live tail of the
//! platform log: posts ask the store nothing about the platform's resources, yet one replica
//! posts to a session another created a moment before. On a `MemoryStore`, and on PostgreSQL
//! in a fresh schema when `OPENHARNESS_TEST_POSTGRES` is set.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use openharness_core::{SessionId, Store};
use openharness_platform::{NewAgent, NewMessage, NewSession, PLATFORM_LOG, Platform};
use openharness_provider::{Reply, ScriptedProvider};
use openharness_store::{Observed, StoreObserver};
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;
use uuid::Uuid;

mod common;
use common::on_every_store;

/// Counts the reads of the platform log.
#[derive(Default)]
struct LogReads(AtomicU64);

impl StoreObserver for LogReads {
    fn observes_reads(&self) -> bool {
        true
    }
    fn on_read(&self, session: &SessionId, _range: &Range<u64>) {
        if session.as_str() == PLATFORM_LOG {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn message(text: &str) -> NewMessage {
    serde_json::from_value(json!({ "content": [{ "type": "text", "text": text }] })).unwrap()
}

fn platform(store: Arc<dyn Store>) -> Platform {
    let model =
        ScriptedProvider::new().fallback("assistant", |_| Reply::output(json!("ok")).text("ok"));
    Platform::new(store, None).with_provider(Arc::new(model))
}

/// Posts `text`, again while the session's last turn is still giving up its claim (`409
/// session_busy` for a moment after its log says it ended).
async fn post(platform: &Platform, agent: Uuid, session: Uuid, text: &str) {
    let what = format!("session {session} to take {text:?}");
    eventually(LIMIT, &what, || async {
        match platform.post_message(agent, session, message(text)).await {
            Ok(_) => Ok(()),
            Err(err) if err.to_string().contains("is busy") => Err(err.to_string()),
            Err(err) => panic!("posting {text:?}: {err}"),
        }
    })
    .await;
}

/// Waits until the session's last turn has ended.
async fn turn_ends(store: &Arc<dyn Store>, session: Uuid) {
    let log: SessionId = session.to_string().parse().unwrap();
    let what = format!("the turn of session {session} to end");
    eventually(LIMIT, &what, || async {
        match store.session(&log).await.unwrap() {
            Some(info) if !info.status.is_running() => Ok(()),
            other => Err(other.map(|info| info.status)),
        }
    })
    .await;
}

async fn posts_read_the_live_index_and_see_another_replicas_sessions_at_once(
    store: Arc<dyn Store>,
) {
    let observed = Arc::new(Observed::new(Arc::clone(&store), LogReads::default()));
    let here = platform(Arc::clone(&observed) as Arc<dyn Store>);
    let there = platform(Arc::clone(&store));
    let agent = there
        .create_agent(
            serde_json::from_value::<NewAgent>(
                json!({ "name": "a", "system_prompt": "Be brief." }),
            )
            .unwrap(),
        )
        .await
        .unwrap()
        .id;

    // A session created on the other replica a moment ago: the first post finds it (caught
    // up from the store when the live index does not hold it yet).
    for round in 0..3 {
        let session = there
            .create_session(agent, NewSession::default())
            .await
            .unwrap()
            .id;
        post(&here, agent, session, &format!("hello {round}")).await;
        turn_ends(&store, session).await;

        // Once it is in the live index, posts read nothing of the platform log.
        let before = observed.observer().0.load(Ordering::SeqCst);
        for n in 0..3 {
            post(&here, agent, session, &format!("again {n}")).await;
            turn_ends(&store, session).await;
        }
        assert_eq!(
            observed.observer().0.load(Ordering::SeqCst),
            before,
            "round {round}: posts read the platform log from the store"
        );
    }

    // What is not there is still not found, after a catch-up.
    let unknown = Uuid::now_v7();
    let err = here
        .post_message(agent, unknown, message("anyone?"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&unknown.to_string()), "{err}");
}

on_every_store!(posts_read_the_live_index_and_see_another_replicas_sessions_at_once);
