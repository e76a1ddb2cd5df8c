//! Notification events: a projection of a platform session's log, one [`Notification`] per
//! event that is one — `session.started` (`workflow:started`), `message.created`
//! (`user:input`, `assistant:replied`), `step.started` / `step.generated` / `step.error`
//! (`agent:started`, `agent:completed`, `error:occurred`), `message.delta` (`text:delta`),
//! `tool.started` / `tool.completed` (`tool:called`, `tool:result`), `session.completed` /
//! `session.failed` (`workflow:completed`), and `step.generating` when a model response's first
//! text streams (before that `message.delta`: see [`Projector`]). Its `id` is the event's id and
//! its `sequence` the event's seq, which is also the SSE frame's `id:` (`seq.0` for a
//! `step.generating`, which shares its event), so a stream resumes from `Last-Event-ID` without
//! losing or repeating a notification.
//!
//! Two events are also the notifications the Everruns SDK waits for (see
//! [`crate::everruns`]): `assistant:replied` is `message.created` and then
//! `output.message.completed` (`data: {message}`), and `workflow:completed` is
//! `session.completed` / `session.failed` and then `turn.completed` / `turn.failed`
//! (`data` the payload with `error_code` and `error`; a cancelled turn is `turn.failed` with
//! `error_code: cancelled`). Such a second notification shares its event's sequence, has an id
//! derived from the event's, and takes the frame id `seq` while the first takes `seq.0`.

use chrono::{DateTime, Utc};
use openharness_core::Envelope;
use openharness_core::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputQueued, TextDelta, ToolCalled, ToolResult,
    UserInput, WorkflowCompleted, WorkflowStarted,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::chat::AssistantReplied;
use crate::messages::project;
use openharness_core::Event;

/// One notification of a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Notification {
    /// The id of the event it is (for a `step.generating`, one derived from its event's id:
    /// see the module docs).
    pub id: Uuid,
    /// The event's seq in the session's log.
    pub sequence: u64,
    /// What happened, such as `message.created`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The session.
    pub session_id: Uuid,
    /// The details: the message for `message.created`, the event's payload otherwise (without
    /// the text, `delta`, for a `step.generating`).
    pub data: serde_json::Value,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
    /// When it was recorded (the same instant as `created_at`; the Everruns SDK reads `ts`).
    pub ts: DateTime<Utc>,
}

/// Projects a session's log into notifications, event by event, in log order.
///
/// Most events are one notification or none. The first `text:delta` of a model response (one
/// whose previous event is not a `text:delta` of the same agent and attempt) is two:
/// `step.generating` (the model began answering; its data the delta's without the text), then
/// its `message.delta`. Both have the delta's sequence; `step.generating`'s id is the delta's
/// event id with its random bits complemented, so it is the same on every read.
///
/// A projector resuming after a reader's [`Resume`] point is fed the log from
/// [`read_from`](Self::read_from) (the event before the first it may send, which is all it
/// needs to know of what came before) and sends only the notifications after that point.
#[derive(Debug)]
pub(crate) struct Projector {
    session: Uuid,
    /// Where the reader stopped; `None` sends everything.
    resume: Option<Resume>,
    /// The agent and attempt the previous event streamed text for, if it was a `text:delta`.
    streaming: Option<(String, u64)>,
}

impl Projector {
    pub(crate) fn new(session: Uuid, resume: Option<Resume>) -> Self {
        Self {
            session,
            resume,
            streaming: None,
        }
    }

    /// The first seq of the log to feed [`project`](Self::project).
    pub(crate) fn read_from(&self) -> u64 {
        self.resume.map_or(0, |resume| resume.read_from())
    }

    /// The notifications `event` (at `seq`) is that the reader has not seen, in order, each
    /// with its SSE frame id ([`frame_id`]).
    pub(crate) fn project(&mut self, seq: u64, event: &Envelope) -> Vec<(String, Notification)> {
        let notes = self.notifications(seq, event);
        let count = notes.len();
        notes
            .into_iter()
            .enumerate()
            .filter(|(index, _)| self.resume.is_none_or(|r| r.wants(seq, *index)))
            .map(|(index, note)| (frame_id(seq, index, count), note))
            .collect()
    }

    /// Every notification `event` (at `seq`) is, in order: none, one, or two.
    fn notifications(&mut self, seq: u64, event: &Envelope) -> Vec<Notification> {
        let streamed = (event.name.as_ref() == TextDelta::NAME)
            .then(|| event.decode::<TextDelta>().ok())
            .flatten()
            .map(|delta| (delta.agent, u64::from(delta.attempt)));
        let began = streamed.is_some() && streamed != self.streaming;
        self.streaming = streamed;
        let mut notes = notifications(self.session, seq, event);
        let Some(note) = notes.first().filter(|_| began) else {
            return notes;
        };
        let mut data = note.data.clone();
        if let Some(fields) = data.as_object_mut() {
            fields.remove("delta");
        }
        let generating = Notification {
            id: Uuid::from_u128(note.id.as_u128() ^ RANDOM_BITS),
            kind: GENERATING.to_owned(),
            data,
            ..note.clone()
        };
        notes.insert(0, generating);
        notes
    }
}

/// The kind of the notification that a model began answering.
pub(crate) const GENERATING: &str = "step.generating";

/// The low 62 bits of a UUID v7, all random: complementing them keeps the version, variant and
/// timestamp.
const RANDOM_BITS: u128 = (1 << 62) - 1;

/// What the random bits of an event's id are complemented with for the notification that
/// follows its first (`output.message.completed`, `turn.*`): not [`RANDOM_BITS`], so it
/// never equals a `step.generating`'s.
const FOLLOWER_BITS: u128 = RANDOM_BITS ^ 1;

/// The SSE `id:` of the `index`-th of `count` notifications of the event at `seq`: the
/// sequence for the event's last one, `seq.index` for one before it (see [`Resume`]).
fn frame_id(seq: u64, index: usize, count: usize) -> String {
    if index + 1 == count {
        seq.to_string()
    } else {
        format!("{seq}.{index}")
    }
}

/// Where a reader of notifications stopped, from an SSE `Last-Event-ID` (a frame id: the
/// sequence for an event's last notification, `seq.index` for one before it) or `?after=`:
/// after every notification of event `seq`, or only after its first `seen`.
///
/// ```
/// use openharness_platform::Resume;
/// let all = Resume::after(41);
/// assert_eq!(Resume::parse("41"), Some(all));
/// let first = Resume::parse("41.0").unwrap_or(all);
/// // After the first of event 41's notifications: fewer seen than after all of them.
/// assert_eq!(first.max(all), all);
/// assert_eq!(Resume::parse("41.x"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resume {
    /// The event.
    pub(crate) seq: u64,
    /// How many of its notifications were seen, when not all of them.
    pub(crate) seen: Option<usize>,
}

impl Resume {
    /// After all of event `seq`'s notifications.
    pub fn after(seq: u64) -> Self {
        Self { seq, seen: None }
    }

    /// The later of two resume points (the one after which fewer notifications are left).
    #[must_use]
    pub fn max(self, other: Self) -> Self {
        let key = |r: &Self| (r.seq, r.seen.unwrap_or(usize::MAX));
        if key(&other) > key(&self) {
            other
        } else {
            self
        }
    }

    /// Reads a `Last-Event-ID`: `41` or `41.0`; `None` when it is neither.
    pub fn parse(text: &str) -> Option<Self> {
        /// Digits only: Rust's integer parsing would also take a leading `+`.
        fn number<N: std::str::FromStr>(digits: &str) -> Option<N> {
            let all_digits = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit());
            all_digits.then(|| digits.parse().ok()).flatten()
        }
        let text = text.trim();
        match text.split_once('.') {
            None => Some(Self::after(number(text)?)),
            Some((seq, index)) => Some(Self {
                seq: number(seq)?,
                seen: Some(number::<usize>(index)?.checked_add(1)?),
            }),
        }
    }

    /// Whether the `index`-th notification of the event at `seq` is still to be sent.
    pub(crate) fn wants(&self, seq: u64, index: usize) -> bool {
        match self.seen {
            _ if seq != self.seq => seq > self.seq,
            None => false,
            Some(seen) => index >= seen,
        }
    }

    /// The first seq a reader resuming here must be sent events from, and the one its
    /// [`Projector`] must be fed from (the one before, to know what came before).
    pub(crate) fn read_from(&self) -> u64 {
        let first = match self.seen {
            None => self.seq.saturating_add(1),
            Some(_) => self.seq,
        };
        first.saturating_sub(1)
    }
}

/// The notifications an event is, in order (before [`Projector`] adds `step.generating`):
/// none, one, or (for `assistant:replied` and `workflow:completed`) two.
fn notifications(session: Uuid, seq: u64, event: &Envelope) -> Vec<Notification> {
    let payload = &event.payload;
    let kind = match event.name.as_ref() {
        WorkflowStarted::NAME => "session.started",
        UserInput::NAME | InputQueued::NAME | AssistantReplied::NAME => "message.created",
        AgentStarted::NAME => "step.started",
        AgentCompleted::NAME if payload["outcome"] == "success" => "step.generated",
        AgentCompleted::NAME | ErrorOccurred::NAME => "step.error",
        TextDelta::NAME => "message.delta",
        ToolCalled::NAME => "tool.started",
        ToolResult::NAME => "tool.completed",
        WorkflowCompleted::NAME if payload["errors"].as_u64().unwrap_or(0) > 0 => "session.failed",
        WorkflowCompleted::NAME => "session.completed",
        _ => return Vec::new(),
    };
    let message = (kind == "message.created")
        .then(|| project(session, seq, event))
        .flatten()
        .and_then(|message| serde_json::to_value(message).ok());
    let data = match (kind, &message) {
        ("message.created", Some(message)) => message.clone(),
        ("message.created", None) => return Vec::new(),
        _ => payload.clone(),
    };
    let note = |id: Uuid, kind: &str, data: serde_json::Value| Notification {
        id,
        sequence: seq,
        kind: kind.to_owned(),
        session_id: session,
        data,
        created_at: event.timestamp,
        ts: event.timestamp,
    };
    let id = *event.id.as_uuid();
    let follower = Uuid::from_u128(id.as_u128() ^ FOLLOWER_BITS);
    let mut notes = vec![note(id, kind, data)];
    if event.name == AssistantReplied::NAME
        && let Some(message) = message
    {
        notes.push(note(
            follower,
            "output.message.completed",
            serde_json::json!({ "message": message }),
        ));
    } else if event.name == WorkflowCompleted::NAME {
        notes.push(turn_ended(payload).map_or_else(
            || note(follower, "turn.completed", payload.clone()),
            |data| note(follower, "turn.failed", data),
        ));
    }
    notes
}

/// The data of the `turn.failed` a turn's `workflow:completed` payload is, or `None` when the
/// turn completed: one that recorded errors, or that was cancelled.
fn turn_ended(payload: &serde_json::Value) -> Option<serde_json::Value> {
    let errors = payload["errors"].as_u64().unwrap_or(0);
    let (code, error) = if payload["reason"] == "cancelled" {
        ("cancelled", "the turn was cancelled".to_owned())
    } else if errors > 0 {
        (
            "turn_failed",
            format!("the turn recorded {errors} error(s): its step.error notifications say which"),
        )
    } else {
        return None;
    };
    let mut data = payload.clone();
    if let Some(fields) = data.as_object_mut() {
        fields.insert("error_code".into(), code.into());
        fields.insert("error".into(), error.into());
    }
    Some(data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(agent: &str, attempt: u32) -> Envelope {
        let mut payload = json!({ "agentName": agent, "delta": "x" });
        if attempt > 1 {
            payload["attempt"] = json!(attempt);
        }
        Envelope::new("text:delta", payload, None)
    }

    fn event(name: &'static str, payload: serde_json::Value) -> Envelope {
        Envelope::new(name, payload, None)
    }

    /// The kinds a log projects to, from its first event.
    fn kinds(log: &[Envelope]) -> Vec<String> {
        let mut projector = Projector::new(Uuid::nil(), None);
        log.iter()
            .enumerate()
            .flat_map(|(seq, e)| projector.project(seq as u64, e))
            .map(|(_, n)| n.kind)
            .collect()
    }

    #[test]
    fn each_model_response_begins_with_step_generating() {
        let log = [
            event("agent:started", json!({ "agentName": "a", "prompt": "p" })),
            delta("a", 1),
            delta("a", 1),
            event(
                "tool:called",
                json!({ "toolId": "t", "toolName": "n", "input": {} }),
            ),
            event("tool:result", json!({ "toolId": "t", "output": 1 })),
            delta("a", 1),
            // A rejected output asked the model again: a new response.
            delta("a", 2),
            delta("a", 2),
            // Another agent's text between them begins again too.
            delta("b", 1),
            delta("a", 2),
        ];
        assert_eq!(
            kinds(&log),
            [
                "step.started",
                "step.generating",
                "message.delta",
                "message.delta",
                "tool.started",
                "tool.completed",
                "step.generating",
                "message.delta",
                "step.generating",
                "message.delta",
                "message.delta",
                "step.generating",
                "message.delta",
                "step.generating",
                "message.delta",
            ]
        );
    }

    #[test]
    fn step_generating_is_the_same_on_every_read_and_keeps_the_delta_apart() {
        let first = delta("a", 1);
        let read = || {
            let notes = Projector::new(Uuid::nil(), None).project(7, &first);
            notes.into_iter().map(|(_, n)| n).collect::<Vec<_>>()
        };
        let (once, again) = (read(), read());
        assert_eq!(once, again);
        assert_eq!(once[0].kind, GENERATING);
        assert_eq!((once[0].sequence, once[1].sequence), (7, 7));
        assert_ne!(once[0].id, *first.id.as_uuid());
        assert_eq!(once[1].id, *first.id.as_uuid());
        // Still a v7 id of the same moment.
        assert_eq!(once[0].id.get_version_num(), 7);
        assert_eq!(once[0].id.get_timestamp(), once[1].id.get_timestamp());
        assert_eq!(once[0].data, json!({ "agentName": "a" }));
    }

    #[test]
    fn resume_points_read_and_select_exactly() {
        assert_eq!(Resume::parse("41"), Some(Resume::after(41)));
        assert_eq!(
            Resume::parse(" 41.0 "),
            Some(Resume {
                seq: 41,
                seen: Some(1)
            })
        );
        for bad in [
            "",
            "x",
            "41.",
            ".0",
            "41.x",
            "-1",
            "+41",
            "41.+0",
            "41.0.0",
            "18446744073709551616",
        ] {
            assert_eq!(Resume::parse(bad), None, "{bad:?}");
        }
        let all = Resume::after(41);
        assert!(!all.wants(41, 0) && !all.wants(41, 1) && !all.wants(3, 0));
        assert!(all.wants(42, 0));
        assert_eq!(all.read_from(), 41);
        let one = Resume::parse("41.0").unwrap_or(all);
        assert!(!one.wants(41, 0) && one.wants(41, 1) && one.wants(42, 0));
        assert_eq!(one.read_from(), 40);
        assert_eq!(Resume::parse("0.0").map(|r| r.read_from()), Some(0));
        assert_eq!(one.max(all), all);
        assert_eq!(all.max(one), all);
        assert_eq!(one.max(Resume::after(40)), one);
        assert_eq!(frame_id(41, 0, 2), "41.0");
        assert_eq!(frame_id(41, 1, 2), "41");
    }
}
