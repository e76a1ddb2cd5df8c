//! The built-in events the runtime records around a workflow's own events.
//!
//! A workflow's event enum may include any of these (for example [`UserInput`], to react to
//! the run's input); the ones it does not include are recorded but not dispatched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::event::{Event, EventId, SessionId};
use crate::provider::Usage;

macro_rules! builtin_event {
    ($(#[$meta:meta])* $name:literal => $ty:ident { $($(#[$fmeta:meta])* $field:ident : $fty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $ty { $($(#[$fmeta])* pub $field: $fty),* }
        impl Event for $ty { const NAME: &'static str = $name; }
    };
}

builtin_event!(
    /// The input a run was started with.
    "user:input" => UserInput { /// The user's text.
    text: String });
builtin_event!(
    /// The first event of every run.
    "workflow:started" => WorkflowStarted { /// The workflow's name.
    workflow: String });
builtin_event!(
/// The last event of a turn that ended normally (not by a store failure or a crash).
"workflow:completed" => WorkflowCompleted {
    /// Why the turn ended: `until`, `idle`, `waiting_for_input`, `cancelled`, `max_events`, ...
    reason: String,
    /// The `input:requested` events still unanswered when the turn ended (their event ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    open_requests: Vec<EventId>,
    /// How many `error:occurred` events the turn recorded (a handler panicked, an agent
    /// failed for good, ...). A session whose last turn had errors has status `failed`.
    #[serde(default, skip_serializing_if = "is_zero")]
    errors: u64,
});
builtin_event!(
/// A handler or an agent asks a person for input. The turn ends waiting once nothing else
/// is left to do; the answer is recorded as `input:received`, caused by this event, and
/// continues the session. The request's id is this event's id.
"input:requested" => InputRequested {
    /// What to ask.
    prompt: String,
});
builtin_event!(
/// A person's answer to an `input:requested` (whose id is `request_id`).
"input:received" => InputReceived {
    /// The id of the `input:requested` event this answers.
    request_id: EventId,
    /// The answer.
    text: String,
});
builtin_event!(
/// An agent was activated by an event.
"agent:started" => AgentStarted {
    /// The agent's name.
    agent: String,
    /// The model it was asked to use, if it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The prompt it was given.
    prompt: String,
});
builtin_event!(
/// An agent finished, well or badly.
"agent:completed" => AgentCompleted {
    /// The agent's name.
    agent: String,
    /// How it ended.
    outcome: Outcome,
    /// Tokens used, summed over every request the agent made.
    usage: Usage,
    /// Cost in US dollars, when the provider reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    /// What went wrong, for `failure` and `interrupted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// The structured output the agent accepted (on `success`), as the model returned it, so
    /// a cassette can serve it again without calling the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<serde_json::Value>,
});
builtin_event!(
/// A fragment of streamed model text.
"text:delta" => TextDelta {
    /// The agent streaming it.
    agent: String,
    /// The new text.
    delta: String,
});
builtin_event!(
/// The whole text an agent streamed, once it is done.
"text:complete" => TextComplete {
    /// The agent.
    agent: String,
    /// The full text.
    text: String,
});
builtin_event!(
/// A model called a tool.
"tool:called" => ToolCalled {
    /// The agent.
    agent: String,
    /// The provider's id for the call.
    tool_call_id: String,
    /// The tool's name.
    tool: String,
    /// The arguments.
    input: serde_json::Value,
});
builtin_event!(
/// A tool returned (or failed).
"tool:result" => ToolResult {
    /// The agent.
    agent: String,
    /// The id of the matching `tool:called`.
    tool_call_id: String,
    /// The tool's name.
    tool: String,
    /// What the tool returned.
    output: serde_json::Value,
    /// Whether the output is an error message.
    #[serde(default)]
    is_error: bool,
});
builtin_event!(
/// Something failed but the run went on: a handler panicked, an agent's output did not
/// match its schema, an event could not be encoded.
"error:occurred" => ErrorOccurred {
    /// What failed: `handler`, `agent`, `encode`, ...
    source: String,
    /// A readable description.
    message: String,
    /// The event being processed when it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<EventId>,
});
builtin_event!(
/// The first event of a forked session.
"session:forked" => SessionForked {
    /// The session this one was forked from.
    parent: SessionId,
    /// The position in the parent the fork starts from.
    position: u64,
});

/// How an agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It produced valid output.
    Success,
    /// The provider failed or the output never matched the schema.
    Failure,
    /// The run was cancelled or ended while the agent was working.
    Interrupted,
}

/// The names of all built-in events.
pub const NAMES: &[&str] = &[
    UserInput::NAME,
    WorkflowStarted::NAME,
    WorkflowCompleted::NAME,
    AgentStarted::NAME,
    AgentCompleted::NAME,
    TextDelta::NAME,
    TextComplete::NAME,
    ToolCalled::NAME,
    ToolResult::NAME,
    ErrorOccurred::NAME,
    SessionForked::NAME,
    InputRequested::NAME,
    InputReceived::NAME,
];

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Whether `name` is a built-in event.
pub fn is_builtin(name: &str) -> bool {
    NAMES.contains(&name)
}
