//! The server suite: the HTTP server against the least a server could do, in one run.
//!
//! - **SSE fan-out**: 1,000 subscribers to one session over real sockets on 127.0.0.1 while a
//!   turn records 10,000 events (a handler chain, no model), against a minimal axum server
//!   that broadcasts the same payloads as SSE from a `tokio::sync::broadcast` channel. Every
//!   subscriber checks it saw every seq once, in order. Delivered events/s is held to ≥ 0.5×
//!   the baseline; delivery latency (append done → bytes read by a subscriber; send → read for
//!   the baseline) is sampled on 20 subscribers and reported as p50/p99, for that burst (where
//!   it is the time to push ten million frames) and for 200 events appended 5 ms apart.
//! - **Continue over HTTP**: `POST /sessions/{id}/input` → the turn's first event on an open
//!   event stream, against the same turn started in process (`Host::send`) with a store
//!   subscription waiting for it, alternated round by round on a durable redb store (what
//!   `openharness serve` records into). Goal: p50 ≤ 1.5× the in-process p50.
//! - **Idle streams**: the heap 1,000 open, idle event streams hold (the server's share and the
//!   client sockets'), per stream, beside the same for the minimal axum broadcast; goal
//!   ≤ 64 KiB per stream.
//!
//! The subscribers parse only the `event:` and `id:` lines of what they read, the same way
//! for both servers, and run in this process beside the server, sharing its two threads of
//! work, as the baseline's do.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use openharness::adapter::Recorded;
use openharness::builtin::{UserInput, WorkflowCompleted};
use openharness::host::Host;
use openharness::store::{MemoryStore, Observed, RedbStore, StoreObserver};
use openharness::{
    Emit, Envelope, Event, RunOptions, SessionId, Store, StoreError, Workflow, event, handler,
};
use openharness_server::{ServerOptions, router};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use crate::HEAP;
use crate::http::{Subscriber, field, millis, percentile, post_expecting, serve};
use crate::report::{Fallible, Row, times};

/// Subscribers of the fan-out.
const SUBSCRIBERS: usize = 1_000;
/// Ticks the fan-out's turn records (with its input and bookkeeping, about 10,000 events).
const TICKS: u64 = 9_990;
/// Subscribers that time every event they read.
const TIMED: usize = 20;
/// Rounds of the continue-latency comparison, each side.
const ROUNDS: usize = 120;
/// Idle streams whose memory is measured.
const IDLE: usize = 1_000;
/// Events of the paced fan-out, and the pause between them.
const PACED: u64 = 200;
const PACE: Duration = Duration::from_millis(5);

/// One tick of the handler chain; `left` more follow.
#[event("tick:counted")]
#[derive(Debug, Clone)]
pub(crate) struct Ticked {
    left: u64,
}

/// The events the handler folds.
#[event]
#[derive(Debug, Clone)]
pub(crate) enum TickEvent {
    UserInput,
    Ticked,
}

/// Counts ticks; an input `n` starts a chain of `n` ticks, all derived in one turn.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Ticks {
    ticks: u64,
}

#[handler(TickEvent)]
impl Ticks {
    fn asked(&mut self, input: &UserInput) -> Emit {
        match input.text.trim().parse::<u64>() {
            Ok(n) if n > 0 => Emit::one(Ticked { left: n - 1 }),
            _ => Emit::none(),
        }
    }

    fn ticked(&mut self, tick: &Ticked) -> Emit {
        self.ticks += 1;
        if tick.left > 0 {
            Emit::one(Ticked {
                left: tick.left - 1,
            })
        } else {
            Emit::none()
        }
    }
}

/// When each append of the observed store finished, in seq order (one session per store).
#[derive(Debug, Default, Clone)]
struct AppendTimes(Arc<Mutex<Vec<Instant>>>);

#[async_trait]
impl StoreObserver for AppendTimes {
    fn after_append(
        &self,
        _session: &SessionId,
        events: &[Envelope],
        result: &Result<u64, StoreError>,
        _took: Duration,
    ) {
        if result.is_ok() {
            let done = Instant::now();
            let mut times = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            times.extend(events.iter().map(|_| done));
        }
    }
}

impl AppendTimes {
    fn of(&self, seq: u64) -> Option<Instant> {
        let times = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        times.get(usize::try_from(seq).ok()?).copied()
    }
}

fn host(store: impl Store) -> Fallible<Host> {
    let workflow = Workflow::builder("ticks")
        .initial_state(Ticks::default())
        .store(MemoryStore::new())
        .build()?;
    Ok(Host::new(store).workflow(workflow)?)
}

/// What one subscriber saw of a fan-out.
struct Seen {
    events: u64,
    out_of_order: u64,
    last_at: Instant,
    /// `(seq, read at)` of every event, for the timed subscribers.
    times: Vec<(u64, Instant)>,
}

/// Reads events from `first` until one named `last_name` (or seq `last_seq`), checking order.
async fn watch(mut subscriber: Subscriber, first: u64, end: End, timed: bool) -> Fallible<Seen> {
    let mut seen = Seen {
        events: 0,
        out_of_order: 0,
        last_at: Instant::now(),
        times: Vec::new(),
    };
    let mut expected = first;
    loop {
        let (seq, name) = subscriber.next().await?;
        let at = Instant::now();
        if seq != expected {
            seen.out_of_order += 1;
        }
        expected = seq + 1;
        seen.events += 1;
        seen.last_at = at;
        if timed {
            seen.times.push((seq, at));
        }
        let done = match &end {
            End::Named(last) => name == *last,
            End::Seq(last) => seq >= *last,
        };
        if done {
            return Ok(seen);
        }
    }
}

/// Watches each subscriber on a task of its own (the first `TIMED` of them timing every
/// event), from `first` to `end`.
fn watch_all(subs: Vec<Subscriber>, first: u64, end: End) -> Vec<JoinHandle<Fallible<Seen>>> {
    subs.into_iter()
        .enumerate()
        .map(|(n, sub)| tokio::spawn(watch(sub, first, end.clone(), n < TIMED)))
        .collect()
}

/// What each watcher saw, once all are done.
async fn seen_by(watchers: Vec<JoinHandle<Fallible<Seen>>>) -> Fallible<Vec<Seen>> {
    let mut seen = Vec::with_capacity(watchers.len());
    for watcher in watchers {
        seen.push(watcher.await??);
    }
    Ok(seen)
}

#[derive(Clone)]
enum End {
    Named(&'static str),
    Seq(u64),
}

/// A fan-out's figures.
struct FanOut {
    delivered: u64,
    lost_or_repeated: u64,
    out_of_order: u64,
    per_second: f64,
    latencies: Vec<Duration>,
}

/// Opens `count` subscribers of `path` from after `last_event_id`, with bounded concurrency.
async fn subscribers(
    addr: SocketAddr,
    path: &str,
    last_event_id: Option<u64>,
    count: usize,
) -> Fallible<Vec<Subscriber>> {
    let mut all = Vec::with_capacity(count);
    for _ in 0..count {
        all.push(Subscriber::open(addr, path, last_event_id).await?);
    }
    Ok(all)
}

fn tally(
    seen: Vec<Seen>,
    expected_each: u64,
    started: Instant,
    send_time: impl Fn(u64) -> Option<Instant>,
) -> FanOut {
    let delivered: u64 = seen.iter().map(|s| s.events).sum();
    let expected = expected_each * seen.len() as u64;
    let out_of_order = seen.iter().map(|s| s.out_of_order).sum();
    let last = seen.iter().map(|s| s.last_at).max().unwrap_or(started);
    let mut latencies: Vec<Duration> = seen
        .iter()
        .flat_map(|s| s.times.iter())
        .filter_map(|(seq, at)| send_time(*seq).map(|sent| at.saturating_duration_since(sent)))
        .collect();
    latencies.sort();
    FanOut {
        delivered,
        lost_or_repeated: delivered.abs_diff(expected),
        out_of_order,
        per_second: delivered as f64 / last.duration_since(started).as_secs_f64().max(1e-9),
        latencies,
    }
}

/// A ticks session served over a memory store whose appends `times` records, and
/// `SUBSCRIBERS` streams of it open after its events so far.
struct Subscribed {
    host: Host,
    addr: SocketAddr,
    /// The session's id as the server names it.
    session: String,
    id: SessionId,
    /// Its events so far.
    len: u64,
    subs: Vec<Subscriber>,
}

async fn subscribed(times: &AppendTimes) -> Fallible<Subscribed> {
    let host = host(Observed::new(MemoryStore::new(), times.clone()))?;
    let options = ServerOptions::default().max_streams_per_session(SUBSCRIBERS + 8);
    let addr = serve(router(host.clone(), options)).await?;
    let (session, id) = ticks_session(addr).await?;
    let len = settled_len(&host, &id).await?;
    let path = format!("/sessions/{session}/events");
    let subs = subscribers(addr, &path, Some(len - 1), SUBSCRIBERS).await?;
    Ok(Subscribed {
        host,
        addr,
        session,
        id,
        len,
        subs,
    })
}

/// Ours: the fan-out of a turn recording about 10,000 events; also the payloads it sent.
async fn fan_out_ours() -> Fallible<(FanOut, Vec<(String, u64, String)>)> {
    let times = AppendTimes::default();
    let ours = subscribed(&times).await?;
    let (host, id, len) = (&ours.host, &ours.id, ours.len);

    let started = Instant::now();
    let body = format!(r#"{{"text":"{TICKS}"}}"#);
    let input = format!("/sessions/{}/input", ours.session);
    post_expecting(ours.addr, &input, &body, 202).await?;
    let watchers = watch_all(ours.subs, len, End::Named(WorkflowCompleted::NAME));
    let seen = seen_by(watchers).await?;
    let end = settled_len(host, id).await?;
    let fan_out = tally(seen, end - len, started, |seq| times.of(seq));

    // The payloads the baseline broadcasts: this turn's events, as the stream sent them.
    let mut payloads = Vec::new();
    for (seq, event) in (len..).zip(host.store().events(id, len..end).await?) {
        let recorded = Recorded { seq, event };
        payloads.push((
            recorded.event.name.to_string(),
            seq,
            serde_json::to_string(&recorded)?,
        ));
    }
    Ok((fan_out, payloads))
}

/// The p50 and p99 rows of two latency samples, reported without a goal; `what` names a row
/// from its percentile's name.
fn latency_rows(
    rows: &mut Vec<Row>,
    ours: &[Duration],
    base: &[Duration],
    what: impl Fn(&str) -> String,
) {
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let (a, b) = (percentile(ours, p), percentile(base, p));
        rows.push(Row {
            what: what(name),
            measured: millis(a),
            baseline: millis(b),
            ratio: times(a.as_secs_f64() / b.as_secs_f64().max(1e-9)),
            goal: "(info)",
            met: None,
        });
    }
}

/// Starts a `ticks` session over HTTP (its first turn ticks once): its id as the server
/// wrote it, and parsed.
async fn ticks_session(addr: SocketAddr) -> Fallible<(String, SessionId)> {
    let created = post_expecting(
        addr,
        "/sessions",
        r#"{"workflow":"ticks","input":"1"}"#,
        202,
    )
    .await?;
    let session = field(&created, "session").ok_or("no session id")?;
    let id = session.parse()?;
    Ok((session, id))
}

/// The session's length once no turn runs on it.
pub(crate) async fn settled_len(host: &Host, id: &SessionId) -> Fallible<u64> {
    for _ in 0..10_000 {
        if !host.is_running(id) {
            let summary = host.session(id).await?;
            if summary.status != openharness::SessionStatus::Running {
                return Ok(summary.len);
            }
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    Err("the session did not settle".into())
}

/// The minimal axum SSE broadcast: one channel, one `Sse` per subscriber, nothing else.
fn baseline_app(sender: broadcast::Sender<Arc<(String, u64, String)>>) -> axum::Router {
    axum::Router::new().route(
        "/events",
        axum::routing::get(move || {
            let receiver = sender.subscribe();
            async move {
                let events = futures_util::stream::unfold(receiver, |mut receiver| async move {
                    let item = receiver.recv().await.ok()?;
                    let (name, seq, data) = &*item;
                    let event = SseEvent::default()
                        .event(name.as_str())
                        .id(seq.to_string())
                        .data(data.as_str());
                    Some((Ok::<_, Infallible>(event), receiver))
                });
                Sse::new(events).keep_alive(KeepAlive::default())
            }
        }),
    )
}

async fn fan_out_baseline(payloads: &[(String, u64, String)]) -> Fallible<FanOut> {
    let (sender, _) = broadcast::channel(payloads.len() + 16);
    let addr = serve(baseline_app(sender.clone())).await?;
    let subs = subscribers(addr, "/events", None, SUBSCRIBERS).await?;
    // Every subscriber's stream is open (its head was read), so each holds a receiver.
    let first = payloads.first().map_or(0, |p| p.1);
    let last = payloads.last().map_or(0, |p| p.1);
    let watchers = watch_all(subs, first, End::Seq(last));
    let started = Instant::now();
    let mut sent_at = Vec::with_capacity(payloads.len());
    for payload in payloads {
        sent_at.push(Instant::now());
        sender
            .send(Arc::new(payload.clone()))
            .map_err(|_| "no subscriber")?;
    }
    let seen = seen_by(watchers).await?;
    Ok(tally(seen, payloads.len() as u64, started, |seq| {
        sent_at
            .get(usize::try_from(seq.checked_sub(first)?).ok()?)
            .copied()
    }))
}

/// Paced fan-out: `PACED` single-event appends `PACE` apart to `SUBSCRIBERS` streams, ours and
/// the baseline's; the delivery latencies of each.
async fn paced_latency() -> Fallible<(Vec<Duration>, Vec<Duration>)> {
    let times = AppendTimes::default();
    let Subscribed {
        host,
        id,
        len,
        subs,
        ..
    } = subscribed(&times).await?;
    let last = len + PACED - 1;
    let watchers = watch_all(subs, len, End::Seq(last));
    let started = Instant::now();
    let mut payloads = Vec::new();
    for seq in len..=last {
        let event = Envelope::new(
            "tick:counted",
            serde_json::json!({ "left": last - seq }),
            None,
        );
        payloads.push((
            event.name.to_string(),
            seq,
            serde_json::to_string(&Recorded {
                seq,
                event: event.clone(),
            })?,
        ));
        host.store().append(&id, &[event], seq).await?;
        tokio::time::sleep(PACE).await;
    }
    let seen = seen_by(watchers).await?;
    let ours = tally(seen, PACED, started, |seq| times.of(seq)).latencies;

    let (sender, _) = broadcast::channel(payloads.len() + 16);
    let addr = serve(baseline_app(sender.clone())).await?;
    let subs = subscribers(addr, "/events", None, SUBSCRIBERS).await?;
    let watchers = watch_all(subs, len, End::Seq(last));
    let started = Instant::now();
    let mut sent_at = Vec::new();
    for payload in payloads {
        sent_at.push(Instant::now());
        sender
            .send(Arc::new(payload))
            .map_err(|_| "no subscriber")?;
        tokio::time::sleep(PACE).await;
    }
    let seen = seen_by(watchers).await?;
    let baseline = tally(seen, PACED, started, |seq| {
        sent_at
            .get(usize::try_from(seq.checked_sub(len)?).ok()?)
            .copied()
    })
    .latencies;
    Ok((ours, baseline))
}

/// Continue over HTTP against the same turn in process, alternated; p50 and p99 of each.
async fn continue_latency() -> Fallible<(Vec<Duration>, Vec<Duration>)> {
    let dir = tempfile::tempdir()?;
    let store = RedbStore::open(dir.path().join("store.redb"))?;
    let host = host(store)?;
    let addr = serve(router(host.clone(), ServerOptions::default())).await?;
    let (session, id) = ticks_session(addr).await?;
    let mut len = settled_len(&host, &id).await?;
    let mut over_http = Vec::with_capacity(ROUNDS);
    let mut in_process = Vec::with_capacity(ROUNDS);
    let input_path = format!("/sessions/{session}/input");
    for _ in 0..ROUNDS {
        // Over HTTP: a stream open on the session, then the POST.
        let mut stream =
            Subscriber::open(addr, &format!("/sessions/{session}/events"), Some(len - 1)).await?;
        let started = Instant::now();
        post_expecting(addr, &input_path, r#"{"text":"3"}"#, 202).await?;
        let (seq, _) = stream.next().await?;
        over_http.push(started.elapsed());
        if seq != len {
            return Err(format!("the turn's first event is {seq}, not {len}").into());
        }
        drop(stream);
        len = settled_len(&host, &id).await?;

        // In process: a store subscription, then `Host::send`.
        let mut subscription = host.store().subscribe(&id, len).await?;
        let started = Instant::now();
        let turn = {
            let host = host.clone();
            let id = id.clone();
            tokio::spawn(async move { host.send(&id, "3".into(), RunOptions::default()).await })
        };
        let first = subscription
            .next()
            .await
            .ok_or("the subscription ended")??;
        in_process.push(started.elapsed());
        if first.seq != len {
            return Err(format!("the turn's first event is {}, not {len}", first.seq).into());
        }
        turn.await??;
        drop(subscription);
        len = settled_len(&host, &id).await?;
    }
    over_http.sort();
    in_process.sort();
    Ok((over_http, in_process))
}

/// Heap per idle stream: ours, and the minimal broadcast's.
async fn idle_memory() -> Fallible<(f64, f64)> {
    let host = host(MemoryStore::new())?;
    let options = ServerOptions::default().max_streams_per_session(IDLE + 8);
    let addr = serve(router(host.clone(), options)).await?;
    let (session, id) = ticks_session(addr).await?;
    let len = settled_len(&host, &id).await?;
    let path = format!("/sessions/{session}/events");
    let ours = held_per_stream(addr, &path, Some(len - 1)).await?;

    let (sender, _) = broadcast::channel::<Arc<(String, u64, String)>>(16);
    let addr = serve(baseline_app(sender.clone())).await?;
    let baseline = held_per_stream(addr, "/events", None).await?;
    Ok((ours, baseline))
}

async fn held_per_stream(addr: SocketAddr, path: &str, last: Option<u64>) -> Fallible<f64> {
    // One stream first, so lazily built shared parts are not counted per stream.
    let warm = Subscriber::open(addr, path, last).await?;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let before = HEAP.current_usage();
    let mut open = subscribers(addr, path, last, IDLE).await?;
    for sub in &mut open {
        sub.release_buffer();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = HEAP.current_usage();
    drop(open);
    drop(warm);
    Ok(after.saturating_sub(before) as f64 / IDLE as f64)
}

async fn suite() -> Fallible<Vec<Row>> {
    let mut rows = Vec::new();
    eprintln!("fan-out: {SUBSCRIBERS} subscribers, ours…");
    let (ours, payloads) = fan_out_ours().await?;
    eprintln!(
        "fan-out: {SUBSCRIBERS} subscribers, baseline ({} events)…",
        payloads.len()
    );
    let base = fan_out_baseline(&payloads).await?;
    let ratio = ours.per_second / base.per_second;
    rows.push(Row {
        what: format!(
            "SSE fan-out, {SUBSCRIBERS} subs × {} events",
            payloads.len()
        ),
        measured: format!("{:.0} events/s", ours.per_second),
        baseline: format!("{:.0} events/s", base.per_second),
        ratio: times(ratio),
        goal: ">= 0.5x",
        met: Some(ratio >= 0.5 && ours.lost_or_repeated == 0 && ours.out_of_order == 0),
    });
    rows.push(Row {
        what: "  delivered / lost or repeated / out of order".into(),
        measured: format!(
            "{} / {} / {}",
            ours.delivered, ours.lost_or_repeated, ours.out_of_order
        ),
        baseline: format!(
            "{} / {} / {}",
            base.delivered, base.lost_or_repeated, base.out_of_order
        ),
        ratio: "-".into(),
        goal: "0 lost",
        met: Some(ours.lost_or_repeated == 0 && ours.out_of_order == 0),
    });
    latency_rows(&mut rows, &ours.latencies, &base.latencies, |name| {
        format!("  burst latency {name} ({TIMED} subs timed)")
    });

    eprintln!("paced fan-out: {PACED} events {PACE:?} apart to {SUBSCRIBERS} subscribers…");
    let (ours, base) = paced_latency().await?;
    latency_rows(&mut rows, &ours, &base, |name| {
        format!("  paced ({PACED} × {PACE:?} apart) latency {name}")
    });

    eprintln!("continue over HTTP vs in process, {ROUNDS} rounds each (redb)…");
    let (http, local) = continue_latency().await?;
    for (name, p, goal) in [("p50", 0.5, Some(1.5)), ("p99", 0.99, None)] {
        let (a, b) = (percentile(&http, p), percentile(&local, p));
        let ratio = a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        rows.push(Row {
            what: format!("continue → first event {name}, over HTTP (redb)"),
            measured: millis(a),
            baseline: format!("{} in process", millis(b)),
            ratio: times(ratio),
            goal: if goal.is_some() { "<= 1.5x" } else { "(info)" },
            met: goal.map(|g| ratio <= g),
        });
    }

    eprintln!("idle streams: {IDLE} each…");
    let (ours, baseline) = idle_memory().await?;
    rows.push(Row {
        what: format!("heap per idle SSE stream ({IDLE} open)"),
        measured: format!("{:.1} KiB", ours / 1024.0),
        baseline: format!("{:.1} KiB minimal axum", baseline / 1024.0),
        ratio: times(ours / baseline.max(1.0)),
        goal: "<= 64 KiB",
        met: Some(ours <= 64.0 * 1024.0),
    });
    Ok(rows)
}

/// Runs the suite and prints its table.
pub(crate) fn run() -> ExitCode {
    crate::report::run_suite("server", crate::report::Missed::Shown, suite)
}
