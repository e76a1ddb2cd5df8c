//! A JSON answer that waits for a turn: its head is sent at once, then a space whenever
//! [`crate::ServerOptions::heartbeat`] passes (leading whitespace is valid JSON), then the JSON
//! once it is ready, so neither this server's idle guard (`GuardedListener` closes a
//! connection it has written nothing to for 60 s) nor a proxy takes a long turn for a dead
//! connection. Used by the non-streamed Open Responses `POST /v1/responses` and A2A
//! `SendMessage`, which answer when the turn ends.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use futures_util::stream;

/// `200` with `answer`'s JSON once it resolves, a space every `every` until then.
pub(crate) fn json_when_ready<F>(answer: F, every: Duration) -> Response
where
    F: Future<Output = String> + Send + 'static,
{
    let body = stream::unfold(Some(Box::pin(answer)), move |waiting| async move {
        let mut answer = waiting?;
        tokio::select! {
            json = &mut answer => Some((Ok::<_, std::convert::Infallible>(Bytes::from(json)), None)),
            () = tokio::time::sleep(every) => Some((Ok(Bytes::from_static(b" ")), Some(answer))),
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}
