//! [`ReplyProgress`]: how far one agent call's reply has streamed, the piece every projection
//! of a streamed reply shares (the AI SDK stream, Open Responses, AG-UI, A2A).

use serde_json::Value;

use super::{ReplyDecoder, reply_text};

/// One agent call's reply as it streams: the reply pointer its `agent:started` recorded, the
/// decoder reading the model's fragments, the attempt under way, and the reply characters the
/// current model response has shown.
///
/// ```
/// use openharness_projection::ReplyProgress;
/// use serde_json::json;
/// let mut reply = ReplyProgress::new(Some("/reply".into()));
/// assert_eq!(reply.push("{\"reply\": \"Hel", 1), (false, "Hel".to_owned()));
/// // The finished output holds the whole reply: the rest is what was not shown yet.
/// assert_eq!(reply.rest(&json!({ "reply": "Hello" })).as_deref(), Some("lo"));
/// // A re-asked attempt starts over: its text is new.
/// assert_eq!(reply.push("{\"reply\": \"Hi", 2), (true, "Hi".to_owned()));
/// ```
#[derive(Debug)]
pub struct ReplyProgress {
    pointer: Option<String>,
    decoder: ReplyDecoder,
    attempt: u32,
    streamed: String,
}

impl ReplyProgress {
    /// A call whose reply is at `pointer` (`None`: recorded before replies were named).
    pub fn new(pointer: Option<String>) -> Self {
        Self {
            decoder: ReplyDecoder::new(pointer.as_deref()),
            pointer,
            attempt: 1,
            streamed: String::new(),
        }
    }

    /// Reads a `text:delta` of `attempt`: whether it starts a later attempt (a re-asked
    /// response, whose text a stream shows as new: it cannot take back what the rejected one
    /// showed), and the reply characters it completes (often none).
    pub fn push(&mut self, delta: &str, attempt: u32) -> (bool, String) {
        let restarted = attempt > self.attempt;
        if restarted {
            self.attempt = attempt;
            self.next_response();
        }
        let text = self.decoder.push(delta);
        self.streamed.push_str(&text);
        (restarted, text)
    }

    /// A new model response of the same call (after its tool calls): read afresh.
    pub fn next_response(&mut self) {
        self.decoder.reset();
        self.streamed.clear();
    }

    /// What the call's finished `output` adds to what was shown: the rest of its reply, or
    /// all of it for a model that streamed none; `None` when nothing is left to show.
    pub fn rest(&self, output: &Value) -> Option<String> {
        let reply = reply_text(output, self.pointer.as_deref())?;
        let rest = reply.strip_prefix(self.streamed.as_str())?;
        (!rest.is_empty()).then(|| rest.to_owned())
    }
}
