//! A session's events as Server-Sent Events: `event: <name>`, `id: <seq>`, `data: <the event
//! with its seq>`, from the seq after `Last-Event-ID` (or `?after=`): history from the store,
//! then live from the session's shared tail (`crate::hub`), so nothing is lost or repeated at
//! the boundary or across reconnects, and an event is encoded once however many watch it.
//!
//! The stream opens with a `retry:` hint, sends a comment heartbeat whenever
//! [`crate::ServerOptions::heartbeat`] passes without a frame, and is marked `x-accel-buffering: no` and
//! `cache-control: no-cache` so proxies pass it on at once. Each session accepts at most
//! [`crate::ServerOptions::max_streams_per_session`] streams at a time; one more is answered 429.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use openharness_core::SessionId;

use crate::error::ApiError;
use crate::hub::Follower;

/// How long a client waits before reconnecting, as the stream's `retry:` hint.
const RETRY: Duration = Duration::from_secs(1);

/// Open streams per session.
#[derive(Debug, Default)]
pub(crate) struct StreamCounts {
    open: Mutex<HashMap<SessionId, usize>>,
}

/// One open stream, counted until dropped.
struct Counted {
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
    /// Counts a new stream of `session`, unless `max` are open already.
    fn open(self: &Arc<Self>, session: &SessionId, max: usize) -> Option<Counted> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(session.clone()).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Counted {
            counts: Arc::clone(self),
            session: session.clone(),
        })
    }
}

/// The SSE answer for `session` from seq `from`.
pub(crate) async fn events(
    state: &crate::AppState,
    session: SessionId,
    from: u64,
) -> Result<Response, ApiError> {
    let Some(counted) = state
        .streams
        .open(&session, state.options.max_streams_per_session)
    else {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_streams",
            format!(
                "session {session} has {} event streams open already; close one or retry later",
                state.options.max_streams_per_session
            ),
        ));
    };
    // The session must exist, or be one whose first turn this server has just started (its
    // first events may not be recorded yet); a typo is a 404.
    if crate::routes::turn_start(state, &session).is_none() {
        state.host.session(&session).await?;
    }
    let follower = state
        .hubs
        .follow(state.host.store(), &session, from)
        .await
        .map_err(|err| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                err.to_string(),
            )
        })?;
    // The stream owns `counted`: the session's count drops when the client goes away.
    Ok(framed(follower, counted, state.options.heartbeat))
}

/// The event stream's answer: the `retry:` hint, then the follower's frames, with a comment
/// heartbeat whenever `heartbeat` passes without one.
fn framed(follower: Follower, counted: Counted, heartbeat: Duration) -> Response {
    let hello = Bytes::from(format!(": openharness\nretry: {}\n\n", RETRY.as_millis()));
    let frames = stream::unfold(
        (follower, counted, Some(hello)),
        move |(mut follower, counted, mut hello)| async move {
            if let Some(hello) = hello.take() {
                return Some((Ok::<_, Infallible>(hello), (follower, counted, None)));
            }
            // `Follower::next` is cancel-safe, so the heartbeat may interrupt it.
            let bytes = tokio::select! {
                next = follower.next() => next?,
                () = tokio::time::sleep(heartbeat) => Bytes::from_static(b": heartbeat\n\n"),
            };
            Some((Ok(bytes), (follower, counted, None)))
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

/// A live tail of `session` from seq `from`, for a stream answer.
pub(crate) async fn subscribe(
    state: &crate::AppState,
    session: &SessionId,
    from: u64,
) -> Result<openharness_core::Subscription, ApiError> {
    state
        .host
        .store()
        .subscribe(session, from)
        .await
        .map_err(|err| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                err.to_string(),
            )
        })
}

/// An SSE answer of `events`, with the heartbeat and the headers that keep proxies from
/// buffering it.
pub(crate) fn answer<S>(events: S, heartbeat: Duration, heartbeat_text: &str) -> Response
where
    S: futures_util::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(heartbeat).text(heartbeat_text))
        .into_response();
    let headers = response.headers_mut();
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
