//! Notification events: a projection of a platform session's log, one [`Notification`] per
//! event that is one — `session.started` (`workflow:started`), `message.created`
//! (`user:input`, `assistant:replied`), `step.started` / `step.generated` / `step.error`
//! (`agent:started`, `agent:completed`, `error:occurred`), `message.delta` (`text:delta`),
//! `tool.started` / `tool.completed` (`tool:called`, `tool:result`), `session.completed` /
//! `session.failed` (`workflow:completed`). Its `id` is the event's id and its `sequence` the
//! event's seq, which is also the SSE frame's `id:`, so a stream resumes from `Last-Event-ID`
//! without losing or repeating a notification.

use chrono::{DateTime, Utc};
use openharness_core::Envelope;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::AssistantReplied;
use crate::messages::project;
use openharness_core::Event;

/// One notification of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Notification {
    /// The id of the event it is.
    pub id: Uuid,
    /// The event's seq in the session's log.
    pub sequence: u64,
    /// What happened, such as `message.created`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The session.
    pub session_id: Uuid,
    /// The details: the message for `message.created`, the event's payload otherwise.
    pub data: serde_json::Value,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

/// The notification an event is, if it is one.
pub(crate) fn notification(session: Uuid, seq: u64, event: &Envelope) -> Option<Notification> {
    let payload = &event.payload;
    let kind = match event.name.as_ref() {
        "workflow:started" => "session.started",
        "user:input" | AssistantReplied::NAME => "message.created",
        "agent:started" => "step.started",
        "agent:completed" if payload["outcome"] == "success" => "step.generated",
        "agent:completed" | "error:occurred" => "step.error",
        "text:delta" => "message.delta",
        "tool:called" => "tool.started",
        "tool:result" => "tool.completed",
        "workflow:completed" if payload["errors"].as_u64().unwrap_or(0) > 0 => "session.failed",
        "workflow:completed" => "session.completed",
        _ => return None,
    };
    let data = if kind == "message.created" {
        serde_json::to_value(project(session, seq, event)?).ok()?
    } else {
        payload.clone()
    };
    Some(Notification {
        id: *event.id.as_uuid(),
        sequence: seq,
        kind: kind.to_owned(),
        session_id: session,
        data,
        created_at: event.timestamp,
    })
}
