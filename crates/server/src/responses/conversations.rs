//! Conversations (`/v1/conversations`), the Responses API's conversation objects: a
//! conversation is a session, its items the session's turns projected as the responses show
//! them (the user's message, then each response's output items), derived from the log on every
//! read.
//!
//! - `POST /v1/conversations` `{metadata?}`: a new conversation id. Nothing is recorded until
//!   its first response (`POST /v1/responses` with `conversation` and `model`), which names
//!   the workflow it runs; until then this server holds it in memory (it reads back, lists no
//!   items, can be deleted; a restart forgets it, its id still starts it). `items` are refused
//!   (`400`): a session records input only as turns.
//! - `GET /v1/conversations/{id}`: the conversation.
//! - `GET /v1/conversations/{id}/items?after=&limit=&order=`: its items, `desc` by default as
//!   OpenAI's, `limit` 1 to 100 (default 20), `after` an item id.
//! - `DELETE /v1/conversations/{id}`: deletes the session (`409` while a turn runs on it or
//!   when it has forks, which start from its state).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openharness_core::builtin::{InputReceived, UserInput};
use openharness_core::{Event as _, SessionId};
use openharness_host::HostError;
use openharness_projection::ResponseStream;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::read::{events, opens_response};
use super::wire::{OpenError, ResponseId, head_of};
use crate::AppState;
use crate::error::ApiError;

type Shared = State<Arc<AppState>>;

/// The most conversations a server holds that no response has recorded yet; beyond it the
/// oldest is forgotten (its id still starts a conversation with its first response).
const MADE_MAX: usize = 10_000;

/// A made conversation: its id, when it was made, its metadata.
type MadeConversation = (SessionId, i64, Map<String, Value>);

/// Conversations made by `POST /v1/conversations` that no response has recorded yet: their
/// creation time and metadata, so they read back before their first turn. Kept in memory (a
/// restart forgets them; their ids still work with `POST /v1/responses`).
#[derive(Debug, Default)]
pub(crate) struct Made {
    made: std::sync::Mutex<std::collections::VecDeque<MadeConversation>>,
}

impl Made {
    fn add(&self, id: SessionId, created_at: i64, metadata: Map<String, Value>) {
        let mut made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if made.len() >= MADE_MAX {
            made.pop_front();
        }
        made.push_back((id, created_at, metadata));
    }

    fn get(&self, id: &SessionId) -> Option<(i64, Map<String, Value>)> {
        let made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        made.iter()
            .find(|(made, _, _)| made == id)
            .map(|(_, at, metadata)| (*at, metadata.clone()))
    }

    fn remove(&self, id: &SessionId) -> bool {
        let mut made = self
            .made
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = made.len();
        made.retain(|(made, _, _)| made != id);
        made.len() != before
    }
}

/// The body of `POST /v1/conversations`.
#[derive(Debug, Deserialize)]
pub(super) struct CreateConversation {
    #[serde(default)]
    items: Option<Vec<Value>>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// `POST /v1/conversations`.
pub(super) async fn create(
    State(state): Shared,
    request: crate::request::Body,
) -> Result<Response, OpenError> {
    let request: CreateConversation = crate::request::body(request)?;
    if request
        .items
        .as_ref()
        .is_some_and(|items| !items.is_empty())
    {
        return Err(OpenError::invalid(
            "items",
            "a conversation's items are its turns: start it with `POST /v1/responses` (`conversation` and `model`) instead of items",
        ));
    }
    let id = SessionId::new();
    let created = chrono::Utc::now().timestamp();
    let metadata = request.metadata.unwrap_or_default();
    state
        .conversations
        .add(id.clone(), created, metadata.clone());
    Ok(Json(conversation(&id, created, metadata)).into_response())
}

fn conversation(id: &SessionId, created_at: i64, metadata: Map<String, Value>) -> Value {
    json!({ "id": id, "object": "conversation", "created_at": created_at, "metadata": metadata })
}

fn conversation_id(id: &str) -> Result<SessionId, OpenError> {
    id.parse().map_err(|_| {
        OpenError::not_found(format!(
            "no conversation `{id}`: a conversation id is a session id"
        ))
    })
}

/// `GET /v1/conversations/{id}`.
pub(super) async fn retrieve(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Response, OpenError> {
    let session = conversation_id(&id)?;
    let made = state.conversations.get(&session);
    let (created, metadata) = match state.host.session(&session).await {
        Ok(summary) => (
            summary.created.timestamp(),
            made.map(|(_, metadata)| metadata).unwrap_or_default(),
        ),
        Err(HostError::SessionNotFound(_)) if made.is_some() => made.unwrap_or_default(),
        Err(err) => return Err(err.into()),
    };
    Ok(Json(conversation(&session, created, metadata)).into_response())
}

/// `?after=&limit=&order=` of the item list.
#[derive(Debug, Deserialize)]
pub(super) struct ItemsQuery {
    #[serde(default)]
    after: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    order: Option<String>,
}

/// `GET /v1/conversations/{id}/items`.
pub(super) async fn items(
    State(state): Shared,
    Path(id): Path<String>,
    query: Result<Query<ItemsQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, OpenError> {
    let query = crate::request::query(query)?;
    let session = conversation_id(&id)?;
    let limit = query.limit.unwrap_or(20);
    if !(1..=100).contains(&limit) {
        return Err(OpenError::invalid(
            "limit",
            format!("`limit` is 1 to 100, not {limit}"),
        ));
    }
    let descending = match query.order.as_deref() {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(other) => {
            return Err(OpenError::invalid(
                "order",
                format!("`order` is `asc` or `desc`, not `{other}`"),
            ));
        }
    };
    let summary = match state.host.session(&session).await {
        Err(HostError::SessionNotFound(_)) if state.conversations.get(&session).is_some() => {
            return Ok(Json(json!({ "object": "list", "data": [], "first_id": null, "last_id": null, "has_more": false })).into_response());
        }
        other => other?,
    };
    let mut all = conversation_items(
        &state,
        &session,
        summary.len,
        summary.workflow.as_deref().unwrap_or_default(),
    )
    .await?;
    if descending {
        all.reverse();
    }
    let start = match &query.after {
        Some(after) => {
            all.iter()
                .position(|item| item["id"] == after.as_str())
                .ok_or_else(|| {
                    OpenError::invalid(
                        "after",
                        format!("`after`: no item `{after}` in conversation {session}"),
                    )
                })?
                + 1
        }
        None => 0,
    };
    let page: Vec<Value> = all.iter().skip(start).take(limit).cloned().collect();
    let has_more = start + page.len() < all.len();
    Ok(Json(json!({
        "object": "list",
        "data": page,
        "first_id": page.first().map(|item| item["id"].clone()),
        "last_id": page.last().map(|item| item["id"].clone()),
        "has_more": has_more,
    }))
    .into_response())
}

/// The items of `session` (its first `len` events), oldest first: per turn, the user's message
/// and the output items of the response the turn gave.
async fn conversation_items(
    state: &AppState,
    session: &SessionId,
    len: u64,
    workflow: &str,
) -> Result<Vec<Value>, ApiError> {
    // A fork's conversation starts with the turns it inherits, as its ancestors showed them.
    let inherited = state.host.inherited_events(session).await?;
    let own = events(state, session, 0, len).await?;
    let head = head_of(
        &ResponseId {
            seq: 0,
            session: session.clone(),
        },
        None,
        workflow,
    );
    let mut items = Vec::new();
    let mut turn: Option<ResponseStream> = None;
    for event in inherited.iter().chain(&own) {
        if turn.as_ref().is_none_or(ResponseStream::ended) {
            if !opens_response(event) {
                continue;
            }
            turn = Some(ResponseStream::new(head.clone()));
        }
        if [UserInput::NAME, InputReceived::NAME].contains(&event.name.as_ref())
            && let Some(item) = super::user_item(event)
        {
            items.push(item);
        }
        if let Some(projected) = &mut turn {
            projected.step(event);
            if projected.ended() {
                items.extend(
                    projected.resource()["output"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default(),
                );
            }
        }
    }
    // A turn still under way: what it has said so far.
    if let Some(projected) = turn.filter(|turn| !turn.ended()) {
        items.extend(
            projected.resource()["output"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
    }
    Ok(items)
}

/// `DELETE /v1/conversations/{id}`.
pub(super) async fn delete(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Response, OpenError> {
    let session = conversation_id(&id)?;
    let made = state.conversations.remove(&session);
    match state.host.session(&session).await {
        Err(HostError::SessionNotFound(_)) if made => {
            return Ok(Json(
                json!({ "id": session, "object": "conversation.deleted", "deleted": true }),
            )
            .into_response());
        }
        other => {
            other?;
        }
    }
    if state.host.is_running(&session) {
        return Err(HostError::busy(
            &session,
            "a turn is running on it (cancel its response first)",
        )
        .into());
    }
    let forks = state
        .host
        .sessions()
        .await?
        .into_iter()
        .filter(|s| s.parent.as_ref() == Some(&session))
        .count();
    if forks > 0 {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "has_forks",
            format!("conversation {session} has {forks} fork(s), which start from its state: delete them first"),
        )
        .into());
    }
    state
        .host
        .store()
        .clear(&session)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    Ok(
        Json(json!({ "id": session, "object": "conversation.deleted", "deleted": true }))
            .into_response(),
    )
}
