//! The store's experiments (feature `eval`): `GET /experiments` lists them (each with whether
//! it runs here), `GET
//! /experiments/{name}` answers one — its definition (cases, variants, baseline, repeats,
//! scorers), every run with its session and scores, whether this server runs it and when it
//! was last cancelled — as `openharness eval show --json` prints it. The inspector's
//! experiments view reads these.
//!
//! Experiments also run here, on the server's host (its workflows and their providers):
//!
//! - `POST /experiments` takes an experiment file — the JSON of the TOML `openharness eval run`
//!   reads (the same keys, [`ExperimentFile`]), or `{"toml": "…"}` with the file's text — and
//!   answers `202 {name, status: "running", events, cancel}` once its definition is recorded
//!   (`eval:started`); it runs in the background. A file that cannot run is `422` (an unknown
//!   key, no case, an unknown workflow, a fork point no recording has, a `datasets` table
//!   naming a dataset or version the store does not have, a `dataset` file or a
//!   `provider` table: this server builds no provider from a request, so variants run on the
//!   workflow's own or the one a recording asked); an experiment of that name running here
//!   already is `409`. The same name again once it is done resumes it, as `eval run` does.
//! - `GET /experiments/{name}/events` is its log as SSE (`id:` the log's seq, resumable with
//!   `Last-Event-ID` as the native event stream is): `eval:started`, `eval:dispatched`,
//!   `eval:recorded` and `eval:scored` as runs finish, `eval:cancelled` when cancelled; then
//!   one `event: end` frame (no id) with how it ended — `completed`, `cancelled` or `failed`
//!   and its counts — and the stream closes. An experiment not running here ends after its
//!   log with `status` `stopped` (or `cancelled`).
//! - `POST /experiments/{name}/cancel` stops one running here: runs under way stop (their
//!   sessions closed as cancelled), each recorded `cancelled`, then `eval:cancelled`
//!   ([`openharness_eval::Experiment::cancel_on`]); it answers once that is recorded. A later
//!   `POST /experiments` or `eval run` of the file runs the cancelled runs again. One not
//!   running here is `409`, an unknown one `404`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::stream;
use openharness_core::{CancellationToken, SessionId};
use openharness_eval::{EvalError, ExperimentFile, ExperimentRecord, ProviderSpec, log_session};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};

use crate::AppState;
use crate::error::ApiError;

/// The routes answered at once, on the state of the native ones.
pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/experiments", get(list).post(start))
        .route("/experiments/{name}", get(one))
        .route("/experiments/{name}/cancel", post(cancel))
}

/// The experiment's event stream: it lives as long as its client (no request timeout).
pub(crate) fn streams() -> Router<Arc<AppState>> {
    Router::new().route("/experiments/{name}/events", get(events))
}

/// The experiments this server runs (or ran, since it started), by name.
#[derive(Default)]
pub(crate) struct Running {
    by_name: Mutex<HashMap<String, Runner>>,
}

/// One experiment this server runs: how to cancel it, and how it ended once it has.
struct Runner {
    cancel: CancellationToken,
    ended: watch::Receiver<Option<Ended>>,
}

/// How a run of an experiment ended: the `end` frame of its stream, the cancel's answer.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct Ended {
    /// `completed`, `cancelled` or `failed` (it stopped on an error: `error` says which).
    status: &'static str,
    /// Runs recorded by this run of it.
    ran: usize,
    /// Runs recorded before, kept.
    skipped: usize,
    /// Runs that failed.
    failed: usize,
    /// Runs stopped by the cancellation.
    cancelled: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Runner>> {
        self.by_name.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `name` runs here now.
    fn is_running(&self, name: &str) -> bool {
        self.lock()
            .get(name)
            .is_some_and(|runner| runner.ended.borrow().is_none())
    }

    /// How `name` ends, when it runs (or ran) here.
    fn watch(&self, name: &str) -> Option<watch::Receiver<Option<Ended>>> {
        self.lock().get(name).map(|runner| runner.ended.clone())
    }
}

async fn list(State(state): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let found = openharness_eval::list(state.host.store().as_ref())
        .await
        .map_err(refused)?;
    // Each with whether it runs on this server now.
    let found: Vec<Value> = found
        .into_iter()
        .map(|summary| {
            let running = state.experiments.is_running(&summary.name);
            let mut entry = serde_json::to_value(summary).unwrap_or_default();
            entry["running"] = json!(running);
            entry
        })
        .collect();
    Ok(Json(json!({ "experiments": found })).into_response())
}

async fn one(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    log_session(&name).map_err(|err| ApiError::bad_request(err.to_string()))?;
    let record = ExperimentRecord::load(state.host.store().as_ref(), &name)
        .await
        .map_err(refused)?;
    let runs: Vec<_> = record.runs.values().collect();
    Ok(Json(json!({
        "name": record.name,
        "created": record.created,
        "definition": record.definition,
        "runs": runs,
        "running": state.experiments.is_running(&name),
        "cancelled": record.cancelled,
    }))
    .into_response())
}

/// `POST /experiments`'s body: the file's text as TOML, or the file as JSON.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Toml {
    toml: String,
}

async fn start(
    State(state): State<Arc<AppState>>,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let body: Value = crate::request::body(request)?;
    let file = if body.get("toml").is_some() {
        let Toml { toml } =
            serde_json::from_value(body).map_err(|err| ApiError::invalid(err.to_string()))?;
        ExperimentFile::from_toml(&toml)
    } else {
        serde_json::from_value::<ExperimentFile>(body).map_err(|err| err.to_string())
    }
    .map_err(|err| ApiError::invalid(format!("not an experiment file: {err}")))?;
    let name = file.name.clone();
    log_session(&name).map_err(|err| ApiError::invalid(err.to_string()))?;

    // Claimed before anything is built, so a second start of the name meanwhile is refused.
    let cancel = CancellationToken::new();
    let (ended_tx, ended) = watch::channel(None);
    {
        let mut running = state.experiments.lock();
        if running
            .get(&name)
            .is_some_and(|runner| runner.ended.borrow().is_none())
        {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "experiment_running",
                format!(
                    "experiment `{name}` is running on this server; `POST /experiments/{name}/cancel` stops it"
                ),
            ));
        }
        running.insert(
            name.clone(),
            Runner {
                cancel: cancel.clone(),
                ended,
            },
        );
    }
    let forget = |state: &AppState| {
        state.experiments.lock().remove(&name);
    };

    let refuse =
        |spec: &ProviderSpec| -> Result<(String, openharness_core::BoxedProvider), EvalError> {
            Err(EvalError::Definition {
                experiment: name.clone(),
                message: format!(
                    "a `provider` table ({}) is not built by this server: its variants and judges run on the providers of its workflows (or the one a case's recording asked)",
                    spec.label()
                ),
            })
        };
    let experiment = match file.experiment(&state.host, None, &refuse).await {
        Ok(experiment) => experiment,
        Err(err) => {
            forget(&state);
            return Err(refused(err));
        }
    };

    // Told once the definition is recorded, or why it could not start.
    let (said_tx, said) = oneshot::channel::<Result<(), EvalError>>();
    let said_tx = Arc::new(Mutex::new(Some(said_tx)));
    let on_started = Arc::clone(&said_tx);
    let experiment = experiment.cancel_on(cancel.clone()).on_started(move || {
        if let Some(tx) = on_started
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = tx.send(Ok(()));
        }
    });
    tokio::spawn(async move {
        let ended = match experiment.run().await {
            Ok(ran) => Ended {
                status: if ran.cancelled > 0 {
                    "cancelled"
                } else {
                    "completed"
                },
                ran: ran.ran,
                skipped: ran.skipped,
                failed: ran.failed,
                cancelled: ran.cancelled,
                error: None,
            },
            Err(err) => {
                let error = err.to_string();
                match said_tx
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                {
                    Some(tx) => {
                        let _ = tx.send(Err(err));
                    }
                    None => tracing::warn!(%error, "an experiment stopped on an error"),
                }
                Ended {
                    status: "failed",
                    ran: 0,
                    skipped: 0,
                    failed: 0,
                    cancelled: 0,
                    error: Some(error),
                }
            }
        };
        let _ = ended_tx.send(Some(ended));
    });

    match said.await {
        Ok(Ok(())) => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "name": name,
                "status": "running",
                "events": format!("/experiments/{name}/events"),
                "cancel": format!("/experiments/{name}/cancel"),
            })),
        )
            .into_response()),
        Ok(Err(err)) => {
            forget(&state);
            Err(refused(err))
        }
        Err(_) => {
            forget(&state);
            Err(ApiError::internal(format!(
                "experiment `{name}` stopped before it started"
            )))
        }
    }
}

async fn cancel(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    log_session(&name).map_err(|err| ApiError::bad_request(err.to_string()))?;
    let runner = {
        let running = state.experiments.lock();
        running
            .get(&name)
            .filter(|runner| runner.ended.borrow().is_none())
            .map(|runner| (runner.cancel.clone(), runner.ended.clone()))
    };
    let Some((token, mut ended)) = runner else {
        // Not running here: a 404 when there is no such experiment at all.
        ExperimentRecord::load(state.host.store().as_ref(), &name)
            .await
            .map_err(refused)?;
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "experiment_not_running",
            format!("experiment `{name}` is not running on this server"),
        ));
    };
    token.cancel();
    let ended = ended
        .wait_for(Option::is_some)
        .await
        .map_err(|_| ApiError::internal(format!("experiment `{name}` ended without a word")))?
        .clone();
    let mut answer =
        serde_json::to_value(&ended).map_err(|err| ApiError::internal(err.to_string()))?;
    answer["name"] = json!(name);
    Ok(Json(answer).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct After {
    after: Option<u64>,
}

async fn events(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    headers: HeaderMap,
    page: crate::request::QueryOf<After>,
) -> Result<Response, ApiError> {
    let After { after } = crate::request::query(page)?;
    let session = log_session(&name).map_err(|err| ApiError::bad_request(err.to_string()))?;
    let last_seen = match crate::sse::last_event_id(&headers)? {
        Some(id) => Some(id.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("Last-Event-ID `{id}` is not an event seq"))
        })?),
        None => after,
    };
    let from = last_seen.map_or(0, |seq| seq.saturating_add(1));
    let ended = state.experiments.watch(&name);
    let record = match ExperimentRecord::load(state.host.store().as_ref(), &name).await {
        Ok(record) => Some(record),
        // Started here, its definition not recorded yet: its events are to come.
        Err(EvalError::UnknownExperiment(_)) if ended.is_some() => None,
        Err(err) => return Err(refused(err)),
    };
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    let follower = state
        .hubs
        .follow(state.host.store(), &session, from)
        .await
        .map_err(|err| ApiError::internal(err.to_string()))?;
    // Not running here: its log as it is, then how it stands.
    let stopped = Ended {
        status: if record.as_ref().is_some_and(|r| r.cancelled.is_some()) {
            "cancelled"
        } else {
            "stopped"
        },
        ran: 0,
        skipped: 0,
        failed: 0,
        cancelled: 0,
        error: None,
    };
    let ended = ended.unwrap_or_else(|| watch::channel(Some(stopped)).1);
    let follow = Follow {
        follower,
        ended,
        store: Arc::clone(state.host.store()),
        session,
        next: from,
        end: None,
        done: false,
    };
    let frames = stream::unfold(follow, |mut follow| async move {
        let bytes = follow.next().await?;
        Some((bytes, follow))
    });
    Ok(crate::sse::respond(
        frames,
        Some(counted),
        state.options.heartbeat,
    ))
}

/// An experiment's stream: its log's events as they are recorded, until it has ended and
/// every event before its end was sent; then the `end` frame.
struct Follow {
    follower: crate::hub::Follower,
    ended: watch::Receiver<Option<Ended>>,
    store: Arc<dyn openharness_core::Store>,
    session: SessionId,
    /// The next seq to send.
    next: u64,
    /// Once it has ended: how, and the log's length then.
    end: Option<(Ended, u64)>,
    done: bool,
}

impl Follow {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            if let Some((ended, len)) = &self.end
                && self.next >= *len
            {
                self.done = true;
                let data = serde_json::to_string(ended).unwrap_or_else(|_| "{}".to_owned());
                return Some(crate::sse::frame(Some("end"), None, &data));
            }
            let ended = self.ended.borrow().clone();
            if self.end.is_none()
                && let Some(ended) = ended
            {
                let len = match self.store.session(&self.session).await {
                    Ok(info) => info.map_or(0, |info| info.count),
                    Err(err) => {
                        self.done = true;
                        return Some(crate::hub::error_frame(&format!(
                            "the store stopped the stream: {err}"
                        )));
                    }
                };
                self.end = Some((ended, len));
                continue;
            }
            tokio::select! {
                event = self.follower.next_event() => match event? {
                    Ok(recorded) => {
                        self.next = recorded.seq + 1;
                        return Some(crate::hub::frame(&recorded));
                    }
                    Err(err) => {
                        self.done = true;
                        return Some(crate::hub::error_frame(&format!(
                            "the store stopped the stream: {err}"
                        )));
                    }
                },
                changed = self.ended.changed(), if self.end.is_none() => {
                    if changed.is_err() && self.ended.borrow().is_none() {
                        // Its runner went without a word: end as stopped.
                        self.end = Some((Ended { status: "stopped", ran: 0, skipped: 0, failed: 0, cancelled: 0, error: None }, self.next));
                    }
                }
            }
        }
    }
}

/// An experiment that is not there is a 404, a definition that cannot run a 422, one another
/// process runs (its log grew under this one) a 409, anything else a 500 that says what
/// failed (a name no experiment can have is a 400 where the name is in the path).
fn refused(err: EvalError) -> ApiError {
    match err {
        EvalError::UnknownExperiment(name) => {
            ApiError::not_found(format!("no experiment named `{name}` in this store"))
        }
        EvalError::Definition { .. }
        | EvalError::Dataset { .. }
        | EvalError::NoForkPoint { .. }
        | EvalError::RecordedProvider(_)
        // A `[[datasets]]` table naming a dataset (or version) the store does not have.
        | EvalError::DatasetName { .. }
        | EvalError::UnknownDataset(_)
        | EvalError::DatasetVersion { .. } => ApiError::invalid(err.to_string()),
        EvalError::Busy(_) => {
            ApiError::new(StatusCode::CONFLICT, "experiment_running", err.to_string())
        }
        EvalError::Host(host) => ApiError::from(host),
        other => ApiError::internal(other.to_string()),
    }
}
