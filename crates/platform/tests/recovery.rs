//! Turns cut off by a dead process: the platform's host's recovery (`Host::recover`) finds
//! them and resumes them from their logs, and a message posted to one resumes it first; no
//! recorded model response is asked for again. On a `MemoryStore`, and on PostgreSQL in a fresh schema when
//! `OPENHARNESS_TEST_POSTGRES` is set. (Several processes on one PostgreSQL, killed at random,
//! are tested by `crates/cli/tests/failover.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use openharness_core::{
    Envelope, RunOptions, SessionId, Store, StoreError,
    adapter::observe::{Observed, StoreCall, StoreObserver},
};
use openharness_platform::{
    ChatAgent, NewAgent, NewMessage, NewSession, Platform, SessionMessage, agent_chat_workflow,
};
use openharness_provider::{Reply, ScriptedProvider};
use openharness_testkit::{LIMIT, eventually};
use serde_json::json;
use uuid::Uuid;

mod common;
use common::on_every_store;

/// Answers each message with "echo: <its text>".
fn echo() -> ScriptedProvider {
    ScriptedProvider::new().fallback("assistant", |request| {
        let latest = request.latest_user_text().unwrap_or_default();
        Reply::output(json!(format!("echo: {latest}")))
    })
}

/// The platform sessions its host's recovery resumed.
async fn recovered(platform: &Platform) -> Vec<Uuid> {
    platform
        .host()
        .recover()
        .await
        .unwrap()
        .into_iter()
        .map(|session| Uuid::parse_str(session.as_str()).unwrap())
        .collect()
}

fn message(text: &str) -> NewMessage {
    serde_json::from_value(json!({ "content": [{ "type": "text", "text": text }] })).unwrap()
}

fn texts(messages: &[SessionMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            let value = serde_json::to_value(m).unwrap();
            format!(
                "{}: {}",
                value["role"].as_str().unwrap_or(""),
                value["content"][0]["text"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// Waits until the session's messages are `expected`.
async fn messages_become(platform: &Platform, agent: Uuid, id: Uuid, expected: &[&str]) {
    let what = format!("the messages to become {expected:?}");
    eventually(LIMIT, &what, || async move {
        let seen = texts(&platform.messages(agent, id).await.unwrap());
        if seen == expected { Ok(()) } else { Err(seen) }
    })
    .await;
}

/// Waits until the session's last turn has ended (its log no longer says running).
async fn turn_ends(store: &Arc<dyn Store>, log: &SessionId) {
    eventually(LIMIT, "the session's turn to end", || async move {
        match store.session(log).await.unwrap() {
            Some(info) if !info.status.is_running() => Ok(()),
            other => Err(other.map(|info| info.status)),
        }
    })
    .await;
}

/// Cuts a turn off as a dying process would: sends `text` on the session with a model that
/// never answers, and stops the turn once the model call has started.
async fn cut_off_turn(store: &Arc<dyn Store>, log: &SessionId, text: &str) {
    let stuck = ScriptedProvider::new()
        .pace(Duration::from_secs(3600))
        .fallback("assistant", |_| Reply::output(json!("never")));
    let chat = agent_chat_workflow(
        Arc::clone(store),
        Arc::new(stuck),
        ChatAgent::new("You are terse.", None, &[]),
    )
    .unwrap();
    let len = store.session(log).await.unwrap().map_or(0, |i| i.count);
    let (session, text) = (log.clone(), text.to_owned());
    let turn = tokio::spawn(async move { chat.send(&session, text, RunOptions::new()).await });
    eventually(LIMIT, "the model call to start", || async move {
        let events = store.events(log, len..u64::MAX).await.unwrap();
        let names: Vec<_> = events.iter().map(|e| e.name.clone()).collect();
        if names.iter().any(|name| name == "agent:started") {
            Ok(())
        } else {
            Err(names)
        }
    })
    .await;
    turn.abort();
    // Gone, not just told to go: a turn still unwinding holds its session, and a recovery
    // that ran meanwhile would find it busy (seen once under load).
    assert!(turn.await.is_err_and(|err| err.is_cancelled()));
    let info = store.session(log).await.unwrap().unwrap();
    assert!(
        info.status.is_running(),
        "the cut-off session reads as running"
    );
}

/// A new agent with `system_prompt` and a session of it: their ids and the session's log.
async fn agent_and_session(platform: &Platform, system_prompt: &str) -> (Uuid, Uuid, SessionId) {
    let agent = platform
        .create_agent(
            serde_json::from_value::<NewAgent>(
                json!({ "name": "a", "system_prompt": system_prompt }),
            )
            .unwrap(),
        )
        .await
        .unwrap();
    let session = platform
        .create_session(agent.id, NewSession::default())
        .await
        .unwrap();
    let log = session.id.to_string().parse().unwrap();
    (agent.id, session.id, log)
}

async fn cut_off_turns_are_resumed_without_asking_again(store: Arc<dyn Store>) {
    let scripted = echo();
    let platform =
        Platform::new(Arc::clone(&store), None).with_provider(Arc::new(scripted.clone()));
    let (a, s, log) = agent_and_session(&platform, "You are terse.").await;

    platform.post_message(a, s, message("first")).await.unwrap();
    messages_become(&platform, a, s, &["user: first", "assistant: echo: first"]).await;
    turn_ends(&store, &log).await;
    assert_eq!(recovered(&platform).await, Vec::<Uuid>::new());

    // A turn cut off mid-call is found and resumed; the recorded answer to "first" is not
    // asked for again.
    cut_off_turn(&store, &log, "second").await;
    assert_eq!(recovered(&platform).await, vec![s]);
    messages_become(
        &platform,
        a,
        s,
        &[
            "user: first",
            "assistant: echo: first",
            "user: second",
            "assistant: echo: second",
        ],
    )
    .await;
    turn_ends(&store, &log).await;
    assert_eq!(scripted.calls(), 2, "one call per answer: none repeated");
    assert_eq!(recovered(&platform).await, Vec::<Uuid>::new());

    // A message posted to a cut-off session resumes it first, then is answered.
    cut_off_turn(&store, &log, "third").await;
    platform
        .post_message(a, s, message("fourth"))
        .await
        .unwrap();
    messages_become(
        &platform,
        a,
        s,
        &[
            "user: first",
            "assistant: echo: first",
            "user: second",
            "assistant: echo: second",
            "user: third",
            "assistant: echo: third",
            "user: fourth",
            "assistant: echo: fourth",
        ],
    )
    .await;
    turn_ends(&store, &log).await;
    assert_eq!(scripted.calls(), 4);
}

async fn a_running_turn_is_not_recovered_and_refuses_a_second_message(store: Arc<dyn Store>) {
    let slow = echo().pace(Duration::from_millis(600));
    let platform = Platform::new(Arc::clone(&store), None).with_provider(Arc::new(slow.clone()));
    let (a, s, _) = agent_and_session(&platform, "Hi.").await;
    platform.post_message(a, s, message("slow")).await.unwrap();
    // The turn runs here: nothing to recover, and a second message is refused.
    assert_eq!(recovered(&platform).await, Vec::<Uuid>::new());
    let refused = platform
        .post_message(a, s, message("again"))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("is busy"), "{refused}");
    messages_become(&platform, a, s, &["user: slow", "assistant: echo: slow"]).await;
    assert_eq!(slow.calls(), 1);
}

/// A store on which a dead process's last append lands late: once armed, the next append to
/// the session finds a `user:input` ("ghost") and its `agent:started` recorded just before it,
/// as a process killed just after sending them to the database would have left them (the
/// database frees its claim before it runs what was sent).
struct LateAppend {
    inner: Arc<dyn Store>,
    armed: std::sync::Mutex<Option<SessionId>>,
}

#[async_trait::async_trait]
impl StoreObserver for LateAppend {
    async fn before(&self, call: StoreCall<'_>) -> Result<(), StoreError> {
        let StoreCall::Append {
            session,
            expected_seq: from_seq,
            ..
        } = call
        else {
            return Ok(());
        };
        let armed = self.armed.lock().unwrap().take_if(|armed| armed == session);
        if armed.is_some() {
            let input = Envelope::new("user:input", json!({ "text": "ghost" }), None);
            let started = Envelope::new(
                "agent:started",
                json!({
                    "agentName": "assistant",
                    "system": "Hi.",
                    "messages": [
                        { "role": "user", "text": "first" },
                        { "role": "assistant", "text": "echo: first" },
                        { "role": "user", "text": "ghost" },
                    ],
                    "prompt": "",
                }),
                Some(input.id),
            );
            self.inner
                .append(session, &[input, started], from_seq)
                .await?;
        }
        Ok(())
    }
}

/// A `user:input` that lands in the log after the post read its length is not taken for the
/// posted message: the post is refused (`409`, nothing acknowledged that is not recorded),
/// the ghost's turn is resumed like any cut-off one, and the message posted again is answered.
async fn a_dead_processs_late_input_is_not_acknowledged_as_the_posted_one(store: Arc<dyn Store>) {
    let late = Arc::new(Observed::new(
        Arc::clone(&store),
        LateAppend {
            inner: Arc::clone(&store),
            armed: std::sync::Mutex::new(None),
        },
    ));
    let platform =
        Platform::new(Arc::clone(&late) as Arc<dyn Store>, None).with_provider(Arc::new(echo()));
    let (a, s, log) = agent_and_session(&platform, "Hi.").await;
    platform.post_message(a, s, message("first")).await.unwrap();
    messages_become(&platform, a, s, &["user: first", "assistant: echo: first"]).await;
    turn_ends(&store, &log).await;

    *late.observer().armed.lock().unwrap() = Some(log.clone());
    let (platform_ref, late_ref) = (&platform, &late);
    let refused = eventually(
        LIMIT,
        "the first turn to give its claim up",
        || async move {
            let posted = platform_ref.post_message(a, s, message("real")).await;
            if late_ref.observer().armed.lock().unwrap().is_none() {
                return Ok(posted.expect_err("the ghost's input is not the posted message"));
            }
            // Refused before it subscribed: the first turn's task still held the claim.
            let busy = posted.expect_err("busy");
            assert!(conflicts(&busy));
            Err(busy.to_string())
        },
    )
    .await;
    assert!(conflicts(&refused), "{refused}");

    // The ghost's turn is cut off: recovery resumes it (once the refused turn's claim is
    // given up, which a store may do a moment after the post answered).
    let recovered = eventually(LIMIT, "recovery to find the cut-off turn", || async move {
        let recovered = recovered(platform_ref).await;
        if recovered.is_empty() {
            Err(recovered)
        } else {
            Ok(recovered)
        }
    })
    .await;
    assert_eq!(recovered, vec![s]);
    messages_become(
        &platform,
        a,
        s,
        &[
            "user: first",
            "assistant: echo: first",
            "user: ghost",
            "assistant: echo: ghost",
        ],
    )
    .await;
    turn_ends(&store, &log).await;
    let posted = eventually(
        LIMIT,
        "the resumed turn to give its claim up",
        || async move {
            match platform_ref.post_message(a, s, message("real")).await {
                Ok(posted) => Ok(posted),
                // The resumed turn's task may hold the claim a moment after its log ended.
                Err(busy) if conflicts(&busy) => Err(busy.to_string()),
                Err(err) => panic!("posting again: {err}"),
            }
        },
    )
    .await;
    assert_eq!(texts(&[posted]), ["user: real"]);
    messages_become(
        &platform,
        a,
        s,
        &[
            "user: first",
            "assistant: echo: first",
            "user: ghost",
            "assistant: echo: ghost",
            "user: real",
            "assistant: echo: real",
        ],
    )
    .await;
}

on_every_store!(
    cut_off_turns_are_resumed_without_asking_again,
    a_running_turn_is_not_recovered_and_refuses_a_second_message,
    a_dead_processs_late_input_is_not_acknowledged_as_the_posted_one,
);

/// Whether `err` is a conflict with the session's state (the `/v1` routes answer it `409`):
/// a turn runs, or the platform log kept changing.
fn conflicts(err: &openharness_platform::PlatformError) -> bool {
    use openharness_platform::PlatformError;
    matches!(
        err,
        PlatformError::Conflict { .. }
            | PlatformError::Contended { .. }
            | PlatformError::Turn(openharness_core::Error::SessionBusy { .. })
            | PlatformError::Host(openharness_host::HostError::Workflow(
                openharness_core::Error::SessionBusy { .. }
            ))
    )
}
