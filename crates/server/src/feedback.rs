//! A session's feedback over HTTP: people's annotations (`POST /sessions/{id}/annotations`)
//! and everything said about it, annotations and online scores (`GET /sessions/{id}/feedback`).
//! Both are the host's ([`openharness_host::feedback`]); this module only translates.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openharness_host::feedback::{AnnotatedRun, AnnotationAdded, Thumbs};
use serde::Deserialize;

use crate::AppState;
use crate::error::ApiError;
use crate::request::body;

/// The feedback routes.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/sessions/{id}/feedback", get(feedback))
        .route("/sessions/{id}/annotations", post(annotate))
}

/// An annotation as a client sends it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Annotate {
    by: String,
    #[serde(default)]
    thumbs: Option<Thumbs>,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default, deserialize_with = "openharness_host::whole::optional")]
    turn: Option<u64>,
    #[serde(default)]
    run: Option<AnnotatedRun>,
}

/// `201` with the annotation as recorded (its id and time).
async fn annotate(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let session = crate::request::session_id(&id)?;
    let Annotate {
        by,
        thumbs,
        labels,
        note,
        turn,
        run,
    } = body(request)?;
    let annotation = AnnotationAdded {
        by,
        thumbs,
        labels,
        note,
        turn,
        run,
    };
    let recorded = state.host.annotate(&session, annotation).await?;
    Ok((StatusCode::CREATED, Json(recorded)).into_response())
}

/// The session's annotations and online scores, oldest first.
async fn feedback(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let session = crate::request::session_id(&id)?;
    Ok(Json(state.host.feedback(&session).await?).into_response())
}
