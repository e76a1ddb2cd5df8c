//! `GET /ag-ui/{workflow}/{thread}/events`: a thread's whole history as AG-UI events, run after
//! run (each turn a run: its `runId` the one the client gave, or `run-<seq>` for a turn started
//! elsewhere), every frame with the id `<seq>.<k>` (the `k`-th AG-UI event made from the event
//! at `seq`). A client resumes after `Last-Event-ID` (or `?after=<seq>.<k>`) and gets exactly
//! the frames after it; while this server runs a turn on the thread, the stream follows it to
//! its end. The frames are a pure function of the log, so a resumed read is the rest of a whole
//! read, frame for frame.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures_util::{StreamExt, stream};
use openharness_core::builtin::{InputReceived, SessionForked, UserInput, WorkflowStarted};
use openharness_core::{Envelope, Event as _, SessionId};
use openharness_host::JsonFold;
use openharness_projection::{AgUiEvent, AgUiStream};
use serde::Deserialize;
use serde_json::Value;

use super::RUN_ID_FIELD;
use crate::AppState;
use crate::chat::until_turn_end;
use crate::error::ApiError;

/// A position in a thread's AG-UI stream: after the `k`-th frame (from 0) of the event at `seq`.
use crate::frame_id::FrameId as Cursor;

/// The position a client resumes after: `400` for one that is no frame id.
fn cursor(text: &str) -> Result<Cursor, ApiError> {
    Cursor::parse(text).ok_or_else(|| {
        ApiError::bad_request(format!(
            "`{text}` is not a position of an AG-UI stream: give a frame's id, `<seq>.<k>`"
        ))
    })
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ThreadQuery {
    #[serde(default)]
    after: Option<String>,
}

/// A thread's runs, folded and projected event by event.
struct Thread {
    id: String,
    fold: Option<Box<dyn JsonFold>>,
    run: Option<AgUiStream>,
    messages: Vec<Value>,
}

impl Thread {
    /// The AG-UI events of `event` (at index `at` of `events`, which it looks ahead in for the
    /// run id of a turn it opens).
    fn step(&mut self, events: &[Envelope], at: usize) -> Vec<AgUiEvent> {
        let event = &events[at];
        let state = self.fold.as_mut().and_then(|fold| {
            fold.apply(event.clone());
            fold.state().ok()
        });
        let open = self.run.as_ref().is_some_and(|run| !run.ended());
        if !open {
            if !opens_run(event) {
                return Vec::new();
            }
            if let Some(ended) = self.run.take() {
                self.messages = ended.messages().to_vec();
            }
            let run_id = events[at..]
                .iter()
                .take(4)
                .find_map(|e| e.payload[RUN_ID_FIELD].as_str().map(str::to_owned))
                .unwrap_or_else(|| format!("run-{}", event.id));
            // The snapshot is the state before this event: the fold has applied it already, so
            // the run starts from it and its own delta is empty.
            self.run = Some(AgUiStream::new(
                self.id.clone(),
                run_id,
                self.messages.clone(),
                state.clone(),
            ));
        }
        match &mut self.run {
            Some(run) => run.step(event, state),
            None => Vec::new(),
        }
    }

    fn running(&self) -> bool {
        self.run.as_ref().is_some_and(|run| !run.ended())
    }
}

/// Whether a run begins at `event`.
fn opens_run(event: &Envelope) -> bool {
    [
        UserInput::NAME,
        InputReceived::NAME,
        WorkflowStarted::NAME,
        SessionForked::NAME,
    ]
    .contains(&event.name.as_ref())
}

/// The frames of `events`, the `k`-th of the event at `seq` with id `seq.k`, those at or before
/// `after` left out.
fn frames(seq: u64, events: Vec<AgUiEvent>, after: Option<Cursor>) -> Vec<Bytes> {
    events
        .into_iter()
        .enumerate()
        .filter(|(k, _)| after.is_none_or(|after| Cursor { seq, n: *k as u64 } > after))
        .map(|(k, event)| super::frame(Some(&format!("{seq}.{k}")), &event))
        .collect()
}

/// `GET /ag-ui/{workflow}/{thread}/events`.
pub(super) async fn events(
    State(state): State<Arc<AppState>>,
    Path((workflow, thread)): Path<(String, String)>,
    headers: HeaderMap,
    query: crate::request::QueryOf<ThreadQuery>,
) -> Result<Response, ApiError> {
    let query = crate::request::query(query)?;
    let session: SessionId = thread
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{thread}` is not a thread id: {err}")))?;
    let after = match crate::sse::last_event_id(&headers)?.or(query.after.as_deref()) {
        Some(text) => Some(cursor(text)?),
        None => None,
    };
    let summary = state.host.session(&session).await?;
    // A thread of a workflow recorded elsewhere and not served here reads all the same.
    let target = crate::targets::resolve(&state, &workflow)
        .await
        .unwrap_or_else(|_| crate::targets::Target::Workflow(workflow.clone()));
    target
        .owns(&state, &session, summary.workflow.as_deref())
        .await
        .map_err(|_| {
            ApiError::not_found(format!("thread {session} is not a thread of `{workflow}`"))
        })?;
    let workflow = target.workflow();
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    let events = crate::responses::read::events(&state, &session, 0, summary.len).await?;
    let start = state.host.state_at(&session, 0).await.ok();
    let fold = start.and_then(|start| state.host.hosted(workflow).ok()?.fold_from(start));
    let mut thread = Thread {
        id: session.to_string(),
        fold,
        run: None,
        // A fork's runs continue the conversation it inherits.
        messages: super::conversation(&state, &session, &[]).await?,
    };
    let mut head = Vec::new();
    for at in 0..events.len() {
        let made = thread.step(&events, at);
        head.extend(frames(at as u64, made, after));
    }
    let head = stream::iter(head);
    if !(thread.running() && state.host.is_running(&session)) {
        return Ok(crate::sse::respond(
            head,
            Some(counted),
            state.options.heartbeat,
        ));
    }
    // A run under way here: follow it to its end.
    let subscription = crate::sse::subscribe(&state, &session, summary.len).await?;
    let mut seen = events;
    let live = until_turn_end(subscription, move |item| {
        let made = match item {
            Ok(recorded) => {
                seen.push(recorded.event);
                let at = seen.len() - 1;
                frames(recorded.seq, thread.step(&seen, at), after)
            }
            Err(err) => frames(
                u64::MAX,
                thread
                    .run
                    .as_mut()
                    .map(|run| run.fail("stream_failed", &err.to_string()))
                    .unwrap_or_default(),
                None,
            ),
        };
        std::future::ready((made, !thread.running()))
    });
    Ok(crate::sse::respond(
        head.chain(live),
        Some(counted),
        state.options.heartbeat,
    ))
}
