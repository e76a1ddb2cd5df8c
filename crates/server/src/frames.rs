//! The seeds' workflow handler (FR-059, their `createWorkflowHandler`): `POST /api/workflow`
//! with `{input, sessionId?, workflow?}` starts a turn (a new session, or one more turn on
//! `sessionId`) and answers an SSE stream of `data:` frames:
//!
//! - `{"type":"event","data":<the event with its seq>}` for every event of the turn;
//! - `{"type":"state","data":<the state>}` once the turn ends;
//! - `{"type":"done","data":{"sessionId","reason","len"}}` last;
//! - `{"type":"error","data":{"code","message"}}` instead, when the turn cannot be followed.
//!
//! Every run is recorded (the log is the point of Open Harness), so `record: false` is refused.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use openharness_core::builtin::WorkflowCompleted;
use openharness_core::{Event as _, RunOptions, SessionId};
use openharness_host::TurnStart;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::chat::{Answering, answering};
use crate::error::ApiError;

/// The request body.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Request {
    input: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    workflow: Option<String>,
    #[serde(default)]
    record: Option<bool>,
}

fn frame(kind: &str, data: Value) -> Bytes {
    crate::sse::frame(
        None,
        None,
        &json!({ "type": kind, "data": data }).to_string(),
    )
}

/// `POST /api/workflow`.
pub(crate) async fn post(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let Request {
        input,
        session_id,
        workflow,
        record,
    } = crate::request::body(request)?;
    if record == Some(false) {
        return Err(ApiError::bad_request(
            "every run is recorded here (the event log is what time travel, replay and fork use); omit `record`",
        ));
    }
    let session_id = session_id
        .map(|id| {
            id.parse::<SessionId>()
                .map_err(|err| ApiError::bad_request(format!("`{id}` is not a session id: {err}")))
        })
        .transpose()?;
    let stream_of = session_id.clone().unwrap_or_default();
    // Counted before the turn starts: a stream over the session's cap starts nothing.
    let counted = state
        .streams
        .open(&stream_of, state.options.max_streams_per_session)?;
    let policy = crate::request::busy_policy(&headers, None, state.options.on_busy)?;
    let (session, start) = match session_id {
        Some(session) => (session, TurnStart::Input(input)),
        None => {
            let workflow = match workflow {
                Some(name) => name,
                None => crate::chat::default_workflow(&state)?,
            };
            state.host.hosted(&workflow)?;
            let start = TurnStart::New {
                workflow,
                input: Some(input),
            };
            (stream_of, start)
        }
    };
    let started = state
        .host
        .start(&session, start, RunOptions::new().on_busy(policy))
        .await?;
    let recorded = started
        .recorded
        .ok_or_else(|| ApiError::internal("the turn recorded nothing"))?;
    let subscription = crate::sse::subscribe(&state, &session, recorded.seq).await?;
    // Passes over a running turn until the one that answers this input begins.
    let mut waiting = Some(recorded.id);
    let host = state.host.clone();
    let frames = crate::chat::until_turn_end(subscription, move |item| {
        let host = host.clone();
        let session = session.clone();
        let passed_over = match (&item, waiting) {
            (Ok(recorded), Some(request)) => match answering(request, &recorded.event) {
                Answering::Waiting => true,
                Answering::Begins | Answering::Steered => {
                    waiting = None;
                    false
                }
            },
            _ => false,
        };
        async move {
            match item {
                Ok(_) if passed_over => (Vec::new(), false),
                Ok(recorded) => {
                    let ended = recorded.event.name == WorkflowCompleted::NAME;
                    let data = serde_json::to_value(&recorded).unwrap_or(Value::Null);
                    let mut frames = vec![frame("event", data)];
                    if ended {
                        let reason = recorded.event.payload["reason"].clone();
                        let len = recorded.seq + 1;
                        match host.state_at(&session, len).await {
                            Ok(state) => frames.push(frame("state", state)),
                            Err(err) => frames.push(frame(
                                "error",
                                json!({ "code": "state_unavailable", "message": err.to_string() }),
                            )),
                        }
                        frames.push(frame(
                            "done",
                            json!({ "sessionId": session, "reason": reason, "len": len }),
                        ));
                    }
                    (frames, ended)
                }
                Err(err) => (
                    vec![frame(
                        "error",
                        json!({ "code": "stream_failed", "message": err.to_string() }),
                    )],
                    true,
                ),
            }
        }
    });
    Ok(crate::sse::respond(
        frames,
        Some(counted),
        state.options.heartbeat,
    ))
}
