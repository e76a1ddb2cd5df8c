//! The load suite's fake model: an OpenAI-compatible Chat Completions server that streams
//! every answer at a set pace, lean enough never to be the bottleneck. It runs as a process of
//! its own (`openharness-bench load-fake`), so its CPU is charged to neither side.
//!
//! - `POST …/chat/completions`: `chunks` content chunks, the first `ttft` after the request,
//!   each next one `gap` later, framed as `openharness_provider::testing::openai::text_chunks`
//!   frames them (a role chunk first; a finish chunk, a usage chunk and `[DONE]` last). Each
//!   content chunk is one word `t<unix ns> `: the wall-clock time it was written, so a reader
//!   on this machine tells how long the word took to reach it. A request with a
//!   `response_format` (an agent with structured output: ours) gets the same words as the
//!   JSON `{"reply":"t… t…"}`, cut at the same places; one without (LangGraph's) the bare
//!   words. Same chunk count, same pace, nearly the same bytes.
//! - `POST /control` `{"ttft_ms","gap_ms","chunks"}`: sets the pace for the requests after it.
//!
//! Nothing is recorded or checked per request; connections are kept alive; the listen backlog
//! is 4096.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use openharness_provider::testing::openai::text_chunks;
use serde::{Deserialize, Serialize};

use crate::report::Fallible;

/// How the fake streams: the wait before the first content chunk, between chunks, how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pace {
    pub(crate) ttft_ms: u64,
    pub(crate) gap_ms: u64,
    pub(crate) chunks: u64,
}

impl Pace {
    /// Every chunk at once.
    pub(crate) fn instant(chunks: u64) -> Self {
        Self {
            ttft_ms: 0,
            gap_ms: 0,
            chunks,
        }
    }

    /// `chunks` chunks evenly over `total`: the first after one gap, the last at `total`.
    pub(crate) fn streamed(total: Duration, chunks: u64) -> Self {
        let gap = u64::try_from(total.as_millis()).unwrap_or(u64::MAX) / chunks.max(1);
        Self {
            ttft_ms: gap,
            gap_ms: gap,
            chunks,
        }
    }

    /// How long the model takes to its first content chunk and to its last.
    pub(crate) fn describe(self) -> String {
        let last = self.ttft_ms + self.gap_ms * self.chunks.saturating_sub(1);
        format!(
            "{} chunks, first at {} ms, last at {} ms",
            self.chunks, self.ttft_ms, last
        )
    }
}

/// The pace in force, read by every request.
#[derive(Default)]
struct Shared {
    ttft_us: AtomicU64,
    gap_us: AtomicU64,
    chunks: AtomicU64,
}

/// The framing bytes, made once: the role chunk, a content chunk around its content, and the
/// end (finish, usage, `[DONE]`).
struct Frames {
    role: String,
    before: String,
    after: String,
    ending: String,
}

/// A marker content whose JSON string is replaced by each chunk's own.
const MARK: &str = "@@@@@@";

impl Frames {
    fn new() -> Fallible<Self> {
        // `text_chunks` cuts its text in pieces of 6 characters: MARK is one content chunk.
        let chunks = text_chunks(MARK);
        let [role, content, ending @ ..] = chunks.as_slice() else {
            return Err("text_chunks gave fewer chunks than expected".into());
        };
        let quoted = format!("\"{MARK}\"");
        let (before, after) = content
            .split_once(&quoted)
            .ok_or("the content chunk does not hold its content")?;
        Ok(Self {
            role: role.clone(),
            before: before.to_owned(),
            after: after.to_owned(),
            ending: ending.concat(),
        })
    }

    fn content(&self, text: &str) -> String {
        let quoted = serde_json::Value::String(text.to_owned()).to_string();
        format!("{}{quoted}{}", self.before, self.after)
    }
}

#[derive(Clone)]
struct Fake {
    shared: Arc<Shared>,
    frames: Arc<Frames>,
}

/// Now, in nanoseconds since the Unix epoch: the clock the words carry and readers compare.
pub(crate) fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The content chunk `index` (1-based) of `chunks`, a word stamped now.
fn word(json: bool, index: u64, chunks: u64) -> String {
    let stamp = format!("t{:019}", unix_ns());
    match (json, index == 1, index == chunks) {
        (true, true, true) => format!("{{\"reply\":\"{stamp}\"}}"),
        (true, true, false) => format!("{{\"reply\":\"{stamp} "),
        (true, false, true) => format!("{stamp}\"}}"),
        _ => format!("{stamp} "),
    }
}

async fn complete(State(fake): State<Fake>, body: Bytes) -> Response {
    let json = body.windows(17).any(|w| w == b"\"response_format\"");
    let ttft = Duration::from_micros(fake.shared.ttft_us.load(Ordering::Relaxed));
    let gap = Duration::from_micros(fake.shared.gap_us.load(Ordering::Relaxed));
    let chunks = fake.shared.chunks.load(Ordering::Relaxed).max(1);
    let stream = futures_util::stream::unfold(1u64, move |index| {
        let frames = fake.frames.clone();
        async move {
            if index > chunks {
                return None;
            }
            let wait = if index == 1 { ttft } else { gap };
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let mut out = String::new();
            if index == 1 {
                out.push_str(&frames.role);
            }
            out.push_str(&frames.content(&word(json, index, chunks)));
            if index == chunks {
                out.push_str(&frames.ending);
            }
            Some((
                Ok::<_, std::convert::Infallible>(Bytes::from(out)),
                index + 1,
            ))
        }
    });
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

async fn control(State(fake): State<Fake>, axum::Json(pace): axum::Json<Pace>) -> StatusCode {
    fake.shared
        .ttft_us
        .store(pace.ttft_ms * 1000, Ordering::Relaxed);
    fake.shared
        .gap_us
        .store(pace.gap_ms * 1000, Ordering::Relaxed);
    fake.shared.chunks.store(pace.chunks, Ordering::Relaxed);
    StatusCode::NO_CONTENT
}

/// `openharness-bench load-fake [--port P]`: serves until killed; prints
/// `listening on 127.0.0.1:PORT` first.
pub(crate) fn main(args: &[String]) -> ExitCode {
    let port = match args {
        [] => 0,
        [flag, port] if flag == "--port" => match port.parse::<u16>() {
            Ok(port) => port,
            Err(_) => {
                eprintln!("load-fake: --port {port} is not a port");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: openharness-bench load-fake [--port P]");
            return ExitCode::from(2);
        }
    };
    let runtime = match crate::report::runtime("load-fake") {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    match runtime.block_on(serve(port)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("load-fake: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(port: u16) -> Fallible<()> {
    let fake = Fake {
        shared: Arc::new(Shared::default()),
        frames: Arc::new(Frames::new()?),
    };
    fake.shared.chunks.store(20, Ordering::Relaxed);
    let app = Router::new()
        .route("/v1/chat/completions", post(complete))
        .route("/chat/completions", post(complete))
        .route("/control", post(control))
        .route("/health", get(|| async { "ok" }))
        .layer(DefaultBodyLimit::max(64 * 1024 * 1024))
        .with_state(fake);
    let listener = listen(port, 4096)?;
    println!("listening on {}", listener.local_addr()?);
    std::io::Write::flush(&mut std::io::stdout())?;
    axum::serve(listener, app).await?;
    Ok(())
}

/// A listener on 127.0.0.1:`port` with a listen backlog of `backlog` (tokio's `bind` gives
/// 1024: a thousand clients connecting at once would overflow it).
pub(crate) fn listen(port: u16, backlog: u32) -> Fallible<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
    Ok(socket.listen(backlog)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_wrap_a_word_as_text_chunks_frames_a_content_chunk() -> Fallible<()> {
        let frames = Frames::new()?;
        let chunk = frames.content("t1 ");
        assert!(chunk.starts_with("data: {"), "{chunk}");
        assert!(chunk.contains("\"delta\":{\"content\":\"t1 \"}"), "{chunk}");
        assert!(chunk.ends_with("}\n\n"), "{chunk}");
        let json = frames.content(&word(true, 1, 2));
        assert!(json.contains("{\\\"reply\\\":\\\"t"), "{json}");
        assert!(frames.ending.ends_with("data: [DONE]\n\n"));
        assert!(frames.role.contains("\"role\":\"assistant\""));
        Ok(())
    }
}
