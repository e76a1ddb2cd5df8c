//! Chains of causes: an event and the events that caused it (`causedBy`), back to one that
//! nothing caused — what [`crate::Replayer`] and [`Host::bisect`](crate::Host::bisect) report
//! to lead from a divergence to the input behind it.

use openharness_core::Envelope;
use serde::Serialize;

/// One link of a chain of causes (`causedBy`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Cause {
    /// The event's seq.
    pub seq: u64,
    /// Its name.
    pub name: String,
    /// The agent it concerns (its payload's `agent`), if any.
    pub agent: Option<String>,
}

/// The event at `seq` (or the last, past the end) and the events that caused it, back to one
/// that nothing caused.
pub(crate) fn causes(events: &[Envelope], seq: u64) -> Vec<Cause> {
    let Some(last) = events.len().checked_sub(1) else {
        return Vec::new();
    };
    let mut at = usize::try_from(seq).unwrap_or(usize::MAX).min(last);
    let mut chain = Vec::new();
    // A chain never runs longer than the log (a cycle would be a damaged log).
    for _ in 0..events.len() {
        let event = &events[at];
        chain.push(Cause {
            seq: at as u64,
            name: event.name.to_string(),
            agent: ["agent", "agentName"]
                .iter()
                .find_map(|key| event.payload[key].as_str())
                .map(str::to_owned),
        });
        let Some(cause) = event.caused_by else { break };
        match events[..at].iter().rposition(|e| e.id == cause) {
            Some(earlier) => at = earlier,
            None => break,
        }
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_chain_of_causes_runs_back_to_the_input() {
        let input = Envelope::new("user:input", json!({"text": "go"}), None);
        let started = Envelope::new("agent:started", json!({"agent": "planner"}), Some(input.id));
        let noise = Envelope::new("text:delta", json!({}), None);
        let planned = Envelope::new("plan:created", json!({}), Some(started.id));
        let events = [input, started, noise, planned];
        let chain = causes(&events, 3);
        let names: Vec<_> = chain.iter().map(|c| (c.seq, c.name.as_str())).collect();
        assert_eq!(
            names,
            [(3, "plan:created"), (1, "agent:started"), (0, "user:input")]
        );
        assert_eq!(chain[1].agent.as_deref(), Some("planner"));
        assert_eq!(
            causes(&events, 99)[0].seq,
            3,
            "past the end: the last event"
        );
        assert!(causes(&[], 0).is_empty());
    }
}
