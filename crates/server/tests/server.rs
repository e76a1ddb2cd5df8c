//! The server over real sockets on 127.0.0.1: sessions over HTTP, event streams cut at random
//! points and resumed with `Last-Event-ID` (every event exactly once, in order), a subscriber
//! that connects after the turn ended, the busy policy, the stream cap, and the error shape for
//! bad input.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::time::Duration;

use openharness::host::Host;
use openharness::prelude::*;
use openharness::provider::{Reply, ScriptedProvider};
use openharness::schemars;
use openharness::store::MemoryStore;
use openharness_server::{ServerOptions, router};
use openharness_testkit::http;
use openharness_testkit::random::SplitMix;
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};

// A workflow whose every input makes an agent stream a few words and count them, then a
// handler emits as many `tick:counted` events.

#[event]
#[derive(Debug, Clone)]
struct WordsCounted {
    words: u32,
}

#[event]
#[derive(Debug, Clone)]
struct TickCounted {
    left: u32,
}

#[event]
enum TickEvent {
    UserInput,
    InputReceived,
    WordsCounted,
    TickCounted,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
struct Ticks {
    inputs: Vec<String>,
    ticks: u32,
    answers: Vec<String>,
}

#[handler(TickEvent)]
impl Ticks {
    fn input(&mut self, input: &UserInput) -> Emit {
        self.inputs.push(input.text.clone());
        if input.text == "ask" {
            Emit::one(InputRequested::new("sure?"))
        } else {
            Emit::none()
        }
    }
    fn answered(&mut self, answer: &InputReceived) {
        self.answers.push(answer.text.clone());
    }
    fn counted(&mut self, counted: &WordsCounted) -> Emit {
        if counted.words > 0 {
            Emit::one(TickCounted {
                left: counted.words - 1,
            })
        } else {
            Emit::none()
        }
    }
    fn tick(&mut self, tick: &TickCounted) -> Emit {
        self.ticks += 1;
        if tick.left > 0 {
            Emit::one(TickCounted {
                left: tick.left - 1,
            })
        } else {
            Emit::none()
        }
    }
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Count {
    words: u32,
}

struct Counter;

#[agent(output = Count, emits = [WordsCounted])]
impl Counter {
    fn when(&self, state: &Ticks) -> bool {
        state.inputs.last().is_some_and(|text| text != "ask")
    }
    fn prompt(&self, _state: &Ticks, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Count, _input: &UserInput) -> WordsCounted {
        WordsCounted { words: out.words }
    }
}

fn host(delay: Duration) -> Host {
    host_on(MemoryStore::new(), delay)
}

fn host_on(store: impl openharness::Store, delay: Duration) -> Host {
    let provider = ScriptedProvider::new().fallback("counter", move |request| {
        let words = request.prompt.split_whitespace().count() as u32;
        Reply::output(json!({ "words": words }))
            .text(request.prompt.clone())
            .delay(delay)
    });
    let workflow = Workflow::builder("ticks")
        .initial_state(Ticks::default())
        .agent(Counter)
        .store(MemoryStore::new())
        .provider(provider)
        .build()
        .unwrap();
    Host::new(store).workflow(workflow).unwrap()
}

/// Holds every append back until a permit is given.
struct Gate(std::sync::Arc<tokio::sync::Semaphore>);

#[async_trait::async_trait]
impl openharness::store::StoreObserver for Gate {
    async fn before_append(&self, _: &SessionId, _: &[Envelope], _: u64) {
        let _permit = self.0.acquire().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_started_here_reads_as_empty_until_its_first_event_is_recorded() {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let store = openharness::store::Observed::new(MemoryStore::new(), Gate(gate.clone()));
    let addr = serve(host_on(store, Duration::ZERO), ServerOptions::default()).await;
    // A chat names its session: the post waits, unanswered, while nothing can be recorded.
    let chat = SessionId::new();
    let body = format!(
        r#"{{"id":"{chat}","messages":[{{"id":"m1","role":"user","parts":[{{"type":"text","text":"one two"}}]}}]}}"#
    );
    let mut posted =
        tokio::spawn(async move { request(addr, "POST", "/api/chat", Some(&body)).await });
    let session = chat.to_string();
    let path = format!("/sessions/{session}");
    let one = eventually(LIMIT, "the chat's session to exist", || async {
        match request(addr, "GET", &path, None).await {
            (200, summary) => Ok(summary),
            (status, _) => Err(status),
        }
    })
    .await;
    assert_eq!(one["len"].as_u64(), Some(0), "{one}");
    assert_eq!(one["runningHere"], true, "{one}");
    let events = format!("/sessions/{session}/events");
    let (status, page) = request(addr, "GET", &events, None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page, json!({ "events": [], "len": 0, "nextAfter": null }));
    // Nothing is acknowledged before it is recorded.
    assert!(
        tokio::time::timeout(Duration::from_millis(200), &mut posted)
            .await
            .is_err(),
        "the chat was answered before its input was recorded"
    );
    gate.add_permits(1);
    let (status, _) = posted.await.unwrap();
    assert_eq!(status, 200);
    let summary = wait_idle(addr, &session).await;
    assert!(summary["len"].as_u64().unwrap() > 0);
    let (_, page) = request(addr, "GET", &events, None).await;
    assert_eq!(page["events"][0]["name"], "workflow:started");
    // A session nobody started is still unknown.
    let (status, _) = request(
        addr,
        "GET",
        &format!("/sessions/{}/events", SessionId::new()),
        None,
    )
    .await;
    assert_eq!(status, 404);
}

async fn serve(host: Host, options: ServerOptions) -> SocketAddr {
    http::serve(router(host, options)).await
}

/// One request (always typed as JSON, as the server's clients send it): the status and the
/// body as JSON (or null).
async fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
    let answer = http::Client::new(addr)
        .call(method, path, Some(body.unwrap_or("")), &[])
        .await;
    (answer.status, answer.json_or_null())
}

/// A session's event stream, read through the kit: its status and head, then its events.
struct Stream {
    events: http::Events,
    pub headers: String,
    pub status: u16,
}

impl Stream {
    async fn open(client: &http::Client, session: &str, last_event_id: Option<u64>) -> Self {
        let resume = last_event_id.map(|id| id.to_string());
        let headers: Vec<(&str, &str)> = resume
            .iter()
            .map(|id| ("last-event-id", id.as_str()))
            .collect();
        let events = client
            .events(&format!("/sessions/{session}/events"), &headers)
            .await;
        Self {
            headers: events
                .headers
                .iter()
                .map(|(name, value)| format!("{name}: {value}\r\n"))
                .collect(),
            status: events.status,
            events,
        }
    }

    /// The next event: (seq, name, data); skips comments and the retry hint.
    async fn next(&mut self) -> (u64, String, Value) {
        self.next_within(LIMIT)
            .await
            .unwrap_or_else(|| panic!("an event within {LIMIT:?}"))
    }

    /// The next event, or `None` when none comes within `wait`.
    async fn next_within(&mut self, wait: Duration) -> Option<(u64, String, Value)> {
        loop {
            let frame = self
                .events
                .next_within(wait)
                .await?
                .expect("the stream ended");
            if frame.id.is_some() {
                let data = frame.json();
                return Some((frame.seq(), frame.event.unwrap_or_default(), data));
            }
        }
    }
}

/// Starts a session of `ticks` with `input` (202, the turn runs on); its id.
async fn start(addr: SocketAddr, input: &str) -> String {
    let body = json!({ "workflow": "ticks", "input": input }).to_string();
    let (status, created) = request(addr, "POST", "/sessions", Some(&body)).await;
    assert_eq!(status, 202, "{created}");
    created["session"].as_str().unwrap().to_owned()
}

/// The first 1,000 events of `session` as `GET /sessions/{id}/events` answers them (the page).
async fn events_of(addr: SocketAddr, session: &str) -> Value {
    let (status, page) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/events?limit=1000"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{page}");
    page
}

async fn wait_idle(addr: SocketAddr, session: &str) -> Value {
    let path = format!("/sessions/{session}");
    eventually(LIMIT, &format!("session {session} to go idle"), || async {
        let (_, summary) = request(addr, "GET", &path, None).await;
        if summary["status"] != "running" && summary["runningHere"] == false {
            Ok(summary)
        } else {
            Err(summary)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_http_streams_every_event_once_across_random_reconnects() {
    let addr = serve(host(Duration::from_millis(5)), ServerOptions::default()).await;
    let session = start(addr, "one two three four").await;
    let session_id = session.clone();

    // Turns keep coming while a subscriber reads a few events at a time and reconnects.
    let turns = tokio::spawn(async move {
        for n in 0..6 {
            wait_idle(addr, &session.clone()).await;
            let text = format!("{{\"text\":\"{}\"}}", "word ".repeat(40 + 10 * n));
            let (status, answer) = request(
                addr,
                "POST",
                &format!("/sessions/{session}/input"),
                Some(&text),
            )
            .await;
            assert_eq!(status, 202, "{answer}");
        }
        wait_idle(addr, &session).await;
        session
    });
    let client = http::Client::new(addr);
    let mut seen: Vec<u64> = Vec::new();
    let mut last = None;
    let mut random = SplitMix::new(0x2545_f491_4f6c_dd1d);
    let mut reconnects = 0;
    loop {
        let mut stream = Stream::open(&client, &session_id, last).await;
        assert_eq!(stream.status, 200);
        let headers = stream.headers.to_ascii_lowercase();
        assert!(headers.contains("x-accel-buffering: no"), "{headers}");
        assert!(
            headers.contains("content-type: text/event-stream"),
            "{headers}"
        );
        let take = 1 + random.below(3);
        for _ in 0..take {
            let Some((seq, name, data)) = stream.next_within(Duration::from_millis(500)).await
            else {
                break;
            };
            assert_eq!(data["seq"], seq, "the data carries the seq");
            assert_eq!(data["name"], name.as_str());
            seen.push(seq);
            last = Some(seq);
        }
        let mut done = false;
        if turns.is_finished() {
            let (_, page) = request(
                addr,
                "GET",
                &format!("/sessions/{session_id}/events?limit=1"),
                None,
            )
            .await;
            done = page["len"].as_u64() == last.map(|seq| seq + 1);
        }
        drop(stream);
        reconnects += 1;
        if done {
            break;
        }
        assert!(reconnects < 2_000, "bounded");
    }
    let session = turns.await.unwrap();
    let page = events_of(addr, &session).await;
    let len = page["len"].as_u64().unwrap();
    assert_eq!(
        seen,
        (0..len).collect::<Vec<_>>(),
        "every event once, in order"
    );
    assert!(reconnects >= 200, "the stream was cut {reconnects} times");

    // A subscriber that connects after everything ended gets everything.
    let mut late = Stream::open(&client, &session, None).await;
    for seq in 0..len {
        assert_eq!(late.next().await.0, seq);
    }

    // Pages, states, diffs and messages over the same session.
    let (status, first) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/events?limit=3"),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(first["events"].as_array().unwrap().len(), 3);
    assert_eq!(first["nextAfter"], 2);
    let (_, states) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/states?at=0,{len}"),
        None,
    )
    .await;
    assert_eq!(states[0]["state"]["ticks"], 0);
    assert_eq!(states[1]["state"]["ticks"], 4 + 40 + 50 + 60 + 70 + 80 + 90);
    let (_, diff) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/diff?from=0&to={len}"),
        None,
    )
    .await;
    assert!(!diff.as_array().unwrap().is_empty());
    let (_, messages) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/messages?shape=ui"),
        None,
    )
    .await;
    assert_eq!(messages[0]["role"], "user");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_sessions_open_requests_and_stream_caps_are_refused_clearly() {
    let addr = serve(
        host(Duration::from_millis(300)),
        // A short heartbeat: the server notices a closed stream when it next writes to it.
        ServerOptions::default()
            .max_streams_per_session(2)
            .heartbeat(Duration::from_millis(50)),
    )
    .await;
    let session = start(addr, "a b").await;

    // A second input while the turn runs: 409, nothing recorded.
    let (status, busy) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/input"),
        Some(r#"{"text":"c"}"#),
    )
    .await;
    assert_eq!(status, 409, "{busy}");
    assert_eq!(busy["error"]["code"], "session_busy");

    // Two streams are allowed, a third is 429.
    let client = http::Client::new(addr);
    let one = Stream::open(&client, &session, None).await;
    let two = Stream::open(&client, &session, None).await;
    let three = Stream::open(&client, &session, None).await;
    assert_eq!((one.status, two.status, three.status), (200, 200, 429));
    drop((one, two, three));
    // Closing streams frees their places.
    let (session_ref, client) = (&session, &client);
    let again = eventually(LIMIT, "a closed stream's place to be free", || async move {
        let again = Stream::open(client, session_ref, None).await;
        if again.status == 200 {
            Ok(again)
        } else {
            Err(again.status)
        }
    })
    .await;
    drop(again);

    wait_idle(addr, &session).await;
    let page = events_of(addr, &session).await;
    let inputs = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "user:input")
        .count();
    assert_eq!(inputs, 1, "the refused input was not recorded");

    // Waiting for a person: a wrong answer is 409, the right one continues.
    let (status, _) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/input"),
        Some(r#"{"text":"ask"}"#),
    )
    .await;
    assert_eq!(status, 202);
    let summary = wait_idle(addr, &session).await;
    assert_eq!(summary["status"], "waiting");
    let wrong = format!(r#"{{"request":"{}","text":"yes"}}"#, EventId::new());
    let (status, refused) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/answer"),
        Some(&wrong),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("request_not_open"))
    );
    let page = events_of(addr, &session).await;
    let request_id = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "input:requested")
        .unwrap()["id"]
        .clone();
    let right = format!(r#"{{"request":{request_id},"text":"yes"}}"#);
    let (status, _) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/answer"),
        Some(&right),
    )
    .await;
    assert_eq!(status, 202);
    let summary = wait_idle(addr, &session).await;
    assert_eq!(summary["status"], "idle");

    // A fork at a position runs on as a new session.
    let (status, forked) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/fork"),
        Some(r#"{"at":"position","position":3}"#),
    )
    .await;
    assert_eq!(status, 202, "{forked}");
    let child = forked["session"].as_str().unwrap().to_owned();
    let summary = wait_idle(addr, &child).await;
    assert_eq!(summary["parent"], session.as_str());

    // The parent cannot be deleted while the fork starts from it.
    let (status, refused) = request(addr, "DELETE", &format!("/sessions/{session}"), None).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("has_forks"))
    );
    // Positions beyond what JSON carries exactly are refused.
    let (status, _) = request(
        addr,
        "GET",
        &format!("/sessions/{session}/state?at=9007199254740992"),
        None,
    )
    .await;
    assert_eq!(status, 400);

    // Deleting it.
    let (status, _) = request(addr, "DELETE", &format!("/sessions/{child}"), None).await;
    assert_eq!(status, 204);
    let (status, gone) = request(addr, "GET", &format!("/sessions/{child}"), None).await;
    assert_eq!(
        (status, gone["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_inside_an_agent_call_runs_the_call_again_and_finishes() {
    let addr = serve(host(Duration::ZERO), ServerOptions::default()).await;
    let session = start(addr, "one two three").await;
    let parent = wait_idle(addr, &session).await;
    assert_eq!(parent["status"], "idle", "{parent}");
    let page = events_of(addr, &session).await;
    let events = page["events"].as_array().unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    // Right after the counter's `agent:started`, and among its deltas: inside the call.
    let started = names.iter().position(|n| *n == "agent:started").unwrap();
    let delta = names.iter().position(|n| *n == "text:delta").unwrap();
    assert!(delta > started, "{names:?}");
    for position in [started + 1, delta + 1] {
        let (status, forked) = request(
            addr,
            "POST",
            &format!("/sessions/{session}/fork"),
            Some(&format!(r#"{{"at":"position","position":{position}}}"#)),
        )
        .await;
        assert_eq!(status, 202, "{forked}");
        let child = forked["session"].as_str().unwrap().to_owned();
        let summary = wait_idle(addr, &child).await;
        // It finished: not idle at once with the call left open, but the call run again.
        assert_eq!(summary["status"], "idle", "fork at {position}: {summary}");
        let (_, state) = request(addr, "GET", &format!("/sessions/{child}/state"), None).await;
        assert_eq!(state["state"]["ticks"], 3, "fork at {position}: {state}");
        let page = events_of(addr, &child).await;
        let names: Vec<&str> = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names[..3],
            ["session:forked", "agent:completed", "agent:started"],
            "fork at {position}"
        );
        assert_eq!(
            page["events"][1]["payload"]["outcome"], "interrupted",
            "fork at {position}"
        );
        assert_eq!(names.last(), Some(&"workflow:completed"));
    }
    // A fork point the parent does not have is not found, and nothing is started: the answer
    // comes once the fork has recorded its first event, or with the reason it could not.
    let before = request(addr, "GET", "/sessions", None).await.1["sessions"]
        .as_array()
        .map_or(0, Vec::len);
    let (status, refused) = request(
        addr,
        "POST",
        &format!("/sessions/{session}/fork"),
        Some(r#"{"at":"nth","name":"agent:started","n":99}"#),
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (404, Some("no_fork_point")),
        "{refused}"
    );
    let after = request(addr, "GET", "/sessions", None).await.1["sessions"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(after, before, "a failed fork left a session behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_answered_in_the_error_shape() {
    let addr = serve(
        host(Duration::ZERO),
        ServerOptions::default().body_limit(1024),
    )
    .await;
    let unknown = SessionId::new();
    let cases: Vec<(&str, String, Option<String>, u16, &str)> = vec![
        (
            "GET",
            format!("/sessions/{unknown}"),
            None,
            404,
            "not_found",
        ),
        (
            "GET",
            format!("/sessions/{unknown}/events"),
            None,
            404,
            "not_found",
        ),
        (
            "GET",
            format!("/sessions/{}/state", "x".repeat(201)),
            None,
            400,
            "bad_request",
        ),
        (
            "GET",
            format!("/sessions/{unknown}/state?at=minus-one"),
            None,
            400,
            "bad_request",
        ),
        (
            "POST",
            "/sessions".into(),
            Some("{not json".into()),
            400,
            "bad_request",
        ),
        (
            "POST",
            "/sessions".into(),
            Some(r#"{"workflow":"diary"}"#.into()),
            404,
            "not_found",
        ),
        (
            "POST",
            "/sessions".into(),
            Some(format!(
                r#"{{"workflow":"ticks","input":"{}"}}"#,
                "x".repeat(4096)
            )),
            413,
            "payload_too_large",
        ),
        ("GET", "/nowhere".into(), None, 404, "not_found"),
        (
            "GET",
            "/sessions?status=asleep".into(),
            None,
            400,
            "bad_request",
        ),
        (
            "GET",
            "/sessions?sort=random".into(),
            None,
            400,
            "bad_request",
        ),
        (
            "GET",
            "/sessions?after=nonsense".into(),
            None,
            400,
            "bad_request",
        ),
        (
            "GET",
            "/sessions?colour=red".into(),
            None,
            400,
            "bad_request",
        ),
        ("GET", "/sessions?limit=0".into(), None, 400, "bad_request"),
        (
            "GET",
            "/sessions?limit=1001".into(),
            None,
            400,
            "bad_request",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let (got, answer) = request(addr, method, &path, body.as_deref()).await;
        assert_eq!(got, status, "{method} {path}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{method} {path}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    let (status, health) = request(addr, "GET", "/health", None).await;
    assert_eq!((status, health["status"].as_str()), (200, Some("ok")));
}

/// A GET with extra header lines; the status.
async fn get_with(addr: SocketAddr, path: &str, extra: &str) -> u16 {
    raw(addr, "GET", path, extra).await.0
}

/// A bodiless request with extra header lines; the status and the response's head,
/// lowercased.
async fn raw(addr: SocketAddr, method: &str, path: &str, extra: &str) -> (u16, String) {
    let headers: Vec<(&str, &str)> = extra
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
        .collect();
    let answer = http::Client::new(addr)
        .call(method, path, None, &headers)
        .await;
    let head: String = answer
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    (answer.status, head.to_ascii_lowercase())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_unless_origins_are_configured() {
    let preflight = "origin: http://localhost:5173\r\naccess-control-request-method: POST\r\n\
                     access-control-request-headers: authorization, content-type\r\n";
    let from_page = "origin: http://localhost:5173\r\n";

    // Off by default: no CORS header on any answer, so a page elsewhere cannot read it.
    let addr = serve(host(Duration::ZERO), ServerOptions::default()).await;
    let (_, head) = raw(addr, "OPTIONS", "/sessions", preflight).await;
    assert!(!head.contains("access-control-allow-origin"), "{head}");
    let (status, head) = raw(addr, "GET", "/sessions", from_page).await;
    assert_eq!(status, 200);
    assert!(!head.contains("access-control-allow-origin"), "{head}");

    // Configured, with API keys on: a preflight needs no key, an allowed origin reads answers
    // and refusals, another origin gets no grant.
    let options = ServerOptions::default()
        .api_keys(openharness_server::parse_api_keys("k1").unwrap())
        .cors(
            "http://localhost:5173, https://app.example.com"
                .parse()
                .unwrap(),
        );
    let addr = serve(host(Duration::ZERO), options).await;
    let (status, head) = raw(addr, "OPTIONS", "/sessions", preflight).await;
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("access-control-allow-origin: http://localhost:5173"),
        "{head}"
    );
    assert!(head.contains("authorization"), "{head}");
    assert!(head.contains("last-event-id"), "{head}");
    assert!(head.contains("x-openharness-approvals"), "{head}");
    let (status, head) = raw(addr, "GET", "/sessions", from_page).await;
    assert_eq!(status, 401);
    assert!(
        head.contains("access-control-allow-origin: http://localhost:5173"),
        "a refusal is readable by the page: {head}"
    );
    let keyed = format!("{from_page}authorization: Bearer k1\r\n");
    let (status, head) = raw(addr, "GET", "/sessions", &keyed).await;
    assert_eq!(status, 200);
    assert!(head.contains("access-control-allow-origin"), "{head}");
    let (_, head) = raw(
        addr,
        "GET",
        "/sessions",
        "origin: https://evil.example\r\nauthorization: Bearer k1\r\n",
    )
    .await;
    assert!(!head.contains("access-control-allow-origin"), "{head}");

    // Origins that cannot match a browser's are refused when parsed.
    for bad in ["localhost:5173", "https://app.example.com/", "", "http://"] {
        assert!(
            bad.parse::<openharness_server::CorsOrigins>().is_err(),
            "{bad}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_api_keys_every_route_but_health_needs_one() {
    let keys = openharness_server::parse_api_keys(
        "# the team's keys\nk1-plain\nsha256:a4a5a6c4f3f8ec2b15bf4b5d2b1b95bbf5e8f21e5ca2a1a26be7c6a8ff3c5a1b\n",
    )
    .unwrap();
    assert_eq!(keys.len(), 2);
    assert!(openharness_server::parse_api_keys("sha256:nothex").is_err());
    let addr = serve(
        host(Duration::ZERO),
        ServerOptions::default().api_keys(keys),
    )
    .await;
    assert_eq!(get_with(addr, "/health", "").await, 200);
    assert_eq!(get_with(addr, "/sessions", "").await, 401);
    assert_eq!(get_with(addr, "/sessions/any/export", "").await, 401);
    assert_eq!(
        get_with(
            addr,
            "/sessions/any/export",
            "authorization: Bearer k1-plain\r\n"
        )
        .await,
        404
    );
    assert_eq!(
        get_with(addr, "/sessions", "authorization: Bearer wrong\r\n").await,
        401
    );
    assert_eq!(
        get_with(addr, "/sessions", "authorization: Bearer k1-plain\r\n").await,
        200
    );
    assert_eq!(
        get_with(addr, "/sessions", "x-api-key: k1-plain\r\n").await,
        200
    );
    // As the Everruns SDK sends it (and /v1 takes it): the bare key, or any case of `Bearer`.
    assert_eq!(
        get_with(addr, "/sessions", "authorization: k1-plain\r\n").await,
        200
    );
    assert_eq!(
        get_with(addr, "/sessions", "authorization: bearer k1-plain\r\n").await,
        200
    );
    assert_eq!(
        get_with(addr, "/sessions", "authorization: Bearer\r\n").await,
        401
    );
    let (status, refused) = request(addr, "GET", "/sessions", None).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );
    assert!(!refused.to_string().contains("k1-plain"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_and_methods_answer_the_json_error_shape() {
    let addr = serve(host(Duration::ZERO), ServerOptions::default()).await;
    let (status, body) = request(addr, "GET", "/nowhere", None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("not_found"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/nowhere"),
        "{body}"
    );
    let (status, body) = request(addr, "DELETE", "/health", None).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`/health` does not take DELETE"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_lists_every_route_and_its_references_resolve() {
    let addr = serve(
        host(Duration::ZERO),
        ServerOptions::default().api_keys([openharness_server::ApiKeyHash::of("k")]),
    )
    .await;
    // Served without a key, like /health.
    let (status, doc) = request(addr, "GET", "/openapi.json", None).await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/health",
        "/sessions",
        "/sessions/{id}",
        "/sessions/{id}/input",
        "/sessions/{id}/answer",
        "/sessions/{id}/resume",
        "/sessions/{id}/cancel",
        "/sessions/{id}/events",
        "/sessions/{id}/state",
        "/sessions/{id}/states",
        "/sessions/{id}/diff",
        "/sessions/{id}/messages",
        "/sessions/{id}/fork",
        "/sessions/{id}/export",
        "/sessions/{id}/feedback",
        "/sessions/{id}/annotations",
        "/api/chat",
        "/api/chat/{id}/stream",
        "/api/chat/{id}/stop",
        "/api/workflow",
        "/v1/responses",
        "/v1/responses/{id}",
        "/v1/responses/{id}/cancel",
        "/v1/responses/{id}/input_items",
        "/ag-ui/{workflow}",
        "/ag-ui/{workflow}/{thread}/stop",
        "/ag-ui/{workflow}/{thread}/events",
        "/.well-known/agent-card.json",
        "/a2a/{target}/.well-known/agent-card.json",
        "/a2a/{target}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is missing");
    }
    #[cfg(feature = "eval")]
    for path in [
        "/experiments",
        "/experiments/{name}",
        "/experiments/{name}/events",
        "/experiments/{name}/cancel",
        "/datasets",
        "/datasets/{name}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} is missing");
    }
    #[cfg(feature = "eval")]
    assert!(doc["paths"]["/experiments"].get("post").is_some());
    assert!(openharness_testkit::openapi::assert_references_resolve(&doc) > 20);
    assert!(doc["components"]["schemas"].get("SessionSummary").is_some());
}

/// Fails every listing of the sessions, as a broken disk or a lost database would.
struct Unlistable;

#[async_trait::async_trait]
impl openharness::store::StoreObserver for Unlistable {
    async fn before(
        &self,
        call: openharness::store::StoreCall<'_>,
    ) -> Result<(), openharness::StoreError> {
        match call {
            openharness::store::StoreCall::Sessions => Err(openharness::StoreError::Invalid(
                "the disk under the sessions is on fire".into(),
            )),
            _ => Ok(()),
        }
    }
}

#[tokio::test]
async fn a_store_failure_is_a_500_that_names_the_store_and_its_cause() {
    let addr = serve(
        host_on(
            openharness::store::Observed::new(MemoryStore::new(), Unlistable),
            Duration::ZERO,
        ),
        ServerOptions::default(),
    )
    .await;
    let (status, body) = request(addr, "GET", "/sessions", None).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "internal");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("memory"), "{message}");
    assert!(message.contains("on fire"), "{message}");
    assert_eq!(message.matches("on fire").count(), 1, "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_list_is_searched_filtered_and_paged_over_http() {
    let addr = serve(host(Duration::ZERO), ServerOptions::default()).await;
    let mut sessions = Vec::new();
    for text in ["three little words", "ask", "two words"] {
        let id = start(addr, text).await;
        wait_idle(addr, &id).await;
        sessions.push(id);
    }
    let (status, page) = request(addr, "GET", "/sessions?search=LITTLE", None).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["total"], 1);
    assert_eq!(page["sessions"][0]["id"], sessions[0].as_str());
    assert_eq!(page["sessions"][0]["title"], "three little words");
    assert_eq!(page["sessions"][0]["agents"], json!(["counter"]));
    let (_, waiting) = request(
        addr,
        "GET",
        "/sessions?status=waiting,failed&openRequest=true",
        None,
    )
    .await;
    assert_eq!(waiting["total"], 1, "{waiting}");
    assert_eq!(waiting["sessions"][0]["id"], sessions[1].as_str());
    assert_eq!(waiting["sessions"][0]["openRequests"], 1);
    // Pages of one, newest first, cover all three once.
    let mut seen = Vec::new();
    let mut path = "/sessions?sort=newest&limit=1".to_owned();
    loop {
        let (status, page) = request(addr, "GET", &path, None).await;
        assert_eq!(status, 200, "{page}");
        seen.push(page["sessions"][0]["id"].as_str().unwrap().to_owned());
        match page["nextAfter"].as_str() {
            Some(after) => path = format!("/sessions?sort=newest&limit=1&after={after}"),
            None => break,
        }
    }
    sessions.reverse();
    assert_eq!(seen, sessions);
    // An empty cursor is the first page.
    let (status, first) = request(addr, "GET", "/sessions?sort=newest&limit=1&after=", None).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["sessions"][0]["id"], seen[0].as_str());
    // Without parameters: every session, as before, now with totals.
    let (_, all) = request(addr, "GET", "/sessions", None).await;
    assert_eq!(all["sessions"].as_array().unwrap().len(), 3);
    assert!(all["nextAfter"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_from_the_page_takes_an_input_or_an_edited_state_and_is_compared_with_its_parent() {
    let addr = serve(host(Duration::ZERO), ServerOptions::default()).await;
    let parent = start(addr, "one two").await;
    wait_idle(addr, &parent).await;

    // Forked before the first input (position 1: after `workflow:started`): another input
    // in its place.
    let (status, forked) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":1,"input":"three four five"}"#),
    )
    .await;
    assert_eq!(status, 202, "{forked}");
    let child = forked["session"].as_str().unwrap().to_owned();
    wait_idle(addr, &child).await;
    let (_, state) = request(addr, "GET", &format!("/sessions/{child}/state"), None).await;
    assert_eq!(
        state["state"]["inputs"],
        json!(["three four five"]),
        "{state}"
    );
    let (status, compared) = request(
        addr,
        "GET",
        &format!("/sessions/{parent}/compare?with={child}"),
        None,
    )
    .await;
    assert_eq!(status, 200, "{compared}");
    assert_eq!(compared["ancestor"]["session"], parent.as_str());
    assert!(compared["agree"].as_u64().unwrap() >= 1, "{compared}");
    assert!(
        compared["divergence"]["statePatch"].is_array(),
        "{compared}"
    );

    // Forked from an edited state.
    let (status, forked) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":2,"stateEdit":{"answers":["edited"]}}"#),
    )
    .await;
    assert_eq!(status, 202, "{forked}");
    let edited = forked["session"].as_str().unwrap().to_owned();
    wait_idle(addr, &edited).await;
    let (_, state) = request(addr, "GET", &format!("/sessions/{edited}/state"), None).await;
    assert_eq!(state["state"]["answers"], json!(["edited"]), "{state}");
    let (_, compared) = request(
        addr,
        "GET",
        &format!("/sessions/{parent}/compare?with={edited}"),
        None,
    )
    .await;
    assert_eq!(compared["agree"], 2, "{compared}");
    assert_eq!(
        compared["divergence"]["b"]["name"], "session:forked",
        "{compared}"
    );
    // Each side's event is placed where it was recorded: the fork's `session:forked` is its
    // own position 1, the parent's event its position 3.
    assert_eq!(
        compared["divergence"]["bAt"],
        json!({ "session": edited, "position": 1 }),
        "{compared}"
    );
    assert_eq!(
        compared["divergence"]["aAt"],
        json!({ "session": parent, "position": 3 }),
        "{compared}"
    );

    // Bad requests are refused in the error shape.
    for (body, what) in [
        (r#"{"at":"position","position":1,"input":5}"#, "input"),
        (
            r#"{"at":"position","position":1,"stateEdit":[1]}"#,
            "stateEdit",
        ),
        (r#"{"at":"nowhere"}"#, "fork point"),
    ] {
        let (status, answer) = request(
            addr,
            "POST",
            &format!("/sessions/{parent}/fork"),
            Some(body),
        )
        .await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(
            answer["error"]["message"].as_str().unwrap().contains(what),
            "{body}: {answer}"
        );
    }
    let (status, answer) = request(
        addr,
        "GET",
        &format!("/sessions/{parent}/compare?with=no-such-session"),
        None,
    )
    .await;
    assert_eq!(status, 404, "{answer}");
}

#[tokio::test]
async fn a_session_recorded_by_other_code_says_so_and_one_recorded_by_this_code_does_not() {
    let store = MemoryStore::new();
    let addr = serve(
        host_on(store.clone(), Duration::ZERO),
        ServerOptions::default(),
    )
    .await;
    let today = start(addr, "one two").await;
    wait_idle(addr, &today).await;
    let (status, summary) = request(addr, "GET", &format!("/sessions/{today}"), None).await;
    assert_eq!(status, 200, "{summary}");
    assert!(summary.get("codeChange").is_none(), "{summary}");

    // The same workflow's session as an older build recorded it: another fingerprint.
    let recorded = store.all_events(&today.parse().unwrap()).await.unwrap();
    let mut events = recorded;
    let today_code = events[0].payload["code"].as_str().unwrap().to_owned();
    events[0].payload["code"] = json!("00000000000000aa");
    events[0].payload["version"] = json!("0.9.0");
    let older = SessionId::new();
    store.append(&older, &events, 0).await.unwrap();
    let (status, summary) = request(addr, "GET", &format!("/sessions/{older}"), None).await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(
        summary["codeChange"]["recorded"], "00000000000000aa",
        "{summary}"
    );
    assert_eq!(
        summary["codeChange"]["recordedVersion"], "0.9.0",
        "{summary}"
    );
    assert_eq!(
        summary["codeChange"]["today"],
        today_code.as_str(),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_runs_with_a_provider_the_server_offers_and_another_name_is_refused() {
    let other = ScriptedProvider::new().fallback("counter", |_| {
        Reply::output(json!({ "words": 1 })).text("the other model")
    });
    let options = ServerOptions::default().fork_provider("other", std::sync::Arc::new(other));
    let addr = serve(host(Duration::ZERO), options).await;
    let (status, offered) = request(addr, "GET", "/providers", None).await;
    assert_eq!(status, 200, "{offered}");
    assert_eq!(offered, json!({ "providers": [{ "name": "other" }] }));

    let parent = start(addr, "one two three").await;
    wait_idle(addr, &parent).await;
    // Forked before the input, with another input and the other model: the other model
    // answers the fork's call.
    let (status, forked) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":1,"input":"four five six seven","provider":"other"}"#),
    )
    .await;
    assert_eq!(status, 202, "{forked}");
    let child = forked["session"].as_str().unwrap().to_owned();
    wait_idle(addr, &child).await;
    let page = events_of(addr, &child).await;
    let outputs: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "agent:completed")
        .map(|e| &e["payload"]["output"])
        .collect();
    assert_eq!(outputs, [&json!({ "words": 1 })], "{page}");
    // The parent's own model counted its three words.
    let page = events_of(addr, &parent).await;
    assert!(
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == "agent:completed"
                && e["payload"]["output"] == json!({ "words": 3 })),
        "{page}"
    );

    // A name the server does not offer is a 404 that says what is offered; no name a 400.
    let (status, refused) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":1,"provider":"gpt-9"}"#),
    )
    .await;
    assert_eq!(status, 404, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no provider named `gpt-9`: this server offers other"),
        "{refused}"
    );
    let (status, refused) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":1,"provider":7}"#),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_exported_as_the_chained_jsonl_the_cli_writes_with_its_ancestors() {
    use openharness::store::jsonl;
    let store = MemoryStore::new();
    let addr = serve(
        host_on(store.clone(), Duration::ZERO),
        ServerOptions::default(),
    )
    .await;
    let parent = start(addr, "one two").await;
    wait_idle(addr, &parent).await;
    let (status, forked) = request(
        addr,
        "POST",
        &format!("/sessions/{parent}/fork"),
        Some(r#"{"at":"position","position":1,"input":"three four five"}"#),
    )
    .await;
    assert_eq!(status, 202, "{forked}");
    let child = forked["session"].as_str().unwrap().to_owned();
    wait_idle(addr, &child).await;

    let answer = http::Client::new(addr)
        .get(&format!("/sessions/{child}/export"))
        .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert_eq!(answer.header("content-type"), Some("application/x-ndjson"));
    assert_eq!(
        answer.header("content-disposition"),
        Some(format!("attachment; filename=\"{child}.jsonl\"").as_str())
    );
    // Byte for byte what `openharness export` writes for the same store: the parent's block,
    // then the fork's.
    let child_id: SessionId = child.parse().unwrap();
    let mut written = Vec::new();
    jsonl::export_with_ancestors(&store, &child_id, &mut written)
        .await
        .unwrap();
    assert_eq!(answer.body.as_bytes(), written.as_slice());
    let lines: Vec<Value> = answer
        .body
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(lines[0]["session"], parent.as_str());
    assert_eq!(lines[0]["chain"], "sha256");
    for line in lines.iter().filter(|line| line.get("seq").is_some()) {
        assert!(
            line["chain"].as_str().is_some_and(|h| h.len() == 64),
            "{line}"
        );
    }

    // It imports with its chains checked, each session whole.
    let into = MemoryStore::new();
    let summary = jsonl::import(&into, answer.body.as_bytes()).await.unwrap();
    let blocks: Vec<(String, bool)> = summary
        .blocks
        .iter()
        .map(|block| (block.session.to_string(), block.chain.is_some()))
        .collect();
    assert_eq!(blocks, [(parent.clone(), true), (child.clone(), true)]);
    for session in [&parent, &child] {
        let id: SessionId = session.parse().unwrap();
        assert_eq!(
            into.all_events(&id).await.unwrap(),
            store.all_events(&id).await.unwrap()
        );
    }
    // A changed byte in an event line is found by the chain, not imported.
    let changed = answer
        .body
        .replacen("three four five", "three four fivf", 1);
    assert_ne!(changed, answer.body);
    let refused = jsonl::import(&MemoryStore::new(), changed.as_bytes()).await;
    assert!(
        matches!(refused, Err(jsonl::TransferError::Chain { .. })),
        "{refused:?}"
    );

    // An unknown session is the 404 every route answers for it.
    let (status, unknown) = request(addr, "GET", "/sessions/no-such-session/export", None).await;
    let (_, listed) = request(addr, "GET", "/sessions/no-such-session", None).await;
    assert_eq!(status, 404, "{unknown}");
    assert_eq!(unknown["error"]["code"], "not_found");
    assert_eq!(unknown, listed);
    // A fork whose parent is gone from the store cannot be exported to import on its own.
    store.clear(&parent.parse().unwrap()).await.unwrap();
    let (status, orphan) = request(addr, "GET", &format!("/sessions/{child}/export"), None).await;
    assert_eq!(status, 409, "{orphan}");
    assert_eq!(orphan["error"]["code"], "missing_parent");
}

#[tokio::test]
async fn annotations_and_online_scores_are_recorded_read_and_listed_over_http() {
    let host = host(Duration::ZERO);
    let addr = serve(host.clone(), ServerOptions::default()).await;
    let mut sessions = Vec::new();
    for text in ["one two", "three four five", "six"] {
        let id = start(addr, text).await;
        wait_idle(addr, &id).await;
        sessions.push(id);
    }
    let (first, second, third) = (&sessions[0], &sessions[1], &sessions[2]);
    // Online scores, as a scorer of `serve --online-scorers` records them.
    for (id, value) in [(first, 0.9), (second, 0.1)] {
        let session: SessionId = id.parse().unwrap();
        let len = host.session(&session).await.unwrap().len;
        let score = openharness_host::feedback::TurnScored {
            scorer: "helpful".into(),
            turn: len,
            first_seq: 1,
            value: Some(value),
            passed: value > 0.5,
            better: openharness_host::feedback::Better::Higher,
            detail: None,
            judge_session: None,
        };
        host.record_scores(&session, &[score]).await.unwrap();
    }
    let (status, said) = request(
        addr,
        "POST",
        &format!("/sessions/{second}/annotations"),
        Some(r#"{"by":"ana@example.com","thumbs":"down","labels":["too-short"],"note":"says nothing"}"#),
    )
    .await;
    assert_eq!(status, 201, "{said}");
    assert_eq!(said["by"], "ana@example.com");
    assert_eq!(said["thumbs"], "down");
    assert!(said["id"].is_string() && said["at"].is_string(), "{said}");
    let (status, feedback) =
        request(addr, "GET", &format!("/sessions/{second}/feedback"), None).await;
    assert_eq!(status, 200, "{feedback}");
    assert_eq!(feedback["annotations"][0]["id"], said["id"]);
    assert_eq!(feedback["annotations"][0]["labels"], json!(["too-short"]));
    assert_eq!(feedback["scores"][0]["scorer"], "helpful");
    assert_eq!(feedback["scores"][0]["value"], 0.1);
    // The session's own events did not move.
    let (_, summary) = request(addr, "GET", &format!("/sessions/{second}"), None).await;
    assert_eq!(summary["scores"]["helpful"], 0.1, "{summary}");
    assert_eq!(summary["annotations"]["down"], 1, "{summary}");
    let (_, events) = request(addr, "GET", &format!("/sessions/{second}/events"), None).await;
    assert_eq!(
        events["events"].as_array().unwrap().len() as u64,
        summary["len"].as_u64().unwrap()
    );

    // Lists: the worst first; the annotation queue; by label.
    let ids = |page: &Value| -> Vec<String> {
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (status, worst) = request(
        addr,
        "GET",
        "/sessions?scorer=helpful&sort=lowestScore",
        None,
    )
    .await;
    assert_eq!(status, 200, "{worst}");
    assert_eq!(ids(&worst), [second.clone(), first.clone()]);
    let (_, good) = request(addr, "GET", "/sessions?scorer=helpful&minScore=0.5", None).await;
    assert_eq!(ids(&good), std::slice::from_ref(first));
    let (_, queue) = request(addr, "GET", "/sessions?annotated=false&sort=oldest", None).await;
    assert_eq!(ids(&queue), [first.clone(), third.clone()]);
    let (_, labelled) = request(addr, "GET", "/sessions?label=too-short", None).await;
    assert_eq!(ids(&labelled), std::slice::from_ref(second));

    // Bad input: the error shape, nothing recorded.
    for (path, body, want) in [
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana"}"#,
            400,
        ),
        (
            format!("/sessions/{first}/annotations"),
            r#"{"thumbs":"up"}"#,
            422,
        ),
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana","thumbs":"sideways"}"#,
            422,
        ),
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana","thumbs":"up","turn":999}"#,
            400,
        ),
        // JSON's `999.0` is the whole number 999 (no turn ended there); `1.5` is no turn.
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana","thumbs":"up","turn":999.0}"#,
            400,
        ),
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana","thumbs":"up","turn":1.5}"#,
            422,
        ),
        (
            format!("/sessions/{first}/annotations"),
            r#"{"by":"ana","note":"x","extra":1}"#,
            422,
        ),
        (
            "/sessions/nope/annotations".to_owned(),
            r#"{"by":"ana","thumbs":"up"}"#,
            404,
        ),
    ] {
        let (status, body) = request(addr, "POST", &path, Some(body)).await;
        assert_eq!(status, want, "{path}: {body}");
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    let (status, refused) = request(addr, "GET", "/sessions?minScore=0.5", None).await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("scorer")
    );
    let (_, feedback) = request(addr, "GET", &format!("/sessions/{first}/feedback"), None).await;
    assert_eq!(feedback["annotations"], json!([]));
    // Nobody annotated it: its summary says nothing of annotations.
    let (_, plain) = request(addr, "GET", &format!("/sessions/{first}"), None).await;
    assert!(plain.get("annotations").is_none(), "{plain}");

    // Deleting the session deletes what was said of it.
    let (status, _) = request(addr, "DELETE", &format!("/sessions/{second}"), None).await;
    assert_eq!(status, 204);
    let log = openharness_host::feedback::feedback_log(&second.parse().unwrap()).unwrap();
    assert!(host.store().all_events(&log).await.unwrap().is_empty());
}
