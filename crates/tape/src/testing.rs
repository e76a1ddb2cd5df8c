//! [`ReplaySnapshot`]: a replay as one stable JSON value, for snapshot tests with `insta`.
//!
//! Ids and timestamps change on every run, so the snapshot leaves timestamps out and writes
//! every event id (in payloads, causes, and ids derived from them such as `msg-<id>`) as
//! `#seq`, the seq of the event it names. What remains changes only when behaviour changes.
//!
//! ```
//! # async fn demo<S: openharness_core::WorkflowState>(workflow: openharness_core::Workflow<S>) -> Result<(), openharness_tape::TapeError> {
//! use openharness_core::RunOptions;
//! use openharness_tape::{LoadTape, ReplaySnapshot};
//!
//! let outcome = workflow.run(RunOptions::new().input("plan a trip")).await?;
//! let tape = workflow.load(&outcome.session).await?;
//! let snapshot = ReplaySnapshot::of(&tape)
//!     .states_at([0, 5, tape.len()])
//!     .event_names()
//!     .section("final_len", tape.len());
//! // In a test: insta::assert_json_snapshot!(snapshot);
//! let json = snapshot.to_value();
//! assert_eq!(json["states"][0]["position"], 0);
//! # Ok(()) }
//! ```

use std::collections::HashMap;

use openharness_core::{Envelope, EventId, WorkflowState};
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

use crate::tape::Tape;

/// A replay's states, events and derived views as one JSON value; see the module docs.
#[must_use]
pub struct ReplaySnapshot<'t, S: WorkflowState> {
    tape: &'t Tape<S>,
    positions: Vec<u64>,
    names: bool,
    flow: bool,
    sections: Vec<(String, Value)>,
}

impl<S: WorkflowState> std::fmt::Debug for ReplaySnapshot<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplaySnapshot")
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}

impl<'t, S: WorkflowState> ReplaySnapshot<'t, S> {
    /// An empty snapshot of `tape` (only its length); add what to pin.
    pub fn of(tape: &'t Tape<S>) -> Self {
        Self {
            tape,
            positions: Vec::new(),
            names: false,
            flow: false,
            sections: Vec::new(),
        }
    }

    /// Pins the state (and the event leading there) at each of `positions` (clamped).
    pub fn states_at(mut self, positions: impl IntoIterator<Item = u64>) -> Self {
        self.positions.extend(positions);
        self
    }

    /// Pins the event names, in order.
    pub fn event_names(mut self) -> Self {
        self.names = true;
        self
    }

    /// Pins the event flow: each event's name, payload and cause.
    pub fn event_flow(mut self) -> Self {
        self.flow = true;
        self
    }

    /// Pins any serializable view under `name`, such as projected messages:
    /// `.section("messages", project_messages(tape.events()))`.
    pub fn section(mut self, name: impl Into<String>, value: impl Serialize) -> Self {
        let value = serde_json::to_value(value)
            .unwrap_or_else(|err| Value::String(format!("(does not encode as JSON: {err})")));
        self.sections.push((name.into(), value));
        self
    }

    /// The snapshot as JSON.
    pub fn to_value(&self) -> Value {
        let events = self.tape.events();
        let ids: HashMap<EventId, u64> =
            events.iter().zip(0..).map(|(e, seq)| (e.id, seq)).collect();
        let mut out = serde_json::Map::new();
        out.insert("len".into(), json!(self.tape.len()));
        if !self.positions.is_empty() {
            let states: Vec<Value> = self
                .positions
                .iter()
                .map(|&position| {
                    let position = position.min(self.tape.len());
                    let state =
                        serde_json::to_value(self.tape.state_at(position)).unwrap_or_else(|err| {
                            Value::String(format!("(does not encode as JSON: {err})"))
                        });
                    json!({
                        "position": position,
                        "event": self.tape.event_at(position).map(|e| e.name.as_ref()),
                        "state": stable(&state, &ids),
                    })
                })
                .collect();
            out.insert("states".into(), Value::Array(states));
        }
        if self.names {
            let names: Vec<&str> = events.iter().map(|e| e.name.as_ref()).collect();
            out.insert("event_names".into(), json!(names));
        }
        if self.flow {
            let flow: Vec<Value> = events
                .iter()
                .zip(0u64..)
                .map(|(event, seq)| flow_entry(event, seq, &ids))
                .collect();
            out.insert("event_flow".into(), Value::Array(flow));
        }
        for (name, value) in &self.sections {
            out.insert(name.clone(), stable(value, &ids));
        }
        Value::Object(out)
    }
}

impl<S: WorkflowState> Serialize for ReplaySnapshot<'_, S> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        self.to_value().serialize(serializer)
    }
}

fn flow_entry(event: &Envelope, seq: u64, ids: &HashMap<EventId, u64>) -> Value {
    json!({
        "seq": seq,
        "name": event.name,
        "payload": stable(&event.payload, ids),
        "causedBy": event.caused_by.and_then(|id| ids.get(&id)).map(|s| format!("#{s}")),
    })
}

/// `value` with every event id inside its strings written as `#seq`.
fn stable(value: &Value, ids: &HashMap<EventId, u64>) -> Value {
    match value {
        Value::String(s) => Value::String(replace_ids(s, ids)),
        Value::Array(items) => Value::Array(items.iter().map(|v| stable(v, ids)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (replace_ids(k, ids), stable(v, ids)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text` with every UUID that is an event id in `ids` replaced by `#seq`.
fn replace_ids(text: &str, ids: &HashMap<EventId, u64>) -> String {
    const UUID_LEN: usize = 36;
    if text.len() < UUID_LEN {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while rest.len() >= UUID_LEN {
        let found = rest
            .is_char_boundary(UUID_LEN)
            .then(|| rest[..UUID_LEN].parse::<EventId>().ok())
            .flatten()
            .and_then(|id| ids.get(&id));
        if let Some(seq) = found {
            out.push_str(&format!("#{seq}"));
            rest = &rest[UUID_LEN..];
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_inside_strings_become_seqs() {
        let a = EventId::new();
        let b = EventId::new();
        let ids = HashMap::from([(a, 0), (b, 7)]);
        assert_eq!(replace_ids(&format!("msg-{b}"), &ids), "msg-#7");
        assert_eq!(replace_ids(&a.to_string(), &ids), "#0");
        let unknown = EventId::new().to_string();
        assert_eq!(replace_ids(&unknown, &ids), unknown);
        assert_eq!(
            replace_ids("héllo wörld, nothing here at all......", &ids),
            "héllo wörld, nothing here at all......"
        );
    }
}
