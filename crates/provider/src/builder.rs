//! [`HttpBuilder`]: the one builder of the HTTP providers. What every HTTP provider is
//! configured with (key, base URL, model, system prompt, retry policy, timeouts, prices) and
//! how it becomes a client are written here once; each provider adds its own options (`O`)
//! and its `build` in its module.
//!
//! A new HTTP provider defines its options struct, a `pub type FooBuilder =
//! HttpBuilder<FooOptions>`, its option setters and `build` in an `impl HttpBuilder<FooOptions>`
//! block, and calls [`HttpBuilder::endpoint`] from `build`; the provider then holds the
//! [`Endpoint`] it returns, and each turn [`Endpoint::stream`]s one request.

use std::fmt;
use std::sync::Arc;

use openharness_core::ProviderError;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::ConfigError;
use crate::base_url;
use crate::http::{ApiKey, EventStream, Http, Timeouts};
use crate::pricing::Pricing;
use crate::retry::RetryPolicy;

/// Builds an HTTP provider: the settings they all share, set here, and the provider's own
/// options `O`, set by the methods its module adds. Made by the provider's `builder`
/// ([`AnthropicProvider::builder`](crate::AnthropicProvider::builder),
/// [`OpenAiProvider::builder`](crate::OpenAiProvider::builder)).
///
/// ```
/// use std::time::Duration;
/// use openharness_provider::{ApiKey, OpenAiProvider, RetryPolicy, Timeouts};
/// let provider = OpenAiProvider::builder(ApiKey::new("sk-..."))
///     .model("gpt-4.1")
///     .system("Answer in French.")
///     .retry(RetryPolicy::default().max_retries(4))
///     .timeouts(Timeouts { idle: Duration::from_secs(30), ..Timeouts::default() })
///     .build()
///     .unwrap();
/// # let _ = provider;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct HttpBuilder<O> {
    pub(crate) key: ApiKey,
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) system: Option<String>,
    pub(crate) retry: RetryPolicy,
    pub(crate) timeouts: Timeouts,
    pub(crate) pricing: Option<Pricing>,
    /// The provider's own options.
    pub(crate) options: O,
}

impl<O> HttpBuilder<O> {
    /// A builder with `key`, the provider's default base URL and model, the default retry
    /// policy and timeouts, no system prompt and no prices of its own.
    pub(crate) fn new(key: ApiKey, base_url: &str, model: &str, options: O) -> Self {
        Self {
            key,
            base_url: base_url.to_owned(),
            model: model.to_owned(),
            system: None,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            pricing: None,
            options,
        }
    }

    /// The API's base URL (the provider's `DEFAULT_BASE_URL` by default; its module says
    /// which path its requests go to under it).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// The default model (agents may name another).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// A system prompt sent with every request (before the request's own).
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// The retry policy (default: 2 retries).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Connect and idle timeouts.
    pub fn timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Prices for the cost on `agent:completed` (default: the provider's own; Anthropic's
    /// published prices for the models it knows, none for OpenAI-compatible servers, whose
    /// cost is then not reported).
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// For a provider's `build`: the base URL checked (without a trailing `/`) and followed by
    /// `path`, the HTTP client that retries and times out as set, named `provider` in its
    /// errors, and these settings, held together behind an `Arc` (so the provider is cheap to
    /// clone).
    pub(crate) fn endpoint(
        self,
        provider: &'static str,
        path: &str,
    ) -> Result<Arc<Endpoint<O>>, ConfigError> {
        let base = base_url::validate(&self.base_url)?;
        let url = format!("{base}{path}");
        let http = Http::new(provider, self.retry.clone(), self.timeouts)?;
        Ok(Arc::new(Endpoint {
            url,
            http,
            config: self,
        }))
    }
}

/// A built HTTP provider's connection: the URL its requests go to, the client that sends them
/// and the settings it was built with.
pub(crate) struct Endpoint<O> {
    pub(crate) url: String,
    pub(crate) http: Http,
    pub(crate) config: HttpBuilder<O>,
}

impl<O> Endpoint<O> {
    /// POSTs one turn's request, `body` with `messages` added, and returns its response read
    /// as Server-Sent Events.
    pub(crate) async fn stream(
        &self,
        headers: &HeaderMap,
        body: &serde_json::Map<String, Value>,
        messages: &[Value],
    ) -> Result<EventStream, ProviderError> {
        let mut body = body.clone();
        body.insert("messages".into(), Value::Array(messages.to_vec()));
        let response = self
            .http
            .post(&self.url, headers.clone(), &Value::Object(body))
            .await?;
        Ok(self.http.events(response))
    }

    /// The provider's `Debug`: `provider` with its URL, model and key (which prints redacted).
    pub(crate) fn debug(&self, provider: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(provider)
            .field("url", &self.url)
            .field("model", &self.config.model)
            .field("key", &self.config.key)
            .finish_non_exhaustive()
    }
}
