//! A platform session's notifications (`/v1/…/events`, `/v1/…/sse`): a JSON page, or a stream
//! on the server's one SSE writer ([`crate::sse`]: the session's cap of streams, the
//! heartbeat, and an `error` frame when the store's tail fails). A reader resumes after
//! `Last-Event-ID` (a frame id: `seq`, or `seq.0` for the first of an event's two
//! notifications), else after the later of `?since_id=` (a notification's id) and `?after=`
//! (or `?after_sequence=`); `types` and `exclude` choose what it gets.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use futures_util::{StreamExt, stream};
use openharness_core::SessionId;
use openharness_platform::Resume;
use uuid::Uuid;

use super::{Answer, Paging, Shared, V1, id};
use crate::error::ApiError;
use crate::request::{MAX_SAFE, QueryOf, query};

/// The notification type an Everruns event type names in `types` and `exclude`: the SDK's
/// `output.message.delta` (what its `StreamOptions.exclude_deltas()` leaves out) is
/// `message.delta` here; other types are themselves.
fn notification_type(kind: &str) -> &str {
    match kind {
        "output.message.delta" => "message.delta",
        other => other,
    }
}

/// The query of a session's notifications, read from its pairs (`types` and `exclude` may
/// repeat, or list types separated by commas).
#[derive(Debug, Default)]
pub(crate) struct EventsQuery {
    /// `offset` and `limit` of a JSON page.
    paging: Paging,
    /// Only notifications after this sequence (`after`, or `after_sequence`).
    after: Option<u64>,
    /// Only notifications after the one with this id.
    since_id: Option<Uuid>,
    /// Only notifications of these types (all when empty).
    types: Vec<String>,
    /// No notifications of these types.
    exclude: Vec<String>,
}

impl EventsQuery {
    /// Reads the query's pairs: a name not listed here, a number that is not one, or a
    /// `since_id` that is not a UUID is `400`. Cursors given together all hold: the page starts
    /// after the latest of them.
    pub(crate) fn read(pairs: QueryOf<Vec<(String, String)>>) -> Result<Self, ApiError> {
        let pairs = query(pairs)?;
        let number = |name: &str, value: &str| {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| *n <= MAX_SAFE)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "`{name}` must be a whole number from 0 to {MAX_SAFE}, not {value:?}"
                    ))
                })
        };
        let mut query = Self::default();
        for (name, value) in &pairs {
            match name.as_str() {
                "offset" => {
                    query.paging.offset = usize::try_from(number(name, value)?)
                        .map_err(|_| ApiError::bad_request("`offset` is too large"))?;
                }
                "limit" => {
                    query.paging.limit = Some(
                        usize::try_from(number(name, value)?)
                            .map_err(|_| ApiError::bad_request("`limit` is too large"))?,
                    );
                }
                "after" | "after_sequence" => {
                    // Both (or one repeated): after all of them.
                    let after = number(name, value)?;
                    query.after = Some(query.after.map_or(after, |a| a.max(after)));
                }
                "since_id" => {
                    let id = value.trim().parse().map_err(|_| {
                        ApiError::bad_request(format!(
                            "`since_id` must be the id (a UUID) of one of the session's events, not {value:?}"
                        ))
                    })?;
                    query.since_id = Some(id);
                }
                "types" | "exclude" => {
                    let list = if name == "types" {
                        &mut query.types
                    } else {
                        &mut query.exclude
                    };
                    list.extend(
                        value
                            .split(',')
                            .map(str::trim)
                            .filter(|t| !t.is_empty())
                            .map(|t| notification_type(t).to_owned()),
                    );
                }
                other => {
                    return Err(ApiError::bad_request(format!(
                        "unknown query parameter `{other}`: a session's events take offset, limit, after (or after_sequence), since_id, types and exclude"
                    )));
                }
            }
        }
        Ok(query)
    }

    /// Whether a notification of type `kind` is asked for.
    fn wants(&self, kind: &str) -> bool {
        (self.types.is_empty() || self.types.iter().any(|t| t == kind))
            && !self.exclude.iter().any(|t| t == kind)
    }
}

/// `GET /v1/agents/{a}/sessions/{s}/events` (`SSE` false: a JSON page, or a stream when the
/// `Accept` header asks for one) and `GET /v1/agents/{a}/sessions/{s}/sse` (`SSE` true: always
/// a stream).
pub(crate) async fn nested<const SSE: bool>(
    State(s): Shared,
    Path((agent, session)): Path<(String, String)>,
    headers: HeaderMap,
    pairs: QueryOf<Vec<(String, String)>>,
) -> Answer {
    let query = EventsQuery::read(pairs)?;
    let (agent, session) = (id("agent", &agent)?, id("session", &session)?);
    let stream = SSE || crate::sse::wanted(&headers);
    answer(&s, agent, session, &headers, query, stream).await
}

/// A session's notifications after the request's cursors, of the types it asks for: a JSON
/// page, or (`stream`) an SSE stream that goes on live (`event:` the type, `id:` the frame
/// id, `data:` the notification).
pub(crate) async fn answer(
    s: &V1,
    agent: Uuid,
    session: Uuid,
    headers: &HeaderMap,
    query: EventsQuery,
    stream: bool,
) -> Answer {
    let last_event_id = match crate::sse::last_event_id(headers)? {
        Some(text) if stream => Some(Resume::parse(text).ok_or_else(|| {
            ApiError::bad_request(format!(
                "Last-Event-ID `{text}` is not a frame id (such as `41`, or `41.0`)"
            ))
        })?),
        _ => None,
    };
    let resume = match (last_event_id, query.since_id) {
        (Some(resume), _) => Some(resume),
        (None, Some(seen)) => {
            let since = s.platform.resume_after_id(agent, session, seen).await?;
            Some(
                query
                    .after
                    .map_or(since, |after| since.max(Resume::after(after))),
            )
        }
        (None, None) => query.after.map(Resume::after),
    };
    if !stream {
        let mut notes = s
            .platform
            .notifications_after(agent, session, resume)
            .await?;
        notes.retain(|note| query.wants(&note.kind));
        return query.paging.page_whole_events(notes);
    }
    // A UUID's text is always a session id; its log has that id.
    let key: SessionId = session
        .to_string()
        .parse()
        .map_err(|err| ApiError::internal(format!("session {session}: {err}")))?;
    let counted = s
        .server
        .streams
        .open(&key, s.server.options.max_streams_per_session)?;
    // The session's one live tail (the hub), shared with every other stream of it.
    let notifier = s.platform.notifier(agent, session, resume).await?;
    let follower = s
        .server
        .hubs
        .follow(s.server.host.store(), notifier.log(), notifier.read_from())
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    let reading = Some((follower, notifier, query));
    let frames = stream::unfold(reading, |reading| async move {
        let (mut follower, mut notifier, query) = reading?;
        let frames: Vec<Bytes> = match follower.next_event().await? {
            Ok(recorded) => notifier
                .notify(recorded.seq, &recorded.event)
                .into_iter()
                .filter(|(_, note)| query.wants(&note.kind))
                .map(|(frame_id, note)| match serde_json::to_string(&note) {
                    Ok(data) => crate::sse::frame(Some(&note.kind), Some(&frame_id), &data),
                    Err(err) => crate::sse::error_frame("stream_failed", &err.to_string()),
                })
                .collect(),
            Err(err) => {
                // The stream cannot go on: say why, and end.
                let message = openharness_core::adapter::ErrorChain(&err).to_string();
                tracing::warn!(error = %message, "a platform event stream's tail failed");
                return Some((
                    vec![crate::sse::error_frame("stream_failed", &message)],
                    None,
                ));
            }
        };
        Some((frames, Some((follower, notifier, query))))
    })
    .flat_map(stream::iter);
    Ok(crate::sse::respond(
        frames,
        Some(counted),
        s.server.options.heartbeat,
    ))
}
