//! A2A v1.0 (the Agent2Agent protocol, specification v1.0.1) as a projection of the session's
//! log: every served workflow, and every `/v1` agent (as `agent:<name-or-id>`, see `targets`),
//! is an agent with a card, and the official clients (`a2a-sdk` for Python, `@a2a-js/sdk`)
//! work unmodified against it.
//!
//! - `GET /a2a/{workflow}/.well-known/agent-card.json`: the workflow's agent card, its
//!   JSON-RPC endpoint `/a2a/{workflow}` (an absolute URL on the host the client reached).
//!   `GET /.well-known/agent-card.json` is the card of the default workflow (`serve
//!   --chat-workflow`, or the only one). Cards need no API key. A JavaScript client resolves
//!   the card relative to its base URL, so give it `…/a2a/chat/` with the trailing slash.
//! - `POST /a2a/{workflow}`: JSON-RPC 2.0 with the header `A2A-Version: 1.0`. `SendMessage`
//!   (answers `{"task": …}` once the task is over or waits for input, keeping the connection
//!   alive with spaces before the JSON; at once with `configuration.returnImmediately`),
//!   `SendStreamingMessage` (SSE: the `Task`, then status and artifact updates, closed after a
//!   final state or `TASK_STATE_INPUT_REQUIRED`), `GetTask` (with `historyLength`),
//!   `CancelTask` (stops the task's turn as an event, `stop:requested`; the task ends
//!   `TASK_STATE_CANCELED`), `SubscribeToTask` (the task as it stands, then its updates; with
//!   `Last-Event-ID`, exactly the frames after that one, also of a task that ended since),
//!   `ListTasks` (of a `contextId`, or of every session of the workflow; newest first, paged,
//!   filtered by `status`).
//!   Every frame a stream makes of an event has the id `<seq>.<n>` (the `n`-th made of the
//!   event at `seq`); `<seq>.0` resumes before the event's first frame.
//!   Errors are JSON-RPC errors with the specification's codes (`-32001` no such task,
//!   `-32002` not cancelable, `-32004` not served here, `-32009` another protocol version, …).
//!
//! **Contexts and tasks.** A context is a session: a message without `contextId` starts a new
//! session of the workflow, one with a `contextId` continues that session (or starts it under
//! that id). A task is the turn a message started and the turns that answer the questions it
//! asked: its id is `task_<seq>_<session>`, the seq of the message's recorded event, so it
//! names one exact position of one session. A turn that ends waiting for an answer (an
//! `input:requested` still open) leaves the task `TASK_STATE_INPUT_REQUIRED` with the question
//! as its status message; the next message with that `taskId` answers it (`input:received`)
//! and the same task goes on. An approval can be answered by a text (`yes`, `no`) or by a
//! `data` part `{"approved": bool, "reason"?: string}`.
//!
//! A message sent again with the same `messageId` (in the same context) records nothing and
//! answers the task it started: a client whose connection dropped retries safely.
//!
//! Nothing is kept beside the log: the message's `messageId` and `via: "a2a"` are recorded on
//! its input event, and every read projects the task again
//! ([`TaskStream`](openharness_projection::TaskStream)).
//!
//! Not served: push notifications (`-32003`), the extended card (`-32007`), and A2A 0.3 (its
//! method names are not found; a request without the `A2A-Version` header is taken as 0.3,
//! `-32009`).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::{StreamExt, stream};
use openharness_core::{RunOptions, SessionId};
use openharness_host::TurnStart;
use openharness_projection::{
    APPROVED_FIELD, MESSAGE_ID_FIELD, REASON_FIELD, TaskState, TaskStream, approval_text,
};
use serde_json::{Value, json};

use crate::AppState;
use crate::chat::{Failure, TurnItem, failure_of, until_turn_end};
use crate::error::ApiError;
use crate::responses::wire::VIA_FIELD;
use crate::targets::Target;

mod card;
mod list;
pub(crate) mod openapi;
mod wire;

use wire::{RpcError, TaskId, VIA, answer, frame, read_task, respond};

type Shared = State<Arc<AppState>>;

/// How long `CancelTask` waits for the stopped turn to record its end.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// The routes, all without the request timeout (a task lasts as long as its turns).
pub(crate) fn routes() -> axum::Router<Arc<AppState>> {
    use axum::routing::{get, post};
    axum::Router::new()
        .route("/.well-known/agent-card.json", get(default_card))
        .route(
            "/a2a/{target}/.well-known/agent-card.json",
            get(target_card),
        )
        .route("/a2a/{target}", post(rpc))
}

/// The target `target` names: a served workflow or a `/v1` agent ([`crate::targets`]).
async fn served(state: &AppState, target: &str) -> Result<Target, ApiError> {
    crate::targets::resolve(state, target).await.map_err(|err| {
        ApiError::new(
            err.status,
            err.code,
            format!("{}; each is an A2A agent at /a2a/<name>", err.message),
        )
    })
}

/// A card answer, cacheable for a minute.
fn card_answer(state: &AppState, name: &str, target: &Target, headers: &HeaderMap) -> Response {
    let agent = !matches!(target, Target::Workflow(_));
    let card = card::card(name, agent, headers, !state.options.api_keys.is_empty());
    let mut response = axum::Json(card).into_response();
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=60"),
    );
    response
}

/// `GET /.well-known/agent-card.json`: the default workflow's card.
async fn default_card(State(state): Shared, headers: HeaderMap) -> Result<Response, ApiError> {
    let workflow = crate::chat::default_workflow(&state).map_err(|err| {
        ApiError::not_found(format!(
            "{} — each workflow's card is at /a2a/<workflow>/.well-known/agent-card.json",
            err.message
        ))
    })?;
    let target = Target::Workflow(workflow.clone());
    Ok(card_answer(&state, &workflow, &target, &headers))
}

/// `GET /a2a/{target}/.well-known/agent-card.json`.
async fn target_card(
    State(state): Shared,
    Path(target): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let served = served(&state, &target).await?;
    Ok(card_answer(&state, &target, &served, &headers))
}

/// One JSON-RPC request.
struct Call {
    /// Its id, echoed on every answer (and every frame of a stream).
    id: Value,
    method: String,
    params: Value,
}

/// Reads the envelope of a JSON-RPC request.
fn envelope(body: &Bytes) -> Result<Call, (Value, RpcError)> {
    let value: Value = serde_json::from_slice(body).map_err(|err| {
        (
            Value::Null,
            RpcError::parse(format!("the body is not JSON: {err}")),
        )
    })?;
    let Value::Object(fields) = value else {
        return Err((
            Value::Null,
            RpcError::invalid_request("a request is a JSON object (batches are not served)"),
        ));
    };
    let id = match fields.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => id.clone(),
        None => Value::Null,
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` is a string, a number or null"),
            ));
        }
    };
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("`jsonrpc` must be \"2.0\"")));
    }
    let Some(method) = fields.get("method").and_then(Value::as_str) else {
        return Err((id, RpcError::invalid_request("`method` must be a string")));
    };
    let params = match fields.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(params @ Value::Object(_)) => params.clone(),
        Some(_) => {
            return Err((id, RpcError::invalid_params("`params` must be an object")));
        }
    };
    Ok(Call {
        id,
        method: method.to_owned(),
        params,
    })
}

/// Whether the request speaks A2A 1.0 (`A2A-Version: 1.0` or `1.0.x`).
fn check_version(headers: &HeaderMap) -> Result<(), RpcError> {
    let asked = headers
        .get(wire::VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    match asked {
        Some(version) if version == wire::VERSION || version.starts_with("1.0.") => Ok(()),
        asked => Err(RpcError::version(asked)),
    }
}

/// `POST /a2a/{target}`: the JSON-RPC endpoint.
async fn rpc(
    State(state): Shared,
    Path(target): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let target = served(&state, &target).await?;
    let call = match envelope(&body) {
        Ok(call) => call,
        Err((id, error)) => return Ok(respond(&answer(&id, Err(error)))),
    };
    if let Err(error) = check_version(&headers) {
        return Ok(respond(&answer(&call.id, Err(error))));
    }
    let id = call.id.clone();
    let result = match call.method.as_str() {
        "SendMessage" => return Ok(send(&state, &target, &headers, call, false).await),
        "SendStreamingMessage" => return Ok(send(&state, &target, &headers, call, true).await),
        "SubscribeToTask" => return Ok(subscribe(&state, &headers, call).await),
        "GetTask" => get_task(&state, &call.params).await,
        "CancelTask" => cancel_task(&state, &call.params).await,
        "ListTasks" => list::list_tasks(&state, &target, &call.params).await,
        "GetExtendedAgentCard" => Err(RpcError::no_extended_card()),
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(RpcError::push_not_supported()),
        other => Err(RpcError::method_not_found(other)),
    };
    Ok(respond(&answer(&id, result)))
}

/// The task id a request's `params.id` names.
fn task_id_of(params: &Value) -> Result<TaskId, RpcError> {
    let id = params
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("`id` (the task's id) is required"))?;
    TaskId::parse(id)
}

/// `params.historyLength`, when given.
fn history_length(params: &Value) -> Option<u64> {
    params.get("historyLength").and_then(|length| {
        length
            .as_u64()
            .or_else(|| length.as_str().and_then(|s| s.parse().ok()))
    })
}

/// `GetTask`: the task as the log has it now.
async fn get_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let id = task_id_of(params)?;
    let (projected, _) = read_task(state, &id).await?;
    let mut task = projected.task();
    wire::trim_history(&mut task, history_length(params));
    Ok(task)
}

/// `CancelTask`: stops the task's running turn (`stop:requested`), then answers the task as
/// it ended.
async fn cancel_task(state: &AppState, params: &Value) -> Result<Value, RpcError> {
    let id = task_id_of(params)?;
    let (projected, _) = read_task(state, &id).await?;
    match projected.state() {
        state if state.is_terminal() => {
            return Err(RpcError::not_cancelable(format!(
                "task {id} is over ({})",
                state.as_str()
            )));
        }
        TaskState::InputRequired => {
            return Err(RpcError::not_cancelable(format!(
                "task {id} runs nothing: it waits for an answer (send a message with its taskId)"
            )));
        }
        TaskState::Submitted => {
            return Err(RpcError::not_cancelable(format!(
                "task {id} waits behind the session's running turn: cancelling would stop another task"
            )));
        }
        _ => {}
    }
    if !state.host.is_running(&id.session) {
        return Err(RpcError::not_cancelable(format!(
            "task {id} has no running turn on this server (its turn was cut off; resume the session to finish it)"
        )));
    }
    state.host.cancel(&id.session).await;
    // The turn ends at its next safe point: answer the task as it ended.
    let deadline = tokio::time::Instant::now() + CANCEL_WAIT;
    loop {
        let (projected, _) = read_task(state, &id).await?;
        if projected.state().is_terminal() || tokio::time::Instant::now() >= deadline {
            return Ok(projected.task());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where a message goes: the task it belongs to (its id once recorded, for a new task) and
/// how its turn starts.
struct Plan {
    session: SessionId,
    start: TurnStart,
    /// The task it continues (an answer); `None` for a new task.
    task: Option<TaskId>,
}

/// The plan of a message sent to `target`'s endpoint.
async fn plan(
    state: &AppState,
    target: &Target,
    incoming: &wire::Incoming,
) -> Result<Plan, RpcError> {
    let text = match (&incoming.approved, incoming.text.is_empty()) {
        (Some((approved, _)), true) => approval_text(*approved).to_owned(),
        _ => incoming.text.clone(),
    };
    if let Some(task) = &incoming.task_id {
        let task = TaskId::parse(task)?;
        if let Some(context) = &incoming.context_id
            && *context != task.session.to_string()
        {
            return Err(RpcError::invalid_params(format!(
                "task {task} is in context {}, not {context}",
                task.session
            )));
        }
        let (projected, _) = read_task(state, &task).await?;
        return match projected.state() {
            TaskState::InputRequired => {
                let request = wire::answered(&task.session, incoming, projected.waiting_for())?;
                Ok(Plan {
                    session: task.session.clone(),
                    start: TurnStart::Answer { request, text },
                    task: Some(task),
                })
            }
            done if done.is_terminal() => Err(RpcError::unsupported(format!(
                "task {task} is over ({}): it takes no more messages; send a new message with contextId {} to go on in its context",
                done.as_str(),
                task.session
            ))),
            running => Err(RpcError::unsupported(format!(
                "task {task} is {}: it takes a message only when it asks for input; send a new message with contextId {} (a new task in its context)",
                running.as_str(),
                task.session
            ))),
        };
    }
    let workflow = target.workflow();
    let Some(context) = &incoming.context_id else {
        return Ok(Plan {
            session: target.new_session(state, None).await?,
            start: TurnStart::New {
                workflow: workflow.to_owned(),
                input: Some(text),
            },
            task: None,
        });
    };
    let session: SessionId = context
        .parse()
        .map_err(|err| RpcError::invalid_params(format!("`contextId` names no context: {err}")))?;
    match state.host.session(&session).await {
        Ok(summary) => {
            target
                .owns(state, &session, summary.workflow.as_deref())
                .await
                .map_err(|err| {
                    RpcError::invalid_params(format!(
                        "context {}: send to the agent it is a session of",
                        err.message.trim_start_matches("session ")
                    ))
                })?;
            Ok(Plan {
                session,
                start: TurnStart::Input(text),
                task: None,
            })
        }
        // A context the client named first: a new session under its id.
        Err(openharness_host::HostError::SessionNotFound(_))
            if !state.host.is_running(&session) =>
        {
            Ok(Plan {
                session: target.new_session(state, Some(session)).await?,
                start: TurnStart::New {
                    workflow: workflow.to_owned(),
                    input: Some(text),
                },
                task: None,
            })
        }
        Err(openharness_host::HostError::SessionNotFound(_)) => Ok(Plan {
            session,
            start: TurnStart::Input(text),
            task: None,
        }),
        Err(err) => Err(err.into()),
    }
}

/// What a started message gives a sender: its task, and the outcome of the turn.
struct Sent {
    task: TaskId,
    /// Whether the task began before this request (the message answers its question, or was
    /// sent before: a client that lost its answer sent it again).
    answers: bool,
    /// The turn this request started (`None` for a message sent before).
    done: Option<openharness_host::TurnDone>,
}

/// The task of a message sent before: one of this protocol's inputs recorded in the context
/// (or the task's session) with the same `messageId`. Sending it again records nothing and
/// answers that task, so a client whose connection dropped can simply retry.
async fn duplicate(
    state: &AppState,
    incoming: &wire::Incoming,
) -> Result<Option<TaskId>, RpcError> {
    let Some(message_id) = &incoming.message_id else {
        return Ok(None);
    };
    let session = match (&incoming.task_id, &incoming.context_id) {
        (Some(task), _) => TaskId::parse(task)?.session,
        (None, Some(context)) => match context.parse::<SessionId>() {
            Ok(session) => session,
            Err(_) => return Ok(None),
        },
        (None, None) => return Ok(None),
    };
    let events = list::all_events(state, &session).await?;
    let sent = events.iter().position(|event| {
        event.payload[VIA_FIELD] == VIA
            && event.payload[MESSAGE_ID_FIELD].as_str() == Some(message_id.as_str())
    });
    Ok(sent
        .and_then(|at| list::task_of(&events, at))
        .map(|seq| TaskId { seq, session }))
}

/// Resolves once task `task` is over or waits for input (or nothing runs it any more): what
/// a message sent again waits for.
fn settled(state: Arc<AppState>, task: TaskId) -> Failure {
    Box::pin(async move {
        loop {
            match read_task(&state, &task).await {
                Ok((projected, _))
                    if !projected.ended() && state.host.is_running(&task.session) => {}
                _ => return None,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
}

/// Records the message of `call` (a new task's first turn, or an answer).
async fn start(
    state: &AppState,
    target: &Target,
    headers: &HeaderMap,
    call: &Call,
) -> Result<Sent, RpcError> {
    let incoming = wire::incoming(&call.params)?;
    if let Some(task) = duplicate(state, &incoming).await? {
        return Ok(Sent {
            task,
            answers: true,
            done: None,
        });
    }
    let plan = plan(state, target, &incoming).await?;
    let mut fields = serde_json::Map::new();
    fields.insert(VIA_FIELD.to_owned(), json!(VIA));
    if let Some(id) = &incoming.message_id {
        fields.insert(MESSAGE_ID_FIELD.to_owned(), json!(id));
    }
    if let Some((approved, reason)) = &incoming.approved
        && matches!(plan.start, TurnStart::Answer { .. })
    {
        fields.insert(APPROVED_FIELD.to_owned(), json!(approved));
        if let Some(reason) = reason {
            fields.insert(REASON_FIELD.to_owned(), json!(reason));
        }
    }
    let policy = crate::request::busy_policy(headers, None, state.options.on_busy)?;
    let options = RunOptions::new().input_fields(fields).on_busy(policy);
    let started = state.host.start(&plan.session, plan.start, options).await?;
    let answers = plan.task.is_some();
    let task = match plan.task {
        Some(task) => task,
        None => {
            let recorded = started
                .recorded
                .ok_or_else(|| RpcError::internal("the message's turn recorded nothing"))?;
            TaskId {
                seq: recorded.seq,
                session: started.session.clone(),
            }
        }
    };
    Ok(Sent {
        task,
        answers,
        done: Some(started.done),
    })
}

/// `SendMessage` (`stream: false`) and `SendStreamingMessage` (`stream: true`).
async fn send(
    state: &Arc<AppState>,
    target: &Target,
    headers: &HeaderMap,
    call: Call,
    stream: bool,
) -> Response {
    let sent = match start(state, target, headers, &call).await {
        Ok(sent) => sent,
        Err(error) => return respond(&answer(&call.id, Err(error))),
    };
    let failed = sent.done.map(failure_of);
    if stream {
        // A new task's stream is all of it; an answer's, the task as it stands, then the rest.
        let from = if sent.answers { From::Now } else { From::Start };
        return match follow(state, &call.id, &sent.task, failed, from).await {
            Ok(response) => response,
            Err(error) => respond(&answer(&call.id, Err(error))),
        };
    }
    let immediately = call.params["configuration"]["returnImmediately"] == json!(true);
    let length = history_length(&call.params["configuration"]);
    if immediately {
        let result = read_task(state, &sent.task).await.map(|(projected, _)| {
            let mut task = projected.task();
            wire::trim_history(&mut task, length);
            json!({ "task": task })
        });
        return respond(&answer(&call.id, result));
    }
    // The task once its turn has ended (the connection kept alive until then).
    let reader = Arc::clone(state);
    let ending = failed.unwrap_or_else(|| settled(Arc::clone(state), sent.task.clone()));
    let task = sent.task;
    let answer_body = async move {
        let outcome = ending.await;
        let result = read_task(&reader, &task).await.map(|(mut projected, _)| {
            if let Some(why) = outcome {
                projected.fail(&format!("the turn failed: {why}"), None);
            }
            let mut task = projected.task();
            wire::trim_history(&mut task, length);
            json!({ "task": task })
        });
        answer(&call.id, result).to_string()
    };
    crate::keep_alive::json_when_ready(answer_body, state.options.heartbeat)
}

/// `SubscribeToTask`: the task as it stands, then its updates (`-32004` for a task that is
/// over). With `Last-Event-ID` (a frame id this server gave, `<seq>.<n>`), the frames after
/// it instead, from the log then live, also of a task that ended since: a client that lost
/// its stream gets exactly what it missed.
async fn subscribe(state: &Arc<AppState>, headers: &HeaderMap, call: Call) -> Response {
    let result = async {
        let id = task_id_of(&call.params)?;
        if let Some(cursor_text) = crate::sse::last_event_id(headers)?.filter(|c| !c.is_empty()) {
            let after = cursor(cursor_text)?;
            // A task that does not exist is not found, whatever the cursor.
            read_first(state, &id).await?;
            return follow(state, &call.id, &id, None, From::After(after)).await;
        }
        let (projected, _) = read_task(state, &id).await?;
        if projected.state().is_terminal() {
            return Err(RpcError::unsupported(format!(
                "task {id} is over ({}): read it with GetTask",
                projected.state().as_str()
            )));
        }
        follow(state, &call.id, &id, None, From::Now).await
    }
    .await;
    result.unwrap_or_else(|error| respond(&answer(&call.id, Err(error))))
}

/// Whether the task `id` exists (`-32001` otherwise), reading only its first event.
async fn read_first(state: &AppState, id: &TaskId) -> Result<(), RpcError> {
    let store = state.host.store();
    let first = store
        .events(&id.session, id.seq..id.seq + 1)
        .await
        .map_err(|err| RpcError::internal(err.to_string()))?;
    if first.first().is_some_and(wire::opens_task) {
        Ok(())
    } else {
        Err(RpcError::task_not_found(format!(
            "no task `{id}`: position {} of session {} holds no message",
            id.seq, id.session
        )))
    }
}

/// A frame's place in a task's stream: the `n`-th response (from 1) made of the event at
/// `seq`. Every frame a projection makes of an event carries its id, `<seq>.<n>`, so a
/// stream resumes after any of them.
use crate::frame_id::FrameId as Cursor;

/// The frame id a client resumes after (`Last-Event-ID`): `-32602` for one this server did not
/// give.
fn cursor(text: &str) -> Result<Cursor, RpcError> {
    Cursor::parse(text).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "Last-Event-ID `{text}` is not a frame id of this server (`<seq>.<n>`)"
        ))
    })
}

/// Where a task's stream starts.
#[derive(Debug, Clone, Copy)]
enum From {
    /// At the task's first event: every frame (a new task's own stream).
    Start,
    /// With the task as the log has it now (one `task` frame), then what follows.
    Now,
    /// After the frame `Cursor` (a resumed stream).
    After(Cursor),
}

/// The stream of task `task` for the request `id`, from `from`, live, until it is over or
/// waits for input. `failed` resolves when the turn the stream waits for failed before it
/// could record its end.
async fn follow(
    state: &AppState,
    id: &Value,
    task: &TaskId,
    failed: Option<Failure>,
    from: From,
) -> Result<Response, RpcError> {
    let counted = state
        .streams
        .open(&task.session, state.options.max_streams_per_session)?;
    let (mut projected, next, opening, after) = match from {
        From::Now => {
            let (mut projected, next) = read_task(state, task).await?;
            let opening = frame(id, None, &projected.announce());
            if projected.ended() {
                return Ok(crate::sse::respond(
                    stream::iter([opening]),
                    Some(counted),
                    state.options.heartbeat,
                ));
            }
            (projected, next, Some(opening), None)
        }
        From::Start => (TaskStream::new(task.head()), task.seq, None, None),
        From::After(cursor) => (TaskStream::new(task.head()), task.seq, None, Some(cursor)),
    };
    let subscription = crate::sse::subscribe(state, &task.session, next).await?;
    let failures = stream::iter(failed)
        .then(|failed| failed)
        .filter_map(|why| std::future::ready(why.map(TurnItem::Failed)));
    let items = stream::select(subscription.map(TurnItem::Event), Box::pin(failures));
    let id = id.clone();
    // Whether the stream has sent a frame of the task's own (a resumed stream passes over
    // what its client has seen, the end of a phase included).
    let mut sent = opening.is_some();
    let updates = until_turn_end(items, move |item| {
        let frames: Vec<Bytes> = match item {
            TurnItem::Failed(why) => projected
                .fail(&format!("the turn failed: {why}"), None)
                .into_iter()
                .map(|response| frame(&id, None, &response))
                .collect(),
            TurnItem::Event(Ok(recorded)) => (1..)
                .zip(projected.step(&recorded.event))
                .filter_map(|(n, response)| {
                    let at = Cursor {
                        seq: recorded.seq,
                        n,
                    };
                    let wanted = after.is_none_or(|after| at > after);
                    let name = at.to_string();
                    wanted.then(|| frame(&id, Some(&name), &response))
                })
                .collect(),
            TurnItem::Event(Err(err)) => {
                let error = RpcError::internal(format!("the task's stream failed: {err}"));
                let ended = vec![wire::error_frame(&id, &error)];
                return std::future::ready((ended, true));
            }
        };
        sent |= !frames.is_empty();
        // A resumed stream whose client saw the task end has nothing more to send.
        let finished = (sent && projected.ended()) || (!sent && projected.state().is_terminal());
        std::future::ready((frames, finished))
    });
    let frames = stream::iter(opening).chain(updates);
    Ok(crate::sse::respond(
        frames,
        Some(counted),
        state.options.heartbeat,
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_that_is_no_request_gets_its_code() {
        let cases = [
            (&b"{"[..], -32700),
            (b"[]", -32600),
            (br#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#, -32600),
            (br#"{"jsonrpc":"2.0","id":1}"#, -32600),
            (br#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#, -32600),
            (
                br#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[]}"#,
                -32602,
            ),
        ];
        for (body, code) in cases {
            let (_, error) = envelope(&Bytes::from_static(body)).err().unwrap();
            assert_eq!(error.code, code, "{}", String::from_utf8_lossy(body));
        }
        let call = envelope(&Bytes::from_static(
            br#"{"jsonrpc":"2.0","id":"a","method":"GetTask","params":{"id":"task_1_s"}}"#,
        ))
        .ok()
        .unwrap();
        assert_eq!(call.id, "a");
        assert_eq!(task_id_of(&call.params).unwrap().seq, 1);
    }

    #[test]
    fn a_frame_id_this_server_did_not_give_is_invalid_params() {
        assert!(cursor("12.3").is_ok());
        for wrong in ["", "x", "1.x", "-1.0", "1.2.3"] {
            assert_eq!(cursor(wrong).unwrap_err().code, -32602, "{wrong}");
        }
    }

    #[test]
    fn only_version_one_is_spoken() {
        let mut headers = HeaderMap::new();
        assert_eq!(check_version(&headers).unwrap_err().code, -32009);
        headers.insert("A2A-Version", "0.3".parse().unwrap());
        assert_eq!(check_version(&headers).unwrap_err().code, -32009);
        for good in ["1.0", "1.0.1"] {
            headers.insert("A2A-Version", good.parse().unwrap());
            assert!(check_version(&headers).is_ok());
        }
    }
}
