//! The one Server-Sent Events writer of every route family: the native event stream
//! (`/sessions/{id}/events`), the AI SDK chat (`/api/chat`), the seeds' handler
//! (`/api/workflow`) and the platform's notifications (`/v1/…/events`, `…/sse`).
//!
//! - [`frame`] encodes one frame (`event:`, `id:`, `data:` lines; a value with a line break
//!   is never split into a forged field), [`error_frame`] the `event: error` frame a stream
//!   ends with when it cannot go on (`data: {"error": {"code", "message"}}`, the error shape
//!   of every route).
//! - [`respond`] answers a stream of frames: it opens with a `retry:` hint, sends a comment
//!   heartbeat whenever [`crate::ServerOptions::heartbeat`] passes without a frame, and marks
//!   the answer `x-accel-buffering: no` and `cache-control: no-cache` so proxies pass it on
//!   at once.
//! - [`StreamCounts`] caps the streams of one session at
//!   [`crate::ServerOptions::max_streams_per_session`]; one more is `429 too_many_streams`.
//! - Where a stream resumes is read once: [`last_event_id`] gives the `Last-Event-ID` header
//!   (which wins over the query's cursors, `?after=` and, on `/v1`, `?since_id=`), and each
//!   family reads its own frame ids from it (a seq natively; `seq` or `seq.0` on `/v1`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures_util::{Stream, StreamExt, stream};
use openharness_core::SessionId;

use crate::error::ApiError;

/// How long a client waits before reconnecting, as the stream's `retry:` hint.
const RETRY: Duration = Duration::from_secs(1);

/// Open streams per session.
#[derive(Debug, Default)]
pub(crate) struct StreamCounts {
    open: Mutex<HashMap<SessionId, usize>>,
}

/// One open stream, counted until dropped.
pub(crate) struct Counted {
    counts: Arc<StreamCounts>,
    session: SessionId,
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut open = self
            .counts
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.session) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.session);
            }
        }
    }
}

impl StreamCounts {
    /// Counts a new stream of `session`, unless `max` are open already (`429`).
    pub(crate) fn open(
        self: &Arc<Self>,
        session: &SessionId,
        max: usize,
    ) -> Result<Counted, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(session.clone()).or_default();
        if *count >= max {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_streams",
                format!(
                    "session {session} has {max} event streams open already; close one or retry later"
                ),
            ));
        }
        *count += 1;
        Ok(Counted {
            counts: Arc::clone(self),
            session: session.clone(),
        })
    }
}

/// One SSE frame: `event: <event>` (when given), `id: <id>` (when given), and `data` as
/// `data:` lines. An `event` or `id` holding a line break is left out rather than split (an
/// imported log can hold such a name); `data` is split at its line breaks, one `data:` line
/// each, as the format asks.
///
/// The frame ends with the blank line that dispatches it.
pub(crate) fn frame(event: Option<&str>, id: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 48);
    for (field, value) in [("event", event), ("id", id)] {
        if let Some(value) = value.filter(|v| !v.contains(['\r', '\n', '\0'])) {
            out.push_str(field);
            out.push_str(": ");
            out.push_str(value);
            out.push('\n');
        }
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// One SSE frame whose data is `data` as JSON, serialised straight into the frame: the same
/// bytes as [`frame`] of its JSON text (compact JSON holds no line break, so it is one `data:`
/// line), without the text in between.
pub(crate) fn json_frame<T: serde::Serialize + ?Sized>(
    event: Option<&str>,
    id: Option<&str>,
    data: &T,
) -> Bytes {
    let mut out = Vec::with_capacity(256);
    for (field, value) in [("event", event), ("id", id)] {
        if let Some(value) = value.filter(|v| !v.contains(['\r', '\n', '\0'])) {
            out.extend_from_slice(field.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.push(b'\n');
        }
    }
    out.extend_from_slice(b"data: ");
    let start = out.len();
    if serde_json::to_writer(&mut out, data).is_err() {
        // Nothing is sent half written: a value that cannot be JSON is an empty `data:` line.
        out.truncate(start);
    }
    out.extend_from_slice(b"\n\n");
    Bytes::from(out)
}

/// The `event: error` frame a stream ends with when it cannot go on, its data the error shape
/// of every route: `{"error": {"code", "message"}}`.
pub(crate) fn error_frame(code: &str, message: &str) -> Bytes {
    let data = serde_json::json!({ "error": { "code": code, "message": message } });
    frame(Some("error"), None, &data.to_string())
}

/// The answer of an event stream: the `retry:` hint, then `frames`, with a comment heartbeat
/// whenever `heartbeat` passes without one. The stream holds `counted` (its place under the
/// session's cap) until the client goes away or `frames` ends.
pub(crate) fn respond<S>(frames: S, counted: Option<Counted>, heartbeat: Duration) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let hello = Bytes::from(format!(": openharness\nretry: {}\n\n", RETRY.as_millis()));
    respond_after(hello, frames, counted, heartbeat)
}

/// [`respond`] without the `retry:` hint, for clients whose parser takes a block holding only
/// `retry:` for an event with empty data (the `openai` Python SDK does, and fails on it): the
/// stream opens with a comment.
pub(crate) fn respond_without_retry<S>(
    frames: S,
    counted: Option<Counted>,
    heartbeat: Duration,
) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    respond_after(
        Bytes::from_static(b": openharness\n\n"),
        frames,
        counted,
        heartbeat,
    )
}

/// An event stream answer that sends `hello` first, then `frames` with heartbeats.
fn respond_after<S>(
    hello: Bytes,
    frames: S,
    counted: Option<Counted>,
    heartbeat: Duration,
) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let frames = stream::unfold(
        (Box::pin(frames), counted, Some(hello)),
        move |(mut frames, counted, mut hello)| async move {
            if let Some(hello) = hello.take() {
                return Some((Ok::<_, Infallible>(hello), (frames, counted, None)));
            }
            // `StreamExt::next` is cancel-safe, so the heartbeat may interrupt it.
            let bytes = tokio::select! {
                next = frames.next() => next?,
                () = tokio::time::sleep(heartbeat) => Bytes::from_static(b": heartbeat\n\n"),
            };
            Some((Ok(bytes), (frames, counted, None)))
        },
    );
    let mut response = Response::new(Body::from_stream(frames));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Whether the request asks for an event stream (`Accept: text/event-stream`).
pub(crate) fn wanted(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
}

/// The `Last-Event-ID` a reconnecting client sent, trimmed: `400` when it is not text.
pub(crate) fn last_event_id(headers: &HeaderMap) -> Result<Option<&str>, ApiError> {
    match headers.get("last-event-id").map(|v| v.to_str()) {
        None => Ok(None),
        Some(Ok(text)) => Ok(Some(text.trim())),
        Some(Err(_)) => Err(ApiError::bad_request("Last-Event-ID is not text")),
    }
}

/// The native event stream of `session` from seq `from`: history from the store, then live
/// from the session's shared tail (`crate::hub`), each event encoded once however many watch.
pub(crate) async fn events(
    state: &crate::AppState,
    session: SessionId,
    from: u64,
) -> Result<Response, ApiError> {
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    // The session must exist, or be one whose first turn this server has just started (its
    // first events may not be recorded yet); a typo is a 404.
    if !state.host.is_running(&session) {
        state.host.session(&session).await?;
    }
    let follower = state
        .hubs
        .follow(state.host.store(), &session, from)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    let frames = stream::unfold(follower, |mut follower| async move {
        let bytes = follower.next().await?;
        Some((bytes, follower))
    });
    Ok(respond(frames, Some(counted), state.options.heartbeat))
}

/// A live tail of `session` from seq `from`, for a stream answer.
pub(crate) async fn subscribe(
    state: &crate::AppState,
    session: &SessionId,
    from: u64,
) -> Result<openharness_core::adapter::Subscription, ApiError> {
    state
        .host
        .store()
        .subscribe(session, from)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_frame_is_the_frame_of_the_json_text() {
        let data =
            serde_json::json!({ "a": "line\nbreak\r and \"quotes\" 日本 🎉", "b": [1, null] });
        for (event, id) in [
            (None, None),
            (Some("response.output_text.delta"), None),
            (None, Some("12.3")),
            (Some("a\nid: 9"), Some("7")),
        ] {
            assert_eq!(
                json_frame(event, id, &data),
                frame(event, id, &data.to_string())
            );
        }
    }

    #[test]
    fn frames_never_let_a_value_forge_a_field() {
        assert_eq!(
            frame(Some("a"), Some("7"), "{}"),
            Bytes::from("event: a\nid: 7\ndata: {}\n\n")
        );
        assert_eq!(
            frame(Some("a\nid: 9"), None, "x\r\ny"),
            Bytes::from("data: x\ndata: y\n\n")
        );
        let error = error_frame("stream_failed", "gone");
        assert!(error.starts_with(b"event: error\ndata: {\"error\":"));
    }
}
