//! The built-in events the runtime records around a workflow's own events, and [`Builtin`]:
//! all of them as one enum, the one place their names are matched.
//!
//! A workflow's event enum may include any of these (for example [`UserInput`], to react to
//! the run's input); the ones it does not include are recorded but not dispatched.
//!
//! On the wire the payloads use the seeds' field names (camelCase): `agentName`, `fullText`,
//! `toolName` / `toolId`, `isError`, `code` / `recoverable` / `context`, `parentSessionId` /
//! `forkIndex`. Recordings made before those names (format 1: `agent`, `text`, `tool`,
//! `toolCallId`, `source`, `parent`, `position`) still decode: each renamed field accepts its
//! old name too.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::{Envelope, Event, EventId, SessionId};
use crate::provider::{Image, Usage};

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
/// A person's input: what a run was started or continued with, and each message of a chat.
/// Besides the text it may carry images and the controls a client posted with it (the
/// platform's `/v1` messages record both); recordings without them decode too.
///
/// ```
/// use openharness_core::builtin::UserInput;
/// use openharness_core::{Image, ReasoningEffort};
/// let input = UserInput::new("Plan a trip to Lisbon");
/// assert_eq!(serde_json::to_value(&input)?, serde_json::json!({ "text": "Plan a trip to Lisbon" }));
///
/// let message: UserInput = serde_json::from_value(serde_json::json!({
///     "text": "What is in this picture?",
///     "images": [{ "type": "url", "url": "https://example.com/cat.png" }],
///     "controls": { "reasoning": { "effort": "high" } },
/// }))?;
/// assert_eq!(message.images, [Image::url("https://example.com/cat.png")]);
/// assert_eq!(message.reasoning_effort(), Some(ReasoningEffort::High));
/// # Ok::<(), serde_json::Error>(())
/// ```
"user:input" => UserInput {
    /// What the person wrote (empty for a message of images only).
    text: String,
    /// The input's images, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    images: Vec<Image>,
    /// The controls posted with the input, as recorded (the platform's `Controls`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    controls: Option<Value>,
    /// Who wrote it, as the client that sent it named them ([`crate::RunOptions::by`]); absent
    /// when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
    /// The results of client tools the client ran since the previous turn (each answers a
    /// `tool:called` with `client: true` that turn ended with), oldest first; the text may then
    /// be empty. Absent on the wire when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_results: Vec<ClientToolResult>,
});

/// The result of a client tool (a [`ClientTool`](crate::ClientTool) the model called, which
/// the client ran), brought by the next [`UserInput`].
///
/// ```
/// use openharness_core::builtin::ClientToolResult;
/// let result = ClientToolResult::new("call_1", serde_json::json!("64 degrees and clear"));
/// assert_eq!(
///     serde_json::to_value(&result)?,
///     serde_json::json!({ "toolId": "call_1", "output": "64 degrees and clear" })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientToolResult {
    /// The call it answers: the `toolId` of its `tool:called`.
    #[serde(rename = "toolId")]
    pub tool_call_id: String,
    /// What the client's tool returned.
    pub output: Value,
    /// Whether the output is an error message.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
}

impl ClientToolResult {
    /// The successful result `output` of the call `tool_call_id`.
    pub fn new(tool_call_id: impl Into<String>, output: Value) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            output,
            is_error: false,
        }
    }
}

impl UserInput {
    /// Text input, without images or controls.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
            controls: None,
            by: None,
            tool_results: Vec::new(),
        }
    }

    /// The reasoning effort the controls asked for (`controls.reasoning.effort`), if they
    /// named a known one.
    pub fn reasoning_effort(&self) -> Option<crate::provider::ReasoningEffort> {
        let effort = self.controls.as_ref()?.get("reasoning")?.get("effort")?;
        serde_json::from_value(effort.clone()).ok()
    }
}
builtin_event!(
/// The first event of every run: which workflow, and which code of it, recorded the session.
"workflow:started" => WorkflowStarted {
    /// The workflow's name.
    workflow: String,
    /// A fingerprint of the workflow's code (absent in recordings made before it was
    /// recorded): the SHA-256 (first 16 hex digits) of its name, its state type, the events
    /// its handlers take and the handlers' code (`Handler::CODE`: their tokens, so a changed
    /// body changes it and whitespace and comments do not), and each agent's name, trigger,
    /// events, output schema and code (`Agent::CODE`). Functions the handlers and agents call
    /// are not seen: `WorkflowBuilder::version` covers them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    /// The version the workflow was built with (`WorkflowBuilder::version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    /// The source commit it was built from (`WorkflowBuilder::commit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit: Option<String>,
    /// The shape of the workflow's state (`adapter::state_shape` of its initial state: its
    /// fields, not their values). When today's differs, the state hashes the session recorded
    /// are not compared with today's fold (absent in recordings made before it was recorded:
    /// then they are).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_shape: Option<String>,
});
builtin_event!(
/// The last event of a turn that ended normally (not by a store failure or a crash).
#[derive(Default)]
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
    /// The `input:queued` events recorded while the turn ran and not answered yet (their event
    /// ids, oldest first): the next turns answer them, one each. A session whose last turn
    /// ended with some is still `running` (it has work left).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queued: Vec<QueuedRef>,
});

/// A queued input as a turn's end lists it (`workflow:completed`'s `queued`): its event id and
/// its seq in the session, so a reader that starts after it knows where to read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct QueuedRef {
    /// The `input:queued` event's id.
    pub id: EventId,
    /// Its seq in the session.
    pub seq: u64,
}
builtin_event!(
/// A handler or an agent asks a person for input. The turn ends waiting once nothing else
/// is left to do; the answer is recorded as `input:received`, caused by this event, and
/// continues the session. The request's id is this event's id.
///
/// Build one with [`InputRequested::new`] (a question answered with text) or
/// [`InputRequested::approval`] (a yes/no decision).
#[derive(Default)]
"input:requested" => InputRequested {
    /// What to ask.
    prompt: String,
    /// Whether this asks for a yes/no decision (an approval) rather than free text. Chat
    /// clients that understand approvals show it as one (the AI SDK's tool approval, with
    /// approve and deny buttons); its answer is still an `input:received` whose text is
    /// `yes` or `no` when given as a decision. Absent on the wire when false (and in
    /// recordings made before approvals).
    #[serde(default, skip_serializing_if = "is_false")]
    approval: bool,
});

impl InputRequested {
    /// A question a person answers with text.
    ///
    /// ```
    /// use openharness_core::builtin::InputRequested;
    /// let asked = InputRequested::new("Which city?");
    /// assert!(!asked.approval);
    /// assert_eq!(serde_json::to_value(&asked).unwrap(), serde_json::json!({ "prompt": "Which city?" }));
    /// ```
    pub fn new(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            approval: false,
        }
    }

    /// A yes/no decision a person approves or denies. The answer arrives as any other, an
    /// `input:received`: its text is `yes` when approved and `no` when denied through a chat
    /// client's approval (the AI SDK's `addToolApprovalResponse`; the reason given, if any, is
    /// kept in the event's payload as `reason`), or whatever the person typed instead.
    ///
    /// ```
    /// use openharness_core::builtin::{InputReceived, InputRequested};
    /// use openharness_core::Emit;
    /// // In a handler: ask, and read the answer when it comes.
    /// fn ask() -> Emit { Emit::one(InputRequested::approval("Ship to production?")) }
    /// fn approved(answer: &InputReceived) -> bool { answer.text.trim().eq_ignore_ascii_case("yes") }
    /// # let _ = ask();
    /// let asked = InputRequested::approval("Ship to production?");
    /// assert_eq!(
    ///     serde_json::to_value(&asked).unwrap(),
    ///     serde_json::json!({ "prompt": "Ship to production?", "approval": true })
    /// );
    /// ```
    pub fn approval(prompt: impl Into<String>) -> Self {
        Self {
            prompt: prompt.into(),
            approval: true,
        }
    }
}
builtin_event!(
/// A person's input that arrived while a turn was running, recorded at once (the answer a
/// server gives, `202` or a chat stream, comes only after this is durable) and answered as
/// `mode` says. A later turn answers it with a `user:input` caused by this event (same text,
/// images, controls and extra fields); a steer that a running agent call took instead is
/// recorded as `input:steered` and needs no turn of its own. The turn that recorded it ends
/// with this event's id in `workflow:completed`'s `queued` until it is answered.
///
/// ```
/// use openharness_core::builtin::{InputQueued, QueueMode};
/// let queued = InputQueued::new("And in Porto?", QueueMode::Enqueue);
/// assert_eq!(
///     serde_json::to_value(&queued)?,
///     serde_json::json!({ "text": "And in Porto?", "mode": "enqueue" })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
"input:queued" => InputQueued {
    /// What the person wrote.
    text: String,
    /// The input's images, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    images: Vec<Image>,
    /// The controls posted with the input, as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    controls: Option<Value>,
    /// How it is answered.
    mode: QueueMode,
});

impl InputQueued {
    /// Text input queued in `mode`.
    pub fn new(text: impl Into<String>, mode: QueueMode) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
            controls: None,
            mode,
        }
    }
}

/// How a second input is answered while a turn runs (what `input:queued` records). Refusing
/// it (`409`) records nothing, so it has no mode here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum QueueMode {
    /// Answered in order, each in a turn of its own, after the running turn.
    Enqueue,
    /// The running turn stops at its next safe point (recorded as `interrupted`) and a new turn
    /// answers this input, with both inputs in the state.
    Interrupt,
    /// The running turn is abandoned: `turn:rolled_back` puts the state back to what it was
    /// before that turn, and a new turn answers this input.
    Rollback,
    /// Given to the running agent calls at their next model call (`input:steered`); answered
    /// in a turn of its own when no call took it.
    Steer,
}

impl QueueMode {
    /// The mode as recorded (`enqueue`, `interrupt`, `rollback`, `steer`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enqueue => "enqueue",
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
            Self::Steer => "steer",
        }
    }
}
builtin_event!(
/// A queued input (`input:queued` in mode `steer`) that a running agent call took into its
/// conversation at its next model call: the model's next request holds it as a user message.
/// Recorded by the call (caused by its trigger), before that request is sent.
"input:steered" => InputSteered {
    /// The agent call that took it (`agentName` on the wire).
    #[serde(rename = "agentName")]
    agent: String,
    /// The `input:queued` it delivers.
    queued: EventId,
    /// What the person wrote.
    text: String,
});
builtin_event!(
/// The turn that began at position `from` was abandoned (a second input in mode `rollback`):
/// the state is `state`, the state at `from`, again. Every fold honours it by taking that
/// state (and a tape stepping back over it gives the state before it back); the events of
/// the abandoned turn stay in the log, which is never rewritten.
"turn:rolled_back" => TurnRolledBack {
    /// The position whose state is restored: the abandoned turn's first seq.
    from: u64,
    /// The state at `from`, as JSON.
    state: Value,
    /// The SHA-256 (hex) of `state` as canonical JSON (object keys sorted).
    state_hash: String,
});
builtin_event!(
/// Someone asked the running turn to stop (an HTTP cancel, a chat client's stop, the CLI):
/// the turn ends `cancelled` at its next safe point, whoever reads its stream.
"stop:requested" => StopRequested {
    /// Why, when the asker said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
});
builtin_event!(
/// A person's answer to an `input:requested` (whose id is `request_id`).
///
/// ```
/// use openharness_core::builtin::InputReceived;
/// use openharness_core::EventId;
/// let request = EventId::new();
/// let answer = InputReceived::new(request, "Lisbon").by("ana");
/// assert_eq!(
///     serde_json::to_value(&answer)?,
///     serde_json::json!({ "requestId": request, "text": "Lisbon", "by": "ana" })
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
"input:received" => InputReceived {
    /// The id of the `input:requested` event this answers.
    request_id: EventId,
    /// The answer.
    text: String,
    /// Who answered, as the client that sent the answer named them ([`crate::RunOptions::by`]);
    /// absent when it did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
});

impl InputReceived {
    /// The answer `text` to the request `request_id`, by no one named.
    pub fn new(request_id: EventId, text: impl Into<String>) -> Self {
        Self {
            request_id,
            text: text.into(),
            by: None,
        }
    }

    /// The same answer, given by `who`.
    #[must_use]
    pub fn by(mut self, who: impl Into<String>) -> Self {
        self.by = Some(who.into());
        self
    }
}
builtin_event!(
/// An agent was activated by an event.
#[derive(Default)]
"agent:started" => AgentStarted {
    /// The agent's name (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
    agent: String,
    /// The model it was asked to use, if it named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    /// The provider asked ([`crate::Provider::name`]: `anthropic`, `openai`, `scripted`,
    /// `cassette` for a call answered from a recording…); absent in recordings made before
    /// it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provider: Option<String>,
    /// The system prompt it was given, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    /// The conversation it was given before the prompt, if any, without image bytes (see
    /// [`crate::ChatMessage::recorded`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    messages: Vec<crate::ChatMessage>,
    /// The prompt it was given (empty when the conversation says it all).
    prompt: String,
    /// Where its chat reply is in its output: a JSON pointer (`""` the whole output, `"/reply"`
    /// a field); absent when it has no text reply (and in recordings made before replies were
    /// named). Chat clients stream and show that string as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reply: Option<String>,
});
builtin_event!(
/// An agent finished, well or badly.
"agent:completed" => AgentCompleted {
    /// The agent's name (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
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
    /// The agent streaming it (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
    agent: String,
    /// The new text.
    delta: String,
    /// Which attempt of the agent call streamed it: 1, or 2 and up after a rejected output
    /// re-asked the model (absent on the wire when 1, as in recordings of format 1).
    #[serde(default = "first_attempt", skip_serializing_if = "is_first_attempt")]
    attempt: u32,
});
builtin_event!(
/// The whole text an agent streamed, once it is done: the text of the attempt whose output
/// was accepted (or of the last attempt, when none was), never a rejected attempt's text.
"text:complete" => TextComplete {
    /// The agent (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
    agent: String,
    /// The full text (`fullText` on the wire).
    #[serde(rename = "fullText", alias = "text")]
    text: String,
});
builtin_event!(
/// An agent's output did not pass its checks (its schema, or `on_output`'s validation), so
/// the model was asked again (or, after the last attempt, the agent failed). Recorded in the
/// agent's final batch, caused by its trigger, one per rejected attempt.
"output:rejected" => OutputRejected {
    /// The agent (`agentName` on the wire).
    #[serde(rename = "agentName")]
    agent: String,
    /// Which attempt produced the output (1 for the first).
    attempt: u32,
    /// The output as the model returned it.
    output: Value,
    /// Why it was rejected.
    errors: Vec<String>,
});
builtin_event!(
/// A model called a tool.
"tool:called" => ToolCalled {
    /// The agent (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
    agent: String,
    /// The provider's id for the call (`toolId` on the wire).
    #[serde(rename = "toolId", alias = "toolCallId")]
    tool_call_id: String,
    /// The tool's name (`toolName` on the wire).
    #[serde(rename = "toolName", alias = "tool")]
    tool: String,
    /// The arguments.
    input: serde_json::Value,
    /// The MCP server that offers the tool, by its configured name (absent for a native tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    /// Whether the client runs the tool (a [`ClientTool`](crate::ClientTool)): the agent's
    /// call ended with this call, and the result comes with a later `user:input`
    /// (`toolResults`). Absent on the wire when false.
    #[serde(default, skip_serializing_if = "is_false")]
    client: bool,
});
builtin_event!(
/// A tool returned (or failed).
"tool:result" => ToolResult {
    /// The agent (`agentName` on the wire).
    #[serde(rename = "agentName", alias = "agent")]
    agent: String,
    /// The id of the matching `tool:called` (`toolId` on the wire).
    #[serde(rename = "toolId", alias = "toolCallId")]
    tool_call_id: String,
    /// The tool's name (`toolName` on the wire).
    #[serde(rename = "toolName", alias = "tool")]
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
    /// What failed: `handler`, `agent`, `encode`, `resume`, ... (`code` on the wire).
    #[serde(rename = "code", alias = "source")]
    source: String,
    /// A readable description.
    message: String,
    /// Whether the run went on after it (errors the runtime records always are: a run that
    /// cannot go on stops with a typed error instead).
    #[serde(default = "yes")]
    recoverable: bool,
    /// More about what happened, when there is more to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    context: Option<Value>,
    /// The event being processed when it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event: Option<EventId>,
});
builtin_event!(
/// The first event of a forked session.
"session:forked" => SessionForked {
    /// The session this one was forked from (`parentSessionId` on the wire).
    #[serde(rename = "parentSessionId", alias = "parent")]
    parent: SessionId,
    /// The position in the parent the fork starts from (`forkIndex` on the wire).
    #[serde(rename = "forkIndex", alias = "position")]
    position: u64,
    /// The workflow the fork runs with, so a listing names it without reading its ancestors
    /// (absent in recordings of format 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workflow: Option<String>,
    /// The `input:requested` events open in the parent at the fork point (their event ids):
    /// the fork waits for them as its parent did, and an answer to one continues the fork.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    open_requests: Vec<EventId>,
    /// The SHA-256 (hex) of the parent's state at the fork point, as canonical JSON (object
    /// keys sorted): equal hashes prove that two forks started from identical state. Absent
    /// in forks made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_hash: Option<String>,
    /// A JSON merge patch (RFC 7396) applied to that state before the fork ran on, when the
    /// fork changed the state it started from (an eval's variant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    state_edit: Option<Value>,
});

impl ErrorOccurred {
    /// A recoverable error (the run goes on), with no context.
    ///
    /// ```
    /// use openharness_core::builtin::ErrorOccurred;
    /// let error = ErrorOccurred::recoverable("handler", "the handler panicked", None);
    /// let wire = serde_json::to_value(&error).unwrap();
    /// assert_eq!(wire["code"], "handler");
    /// assert_eq!(wire["recoverable"], true);
    /// ```
    pub fn recoverable(
        source: impl Into<String>,
        message: impl Into<String>,
        event: Option<EventId>,
    ) -> Self {
        Self {
            source: source.into(),
            message: message.into(),
            recoverable: true,
            context: None,
            event,
        }
    }
}

fn yes() -> bool {
    true
}

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

macro_rules! builtins {
    ($($variant:ident),* $(,)?) => {
        /// Every built-in event, decoded: the one place built-in names are matched. Other crates
        /// decode a recorded event with [`Builtin::decode`] and match on the variants.
        ///
        /// ```
        /// use openharness_core::builtin::{Builtin, TextDelta};
        /// use openharness_core::Envelope;
        /// // A recording of format 1 (`agent`, not `agentName`) decodes too.
        /// let old = Envelope::new("text:delta", serde_json::json!({ "agent": "planner", "delta": "Hi" }), None);
        /// match Builtin::decode(&old) {
        ///     Some(Ok(Builtin::TextDelta(TextDelta { agent, delta, attempt }))) => assert_eq!((agent.as_str(), delta.as_str(), attempt), ("planner", "Hi", 1)),
        ///     other => panic!("{other:?}"),
        /// }
        /// assert!(Builtin::decode(&Envelope::new("plan:created", serde_json::json!({}), None)).is_none());
        /// ```
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        #[allow(missing_docs)]
        pub enum Builtin {
            $($variant($variant)),*
        }

        /// The names of all built-in events.
        pub const NAMES: &[&str] = &[$($variant::NAME),*];

        impl Builtin {
            /// Decodes a recorded event: `None` when its name is not a built-in one, an error
            /// when it is but its payload does not decode.
            pub fn decode(event: &Envelope) -> Option<Result<Self, serde_json::Error>> {
                match event.name.as_ref() {
                    $($variant::NAME => Some(event.decode::<$variant>().map(Self::$variant)),)*
                    _ => None,
                }
            }

            /// The event's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => $variant::NAME,)*
                }
            }

            /// The payload as the wire carries it today (format 1 names become today's).
            pub fn to_payload(&self) -> Result<Value, serde_json::Error> {
                match self {
                    $(Self::$variant(event) => serde_json::to_value(event),)*
                }
            }
        }
    };
}

builtins!(
    UserInput,
    WorkflowStarted,
    WorkflowCompleted,
    AgentStarted,
    AgentCompleted,
    TextDelta,
    TextComplete,
    OutputRejected,
    ToolCalled,
    ToolResult,
    ErrorOccurred,
    SessionForked,
    InputRequested,
    InputReceived,
    InputQueued,
    InputSteered,
    TurnRolledBack,
    StopRequested,
);

/// Whether `name` is a built-in event.
pub fn is_builtin(name: &str) -> bool {
    NAMES.contains(&name)
}

fn first_attempt() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_first_attempt(attempt: &u32) -> bool {
    *attempt == 1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_false(flag: &bool) -> bool {
    !*flag
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
