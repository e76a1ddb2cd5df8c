//! The load driver's HTTP/1.1 client: one keep-alive connection per session or follower over a
//! raw socket (no pool to share, no TLS), a request written whole, its answer's body decoded
//! (`content-length` or `chunked`) and read line by line as it arrives, so a Server-Sent Events
//! stream is seen frame by frame. A connection the server closed while idle is reopened once
//! before the request is sent again; nothing else is retried.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::report::Fallible;

/// How long a read may wait before the request counts as timed out (a turn's stream, or an
/// answer's head); event streams that stay idle on purpose read with [`Answer::line_idle`].
/// Long: LangGraph's run stream says nothing while the run waits in its queue, which at a
/// thousand concurrent turns lasts tens of seconds.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// One keep-alive connection to `addr`, opened on first use and again after the server
/// closed it.
pub(crate) struct Connection {
    addr: SocketAddr,
    /// The `host` header: the server's own address (a keyless `serve` on loopback answers to
    /// its address and `localhost` only).
    host: String,
    socket: Option<TcpStream>,
    /// Bytes read and not yet decoded.
    raw: Vec<u8>,
    /// How long connecting, writing a request or one read may take ([`READ_TIMEOUT`]).
    timeout: Duration,
}

/// How the body of an answer ends.
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// This many bytes are left.
    Length(usize),
    /// `chunked`, at this point of a chunk.
    Chunked(Chunk),
    /// Until the server closes the connection.
    Close,
    /// Read whole.
    Done,
}

#[derive(Debug, Clone, Copy)]
enum Chunk {
    /// Before a chunk's size line.
    Size,
    /// Inside a chunk, with this many bytes left.
    Data(usize),
    /// After a chunk's data, before its `\r\n`.
    DataEnd,
    /// After the last (empty) chunk, in the trailer.
    Trailer,
}

/// An answer being read: its status, then its body a line at a time.
pub(crate) struct Answer<'a> {
    connection: &'a mut Connection,
    pub(crate) status: u16,
    framing: Framing,
    /// The server asked to close the connection after this answer.
    close: bool,
    /// Decoded body bytes not yet returned as lines.
    body: Vec<u8>,
    /// Where the next line starts in `body`.
    start: usize,
}

impl Connection {
    pub(crate) fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            host: addr.to_string(),
            socket: None,
            raw: Vec::new(),
            timeout: READ_TIMEOUT,
        }
    }

    /// The same with another limit on connecting, writing and each read.
    pub(crate) fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    async fn connect(&mut self) -> Fallible<()> {
        let socket = tokio::time::timeout(self.timeout, TcpStream::connect(self.addr))
            .await
            .map_err(|_| format!("could not connect within {} s", self.timeout.as_secs()))??;
        socket.set_nodelay(true)?;
        self.socket = Some(socket);
        self.raw.clear();
        Ok(())
    }

    /// Sends `method path` with a JSON `body` (none: no body) and `extra` header lines (each
    /// ending in `\r\n`), and reads the answer's head.
    pub(crate) async fn send(
        &mut self,
        method: &str,
        path: &str,
        extra: &str,
        body: Option<&str>,
    ) -> Fallible<Answer<'_>> {
        let body_head = match body {
            Some(body) => format!(
                "content-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            ),
            None => String::new(),
        };
        let request = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\n{extra}{body_head}\r\n{}",
            self.host,
            body.unwrap_or("")
        );
        // A reused connection the server closed while it sat idle fails at once (write or
        // first read); it is reopened and the request sent again, once.
        let reused = self.socket.is_some();
        match self.try_head(request.as_bytes()).await {
            Ok(head) => Ok(self.answer(head)),
            Err(_) if reused => {
                self.connect().await?;
                let head = self.try_head(request.as_bytes()).await?;
                Ok(self.answer(head))
            }
            Err(err) => Err(err),
        }
    }

    /// Writes `request` (connecting first if needed) and reads the answer's head: the status,
    /// the framing, whether the server closes after it.
    async fn try_head(&mut self, request: &[u8]) -> Fallible<(u16, Framing, bool)> {
        if self.socket.is_none() {
            self.connect().await?;
        }
        let socket = self.socket.as_mut().ok_or("not connected")?;
        tokio::time::timeout(self.timeout, socket.write_all(request))
            .await
            .map_err(|_| "the request could not be written in time")??;
        loop {
            if let Some(end) = find(&self.raw, b"\r\n\r\n") {
                let head = parse_head(&self.raw[..end])?;
                self.raw.drain(..end + 4);
                return Ok(head);
            }
            if self.raw.len() > 64 * 1024 {
                return Err("an answer's head longer than 64 KiB".into());
            }
            self.fill(Some(self.timeout)).await?;
        }
    }

    fn answer(&mut self, (status, framing, close): (u16, Framing, bool)) -> Answer<'_> {
        Answer {
            connection: self,
            status,
            framing,
            close,
            body: Vec::new(),
            start: 0,
        }
    }

    /// Reads more bytes into `raw`, waiting at most `limit`; `Ok(false)` at the connection's end.
    async fn fill(&mut self, limit: Option<Duration>) -> Fallible<bool> {
        let socket = self.socket.as_mut().ok_or("not connected")?;
        self.raw.reserve(4096);
        let read = socket.read_buf(&mut self.raw);
        let n = match limit {
            Some(limit) => tokio::time::timeout(limit, read)
                .await
                .map_err(|_| format!("no answer for {} ms", limit.as_millis()))??,
            None => read.await?,
        };
        if n == 0 {
            self.socket = None;
            return Ok(false);
        }
        Ok(true)
    }

    /// Closes the socket (the next request opens another).
    pub(crate) fn close(&mut self) {
        self.socket = None;
        self.raw = Vec::new();
    }
}

/// The status, framing and `connection: close` of a head.
fn parse_head(head: &[u8]) -> Fallible<(u16, Framing, bool)> {
    let head = std::str::from_utf8(head)?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("not an HTTP answer: {status_line:?}"))?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>()?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("connection") {
            close = value.eq_ignore_ascii_case("close");
        }
    }
    let framing = if status == 204 || status == 304 || (100..200).contains(&status) {
        Framing::Done
    } else if chunked {
        Framing::Chunked(Chunk::Size)
    } else if let Some(length) = length {
        if length == 0 {
            Framing::Done
        } else {
            Framing::Length(length)
        }
    } else {
        Framing::Close
    };
    Ok((status, framing, close))
}

impl Answer<'_> {
    /// Moves what `raw` holds of the body into `body`.
    fn decode(&mut self) -> Fallible<()> {
        let raw = &mut self.connection.raw;
        let mut at = 0;
        loop {
            match self.framing {
                Framing::Done => break,
                Framing::Close => {
                    self.body.extend_from_slice(&raw[at..]);
                    at = raw.len();
                    break;
                }
                Framing::Length(left) => {
                    let take = left.min(raw.len() - at);
                    self.body.extend_from_slice(&raw[at..at + take]);
                    at += take;
                    self.framing = if take == left {
                        Framing::Done
                    } else {
                        Framing::Length(left - take)
                    };
                    break;
                }
                Framing::Chunked(Chunk::Size) => {
                    let Some(end) = find(&raw[at..], b"\r\n") else {
                        break;
                    };
                    let line = std::str::from_utf8(&raw[at..at + end])?;
                    let hex = line.split(';').next().unwrap_or("").trim();
                    let size = usize::from_str_radix(hex, 16)
                        .map_err(|_| format!("a bad chunk size: {line:?}"))?;
                    at += end + 2;
                    self.framing = Framing::Chunked(if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    });
                }
                Framing::Chunked(Chunk::Data(left)) => {
                    let take = left.min(raw.len() - at);
                    if take == 0 {
                        break;
                    }
                    self.body.extend_from_slice(&raw[at..at + take]);
                    at += take;
                    self.framing = Framing::Chunked(if take == left {
                        Chunk::DataEnd
                    } else {
                        Chunk::Data(left - take)
                    });
                }
                Framing::Chunked(Chunk::DataEnd) => {
                    if raw.len() - at < 2 {
                        break;
                    }
                    at += 2;
                    self.framing = Framing::Chunked(Chunk::Size);
                }
                Framing::Chunked(Chunk::Trailer) => {
                    let Some(end) = find(&raw[at..], b"\r\n") else {
                        break;
                    };
                    at += end + 2;
                    if end == 0 {
                        self.framing = Framing::Done;
                    }
                }
            }
        }
        raw.drain(..at);
        Ok(())
    }

    /// Whether the body has been read whole.
    fn finished(&self) -> bool {
        matches!(self.framing, Framing::Done)
    }

    /// The next line of the body (without `\r\n`), `None` at the body's end; a read waits at
    /// most the connection's timeout ([`READ_TIMEOUT`] unless set).
    pub(crate) async fn line(&mut self) -> Fallible<Option<Vec<u8>>> {
        let limit = self.connection.timeout;
        self.next_line(Some(limit)).await
    }

    /// [`Answer::line`] without a time limit: for an event stream left idle on purpose.
    pub(crate) async fn line_idle(&mut self) -> Fallible<Option<Vec<u8>>> {
        self.next_line(None).await
    }

    async fn next_line(&mut self, limit: Option<Duration>) -> Fallible<Option<Vec<u8>>> {
        loop {
            self.decode()?;
            if let Some(end) = self.body[self.start..].iter().position(|b| *b == b'\n') {
                let line = &self.body[self.start..self.start + end];
                let line = line.strip_suffix(b"\r").unwrap_or(line).to_vec();
                self.start += end + 1;
                return Ok(Some(line));
            }
            if self.finished() {
                if self.start < self.body.len() {
                    let line = self.body[self.start..].to_vec();
                    self.start = self.body.len();
                    return Ok(Some(line));
                }
                self.done();
                return Ok(None);
            }
            // Keep the buffer small: drop the lines already returned.
            self.body.drain(..self.start);
            self.start = 0;
            if !self.connection.fill(limit).await? {
                if matches!(self.framing, Framing::Close) {
                    self.framing = Framing::Done;
                    continue;
                }
                return Err("the server closed the connection mid-answer".into());
            }
        }
    }

    /// The rest of the body as text.
    pub(crate) async fn text(mut self) -> Fallible<String> {
        let mut text = Vec::new();
        while let Some(line) = self.line().await? {
            text.extend_from_slice(&line);
            text.push(b'\n');
        }
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// After the body's end: a connection the server closes is dropped.
    fn done(&mut self) {
        if self.close {
            self.connection.close();
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server writing `answers` (raw bytes) to each request in turn on one connection.
    async fn server(answers: Vec<&'static [u8]>) -> SocketAddr {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            for answer in answers {
                let mut request = Vec::new();
                while find(&request, b"\r\n\r\n").is_none() {
                    let mut chunk = [0u8; 1024];
                    let n = socket.read(&mut chunk).await.expect("read");
                    request.extend_from_slice(&chunk[..n]);
                }
                // Answer in two writes, cut inside a chunk's size line and its data.
                let (first, second) = answer.split_at(answer.len() / 2);
                socket.write_all(first).await.expect("write");
                tokio::time::sleep(Duration::from_millis(5)).await;
                socket.write_all(second).await.expect("write");
            }
        });
        addr
    }

    #[tokio::test]
    async fn a_server_that_never_answers_times_out() -> Fallible<()> {
        // Bound and listening, never accepting: the connection completes in the backlog.
        let listener = super::super::fake::listen(0, 16)?;
        let addr = listener.local_addr()?;
        let started = std::time::Instant::now();
        let mut connection = Connection::new(addr).with_timeout(Duration::from_millis(200));
        let sent = connection.send("GET", "/", "", None).await;
        assert!(sent.is_err(), "an answer from a server that never accepted");
        assert!(started.elapsed() < Duration::from_secs(2));
        drop(listener);
        Ok(())
    }

    #[tokio::test]
    async fn reads_chunked_and_sized_bodies_line_by_line_on_one_connection() -> Fallible<()> {
        let addr = server(vec![
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
              9\r\ndata: a\n\n\r\nc\r\ndata: bcdef\n\r\n0\r\n\r\n",
            b"HTTP/1.1 202 Accepted\r\ncontent-length: 6\r\n\r\n{\"x\":1",
        ])
        .await;
        let mut connection = Connection::new(addr);
        let mut answer = connection.send("POST", "/a", "", Some("{}")).await?;
        assert_eq!(answer.status, 200);
        let mut lines = Vec::new();
        while let Some(line) = answer.line().await? {
            lines.push(String::from_utf8(line)?);
        }
        assert_eq!(lines, ["data: a", "", "data: bcdef"]);
        let answer = connection.send("GET", "/b", "", None).await?;
        assert_eq!(answer.status, 202);
        assert_eq!(answer.text().await?, "{\"x\":1\n");
        Ok(())
    }
}
