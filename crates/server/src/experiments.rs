//! The store's experiments (feature `eval`): `GET /experiments` lists them, `GET
//! /experiments/{name}` answers one — its definition (cases, variants, baseline, repeats,
//! scorers) and every run with its session and scores — as `openharness eval show --json`
//! prints it. The inspector's experiments view reads these.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use openharness_eval::{EvalError, ExperimentRecord};

use crate::AppState;
use crate::error::ApiError;

/// The routes, on the state of the native ones.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/experiments", get(list))
        .route("/experiments/{name}", get(one))
}

async fn list(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let found = openharness_eval::list(state.host.store().as_ref())
        .await
        .map_err(refused)?;
    Ok(Json(serde_json::json!({ "experiments": found })).into_response())
}

async fn one(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let record = ExperimentRecord::load(state.host.store().as_ref(), &name)
        .await
        .map_err(refused)?;
    let runs: Vec<_> = record.runs.values().collect();
    Ok(Json(serde_json::json!({
        "name": record.name,
        "created": record.created,
        "definition": record.definition,
        "runs": runs,
    }))
    .into_response())
}

/// An experiment that is not there is a 404, a name no experiment can have a 400, anything
/// else a 500 that says what failed.
fn refused(err: EvalError) -> ApiError {
    match err {
        EvalError::UnknownExperiment(name) => {
            ApiError::not_found(format!("no experiment named `{name}` in this store"))
        }
        EvalError::Definition { message, .. } => ApiError::bad_request(message),
        other => ApiError::internal(other.to_string()),
    }
}
