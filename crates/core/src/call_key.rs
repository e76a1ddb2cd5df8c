//! [`CallKey`]: which agent call a recorded event belongs to. An agent call is named by its
//! agent and the event that activated it: its `agent:started` is caused by that event, and so
//! is every event the call records (`text:delta`, `tool:called`, `tool:result`,
//! `output:rejected`, `text:complete`, `agent:completed`). Recovery, the cassette, the
//! projections and the OpenTelemetry mapping group a call's events by this one key.

use crate::builtin::Builtin;
use crate::event::{Envelope, EventId};

/// An agent call: the agent, and the id of the event that activated it (`None` for a call
/// whose trigger was not recorded).
///
/// ```
/// use openharness_core::Envelope;
/// use openharness_core::adapter::{CallKey, ProviderEvent};
/// use openharness_core::builtin::Builtin;
///
/// let trigger = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// let delta = ProviderEvent::TextDelta("Hel".into()).into_recorded("writer", 1);
/// let delta = Envelope::new(delta.name, delta.payload, Some(trigger.id));
/// let builtin = Builtin::decode(&delta).unwrap().unwrap();
/// assert_eq!(
///     CallKey::of(&delta, &builtin),
///     Some(CallKey::new("writer", Some(trigger.id)))
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallKey {
    /// The agent's name.
    pub agent: String,
    /// The event that activated the agent.
    pub trigger: Option<EventId>,
}

impl CallKey {
    /// The call of `agent` activated by `trigger`.
    pub fn new(agent: impl Into<String>, trigger: Option<EventId>) -> Self {
        Self {
            agent: agent.into(),
            trigger,
        }
    }

    /// The call `event` (decoded as `builtin`) belongs to, or `None` for an event no agent
    /// call records.
    pub fn of(event: &Envelope, builtin: &Builtin) -> Option<Self> {
        let agent = match builtin {
            Builtin::AgentStarted(e) => &e.agent,
            Builtin::AgentCompleted(e) => &e.agent,
            Builtin::TextDelta(e) => &e.agent,
            Builtin::TextComplete(e) => &e.agent,
            Builtin::OutputRejected(e) => &e.agent,
            Builtin::ToolCalled(e) => &e.agent,
            Builtin::ToolResult(e) => &e.agent,
            _ => return None,
        };
        Some(Self::new(agent.as_str(), event.caused_by))
    }
}
