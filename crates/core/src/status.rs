//! [`SessionStatus`]: what a session is doing, told by its last event alone.
//!
//! A turn ends by recording `workflow:completed`; a session whose last event is anything else
//! has a turn under way (or one that a crash cut off, which `resume` finishes). The status is
//! derived from the last event, so every store can tell it without reading the session.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::builtin::WorkflowCompleted;
use crate::event::Event;

/// What a session is doing, from its last event.
///
/// ```
/// use openharness_core::SessionStatus;
/// use serde_json::json;
/// let done = json!({ "reason": "idle" });
/// assert_eq!(SessionStatus::after("workflow:completed", &done), SessionStatus::Idle);
/// let waiting = json!({ "reason": "waiting_for_input", "openRequests": ["0190..."] });
/// assert_eq!(SessionStatus::after("workflow:completed", &waiting), SessionStatus::Waiting);
/// assert_eq!(SessionStatus::after("task:started", &json!({})), SessionStatus::Running);
/// let queued = json!({ "reason": "idle", "queued": ["0190..."] });
/// assert_eq!(SessionStatus::after("workflow:completed", &queued), SessionStatus::Running);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionStatus {
    /// A turn is under way, or a crash cut one off (`resume` finishes it).
    #[default]
    Running,
    /// The last turn ended and nothing waits: send it new input to continue.
    Idle,
    /// The last turn ended waiting for a person to answer an `input:requested`.
    Waiting,
    /// The last turn ended with errors (`error:occurred`: an agent failed for good, a handler
    /// panicked, ...). The session can still be continued.
    Failed,
}

impl SessionStatus {
    /// The status of a session whose last event has this name and payload.
    pub fn after(name: &str, payload: &Value) -> Self {
        if name != WorkflowCompleted::NAME {
            return Self::Running;
        }
        // Inputs that arrived during the turn wait for turns of their own: work is left.
        if payload["queued"]
            .as_array()
            .is_some_and(|queued| !queued.is_empty())
        {
            return Self::Running;
        }
        if payload["reason"].as_str() == Some(crate::StopReason::WaitingForInput.as_str()) {
            return Self::Waiting;
        }
        if payload["errors"].as_u64().unwrap_or(0) > 0 {
            return Self::Failed;
        }
        Self::Idle
    }

    /// The status as a lowercase word (`running`, `idle`, `waiting`, `failed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Idle => "idle",
            Self::Waiting => "waiting",
            Self::Failed => "failed",
        }
    }

    /// The status a lowercase word names (`running`, `idle`, `waiting`, `failed`), the
    /// inverse of [`SessionStatus::as_str`].
    ///
    /// ```
    /// use openharness_core::SessionStatus;
    /// assert_eq!(SessionStatus::parse("idle"), Some(SessionStatus::Idle));
    /// assert_eq!(SessionStatus::parse("sleeping"), None);
    /// ```
    pub fn parse(word: &str) -> Option<Self> {
        [Self::Running, Self::Idle, Self::Waiting, Self::Failed]
            .into_iter()
            .find(|status| status.as_str() == word)
    }

    /// The statuses a filter names (words trimmed, empty ones skipped), or the first word
    /// that is not a status.
    ///
    /// ```
    /// use openharness_core::SessionStatus;
    /// let asked = SessionStatus::parse_list("idle, failed,".split(','));
    /// assert_eq!(asked, Ok(vec![SessionStatus::Idle, SessionStatus::Failed]));
    /// assert_eq!(SessionStatus::parse_list(["idle", "done"]), Err("done"));
    /// ```
    pub fn parse_list<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<Vec<Self>, &'a str> {
        words
            .into_iter()
            .map(str::trim)
            .filter(|word| !word.is_empty())
            .map(|word| Self::parse(word).ok_or(word))
            .collect()
    }

    /// Whether a turn is under way (or was cut off).
    pub fn is_running(self) -> bool {
        self == Self::Running
    }
}

impl std::fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What session metadata needs from a stored event's JSON: its timestamp and the status it
/// leaves the session in. Decodes only those (a large payload is skipped, not parsed into a
/// value), for backends that list sessions from their last events.
///
/// ```
/// use openharness_core::{Envelope, SessionStatus, adapter::last_event_summary};
/// let event = Envelope::new("workflow:completed", serde_json::json!({ "reason": "idle" }), None);
/// let json = serde_json::to_vec(&event).unwrap();
/// let (timestamp, status) = last_event_summary(&json).unwrap();
/// assert_eq!((timestamp, status), (event.timestamp, SessionStatus::Idle));
/// ```
pub fn last_event_summary(
    json: &[u8],
) -> Result<(chrono::DateTime<chrono::Utc>, SessionStatus), serde_json::Error> {
    #[derive(Deserialize)]
    struct Head<'a> {
        timestamp: chrono::DateTime<chrono::Utc>,
        #[serde(borrow)]
        name: std::borrow::Cow<'a, str>,
    }
    #[derive(Deserialize)]
    struct Payload {
        payload: Value,
    }
    let head: Head<'_> = serde_json::from_slice(json)?;
    if head.name != WorkflowCompleted::NAME {
        return Ok((head.timestamp, SessionStatus::Running));
    }
    let Payload { payload } = serde_json::from_slice(json)?;
    Ok((head.timestamp, SessionStatus::after(&head.name, &payload)))
}
