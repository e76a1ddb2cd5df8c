//! The [`Agent`] trait: an LLM step with a mandatory structured output.
//!
//! An agent is activated by one event type (its trigger) when `when(state)` holds, builds a
//! prompt from the state and the trigger (and, if it talks as a chat, a system prompt and the
//! conversation as role-correct messages), and turns the model's output (a value of its
//! `Output` type, whose JSON Schema is sent to the provider; a `String` output is asked for as
//! plain text) into events. The runtime owns the rest: streaming, validation, re-asking,
//! recording.

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::builtin::AgentStarted;
use crate::contained::{panic_message, quietly};
use crate::emit::Emit;
use crate::event::{Envelope, Event};
use crate::handler::Handler;
use crate::provider::{ChatMessage, Image, ReasoningEffort};
use crate::tool::{DEFAULT_MAX_TURNS, Tool, Toolbox};

/// An LLM agent. Usually implemented by `#[agent(output = T, emits = [...])]`, which takes the state and trigger types from `prompt`'s parameters.
///
/// ```
/// use openharness_core::{Agent, Emit, Event, builtin::{UserInput, TextComplete}};
/// # #[derive(Clone, serde::Serialize)] struct S;
/// # impl openharness_core::Handler for S { type Events = E; fn apply(&mut self, _: &E) -> Emit { Emit::none() } }
/// # enum E {}
/// # impl openharness_core::EventSet for E { const NAMES: &'static [&'static str] = &[];
/// #   fn name(&self) -> &'static str { match *self {} }
/// #   fn decode(_: &str, _: &serde_json::Value) -> Result<openharness_core::adapter::Decoded<Self>, serde_json::Error> { Ok(openharness_core::adapter::Decoded::Unknown) }
/// #   fn to_payload(&self) -> Result<serde_json::Value, serde_json::Error> { match *self {} } }
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Reply { answer: String }
///
/// struct Echo;
/// impl Agent for Echo {
///     type State = S;
///     type Trigger = UserInput;
///     type Output = Reply;
///     const NAME: &'static str = "echo";
///     const EMITS: &'static [&'static str] = &[TextComplete::NAME];
///     fn prompt(&self, _: &S, input: &UserInput) -> String { format!("Echo: {}", input.text) }
///     fn on_output(&self, reply: Reply, _: &UserInput) -> Emit {
///         Emit::one(TextComplete { agent: "echo".into(), text: reply.answer })
///     }
/// }
/// ```
pub trait Agent: Send + Sync + 'static {
    /// The workflow state the agent reads.
    type State: Handler;
    /// The event that activates it.
    type Trigger: Event;
    /// Its structured output.
    type Output: StructuredOutput;
    /// Its name, as recorded in `agent:started` and used by providers' scripts.
    const NAME: &'static str;
    /// The names of the events `on_output` may emit; anything else is rejected.
    const EMITS: &'static [&'static str];
    /// A fingerprint of the agent's code: `#[agent]` sets it to the SHA-256 (first 16 hex
    /// digits) of its arguments and methods as tokens, doc comments left out, so a changed
    /// prompt or `on_output` changes the workflow's fingerprint and whitespace and comments do
    /// not.
    /// Hand-written agents leave it empty.
    const CODE: &'static str = "";

    /// The model to ask for; `None` leaves it to the provider.
    fn model(&self) -> Option<&str> {
        None
    }

    /// The tools its model may call (none by default). Asked at each activation, so tools
    /// that change while a workflow runs are offered as they are then (an MCP server's, listed
    /// again after its `tools/list_changed`); keep it cheap (clone a list built once).
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        Vec::new()
    }

    /// How many model turns one call may take in the tool loop (default
    /// [`DEFAULT_MAX_TURNS`]).
    fn max_turns(&self) -> u32 {
        DEFAULT_MAX_TURNS
    }

    /// Whether to activate on this state (checked after the trigger is folded in).
    fn when(&self, _state: &Self::State) -> bool {
        true
    }

    /// The prompt, from the state after the trigger and the trigger itself: the last user
    /// message, after [`Agent::messages`] (an agent that sends its whole conversation as
    /// messages may return an empty prompt, which is then left out).
    fn prompt(&self, state: &Self::State, trigger: &Self::Trigger) -> String;

    /// The system prompt (`None`, the default: none), from the same state and trigger as
    /// [`Agent::prompt`]: Anthropic's `system`, OpenAI's `system` message. Recorded in
    /// `agent:started`; derived again when a call is resumed.
    fn system(&self, _state: &Self::State, _trigger: &Self::Trigger) -> Option<String> {
        None
    }

    /// The conversation to send before the prompt, oldest first, each message with its role
    /// (none by default), from the same state and trigger as [`Agent::prompt`]. Recorded in
    /// `agent:started` without image bytes; derived again when a call is resumed, so keep it
    /// derivable from recorded events.
    fn messages(&self, _state: &Self::State, _trigger: &Self::Trigger) -> Vec<ChatMessage> {
        Vec::new()
    }

    /// Images to give the model with the prompt, in order (none by default), from the same
    /// state and trigger as [`Agent::prompt`]. They are not recorded in `agent:started`
    /// (the prompt is): keep them derivable from recorded events, since a call resumed after a
    /// crash asks for them again from the state and the trigger.
    fn images(&self, _state: &Self::State, _trigger: &Self::Trigger) -> Vec<Image> {
        Vec::new()
    }

    /// The reasoning effort to ask the model for (`None`, the default: the model's own), from
    /// the same state and trigger as [`Agent::prompt`]; derived again when a call is resumed.
    fn reasoning(&self, _state: &Self::State, _trigger: &Self::Trigger) -> Option<ReasoningEffort> {
        None
    }

    /// Which part of the output is the agent's chat reply: the text chat clients show and
    /// stream (`/api/chat`, `?shape=ui`, the platform's messages), decoded from the model's
    /// streamed output as it arrives. [`ReplySource::Inferred`] by default; recorded in
    /// `agent:started` as a JSON pointer (`reply`). `#[agent(reply = field)]` names a field.
    fn reply(&self) -> ReplySource {
        ReplySource::Inferred
    }

    /// Turns valid output into events.
    fn on_output(&self, output: Self::Output, trigger: &Self::Trigger) -> Emit;
}

/// Which part of an agent's output is its chat reply (see [`Agent::reply`]).
///
/// ```
/// use openharness_core::adapter::ReplySource;
/// use serde_json::json;
/// let single = json!({ "type": "object", "properties": { "reply": { "type": "string" } } });
/// assert_eq!(ReplySource::Inferred.pointer(&single), Ok(Some("/reply".to_owned())));
/// assert_eq!(ReplySource::Inferred.pointer(&json!({ "type": "string" })), Ok(Some(String::new())));
/// let two = json!({ "type": "object", "properties": {
///     "answer": { "type": "string" }, "sources": { "type": "array" } } });
/// assert_eq!(ReplySource::Inferred.pointer(&two), Ok(None));
/// assert_eq!(ReplySource::Field("answer").pointer(&two), Ok(Some("/answer".to_owned())));
/// assert!(ReplySource::Field("sources").pointer(&two).is_err()); // not a string
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReplySource {
    /// From the output type: a `String` output is the reply; an object with exactly one
    /// field, a string, has that field as the reply; any other output has no text reply.
    #[default]
    Inferred,
    /// This top-level field of the output (a string, by its JSON name) is the reply.
    Field(&'static str),
    /// No text reply: chat clients get the structured output as data only.
    NoText,
}

impl ReplySource {
    /// The JSON pointer of the reply in outputs of `schema` (`""`: the whole output, `"/x"`:
    /// field `x`), `None` for no text reply, or why the named field cannot be the reply.
    pub fn pointer(self, schema: &Value) -> Result<Option<String>, String> {
        let is_string = |schema: &Value| match schema.get("type") {
            Some(Value::String(kind)) => kind == "string",
            Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
            _ => false,
        };
        let properties = schema.get("properties").and_then(Value::as_object);
        let escape = |field: &str| format!("/{}", field.replace('~', "~0").replace('/', "~1"));
        match self {
            Self::NoText => Ok(None),
            Self::Inferred if is_string(schema) => Ok(Some(String::new())),
            Self::Inferred => Ok(properties
                .filter(|fields| fields.len() == 1)
                .and_then(|fields| fields.iter().next())
                .filter(|(_, field)| is_string(field))
                .map(|(name, _)| escape(name))),
            Self::Field(field) => match properties.and_then(|fields| fields.get(field)) {
                Some(property) if is_string(property) => Ok(Some(escape(field))),
                Some(_) => Err(format!(
                    "the reply field `{field}` is not a string: name a `String` field of the output as `reply`"
                )),
                None => Err(format!(
                    "the output has no field `{field}` to be the reply: name one of its `String` fields (by its JSON name) as `reply`"
                )),
            },
        }
    }
}

/// A type an agent can produce: deserializable, with a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an agent's structured output",
    label = "needs `serde::Deserialize` and `schemars::JsonSchema`",
    note = "derive them: `#[derive(serde::Deserialize, schemars::JsonSchema)]`"
)]
pub trait StructuredOutput: DeserializeOwned + JsonSchema + Send + 'static {}
impl<T: DeserializeOwned + JsonSchema + Send + 'static> StructuredOutput for T {}

/// Static description of an agent, for listings and providers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// Name.
    pub name: &'static str,
    /// Trigger event name.
    pub trigger: &'static str,
    /// Event names it may emit.
    pub emits: &'static [&'static str],
}

/// An agent ready to start: its prompt has been built from the state.
pub(crate) struct Activation {
    pub(crate) system: Option<String>,
    pub(crate) messages: Vec<ChatMessage>,
    pub(crate) prompt: String,
    pub(crate) model: Option<String>,
    pub(crate) tools: Toolbox,
    pub(crate) max_turns: u32,
    pub(crate) images: Vec<Image>,
    pub(crate) reasoning: Option<ReasoningEffort>,
    /// The JSON pointer of the reply in the output, recorded in `agent:started`.
    pub(crate) reply: Option<String>,
}

/// The runtime's view of an agent, with the types erased.
pub(crate) trait ErasedAgent<S>: Send + Sync {
    fn spec(&self) -> AgentSpec;
    /// [`Agent::CODE`].
    fn code(&self) -> &'static str;
    fn schema(&self) -> Arc<Value>;
    /// The JSON pointer of the reply in the output, or why the agent's `reply` is invalid.
    fn reply(&self) -> Result<Option<String>, String>;
    /// `None` if `when` is false; an error if the trigger does not decode or user code panics.
    fn activate(&self, state: &S, trigger: &Envelope) -> Option<Result<Activation, String>>;
    /// The activation of a call recorded before (its `agent:started`), to run it again after a
    /// crash: the recorded prompt and model, with the agent's tools, and the images and
    /// reasoning effort derived again from `state` and `trigger` — and its system prompt and
    /// messages too, when the recording has them (a call recorded before agents had them is
    /// run again with its recorded prompt alone).
    fn reactivate(&self, state: &S, trigger: &Envelope, started: &AgentStarted) -> Activation;
    /// Deserializes the output and calls `on_output`; an error explains why the output was rejected.
    fn finish(&self, output: Value, trigger: &Envelope) -> Result<Emit, OutputRejected>;
}

/// An agent an event activates, with its activation or why building it failed.
pub(crate) type Activated<S> = (Arc<dyn ErasedAgent<S>>, Result<Activation, String>);

/// The agents `event` activates in `state`, in registration order: each agent whose trigger
/// is the event's name and whose `when` holds, with its activation or the error building it
/// raised. The runtime starts them; a resume derives what they should have started.
pub(crate) fn activations<S>(
    agents: &[Arc<dyn ErasedAgent<S>>],
    state: &S,
    event: &Envelope,
) -> Vec<Activated<S>> {
    agents
        .iter()
        .filter(|agent| agent.spec().trigger == event.name)
        .filter_map(|agent| Some((Arc::clone(agent), agent.activate(state, event)?)))
        .collect()
}

/// Why an agent's output was not accepted.
pub(crate) enum OutputRejected {
    /// It does not match the output type: worth re-asking.
    Invalid(String),
    /// `on_output` failed: re-asking will not help.
    Failed(String),
}

pub(crate) struct Erased<A: Agent> {
    agent: A,
    schema: Arc<Value>,
    /// The schema compiled for local validation at the first output checked, so a workflow
    /// built only to read sessions never compiles it (`None` inside if it does not compile,
    /// in which case only deserialization checks the output).
    validator: OnceLock<Option<jsonschema::Validator>>,
    reply: Result<Option<String>, String>,
}

impl<A: Agent> Erased<A> {
    pub(crate) fn new(agent: A) -> Self {
        let schema = Arc::new(schemars::schema_for!(A::Output).to_value());
        let reply = agent.reply().pointer(&schema);
        Self {
            agent,
            schema,
            validator: OnceLock::new(),
            reply,
        }
    }

    /// The compiled output schema, compiled now if this is its first use.
    fn validator(&self) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.schema)
                    .inspect_err(|err| {
                        tracing::warn!(agent = A::NAME, error = %err, "the output schema does not compile; output is checked by deserialization only");
                    })
                    .ok()
            })
            .as_ref()
    }

    /// What the validator finds wrong with `output`, at most a few findings, each with the
    /// JSON pointer of the offending value.
    fn schema_errors(&self, output: &Value) -> Vec<String> {
        const SHOWN: usize = 5;
        let Some(validator) = self.validator() else {
            return Vec::new();
        };
        validator
            .iter_errors(output)
            .take(SHOWN)
            .map(|err| {
                let path = err.instance_path().to_string();
                let at = if path.is_empty() {
                    "/".to_owned()
                } else {
                    path
                };
                format!("at `{at}`: {err}")
            })
            .collect()
    }
}

impl<A: Agent> ErasedAgent<A::State> for Erased<A> {
    fn spec(&self) -> AgentSpec {
        AgentSpec {
            name: A::NAME,
            trigger: A::Trigger::NAME,
            emits: A::EMITS,
        }
    }

    fn code(&self) -> &'static str {
        A::CODE
    }

    fn schema(&self) -> Arc<Value> {
        Arc::clone(&self.schema)
    }

    fn reply(&self) -> Result<Option<String>, String> {
        self.reply.clone()
    }

    fn activate(&self, state: &A::State, trigger: &Envelope) -> Option<Result<Activation, String>> {
        let typed = match trigger.decode::<A::Trigger>() {
            Ok(typed) => typed,
            Err(err) => {
                return Some(Err(format!(
                    "trigger `{}` does not decode: {err}",
                    trigger.name
                )));
            }
        };
        let built = quietly(|| {
            self.agent.when(state).then(|| {
                (
                    self.agent.system(state, &typed),
                    self.agent.messages(state, &typed),
                    self.agent.prompt(state, &typed),
                    self.agent.images(state, &typed),
                    self.agent.reasoning(state, &typed),
                    Toolbox::new(self.agent.tools()),
                )
            })
        });
        match built {
            Ok(Some((system, messages, prompt, images, reasoning, tools))) => {
                Some(Ok(Activation {
                    system,
                    messages,
                    prompt,
                    model: self.agent.model().map(str::to_owned),
                    tools,
                    max_turns: self.agent.max_turns().max(1),
                    images,
                    reasoning,
                    reply: self.reply.clone().ok().flatten(),
                }))
            }
            Ok(None) => None,
            Err(panic) => Some(Err(format!(
                "agent `{}` panicked building its prompt or tools: {}",
                A::NAME,
                panic_message(panic.as_ref())
            ))),
        }
    }

    fn reactivate(
        &self,
        state: &A::State,
        trigger: &Envelope,
        started: &AgentStarted,
    ) -> Activation {
        let chat = started.system.is_some() || !started.messages.is_empty();
        let derived = trigger.decode::<A::Trigger>().ok().and_then(|typed| {
            quietly(|| {
                let (system, messages) = if chat {
                    (
                        self.agent.system(state, &typed),
                        self.agent.messages(state, &typed),
                    )
                } else {
                    (None, Vec::new())
                };
                (
                    system,
                    messages,
                    self.agent.images(state, &typed),
                    self.agent.reasoning(state, &typed),
                )
            })
            .ok()
        });
        if derived.is_none() {
            tracing::warn!(
                agent = A::NAME,
                "the system prompt, messages, images and reasoning of a resumed call could not be derived again; it runs without them"
            );
        }
        let (system, messages, images, reasoning) = derived.unwrap_or_default();
        let tools = quietly(|| Toolbox::new(self.agent.tools())).unwrap_or_else(|panic| {
            tracing::warn!(
                agent = A::NAME,
                "the tools of a resumed call panicked: {}; it runs without tools",
                panic_message(panic.as_ref())
            );
            Toolbox::default()
        });
        Activation {
            // A recorded system prompt is kept if it cannot be derived again.
            system: system.or_else(|| started.system.clone()),
            messages,
            prompt: started.prompt.clone(),
            model: started.model.clone(),
            tools,
            max_turns: self.agent.max_turns().max(1),
            images,
            reasoning,
            reply: self.reply.clone().ok().flatten(),
        }
    }

    fn finish(&self, output: Value, trigger: &Envelope) -> Result<Emit, OutputRejected> {
        let type_name = std::any::type_name::<A::Output>();
        let schema_errors = self.schema_errors(&output);
        let typed_output = A::Output::deserialize(&output).map_err(|err| {
            let mut message = format!("output does not match the schema of `{type_name}`: {err}");
            if !schema_errors.is_empty() {
                message.push_str("; schema errors: ");
                message.push_str(&schema_errors.join("; "));
            }
            OutputRejected::Invalid(message)
        })?;
        if !schema_errors.is_empty() {
            return Err(OutputRejected::Invalid(format!(
                "output does not match the schema of `{type_name}`: {}",
                schema_errors.join("; ")
            )));
        }
        let typed_trigger = trigger
            .decode::<A::Trigger>()
            .map_err(|err| OutputRejected::Failed(err.to_string()))?;
        let emit =
            quietly(|| self.agent.on_output(typed_output, &typed_trigger)).map_err(|panic| {
                OutputRejected::Failed(format!(
                    "on_output panicked: {}",
                    panic_message(panic.as_ref())
                ))
            })?;
        if let Some(undeclared) = emit
            .pending()
            .iter()
            .find(|p| !A::EMITS.contains(&p.name.as_ref()))
        {
            return Err(OutputRejected::Failed(format!(
                "agent `{}` emitted `{}`, which is not in its `emits` list {:?}",
                A::NAME,
                undeclared.name,
                A::EMITS
            )));
        }
        Ok(emit)
    }
}
