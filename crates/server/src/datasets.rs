//! The store's datasets (feature `eval`), read-only: `GET /datasets` lists them (each with its
//! cases, version and last change), `GET /datasets/{name}` answers one at its latest version
//! and `?version=K` at version `K` (its first `K` events) — its cases with their sessions and
//! positions, and its changes — as `openharness eval dataset show --json` prints it. An unknown
//! dataset, a name no dataset can have (the message says why) or a version beyond its log is
//! `404`; an unknown query parameter `400`.
//! Datasets are made by `openharness eval dataset add` (or [`openharness_eval::DatasetAdd`]).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use openharness_eval::{Dataset, EvalError};
use serde::Deserialize;
use serde_json::json;

use crate::AppState;
use crate::error::ApiError;
use crate::request::{QueryOf, query};

/// The routes, answered at once.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/datasets", get(list))
        .route("/datasets/{name}", get(one))
}

/// `GET /datasets/{name}`'s query.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct At {
    /// The version (the latest when absent).
    version: Option<u64>,
}

async fn list(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let found = Dataset::list(state.host.store().as_ref())
        .await
        .map_err(refused)?;
    Ok(Json(json!({ "datasets": found })).into_response())
}

async fn one(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    at: QueryOf<At>,
) -> Result<Response, ApiError> {
    let At { version } = query(at)?;
    let dataset = Dataset::load(state.host.store().as_ref(), &name, version)
        .await
        .map_err(refused)?;
    Ok(Json(dataset).into_response())
}

/// A failure of a dataset read as an HTTP error.
fn refused(err: EvalError) -> ApiError {
    match err {
        // A name no dataset can have names none: `404`, saying why it cannot be one.
        EvalError::UnknownDataset(_)
        | EvalError::DatasetVersion { .. }
        | EvalError::DatasetName { .. } => ApiError::not_found(err.to_string()),
        EvalError::Host(host) => ApiError::from(host),
        other => ApiError::internal(other.to_string()),
    }
}
