//! Five answers to a second input × three route families, over real sockets: the native
//! `POST /sessions/{id}/input`, the AI SDK's `POST /api/chat` and the platform's `POST /v1/…/
//! messages`, each with the policy in `x-openharness-on-busy`, while the session's first turn
//! is held at its model call. Each case checks the answer (`409` or recorded), the events the
//! policy records, the state the log folds to, that nothing is left running, and that a fork at
//! every position of the session lives.
#![allow(clippy::unwrap_used, missing_docs)]

use std::sync::Arc;

use openharness::host::Host;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::store::MemoryStore;
use openharness::{BusyPolicy, Store};
use openharness_platform::Platform;
use openharness_server::{ON_BUSY_HEADER, ServerOptions, router};
use openharness_testkit::http;
use openharness_testkit::inbox::{Gated, gated_inbox};
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

#[derive(Debug, Clone, Copy)]
enum Family {
    Native,
    Chat,
    V1,
}

/// One server: the inbox workflow (native and chat) and the platform (`/v1`) in one host.
struct Served {
    client: http::Client,
    host: Host,
    store: Arc<dyn Store>,
    gate: Arc<Semaphore>,
}

async fn served() -> Served {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (inbox, gate) = gated_inbox(MemoryStore::new());
    let host = Host::shared(Arc::clone(&store)).workflow(inbox).unwrap();
    // The platform's model: held like the inbox's, then echoes the latest user message
    // with what was steered into the call.
    let echo = ScriptedProvider::new().fallback("assistant", |request| {
        let latest = request.latest_user_text().unwrap_or_default();
        Reply::output(json!(format!("echo: {latest}{}", request.prompt)))
    });
    let holding = Gated::new(Arc::clone(&gate), echo);
    let platform = Platform::new(Arc::clone(&store), None)
        .with_provider(Arc::new(holding))
        .with_host(host)
        .unwrap();
    // The platform's host reads and runs native and `/v1` sessions alike, as `serve`'s does.
    let host = platform.host().clone();
    let options = ServerOptions::default()
        .chat_workflow("inbox")
        .platform(platform);
    let addr = http::serve(router(host.clone(), options)).await;
    Served {
        client: http::Client::new(addr),
        host,
        store,
        gate,
    }
}

fn chat_body(chat: &str, texts: &[&str]) -> String {
    let messages: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| json!({ "id": format!("m{i}"), "role": "user", "parts": [{ "type": "text", "text": text }] }))
        .collect();
    json!({ "id": chat, "messages": messages, "trigger": "submit-message" }).to_string()
}

fn say(text: &str) -> String {
    json!({ "content": [{ "type": "text", "text": text }] }).to_string()
}

/// A session of `family` whose first turn ("slow") is held at its model call: its log's id,
/// the path its second input is posted to, and a chat's stream (kept open).
async fn held(served: &Served, family: Family) -> (SessionId, String, Option<http::Events>) {
    let client = &served.client;
    let (log, path, stream) = match family {
        Family::Native => {
            let created = client
                .post(
                    "/sessions",
                    &json!({ "workflow": "inbox", "input": "slow" }),
                )
                .await;
            assert_eq!(created.status, 202, "{}", created.body);
            let id = created.json()["session"].as_str().unwrap().to_owned();
            (id.clone(), format!("/sessions/{id}/input"), None)
        }
        Family::Chat => {
            let id = SessionId::new().to_string();
            let stream = client
                .open("POST", "/api/chat", Some(&chat_body(&id, &["slow"])), &[])
                .await
                .unwrap();
            assert_eq!(stream.status, 200);
            (id, "/api/chat".to_owned(), Some(stream))
        }
        Family::V1 => {
            let agent = client
                .post(
                    "/v1/agents",
                    &json!({ "name": "echo", "system_prompt": "Echo." }),
                )
                .await
                .json();
            let agent = agent["id"].as_str().unwrap().to_owned();
            let sessions = format!("/v1/agents/{agent}/sessions");
            let session = client.post(&sessions, &json!({})).await.json();
            let id = session["id"].as_str().unwrap().to_owned();
            let messages = format!("{sessions}/{id}/messages");
            let posted = client
                .call("POST", &messages, Some(&say("slow")), &[])
                .await;
            assert_eq!(posted.status, 201, "{}", posted.body);
            (id, messages, None)
        }
    };
    let log: SessionId = log.parse().unwrap();
    eventually(LIMIT, "the first turn's model call", || async {
        let events = served
            .store
            .events(&log, 0..u64::MAX)
            .await
            .map_err(|_| 0usize)?;
        if events.iter().any(|e| e.name == "agent:started") {
            Ok(())
        } else {
            Err(events.len())
        }
    })
    .await;
    (log, path, stream)
}

/// Posts the second input under `policy`: its status, and a chat's stream.
async fn second(
    served: &Served,
    family: Family,
    log: &SessionId,
    path: &str,
    policy: BusyPolicy,
) -> (u16, Option<http::Events>) {
    let header = [(ON_BUSY_HEADER, policy.as_str())];
    let body = match family {
        Family::Native => json!({ "text": "second" }).to_string(),
        Family::Chat => chat_body(log.as_str(), &["slow", "second"]),
        Family::V1 => say("second"),
    };
    let answer = served
        .client
        .open("POST", path, Some(&body), &header)
        .await
        .unwrap();
    match family {
        Family::Chat if answer.status == 200 => (200, Some(answer)),
        _ => (answer.status, None),
    }
}

/// Waits for the session to be given up with nothing queued, and returns its events.
async fn settled(served: &Served, log: &SessionId) -> Vec<Envelope> {
    eventually(LIMIT, "the session to settle", || async {
        let events = served
            .store
            .events(log, 0..u64::MAX)
            .await
            .map_err(|_| "no events".to_owned())?;
        let last = events.last().ok_or("empty")?;
        let done = last.name == "workflow:completed"
            && last.payload.get("queued").is_none()
            && !served.host.is_running(log);
        if done {
            Ok(events)
        } else {
            Err(format!("{} events, last {}", events.len(), last.name))
        }
    })
    .await
}

fn texts_of(events: &[Envelope], name: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.name == name)
        .map(|e| e.payload["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// What the log of `family` under `policy` must hold.
fn check_log(family: Family, policy: BusyPolicy, events: &[Envelope]) {
    let names: Vec<&str> = events.iter().map(|e| e.name.as_ref()).collect();
    let queued: Vec<&Envelope> = events.iter().filter(|e| e.name == "input:queued").collect();
    let case = format!("{family:?} × {}: {names:?}", policy.as_str());
    let reasons: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "workflow:completed")
        .map(|e| e.payload["reason"].as_str().unwrap_or_default())
        .collect();
    if policy == BusyPolicy::Reject {
        assert!(queued.is_empty(), "{case}");
        assert_eq!(texts_of(events, "user:input"), ["slow"], "{case}");
        assert_eq!(reasons, ["idle"], "{case}");
        return;
    }
    let [queued] = queued[..] else {
        panic!("one input:queued: {case}");
    };
    assert_eq!(queued.payload["mode"], policy.as_str(), "{case}");
    assert_eq!(queued.payload["text"], "second", "{case}");
    let answered_in_turn = events
        .iter()
        .find(|e| e.name == "user:input" && e.caused_by == Some(queued.id));
    let steered = events
        .iter()
        .find(|e| e.name == "input:steered" && e.payload["queued"] == json!(queued.id));
    match policy {
        BusyPolicy::Steer => {
            assert!(steered.is_some(), "the held call took the steer: {case}");
            assert!(answered_in_turn.is_none(), "{case}");
            assert_eq!(reasons, ["idle"], "{case}");
        }
        BusyPolicy::Enqueue => {
            assert!(answered_in_turn.is_some(), "{case}");
            assert_eq!(reasons, ["idle", "idle"], "{case}");
        }
        BusyPolicy::Interrupt => {
            assert!(answered_in_turn.is_some(), "{case}");
            assert_eq!(reasons, ["interrupted", "idle"], "{case}");
        }
        BusyPolicy::Rollback => {
            assert!(answered_in_turn.is_some(), "{case}");
            assert!(names.contains(&"turn:rolled_back"), "{case}");
            assert_eq!(reasons, ["rolled_back", "idle"], "{case}");
        }
        BusyPolicy::Reject => unreachable!("answered above"),
    }
}

/// The state the log folds to: the inbox's inputs and steers (native, chat), or the
/// conversation's last reply (`/v1`).
async fn check_state(served: &Served, family: Family, policy: BusyPolicy, log: &SessionId) {
    let case = format!("{family:?} × {}", policy.as_str());
    let len = served.host.session(log).await.unwrap().len;
    let state = served.host.state_at(log, len).await.unwrap();
    match family {
        Family::Native | Family::Chat => {
            let (inputs, steered): (&[&str], &[&str]) = match policy {
                BusyPolicy::Reject => (&["slow"], &[]),
                BusyPolicy::Enqueue | BusyPolicy::Interrupt => (&["slow", "second"], &[]),
                // The state before the abandoned turn, then the second input.
                BusyPolicy::Rollback => (&["second"], &[]),
                BusyPolicy::Steer => (&["slow"], &["second"]),
            };
            assert_eq!(state["inputs"], json!(inputs), "{case}: {state}");
            assert_eq!(state["steered"], json!(steered), "{case}: {state}");
        }
        Family::V1 => {
            let text = state.to_string();
            let last = match policy {
                BusyPolicy::Reject => "echo: slow",
                BusyPolicy::Steer => "echo: slow | steered: second",
                _ => "echo: second",
            };
            assert!(text.contains(last), "{case}: {state}");
            if policy == BusyPolicy::Rollback {
                assert!(!text.contains("echo: slow"), "rolled back: {case}: {state}");
            }
        }
    }
}

/// A fork at every position of `log`, made as the inspector makes it (`POST
/// /sessions/{id}/fork`), lives: it ends with nothing left running and no error recorded (a
/// `/v1` session's fork runs with its agent's model).
async fn forks_live(served: &Served, log: &SessionId, case: &str) {
    let len = served.host.session(log).await.unwrap().len;
    for position in 0..=len {
        let forked = served
            .client
            .post(
                &format!("/sessions/{log}/fork"),
                &json!({ "at": "position", "position": position }),
            )
            .await;
        assert_eq!(
            forked.status, 202,
            "{case}: fork at {position}: {}",
            forked.body
        );
        let fork: SessionId = forked.json()["session"].as_str().unwrap().parse().unwrap();
        let what = format!("{case}: the fork at {position} to settle");
        let events = eventually(LIMIT, &what, || async {
            let status = served
                .host
                .session(&fork)
                .await
                .map_err(|err| err.to_string())?
                .status;
            let events = served
                .store
                .events(&fork, 0..u64::MAX)
                .await
                .map_err(|err| err.to_string())?;
            if status.is_running() || served.host.is_running(&fork) {
                let names: Vec<&str> = events.iter().map(|e| e.name.as_ref()).collect();
                Err(format!("running: {names:?}"))
            } else {
                Ok(events)
            }
        })
        .await;
        let errors: Vec<&Value> = events
            .iter()
            .filter(|e| e.name == "error:occurred")
            .map(|e| &e.payload)
            .collect();
        assert!(errors.is_empty(), "{case}: fork at {position}: {errors:?}");
    }
}

async fn every_policy(family: Family) {
    for policy in BusyPolicy::ALL {
        let served = served().await;
        let (log, path, first_stream) = held(&served, family).await;
        let (status, second_stream) = second(&served, family, &log, &path, policy).await;
        let case = format!("{family:?} × {}", policy.as_str());
        let recorded = match family {
            Family::Native => 202,
            Family::Chat => 200,
            Family::V1 => 201,
        };
        let expected = if policy == BusyPolicy::Reject {
            409
        } else {
            recorded
        };
        assert_eq!(status, expected, "{case}");
        served.gate.add_permits(Semaphore::MAX_PERMITS / 2);
        // A chat's streams end with their turns, without an error chunk.
        for stream in [first_stream, second_stream].into_iter().flatten() {
            let text = stream.text().await.unwrap();
            assert!(text.contains("\"type\":\"finish\""), "{case}: {text}");
            assert!(!text.contains("\"type\":\"error\""), "{case}: {text}");
        }
        let events = settled(&served, &log).await;
        check_log(family, policy, &events);
        check_state(&served, family, policy, &log).await;
        let replayed = served.host.replay(&log).await;
        match replayed {
            Ok(r) => assert!(r.matched, "{case}: replay parts: {:?}", r.divergence),
            Err(err) => panic!("{case}: replay: {err}"),
        }
        forks_live(&served, &log, &case).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_input_gives_each_policy_its_answer() {
    every_policy(Family::Native).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_gives_each_policy_its_answer() {
    every_policy(Family::Chat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_messages_give_each_policy_its_answer() {
    every_policy(Family::V1).await;
}

/// A header that names no policy is refused (`400`, naming the header), even when the body
/// names one, and nothing is recorded: the client meant something by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_naming_no_policy_is_refused_even_beside_the_bodys() {
    let served = served().await;
    let (log, path, _) = held(&served, Family::Native).await;
    let before = served.store.events(&log, 0..u64::MAX).await.unwrap().len();
    let body = json!({ "text": "second", "onBusy": "steer" }).to_string();
    let answer = served
        .client
        .call("POST", &path, Some(&body), &[(ON_BUSY_HEADER, "C.")])
        .await;
    assert_eq!(answer.status, 400, "{}", answer.body);
    assert!(answer.body.contains(ON_BUSY_HEADER), "{}", answer.body);
    let after = served.store.events(&log, 0..u64::MAX).await.unwrap().len();
    assert_eq!(before, after, "a refused input recorded nothing");
    served.gate.add_permits(Semaphore::MAX_PERMITS / 2);
}
