//! [`CallKey`]: which agent call a recorded event belongs to. An agent call is named by its
//! agent and the event that activated it: its `agent:started` is caused by that event, and so
//! is every event the call records (`text:delta`, `tool:called`, `tool:result`,
//! `output:rejected`, `text:complete`, `agent:completed`). Recovery, the cassette, the
//! projections and the OpenTelemetry mapping group a call's events by this one key.

use crate::event::EventId;

/// An agent call: the agent, and the id of the event that activated it (`None` for a call
/// whose trigger was not recorded).
///
/// ```
/// use std::collections::HashMap;
///
/// use openharness_core::Envelope;
/// use openharness_core::adapter::{CallKey, ProviderEvent};
/// use openharness_core::builtin::TextDelta;
///
/// let trigger = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// let delta = ProviderEvent::TextDelta("Hel".into()).into_recorded("writer", 1);
/// let delta = Envelope::new(delta.name, delta.payload, Some(trigger.id));
///
/// // A call's streamed text, gathered by its key.
/// let mut text: HashMap<CallKey, String> = HashMap::new();
/// let decoded = delta.decode::<TextDelta>().unwrap();
/// text.entry(CallKey::new(decoded.agent, delta.caused_by))
///     .or_default()
///     .push_str(&decoded.delta);
/// assert_eq!(text[&CallKey::new("writer", Some(trigger.id))], "Hel");
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
}
