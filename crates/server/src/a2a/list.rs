//! `ListTasks`: the tasks of one context (a session), or of every session of the workflow,
//! newest first, each projected from the log as `GetTask` projects it.
//!
//! A task starts where a message was recorded: a new session's `workflow:started`, a
//! `user:input` of a living session, or an `input:queued` behind a running turn. The
//! `user:input` right after a `workflow:started` belongs to that first task, and one caused
//! by a queued input to the queued input's task, so each task is listed once.

use openharness_core::builtin::{InputQueued, InputReceived, UserInput, WorkflowStarted};
use openharness_core::{Envelope, Event as _, SessionId};
use openharness_projection::{TaskState, TaskStream};
use serde_json::{Value, json};

use super::wire::{RpcError, TaskId, trim_history};
use crate::AppState;

/// The most tasks one page holds, and how many without `pageSize`.
const MAX_PAGE: usize = 100;
const DEFAULT_PAGE: usize = 50;

/// `ListTasks` on `target`'s endpoint.
pub(crate) async fn list_tasks(
    state: &AppState,
    target: &crate::targets::Target,
    params: &Value,
) -> Result<Value, RpcError> {
    let wanted_state = match params.get("status").and_then(Value::as_str) {
        None | Some("" | "TASK_STATE_UNSPECIFIED") => None,
        Some(name) => Some(TaskState::parse(name).ok_or_else(|| {
            RpcError::invalid_params(format!("`status` `{name}` is not a task state"))
        })?),
    };
    let page_size = match params.get("pageSize").and_then(Value::as_u64) {
        None | Some(0) => DEFAULT_PAGE,
        Some(size) => usize::try_from(size).unwrap_or(MAX_PAGE).min(MAX_PAGE),
    };
    let offset = match params.get("pageToken").and_then(Value::as_str) {
        None | Some("") => 0,
        Some(token) => token.parse::<usize>().map_err(|_| {
            RpcError::invalid_params(format!("`pageToken` `{token}` is not one this server gave"))
        })?,
    };
    let history = params.get("historyLength").and_then(Value::as_u64);
    let artifacts = params.get("includeArtifacts").and_then(Value::as_bool) == Some(true);
    let sessions = match params
        .get("contextId")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        Some(context) => {
            let session: SessionId = context.parse().map_err(|err| {
                RpcError::invalid_params(format!("`contextId` names no context: {err}"))
            })?;
            vec![session]
        }
        None => {
            let mut sessions = state.host.sessions().await?;
            sessions.retain(|s| s.workflow.as_deref() == Some(target.workflow()));
            sessions.sort_by_key(|s| std::cmp::Reverse(s.last_event));
            let mut of_target = Vec::with_capacity(sessions.len());
            for session in sessions {
                // An agent's endpoint lists that agent's sessions, not every agent-chat one.
                if target
                    .owns(state, &session.id, session.workflow.as_deref())
                    .await
                    .is_ok()
                {
                    of_target.push(session.id);
                }
            }
            of_target
        }
    };
    let mut tasks = Vec::new();
    for session in sessions {
        let events = all_events(state, &session).await?;
        let mut of_session: Vec<Value> = openers(&events)
            .into_iter()
            .filter_map(|seq| {
                let id = TaskId {
                    seq,
                    session: session.clone(),
                };
                let mut projected = TaskStream::new(id.head());
                for event in events.iter().skip(usize::try_from(seq).ok()?) {
                    projected.step(event);
                    if projected.state().is_terminal() {
                        break;
                    }
                }
                wanted_state
                    .is_none_or(|wanted| projected.state() == wanted)
                    .then(|| projected.task())
            })
            .collect();
        of_session.reverse();
        tasks.extend(of_session);
    }
    let total = tasks.len();
    let page: Vec<Value> = tasks
        .into_iter()
        .skip(offset)
        .take(page_size)
        .map(|mut task| {
            trim_history(&mut task, history);
            if !artifacts && let Value::Object(fields) = &mut task {
                fields.remove("artifacts");
            }
            task
        })
        .collect();
    let next = offset + page.len();
    Ok(json!({
        "tasks": page,
        "nextPageToken": if next < total { next.to_string() } else { String::new() },
        "pageSize": page_size,
        "totalSize": total,
    }))
}

/// Every event of `session` (the protocols' one reader).
pub(super) async fn all_events(
    state: &AppState,
    session: &SessionId,
) -> Result<Vec<Envelope>, RpcError> {
    Ok(crate::responses::read::events(state, session, 0, u64::MAX).await?)
}

/// The seq of the task whose message (or answer) `events[at]` is: a queued input's own, an
/// answer's the task that asked its question, any other input's the newest task started at or
/// before it.
pub(super) fn task_of(events: &[Envelope], at: usize) -> Option<u64> {
    let event = events.get(at)?;
    let position = |id: openharness_core::EventId| events.iter().position(|e| e.id == id);
    let before = if event.name == InputReceived::NAME {
        let request = event.payload["requestId"].as_str()?.parse().ok()?;
        position(request)?
    } else if event.name == UserInput::NAME
        && let Some(cause) = event.caused_by
        && let Some(queued) = position(cause)
        && events[queued].name == InputQueued::NAME
    {
        return u64::try_from(queued).ok();
    } else {
        at
    };
    let before = u64::try_from(before).ok()?;
    openers(events).into_iter().rfind(|&seq| seq <= before)
}

/// The seqs where the session's tasks start (see the module docs).
fn openers(events: &[Envelope]) -> Vec<u64> {
    let mut starts = Vec::new();
    let mut previous: Option<&Envelope> = None;
    for (seq, event) in (0u64..).zip(events) {
        let name = event.name.as_ref();
        let starts_here = if name == WorkflowStarted::NAME || name == InputQueued::NAME {
            true
        } else if name == UserInput::NAME {
            event.caused_by.is_none()
                && previous.is_none_or(|before| before.name != WorkflowStarted::NAME)
        } else {
            false
        };
        if starts_here {
            starts.push(seq);
        }
        previous = Some(event);
    }
    starts
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use openharness_core::builtin::{InputQueued, QueueMode, UserInput, WorkflowCompleted};

    use super::*;

    #[test]
    fn each_message_opens_one_task() {
        let started = Envelope::typed(
            &WorkflowStarted {
                workflow: "chat".into(),
                code: None,
                version: None,
                commit: None,
                state_shape: None,
            },
            None,
        )
        .unwrap();
        let first = Envelope::typed(&UserInput::new("one"), None).unwrap();
        let done = Envelope::typed(&WorkflowCompleted::default(), None).unwrap();
        let second = Envelope::typed(&UserInput::new("two"), None).unwrap();
        let queued = Envelope::typed(
            &InputQueued::new("three", QueueMode::Enqueue),
            Some(second.id),
        )
        .unwrap();
        let answering = Envelope::typed(&UserInput::new("three"), Some(queued.id)).unwrap();
        let events = [
            started,
            first,
            done.clone(),
            second,
            queued,
            done.clone(),
            answering,
            done,
        ];
        assert_eq!(openers(&events), [0, 3, 4]);
        // Each input belongs to the task of its message.
        assert_eq!(task_of(&events, 1), Some(0));
        assert_eq!(task_of(&events, 3), Some(3));
        assert_eq!(task_of(&events, 6), Some(4));
    }
}
