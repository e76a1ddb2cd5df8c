//! A session's events as Server-Sent Events: `event: <name>`, `id: <seq>`, `data: <the event
//! with its seq>`, from the seq after `Last-Event-ID` (or `?after=`), history then live through
//! `Store::subscribe`, so nothing is lost or repeated at the boundary or across reconnects.
//!
//! The stream opens with a `retry:` hint, sends a comment heartbeat every
//! [`crate::ServerOptions::heartbeat`], and is marked `x-accel-buffering: no` and
//! `cache-control: no-cache` so proxies pass it on at once. Each session accepts at most
//! [`crate::ServerOptions::max_streams_per_session`] streams at a time; one more is answered 429.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::{Recorded, SessionId, StoreError};

use crate::error::ApiError;

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
    let subscription = subscribe(state, &session, from).await?;
    let hello = stream::once(async { Ok(Event::default().retry(RETRY).comment("openharness")) });
    // The stream owns `counted`: the session's count drops when the client goes away.
    let events = subscription.map(move |item| {
        let _open = &counted;
        Ok::<_, Infallible>(to_event(item))
    });
    let response = answer(hello.chain(events), state.options.heartbeat, "heartbeat");
    Ok(response)
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

fn to_event(item: Result<Recorded, StoreError>) -> Event {
    match item {
        Ok(recorded) => {
            let event = Event::default()
                .event(recorded.event.name.as_ref())
                .id(recorded.seq.to_string());
            match serde_json::to_string(&recorded) {
                Ok(data) => event.data(data),
                Err(err) => error_event(&format!("event {} does not encode: {err}", recorded.seq)),
            }
        }
        Err(err) => error_event(&format!("the store stopped the stream: {err}")),
    }
}

fn error_event(message: &str) -> Event {
    let data = serde_json::json!({ "error": { "code": "stream_failed", "message": message } });
    Event::default().event("error").data(data.to_string())
}
