//! A Server-Sent Events parser that follows the WHATWG rules (HTML §9.2).
//!
//! Bytes go in as they arrive, in chunks of any size; complete events come out. Lines end with
//! CRLF, LF or CR (also when a CRLF is split across chunks), a leading BOM is dropped, lines
//! starting with `:` are comments (OpenRouter's `: OPENROUTER PROCESSING`), `data:` lines join
//! with `\n`, a blank line dispatches, an event without data is not dispatched, and an event
//! not closed by a blank line before the end of the stream is discarded.

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
/// let mut events = parser.push(b"event: ping\ndata: {\"type\"");
/// assert!(events.is_empty(), "no blank line yet");
/// events = parser.push(b":\"ping\"}\r\n\r\n: a comment\n\ndata: a\ndata: b\n\n");
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].event, "ping");
/// assert_eq!(events[0].data, r#"{"type":"ping"}"#);
/// assert_eq!(events[1].event, "message");
/// assert_eq!(events[1].data, "a\nb");
/// ```
#[derive(Debug, Default)]
pub struct SseParser {
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

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events they complete, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
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
        }
        out
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
        chunks.iter().flat_map(|c| parser.push(c)).collect()
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
    fn a_single_leading_space_is_removed_and_colonless_lines_are_fields() {
        let events = all(&[b"data:  two spaces\ndata\n\n"]);
        assert_eq!(events[0].data, " two spaces\n");
    }
}
