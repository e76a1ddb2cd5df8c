//! A Server-Sent Events parser that follows the WHATWG rules (HTML §9.2).
//!
//! Bytes go in as they arrive, in chunks of any size; complete events come out. Lines end with
//! CRLF, LF or CR (also when a CRLF is split across chunks), a leading BOM is dropped, lines
//! starting with `:` are comments (OpenRouter's `: OPENROUTER PROCESSING`), `data:` lines join
//! with `\n`, a blank line dispatches, an event without data is not dispatched, and an event
//! not closed by a blank line before the end of the stream is discarded.
//!
//! An event may hold at most [`SseParser::DEFAULT_LIMIT`] bytes (or the limit given to
//! [`SseParser::with_limit`]): a peer that sends an endless line, or data lines without the
//! blank line that dispatches them, gets an [`SseTooLarge`] error instead of the memory.

/// An event grew past the parser's limit; the stream cannot be read further.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "an event of the stream grew past {limit} bytes without ending (a line or its data lines); the stream is not read further"
)]
pub struct SseTooLarge {
    /// The limit, in bytes.
    pub limit: usize,
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type, `message` when none was given.
    pub event: String,
    /// The data lines, joined with `\n`.
    pub data: String,
    /// The last event id seen so far (ids persist across events until changed).
    pub id: Option<String>,
}

/// An incremental SSE parser.
///
/// ```
/// use openharness_provider::sse::SseParser;
///
/// let mut parser = SseParser::new();
/// let mut events = parser.push(b"event: ping\ndata: {\"type\"")?;
/// assert!(events.is_empty(), "no blank line yet");
/// events = parser.push(b":\"ping\"}\r\n\r\n: a comment\n\ndata: a\ndata: b\n\n")?;
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].event, "ping");
/// assert_eq!(events[0].data, r#"{"type":"ping"}"#);
/// assert_eq!(events[1].event, "message");
/// assert_eq!(events[1].data, "a\nb");
/// # Ok::<(), openharness_provider::sse::SseTooLarge>(())
/// ```
#[derive(Debug)]
pub struct SseParser {
    /// The most bytes one event may buffer (its current line and its data).
    limit: usize,
    /// Set once the limit was passed: every later push fails.
    too_large: bool,
    line: Vec<u8>,
    /// The previous chunk ended with CR: a LF starting the next chunk belongs to it.
    after_cr: bool,
    /// A line has ended (so a BOM can no longer come).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::with_limit(Self::DEFAULT_LIMIT)
    }
}

impl SseParser {
    /// The default most bytes of one event: 16 MiB, far above any model's chunk.
    pub const DEFAULT_LIMIT: usize = 16 * 1024 * 1024;

    /// A parser at the start of a stream, with [`SseParser::DEFAULT_LIMIT`].
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser whose events may hold at most `limit` bytes.
    ///
    /// ```
    /// use openharness_provider::sse::SseParser;
    /// let mut parser = SseParser::with_limit(16);
    /// assert!(parser.push(b"data: short\n\n").is_ok());
    /// let err = parser.push(b"data: far too long for it").unwrap_err();
    /// assert_eq!(err.limit, 16);
    /// ```
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            too_large: false,
            line: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            id: None,
        }
    }

    /// Feeds bytes; returns the events they complete, in order, or [`SseTooLarge`] once an
    /// event grows past the limit (then always).
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        let too_large = SseTooLarge { limit: self.limit };
        if self.too_large {
            return Err(too_large);
        }
        let mut out = Vec::new();
        for &byte in bytes {
            if std::mem::take(&mut self.after_cr) && byte == b'\n' {
                continue;
            }
            match byte {
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                b'\n' => self.end_line(&mut out),
                _ => self.line.push(byte),
            }
            if self.line.len() + self.data.len() + self.event.len() > self.limit {
                self.too_large = true;
                self.line = Vec::new();
                self.data = String::new();
                return Err(too_large);
            }
        }
        Ok(out)
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let mut line = std::mem::take(&mut self.line);
        if !std::mem::replace(&mut self.started, true) && line.starts_with(b"\xEF\xBB\xBF") {
            // One BOM at the very start of the stream is dropped (it may arrive split).
            line.drain(..3);
        }
        let line = String::from_utf8_lossy(&line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => {
                self.id = (!value.is_empty()).then(|| value.to_owned());
            }
            _ => {} // `retry` and unknown fields
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // the trailing `\n`
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.id.clone(),
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        chunks
            .iter()
            .flat_map(|c| parser.push(c).unwrap())
            .collect()
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let events = all(&[b"data: x\r", b"\n\r", b"\ndata: y\n\n"]);
        let data: Vec<_> = events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, ["x", "y"]);
    }

    #[test]
    fn lone_cr_ends_lines() {
        let events = all(&[b"event: a\rdata: 1\r\r"]);
        assert_eq!(events.len(), 1);
        assert_eq!(
            (events[0].event.as_str(), events[0].data.as_str()),
            ("a", "1")
        );
    }

    #[test]
    fn bom_is_stripped_once_and_multibyte_text_survives_any_split() {
        let text = "data: ¡olá €!\n\n".as_bytes();
        let mut bytes = b"\xEF\xBB\xBF".to_vec();
        bytes.extend_from_slice(text);
        for split in 0..bytes.len() {
            let events = all(&[&bytes[..split], &bytes[split..]]);
            assert_eq!(events.len(), 1, "split at {split}");
            assert_eq!(events[0].data, "¡olá €!");
        }
    }

    #[test]
    fn unterminated_event_is_discarded_and_empty_data_not_dispatched() {
        assert!(all(&[b"event: x\n\n", b"data: cut"]).is_empty());
    }

    #[test]
    fn ids_persist_and_reset() {
        let events = all(&[b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"]);
        let ids: Vec<_> = events.iter().map(|e| e.id.clone()).collect();
        assert_eq!(ids, [Some("7".to_owned()), Some("7".to_owned()), None]);
    }

    #[test]
    fn an_endless_line_or_undispatched_data_stops_at_the_limit() {
        let mut parser = SseParser::with_limit(1024);
        let chunk = [b'x'; 100];
        let mut pushed = 0;
        let err = loop {
            match parser.push(&chunk) {
                Ok(events) => assert!(events.is_empty()),
                Err(err) => break err,
            }
            pushed += chunk.len();
            assert!(pushed <= 1024, "the limit holds");
        };
        assert_eq!(err.limit, 1024);
        assert!(
            parser.push(b"\n\ndata: late\n\n").is_err(),
            "a failed parser stays failed"
        );

        // Data lines without the blank line that dispatches them count too.
        let mut parser = SseParser::with_limit(1024);
        let line = format!("data: {}\n", "y".repeat(90));
        let results: Vec<_> = (0..20).map(|_| parser.push(line.as_bytes())).collect();
        assert!(results.iter().any(Result::is_err));
        // Events under the limit, dispatched one by one, are never refused.
        let mut parser = SseParser::with_limit(1024);
        for _ in 0..100 {
            let event = format!("data: {}\n\n", "z".repeat(500));
            assert_eq!(parser.push(event.as_bytes()).unwrap().len(), 1);
        }
    }

    #[test]
    fn a_single_leading_space_is_removed_and_colonless_lines_are_fields() {
        let events = all(&[b"data:  two spaces\ndata\n\n"]);
        assert_eq!(events[0].data, " two spaces\n");
    }
}
