//! An agent's chat reply as text: which part of its output is the reply (a JSON pointer,
//! recorded as `reply` in its `agent:started`), the reply read from a finished output
//! ([`reply_text`]), and the reply decoded character by character from the model's streamed
//! output while it is still being written ([`ReplyDecoder`]).
//!
//! A model asked for structured output streams JSON: `{"reply": "Sunny,\nthen \"rain\""}`
//! arrives as fragments such as `{"re`, `ply": "Sun`, `ny,\n`. A chat client must show the
//! reply's characters — `Sunny,`, a newline, `then "rain"` — never JSON syntax or escapes.
//! The decoder reads the fragments as they come, keeps only the characters of the reply field's
//! string value, decodes its escapes (`\n`, `\"`, `\u00e9`, surrogate pairs, an escape split
//! across two fragments), and passes everything else by. A response that is not JSON at all
//! (an agent asked for plain text, or the prose a model writes before calling a tool) is
//! passed through as it is.

use serde_json::Value;

mod progress;

pub use progress::ReplyProgress;

/// The text of the reply in a finished output: the string at `pointer` (`""` is the whole
/// output, `"/reply"` a field), or, when the recording names no pointer (recorded before
/// replies were named), the output itself if it is a string, or its only field if it is an
/// object with exactly one field, a string.
///
/// ```
/// use openharness_projection::reply_text;
/// use serde_json::json;
/// let output = json!({ "reply": "Sunny.", "confidence": 0.9 });
/// assert_eq!(reply_text(&output, Some("/reply")).as_deref(), Some("Sunny."));
/// assert_eq!(reply_text(&output, None), None); // two fields: which one is the reply?
/// assert_eq!(reply_text(&json!({ "answer": "Yes." }), None).as_deref(), Some("Yes."));
/// assert_eq!(reply_text(&json!("Plain text."), Some("")).as_deref(), Some("Plain text."));
/// ```
pub fn reply_text(output: &Value, pointer: Option<&str>) -> Option<String> {
    match pointer {
        Some(pointer) => output.pointer(pointer)?.as_str().map(str::to_owned),
        None => match output {
            Value::String(text) => Some(text.clone()),
            Value::Object(fields) if fields.len() == 1 => fields
                .values()
                .next()
                .and_then(Value::as_str)
                .map(str::to_owned),
            _ => None,
        },
    }
}

/// Decodes a reply from a model's streamed output, fragment by fragment.
///
/// Made with the agent's reply pointer (as recorded in its `agent:started`; `None` when it
/// has no text reply). Each [`push`](Self::push) returns the reply's characters the fragment
/// completed. [`reset`](Self::reset) starts a new model response (after a tool call, or on a
/// re-asked attempt).
///
/// What a response is, is decided by its first character that is not whitespace:
/// - `{` or `[`: JSON. Only the string value of the pointer's top-level field is text
///   (pointer `/reply`); anything else — other fields, numbers, nested values, syntax — is not.
///   A deeper pointer (`/a/b`) yields no streamed text; the finished output still has it.
/// - three backticks (a code fence, with or without a language tag): JSON, from its `{`.
/// - anything else: prose, passed through as it is.
///
/// With the pointer `""` (the whole output is the reply: an agent asked for plain text)
/// every response is prose.
///
/// ```
/// use openharness_projection::ReplyDecoder;
/// let mut decoder = ReplyDecoder::new(Some("/reply"));
/// let mut text = String::new();
/// for fragment in [r#"{"confidence": 1, "re"#, r#"ply": "Sunny,\n"#, r#"then \"rain\"\u00"#, r#"e9"}"#] {
///     text.push_str(&decoder.push(fragment));
/// }
/// assert_eq!(text, "Sunny,\nthen \"rain\"é");
///
/// let mut prose = ReplyDecoder::new(Some("/reply"));
/// assert_eq!(prose.push("Let me look that up."), "Let me look that up.");
/// ```
#[derive(Debug, Clone)]
pub struct ReplyDecoder {
    /// The top-level field whose string is the reply; `None` when no streamed JSON is text.
    field: Option<String>,
    /// The whole output is the reply (pointer `""`): every response is prose.
    whole: bool,
    mode: Mode,
    /// Leading whitespace held until the response's kind is known (prose keeps it).
    leading: String,
}

#[derive(Debug, Clone)]
enum Mode {
    /// No character but whitespace seen yet.
    Undecided,
    /// Plain text, passed through.
    Prose,
    /// After an opening code fence (three backticks), before the JSON it holds.
    Fence,
    /// A JSON value being scanned.
    Json(Scanner),
}

impl ReplyDecoder {
    /// A decoder for an agent whose reply is at `pointer` (see [`reply_text`]).
    pub fn new(pointer: Option<&str>) -> Self {
        let whole = pointer == Some("");
        let field = pointer.filter(|_| !whole).and_then(|pointer| {
            let rest = pointer.strip_prefix('/')?;
            (!rest.contains('/')).then(|| rest.replace("~1", "/").replace("~0", "~"))
        });
        let mut decoder = Self {
            field,
            whole,
            mode: Mode::Undecided,
            leading: String::new(),
        };
        decoder.reset();
        decoder
    }

    /// Starts a new model response: the next fragment decides its kind afresh (an agent
    /// asked for plain text gets every response as written).
    pub fn reset(&mut self) {
        self.mode = if self.whole {
            Mode::Prose
        } else {
            Mode::Undecided
        };
        self.leading.clear();
    }

    /// Reads `fragment`; returns the reply characters it completed (often empty).
    pub fn push(&mut self, fragment: &str) -> String {
        let mut out = String::new();
        for (index, c) in fragment.char_indices() {
            match &mut self.mode {
                Mode::Prose => {
                    out.push_str(&fragment[index..]);
                    return out;
                }
                Mode::Json(scanner) => scanner.read(c, &mut out),
                // After an opening fence: its language tag and line break, then the JSON.
                Mode::Fence if c == '{' || c == '[' => self.start_json(c, &mut out),
                Mode::Fence if c.is_alphanumeric() || c.is_whitespace() => self.leading.push(c),
                Mode::Undecided if c.is_whitespace() => self.leading.push(c),
                Mode::Undecided if c == '`' => {
                    self.leading.push(c);
                    if self.leading.trim_start() == "```" {
                        self.mode = Mode::Fence;
                    }
                }
                Mode::Undecided if (c == '{' || c == '[') && !self.leading.contains('`') => {
                    self.start_json(c, &mut out);
                }
                Mode::Undecided | Mode::Fence => {
                    out.push_str(&std::mem::take(&mut self.leading));
                    out.push_str(&fragment[index..]);
                    self.mode = Mode::Prose;
                    return out;
                }
            }
        }
        out
    }

    fn start_json(&mut self, c: char, out: &mut String) {
        self.leading.clear();
        let mut scanner = Scanner::new(self.field.as_deref());
        scanner.read(c, out);
        self.mode = Mode::Json(scanner);
    }
}

/// Scans a JSON value one character at a time, emitting the decoded characters of one string.
#[derive(Debug, Clone)]
struct Scanner {
    /// The top-level field whose string value is emitted (`None`: emit nothing).
    field: Option<String>,
    depth: u32,
    /// The value being scanned is an object (only its fields can be the reply).
    object: bool,
    /// At depth 1 of an object, the next string is a key.
    expect_key: bool,
    /// The key just read, at depth 1.
    key: String,
    /// The key whose value comes next, once its `:` was read.
    value_of: Option<String>,
    string: Option<Str>,
    /// Where the characters of strings that are not the reply go (and are dropped).
    skipped: String,
}

/// A string being read.
#[derive(Debug, Clone)]
struct Str {
    kind: StrKind,
    escape: Escape,
    /// A high surrogate waiting for its low half.
    high: Option<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum StrKind {
    /// A key at depth 1: collected into `key`.
    Key,
    /// The reply: emitted.
    Reply,
    /// Anything else: skipped.
    Other,
}

#[derive(Debug, Clone)]
enum Escape {
    None,
    /// After a backslash.
    Started,
    /// Inside `\u`, with the hex digits read so far.
    Unicode(String),
}

impl Scanner {
    fn new(field: Option<&str>) -> Self {
        Self {
            field: field.map(str::to_owned),
            depth: 0,
            object: false,
            expect_key: false,
            key: String::new(),
            value_of: None,
            string: None,
            skipped: String::new(),
        }
    }

    fn read(&mut self, c: char, out: &mut String) {
        if let Some(string) = &mut self.string {
            let kind = string.kind;
            let ended = match kind {
                StrKind::Key => string.read(c, &mut self.key),
                StrKind::Reply => string.read(c, out),
                StrKind::Other => {
                    self.skipped.clear();
                    string.read(c, &mut self.skipped)
                }
            };
            if ended {
                self.string = None;
                if kind != StrKind::Key {
                    self.value_of = None;
                }
            }
            return;
        }
        match c {
            '"' => {
                let kind = if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.key.clear();
                    StrKind::Key
                } else if self.depth == 1 && self.value_of.is_some() && self.value_of == self.field
                {
                    StrKind::Reply
                } else {
                    StrKind::Other
                };
                self.string = Some(Str {
                    kind,
                    escape: Escape::None,
                    high: None,
                });
            }
            '{' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.object = true;
                    self.expect_key = true;
                }
                if self.depth == 2 {
                    self.value_of = None;
                }
            }
            '[' => {
                self.depth += 1;
                if self.depth == 2 {
                    self.value_of = None;
                }
            }
            '}' | ']' => self.depth = self.depth.saturating_sub(1),
            ',' if self.depth == 1 && self.object => {
                self.expect_key = true;
                self.value_of = None;
            }
            ':' if self.depth == 1 => self.value_of = Some(std::mem::take(&mut self.key)),
            _ => {}
        }
    }
}

impl Str {
    /// Reads one character of the string's source; the decoded characters go to `out`.
    /// `true` once the closing quote is read.
    fn read(&mut self, c: char, out: &mut String) -> bool {
        match &mut self.escape {
            Escape::None => match c {
                '"' => {
                    self.flush_high(out);
                    return true;
                }
                '\\' => self.escape = Escape::Started,
                c => {
                    self.flush_high(out);
                    out.push(c);
                }
            },
            Escape::Started => {
                self.escape = Escape::None;
                let decoded = match c {
                    'u' => {
                        self.escape = Escape::Unicode(String::with_capacity(4));
                        return false;
                    }
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    other => other, // `"`, `\`, `/` (and, leniently, anything else)
                };
                self.flush_high(out);
                out.push(decoded);
            }
            Escape::Unicode(_) if !c.is_ascii_hexdigit() => {
                // Not JSON: the escape ends here, as a replacement character.
                self.escape = Escape::None;
                self.flush_high(out);
                out.push('\u{FFFD}');
            }
            Escape::Unicode(digits) => {
                digits.push(c);
                if digits.len() == 4 {
                    let unit = u16::from_str_radix(digits, 16).unwrap_or(0xFFFD);
                    self.escape = Escape::None;
                    self.unit(unit, out);
                }
            }
        }
        false
    }

    /// A UTF-16 code unit from a `\u` escape.
    fn unit(&mut self, unit: u16, out: &mut String) {
        match (self.high.take(), unit) {
            (Some(high), 0xDC00..=0xDFFF) => {
                let code =
                    0x10000 + ((u32::from(high) - 0xD800) << 10) + (u32::from(unit) - 0xDC00);
                out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            (high, 0xD800..=0xDBFF) => {
                if high.is_some() {
                    out.push('\u{FFFD}');
                }
                self.high = Some(unit);
            }
            (high, unit) => {
                if high.is_some() {
                    out.push('\u{FFFD}');
                }
                out.push(char::from_u32(u32::from(unit)).unwrap_or('\u{FFFD}'));
            }
        }
    }

    /// A high surrogate not followed by its low half is a replacement character.
    fn flush_high(&mut self, out: &mut String) {
        if self.high.take().is_some() {
            out.push('\u{FFFD}');
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn decode_in(pointer: Option<&str>, fragments: &[&str]) -> String {
        let mut decoder = ReplyDecoder::new(pointer);
        fragments.iter().map(|f| decoder.push(f)).collect()
    }

    #[test]
    fn only_the_reply_field_is_text() {
        let text = decode_in(
            Some("/reply"),
            &[
                r#"{"title": "x\"y", "nested": {"reply": "no"}, "list": ["reply", 1],"#,
                r#" "reply": "yes\\no\tend", "after": "no"}"#,
            ],
        );
        assert_eq!(text, "yes\\no\tend");
    }

    #[test]
    fn escapes_split_across_fragments_decode() {
        let source = r#"{"reply":"a\n\"b\"\u00e9\ud83d\ude00/\/"}"#;
        for cut in 0..source.len() {
            let text = decode_in(Some("/reply"), &[&source[..cut], &source[cut..]]);
            assert_eq!(text, "a\n\"b\"é😀//", "cut at {cut}");
        }
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(decode_in(Some("/r"), &[r#"{"r":"\ud83dx"}"#]), "\u{FFFD}x");
        assert_eq!(decode_in(Some("/r"), &[r#"{"r":"\ude00"}"#]), "\u{FFFD}");
    }

    #[test]
    fn prose_passes_through_and_json_without_a_reply_is_silent() {
        assert_eq!(
            decode_in(Some("/reply"), &["  Let me", " check."]),
            "  Let me check."
        );
        assert_eq!(decode_in(None, &[" {\"plan\": ", "[\"a\"]}"]), "");
        assert_eq!(decode_in(None, &["Thinking", "..."]), "Thinking...");
        assert_eq!(decode_in(Some("/a/b"), &[r#"{"a":{"b":"deep"}}"#]), "");
    }

    #[test]
    fn a_plain_text_reply_is_passed_through_as_written() {
        // `"To be…" is Hamlet.` is text, not a JSON string.
        let text = decode_in(Some(""), &["\"To be or not\" is ", "Hamlet \\n {x}"]);
        assert_eq!(text, "\"To be or not\" is Hamlet \\n {x}");
    }

    #[test]
    fn fenced_json_is_json_and_backticks_in_prose_are_prose() {
        let fenced = ["```js", "on\n{\"reply\": \"Hi\"}", "\n```"];
        assert_eq!(decode_in(Some("/reply"), &fenced), "Hi");
        assert_eq!(
            decode_in(Some("/reply"), &["``` {\"reply\":\"Yo\"}```"]),
            "Yo"
        );
        assert_eq!(decode_in(Some("/reply"), &["`x` is {a}"]), "`x` is {a}");
        assert_eq!(decode_in(Some("/reply"), &["``", "oops"]), "``oops");
    }

    #[test]
    fn a_broken_unicode_escape_ends_as_a_replacement_character() {
        assert_eq!(
            decode_in(Some("/r"), &[r#"{"r":"a\u00é b"}"#]),
            "a\u{FFFD} b"
        );
    }

    #[test]
    fn commas_of_a_top_level_array_are_not_keys() {
        assert_eq!(
            decode_in(Some("/reply"), &[r#"["reply", "x", {"reply": "no"}]"#]),
            ""
        );
    }

    #[test]
    fn reset_starts_a_new_response() {
        let mut decoder = ReplyDecoder::new(Some("/reply"));
        assert_eq!(decoder.push("Looking it up."), "Looking it up.");
        decoder.reset();
        assert_eq!(decoder.push(r#"{"reply":"Found."}"#), "Found.");
    }

    #[test]
    fn pointer_escapes_name_the_field() {
        assert_eq!(decode_in(Some("/a~1b"), &[r#"{"a/b":"ok"}"#]), "ok");
        assert_eq!(
            reply_text(&json!({"a/b": "ok"}), Some("/a~1b")).as_deref(),
            Some("ok")
        );
    }

    proptest! {
        /// However the model's JSON is cut into fragments, the decoded text is the field's value.
        #[test]
        fn any_split_decodes_the_field(
            reply in any::<String>(),
            other in any::<String>(),
            first in any::<bool>(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let value = if first {
                json!({ "reply": reply, "other": { "reply": other, "n": [1, 2] } })
            } else {
                json!({ "other": [other, { "reply": "x" }], "reply": reply })
            };
            let source = serde_json::to_string_pretty(&value).unwrap();
            let chars: Vec<(usize, char)> = source.char_indices().collect();
            let mut offsets: Vec<usize> = cuts.iter().map(|i| chars[i.index(chars.len())].0).collect();
            offsets.sort_unstable();
            offsets.dedup();
            let mut decoder = ReplyDecoder::new(Some("/reply"));
            let mut text = String::new();
            let mut start = 0;
            for offset in offsets.into_iter().chain([source.len()]) {
                text.push_str(&decoder.push(&source[start..offset]));
                start = offset;
            }
            prop_assert_eq!(text, reply);
        }
    }
}
