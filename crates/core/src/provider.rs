//! The [`Provider`] port: how an agent's prompt reaches a model and structured output comes back.
//!
//! Implemented by `openharness-provider` (Anthropic, OpenAI-compatible, the `claude` CLI, and a
//! scripted provider for tests). A provider streams what happens while it works (text deltas,
//! tool calls) through a [`ProviderSink`] and returns the final JSON output, which the runtime
//! checks against the agent's output type.
//!
//! A request is a chat: an optional system prompt ([`ProviderRequest::system`]), an optional
//! conversation of role-correct messages ([`ChatMessage`]), then the prompt as the last user
//! message (when it says anything). An agent whose output type is a plain `String` (schema
//! `{"type": "string"}`) is asked for text, not JSON ([`ProviderRequest::wants_text`]): its
//! final text is its output.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::EventId;
use crate::tool::{DEFAULT_MAX_TURNS, Toolbox};

/// One request to a model on behalf of an agent.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderRequest {
    /// The agent asking.
    pub agent: String,
    /// The model the agent asked for, if any (the provider's default otherwise).
    pub model: Option<String>,
    /// The system prompt, if any: Anthropic's `system`, OpenAI's `system` message.
    pub system: Option<String>,
    /// The conversation before the prompt, oldest first (empty: none), each message with its
    /// role.
    pub messages: Vec<ChatMessage>,
    /// The prompt: the last user message, after `messages` (left out when it is empty, there
    /// are messages, and nothing else goes with it).
    pub prompt: String,
    /// JSON Schema the output must match (from the agent's output type).
    pub schema: Arc<Value>,
    /// 1 for the first attempt, 2 and up when the previous output was rejected.
    pub attempt: u32,
    /// Why the previous output was rejected, on a re-ask.
    pub previous_error: Option<String>,
    /// The tools the model may call (empty: none).
    pub tools: Toolbox,
    /// How many model turns the tool loop may take (at least 1).
    pub max_turns: u32,
    /// Images given to the model with the prompt, in order (empty: none).
    pub images: Vec<Image>,
    /// How hard the model should think, for models that reason (`None`: the model's default).
    pub reasoning: Option<ReasoningEffort>,
    /// The id of the event that activated the agent (set by the runtime; `None` for a request
    /// made outside a run). Concurrent calls of one agent are told apart by it: a cassette
    /// answers each call with the recorded call of the same agent and trigger.
    pub trigger: Option<EventId>,
}

impl ProviderRequest {
    /// A first-attempt request.
    pub fn new(agent: impl Into<String>, prompt: impl Into<String>, schema: Arc<Value>) -> Self {
        Self {
            agent: agent.into(),
            model: None,
            system: None,
            messages: Vec::new(),
            prompt: prompt.into(),
            schema,
            attempt: 1,
            previous_error: None,
            tools: Toolbox::default(),
            max_turns: DEFAULT_MAX_TURNS,
            images: Vec::new(),
            reasoning: None,
            trigger: None,
        }
    }

    /// Sets the model.
    #[must_use]
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model;
        self
    }

    /// Sets the system prompt (`None`: none).
    #[must_use]
    pub fn with_system(mut self, system: Option<String>) -> Self {
        self.system = system;
        self
    }

    /// Sends this conversation before the prompt.
    #[must_use]
    pub fn with_messages(mut self, messages: Vec<ChatMessage>) -> Self {
        self.messages = messages;
        self
    }

    /// Whether the output asked for is plain text: the schema is `{"type": "string"}` (a
    /// `String` output type) with no constraint on the string. Such a request is sent without
    /// a JSON schema, and the model's final text is the output (a JSON string).
    ///
    /// ```
    /// use openharness_core::adapter::ProviderRequest;
    /// use std::sync::Arc;
    /// let text = Arc::new(schemars::schema_for!(String).to_value());
    /// assert!(ProviderRequest::new("a", "hi", text).wants_text());
    /// let choice = Arc::new(serde_json::json!({ "type": "string", "enum": ["yes", "no"] }));
    /// assert!(!ProviderRequest::new("a", "hi", choice).wants_text());
    /// ```
    pub fn wants_text(&self) -> bool {
        is_text_schema(&self.schema)
    }

    /// The text of the conversation's latest user message, if it has one: what a chat agent
    /// answers (a scripted fallback that echoes it, say).
    ///
    /// ```
    /// use openharness_core::adapter::ProviderRequest;
    /// use openharness_core::ChatMessage;
    /// use std::sync::Arc;
    /// let text = Arc::new(schemars::schema_for!(String).to_value());
    /// let request = ProviderRequest::new("assistant", "", text).with_messages(vec![
    ///     ChatMessage::user("Hello"),
    ///     ChatMessage::assistant("Hi!"),
    ///     ChatMessage::user("Again"),
    /// ]);
    /// assert_eq!(request.latest_user_text(), Some("Again"));
    /// ```
    pub fn latest_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                ChatMessage::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
    }

    /// Whether the prompt goes as the last user message: when it says something, carries
    /// images or a re-ask, or there is no conversation to send without it.
    pub fn sends_prompt(&self) -> bool {
        !self.prompt.is_empty()
            || !self.images.is_empty()
            || self.previous_error.is_some()
            || self.messages.is_empty()
    }

    /// Offers these tools to the model.
    #[must_use]
    pub fn with_tools(mut self, tools: Toolbox) -> Self {
        self.tools = tools;
        self
    }

    /// Bounds the tool loop to `turns` model turns (at least 1).
    #[must_use]
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns.max(1);
        self
    }

    /// Gives the model these images with the prompt.
    #[must_use]
    pub fn with_images(mut self, images: Vec<Image>) -> Self {
        self.images = images;
        self
    }

    /// Asks for this reasoning effort (`None`: the model's default).
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: Option<ReasoningEffort>) -> Self {
        self.reasoning = reasoning;
        self
    }
}

/// Whether `schema` asks for a bare string: `type` is `"string"`, and nothing narrows it
/// (no `enum`, `const`, `pattern`, `format`, length bounds or combinators).
fn is_text_schema(schema: &Value) -> bool {
    const NARROWING: [&str; 9] = [
        "enum",
        "const",
        "pattern",
        "format",
        "minLength",
        "maxLength",
        "anyOf",
        "oneOf",
        "allOf",
    ];
    let Some(object) = schema.as_object() else {
        return false;
    };
    object.get("type").and_then(Value::as_str) == Some("string")
        && !NARROWING.iter().any(|key| object.contains_key(*key))
}

/// One message of the conversation an agent sends before its prompt, with its role.
///
/// Serialized with a `role` tag (`user`, `assistant`, `tool`); a user message's images are
/// left out when empty.
///
/// ```
/// use openharness_core::ChatMessage;
/// let said = ChatMessage::user("Hi").with_images(vec![]);
/// assert_eq!(serde_json::to_value(&said)?, serde_json::json!({ "role": "user", "text": "Hi" }));
/// let answer = ChatMessage::assistant("Hello!");
/// assert_eq!(answer.text(), "Hello!");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "role", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ChatMessage {
    /// What a person said, with its images.
    User {
        /// The text (may be empty when there are images).
        text: String,
        /// Images, in order (each provider places them beside the text its own way:
        /// Anthropic's before it, OpenAI's after).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// What the model said, and the tools it called.
    Assistant {
        /// The text (may be empty when it only called tools).
        text: String,
        /// The tools it called, in order.
        #[serde(default, rename = "toolCalls", skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall>,
    },
    /// What a tool returned to the call of an earlier assistant message.
    Tool {
        /// The call's id (as in the assistant message's [`ChatToolCall::id`]).
        id: String,
        /// The tool's name.
        name: String,
        /// What it returned.
        output: Value,
        /// Whether that is an error.
        #[serde(default, rename = "isError")]
        is_error: bool,
    },
}

impl ChatMessage {
    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: Vec::new(),
        }
    }

    /// An assistant message calling tools (after `text`, which may be empty).
    pub fn tool_calls(text: impl Into<String>, calls: Vec<ChatToolCall>) -> Self {
        Self::Assistant {
            text: text.into(),
            tool_calls: calls,
        }
    }

    /// A tool's result for the call `id` of tool `name`.
    pub fn tool_result(
        id: impl Into<String>,
        name: impl Into<String>,
        output: Value,
        is_error: bool,
    ) -> Self {
        Self::Tool {
            id: id.into(),
            name: name.into(),
            output,
            is_error,
        }
    }

    /// This message with `images` (a user message's; other messages are returned unchanged).
    #[must_use]
    pub fn with_images(self, images: Vec<Image>) -> Self {
        match self {
            Self::User { text, .. } => Self::User { text, images },
            other => other,
        }
    }

    /// Its text: what the user or the model said, or a tool's output as text.
    pub fn text(&self) -> String {
        match self {
            Self::User { text, .. } | Self::Assistant { text, .. } => text.clone(),
            Self::Tool { output, .. } => match output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            },
        }
    }

    /// The message as recorded in `agent:started`: without image bytes (images are recorded
    /// in the events the conversation is derived from, and derived again on resume).
    pub fn recorded(&self) -> Self {
        match self {
            Self::User { text, .. } => Self::user(text.clone()),
            other => other.clone(),
        }
    }
}

/// A tool call of an assistant [`ChatMessage`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatToolCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub input: Value,
}

/// An image given to a model with a prompt: where it is, or its bytes.
///
/// ```
/// use openharness_core::Image;
/// let image = Image::base64("image/png", "iVBORw0KGgo=");
/// assert_eq!(image.data_url(), "data:image/png;base64,iVBORw0KGgo=");
/// let json = serde_json::to_value(Image::url("https://example.com/cat.png"))?;
/// assert_eq!(json, serde_json::json!({"type": "url", "url": "https://example.com/cat.png"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Image {
    /// An image the model's service fetches from a URL.
    Url {
        /// Its address (`https://…`, or a `data:` URL).
        url: String,
    },
    /// An image's bytes, base64-encoded.
    Base64 {
        /// Its media type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        media_type: String,
        /// The bytes, standard base64.
        data: String,
    },
}

impl Image {
    /// An image at `url`.
    pub fn url(url: impl Into<String>) -> Self {
        Self::Url { url: url.into() }
    }

    /// An image of `media_type` whose bytes are the base64 `data`.
    pub fn base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Base64 {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// The image as one URL: its own, or a `data:` URL holding its bytes (how OpenAI takes
    /// inline images).
    pub fn data_url(&self) -> String {
        match self {
            Self::Url { url } => url.clone(),
            Self::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        }
    }
}

/// How hard a reasoning model should think before it answers: OpenAI's `reasoning_effort`,
/// Anthropic's `output_config.effort`.
///
/// ```
/// use openharness_core::ReasoningEffort;
/// let effort: ReasoningEffort = serde_json::from_str("\"high\"")?;
/// assert_eq!(effort.as_str(), "high");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReasoningEffort {
    /// Answer quickly.
    Low,
    /// The usual balance.
    Medium,
    /// Think longer.
    High,
}

impl ReasoningEffort {
    /// Its name on the wire: `low`, `medium` or `high`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
        }
    }
}

/// Something that happened while a provider worked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ProviderEvent {
    /// Streamed text.
    TextDelta(String),
    /// The model called a tool.
    ToolCalled {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        input: Value,
        /// The MCP server that offers the tool (see [`Tool::server`](crate::Tool::server));
        /// `None` for a native tool.
        server: Option<String>,
    },
    /// A tool returned.
    ToolResult {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Result.
        output: Value,
        /// Whether the result is an error.
        is_error: bool,
    },
    /// The model called a tool the client runs ([`ClientTool`](crate::ClientTool)): not run
    /// here; the call ends with it (see [`ProviderResponse::client_calls`]).
    ClientToolCalled {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        input: Value,
    },
    /// A person's input steered into the call, taken for its next model call
    /// ([`ProviderSink::take_steered`]).
    Steered {
        /// The `input:queued` event that recorded it.
        queued: EventId,
        /// What the person wrote.
        text: String,
    },
}

/// Token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    #[serde(default)]
    pub cache_creation_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cache_read_tokens += rhs.cache_read_tokens;
        self.cache_creation_tokens += rhs.cache_creation_tokens;
    }
}

/// What a provider returns when it is done.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderResponse {
    /// The structured output (not yet validated).
    pub output: Value,
    /// Tokens used by this request.
    pub usage: Usage,
    /// Cost in US dollars, if known.
    pub cost: Option<f64>,
    /// The client tools the model called last, when it ended by calling them
    /// ([`ClientTool`](crate::ClientTool)): then `output` is the text it wrote with them (or
    /// `null`), not an answer to validate, and the call ends without one. Empty otherwise.
    pub client_calls: Vec<ChatToolCall>,
}

impl ProviderResponse {
    /// The answer `output`, with its `usage` and `cost`.
    ///
    /// ```
    /// use openharness_core::adapter::{ProviderResponse, Usage};
    /// let response = ProviderResponse::new(serde_json::json!({ "reply": "hi" }), Usage::default(), None);
    /// assert!(response.client_calls.is_empty());
    /// ```
    pub fn new(output: Value, usage: Usage, cost: Option<f64>) -> Self {
        Self {
            output,
            usage,
            cost,
            client_calls: Vec::new(),
        }
    }
}

/// A provider failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider has nothing for this request (a scripted provider ran out of script, say).
    #[error("no response for agent `{agent}`: {message}")]
    NoResponse {
        /// The agent.
        agent: String,
        /// Why.
        message: String,
    },
    /// The remote API answered with an error.
    #[error("{provider} returned HTTP {status}: {message}")]
    Api {
        /// Which provider.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The API's message.
        message: String,
    },
    /// The model declined to answer (OpenAI's `delta.refusal`, Anthropic's
    /// `stop_reason: "refusal"`). Asking again would not help: the runtime does not re-ask, it
    /// records `error:occurred` with code `refusal` and this text, and the agent fails.
    #[error("{provider} refused: {message}")]
    Refused {
        /// Which provider.
        provider: String,
        /// The refusal as the model wrote it.
        message: String,
    },
    /// Transport, protocol or process failure.
    #[error("{provider} failed: {message}")]
    Failed {
        /// Which provider.
        provider: String,
        /// What happened.
        message: String,
    },
}

/// Where a provider reports what happens while it works.
#[derive(Clone)]
pub struct ProviderSink {
    report: Arc<dyn Fn(ProviderEvent) + Send + Sync>,
    text: Arc<Mutex<String>>,
    steers: Option<Steers>,
}

/// Inputs steered into a turn's running agent calls (a second input in mode `steer`): each is
/// taken once, by the first call to make its next model call ([`ProviderSink::take_steered`]).
/// What no call takes stays queued and is answered in a turn of its own.
#[derive(Clone, Default)]
pub struct Steers(Arc<SteersInner>);

/// The inputs offered and not taken yet, and who waits for one.
#[derive(Default)]
struct SteersInner {
    offered: Mutex<std::collections::VecDeque<(EventId, String)>>,
    arrived: tokio::sync::Notify,
}

impl Steers {
    /// Offers the input recorded as the `input:queued` event `queued` to the running calls.
    pub fn offer(&self, queued: EventId, text: String) {
        self.0
            .offered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push_back((queued, text));
        self.0.arrived.notify_waiters();
    }

    /// Takes every input offered and not taken yet, oldest first.
    fn take_all(&self) -> Vec<(EventId, String)> {
        self.0
            .offered
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .drain(..)
            .collect()
    }
}

impl std::fmt::Debug for Steers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steers").finish_non_exhaustive()
    }
}

impl ProviderSink {
    /// A sink that passes every event to `report`.
    pub fn new(report: impl Fn(ProviderEvent) + Send + Sync + 'static) -> Self {
        Self {
            report: Arc::new(report),
            text: Arc::default(),
            steers: None,
        }
    }

    /// This sink, offering its call the inputs steered into the turn.
    #[must_use]
    pub fn with_steers(mut self, steers: Steers) -> Self {
        self.steers = Some(steers);
        self
    }

    /// The inputs steered into the turn since this call's last model call, oldest first: a
    /// provider with a tool loop calls it before each model call and sends each as a user
    /// message after the conversation so far. Each is reported as it is taken
    /// ([`ProviderEvent::Steered`], recorded as `input:steered`), so the log says which
    /// request first held it. Empty for a call outside a turn, or with nothing steered.
    ///
    /// ```
    /// use openharness_core::{EventId, adapter::{ProviderEvent, ProviderSink, Steers}};
    /// use std::sync::{Arc, Mutex};
    /// let steers = Steers::default();
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = { let seen = seen.clone(); ProviderSink::new(move |e| seen.lock().unwrap().push(e)) }
    ///     .with_steers(steers.clone());
    /// let queued = EventId::new();
    /// steers.offer(queued, "use metric units".into());
    /// assert_eq!(sink.take_steered(), ["use metric units"]);
    /// assert!(sink.take_steered().is_empty(), "taken once");
    /// assert_eq!(seen.lock().unwrap()[0], ProviderEvent::Steered { queued, text: "use metric units".into() });
    /// ```
    pub fn take_steered(&self) -> Vec<String> {
        let Some(steers) = &self.steers else {
            return Vec::new();
        };
        steers
            .take_all()
            .into_iter()
            .map(|(queued, text)| {
                (self.report)(ProviderEvent::Steered {
                    queued,
                    text: text.clone(),
                });
                text
            })
            .collect()
    }

    /// Like [`ProviderSink::take_steered`], but when nothing is offered yet, waits up to
    /// `within` for an input to be steered in: a re-execution whose recording took a steer
    /// here waits for the same steer, whatever the timing (empty when none comes).
    ///
    /// ```
    /// # async fn demo() {
    /// use openharness_core::{EventId, adapter::{ProviderSink, Steers}};
    /// let steers = Steers::default();
    /// let sink = ProviderSink::discard().with_steers(steers.clone());
    /// let offer = tokio::spawn(async move { steers.offer(EventId::new(), "in metric".into()) });
    /// assert_eq!(sink.wait_steered(std::time::Duration::from_secs(5)).await, ["in metric"]);
    /// # let _ = offer.await;
    /// # }
    /// ```
    pub async fn wait_steered(&self, within: std::time::Duration) -> Vec<String> {
        let Some(steers) = &self.steers else {
            return Vec::new();
        };
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let arrived = steers.0.arrived.notified();
            let taken = self.take_steered();
            if !taken.is_empty() {
                return taken;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.take_steered();
            }
        }
    }

    /// A sink that drops everything (for calling a provider directly).
    pub fn discard() -> Self {
        Self::new(|_| {})
    }

    /// Reports an event.
    pub fn emit(&self, event: ProviderEvent) {
        if let ProviderEvent::TextDelta(delta) = &event
            && let Ok(mut text) = self.text.lock()
        {
            text.push_str(delta);
        }
        (self.report)(event);
    }

    /// All text streamed so far.
    pub fn text(&self) -> String {
        self.text.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// Reports that the model called the client tool `name` (never run here; see
    /// [`ClientTool`](crate::ClientTool)).
    pub fn client_tool_called(&self, id: &str, name: &str, input: Value) {
        self.emit(ProviderEvent::ClientToolCalled {
            id: id.to_owned(),
            tool: name.to_owned(),
            input,
        });
    }

    /// Calls the tool `name` of `tools` for the model's call `id`, reporting the call (with the
    /// tool's [`server`](crate::Tool::server)) and its result; returns the output and whether
    /// it is an error. A failing or unknown tool is an error result the model will read.
    ///
    /// ```
    /// use openharness_core::{FnTool, adapter::{ProviderEvent, ProviderSink, Toolbox}};
    /// use std::sync::{Arc, Mutex};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Echo { text: String }
    /// let tools = Toolbox::new(vec![Arc::new(FnTool::new("echo", "Repeats.", |a: Echo| async move { Ok::<_, String>(a.text) }))]);
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = { let seen = seen.clone(); ProviderSink::new(move |e| seen.lock().unwrap().push(e)) };
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let (output, is_error) = sink.call_tool(&tools, "c1", "echo", serde_json::json!({ "text": "hi" })).await;
    /// assert_eq!((output, is_error), (serde_json::json!("hi"), false));
    /// assert!(matches!(&seen.lock().unwrap()[0], ProviderEvent::ToolCalled { server: None, .. }));
    /// assert!(sink.call_tool(&tools, "c2", "nope", serde_json::json!({})).await.1);
    /// # });
    /// ```
    pub async fn call_tool(
        &self,
        tools: &Toolbox,
        id: &str,
        name: &str,
        input: Value,
    ) -> (Value, bool) {
        self.emit(ProviderEvent::ToolCalled {
            id: id.to_owned(),
            tool: name.to_owned(),
            input: input.clone(),
            server: tools
                .get(name)
                .and_then(|tool| tool.server())
                .map(str::to_owned),
        });
        let (output, is_error) = match tools.call(name, input).await {
            Ok(output) => (output, false),
            Err(err) => (Value::String(err.message().to_owned()), true),
        };
        self.emit(ProviderEvent::ToolResult {
            id: id.to_owned(),
            tool: name.to_owned(),
            output: output.clone(),
            is_error,
        });
        (output, is_error)
    }
}

impl std::fmt::Debug for ProviderSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSink").finish_non_exhaustive()
    }
}

/// A model backend.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// A short name for errors and logs (`anthropic`, `scripted`, ...).
    fn name(&self) -> &str;

    /// The model it asks when a call names none (its configured default), when it has one:
    /// recorded in `agent:started` as the model the call asked, so a recording says which
    /// model answered it and an experiment's variant that names none asks the same. `None`
    /// (the default) for providers without a model of their own (scripted, cassettes).
    fn model(&self) -> Option<&str> {
        None
    }

    /// Runs one request: streams progress into `sink` and returns the output.
    ///
    /// Dropping the returned future must cancel the request promptly.
    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult;
}

/// What [`Provider::complete`] returns: the output, or why there is none.
///
/// ```
/// use async_trait::async_trait;
/// use openharness_core::adapter::{ProviderRequest, ProviderResult, ProviderSink};
/// use openharness_core::{Provider, ProviderError};
///
/// /// A provider for a machine with no network: every call fails, and says why.
/// struct Offline;
///
/// #[async_trait]
/// impl Provider for Offline {
///     fn name(&self) -> &str {
///         "offline"
///     }
///
///     async fn complete(&self, request: ProviderRequest, _sink: ProviderSink) -> ProviderResult {
///         Err(ProviderError::NoResponse {
///             agent: request.agent,
///             message: "this machine has no network".to_owned(),
///         })
///     }
/// }
/// # let _ = Offline;
/// ```
pub type ProviderResult = Result<ProviderResponse, ProviderError>;

/// A shared, type-erased provider.
pub type BoxedProvider = Arc<dyn Provider>;

/// A shared provider is a provider: one client (its connection pool, its credentials) serves
/// several workflows.
///
/// ```
/// use std::sync::Arc;
/// use openharness_core::{BoxedProvider, Provider};
///
/// fn same_name(shared: BoxedProvider) -> bool {
///     // `Workflow::builder(..).provider(Arc::clone(&shared))` takes it as it is.
///     Arc::clone(&shared).name() == shared.name()
/// }
/// # let _ = same_name;
/// ```
#[async_trait]
impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn model(&self) -> Option<&str> {
        (**self).model()
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        (**self).complete(request, sink).await
    }
}
