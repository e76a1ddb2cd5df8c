//! [`FakeServer`]: a small HTTP/1.1 server on 127.0.0.1 that checks each request the way the
//! real API does (path, key, version header, schema subset), records it, and answers from a
//! script: JSON errors with any status and headers, or event streams sent with chunked
//! encoding that may end cleanly, be cut mid-stream, or hang open.
//!
//! It is written on plain tokio sockets so the bytes on the wire are exactly the ones the
//! script says, faults included.

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, ...
    pub method: String,
    /// The path, e.g. `/v1/messages`.
    pub path: String,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`null` if it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The text of the first user message (Anthropic and OpenAI shapes).
    pub fn prompt(&self) -> String {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_owned()
    }
}

/// How a streamed response ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The last chunk is followed by the end of the chunked body.
    Complete,
    /// The connection is closed without ending the chunked body: a cut mid-stream.
    Cut,
    /// Nothing more is sent and the connection stays open until the client goes away.
    Hang,
}

#[derive(Debug, Clone)]
enum Body {
    Full(Vec<u8>),
    Stream {
        chunks: Vec<Vec<u8>>,
        ending: Ending,
    },
}

/// A scripted answer.
///
/// ```
/// use openharness_provider::testing::FakeResponse;
/// let limited = FakeResponse::json(429, serde_json::json!({ "error": { "message": "slow down" } }))
///     .header("retry-after-ms", "5");
/// let stream = FakeResponse::stream(vec!["data: {}\n\n".into()]).cut();
/// # let _ = (limited, stream);
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct FakeResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
    delay: Duration,
}

impl FakeResponse {
    /// A JSON body with this status.
    pub fn json(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: Body::Full(body.to_string().into_bytes()),
            delay: Duration::ZERO,
        }
    }

    /// A body of any content type with this status (an HTML error page, a proxy's text).
    pub fn body(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            status,
            headers: vec![("content-type".into(), content_type.to_owned())],
            body: Body::Full(body.into()),
            delay: Duration::ZERO,
        }
    }

    /// A 200 `text/event-stream` whose chunks are these strings, each sent as one HTTP chunk.
    pub fn stream(chunks: Vec<String>) -> Self {
        Self {
            status: 200,
            headers: vec![
                (
                    "content-type".into(),
                    "text/event-stream; charset=utf-8".into(),
                ),
                ("cache-control".into(), "no-cache".into()),
            ],
            body: Body::Stream {
                chunks: chunks.into_iter().map(String::into_bytes).collect(),
                ending: Ending::Complete,
            },
            delay: Duration::ZERO,
        }
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_owned()));
        self
    }

    /// Waits this long before each chunk of a stream.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Keeps only the first `n` chunks and then cuts the connection.
    pub fn cut_after(mut self, n: usize) -> Self {
        if let Body::Stream { chunks, ending } = &mut self.body {
            chunks.truncate(n);
            *ending = Ending::Cut;
        }
        self
    }

    /// Cuts the connection after the last chunk, without ending the body.
    pub fn cut(self) -> Self {
        self.ending(Ending::Cut)
    }

    /// Keeps the connection open after the last chunk, sending nothing more.
    pub fn hang(self) -> Self {
        self.ending(Ending::Hang)
    }

    fn ending(mut self, new: Ending) -> Self {
        if let Body::Stream { ending, .. } = &mut self.body {
            *ending = new;
        }
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }
}

/// Checks a request the way the real API would; `Err` is the error response to send.
pub(crate) type Check = fn(&RecordedRequest, &str) -> Result<(), FakeResponse>;

type Fallback = Arc<dyn Fn(&RecordedRequest) -> FakeResponse + Send + Sync>;

#[derive(Default)]
struct State {
    script: VecDeque<FakeResponse>,
    fallback: Option<Fallback>,
    requests: Vec<RecordedRequest>,
    disconnects: usize,
}

/// A fake API server on 127.0.0.1; see the protocol constructors
/// [`FakeServer::anthropic`](crate::testing::FakeServer::anthropic) and
/// [`FakeServer::openai`](crate::testing::FakeServer::openai). Stops when dropped.
pub struct FakeServer {
    addr: SocketAddr,
    base_path: &'static str,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl fmt::Debug for FakeServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeServer")
            .field("addr", &self.addr)
            .field("requests", &self.request_count())
            .finish_non_exhaustive()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeServer {
    pub(crate) async fn start(
        base_path: &'static str,
        key: String,
        check: Check,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let shared = Arc::clone(&state);
        let key: Arc<str> = key.into();
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                let key = Arc::clone(&key);
                tokio::spawn(async move {
                    let _ = serve(socket, &state, &key, check).await;
                });
            }
        });
        Ok(Self {
            addr,
            base_path,
            state,
            task,
        })
    }

    /// The base URL to give the provider (`http://127.0.0.1:PORT`, plus `/v1` for OpenAI).
    pub fn base_url(&self) -> String {
        format!("http://{}{}", self.addr, self.base_path)
    }

    /// Queues a response for the next request.
    pub fn respond(&self, response: FakeResponse) -> &Self {
        lock(&self.state).script.push_back(response);
        self
    }

    /// Answers requests that find the script empty.
    pub fn fallback(
        &self,
        answer: impl Fn(&RecordedRequest) -> FakeResponse + Send + Sync + 'static,
    ) -> &Self {
        lock(&self.state).fallback = Some(Arc::new(answer));
        self
    }

    /// Every request received, in order (including rejected ones).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// How many requests were received.
    pub fn request_count(&self) -> usize {
        lock(&self.state).requests.len()
    }

    /// How many times the client went away while a response was still being sent or held
    /// open (a cancelled request).
    pub fn disconnects(&self) -> usize {
        lock(&self.state).disconnects
    }

    /// Waits until `disconnects()` reaches `n` or `limit` passes; returns whether it did.
    pub async fn wait_for_disconnects(&self, n: usize, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while tokio::time::Instant::now() < deadline {
            if self.disconnects() >= n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.disconnects() >= n
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads one request, answers it, closes the connection.
async fn serve(
    mut socket: TcpStream,
    state: &Mutex<State>,
    key: &str,
    check: Check,
) -> std::io::Result<()> {
    let Some(request) = read_request(&mut socket).await? else {
        return Ok(());
    };
    let response = {
        let mut state = lock(state);
        state.requests.push(request.clone());
        match check(&request, key) {
            Err(rejection) => rejection,
            Ok(()) => match state.script.pop_front() {
                Some(response) => response,
                None => match state.fallback.clone() {
                    Some(fallback) => {
                        drop(state);
                        fallback(&request)
                    }
                    None => FakeResponse::json(
                        500,
                        serde_json::json!({ "error": { "type": "api_error", "message": "the fake server's script is empty" } }),
                    )
                    .header("x-should-retry", "false"),
                },
            },
        }
    };
    if !write_response(&mut socket, &response).await {
        lock(state).disconnects += 1;
    }
    Ok(())
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<RecordedRequest>> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Site Overloaded",
        _ => "Status",
    }
}

/// Writes the response; returns false if the client went away first.
async fn write_response(socket: &mut TcpStream, response: &FakeResponse) -> bool {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("connection: close\r\n");
    match &response.body {
        Body::Full(bytes) => {
            head.push_str(&format!("content-length: {}\r\n\r\n", bytes.len()));
            let mut out = head.into_bytes();
            out.extend_from_slice(bytes);
            socket.write_all(&out).await.is_ok()
        }
        Body::Stream { chunks, ending } => {
            head.push_str("transfer-encoding: chunked\r\n\r\n");
            if socket.write_all(head.as_bytes()).await.is_err() {
                return false;
            }
            for chunk in chunks {
                if !response.delay.is_zero() {
                    tokio::time::sleep(response.delay).await;
                }
                let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                framed.extend_from_slice(chunk);
                framed.extend_from_slice(b"\r\n");
                if socket.write_all(&framed).await.is_err() || socket.flush().await.is_err() {
                    return false;
                }
            }
            match ending {
                Ending::Complete => socket.write_all(b"0\r\n\r\n").await.is_ok(),
                Ending::Cut => {
                    let _ = socket.shutdown().await;
                    true
                }
                Ending::Hang => {
                    // Hold the connection until the client closes it.
                    let mut sink = [0u8; 1024];
                    loop {
                        match socket.read(&mut sink).await {
                            Ok(0) | Err(_) => return false,
                            Ok(_) => {}
                        }
                    }
                }
            }
        }
    }
}
