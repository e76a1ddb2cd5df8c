//! [`OpenAiProvider`]: the Chat Completions dialect, streamed, for OpenAI and the servers that
//! speak it (vLLM, llama.cpp, Ollama's `/v1`, OpenRouter, LM Studio).
//!
//! `data:`-only SSE ending in `data: [DONE]`; text from `delta.content`; tool calls assembled
//! from fragments keyed by `index` (only the first fragment carries `id` and `name`); usage from
//! the final `choices: []` chunk (`stream_options.include_usage`). Structured output is
//! `response_format` json_schema, strict with the schema transformed by
//! [`crate::schema::for_openai_strict`], or non-strict with the original schema when it cannot
//! be made strict; a request for plain text (a `String` output) sends no `response_format`,
//! and its final text is the output. Messages: `system` (the builder's, then the request's),
//! the request's conversation (user, assistant with `tool_calls`, `tool`), then its prompt as
//! the last user message. A `data: {"error": …}` line fails the request; so does a stream that ends
//! before `[DONE]` without a `finish_reason`. Text streamed in `delta.refusal` makes the
//! request [`ProviderError::Refused`] with that text.

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

use crate::ConfigError;
use crate::builder::{Endpoint, HttpBuilder};
use crate::conversation::{self, Dialect, ToolCall, ToolOutcome, Turn};
use crate::http::ApiKey;
use crate::schema;

const NAME: &str = "openai";

/// OpenAI's API address (the base URL includes `/v1`).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The model used when neither the agent nor the builder names one.
pub const DEFAULT_MODEL: &str = "gpt-4.1-mini";

/// Builds an [`OpenAiProvider`]: the settings every HTTP provider shares (see
/// [`HttpBuilder`]; here the base URL includes `/v1`, and requests go to
/// `{base_url}/chat/completions`) and OpenAI's own, [`strict`](HttpBuilder::strict).
///
/// ```
/// use openharness_provider::{ApiKey, OpenAiProvider};
/// // A local Ollama server: the key is required by the protocol but ignored.
/// let provider = OpenAiProvider::builder(ApiKey::new("ollama"))
///     .base_url("http://localhost:11434/v1")
///     .model("llama3.2")
///     .build()
///     .unwrap();
/// # let _ = provider;
/// ```
pub type OpenAiBuilder = HttpBuilder<OpenAiOptions>;

/// OpenAI's own options, set on an [`OpenAiBuilder`].
#[derive(Debug, Clone)]
pub struct OpenAiOptions {
    strict: bool,
}

impl HttpBuilder<OpenAiOptions> {
    /// Whether to ask for strict structured output (default true); servers that reject
    /// `strict` can turn it off.
    pub fn strict(mut self, strict: bool) -> Self {
        self.options.strict = strict;
        self
    }

    /// Builds the provider.
    pub fn build(self) -> Result<OpenAiProvider, ConfigError> {
        Ok(OpenAiProvider {
            inner: self.endpoint(NAME, "/chat/completions")?,
        })
    }
}

/// The Chat Completions API as a [`Provider`]. Cheap to clone.
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Endpoint<OpenAiOptions>>,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.debug("OpenAiProvider", f)
    }
}

impl OpenAiProvider {
    /// The environment variable [`OpenAiProvider::from_env`] reads.
    pub const KEY_VAR: &'static str = "OPENAI_API_KEY";

    /// A builder with the defaults.
    pub fn builder(key: ApiKey) -> OpenAiBuilder {
        HttpBuilder::new(
            key,
            DEFAULT_BASE_URL,
            DEFAULT_MODEL,
            OpenAiOptions { strict: true },
        )
    }

    /// A provider with the defaults and the key from `OPENAI_API_KEY`.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::builder(ApiKey::require_env(Self::KEY_VAR)?).build()
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn model(&self) -> Option<&str> {
        Some(&self.inner.config.model)
    }

    async fn complete(&self, request: ProviderRequest, sink: ProviderSink) -> ProviderResult {
        let mut dialect = OpenAiTurns::new(&self.inner, &request)?;
        conversation::run(NAME, &mut dialect, &request, &sink).await
    }
}

struct OpenAiTurns<'a> {
    inner: &'a Endpoint<OpenAiOptions>,
    body: serde_json::Map<String, Value>,
    messages: Vec<Value>,
    headers: HeaderMap,
    /// The original schema, when the strict form made optional fields nullable.
    strict_schema_of: Option<Value>,
}

/// A name for `response_format`: `[a-zA-Z0-9_-]`, at most 64 characters.
fn format_name(agent: &str) -> String {
    let name: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "output".into()
    } else {
        name
    }
}

/// The `response_format` of a structured request: json_schema, strict with the schema
/// transformed when `strict` is on and the schema can be made strict, else non-strict with the
/// original schema; and the original schema when the strict form made optional fields
/// nullable (to undo that in the output).
fn response_format(strict: bool, request: &ProviderRequest) -> (Value, Option<Value>) {
    let strict = if strict {
        schema::for_openai_strict(&request.schema)
            .inspect_err(|err| tracing::debug!(agent = %request.agent, %err, "sending the schema non-strict"))
            .ok()
    } else {
        None
    };
    let strict_schema_of = strict.is_some().then(|| (*request.schema).clone());
    let mut json_schema = json!({ "name": format_name(&request.agent) });
    match strict {
        Some(schema) => {
            json_schema["strict"] = json!(true);
            json_schema["schema"] = schema;
        }
        None => {
            let mut schema = (*request.schema).clone();
            if let Some(object) = schema.as_object_mut() {
                object.remove("$schema");
            }
            json_schema["strict"] = json!(false);
            json_schema["schema"] = schema;
        }
    }
    (
        json!({ "type": "json_schema", "json_schema": json_schema }),
        strict_schema_of,
    )
}

impl<'a> OpenAiTurns<'a> {
    fn new(
        inner: &'a Endpoint<OpenAiOptions>,
        request: &ProviderRequest,
    ) -> Result<Self, ProviderError> {
        let config = &inner.config;
        let mut headers = HeaderMap::new();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            config.key.header("Bearer ")?,
        );
        let model = request
            .model
            .clone()
            .unwrap_or_else(|| config.model.clone());
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(model));
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({ "include_usage": true }));
        if let Some(effort) = request.reasoning {
            body.insert("reasoning_effort".into(), json!(effort.as_str()));
        }

        // Plain text is asked for with no `response_format` (text is the default).
        let strict_schema_of = if request.wants_text() {
            None
        } else {
            let (format, strict_schema_of) = response_format(config.options.strict, request);
            body.insert("response_format".into(), format);
            strict_schema_of
        };
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    let mut parameters = tool.input_schema();
                    if let Some(object) = parameters.as_object_mut() {
                        object.remove("$schema");
                    }
                    json!({
                        "type": "function",
                        "function": {
                            "name": tool.name(),
                            "description": tool.description(),
                            "parameters": parameters,
                        }
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        let messages = conversation::openai_messages(config.system.as_deref(), request);
        Ok(Self {
            inner,
            body,
            messages,
            headers,
            strict_schema_of,
        })
    }

    fn failed(message: impl Into<String>) -> ProviderError {
        ProviderError::Failed {
            provider: NAME.into(),
            message: message.into(),
        }
    }
}

/// A tool call being assembled from fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

#[async_trait]
impl Dialect for OpenAiTurns<'_> {
    async fn turn(&mut self, sink: &ProviderSink) -> Result<Turn, ProviderError> {
        let mut events = self
            .inner
            .stream(&self.headers, &self.body, &self.messages)
            .await?;
        let mut turn = Turn::default();
        let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
        let mut done = false;
        let mut refusal = String::new();
        while let Some(event) = events.next().await? {
            if event.data.trim() == "[DONE]" {
                done = true;
                break;
            }
            let chunk: Value = serde_json::from_str(&event.data).map_err(|err| {
                Self::failed(format!("malformed stream: a chunk is not JSON ({err})"))
            })?;
            if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
                let message = error["message"]
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned);
                return Err(Self::failed(format!(
                    "the stream reported an error: {message}"
                )));
            }
            if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
                let prompt = usage["prompt_tokens"].as_u64().unwrap_or(0);
                let cached = usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0);
                turn.usage = Usage {
                    input_tokens: prompt.saturating_sub(cached),
                    output_tokens: usage["completion_tokens"].as_u64().unwrap_or(0),
                    cache_read_tokens: cached,
                    cache_creation_tokens: 0,
                };
            }
            let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
                continue;
            };
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str()
                && !text.is_empty()
            {
                turn.text.push_str(text);
                sink.emit(ProviderEvent::TextDelta(text.to_owned()));
            }
            if let Some(piece) = delta["refusal"].as_str() {
                refusal.push_str(piece);
            }
            if let Some(fragments) = delta["tool_calls"].as_array() {
                for fragment in fragments {
                    let index = fragment["index"].as_u64().unwrap_or(0);
                    let call = calls.entry(index).or_default();
                    if let Some(id) = fragment["id"].as_str() {
                        call.id = id.to_owned();
                    }
                    let function = &fragment["function"];
                    // OpenAI sends the name once; some compatible servers repeat the whole
                    // name in every fragment, which must not double it.
                    if let Some(name) = function["name"].as_str()
                        && call.name != name
                    {
                        call.name.push_str(name);
                    }
                    if let Some(arguments) = function["arguments"].as_str() {
                        call.arguments.push_str(arguments);
                    }
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                turn.stop_reason = Some(reason.to_owned());
            }
        }
        if !done && turn.stop_reason.is_none() {
            return Err(Self::failed(
                "the stream ended before `[DONE]` and without a finish_reason: the response was cut mid-message",
            ));
        }
        if !refusal.is_empty() {
            return Err(ProviderError::Refused {
                provider: NAME.into(),
                message: refusal,
            });
        }
        for (index, call) in calls {
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|err| {
                    Self::failed(format!(
                        "the arguments of tool call {index} (`{}`) are not valid JSON: {err}",
                        call.name
                    ))
                })?
            };
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            turn.calls.push(ToolCall {
                id,
                name: call.name,
                input,
            });
        }
        Ok(turn)
    }

    fn push_results(&mut self, turn: &Turn, outcomes: &[ToolOutcome]) {
        self.messages
            .push(conversation::openai_assistant(&turn.text, &turn.calls));
        self.messages.extend(
            outcomes.iter().map(|outcome| {
                conversation::openai_tool_result(&outcome.call.id, &outcome.content())
            }),
        );
    }

    fn push_user(&mut self, text: &str) {
        self.messages
            .push(json!({ "role": "user", "content": text }));
    }

    fn finish_output(&self, mut output: Value) -> Value {
        if let Some(original) = &self.strict_schema_of {
            schema::remove_optional_nulls(original, &mut output);
        }
        output
    }

    fn cost(&self, usage: &Usage) -> Option<f64> {
        self.inner.config.pricing.map(|p| p.cost(usage))
    }
}
