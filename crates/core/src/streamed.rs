//! How a provider's streamed events are recorded, and read back: the one mapping between a
//! [`ProviderEvent`] and the built-in event that records it ([`TextDelta`], [`ToolCalled`],
//! [`ToolResult`], [`InputSteered`]), in both directions. The runtime records with
//! [`ProviderEvent::into_recorded`]; a cassette replaying a recorded call reads the stream
//! back with [`ProviderEvent::from_recorded`].

use crate::builtin::{Builtin, InputSteered, TextDelta, ToolCalled, ToolResult};
use crate::emit::Pending;
use crate::provider::ProviderEvent;

impl ProviderEvent {
    /// The built-in event that records this one for `agent`'s call, on attempt `attempt`
    /// (counted from 1; a retried call streams again).
    ///
    /// ```
    /// use openharness_core::Envelope;
    /// use openharness_core::adapter::ProviderEvent;
    /// use openharness_core::builtin::Builtin;
    ///
    /// let recorded = ProviderEvent::TextDelta("Hel".into()).into_recorded("writer", 1);
    /// let envelope = Envelope::new(recorded.name, recorded.payload, None);
    /// assert_eq!(envelope.name, "text:delta");
    ///
    /// let builtin = Builtin::decode(&envelope).unwrap().unwrap();
    /// let (agent, event) = ProviderEvent::from_recorded(builtin).unwrap();
    /// assert_eq!(agent, "writer");
    /// assert_eq!(event, ProviderEvent::TextDelta("Hel".into()));
    /// ```
    pub fn into_recorded(self, agent: &str, attempt: u32) -> Pending {
        let agent = agent.to_owned();
        match self {
            Self::TextDelta(delta) => Pending::of(&TextDelta {
                agent,
                delta,
                attempt,
            }),
            Self::ToolCalled {
                id,
                tool,
                input,
                server,
            } => Pending::of(&ToolCalled {
                agent,
                tool_call_id: id,
                tool,
                input,
                server,
                client: false,
            }),
            Self::ClientToolCalled { id, tool, input } => Pending::of(&ToolCalled {
                agent,
                tool_call_id: id,
                tool,
                input,
                server: None,
                client: true,
            }),
            Self::ToolResult {
                id,
                tool,
                output,
                is_error,
            } => Pending::of(&ToolResult {
                agent,
                tool_call_id: id,
                tool,
                output,
                is_error,
            }),
            Self::Steered { queued, text } => Pending::of(&InputSteered {
                agent,
                queued,
                text,
            }),
        }
    }

    /// The streamed event a recorded built-in stands for, with the agent whose call streamed
    /// it, or `None` for a built-in a provider does not stream. The inverse of
    /// [`ProviderEvent::into_recorded`] (the attempt is not part of a provider event).
    pub fn from_recorded(event: Builtin) -> Option<(String, Self)> {
        match event {
            Builtin::TextDelta(d) => Some((d.agent, Self::TextDelta(d.delta))),
            Builtin::ToolCalled(c) if c.client => Some((
                c.agent,
                Self::ClientToolCalled {
                    id: c.tool_call_id,
                    tool: c.tool,
                    input: c.input,
                },
            )),
            Builtin::ToolCalled(c) => Some((
                c.agent,
                Self::ToolCalled {
                    id: c.tool_call_id,
                    tool: c.tool,
                    input: c.input,
                    server: c.server,
                },
            )),
            Builtin::ToolResult(r) => Some((
                r.agent,
                Self::ToolResult {
                    id: r.tool_call_id,
                    tool: r.tool,
                    output: r.output,
                    is_error: r.is_error,
                },
            )),
            Builtin::InputSteered(s) => Some((
                s.agent,
                Self::Steered {
                    queued: s.queued,
                    text: s.text,
                },
            )),
            _ => None,
        }
    }
}
