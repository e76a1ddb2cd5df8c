//! The load itself, the same for every server: N sessions each posting turns back to back for
//! a fixed window, M followers per session reading its event stream, and what they saw.
//!
//! A run: every session is opened and runs one turn (warm-up, not counted); the followers
//! connect; then every session posts turns in a closed loop for the window. No new turn
//! starts after it; those in flight finish, and every turn of the loop counts: turns/s is
//! their number over the time from the loop's start to its last turn's end. (A window that
//! counted only the turns ending inside it would count none of a server whose turns outlast
//! it: LangGraph's, at a thousand concurrent turns.) The server's, the fake's and the
//! driver's CPU, memory and descriptors are read as the loop starts and ends.
//!
//! Each reader (a turn's poster or a follower) takes the text of the delta frames it reads,
//! finds the fake's words in it (`t<unix ns>`, see `fake`), and notes when it read each word:
//! so the model→reader time of every word, and how far each follower was behind the first
//! reader of that word.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Semaphore, watch};

use super::client::Connection;
use super::fake::unix_ns;
use super::sides::Kind;
use super::usage::{self, Usage};
use crate::report::Fallible;

/// How long a follower may take to connect and be answered.
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);

/// How many connections the driver opens at once (the servers' listen backlogs are 1024 and
/// more; a burst of ten thousand would overflow them and wait out SYN retries).
const CONNECTING: usize = 200;

/// What to run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    pub(crate) sessions: usize,
    /// Followers of each session.
    pub(crate) followers: usize,
    /// How long sessions post new turns (those in flight then finish, and count).
    pub(crate) window: Duration,
    /// Words the fake streams per turn (a turn seeing another count is an error).
    pub(crate) chunks: u64,
    /// Over how long the sessions' loops start, evenly spread (zero: all at once). Users do
    /// not all press enter in the same millisecond: spread over one turn, N sessions keep N
    /// turns in flight without a burst of N posts each time they come round.
    pub(crate) spread: Duration,
}

/// Whose use is read as the loop starts and ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Watched {
    pub(crate) server: u32,
    pub(crate) fake: u32,
}

/// What one run measured.
#[derive(Debug, Default)]
pub(crate) struct Figures {
    /// Turns of the loop that streamed to their end.
    pub(crate) turns: u64,
    /// From the loop's start to its last turn's end.
    pub(crate) window: Duration,
    /// Of those turns: request to first word, and to the stream's end; sorted.
    pub(crate) first: Vec<Duration>,
    /// The first word's time split in two (sorted): from the request to the model writing it
    /// (the server's work before the model call, the call, and the model's own wait), and
    /// from the model writing it to the poster reading it (the word's way through the server).
    pub(crate) first_to_model: Vec<Duration>,
    pub(crate) first_from_model: Vec<Duration>,
    pub(crate) turn: Vec<Duration>,
    /// Turns that failed (status, error frame, cut stream, timeout, wrong word count).
    pub(crate) errors: u64,
    pub(crate) error_samples: Vec<String>,
    /// Followers that failed to open or were cut.
    pub(crate) follower_errors: u64,
    /// Use as the loop started and as it ended.
    pub(crate) server: (Usage, Usage),
    pub(crate) fake: (Usage, Usage),
    pub(crate) driver: (Usage, Usage),
    /// Model → follower time of every word followers read during the loop; sorted.
    pub(crate) model_to_follower: Vec<Duration>,
    /// How far behind the first reader of the word (poster or follower) each follower read
    /// it; sorted.
    pub(crate) behind_first: Vec<Duration>,
    /// Model → poster time of every word the posters read during the loop; sorted.
    pub(crate) model_to_poster: Vec<Duration>,
}

impl Figures {
    pub(crate) fn turns_per_s(&self) -> f64 {
        self.turns as f64 / self.window.as_secs_f64().max(1e-9)
    }

    /// Server CPU milliseconds per counted turn.
    pub(crate) fn cpu_ms_per_turn(&self, ticks_per_s: f64) -> f64 {
        let ticks = self
            .server
            .1
            .cpu_ticks
            .saturating_sub(self.server.0.cpu_ticks);
        ticks as f64 * 1e3 / ticks_per_s / (self.turns.max(1) as f64)
    }

    /// A process's CPU over the window, in cores (1.0 = one core busy).
    pub(crate) fn cores(use_: (Usage, Usage), window: Duration, ticks_per_s: f64) -> f64 {
        let ticks = use_.1.cpu_ticks.saturating_sub(use_.0.cpu_ticks);
        ticks as f64 / ticks_per_s / window.as_secs_f64().max(1e-9)
    }
}

/// The stream a reader reads, which says which frames carry the model's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    /// Our `POST /api/chat` answer: `data: {"type":"text-delta","delta":…}`.
    OursChat,
    /// Our `GET /sessions/{id}/events`: `event: text:delta`, the event's payload `delta`.
    OursEvents,
    /// LangGraph's run or thread stream: `event: messages`, `data: [chunk, metadata]`.
    LangGraph,
    /// The fake itself: Chat Completions chunks.
    Model,
}

/// One frame's meaning to a reader.
enum Frame {
    /// The model's text the frame carries.
    Text(String),
    Error(String),
    Other,
}

/// Reads SSE lines into frames of one stream.
struct Frames {
    stream: Stream,
    event: Option<String>,
}

impl Frames {
    fn new(stream: Stream) -> Self {
        Self {
            stream,
            event: None,
        }
    }

    fn line(&mut self, line: &[u8]) -> Frame {
        if line.is_empty() {
            self.event = None;
            return Frame::Other;
        }
        if let Some(name) = line.strip_prefix(b"event:") {
            self.event = Some(String::from_utf8_lossy(name).trim().to_owned());
            return Frame::Other;
        }
        let Some(data) = line.strip_prefix(b"data:") else {
            return Frame::Other;
        };
        let data = data.strip_prefix(b" ").unwrap_or(data);
        let event = self.event.as_deref();
        let text = |value: &Value, pointers: &[&str]| {
            pointers
                .iter()
                .find_map(|pointer| value.pointer(pointer).and_then(Value::as_str))
                .map(str::to_owned)
        };
        match self.stream {
            Stream::OursChat => {
                if contains(data, b"\"type\":\"text-delta\"") {
                    let value: Value = serde_json::from_slice(data).unwrap_or_default();
                    return text(&value, &["/delta"]).map_or(Frame::Other, Frame::Text);
                }
                if contains(data, b"\"type\":\"error\"") {
                    return Frame::Error(String::from_utf8_lossy(data).into_owned());
                }
                Frame::Other
            }
            Stream::OursEvents => match event {
                Some("text:delta") => {
                    let value: Value = serde_json::from_slice(data).unwrap_or_default();
                    text(&value, &["/payload/delta", "/event/payload/delta"])
                        .map_or(Frame::Other, Frame::Text)
                }
                Some("error") => Frame::Error(String::from_utf8_lossy(data).into_owned()),
                _ => Frame::Other,
            },
            Stream::LangGraph => match event {
                Some("messages") => {
                    let value: Value = serde_json::from_slice(data).unwrap_or_default();
                    text(&value, &["/0/content"]).map_or(Frame::Other, Frame::Text)
                }
                Some("error") => Frame::Error(String::from_utf8_lossy(data).into_owned()),
                _ => Frame::Other,
            },
            Stream::Model => {
                if data == b"[DONE]" {
                    return Frame::Other;
                }
                let value: Value = serde_json::from_slice(data).unwrap_or_default();
                text(&value, &["/choices/0/delta/content"]).map_or(Frame::Other, Frame::Text)
            }
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Finds the fake's words (`t` and 19 digits) in a reader's text, which may cut a word
/// between frames; each word once (they only grow along a session's stream).
#[derive(Default)]
struct Words {
    tail: String,
    last: u64,
}

/// The digits of a word.
const STAMP_DIGITS: usize = 19;

impl Words {
    /// Feeds `text`; calls `on_word` with each new word's stamp.
    fn feed(&mut self, text: &str, mut on_word: impl FnMut(u64)) {
        self.tail.push_str(text);
        let bytes = self.tail.as_bytes();
        let mut at = 0;
        while at < bytes.len() {
            if bytes[at] == b't' {
                let digits = bytes[at + 1..]
                    .iter()
                    .take(STAMP_DIGITS)
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == STAMP_DIGITS {
                    let stamp = std::str::from_utf8(&bytes[at + 1..at + 1 + STAMP_DIGITS])
                        .ok()
                        .and_then(|d| d.parse::<u64>().ok())
                        .unwrap_or(0);
                    if stamp > self.last {
                        self.last = stamp;
                        on_word(stamp);
                    }
                    at += 1 + STAMP_DIGITS;
                    continue;
                }
            }
            at += 1;
        }
        // Keep what could begin a word cut by the frame's end.
        let keep = self.tail.len().min(STAMP_DIGITS + 1);
        let mut cut = self.tail.len() - keep;
        while !self.tail.is_char_boundary(cut) {
            cut += 1;
        }
        self.tail.drain(..cut);
    }
}

/// The words a reader read in the window: (stamp, when read), both Unix ns.
pub(crate) type Sightings = Vec<(u64, u64)>;

/// When (Unix ns) readers start noting words: `u64::MAX` until the window opens.
#[derive(Clone)]
pub(crate) struct Recording(Arc<AtomicU64>);

impl Recording {
    /// Notes nothing.
    pub(crate) fn off() -> Self {
        Self(Arc::new(AtomicU64::new(u64::MAX)))
    }

    fn note(&self, into: &mut Sightings, stamp: u64) {
        if stamp >= self.0.load(Ordering::Relaxed) {
            into.push((stamp, unix_ns()));
        }
    }
}

/// One turn as its poster saw it.
pub(crate) struct Turn {
    pub(crate) first: Option<Duration>,
    /// The first word's request → model and model → poster times.
    pub(crate) first_split: Option<(Duration, Duration)>,
    pub(crate) total: Duration,
    pub(crate) words: u64,
}

/// Opens a session on `kind`: ours by naming a new chat id, LangGraph's by creating a thread.
pub(crate) async fn open_session(kind: Kind, connection: &mut Connection) -> Fallible<String> {
    match kind {
        Kind::Ours => Ok(openharness::SessionId::new().to_string()),
        Kind::LangGraph => {
            let answer = connection.send("POST", "/threads", "", Some("{}")).await?;
            let status = answer.status;
            let body = answer.text().await?;
            if status != 200 {
                return Err(format!("POST /threads: {status} {body}").into());
            }
            crate::http::field(&body, "thread_id")
                .ok_or_else(|| format!("POST /threads: no thread_id in {body}").into())
        }
        Kind::Model => Ok(String::new()),
    }
}

/// The request that runs turn `k` of `session`, and the stream its answer is.
fn turn_request(kind: Kind, session: &str, k: u64) -> (String, String, Stream) {
    let text = format!("Hello, turn {k}");
    match kind {
        Kind::Ours => (
            "/api/chat".to_owned(),
            serde_json::json!({
                "id": session,
                "messages": [{ "id": format!("m{k}"), "role": "user", "parts": [{ "type": "text", "text": text }] }],
                "trigger": "submit-message",
            })
            .to_string(),
            Stream::OursChat,
        ),
        Kind::LangGraph => (
            format!("/threads/{session}/runs/stream"),
            serde_json::json!({
                "assistant_id": "agent",
                "input": { "messages": [{ "role": "user", "content": text }] },
                "stream_mode": ["messages-tuple"],
            })
            .to_string(),
            Stream::LangGraph,
        ),
        Kind::Model => (
            "/v1/chat/completions".to_owned(),
            serde_json::json!({
                "model": "fake-model",
                "stream": true,
                "messages": [{ "role": "user", "content": text }],
            })
            .to_string(),
            Stream::Model,
        ),
    }
}

/// A follower's path of `session` on `kind`, and its stream.
pub(crate) fn follower_path(kind: Kind, session: &str) -> Option<(String, Stream)> {
    match kind {
        Kind::Ours => Some((format!("/sessions/{session}/events"), Stream::OursEvents)),
        Kind::LangGraph => Some((format!("/threads/{session}/stream"), Stream::LangGraph)),
        Kind::Model => None,
    }
}

/// A turn that failed, and whether its server had acknowledged it (answered `200`, which our
/// server does only once the input is durable) before it failed.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) acknowledged: bool,
    pub(crate) why: String,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

impl std::error::Error for Failed {}

/// Posts turn `k` and reads its stream to the end.
pub(crate) async fn turn(
    kind: Kind,
    connection: &mut Connection,
    session: &str,
    k: u64,
    recording: &Recording,
    seen: &mut Sightings,
) -> Result<Turn, Failed> {
    let (path, body, stream) = turn_request(kind, session, k);
    let started = Instant::now();
    let started_ns = unix_ns();
    let unacknowledged = |why: String| Failed {
        acknowledged: false,
        why,
    };
    let mut answer = connection
        .send("POST", &path, "accept: text/event-stream\r\n", Some(&body))
        .await
        .map_err(|err| unacknowledged(format!("POST {path}: {err}")))?;
    if answer.status != 200 {
        let status = answer.status;
        let body = answer.text().await.unwrap_or_default();
        return Err(unacknowledged(format!(
            "POST {path}: {status} {}",
            body.trim()
        )));
    }
    let acknowledged = |why: String| Failed {
        acknowledged: true,
        why,
    };
    let mut frames = Frames::new(stream);
    let mut words = Words::default();
    let mut timed = Turn {
        first: None,
        first_split: None,
        total: Duration::ZERO,
        words: 0,
    };
    while let Some(line) = answer
        .line()
        .await
        .map_err(|err| acknowledged(format!("POST {path}: {err}")))?
    {
        match frames.line(&line) {
            Frame::Text(text) => words.feed(&text, |stamp| {
                if timed.first.is_none() {
                    timed.first = Some(started.elapsed());
                    let read = unix_ns();
                    timed.first_split = Some((
                        nanos(stamp.saturating_sub(started_ns)),
                        nanos(read.saturating_sub(stamp)),
                    ));
                }
                timed.words += 1;
                recording.note(seen, stamp);
            }),
            Frame::Error(error) => return Err(acknowledged(format!("an error frame: {error}"))),
            Frame::Other => {}
        }
    }
    timed.total = started.elapsed();
    Ok(timed)
}

/// Opens a session (ours named by the client, LangGraph's created) and runs one turn on it:
/// an idle session to measure. Its id.
pub(crate) async fn one_turn(kind: Kind, addr: SocketAddr, chunks: u64) -> Fallible<String> {
    let mut connection = Connection::new(addr);
    let session = open_session(kind, &mut connection).await?;
    let recording = Recording(Arc::new(AtomicU64::new(u64::MAX)));
    let done = turn(
        kind,
        &mut connection,
        &session,
        0,
        &recording,
        &mut Vec::new(),
    )
    .await?;
    if done.words != chunks {
        return Err(format!("a turn read {} words, not {chunks}", done.words).into());
    }
    Ok(session)
}

/// A follower: the stream of `path` opened; it reads until `stop` and returns the words it
/// read in the window (none when `record` is off: an idle follower).
pub(crate) struct Follower {
    handle: tokio::task::JoinHandle<Fallible<Sightings>>,
}

impl Follower {
    /// Opens `path` on `addr` (its head answered `200`), then reads in the background.
    async fn open(
        addr: SocketAddr,
        path: String,
        stream: Stream,
        recording: Option<Recording>,
        mut stop: watch::Receiver<bool>,
    ) -> Fallible<Self> {
        let (opened_tx, opened_rx) = tokio::sync::oneshot::channel::<Fallible<()>>();
        let handle = tokio::spawn(async move {
            let mut connection = Connection::new(addr).with_timeout(OPEN_TIMEOUT);
            let mut answer = match connection
                .send("GET", &path, "accept: text/event-stream\r\n", None)
                .await
            {
                Ok(answer) if answer.status == 200 => {
                    let _ = opened_tx.send(Ok(()));
                    answer
                }
                Ok(answer) => {
                    let status = answer.status;
                    let body = answer.text().await.unwrap_or_default();
                    let error = format!("GET {path}: {status} {}", body.trim());
                    let _ = opened_tx.send(Err(error.clone().into()));
                    return Err(error.into());
                }
                Err(err) => {
                    let error = format!("GET {path}: {err}");
                    let _ = opened_tx.send(Err(error.clone().into()));
                    return Err(error.into());
                }
            };
            let mut frames = Frames::new(stream);
            let mut words = Words::default();
            let mut seen = Sightings::new();
            loop {
                let line = tokio::select! {
                    line = answer.line_idle() => line?,
                    _ = stop.changed() => return Ok(seen),
                };
                let Some(line) = line else {
                    return Err(format!("GET {path}: the stream ended").into());
                };
                if let (Some(recording), Frame::Text(text)) = (&recording, frames.line(&line)) {
                    words.feed(&text, |stamp| recording.note(&mut seen, stamp));
                }
            }
        });
        match opened_rx.await {
            Ok(Ok(())) => Ok(Self { handle }),
            Ok(Err(err)) => Err(err),
            Err(_) => Err("a follower's task ended before it opened".into()),
        }
    }

    /// Waits for the follower to stop; the words it read.
    pub(crate) async fn finish(self) -> Fallible<Sightings> {
        self.handle.await?
    }
}

/// Idle followers held open: `count` streams over `sessions` (round robin), opened
/// [`CONNECTING`] at a time; they read (heartbeats) until dropped with [`Followers::stop`].
pub(crate) struct Followers {
    followers: Vec<Follower>,
    stop: watch::Sender<bool>,
}

impl Followers {
    pub(crate) fn new() -> Self {
        Self {
            followers: Vec::new(),
            stop: watch::channel(false).0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.followers.len()
    }

    /// Opens `count` more idle followers of `sessions`, starting at session `offset`.
    pub(crate) async fn open(
        &mut self,
        kind: Kind,
        addr: SocketAddr,
        sessions: &[String],
        count: usize,
    ) -> Fallible<()> {
        let gate = Arc::new(Semaphore::new(CONNECTING));
        let offset = self.followers.len();
        let mut opening = Vec::with_capacity(count);
        for i in 0..count {
            let session = &sessions[(offset + i) % sessions.len()];
            let (path, stream) = follower_path(kind, session).ok_or("no followers here")?;
            let stop = self.stop.subscribe();
            let gate = gate.clone();
            opening.push(tokio::spawn(async move {
                let _permit = gate.acquire_owned().await?;
                Follower::open(addr, path, stream, None, stop).await
            }));
        }
        // A server that stops accepting (LangGraph's, at a few thousand idle streams on 2
        // cores) must not hold the suite forever.
        let limit = OPEN_TIMEOUT * 2 + Duration::from_millis(20) * u32::try_from(count)?;
        let deadline = tokio::time::Instant::now() + limit;
        for opened in opening {
            match tokio::time::timeout_at(deadline, opened).await {
                Ok(opened) => self.followers.push(opened??),
                Err(_) => {
                    return Err(format!(
                        "{} followers open; the rest did not open within {} s",
                        self.followers.len(),
                        limit.as_secs()
                    )
                    .into());
                }
            }
        }
        Ok(())
    }

    /// Closes every follower.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        for follower in self.followers {
            let _ = follower.finish().await;
        }
    }
}

/// Runs `plan` against `kind` at `addr`.
pub(crate) async fn run(
    kind: Kind,
    addr: SocketAddr,
    plan: Plan,
    watched: Watched,
) -> Fallible<Figures> {
    let recording = Recording::off();
    // Sessions, each with its connection and one turn (not counted).
    let gate = Arc::new(Semaphore::new(CONNECTING));
    let mut opening = Vec::with_capacity(plan.sessions);
    for _ in 0..plan.sessions {
        let gate = gate.clone();
        let recording = recording.clone();
        opening.push(tokio::spawn(async move {
            let permit = gate.acquire_owned().await?;
            let mut connection = Connection::new(addr);
            let session = open_session(kind, &mut connection).await?;
            drop(permit);
            turn(
                kind,
                &mut connection,
                &session,
                0,
                &recording,
                &mut Vec::new(),
            )
            .await?;
            Fallible::Ok((connection, session))
        }));
    }
    let mut sessions = Vec::with_capacity(plan.sessions);
    for opened in opening {
        sessions.push(opened.await??);
    }

    // Followers, before the loop starts.
    let (stop_tx, _) = watch::channel(false);
    let mut followers = Vec::new();
    let mut follower_errors = 0;
    if plan.followers > 0 {
        let mut opening = Vec::new();
        for (index, (_, session)) in sessions.iter().enumerate() {
            let (path, stream) = follower_path(kind, session).ok_or("no followers here")?;
            for _ in 0..plan.followers {
                let (gate, recording, stop) =
                    (gate.clone(), recording.clone(), stop_tx.subscribe());
                let path = path.clone();
                opening.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await?;
                    let follower = Follower::open(addr, path, stream, Some(recording), stop).await;
                    Fallible::Ok((index, follower?))
                }));
            }
        }
        for opened in opening {
            match opened.await? {
                Ok(follower) => followers.push(follower),
                Err(err) => {
                    follower_errors += 1;
                    eprintln!("bench load: a follower did not open: {err}");
                }
            }
        }
    }

    // The closed loop: every turn posted until the window closes counts, run to its end.
    let first_use = sample(watched);
    let started = Instant::now();
    let closes = started + plan.window;
    recording.0.store(unix_ns(), Ordering::Relaxed);
    let mut loops = Vec::with_capacity(sessions.len());
    for (index, (mut connection, session)) in sessions.into_iter().enumerate() {
        let recording = recording.clone();
        let chunks = plan.chunks;
        let offset = plan
            .spread
            .mul_f64(index as f64 / plan.sessions.max(1) as f64);
        loops.push(tokio::spawn(async move {
            tokio::time::sleep(offset).await;
            let mut ended = Vec::new();
            let mut errors = Vec::new();
            let mut seen = Sightings::new();
            let mut k = 1;
            while Instant::now() < closes {
                let outcome = turn(kind, &mut connection, &session, k, &recording, &mut seen).await;
                k += 1;
                match outcome {
                    Ok(done) if done.words == chunks => ended.push(done),
                    Ok(done) => {
                        errors.push(format!("a turn read {} words, not {chunks}", done.words));
                    }
                    Err(err) => {
                        connection.close();
                        errors.push(err.to_string());
                    }
                }
            }
            (index, ended, errors, seen)
        }));
    }
    let mut figures = Figures {
        follower_errors,
        ..Figures::default()
    };
    let mut first_reads: HashMap<(usize, u64), u64> = HashMap::new();
    for looped in loops {
        let (index, ended, errors, seen) = looped.await?;
        figures.turns += ended.len() as u64;
        for done in ended {
            figures.turn.push(done.total);
            if let Some(first) = done.first {
                figures.first.push(first);
            }
            if let Some((to_model, from_model)) = done.first_split {
                figures.first_to_model.push(to_model);
                figures.first_from_model.push(from_model);
            }
        }
        figures.errors += errors.len() as u64;
        for error in errors {
            if figures.error_samples.len() < 5 {
                figures.error_samples.push(error);
            }
        }
        for (stamp, read) in seen {
            figures
                .model_to_poster
                .push(nanos(read.saturating_sub(stamp)));
            note_first(&mut first_reads, (index, stamp), read);
        }
    }
    figures.window = started.elapsed();
    let (first, last) = (first_use, sample(watched));
    (figures.server, figures.fake, figures.driver) =
        ((first.0, last.0), (first.1, last.1), (first.2, last.2));
    let _ = stop_tx.send(true);
    let mut follower_seen = Vec::new();
    for (index, follower) in followers {
        match follower.finish().await {
            Ok(seen) => {
                for &(stamp, read) in &seen {
                    note_first(&mut first_reads, (index, stamp), read);
                }
                follower_seen.push((index, seen));
            }
            Err(err) => {
                figures.follower_errors += 1;
                eprintln!("bench load: a follower failed: {err}");
            }
        }
    }
    for (index, seen) in follower_seen {
        for (stamp, read) in seen {
            figures
                .model_to_follower
                .push(nanos(read.saturating_sub(stamp)));
            let first = first_reads.get(&(index, stamp)).copied().unwrap_or(read);
            figures.behind_first.push(nanos(read.saturating_sub(first)));
        }
    }
    for times in [
        &mut figures.first,
        &mut figures.first_to_model,
        &mut figures.first_from_model,
        &mut figures.turn,
        &mut figures.model_to_follower,
        &mut figures.behind_first,
        &mut figures.model_to_poster,
    ] {
        times.sort();
    }
    Ok(figures)
}

fn note_first(first: &mut HashMap<(usize, u64), u64>, key: (usize, u64), read: u64) {
    first
        .entry(key)
        .and_modify(|at| *at = (*at).min(read))
        .or_insert(read);
}

fn nanos(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// The server's, the fake's and the driver's use now.
fn sample(watched: Watched) -> (Usage, Usage, Usage) {
    (
        usage::of_tree(watched.server),
        usage::of_tree(watched.fake),
        usage::own(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_found_once_even_when_a_frame_cuts_one() {
        let mut words = Words::default();
        let mut found = Vec::new();
        words.feed("{\"reply\":\"t1000000000000000001 t10000000", |w| {
            found.push(w)
        });
        words.feed("00000000002 ", |w| found.push(w));
        words.feed("t1000000000000000002 t1000000000000000003\"}", |w| {
            found.push(w);
        });
        assert_eq!(
            found,
            [
                1_000_000_000_000_000_001,
                1_000_000_000_000_000_002,
                1_000_000_000_000_000_003
            ]
        );
    }

    #[test]
    fn frames_carry_each_streams_text() {
        let mut chat = Frames::new(Stream::OursChat);
        assert!(matches!(
            chat.line(br#"data: {"type":"text-delta","id":"0","delta":"t1 "}"#),
            Frame::Text(text) if text == "t1 "
        ));
        let mut events = Frames::new(Stream::OursEvents);
        events.line(b"event: text:delta");
        assert!(matches!(
            events.line(br#"data: {"seq":3,"name":"text:delta","payload":{"delta":"x"}}"#),
            Frame::Text(text) if text == "x"
        ));
        let mut theirs = Frames::new(Stream::LangGraph);
        theirs.line(b"event: messages");
        assert!(matches!(
            theirs.line(br#"data: [{"content":"t2 ","type":"AIMessageChunk"},{"run_id":"r"}]"#),
            Frame::Text(text) if text == "t2 "
        ));
        theirs.line(b"");
        theirs.line(b"event: error");
        assert!(matches!(theirs.line(b"data: {}"), Frame::Error(_)));
    }
}
