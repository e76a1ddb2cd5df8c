//! [`Producer`]: what produced an event, read from the log alone. An agent call's own events
//! name their agent; an event caused by another was emitted by the agent call that other event
//! activated, when one was under way there and may emit it, or else by the handler of that
//! other event (the loop records what a handler emits right after its event, before any agent
//! starts); an input or a person's answer comes from outside, and another event nothing
//! caused is the runtime's own.

use openharness_core::Envelope;
use openharness_core::adapter::AgentSpec;
use serde::Serialize;

/// What produced an event ([`Parting::produced_by`](super::Parting::produced_by)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[non_exhaustive]
pub enum Producer {
    /// Given from outside: an input or an answer (nothing in the log caused it).
    Input,
    /// The runtime's own: a turn's start or end, a fork's first event.
    Runtime,
    /// An agent's call: its own events, and those its output emitted.
    #[serde(rename_all = "camelCase")]
    Agent {
        /// The agent.
        agent: String,
        /// The seq of the event that activated the call, when it is in the log.
        trigger: Option<u64>,
    },
    /// The handler of an event: the events it emitted, or the state it folded (`"kind":
    /// "handler"`; not named `Handler` in Rust, so compiler messages about the `Handler`
    /// trait keep its short name).
    #[serde(rename = "handler")]
    EventHandler {
        /// The event the handler takes.
        event: String,
        /// Its seq.
        seq: u64,
    },
    /// Something this log does not hold: the event's cause was recorded elsewhere (a fork's
    /// parent, read without its lineage).
    Unrecorded,
}

impl std::fmt::Display for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Input => f.write_str("an input from outside"),
            Self::Runtime => f.write_str("the runtime"),
            Self::Agent {
                agent,
                trigger: Some(seq),
            } => write!(f, "agent `{agent}` (its call activated at seq {seq})"),
            Self::Agent { agent, .. } => write!(f, "agent `{agent}`"),
            Self::EventHandler { event, seq } => write!(f, "the handler of `{event}` (seq {seq})"),
            Self::Unrecorded => f.write_str("an event outside this log"),
        }
    }
}

/// The agent an event's payload names (an agent call's own events).
pub(crate) fn agent_of(event: &Envelope) -> Option<&str> {
    ["agent", "agentName"]
        .iter()
        .find_map(|key| event.payload[key].as_str())
}

/// What produced `events[at]`, with `agents` the workflow's agents (empty when unknown).
pub(crate) fn producer(events: &[Envelope], at: usize, agents: &[AgentSpec]) -> Producer {
    let Some(event) = events.get(at) else {
        return Producer::Unrecorded;
    };
    if let Some(agent) = agent_of(event) {
        let trigger = event
            .caused_by
            .and_then(|cause| events[..at].iter().rposition(|e| e.id == cause));
        return Producer::Agent {
            agent: agent.to_owned(),
            trigger: trigger.map(|seq| seq as u64),
        };
    }
    // An input, or a person's answer (caused by the request it answers), comes from outside.
    if matches!(event.name.as_ref(), "user:input" | "input:received") {
        return Producer::Input;
    }
    let Some(cause) = event.caused_by else {
        return Producer::Runtime;
    };
    let Some(trigger) = events[..at].iter().rposition(|e| e.id == cause) else {
        return Producer::Unrecorded;
    };
    // The calls the trigger activated that were under way when the event was recorded.
    let mut open: Vec<&str> = Vec::new();
    for e in &events[trigger + 1..at] {
        if e.caused_by != Some(cause) {
            continue;
        }
        match (e.name.as_ref(), agent_of(e)) {
            ("agent:started", Some(agent)) => open.push(agent),
            ("agent:completed", Some(agent)) => open.retain(|a| *a != agent),
            _ => {}
        }
    }
    let emits = |agent: &str| {
        agents
            .iter()
            .any(|spec| spec.name == agent && spec.emits.contains(&event.name.as_ref()))
    };
    let agent = open
        .iter()
        .find(|agent| emits(agent))
        .or_else(|| open.first().filter(|_| agents.is_empty()));
    match agent {
        Some(agent) => Producer::Agent {
            agent: (*agent).to_owned(),
            trigger: Some(trigger as u64),
        },
        None => Producer::EventHandler {
            event: events[trigger].name.to_string(),
            seq: trigger as u64,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn each_event_is_put_down_to_an_input_the_runtime_an_agent_or_a_handler() {
        let input = Envelope::new("user:input", json!({ "text": "go" }), None);
        let by_handler = Envelope::new("order:placed", json!({}), Some(input.id));
        let started = Envelope::new("agent:started", json!({ "agent": "clerk" }), Some(input.id));
        let by_agent = Envelope::new("plan:created", json!({}), Some(input.id));
        let completed = Envelope::new(
            "agent:completed",
            json!({ "agent": "clerk" }),
            Some(input.id),
        );
        let after = Envelope::new("task:started", json!({}), Some(by_agent.id));
        let late = Envelope::new("note:taken", json!({}), Some(input.id));
        let done = Envelope::new("workflow:completed", json!({}), None);
        let asked = Envelope::new("input:requested", json!({}), Some(after.id));
        let answered = Envelope::new("input:received", json!({}), Some(asked.id));
        let events = [
            input, by_handler, started, by_agent, completed, after, late, done, asked, answered,
        ];
        let agent = |trigger| Producer::Agent {
            agent: "clerk".into(),
            trigger: Some(trigger),
        };
        let handler = |event: &str, seq| Producer::EventHandler {
            event: event.into(),
            seq,
        };
        let found: Vec<Producer> = (0..events.len())
            .map(|at| producer(&events, at, &[]))
            .collect();
        assert_eq!(
            found,
            [
                Producer::Input,
                handler("user:input", 0),
                agent(0),
                agent(0),
                agent(0),
                handler("plan:created", 3),
                // After the call completed: the input's handler (a real log never has this).
                handler("user:input", 0),
                Producer::Runtime,
                handler("task:started", 5),
                // An answer is given from outside, though the request it answers caused it.
                Producer::Input,
            ]
        );
        // Knowing what the agent may emit: an event it does not emit is a handler's.
        let spec = AgentSpec {
            name: "clerk",
            trigger: "user:input",
            emits: &["other:event"],
        };
        assert_eq!(producer(&events, 3, &[spec]), handler("user:input", 0));
        assert_eq!(producer(&events, 99, &[]), Producer::Unrecorded);
    }
}
