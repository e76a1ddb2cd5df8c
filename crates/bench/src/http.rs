//! The benches' HTTP side: a router served on 127.0.0.1, one-shot requests, an SSE subscriber
//! over a raw socket, and the percentiles and milliseconds the reports print.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::report::Fallible;

pub(crate) async fn serve(app: axum::Router) -> Fallible<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(addr)
}

/// One request with `Connection: close`; the status and the body.
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> Fallible<(u16, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\
         content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .ok_or("no HTTP status")?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// A POST that must answer `expected`; its body, or an error naming the path, the status and
/// the answer.
pub(crate) async fn post_expecting(
    addr: SocketAddr,
    path: &str,
    body: &str,
    expected: u16,
) -> Fallible<String> {
    let (status, answer) = request(addr, "POST", path, Some(body)).await?;
    if status != expected {
        return Err(format!("POST {path}: {status} {answer}").into());
    }
    Ok(answer)
}

/// The value of `"field":"…"` or `"field":n` in a JSON text (enough for the server's answers
/// read here; a JSON body may also be chunked, which these fields never straddle).
pub(crate) fn field(json: &str, name: &str) -> Option<String> {
    let start = json.find(&format!("\"{name}\":"))? + name.len() + 3;
    let rest = json.get(start..)?.trim_start();
    if let Some(quoted) = rest.strip_prefix('"') {
        return quoted.split('"').next().map(str::to_owned);
    }
    let end = rest
        .find(|c: char| !c.is_ascii_digit() && c != '-')
        .unwrap_or(rest.len());
    Some(rest[..end].to_owned())
}

/// An SSE client over a raw socket: reads the answer's head, then events' `event:` and `id:`
/// lines as they come.
pub(crate) struct Subscriber {
    socket: TcpStream,
    buffer: Vec<u8>,
    /// Where the next unread line starts in `buffer`.
    start: usize,
    name: String,
}

impl Subscriber {
    /// Drops what the subscriber has read and buffered, so that memory measured while streams
    /// are held counts the server's side only.
    pub(crate) fn release_buffer(&mut self) {
        self.buffer = Vec::new();
        self.start = 0;
    }

    pub(crate) async fn open(
        addr: SocketAddr,
        path: &str,
        last_event_id: Option<u64>,
    ) -> Fallible<Self> {
        let mut socket = TcpStream::connect(addr).await?;
        let resume = last_event_id
            .map(|id| format!("last-event-id: {id}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n{resume}\r\n"
        );
        socket.write_all(head.as_bytes()).await?;
        let mut subscriber = Self {
            socket,
            buffer: Vec::with_capacity(16 * 1024),
            start: 0,
            name: String::new(),
        };
        loop {
            if let Some(end) = find(&subscriber.buffer, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&subscriber.buffer[..end]).into_owned();
                if !head.starts_with("HTTP/1.1 200") {
                    return Err(format!("the stream was refused: {head}").into());
                }
                subscriber.start = end + 4;
                return Ok(subscriber);
            }
            subscriber.fill().await?;
        }
    }

    async fn fill(&mut self) -> Fallible<()> {
        if self.start > 0 && self.start == self.buffer.len() {
            self.buffer.clear();
            self.start = 0;
        } else if self.start > 64 * 1024 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = self.socket.read(&mut chunk).await?;
        if n == 0 {
            return Err("the server closed the stream".into());
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    /// The next event's seq and name.
    pub(crate) async fn next(&mut self) -> Fallible<(u64, String)> {
        loop {
            while let Some(end) = self.buffer[self.start..].iter().position(|b| *b == b'\n') {
                let line = &self.buffer[self.start..self.start + end];
                self.start += end + 1;
                if let Some(name) = line.strip_prefix(b"event: ") {
                    self.name = String::from_utf8_lossy(name).into_owned();
                } else if let Some(id) = line.strip_prefix(b"id: ") {
                    // The platform's `step.generating` frame's id is `seq.0` (it shares its
                    // event with the `message.delta` after it): the seq is before the dot.
                    let id = std::str::from_utf8(id)?.trim();
                    let seq = id.split('.').next().unwrap_or(id).parse::<u64>()?;
                    return Ok((seq, std::mem::take(&mut self.name)));
                }
            }
            self.fill().await?;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

pub(crate) fn millis(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}
