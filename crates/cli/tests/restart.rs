//! A restarted server finishes what its killed predecessor left, with no client's help:
//! `openharness serve` is SIGKILLed at a random moment of a turn it acknowledged (a new
//! session, an input to a session, a chat message), 20 times per store, and started again on
//! the same store. Each time, without any call but reads, the session's turn ends (it is not
//! left `running`), the acknowledged input is answered, and no agent call whose answer was
//! recorded is sent to a model again. On redb and on PostgreSQL (skipped, saying so, without
//! `OPENHARNESS_TEST_POSTGRES`). How long the restart took to finish each turn is printed; the
//! goal on it lives in the benchmarks, not here.
#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use openharness_testkit::http::Client;
use openharness_testkit::random::SplitMix;
use openharness_testkit::{block_on, eventually};
use serde_json::{Value, json};

mod binary;
mod serving;

/// Kills per store.
const KILLS: usize = 20;

/// How long a restarted server may take to finish a turn before the test gives up.
const FINISH: Duration = Duration::from_secs(60);

/// Starts `serve` on `store`, its scripted models answering slowly: the process, the kit's
/// client of it, and when it was ready.
fn serve(dir: &Path, store: &str) -> (binary::Killed, Client, Instant) {
    let mut command = binary::command(dir);
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
        .args(["--chat-workflow", "chat"])
        .env("OPENHARNESS_SCRIPTED_DELAY_MS", "200");
    let (child, port, _) = serving::start_serve(command);
    (child, serving::client(port), Instant::now())
}

async fn call(client: &Client, method: &str, path: &str, body: &Value) -> (u16, Value) {
    let answer = client.send(method, path, body).await;
    (answer.status, answer.json_or_null())
}

/// Waits until `session` has ended its turn on `client`'s server; how long that took.
fn finished(client: &Client, session: &str) -> Duration {
    let started = Instant::now();
    let path = format!("/sessions/{session}");
    block_on(eventually(
        FINISH,
        &format!("{session} to finish"),
        || async {
            let (status, summary) = call(client, "GET", &path, &json!({})).await;
            if status == 200 && summary["status"] != "running" && summary["runningHere"] == false {
                Ok(())
            } else {
                Err(summary)
            }
        },
    ));
    started.elapsed()
}

/// Every event of `session`.
fn events(client: &Client, session: &str) -> Vec<Value> {
    let path = format!("/sessions/{session}/events?limit=1000");
    let (status, page) = block_on(call(client, "GET", &path, &json!({})));
    assert_eq!(status, 200, "{page}");
    page["events"].as_array().unwrap().to_vec()
}

/// What a kill finds: the session, and the text of the input that was acknowledged.
struct Acknowledged {
    session: String,
    text: String,
}

/// Sends the `n`-th input on `client`'s server (a new session, an input to a session run to
/// its end first, or a chat message, in turn) and returns once it is acknowledged.
fn acknowledged_input(client: &Client, n: usize) -> Acknowledged {
    let text = format!("input {n}");
    block_on(async {
        match n % 3 {
            0 => {
                let body = json!({ "workflow": "chat", "input": text });
                let (status, created) = call(client, "POST", "/sessions", &body).await;
                assert_eq!(status, 202, "{created}");
                let session = created["session"].as_str().unwrap().to_owned();
                Acknowledged { session, text }
            }
            1 => {
                let body = json!({ "workflow": "chat", "input": "hello" });
                let (status, created) = call(client, "POST", "/sessions", &body).await;
                assert_eq!(status, 202, "{created}");
                let session = created["session"].as_str().unwrap().to_owned();
                let path = format!("/sessions/{session}");
                eventually(FINISH, "the first turn", || async {
                    let (_, summary) = call(client, "GET", &path, &json!({})).await;
                    if summary["status"] == "idle" {
                        Ok(())
                    } else {
                        Err(summary)
                    }
                })
                .await;
                let path = format!("/sessions/{session}/input");
                let (status, answer) = call(client, "POST", &path, &json!({ "text": text })).await;
                assert_eq!(status, 202, "{answer}");
                Acknowledged { session, text }
            }
            _ => {
                let session = uuid::Uuid::now_v7().to_string();
                let body = json!({
                    "id": session,
                    "trigger": "submit-message",
                    "messages": [{ "id": format!("m{n}"), "role": "user", "parts": [{ "type": "text", "text": text }] }],
                });
                // Acknowledged once the stream's head has arrived.
                let answer = client
                    .open("POST", "/api/chat", Some(&body.to_string()), &[])
                    .await
                    .unwrap();
                assert_eq!(answer.status, 200);
                Acknowledged { session, text }
            }
        }
    })
}

/// What the log must show after the restart: the acknowledged input, answered (a successful
/// agent call it triggered, and the turn ended after it), and no call whose answer was recorded
/// started again.
fn check(events: &[Value], acknowledged: &Acknowledged, kill: usize) {
    let input = events
        .iter()
        .position(|e| e["name"] == "user:input" && e["payload"]["text"] == acknowledged.text)
        .unwrap_or_else(|| panic!("kill {kill}: the acknowledged input is lost: {events:#?}"));
    let input_id = &events[input]["id"];
    let answered = events[input..].iter().any(|e| {
        e["name"] == "agent:completed"
            && e["causedBy"] == *input_id
            && e["payload"]["outcome"] == "success"
    });
    assert!(
        answered,
        "kill {kill}: the input was not answered: {events:#?}"
    );
    assert_eq!(
        events.last().map(|e| e["name"].clone()),
        Some(json!("workflow:completed")),
        "kill {kill}"
    );
    // A call is (trigger, agent). Once one has recorded its answer, it never starts again.
    let mut answered_calls: HashMap<(String, String), usize> = HashMap::new();
    for (seq, event) in events.iter().enumerate() {
        let call = (
            event["causedBy"].to_string(),
            event["payload"]["agentName"].to_string(),
        );
        if event["name"] == "agent:completed" && event["payload"]["outcome"] == "success" {
            answered_calls.insert(call, seq);
        } else if event["name"] == "agent:started" {
            assert!(
                !answered_calls.contains_key(&call),
                "kill {kill}: a call answered at seq {:?} was started again at seq {seq}",
                answered_calls.get(&call)
            );
        }
    }
}

fn kills(dir: &Path, store: &str) {
    let seed = SplitMix::seed_from_clock();
    eprintln!("restart kills on {store}: seed {seed}");
    let mut random = SplitMix::new(seed);
    let mut took = Vec::new();
    for n in 0..KILLS {
        let (server, client, _) = serve(dir, store);
        let acknowledged = acknowledged_input(&client, n);
        // Somewhere in the turn: before its model call, during it, or after.
        std::thread::sleep(Duration::from_millis(random.below(400)));
        drop(server);
        let (server, client, ready) = serve(dir, store);
        finished(&client, &acknowledged.session);
        took.push(ready.elapsed());
        check(&events(&client, &acknowledged.session), &acknowledged, n);
        drop(server);
    }
    took.sort();
    eprintln!(
        "restart → turn finished with no client call, over {KILLS} kills on {store}: p50 {:?}, max {:?}",
        took[took.len() / 2],
        took[took.len() - 1]
    );
}

#[test]
fn a_restarted_server_finishes_every_acknowledged_turn_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.redb");
    kills(dir.path(), store.to_str().unwrap());
}

#[test]
fn a_restarted_server_finishes_every_acknowledged_turn_on_postgres() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let Some(database) = runtime.block_on(serving::postgres::fresh_database("restart", "rst"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    kills(dir.path(), &database.url);
}
