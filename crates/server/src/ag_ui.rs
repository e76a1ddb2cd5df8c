//! AG-UI (protocol 1.0): `POST /ag-ui/{workflow}` takes the `RunAgentInput` that
//! `@ag-ui/client`'s `HttpAgent` posts and answers the run as AG-UI events over SSE, a
//! projection of the session's log ([`AgUiStream`]): the thread is the session (its id is the
//! `threadId`), a run is a turn. `{workflow}` names a served workflow or a `/v1` agent
//! (`agent:<name-or-id>`; its threads are that agent's sessions, so their ids are UUIDs).
//!
//! - **Input**: the newest `user` message whose id this thread has not recorded is the new
//!   input (recorded with `messageId`, `runId` and `via: "ag-ui"`); a session waiting for a
//!   person takes it as the answer. `resume: [{interruptId, status, payload}]` answers the
//!   interrupt (the `input:requested` event) it names: `payload.approved` (with
//!   `payload.reason`) for a confirmation, recorded as `yes`/`no` with `approved` and `reason`;
//!   `payload.text` (or a string payload) for a question; `status: "cancelled"` as `no`.
//! - **State**: `STATE_SNAPSHOT` of the workflow's state when the run starts, then a
//!   `STATE_DELTA` (JSON Patch) after each event that changes it, folded by this server's
//!   handlers; the client's `state` is not read (the log is the truth).
//! - **A dropped connection**: `HttpAgent` does not reconnect by itself; run it again with the
//!   same `runId` (`agent.runAgent({ runId })`): a `runId` this thread has recorded records
//!   nothing and rejoins that run — `RUN_STARTED`, the state and the conversation so far, the
//!   message still streaming — then follows it live (or, once it has ended, says how).
//! - **Every position**: `GET /ag-ui/{workflow}/{threadId}/events` is the thread's whole history
//!   as AG-UI events, run after run, each frame with the id `<seq>.<k>`; it resumes after
//!   `Last-Event-ID` (or `?after=`) with exactly the frames after it (see `thread`).
//! - **Stop**: `POST /ag-ui/{workflow}/{threadId}/stop` stops the running turn as an event
//!   (`stop:requested`); the run ends `RUN_FINISHED` with outcome `cancelled`.
//!
//! - **Frontend tools** (a `/v1` agent's threads): the run's `tools` are offered to its model
//!   as tools the client runs ([`ClientTool`](openharness_core::ClientTool)); a call of one is
//!   `TOOL_CALL_START`/`ARGS`/`END` and the run finishes; the next run's `tool` messages that
//!   answer those calls are recorded on its input (`toolResults`) and the agent goes on from
//!   them (a new user message beside them is optional).
//!
//! Not served (`400`): frontend `tools` for a workflow that is no `/v1` agent (its code knows
//! nothing of them), and several `resume` entries in one run (the workflows here ask one
//! question at a time).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::builtin::{
    ClientToolResult, InputQueued, InputReceived, TextDelta, UserInput,
};
use openharness_core::{ClientTool, Envelope, Event as _, EventId, RunOptions, SessionId};
use openharness_host::{JsonFold, TurnStart};
use openharness_projection::{
    APPROVED_FIELD, AgUiEvent, AgUiStream, MESSAGE_ID_FIELD, REASON_FIELD, TOOL_MESSAGE_IDS_FIELD,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::AppState;
use crate::chat::{TurnItem, failure_of, until_turn_end};
use crate::error::ApiError;
use crate::responses::read::Awaiting;

pub(crate) mod openapi;
mod thread;

type Shared = State<Arc<AppState>>;

/// This protocol's name in the `via` field of a turn's input event.
const VIA: &str = "ag-ui";

/// The payload field holding the AG-UI `runId` of the run a turn's input started.
const RUN_ID_FIELD: &str = "runId";

/// The routes, without the request timeout (a run lasts as long as its turn).
pub(crate) fn routes() -> axum::Router<Arc<AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/ag-ui/{workflow}", post(run))
        .route("/ag-ui/{workflow}/{thread}/events", get(thread::events))
        .route("/ag-ui/{workflow}/{thread}/stop", post(stop))
}

/// The fields of `RunAgentInput` this server reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAgentInput {
    thread_id: String,
    run_id: String,
    #[serde(default)]
    messages: Vec<Value>,
    #[serde(default)]
    resume: Vec<Value>,
    #[serde(default)]
    tools: Vec<Value>,
    /// The protocol version the client speaks: absent before 1.0.
    #[serde(default)]
    protocol_version: Option<String>,
}

/// A run's events and the workflow's state, stepped together.
struct Run {
    stream: AgUiStream,
    fold: Option<Box<dyn JsonFold>>,
}

impl Run {
    /// The AG-UI events of `event`, with the state after it when it can change it.
    fn step(&mut self, event: &Envelope) -> Vec<AgUiEvent> {
        let state = self.fold(event);
        self.stream.step(event, state)
    }

    /// Folds `event`; the state after it, unless it is a text delta (which no handler folds:
    /// skipping them keeps a streamed reply from serialising the state per delta).
    fn fold(&mut self, event: &Envelope) -> Option<Value> {
        let fold = self.fold.as_mut()?;
        fold.apply(event.clone());
        if event.name == TextDelta::NAME {
            return None;
        }
        fold.state().ok()
    }
}

/// `POST /ag-ui/{workflow}`: a run of the thread `threadId` (see the module docs).
async fn run(
    State(state): Shared,
    Path(workflow): Path<String>,
    headers: HeaderMap,
    request: crate::request::Body,
) -> Result<Response, ApiError> {
    let input: RunAgentInput = crate::request::body(request)?;
    let target = crate::targets::resolve(&state, &workflow).await?;
    let workflow = target.workflow().to_owned();
    state.host.hosted(&workflow)?;
    let session: SessionId = input.thread_id.parse().map_err(|err| {
        ApiError::bad_request(format!(
            "`threadId` `{}` is not a thread id: {err}",
            input.thread_id
        ))
    })?;
    let tools = frontend_tools(&input.tools)?;
    if !tools.is_empty() && !crate::targets::runs_client_tools(&workflow) {
        return Err(ApiError::bad_request(format!(
            "frontend `tools` are served for `/v1` agents (`/ag-ui/agent:<name>`), whose conversation keeps the calls and their results; `{workflow}` runs its own tools"
        )));
    }
    let recorded_len = match state.host.store().session(&session).await {
        Ok(info) => info.map_or(0, |info| info.count),
        Err(err) => return Err(ApiError::internal(err.to_string())),
    };
    if recorded_len > 0 {
        let summary = state.host.session(&session).await?;
        target
            .owns(&state, &session, summary.workflow.as_deref())
            .await
            .map_err(|err| ApiError::bad_request(err.message.replacen("session", "thread", 1)))?;
    }
    let history = crate::responses::read::events(&state, &session, 0, recorded_len).await?;
    let counted = state
        .streams
        .open(&session, state.options.max_streams_per_session)?;
    let of = RunOf {
        workflow: &workflow,
        session: &session,
        run_id: &input.run_id,
        before_protocol_1: input.protocol_version.is_none(),
    };
    if let Some(first) = run_start(&history, &input.run_id) {
        return rejoin(&state, &of, &history, first, counted).await;
    }
    let mut fields = Map::new();
    fields.insert(crate::responses::wire::VIA_FIELD.to_owned(), json!(VIA));
    fields.insert(RUN_ID_FIELD.to_owned(), json!(input.run_id));
    let start = match input.resume.as_slice() {
        [] => {
            let results = tool_results(&input.messages, &history);
            let (id, text) = match new_message(&input.messages, &history) {
                Ok(said) => said,
                Err(_) if !results.is_empty() => (String::new(), String::new()),
                Err(err) => return Err(err),
            };
            if !id.is_empty() {
                fields.insert(MESSAGE_ID_FIELD.to_owned(), json!(id));
            }
            if !results.is_empty() {
                let (ids, results): (Vec<String>, Vec<ClientToolResult>) =
                    results.into_iter().unzip();
                fields.insert("toolResults".to_owned(), json!(results));
                fields.insert(TOOL_MESSAGE_IDS_FIELD.to_owned(), json!(ids));
            }
            if recorded_len == 0 {
                target.new_session(&state, Some(session.clone())).await?;
                TurnStart::New {
                    workflow: workflow.clone(),
                    input: Some(text),
                }
            } else {
                let open = crate::chat::answerable(&state, &session, recorded_len)
                    .await?
                    .unwrap_or_default();
                let naming = "with a `resume` entry naming its interrupt";
                match crate::chat::request_answered(&session, None, open, naming)? {
                    Some(request) => TurnStart::Answer { request, text },
                    None => TurnStart::Input(text),
                }
            }
        }
        [entry] => {
            let (request, text) = answer(entry, &mut fields)?;
            TurnStart::Answer { request, text }
        }
        several => {
            return Err(ApiError::bad_request(format!(
                "{} `resume` entries: answer one interrupt per run (the workflows here ask one at a time)",
                several.len()
            )));
        }
    };
    let policy = crate::request::busy_policy(&headers, None, state.options.chat_on_busy)?;
    let options = RunOptions::new()
        .input_fields(fields)
        .on_busy(policy)
        .client_tools(tools);
    let started = state.host.start(&session, start, options).await?;
    let recorded = started
        .recorded
        .ok_or_else(|| ApiError::internal("the run's turn recorded nothing"))?;
    let before: Vec<Envelope> = history
        .into_iter()
        .take(usize::try_from(recorded.seq).unwrap_or(usize::MAX))
        .collect();
    let mut run = new_run(&state, &of, &before, recorded.seq).await?;
    let subscription = crate::sse::subscribe(&state, &session, recorded.seq).await?;
    let failures = stream::once(failure_of(started.done))
        .filter_map(|why| std::future::ready(why.map(TurnItem::Failed)));
    let items = stream::select(subscription.map(TurnItem::Event), Box::pin(failures));
    let mut waiting = Some(Awaiting::Answer(recorded.id));
    let frames = until_turn_end(items, move |item| {
        let events = match item {
            TurnItem::Failed(why) => run
                .stream
                .fail("turn_failed", &format!("the turn failed: {why}")),
            TurnItem::Event(Ok(recorded)) => {
                let event = &recorded.event;
                if let Some(awaiting) = waiting
                    && !awaiting.begins(event)
                {
                    // The running turn a queued input waits behind: folded, not shown.
                    run.fold(event);
                    Vec::new()
                } else {
                    waiting = None;
                    run.step(event)
                }
            }
            TurnItem::Event(Err(err)) => run.stream.fail("stream_failed", &err.to_string()),
        };
        let ended = run.stream.ended();
        std::future::ready((frames(&events), ended))
    });
    Ok(crate::sse::respond(
        frames,
        Some(counted),
        state.options.heartbeat,
    ))
}

/// The SSE frames of AG-UI events: `data: <json>` each (no `event:` names, no `[DONE]`, which
/// the client would try to read as an event).
fn frames(events: &[AgUiEvent]) -> Vec<Bytes> {
    events.iter().map(|event| frame(None, event)).collect()
}

/// One AG-UI event as an SSE frame with the id `id` (when it has one), its JSON serialised
/// straight into the frame.
pub(super) fn frame(id: Option<&str>, event: &AgUiEvent) -> Bytes {
    crate::sse::json_frame(None, id, event)
}

/// The conversation of `session` up to the events `before` (its own, from its start), as
/// AG-UI messages: a fork's starts with what it inherits from its ancestors.
pub(super) async fn conversation(
    state: &AppState,
    session: &SessionId,
    before: &[Envelope],
) -> Result<Vec<Value>, ApiError> {
    let inherited = state.host.inherited_events(session).await?;
    let mut silent = AgUiStream::new(session.to_string(), "", Vec::new(), None);
    for event in inherited.iter().chain(before) {
        silent.step(event, None);
    }
    Ok(silent.messages().to_vec())
}

/// Which run a request is about, and how its client reads it.
struct RunOf<'a> {
    workflow: &'a str,
    session: &'a SessionId,
    run_id: &'a str,
    /// The client speaks a protocol older than 1.0 (no `protocolVersion` in its input).
    before_protocol_1: bool,
}

/// A new run whose turn starts at `seq`, after the events `before`: the conversation they
/// hold, and the state there with a fold to follow it.
async fn new_run(
    state: &AppState,
    of: &RunOf<'_>,
    before: &[Envelope],
    seq: u64,
) -> Result<Run, ApiError> {
    let history = conversation(state, of.session, before).await?;
    let start = state.host.state_at(of.session, seq).await.ok();
    let fold = start
        .clone()
        .and_then(|start| state.host.hosted(of.workflow).ok()?.fold_from(start));
    let mut stream = AgUiStream::new(of.session.to_string(), of.run_id, history, start);
    if of.before_protocol_1 {
        stream = stream.before_protocol_1();
    }
    Ok(Run { stream, fold })
}

/// Rejoins the run `run_id` of `session` that began at `first` (a resumed connection): what it
/// has so far as snapshots, then the rest live.
async fn rejoin(
    state: &AppState,
    of: &RunOf<'_>,
    history: &[Envelope],
    first: u64,
    counted: crate::sse::Counted,
) -> Result<Response, ApiError> {
    let session = of.session;
    let at = usize::try_from(first)
        .unwrap_or(usize::MAX)
        .min(history.len());
    let (before, so_far) = history.split_at(at);
    let mut run = new_run(state, of, before, first).await?;
    for event in so_far {
        run.step(event);
    }
    let caught_up = run.stream.rejoin();
    let ended = run.stream.ended();
    let from = first + so_far.len() as u64;
    let head = stream::iter(frames(&caught_up));
    if ended || !state.host.is_running(session) {
        // Ended, or cut off with no turn here to follow: what the log has.
        return Ok(crate::sse::respond(
            head,
            Some(counted),
            state.options.heartbeat,
        ));
    }
    let subscription = crate::sse::subscribe(state, session, from).await?;
    let live = until_turn_end(subscription, move |item| {
        let events = match item {
            Ok(recorded) => run.step(&recorded.event),
            Err(err) => run.stream.fail("stream_failed", &err.to_string()),
        };
        std::future::ready((frames(&events), run.stream.ended()))
    });
    Ok(crate::sse::respond(
        head.chain(live),
        Some(counted),
        state.options.heartbeat,
    ))
}

/// The seq of the first event of the run `run_id` in `events`, when this thread recorded it.
fn run_start(events: &[Envelope], run_id: &str) -> Option<u64> {
    let position = events.iter().position(|event| {
        event.payload[RUN_ID_FIELD] == run_id
            && [UserInput::NAME, InputReceived::NAME, InputQueued::NAME]
                .contains(&event.name.as_ref())
    })?;
    // The turn a `user:input` begins starts at its `workflow:started`, when it has one.
    let mut first = position;
    while first > 0 && events[first - 1].name == openharness_core::builtin::WorkflowStarted::NAME {
        first -= 1;
    }
    Some(first as u64)
}

/// The new user message of a run: the newest `user` message whose id the thread has not
/// recorded (`400` when there is none).
fn new_message(messages: &[Value], history: &[Envelope]) -> Result<(String, String), ApiError> {
    let known = |id: &str| {
        history
            .iter()
            .any(|event| event.payload[MESSAGE_ID_FIELD] == id)
    };
    let message = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .filter(|m| m["id"].as_str().is_some_and(|id| !known(id)))
        .ok_or_else(|| {
            ApiError::bad_request(
                "the run has no new user message (every user message's id is recorded already) and no `resume`: add a message, or answer an interrupt",
            )
        })?;
    let text = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter(|part| part["type"] == "text")
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    };
    if text.is_empty() {
        return Err(ApiError::bad_request("the new user message has no text"));
    }
    let id = message["id"].as_str().unwrap_or_default().to_owned();
    Ok((id, text))
}

/// The run's frontend tools (`{name, description, parameters}`) as tools the client runs.
fn frontend_tools(tools: &[Value]) -> Result<Vec<ClientTool>, ApiError> {
    tools
        .iter()
        .map(|tool| {
            let name = tool["name"]
                .as_str()
                .filter(|name| !name.is_empty())
                .ok_or_else(|| ApiError::bad_request("a frontend tool needs a `name`"))?;
            let description = tool["description"].as_str().unwrap_or_default();
            Ok(ClientTool::new(
                name,
                description,
                tool["parameters"].clone(),
            ))
        })
        .collect()
}

/// The results the run's `tool` messages bring for calls of frontend tools the thread has
/// open (each answered once: a result the thread has is not new), with their messages' ids.
fn tool_results(messages: &[Value], history: &[Envelope]) -> Vec<(String, ClientToolResult)> {
    let open = crate::targets::open_client_calls(history);
    messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .filter_map(|message| {
            let call = message["toolCallId"].as_str()?;
            open.iter().any(|id| id == call).then(|| {
                let content = message["content"].clone();
                let id = message["id"].as_str().unwrap_or_default().to_owned();
                let result = ClientToolResult {
                    is_error: message["error"].is_string(),
                    ..ClientToolResult::new(call, content)
                };
                (id, result)
            })
        })
        .collect()
}

/// The answer a `resume` entry gives: the interrupt (request) it names and the text recorded,
/// with `approved`/`reason` added to `fields` for a confirmation.
fn answer(entry: &Value, fields: &mut Map<String, Value>) -> Result<(EventId, String), ApiError> {
    let id = entry["interruptId"].as_str().unwrap_or_default();
    let request: EventId = id.parse().map_err(|_| {
        ApiError::new(
            StatusCode::CONFLICT,
            "request_not_open",
            format!("interrupt `{id}` is not one this thread asked"),
        )
    })?;
    let payload = &entry["payload"];
    if entry["status"] == "cancelled" {
        fields.insert(APPROVED_FIELD.to_owned(), json!(false));
        fields.insert("cancelled".to_owned(), json!(true));
        return Ok((request, "no".to_owned()));
    }
    if let Some(approved) = payload["approved"].as_bool() {
        fields.insert(APPROVED_FIELD.to_owned(), json!(approved));
        if let Some(reason) = payload["reason"].as_str() {
            fields.insert(REASON_FIELD.to_owned(), json!(reason));
        }
        return Ok((
            request,
            openharness_projection::approval_text(approved).to_owned(),
        ));
    }
    let text = payload
        .as_str()
        .or_else(|| payload["text"].as_str())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "the answer to interrupt `{id}` has no `payload.approved` (a confirmation) or `payload.text` (a question)"
            ))
        })?;
    Ok((request, text.to_owned()))
}

/// `POST /ag-ui/{workflow}/{thread}/stop`: stops the thread's running turn as an event.
async fn stop(
    State(state): Shared,
    Path((_workflow, thread)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let session: SessionId = thread
        .parse()
        .map_err(|err| ApiError::bad_request(format!("`{thread}` is not a thread id: {err}")))?;
    let cancelled = state.host.cancel(&session).await;
    Ok(axum::Json(json!({ "cancelled": cancelled })).into_response())
}
