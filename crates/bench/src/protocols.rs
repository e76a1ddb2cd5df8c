//! `cargo xtask bench protocols`: what serving a turn through another protocol costs, against
//! the native event stream, in one run (issue 58's performance goals).
//!
//! One in-process server (`openharness_server::router` over a [`Host`] on a memory store, on
//! 127.0.0.1) hosts `chat`, a workflow whose one agent answers `{"reply": …}` JSON, its
//! scripted model streaming the reply a word per delta with no delay. Every turn starts a new
//! session through one of these surfaces, read with a plain HTTP/1.1 client over a raw socket
//! (one connection per request, `connection: close`):
//!
//! - **native**: `POST /sessions` (`{"workflow":"chat","input":…}`, answered `202` with the
//!   session id), then `GET /sessions/{id}/events` with `Accept: text/event-stream` from the
//!   session's start (the shared per-session hub), read to the end of the turn's last event
//!   (`workflow:completed`). The baseline.
//! - **ai-sdk**: `POST /api/chat`, the AI SDK UI message stream.
//! - **open-responses**: `POST /v1/responses` with `stream: true`.
//! - **ag-ui**: `POST /ag-ui/chat` with a `RunAgentInput` of a new thread.
//! - **a2a**: `POST /a2a/chat`, JSON-RPC `SendStreamingMessage` (`A2A-Version: 1.0`).
//!
//! The client splits what it reads into lines and counts each surface's text-delta frames
//! (`event: text:delta`; `"type":"text-delta"`; `event: response.output_text.delta`;
//! `"type":"TEXT_MESSAGE_CONTENT"`; `"artifactUpdate"`). A protocol's stream ends with its
//! chunked body's last chunk, which the server sends once the projection has written the
//! turn's end.
//!
//! - **Per streamed delta**: a reply of [`DELTAS`] words (so as many `text:delta` events). What
//!   is timed, the same way on every surface: from just before the client connects to send
//!   the request that starts the turn (for native, the `POST /sessions`; its
//!   `GET …/events` is part of the time) until it has read the end of the stream, divided by
//!   [`DELTAS`]. So each figure is the turn itself (the model's deltas recorded) plus the
//!   surface's work, on the same two threads. [`ROUNDS`] rounds, each running every surface
//!   once in an order rotated round by round, after one warm-up round; each surface's median
//!   is compared to native's median of the same run. Goal: ≤ 1.05×.
//! - **First delta**: [`FIRSTS`] short turns per surface (a reply of a few words), interleaved
//!   the same way; timed from just before connecting to send the request that starts the turn
//!   until the first text-delta frame is read (each stream is then read to its end before the
//!   next turn). p50 is shown; goal: p99 ≤ 1.2× native's p99.
//! - **Projection alone** (shown for information, to say where the end-to-end figures' time
//!   goes): the recorded events of one long turn, in process, through each projection and
//!   encoded as its frames, as the server writes them: native, each event as the hub encodes
//!   it once for all its streams (`serde_json` text, then the SSE frame); the protocols, their
//!   JSON serialised straight into the SSE frame; ai-sdk, `UiStream`;
//!   open-responses, `ResponseStream`; ag-ui, `AgUiStream` (without the server's state fold);
//!   a2a, `TaskStream` with each response in its JSON-RPC envelope (serialised together).
//!   [`ROUNDS`] rounds alternating the order; median ns per delta.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use openharness::adapter::{Recorded, Usage};
use openharness::builtin::{
    AgentCompleted, AgentStarted, Outcome, TextDelta, UserInput, WorkflowCompleted,
};
use openharness::host::Host;
use openharness::store::MemoryStore;
use openharness::{Envelope, Event as _, SessionId, Workflow, agent, event, handler, schemars};
use openharness_projection::{
    AgUiStream, ResponseHead, ResponseStream, TaskHead, TaskStream, UiStream,
};
use openharness_provider::{Reply, ScriptedProvider};
use openharness_server::{ServerOptions, router};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::http::{field, millis, percentile, post_expecting, serve};
use crate::report::{Fallible, Row, median, times};

/// Words (text deltas) of the long reply.
const DELTAS: usize = 2_000;
/// Timed rounds of the per-delta comparison (each surface once per round).
const ROUNDS: usize = 15;
/// Short turns per surface for the first-delta latency.
const FIRSTS: usize = 200;
/// The prompt that asks the model for the long reply; any other gets [`SHORT`].
const LONG: &str = "long";
/// The short reply.
const SHORT: &str = "Sure, here is a short answer.";

/// The assistant's reply, recorded once the agent call ends.
#[event]
#[derive(Debug, Clone)]
pub(crate) struct AssistantReplied {
    text: String,
}

/// The events the chat folds.
#[event]
pub(crate) enum ChatEvent {
    UserInput,
    AssistantReplied,
}

/// The conversation's lines.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Chat {
    lines: Vec<String>,
}

#[handler(ChatEvent)]
impl Chat {
    fn heard(&mut self, input: &UserInput) {
        self.lines.push(input.text.clone());
    }
    fn replied(&mut self, reply: &AssistantReplied) {
        self.lines.push(reply.text.clone());
    }
}

/// The agent's structured output; `reply` is streamed as the chat's text.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Answer {
    reply: String,
}

/// The one agent: answers every input.
pub(crate) struct Assistant;

#[agent(output = Answer, reply = reply, emits = [AssistantReplied])]
impl Assistant {
    fn prompt(&self, _state: &Chat, input: &UserInput) -> String {
        input.text.clone()
    }
    fn on_output(&self, out: Answer, _input: &UserInput) -> AssistantReplied {
        AssistantReplied { text: out.reply }
    }
}

/// A server hosting `chat`, whose model streams the long reply for [`LONG`] and [`SHORT`]
/// otherwise, each as its JSON (`{"reply": …}`) a word per delta, with no delay.
async fn server() -> Fallible<SocketAddr> {
    let story: String = (0..DELTAS).map(|i| format!("w{} ", i % 10)).collect();
    let long = json!({ "reply": story.trim_end() });
    let short = json!({ "reply": SHORT });
    let (long_text, short_text) = (long.to_string(), short.to_string());
    let provider = ScriptedProvider::new().fallback("assistant", move |request| {
        if request.prompt == LONG {
            Reply::output(long.clone()).text(&long_text)
        } else {
            Reply::output(short.clone()).text(&short_text)
        }
    });
    let workflow = Workflow::builder("chat")
        .initial_state(Chat::default())
        .agent(Assistant)
        .store(MemoryStore::new())
        .provider(provider)
        .build()?;
    let host = Host::new(MemoryStore::new()).workflow(workflow)?;
    serve(router(host, ServerOptions::default())).await
}

/// A way a turn is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    Native,
    AiSdk,
    OpenResponses,
    AgUi,
    A2a,
}

impl Surface {
    const ALL: [Self; 5] = [
        Self::Native,
        Self::AiSdk,
        Self::OpenResponses,
        Self::AgUi,
        Self::A2a,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Native => "native SSE",
            Self::AiSdk => "ai-sdk /api/chat",
            Self::OpenResponses => "open-responses",
            Self::AgUi => "ag-ui",
            Self::A2a => "a2a",
        }
    }

    /// Whether `line` (without its line break) begins a text-delta frame of this surface.
    fn is_delta(self, line: &[u8]) -> bool {
        match self {
            Self::Native => line == b"event: text:delta",
            Self::AiSdk => {
                line.starts_with(b"data: ") && contains(line, b"\"type\":\"text-delta\"")
            }
            Self::OpenResponses => line == b"event: response.output_text.delta",
            Self::AgUi => {
                line.starts_with(b"data: ") && contains(line, b"\"type\":\"TEXT_MESSAGE_CONTENT\"")
            }
            Self::A2a => line.starts_with(b"data: ") && contains(line, b"\"artifactUpdate\""),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// What one turn through a surface took.
struct Timed {
    /// From the request to the first text-delta frame read.
    first: Option<Duration>,
    /// From the request to the stream's end read.
    total: Duration,
    /// Text-delta frames read.
    deltas: usize,
}

/// Runs one turn with `prompt` through `surface`; `n` makes the request's ids unique.
async fn turn(addr: SocketAddr, surface: Surface, prompt: &str, n: usize) -> Fallible<Timed> {
    let started = Instant::now();
    let (path, body, extra) = match surface {
        Surface::Native => {
            let body = json!({ "workflow": "chat", "input": prompt }).to_string();
            let created = post_expecting(addr, "/sessions", &body, 202).await?;
            let session = field(&created, "session").ok_or("POST /sessions: no session id")?;
            let path = format!("/sessions/{session}/events");
            let socket = send(addr, "GET", &path, "", "accept: text/event-stream\r\n").await?;
            return read_turn(socket, surface, started).await;
        }
        Surface::AiSdk => (
            "/api/chat",
            json!({
                "id": SessionId::new().to_string(),
                "messages": [{ "id": format!("m-{n}"), "role": "user", "parts": [{ "type": "text", "text": prompt }] }],
                "trigger": "submit-message",
            }),
            "",
        ),
        Surface::OpenResponses => (
            "/v1/responses",
            json!({ "model": "chat", "input": prompt, "stream": true }),
            "",
        ),
        Surface::AgUi => (
            "/ag-ui/chat",
            json!({
                "threadId": SessionId::new().to_string(),
                "runId": format!("run-{n}"),
                "messages": [{ "id": format!("m-{n}"), "role": "user", "content": prompt }],
            }),
            "",
        ),
        Surface::A2a => (
            "/a2a/chat",
            json!({
                "jsonrpc": "2.0",
                "id": n,
                "method": "SendStreamingMessage",
                "params": { "message": {
                    "messageId": format!("m-{n}"),
                    "role": "ROLE_USER",
                    "parts": [{ "text": prompt }],
                } },
            }),
            "a2a-version: 1.0\r\n",
        ),
    };
    let socket = send(addr, "POST", path, &body.to_string(), extra).await?;
    read_turn(socket, surface, started).await
}

/// Connects and writes one request (`extra`: header lines, each ending in `\r\n`).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    extra: &str,
) -> Fallible<TcpStream> {
    let mut socket = TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n{extra}\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(head.as_bytes()).await?;
    Ok(socket)
}

/// Reads a turn's stream from `socket` to its end: for native, the blank line closing the
/// `workflow:completed` frame; for the others, the chunked body's last chunk (or the
/// connection's end).
async fn read_turn(mut socket: TcpStream, surface: Surface, started: Instant) -> Fallible<Timed> {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut start = 0;
    let mut head = true;
    let mut ending = false;
    let mut timed = Timed {
        first: None,
        total: Duration::ZERO,
        deltas: 0,
    };
    loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            if head || surface == Surface::Native {
                return Err(format!("{}: the stream closed early", surface.name()).into());
            }
            timed.total = started.elapsed();
            return Ok(timed);
        }
        buffer.drain(..start);
        start = 0;
        buffer.extend_from_slice(&chunk[..n]);
        if head {
            let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                continue;
            };
            if !buffer.starts_with(b"HTTP/1.1 200") {
                let answer = String::from_utf8_lossy(&buffer);
                return Err(format!("{}: {answer}", surface.name()).into());
            }
            head = false;
            start = end + 4;
        }
        while let Some(end) = buffer[start..].iter().position(|b| *b == b'\n') {
            let line = &buffer[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            start += end + 1;
            if surface.is_delta(line) {
                timed.deltas += 1;
                timed.first.get_or_insert_with(|| started.elapsed());
            } else if surface == Surface::Native {
                if line == b"event: workflow:completed" {
                    ending = true;
                } else if ending && line.is_empty() {
                    timed.total = started.elapsed();
                    return Ok(timed);
                }
            } else if line == b"0" {
                timed.total = started.elapsed();
                return Ok(timed);
            }
        }
    }
}

/// The surfaces in round `round`'s order: rotated, so none always runs first.
fn order(round: usize) -> impl Iterator<Item = Surface> {
    let all = Surface::ALL;
    (0..all.len()).map(move |i| all[(i + round) % all.len()])
}

/// Per-delta wall times (ns) and the delta frames each surface's last long turn showed.
async fn per_delta(addr: SocketAddr) -> Fallible<(Vec<Vec<f64>>, Vec<usize>)> {
    let mut per = vec![Vec::with_capacity(ROUNDS); Surface::ALL.len()];
    let mut seen = vec![0; Surface::ALL.len()];
    for round in 0..=ROUNDS {
        for surface in order(round) {
            let at = surface as usize;
            let timed = turn(addr, surface, LONG, round * 10 + at).await?;
            if timed.deltas == 0 {
                return Err(format!("{}: no text delta in a long turn", surface.name()).into());
            }
            seen[at] = timed.deltas;
            // Round 0 warms up.
            if round > 0 {
                per[at].push(timed.total.as_secs_f64() * 1e9 / DELTAS as f64);
            }
        }
    }
    Ok((per, seen))
}

/// Each surface's first-delta times, sorted.
async fn first_deltas(addr: SocketAddr) -> Fallible<Vec<Vec<Duration>>> {
    let mut firsts = vec![Vec::with_capacity(FIRSTS); Surface::ALL.len()];
    for round in 0..FIRSTS {
        for surface in order(round) {
            let at = surface as usize;
            let timed = turn(addr, surface, "Hi", 1_000_000 + round * 10 + at).await?;
            let first = timed
                .first
                .ok_or_else(|| format!("{}: no text delta in a short turn", surface.name()))?;
            firsts[at].push(first);
        }
    }
    for times in &mut firsts {
        times.sort();
    }
    Ok(firsts)
}

/// The recorded events of a long turn: the input, the agent's call streaming the reply's JSON
/// a word per delta, its end, the turn's end.
fn long_turn() -> Fallible<Vec<Recorded>> {
    let story: String = (0..DELTAS).map(|i| format!("w{} ", i % 10)).collect();
    let output = json!({ "reply": story.trim_end() });
    let text = output.to_string();
    let input = Envelope::typed(&UserInput::new(LONG), None)?;
    let cause = Some(input.id);
    let mut events = vec![input];
    let started = AgentStarted {
        agent: "assistant".into(),
        prompt: LONG.into(),
        reply: Some("/reply".into()),
        ..AgentStarted::default()
    };
    events.push(Envelope::typed(&started, cause)?);
    let mut rest = text.as_str();
    while !rest.is_empty() {
        // A word with the spaces after it, as the scripted model streams it.
        let end = rest.find(' ').map_or(rest.len(), |at| at + 1);
        let delta = TextDelta {
            agent: "assistant".into(),
            delta: rest[..end].to_owned(),
            attempt: 1,
        };
        events.push(Envelope::typed(&delta, cause)?);
        rest = &rest[end..];
    }
    let completed = AgentCompleted {
        agent: "assistant".into(),
        outcome: Outcome::Success,
        usage: Usage::default(),
        cost: None,
        error: None,
        output: Some(output),
    };
    events.push(Envelope::typed(&completed, cause)?);
    let done = WorkflowCompleted {
        reason: "idle".into(),
        open_requests: Vec::new(),
        errors: 0,
        queued: Vec::new(),
    };
    events.push(Envelope::typed(&done, None)?);
    Ok((0..)
        .zip(events)
        .map(|(seq, event)| Recorded { seq, event })
        .collect())
}

/// An SSE frame as the server writes it (its data holds no line break); its length.
fn sse(event: Option<&str>, id: Option<&str>, data: &str) -> usize {
    let mut out = String::with_capacity(data.len() + 48);
    for (field, value) in [("event", event), ("id", id)] {
        if let Some(value) = value {
            out.push_str(field);
            out.push_str(": ");
            out.push_str(value);
            out.push('\n');
        }
    }
    out.push_str("data: ");
    out.push_str(data);
    out.push_str("\n\n");
    std::hint::black_box(out).len()
}

/// An SSE frame whose data is `data` serialised straight into it, as the server writes the
/// protocols' frames; its length.
fn sse_json<T: serde::Serialize>(event: Option<&str>, id: Option<&str>, data: &T) -> usize {
    let mut out = Vec::with_capacity(256);
    for (field, value) in [("event", event), ("id", id)] {
        if let Some(value) = value {
            out.extend_from_slice(field.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
    }
    out.extend_from_slice(b"data: ");
    let _ = serde_json::to_writer(&mut out, data);
    out.extend_from_slice(b"\n\n");
    std::hint::black_box(out).len()
}

/// A JSON-RPC success answer, as the A2A routes write a stream response.
#[derive(serde::Serialize)]
struct Success<'a, R> {
    id: u64,
    jsonrpc: &'static str,
    result: &'a R,
}

/// `turn` through `surface`'s projection, encoded as its frames: the bytes, and the time.
fn project(surface: Surface, turn: &[Recorded]) -> (usize, Duration) {
    let started = Instant::now();
    let mut bytes = 0;
    match surface {
        Surface::Native => {
            for recorded in turn {
                let data = serde_json::to_string(recorded).unwrap_or_default();
                let seq = recorded.seq.to_string();
                bytes += sse(Some(recorded.event.name.as_ref()), Some(&seq), &data);
            }
        }
        Surface::AiSdk => {
            let mut stream = UiStream::new();
            for recorded in turn {
                let seq = recorded.seq.to_string();
                for chunk in stream.chunks(&recorded.event).0 {
                    bytes += sse_json(None, Some(&seq), &chunk);
                }
            }
        }
        Surface::OpenResponses => {
            let mut stream = ResponseStream::new(ResponseHead::new("resp_1_s", "chat", "s"));
            for recorded in turn {
                for event in stream.step(&recorded.event) {
                    bytes += sse_json(Some(event.kind), None, &event);
                }
            }
        }
        Surface::AgUi => {
            let mut stream = AgUiStream::new("s", "run-1", Vec::new(), Some(json!({})));
            for recorded in turn {
                for event in stream.step(&recorded.event, None) {
                    bytes += sse_json(None, None, &event);
                }
            }
        }
        Surface::A2a => {
            let mut stream = TaskStream::new(TaskHead::new("task_0_s", "s"));
            for recorded in turn {
                for (n, response) in (1..).zip(stream.step(&recorded.event)) {
                    let id = format!("{}.{n}", recorded.seq);
                    // The JSON-RPC envelope and the response serialised at once, as the
                    // server writes them.
                    let data = Success {
                        id: 1,
                        jsonrpc: "2.0",
                        result: &response,
                    };
                    bytes += sse_json(None, Some(&id), &data);
                }
            }
        }
    }
    (std::hint::black_box(bytes), started.elapsed())
}

/// Each projection's median ns per delta over a long turn, in process.
fn projection_alone() -> Fallible<Vec<f64>> {
    let turn = long_turn()?;
    let deltas = turn
        .iter()
        .filter(|recorded| recorded.event.name == TextDelta::NAME)
        .count();
    let mut per = vec![Vec::with_capacity(ROUNDS); Surface::ALL.len()];
    for round in 0..=ROUNDS {
        for surface in order(round) {
            let (_, took) = project(surface, &turn);
            if round > 0 {
                per[surface as usize].push(took.as_secs_f64() * 1e9 / deltas as f64);
            }
        }
    }
    Ok(per.into_iter().map(median).collect())
}

async fn suite() -> Fallible<Vec<Row>> {
    let addr = server().await?;
    let mut rows = Vec::new();
    eprintln!(
        "per delta: {ROUNDS} rounds (+1 warm-up) × {} surfaces, {DELTAS} deltas a turn…",
        Surface::ALL.len()
    );
    let (per, seen) = per_delta(addr).await?;
    let medians: Vec<f64> = per.into_iter().map(median).collect();
    let native = medians[Surface::Native as usize];
    for surface in &Surface::ALL[1..] {
        let ours = medians[*surface as usize];
        let ratio = ours / native.max(1e-9);
        rows.push(Row {
            what: format!("per delta, {} ({DELTAS} deltas)", surface.name()),
            measured: format!("{ours:.0} ns/delta"),
            baseline: format!("{native:.0} ns/delta native"),
            ratio: times(ratio),
            goal: "<= 1.05x",
            met: Some(ratio <= 1.05),
        });
    }
    rows.push(Row {
        what: "  delta frames of a long turn".into(),
        measured: Surface::ALL[1..]
            .iter()
            .map(|s| seen[*s as usize].to_string())
            .collect::<Vec<_>>()
            .join(" / "),
        baseline: format!("{} native", seen[Surface::Native as usize]),
        ratio: "-".into(),
        goal: "(info)",
        met: None,
    });

    eprintln!(
        "first delta: {FIRSTS} short turns × {} surfaces…",
        Surface::ALL.len()
    );
    let firsts = first_deltas(addr).await?;
    let native = &firsts[Surface::Native as usize];
    for surface in &Surface::ALL[1..] {
        let ours = &firsts[*surface as usize];
        for (name, p, goal) in [("p50", 0.5, None), ("p99", 0.99, Some(1.2))] {
            let (a, b) = (percentile(ours, p), percentile(native, p));
            let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
            rows.push(Row {
                what: format!("first delta {name}, {}", surface.name()),
                measured: millis(a),
                baseline: format!("{} native", millis(b)),
                ratio: times(ratio),
                goal: if goal.is_some() { "<= 1.2x" } else { "(info)" },
                met: goal.map(|g| ratio <= g),
            });
        }
    }

    eprintln!("projection alone: {ROUNDS} rounds, in process…");
    let alone = projection_alone()?;
    let native = alone[Surface::Native as usize];
    for surface in &Surface::ALL[1..] {
        let ours = alone[*surface as usize];
        rows.push(Row {
            what: format!("  projection alone, {}", surface.name()),
            measured: format!("{ours:.0} ns/delta"),
            baseline: format!("{native:.0} ns/delta native"),
            ratio: times(ours / native.max(1e-9)),
            goal: "(info)",
            met: None,
        });
    }
    Ok(rows)
}

/// Runs the suite and prints its table.
pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("protocols", crate::report::Missed::Shown, suite)
}
