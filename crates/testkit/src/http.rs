//! One HTTP + SSE client for a server on a socket address, for every test that talks to a
//! real listener: a request is a method, a path, an optional JSON body and headers; the answer
//! is its status, headers and body (as text or JSON); an event stream is read frame by frame
//! (`id`, `event`, `data`) until a frame matches or a limit passes.
//!
//! The client never follows redirects and adds no headers of its own beyond the ones given
//! (and the bearer key, when set), so a test sees exactly what the server answered.
//!
//! With the feature `serve`, [`serve`] puts an axum app on a free port of 127.0.0.1 for it.

use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::LIMIT;

/// Serves `app` on a free port of 127.0.0.1 for as long as the test's runtime runs: its
/// address, for a [`Client`].
#[cfg(feature = "serve")]
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|err| panic!("binding 127.0.0.1:0: {err}"));
    let addr = listener
        .local_addr()
        .unwrap_or_else(|err| panic!("the listener's address: {err}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A client of the server listening on one socket address.
#[derive(Clone, Debug)]
pub struct Client {
    /// Where the server listens.
    pub addr: SocketAddr,
    http: reqwest::Client,
    key: Option<String>,
    timeout: Option<Duration>,
}

impl Client {
    /// A client of the server on `addr`, without a key. Cheap: every client shares one
    /// connector, and no connection outlives its request (each test's runtime is its own).
    pub fn new(addr: SocketAddr) -> Self {
        static HTTP: OnceLock<reqwest::Client> = OnceLock::new();
        let http = HTTP.get_or_init(|| {
            // reqwest needs a TLS provider even for plain http.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .pool_max_idle_per_host(0)
                .build()
                .expect("a reqwest client")
        });
        Self {
            addr,
            http: http.clone(),
            key: None,
            timeout: None,
        }
    }

    /// The same client, sending `Authorization: Bearer {key}` with every request (or no key
    /// with `None`).
    #[must_use]
    pub fn with_key(mut self, key: Option<&str>) -> Self {
        self.key = key.map(str::to_owned);
        self
    }

    /// The same client, giving up on every request after `limit` (a stream included, counted
    /// from its start): the panicking calls panic, the `Result` ones
    /// ([`Client::try_call`], [`Client::open`]) return an `Err`. Without it a request waits
    /// as long as the server takes.
    #[must_use]
    pub fn with_timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<String>,
        headers: &[(&str, &str)],
    ) -> reqwest::RequestBuilder {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        let mut request = self.http.request(method, self.url(path));
        if let Some(body) = body {
            let typed = headers
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
            if !typed {
                request = request.header("content-type", "application/json");
            }
            request = request.body(body);
        }
        if let Some(limit) = self.timeout {
            request = request.timeout(limit);
        }
        if let Some(key) = &self.key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    }

    /// Sends `method path` with `body` as its raw text (when given, with
    /// `content-type: application/json` unless `headers` name another) and `headers`, and
    /// reads the whole answer.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Response {
        self.try_call(method, path, body, headers)
            .await
            .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
    }

    /// Like [`Client::call`], but a request that fails on the way (the server died, refused
    /// the connection or cut the answer short) is an `Err` instead of a panic: for a test
    /// that kills servers on purpose and tries another.
    pub async fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<Response, reqwest::Error> {
        let answer = self.open(method, path, body, headers).await?;
        let (status, headers) = (answer.status, answer.headers.clone());
        Ok(Response {
            status,
            headers,
            body: answer.text().await?,
        })
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Response {
        self.call("GET", path, None, &[]).await
    }

    /// `method path` with the JSON `body`.
    pub async fn send(&self, method: &str, path: &str, body: &Value) -> Response {
        self.call(method, path, Some(&body.to_string()), &[]).await
    }

    /// `POST path` with the JSON `body`.
    pub async fn post(&self, path: &str, body: &Value) -> Response {
        self.send("POST", path, body).await
    }

    /// Opens `GET path` as an event stream (with `accept: text/event-stream` and `headers`,
    /// `last-event-id` among them when resuming); its frames are read with [`Events::next`].
    pub async fn events(&self, path: &str, headers: &[(&str, &str)]) -> Events {
        let mut headers = headers.to_vec();
        headers.push(("accept", "text/event-stream"));
        self.open("GET", path, None, &headers)
            .await
            .unwrap_or_else(|error| panic!("GET {path}: {error}"))
    }

    /// Sends `method path` like [`Client::call`], but returns as soon as the answer's head has
    /// arrived: its status and headers, the body still unread (read it as frames with
    /// [`Events::next`], or whole with [`Events::text`]). For a test that acts the moment a
    /// server acknowledges (kills it, say) while the answer is still streaming. A request that
    /// fails before the head arrives (the server died or refused the connection) is an `Err`.
    pub async fn open(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Result<Events, reqwest::Error> {
        let response = self
            .request(method, path, body.map(str::to_owned), headers)
            .send()
            .await?;
        Ok(Events {
            status: response.status().as_u16(),
            headers: headers_of(&response),
            response,
            buffer: String::new(),
        })
    }
}

fn headers_of(response: &reqwest::Response) -> Vec<(String, String)> {
    response
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(have, _)| have.eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_str())
}

/// A whole answer: status, headers (names in lower case) and body.
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Every header, in the order received, names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
}

impl Response {
    /// The first value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The body as JSON; `null` when it is empty.
    ///
    /// # Panics
    ///
    /// When the body is not JSON, naming it.
    pub fn json(&self) -> Value {
        if self.body.is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.body)
            .unwrap_or_else(|_| panic!("not JSON ({}): {}", self.status, self.body))
    }

    /// The body as JSON, or `null` when it is not JSON.
    pub fn json_or_null(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// `(status, body as JSON)`, the pair most assertions compare.
    pub fn pair(&self) -> (u16, Value) {
        (self.status, self.json())
    }
}

/// One server-sent event: its fields as sent (`data` lines joined by `\n`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Frame {
    /// The `id:` field, when there was one.
    pub id: Option<String>,
    /// The `event:` field, when there was one.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

impl Frame {
    /// The data as JSON.
    ///
    /// # Panics
    ///
    /// When the data is not JSON, naming it.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|_| panic!("not JSON: {}", self.data))
    }

    /// The id as a number (a session's event position).
    ///
    /// # Panics
    ///
    /// When there is no id or it is not a number.
    pub fn seq(&self) -> u64 {
        self.id
            .as_deref()
            .and_then(|id| id.parse().ok())
            .unwrap_or_else(|| panic!("no numeric id in {self:?}"))
    }
}

/// The frame as it goes on the wire: its `id:`, `event:` and `data:` lines (one per line of
/// its data), then a blank line.
impl std::fmt::Display for Frame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(id) = &self.id {
            writeln!(f, "id: {id}")?;
        }
        if let Some(event) = &self.event {
            writeln!(f, "event: {event}")?;
        }
        for line in self.data.split('\n') {
            writeln!(f, "data: {line}")?;
        }
        writeln!(f)
    }
}

/// An open answer, usually an event stream: its status and headers, then its frames as they
/// come (or the rest of its body at once).
#[derive(Debug)]
pub struct Events {
    /// The status code.
    pub status: u16,
    /// Every header, names in lower case.
    pub headers: Vec<(String, String)>,
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    /// The first value of the header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The next frame that carries data or an id (comments and bare `retry:` hints are
    /// skipped), or `None` when the stream ends.
    ///
    /// # Panics
    ///
    /// When no frame comes within [`LIMIT`].
    pub async fn next(&mut self) -> Option<Frame> {
        self.next_within(LIMIT)
            .await
            .unwrap_or_else(|| panic!("no event within {LIMIT:?}"))
    }

    /// Like [`Events::next`], but `None` (outer) when nothing comes within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Option<Frame>> {
        tokio::time::timeout(wait, self.read_frame()).await.ok()
    }

    async fn read_frame(&mut self) -> Option<Frame> {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                if let Some(frame) = parse(&block) {
                    return Some(frame);
                }
            }
            let chunk = self.response.chunk().await.expect("the stream reads")?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }

    /// The rest of the body as text (what frames have not consumed), until the answer ends;
    /// an `Err` when it is cut short (the server died).
    pub async fn text(self) -> Result<String, reqwest::Error> {
        let mut text = self.buffer;
        text.push_str(&self.response.text().await?);
        Ok(text)
    }

    /// Reads frames until one satisfies `done` (that one included) or the stream ends, and
    /// returns them all.
    ///
    /// # Panics
    ///
    /// When neither happens within `limit`.
    pub async fn until(
        &mut self,
        limit: Duration,
        mut done: impl FnMut(&Frame) -> bool,
    ) -> Vec<Frame> {
        let mut frames = Vec::new();
        let read = tokio::time::timeout(limit, async {
            while let Some(frame) = self.read_frame().await {
                let stop = done(&frame);
                frames.push(frame);
                if stop {
                    break;
                }
            }
        })
        .await;
        assert!(
            read.is_ok(),
            "waited {limit:?} for the stream's last frame; saw {frames:?}"
        );
        frames
    }
}

fn parse(block: &str) -> Option<Frame> {
    let mut frame = Frame::default();
    let mut data: Vec<&str> = Vec::new();
    for line in block.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => frame.id = Some(value.to_owned()),
            "event" => frame.event = Some(value.to_owned()),
            "data" => data.push(value),
            _ => {}
        }
    }
    frame.data = data.join("\n");
    (frame.id.is_some() || !data.is_empty()).then_some(frame)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_written_back_as_it_was_read() {
        let wire = "id: 3\nevent: e\ndata: {\"a\":\ndata:1}\n\n";
        let frame = parse(wire).expect("a frame");
        assert_eq!(
            frame.to_string(),
            "id: 3\nevent: e\ndata: {\"a\":\ndata: 1}\n\n"
        );
        assert_eq!(parse(&frame.to_string()), Some(frame));
    }

    #[test]
    fn a_frame_joins_its_data_lines_and_skips_comments() {
        assert_eq!(parse(": keep-alive\n\n"), None);
        assert_eq!(parse("retry: 1000\n\n"), None);
        assert_eq!(
            parse("id: 3\nevent: e\ndata: {\"a\":\ndata:1}\n\n"),
            Some(Frame {
                id: Some("3".into()),
                event: Some("e".into()),
                data: "{\"a\":\n1}".into(),
            })
        );
    }
}
