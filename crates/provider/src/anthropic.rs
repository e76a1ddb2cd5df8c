//! [`AnthropicProvider`]: the Anthropic Messages API, streamed over Server-Sent Events.
//!
//! Text deltas are reported as they arrive; tool calls are collected from `input_json_delta`
//! fragments and parsed at `content_block_stop`; usage is read from `message_start` and the
//! cumulative `message_delta`. Structured output goes through `output_config.format` with the
//! schema transformed to Anthropic's subset ([`crate::schema::for_anthropic`]); schemas the
//! subset cannot express (recursion, maps) fall back to the forced-tool method, which takes the
//! original schema; a request for plain text (a `String` output) sends neither, and its final
//! text is the output. The request's system prompt goes in `system` (after the builder's), its
//! conversation in `messages` with roles alternating (consecutive messages of one role merged),
//! then its prompt as the last user message. An `error` event inside a 200 stream, a stream cut
//! before `message_stop` and malformed event data all fail the request with a message that
//! says which. A message that
//! stops with `stop_reason: "refusal"` is [`ProviderError::Refused`] with the text it streamed.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::{
    Provider, ProviderError,
    adapter::{ProviderEvent, ProviderRequest, ProviderResult, ProviderSink, Usage},
};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::builder::{Endpoint, HttpBuilder};
use crate::conversation::{self, Dialect, ToolCall, ToolOutcome, Turn};
use crate::http::{ApiKey, header};
use crate::pricing::Pricing;
use crate::schema;
use crate::{ConfigError, sse::SseEvent};

const NAME: &str = "anthropic";

/// The public API's address.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The model used when neither the agent nor the builder names one.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";

/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// The beta header of the older structured-output request shape.
pub const STRUCTURED_OUTPUTS_BETA: &str = "structured-outputs-2025-11-13";

/// The tool that carries the output in the forced-tool method.
pub const OUTPUT_TOOL: &str = "structured_output";

/// How structured output is requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OutputMethod {
    /// `output_config.format` with the transformed schema, or the forced tool when the schema
    /// cannot be transformed (the default).
    #[default]
    Auto,
    /// Always `output_config.format` (fails for schemas outside Anthropic's subset).
    OutputConfig,
    /// The older beta shape: top-level `output_format` plus the `anthropic-beta` header.
    BetaOutputFormat,
    /// Always the forced tool (`tool_choice` names the output tool), for models without
    /// structured outputs.
    ForcedTool,
}

/// Builds an [`AnthropicProvider`]: the settings every HTTP provider shares (see
/// [`HttpBuilder`]) and Anthropic's own, [`max_tokens`](HttpBuilder::max_tokens) and
/// [`structured_output`](HttpBuilder::structured_output). Requests go to
/// `{base_url}/v1/messages`.
///
/// ```
/// use openharness_provider::{AnthropicProvider, ApiKey, RetryPolicy};
/// let provider = AnthropicProvider::builder(ApiKey::new("sk-ant-..."))
///     .model("claude-haiku-4-5")
///     .max_tokens(2048)
///     .retry(RetryPolicy::default().max_retries(4))
///     .build()
///     .unwrap();
/// assert_eq!(format!("{provider:?}").contains("sk-ant"), false);
/// ```
pub type AnthropicBuilder = HttpBuilder<AnthropicOptions>;

/// Anthropic's own options, set on an [`AnthropicBuilder`].
#[derive(Debug, Clone)]
pub struct AnthropicOptions {
    max_tokens: u32,
    structured: OutputMethod,
}

impl HttpBuilder<AnthropicOptions> {
    /// `max_tokens` of every request (default 4096).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.options.max_tokens = max_tokens;
        self
    }

    /// How structured output is requested (default [`OutputMethod::Auto`]).
    pub fn structured_output(mut self, mode: OutputMethod) -> Self {
        self.options.structured = mode;
        self
    }

    /// Builds the provider.
    pub fn build(self) -> Result<AnthropicProvider, ConfigError> {
        Ok(AnthropicProvider {
            inner: self.endpoint(NAME, "/v1/messages")?,
        })
    }
}

/// The Anthropic Messages API as a [`Provider`]. Cheap to clone.
///
/// ```no_run
/// use openharness_provider::AnthropicProvider;
/// # fn main() -> Result<(), openharness_provider::ConfigError> {
/// // Reads ANTHROPIC_API_KEY.
/// let provider = AnthropicProvider::from_env()?;
/// # let _ = provider; Ok(()) }
/// ```
#[derive(Clone)]
pub struct AnthropicProvider {
    inner: Arc<Endpoint<AnthropicOptions>>,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.debug("AnthropicProvider", f)
    }
}

impl AnthropicProvider {
    /// The environment variable [`AnthropicProvider::from_env`] reads.
    pub const KEY_VAR: &'static str = "ANTHROPIC_API_KEY";

    /// A builder with the defaults.
    pub fn builder(key: ApiKey) -> AnthropicBuilder {
        let options = AnthropicOptions {
            max_tokens: 4096,
            structured: OutputMethod::Auto,
        };
        HttpBuilder::new(key, DEFAULT_BASE_URL, DEFAULT_MODEL, options)
    }

    /// A provider with the defaults and the key from `ANTHROPIC_API_KEY`.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::builder(ApiKey::require_env(Self::KEY_VAR)?).build()
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> Option<&str> {
        Some(&self.inner.config.model)
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let mut dialect = AnthropicTurns::new(&self.inner, &request)?;
        conversation::run(NAME, &mut dialect, &request, &sink).await
    }
}

/// One request's conversation with the Messages API.
struct AnthropicTurns<'a> {
    inner: &'a Endpoint<AnthropicOptions>,
    /// The request body without `messages`.
    body: serde_json::Map<String, Value>,
    messages: Vec<Value>,
    headers: HeaderMap,
    forced_tool: bool,
    pricing: Option<Pricing>,
}

impl<'a> AnthropicTurns<'a> {
    fn new(
        inner: &'a Endpoint<AnthropicOptions>,
        request: &ProviderRequest,
    ) -> Result<Self, ProviderError> {
        let config = &inner.config;
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| config.model.clone());
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", config.key.header("")?);
        header(&mut headers, "anthropic-version", API_VERSION)?;

        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(model));
        body.insert("max_tokens".into(), json!(config.options.max_tokens));
        body.insert("stream".into(), json!(true));
        if let Some(system) = conversation::system_prompt(config.system.as_deref(), request) {
            body.insert("system".into(), json!(system));
        }
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name(),
                    "description": tool.description(),
                    "input_schema": tool_schema(tool.input_schema()),
                })
            })
            .collect();

        // Plain text is asked for with no format at all (`None`).
        let mode = (!request.wants_text()).then(|| {
            let transformed = schema::for_anthropic(&request.schema);
            let mode = match (config.options.structured, &transformed) {
                (OutputMethod::Auto, Ok(_)) => OutputMethod::OutputConfig,
                (OutputMethod::Auto, Err(err)) => {
                    tracing::debug!(agent = %request.agent, %err, "using the forced-tool method");
                    OutputMethod::ForcedTool
                }
                (mode, _) => mode,
            };
            (mode, transformed)
        });
        let forced_tool = matches!(mode, Some((OutputMethod::ForcedTool, _)));
        match mode {
            None => {}
            Some((OutputMethod::ForcedTool, _)) => {
                tools.push(json!({
                    "name": OUTPUT_TOOL,
                    "description": "Return the final answer. Call this exactly once, with the complete answer as its input.",
                    "input_schema": tool_schema((*request.schema).clone()),
                }));
                let choice = if request.tools.is_empty() {
                    json!({ "type": "tool", "name": OUTPUT_TOOL })
                } else {
                    json!({ "type": "any" })
                };
                body.insert("tool_choice".into(), choice);
            }
            Some((mode, transformed)) => {
                let schema = transformed.map_err(|err| ProviderError::Failed {
                    provider: NAME.into(),
                    message: format!("agent `{}`: {err}", request.agent),
                })?;
                let format = json!({ "type": "json_schema", "schema": schema });
                if mode == OutputMethod::BetaOutputFormat {
                    header(&mut headers, "anthropic-beta", STRUCTURED_OUTPUTS_BETA)?;
                    body.insert("output_format".into(), format);
                } else {
                    body.insert("output_config".into(), json!({ "format": format }));
                }
            }
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(effort) = request.reasoning {
            let output_config = body.entry("output_config").or_insert_with(|| json!({}));
            if let Some(config) = output_config.as_object_mut() {
                config.insert("effort".into(), json!(effort.as_str()));
            }
        }
        let pricing = config.pricing.or_else(|| Pricing::anthropic(&model));
        Ok(Self {
            inner,
            body,
            messages: conversation::anthropic_messages(request),
            headers,
            forced_tool,
            pricing,
        })
    }

    fn failed(message: impl Into<String>) -> ProviderError {
        ProviderError::Failed {
            provider: NAME.into(),
            message: message.into(),
        }
    }
}

/// A tool's input schema as the API wants it: an object schema without `$schema`.
fn tool_schema(mut schema: Value) -> Value {
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.entry("type").or_insert_with(|| json!("object"));
    }
    schema
}

/// A content block being streamed.
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

#[async_trait]
impl Dialect for AnthropicTurns<'_> {
    async fn turn(&mut self, sink: &ProviderSink) -> Result<Turn, ProviderError> {
        let mut events = self
            .inner
            .stream(&self.headers, &self.body, &self.messages)
            .await?;
        let mut blocks: BTreeMap<u64, Block> = BTreeMap::new();
        let mut turn = Turn::default();
        let mut stopped = false;
        while let Some(event) = events.next().await? {
            let data = parse_data(&event)?;
            match event.event.as_str() {
                "message_start" => {
                    read_usage(&data["message"]["usage"], &mut turn.usage);
                }
                "content_block_start" => {
                    let index = data["index"].as_u64().unwrap_or(0);
                    let block = &data["content_block"];
                    let started = match block["type"].as_str() {
                        Some("text") => {
                            let text = block["text"].as_str().unwrap_or_default().to_owned();
                            if !text.is_empty() {
                                sink.emit(ProviderEvent::TextDelta(text.clone()));
                            }
                            Block::Text(text)
                        }
                        Some("tool_use") => Block::ToolUse {
                            id: block["id"].as_str().unwrap_or_default().to_owned(),
                            name: block["name"].as_str().unwrap_or_default().to_owned(),
                            json: String::new(),
                        },
                        _ => Block::Other,
                    };
                    blocks.insert(index, started);
                }
                "content_block_delta" => {
                    let index = data["index"].as_u64().unwrap_or(0);
                    let delta = &data["delta"];
                    match (blocks.get_mut(&index), delta["type"].as_str()) {
                        (Some(Block::Text(text)), Some("text_delta")) => {
                            let piece = delta["text"].as_str().unwrap_or_default();
                            text.push_str(piece);
                            if !piece.is_empty() {
                                sink.emit(ProviderEvent::TextDelta(piece.to_owned()));
                            }
                        }
                        (Some(Block::ToolUse { json, .. }), Some("input_json_delta")) => {
                            json.push_str(delta["partial_json"].as_str().unwrap_or_default());
                        }
                        _ => {} // thinking, signatures, citations, unknown deltas
                    }
                }
                "content_block_stop" => {
                    let index = data["index"].as_u64().unwrap_or(0);
                    match blocks.remove(&index) {
                        Some(Block::Text(text)) => turn.text.push_str(&text),
                        Some(Block::ToolUse { id, name, json }) => {
                            let input = if json.trim().is_empty() {
                                json!({})
                            } else {
                                serde_json::from_str(&json).map_err(|err| {
                                    Self::failed(format!(
                                        "the input of tool call `{id}` (`{name}`) is not valid JSON: {err}"
                                    ))
                                })?
                            };
                            turn.calls.push(ToolCall { id, name, input });
                        }
                        _ => {}
                    }
                }
                "message_delta" => {
                    if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                        turn.stop_reason = Some(reason.to_owned());
                    }
                    read_usage(&data["usage"], &mut turn.usage);
                }
                "message_stop" => {
                    stopped = true;
                    break;
                }
                "error" => {
                    let error = &data["error"];
                    return Err(Self::failed(format!(
                        "the stream reported an error: {}: {}",
                        error["type"].as_str().unwrap_or("error"),
                        error["message"].as_str().unwrap_or("(no message)")
                    )));
                }
                _ => {} // ping and event types added later
            }
        }
        if !stopped {
            return Err(Self::failed(
                "the stream ended before `message_stop`: the response was cut mid-message",
            ));
        }
        if turn.stop_reason.as_deref() == Some("refusal") {
            // Whatever text came before the refusal is all the model said about it.
            let text = turn.text.trim();
            return Err(ProviderError::Refused {
                provider: NAME.into(),
                message: if text.is_empty() {
                    "the model stopped with stop_reason `refusal`".into()
                } else {
                    text.to_owned()
                },
            });
        }
        Ok(turn)
    }

    fn push_results(&mut self, turn: &Turn, outcomes: &[ToolOutcome]) {
        let content = conversation::anthropic_assistant(&turn.text, &turn.calls);
        self.messages
            .push(json!({ "role": "assistant", "content": content }));
        let results: Vec<Value> = outcomes
            .iter()
            .map(|outcome| {
                conversation::anthropic_tool_result(
                    &outcome.call.id,
                    &outcome.content(),
                    outcome.is_error,
                )
            })
            .collect();
        self.messages
            .push(json!({ "role": "user", "content": results }));
    }

    /// Joins the last message when it is the user's (tool results, or the prompt), as the
    /// conversation's roles alternate.
    fn push_user(&mut self, text: &str) {
        let block = json!({ "type": "text", "text": text });
        match self.messages.last_mut() {
            Some(last) if last["role"] == "user" => match &mut last["content"] {
                Value::Array(blocks) => blocks.push(block),
                content => {
                    let earlier =
                        json!({ "type": "text", "text": content.as_str().unwrap_or_default() });
                    *content = json!([earlier, block]);
                }
            },
            _ => self
                .messages
                .push(json!({ "role": "user", "content": [block] })),
        }
    }

    fn output_tool(&self) -> Option<&str> {
        self.forced_tool.then_some(OUTPUT_TOOL)
    }

    fn cost(&self, usage: &Usage) -> Option<f64> {
        self.pricing.map(|p| p.cost(usage))
    }
}

fn parse_data(event: &SseEvent) -> Result<Value, ProviderError> {
    serde_json::from_str(&event.data).map_err(|err| ProviderError::Failed {
        provider: NAME.into(),
        message: format!(
            "malformed stream: the data of event `{}` is not JSON ({err})",
            event.event
        ),
    })
}

/// Reads Anthropic's usage fields; those present replace what was read before (the counts in
/// `message_delta` are cumulative).
fn read_usage(usage: &Value, into: &mut Usage) {
    let field = |name: &str| usage.get(name).and_then(Value::as_u64);
    if let Some(n) = field("input_tokens") {
        into.input_tokens = n;
    }
    if let Some(n) = field("output_tokens") {
        into.output_tokens = n;
    }
    if let Some(n) = field("cache_read_input_tokens") {
        into.cache_read_tokens = n;
    }
    if let Some(n) = field("cache_creation_input_tokens") {
        into.cache_creation_tokens = n;
    }
}
