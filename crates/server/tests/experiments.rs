//! Experiments over HTTP (feature `eval`), in process on 127.0.0.1 with a scripted model:
//! `POST /experiments` starts one in the background, `GET /experiments/{name}/events`
//! follows its log to an `end` frame with the results (and resumes after `Last-Event-ID`),
//! `POST /experiments/{name}/cancel` stops a slow one (recorded, so the store shows it
//! cancelled); a second start of a running one is a 409, bad input a 404 or 422. The store's
//! datasets are read at any version (`GET /datasets`, `GET /datasets/{name}?version=`), and an
//! experiment file's `[[datasets]]` takes their cases.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use openharness::host::Host;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_server::{ServerOptions, router};
use openharness_testkit::http::{self, Frame};
use serde_json::{Value, json};

// A workflow whose input makes an agent count its words into the state.

#[event]
#[derive(Debug, Clone)]
struct WordsCounted {
    words: u32,
}

#[event]
enum CountEvent {
    UserInput,
    WordsCounted,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Words {
    input: String,
    words: u32,
}

#[handler(CountEvent)]
impl Words {
    fn input(&mut self, input: &UserInput) {
        self.input = input.text.clone();
    }
    fn counted(&mut self, counted: &WordsCounted) {
        self.words = counted.words;
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Count {
    words: u32,
}

struct Counter;

#[agent(output = Count, emits = [WordsCounted])]
impl Counter {
    fn prompt(&self, _state: &Words, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Count, _input: &UserInput) -> WordsCounted {
        WordsCounted { words: out.words }
    }
}

/// The workflow `words` on `store`, asking a scripted model that takes `delay` per answer.
fn words(store: MemoryStore, delay: Duration) -> Workflow<Words> {
    let provider = ScriptedProvider::new().fallback("counter", move |request| {
        let words = request.prompt.split_whitespace().count() as u32;
        Reply::output(json!({ "words": words })).delay(delay)
    });
    Workflow::builder("words")
        .initial_state(Words::default())
        .agent(Counter)
        .store(store)
        .provider(provider)
        .build()
        .unwrap()
}

/// A server whose workflow `words` asks a scripted model that takes `delay` per answer.
async fn serve(delay: Duration) -> (SocketAddr, MemoryStore) {
    let store = MemoryStore::new();
    let host = Host::new(store.clone())
        .workflow(words(MemoryStore::new(), delay))
        .unwrap();
    let addr = http::serve(router(host, ServerOptions::default())).await;
    (addr, store)
}

const FILE: &str = r#"
name = "counting"
workflow = "words"
repeats = 2

[[case]]
id = "three"
inputs = ["one two three"]

[[case]]
id = "two"
inputs = ["one two"]

[[scorer]]
name = "three-words"
kind = "equals"
field = { state = "/words" }
expect = 3
"#;

/// Frames until the `end` one (included).
async fn to_the_end(events: &mut http::Events) -> Vec<Frame> {
    events
        .until(Duration::from_secs(20), |frame| {
            frame.event.as_deref() == Some("end")
        })
        .await
}

fn named<'a>(frames: &'a [Frame], name: &str) -> Vec<&'a Frame> {
    frames
        .iter()
        .filter(|frame| frame.event.as_deref() == Some(name))
        .collect()
}

#[tokio::test]
async fn an_experiment_started_over_http_runs_and_its_stream_ends_with_the_results() {
    let (addr, _store) = serve(Duration::ZERO).await;
    let client = http::Client::new(addr);
    let started = client.post("/experiments", &json!({ "toml": FILE })).await;
    assert_eq!(started.status, 202, "{}", started.body);
    let answer = started.json();
    assert_eq!(answer["name"], "counting");
    assert_eq!(answer["status"], "running");
    assert_eq!(answer["events"], "/experiments/counting/events");

    let mut events = client.events("/experiments/counting/events", &[]).await;
    assert_eq!(events.status, 200);
    let frames = to_the_end(&mut events).await;
    // The log from its start: the definition, the runs dispatched, recorded and scored.
    assert_eq!(frames[0].event.as_deref(), Some("eval:started"));
    assert_eq!(frames[0].seq(), 0);
    assert_eq!(named(&frames, "eval:dispatched").len(), 4);
    let recorded = named(&frames, "eval:recorded");
    assert_eq!(recorded.len(), 4);
    assert!(
        recorded
            .iter()
            .all(|frame| frame.json()["payload"]["status"] == "completed"),
        "{recorded:?}"
    );
    assert_eq!(named(&frames, "eval:scored").len(), 4);
    let end = frames.last().unwrap();
    assert_eq!(end.id, None);
    let end = end.json();
    assert_eq!(
        (
            &end["status"],
            &end["ran"],
            &end["failed"],
            &end["cancelled"]
        ),
        (&json!("completed"), &json!(4), &json!(0), &json!(0))
    );
    // Ids are the log's seqs, in order, each once.
    let seqs: Vec<u64> = frames[..frames.len() - 1].iter().map(Frame::seq).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());

    // Resumed after the third event: the rest, then the end again.
    let mut resumed = client
        .events("/experiments/counting/events", &[("Last-Event-ID", "2")])
        .await;
    let rest = to_the_end(&mut resumed).await;
    assert_eq!(rest[0].seq(), 3);
    assert_eq!(rest.len(), frames.len() - 3);
    assert_eq!(rest.last().unwrap().json()["status"], "completed");

    // The store has it: every run, scored by the file's scorer.
    let (status, one) = client.get("/experiments/counting").await.pair();
    assert_eq!(status, 200);
    assert_eq!(one["running"], false);
    assert_eq!(one["cancelled"], Value::Null);
    let runs = one["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        let passed = run["scores"]["three-words"]["passed"].as_bool().unwrap();
        assert_eq!(passed, run["run"]["case"] == "three", "{run}");
    }
}

#[tokio::test]
async fn a_slow_experiment_is_cancelled_and_a_second_start_while_it_runs_is_a_conflict() {
    let (addr, store) = serve(Duration::from_secs(60)).await;
    let client = http::Client::new(addr);
    let file = json!({
        "name": "slow",
        "workflow": "words",
        "case": [
            { "id": "a", "inputs": ["one two three"] },
            { "id": "b", "inputs": ["four"] },
        ],
    });
    let started = client.post("/experiments", &file).await;
    assert_eq!(started.status, 202, "{}", started.body);
    let again = client.post("/experiments", &file).await;
    assert_eq!(again.status, 409, "{}", again.body);
    assert_eq!(again.json()["error"]["code"], "experiment_running");

    let mut events = client.events("/experiments/slow/events", &[]).await;
    let dispatched = events
        .until(Duration::from_secs(10), |frame| {
            frame.event.as_deref() == Some("eval:dispatched")
        })
        .await;
    assert_eq!(dispatched[0].event.as_deref(), Some("eval:started"));
    let (status, one) = client.get("/experiments/slow").await.pair();
    assert_eq!((status, &one["running"]), (200, &json!(true)));
    let (_, listed) = client.get("/experiments").await.pair();
    assert_eq!(listed["experiments"][0]["name"], "slow");
    assert_eq!(listed["experiments"][0]["running"], true);

    // Cancelled in far less than the model's minute, and answered once recorded.
    let began = std::time::Instant::now();
    let (status, cancelled) = client
        .post("/experiments/slow/cancel", &json!({}))
        .await
        .pair();
    assert!(began.elapsed() < Duration::from_secs(10));
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["cancelled"], 2);
    let rest = to_the_end(&mut events).await;
    assert_eq!(named(&rest, "eval:cancelled").len(), 1);
    assert_eq!(rest.last().unwrap().json()["status"], "cancelled");

    // The store says so: every run cancelled, none running, the experiment cancelled.
    let (_, one) = client.get("/experiments/slow").await.pair();
    assert_eq!(one["running"], false);
    let (_, listed) = client.get("/experiments").await.pair();
    assert_eq!(listed["experiments"][0]["running"], false);
    assert!(one["cancelled"].is_string(), "{one}");
    for run in one["runs"].as_array().unwrap() {
        assert_eq!(run["run"]["status"], "cancelled", "{run}");
        if let Some(session) = run["run"]["session"].as_str() {
            let id: SessionId = session.parse().unwrap();
            let events = openharness::Store::all_events(&store, &id).await.unwrap();
            let last = events.last().unwrap();
            assert_ne!(
                openharness::SessionStatus::after(&last.name, &last.payload),
                openharness::SessionStatus::Running
            );
        }
    }
    // A stream opened now replays the log and ends as it stands.
    let mut replay = client.events("/experiments/slow/events", &[]).await;
    let frames = to_the_end(&mut replay).await;
    assert_eq!(frames.last().unwrap().json()["status"], "cancelled");
    // Not running any more: a second cancel is a conflict.
    let (status, again) = client
        .post("/experiments/slow/cancel", &json!({}))
        .await
        .pair();
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"]["code"], "experiment_not_running");
}

#[tokio::test]
async fn bad_experiments_are_refused_in_the_error_shape() {
    let (addr, _store) = serve(Duration::ZERO).await;
    let client = http::Client::new(addr);
    let case = json!([{ "id": "a", "inputs": ["one"] }]);
    for (body, says) in [
        (
            json!({ "name": "x", "workflow": "words", "case": case, "nope": 1 }),
            "unknown field `nope`",
        ),
        (json!({ "toml": "name = 1" }), "not an experiment file"),
        (json!({ "name": "x", "workflow": "words" }), "no case"),
        (
            json!({ "name": "x", "workflow": "words", "case": case, "provider": { "kind": "openai" } }),
            "is not built by this server",
        ),
        (
            json!({ "name": "x", "workflow": "words", "case": case, "dataset": "cases.jsonl" }),
            "write the cases inline",
        ),
        (
            json!({ "name": "x", "workflow": "words", "case": case, "repeats": 0 }),
            "repeats must be at least 1",
        ),
    ] {
        let (status, answer) = client.post("/experiments", &body).await.pair();
        assert_eq!(status, 422, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid", "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // Nothing was left behind by them: `x` is no experiment, and can start now.
    let (status, _) = client.get("/experiments/x").await.pair();
    assert_eq!(status, 404);
    for path in ["/experiments/none/events", "/experiments/x/events"] {
        let (status, answer) = client.get(path).await.pair();
        assert_eq!(status, 404, "{path}: {answer}");
        assert_eq!(answer["error"]["code"], "not_found");
    }
    let (status, answer) = client
        .post("/experiments/none/cancel", &json!({}))
        .await
        .pair();
    assert_eq!(
        (status, &answer["error"]["code"]),
        (404, &json!("not_found"))
    );
    let started = client
        .post(
            "/experiments",
            &json!({ "name": "x", "workflow": "words", "case": case }),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.body);
}

#[tokio::test]
async fn the_stores_datasets_are_read_at_any_version_and_an_experiment_takes_their_cases() {
    let store = MemoryStore::new();
    for input in ["refund one two", "something else"] {
        words(store.clone(), Duration::ZERO)
            .run(RunOptions::new().input(input))
            .await
            .unwrap();
    }
    let host = Host::new(store.clone())
        .workflow(words(MemoryStore::new(), Duration::ZERO))
        .unwrap();
    let added = openharness_eval::Dataset::add("refunds", openharness_eval::ForkAt::position(1))
        .search("refund")
        .run(&host)
        .await
        .unwrap();
    assert_eq!((added.added.len(), added.version), (1, 1));
    let addr = http::serve(router(host, ServerOptions::default())).await;
    let client = http::Client::new(addr);

    let (status, listed) = client.get("/datasets").await.pair();
    assert_eq!(status, 200);
    assert_eq!(listed["datasets"][0]["name"], "refunds");
    assert_eq!(listed["datasets"][0]["cases"], 1);
    assert_eq!(listed["datasets"][0]["version"], 1);
    let (status, one) = client.get("/datasets/refunds").await.pair();
    assert_eq!(status, 200);
    assert_eq!(one["cases"][0]["position"], 1);
    assert_eq!(one["cases"][0]["title"], "refund one two");
    let (status, empty) = client.get("/datasets/refunds?version=0").await.pair();
    assert_eq!(status, 200);
    assert_eq!(empty["cases"], json!([]));
    for (path, expect) in [
        ("/datasets/refunds?version=9", 404),
        ("/datasets/nope", 404),
        ("/datasets/refunds?versio=1", 400),
        ("/datasets/%20refunds", 404),
        ("/datasets/a%10b", 404),
    ] {
        let (status, body) = client.get(path).await.pair();
        assert_eq!(status, expect, "{path}: {body}");
    }

    // An experiment file over HTTP takes the dataset's cases; an unknown one is a 422.
    let unknown = client
        .post(
            "/experiments",
            &json!({ "name": "x", "datasets": [{ "name": "nope" }] }),
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert!(
        unknown.body.contains("no dataset named `nope`"),
        "{}",
        unknown.body
    );
    let file = json!({ "name": "from-refunds", "datasets": [{ "name": "refunds", "version": 1 }] });
    let started = client.post("/experiments", &file).await;
    assert_eq!(started.status, 202, "{}", started.body);
    let mut events = client.events("/experiments/from-refunds/events", &[]).await;
    let frames = to_the_end(&mut events).await;
    assert_eq!(frames.last().unwrap().json()["status"], "completed");
    let (_, experiment) = client.get("/experiments/from-refunds").await.pair();
    assert_eq!(
        experiment["definition"]["cases"][0]["dataset"],
        json!({ "name": "refunds", "version": 1 })
    );
    assert_eq!(experiment["runs"][0]["run"]["forkPosition"], 1);
}
