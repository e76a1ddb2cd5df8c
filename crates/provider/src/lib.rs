//! Model providers for Open Harness agents.
//!
//! * [`AnthropicProvider`]: the Anthropic Messages API (streaming, tools, structured output).
//! * [`OpenAiProvider`]: the OpenAI Chat Completions dialect, for OpenAI and compatible servers
//!   (vLLM, llama.cpp, Ollama, OpenRouter, LM Studio).
//! * [`ClaudeCliProvider`]: the `claude` CLI driven as a subprocess (stream-json).
//! * [`ScriptedProvider`]: a deterministic script, for tests and the offline demo.
//!
//! The HTTP providers share a tool loop bounded by the request's `max_turns` (every call
//! reported as `tool:called` / `tool:result`), retries with backoff that honour
//! `retry-after-ms` / `retry-after` ([`RetryPolicy`]), connect and idle-stream [`Timeouts`],
//! and keys that never print ([`ApiKey`]). Structured output is requested in each provider's
//! schema subset ([`schema`]) and validated by the runtime against the original schema.
//! `testing` (feature `testing`) has fake servers that speak each protocol, for tests without
//! a network.
//!
//! # Modules
//!
//! - [`anthropic`], [`openai`]: the HTTP providers, [`AnthropicProvider`] and [`OpenAiProvider`].
//! - [`claude_cli`]: [`ClaudeCliProvider`], the `claude` CLI as a subprocess.
//! - `scripted`: [`ScriptedProvider`] and its [`Reply`]s.
//! - `builder`: [`HttpBuilder`], the one builder of the HTTP providers (and how to add one).
//! - `http`: the HTTP layer they share: [`ApiKey`], [`Timeouts`], retried POSTs, SSE bodies.
//! - `conversation`: the tool loop they share, and each dialect's messages, written once.
//! - [`retry`]: [`RetryPolicy`], when to retry and how long to wait.
//! - [`schema`]: an output's JSON Schema cut to the subset each provider accepts.
//! - [`sse`]: a Server-Sent Events parser after the WHATWG rules.
//! - [`tools`]: built-in tools agents can offer their models.
//! - `pricing`: [`Pricing`], token counts into US dollars for `agent:completed`.
//! - `base_url`: a base URL checked once, when the provider is built.
//! - `testing` (feature `testing`): fake Anthropic and OpenAI servers, and a fake `claude`.
//!
//! ```
//! use openharness_core::{Provider, adapter::{ProviderRequest, ProviderSink}};
//! use openharness_provider::{Reply, ScriptedProvider};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let provider = ScriptedProvider::new()
//!     .respond("planner", Reply::output(json!({ "tasks": ["pack"] })).text("One task."));
//!
//! let request = ProviderRequest::new("planner", "plan a trip", Arc::new(json!({})));
//! let sink = ProviderSink::discard();
//! let response = provider.complete(request, sink.clone()).await.unwrap();
//! assert_eq!(response.output, json!({ "tasks": ["pack"] }));
//! assert_eq!(sink.text(), "One task.");
//! assert_eq!(provider.calls(), 1);
//! # });
//! ```

pub mod anthropic;
mod base_url;
mod builder;
pub mod claude_cli;
mod conversation;
mod http;
pub mod openai;
mod pricing;
pub mod retry;
pub mod schema;
mod scripted;
pub mod sse;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tools;

pub use anthropic::AnthropicProvider;
pub use builder::HttpBuilder;
pub use claude_cli::ClaudeCliProvider;
pub use http::{ApiKey, Timeouts, install_crypto_provider};
pub use openai::OpenAiProvider;
pub use pricing::Pricing;
pub use retry::RetryPolicy;
pub use scripted::{Reply, ScriptedProvider};

/// A provider that cannot be built as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The API key's environment variable is not set.
    #[error("no API key: set `{var}` (or run `openharness demo`, which needs no key)")]
    MissingApiKey {
        /// The variable to set.
        var: &'static str,
    },
    /// The base URL is not usable.
    #[error("invalid base URL `{url}`: {reason}")]
    BaseUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}
