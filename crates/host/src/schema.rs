//! The JSON Schemas of everything Open Harness puts on the wire: the event envelope and the
//! event with its seq, every built-in event's payload, session metadata and status, how turns
//! end, the host's answers, the chat projections and a re-execution's divergence.
//!
//! `cargo xtask schemas` writes them to the repository's `schemas/` folder (CI checks that
//! folder is fresh); a server's OpenAPI document and TypeScript types are generated from them.
//! They describe the JSON Open Harness writes (schemars' serialize contract): a field that is
//! left out when empty is optional, every other field is required. Readers accept more than
//! that — format 1's field names for the built-in payloads, missing defaults.

use openharness_core::builtin::{
    AgentCompleted, AgentStarted, ErrorOccurred, InputQueued, InputReceived, InputRequested,
    InputSteered, OutputRejected, SessionForked, StopRequested, TextComplete, TextDelta,
    ToolCalled, ToolResult, TurnRolledBack, UserInput, WorkflowCompleted, WorkflowStarted,
};
use openharness_core::{
    BusyPolicy, Envelope, Event, SessionInfo, SessionStatus, StopReason,
    adapter::{Recorded, Unfinished, Usage},
};
use openharness_projection::{Message, Part, Role, TextState, ToolState, UiMessage, UiPart};
use openharness_tape::{Divergence, EventShape};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value};

use crate::catalog::{SessionSort, SessionsPage};
use crate::code::CodeChange;
use crate::compare::SessionComparison;
use crate::wire::{EventsPage, ForkPoint, PositionView, SessionSummary, StateAt, TurnOutcome};

/// One wire type's schema.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WireSchema {
    /// The type's name, which is also the schema's `title` and its file name
    /// (`<name>.schema.json`).
    pub name: &'static str,
    /// For a built-in event's payload, the event's name (`user:input`, ...).
    pub event: Option<&'static str>,
    /// The schema (JSON Schema draft 2020-12), self-contained: the types it uses are in its
    /// `$defs`.
    pub schema: Schema,
}

/// The schemas of every wire type, in a fixed order (names are unique).
///
/// ```
/// let schemas = openharness_host::wire_schemas();
/// let input = schemas.iter().find(|s| s.event == Some("user:input")).unwrap();
/// assert_eq!(input.name, "UserInput");
/// assert_eq!(input.schema.get("required"), Some(&serde_json::json!(["text"])));
/// ```
pub fn wire_schemas() -> Vec<WireSchema> {
    vec![
        // The event log.
        of::<Envelope>("Envelope"),
        of::<Recorded>("Recorded"),
        // Built-in payloads, as `builtin::Builtin` lists them.
        payload::<UserInput>("UserInput"),
        payload::<WorkflowStarted>("WorkflowStarted"),
        payload::<WorkflowCompleted>("WorkflowCompleted"),
        payload::<AgentStarted>("AgentStarted"),
        payload::<AgentCompleted>("AgentCompleted"),
        payload::<TextDelta>("TextDelta"),
        payload::<TextComplete>("TextComplete"),
        payload::<OutputRejected>("OutputRejected"),
        payload::<ToolCalled>("ToolCalled"),
        payload::<ToolResult>("ToolResult"),
        payload::<ErrorOccurred>("ErrorOccurred"),
        payload::<SessionForked>("SessionForked"),
        payload::<InputRequested>("InputRequested"),
        payload::<InputReceived>("InputReceived"),
        payload::<InputQueued>("InputQueued"),
        payload::<InputSteered>("InputSteered"),
        payload::<TurnRolledBack>("TurnRolledBack"),
        payload::<StopRequested>("StopRequested"),
        // Sessions and turns.
        of::<BusyPolicy>("BusyPolicy"),
        of::<SessionInfo>("SessionInfo"),
        of::<SessionStatus>("SessionStatus"),
        of::<StopReason>("StopReason"),
        of::<Unfinished>("Unfinished"),
        of::<Usage>("Usage"),
        // The host's answers.
        of::<TurnOutcome>("TurnOutcome"),
        of::<SessionSummary>("SessionSummary"),
        of::<SessionsPage>("SessionsPage"),
        of::<SessionComparison>("SessionComparison"),
        of::<CodeChange>("CodeChange"),
        of::<openharness_core::StateCheck>("StateCheck"),
        of::<SessionSort>("SessionSort"),
        of::<EventsPage>("EventsPage"),
        of::<PositionView>("TapeView"),
        of::<StateAt>("StateAt"),
        of::<ForkPoint>("ForkPoint"),
        // A session's feedback (its own log beside it).
        of::<crate::feedback::AnnotationAdded>("AnnotationAdded"),
        of::<crate::feedback::TurnScored>("TurnScored"),
        of::<crate::feedback::Stamped<crate::feedback::AnnotationAdded>>("Annotation"),
        of::<crate::feedback::Feedback>("Feedback"),
        of::<crate::wire::AnnotationSummary>("AnnotationSummary"),
        // Projections.
        of::<Message>("Message"),
        of::<Part>("Part"),
        of::<Role>("Role"),
        of::<TextState>("TextState"),
        of::<ToolState>("ToolState"),
        of::<UiMessage>("UiMessage"),
        of::<UiPart>("UiPart"),
        // Cassette re-execution.
        of::<Divergence>("Divergence"),
        of::<EventShape>("EventShape"),
    ]
}

fn of<T: JsonSchema>(name: &'static str) -> WireSchema {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    // The title is the name callers look schemas up by, whatever schemars calls the type.
    schema.insert("title".to_owned(), name.into());
    clean_descriptions(schema.ensure_object());
    WireSchema {
        name,
        event: None,
        schema,
    }
}

fn payload<T: Event>(name: &'static str) -> WireSchema {
    WireSchema {
        event: Some(T::NAME),
        ..of::<T>(name)
    }
}

/// Rustdoc in descriptions, made readable outside Rust: code examples (fenced blocks) are
/// dropped and intra-doc links keep only their text (`[`Workflow::respond`]` becomes
/// `` `Workflow::respond` ``).
fn clean_descriptions(schema: &mut Map<String, Value>) {
    for (key, value) in schema.iter_mut() {
        match value {
            Value::String(text) if key == "description" => *text = plain(text),
            Value::Object(map) => clean_descriptions(map),
            Value::Array(items) => items
                .iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(clean_descriptions),
            _ => {}
        }
    }
}

/// `text` without fenced code blocks and with intra-doc links as their text.
fn plain(text: &str) -> String {
    let mut kept = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            kept.push(line);
        }
    }
    let text = kept.join("\n");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(open) = rest.find("[`") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find("`]") else {
            out.push_str(&rest[open..]);
            rest = "";
            break;
        };
        out.push_str(&after[..=close]);
        rest = &after[close + 2..];
        // `[`label`](target)`: the target goes too.
        if rest.starts_with('(')
            && let Some(end) = rest.find(')')
        {
            rest = &rest[end + 1..];
        }
    }
    out.push_str(rest);
    out.trim().to_owned()
}
