//! The HTTP layer shared by the HTTP providers: API keys that never print, a reqwest client
//! with connect and idle-stream timeouts, POSTs retried by [`RetryPolicy`], and a response body
//! read as Server-Sent Events.

use std::fmt;
use std::sync::Once;
use std::time::Duration;

use openharness_core::ProviderError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::ConfigError;
use crate::retry::RetryPolicy;
use crate::sse::{SseEvent, SseParser};

/// A secret API key. Its `Debug` output is redacted and it has no `Display`, so it cannot end
/// up in logs or error messages by accident.
///
/// ```
/// use openharness_provider::ApiKey;
/// let key = ApiKey::new("sk-ant-secret-123");
/// assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
/// assert_eq!(key.expose(), "sk-ant-secret-123");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Reads a key from an environment variable; `None` when it is unset or blank.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|k| !k.trim().is_empty())
            .map(|k| Self(k.trim().to_owned()))
    }

    /// For a provider's `from_env`: the key in `var`, or [`ConfigError::MissingApiKey`] naming
    /// the variable to set.
    pub(crate) fn require_env(var: &'static str) -> Result<Self, ConfigError> {
        Self::from_env(var).ok_or(ConfigError::MissingApiKey { var })
    }

    /// The key itself, to put in a request header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A header value holding `prefix` + the key, marked sensitive (so HTTP-level logging
    /// redacts it too).
    pub(crate) fn header(&self, prefix: &str) -> Result<HeaderValue, ProviderError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ProviderError::Failed {
                provider: "http".into(),
                message: "the API key contains characters that cannot go in an HTTP header".into(),
            }
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Timeouts for the HTTP providers.
///
/// ```
/// use openharness_provider::Timeouts;
/// use std::time::Duration;
/// let timeouts = Timeouts { idle: Duration::from_secs(30), ..Timeouts::default() };
/// assert_eq!(timeouts.connect, Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing a connection (default 10 s).
    pub connect: Duration,
    /// Waiting for response headers, and then for each new piece of a streamed body (default
    /// 120 s): a stream silent for longer fails.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(120),
        }
    }
}

/// A client for one provider: where, how long, how often.
#[derive(Clone)]
pub(crate) struct Http {
    pub(crate) provider: &'static str,
    client: reqwest::Client,
    retry: RetryPolicy,
    timeouts: Timeouts,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("retry", &self.retry)
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

/// Makes ring the process's rustls crypto provider (reqwest is built without one), unless the
/// application installed another first. The providers call it; call it before building a
/// `reqwest` client of your own in a program that uses this crate's.
///
/// ```
/// openharness_provider::install_crypto_provider();
/// let client = reqwest::Client::builder().build();
/// assert!(client.is_ok());
/// ```
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // `Err` means another thread installed one meanwhile, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

impl Http {
    pub(crate) fn new(
        provider: &'static str,
        retry: RetryPolicy,
        timeouts: Timeouts,
    ) -> Result<Self, ConfigError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.idle)
            .build()
            .map_err(|err| ConfigError::Client(describe(&err)))?;
        Ok(Self {
            provider,
            client,
            retry,
            timeouts,
        })
    }

    fn failed(&self, message: impl Into<String>) -> ProviderError {
        ProviderError::Failed {
            provider: self.provider.into(),
            message: message.into(),
        }
    }

    /// POSTs `body` as JSON, retrying per the policy, and returns the successful response
    /// (its body not yet read), which must be an event stream. A final failure is
    /// [`ProviderError::Api`] with the API's message, or [`ProviderError::Failed`] for a
    /// transport failure or a 200 that is not `text/event-stream` (a gateway's `{"error": …}`,
    /// say: its message is kept, and it is not retried).
    pub(crate) async fn post(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &Value,
    ) -> Result<reqwest::Response, ProviderError> {
        let body = serde_json::to_vec(body)
            .map_err(|err| self.failed(format!("could not encode the request: {err}")))?;
        let mut retry = 0;
        loop {
            let sent = tokio::time::timeout(
                self.timeouts.idle,
                self.client
                    .post(url)
                    .headers(headers.clone())
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone())
                    .send(),
            )
            .await;
            let (delay, error) = match sent {
                Ok(Ok(response)) if response.status().is_success() => {
                    return self.event_stream(response).await;
                }
                Ok(Ok(response)) => {
                    let status = response.status().as_u16();
                    let response_headers = response.headers().clone();
                    let text = read_error_body(response, self.timeouts.idle).await;
                    let error = ProviderError::Api {
                        provider: self.provider.into(),
                        status,
                        message: error_message(&text),
                    };
                    if !RetryPolicy::should_retry(status, &response_headers) {
                        return Err(error);
                    }
                    (self.retry.delay(retry, &response_headers), error)
                }
                Ok(Err(err)) => {
                    let error = self.failed(format!("the request failed: {}", describe(&err)));
                    if !(err.is_connect() || err.is_timeout() || err.is_request()) {
                        return Err(error);
                    }
                    (self.retry.delay(retry, &HeaderMap::new()), error)
                }
                Err(_) => (
                    self.retry.delay(retry, &HeaderMap::new()),
                    self.failed(format!(
                        "no response within {:?} (the idle timeout)",
                        self.timeouts.idle
                    )),
                ),
            };
            if retry >= self.retry.max_retries {
                return Err(error);
            }
            retry += 1;
            tracing::info!(provider = self.provider, %error, retry, ?delay, "retrying");
            tokio::time::sleep(delay).await;
        }
    }

    /// `response` itself when its content type says it is an event stream; otherwise an error
    /// holding what the body said (`error.message` when it is JSON, else its first 500 characters),
    /// instead of reading it as a stream and calling it cut mid-message.
    async fn event_stream(
        &self,
        response: reqwest::Response,
    ) -> Result<reqwest::Response, ProviderError> {
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let is_stream = content_type.as_deref().is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("text/event-stream"))
        });
        if is_stream {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let text = read_error_body(response, self.timeouts.idle).await;
        Err(self.failed(format!(
            "HTTP {status} with content type `{}` instead of an event stream: {}",
            content_type.as_deref().unwrap_or("(none)"),
            error_message(&text)
        )))
    }

    /// Reads `response`'s body as Server-Sent Events.
    pub(crate) fn events(&self, response: reqwest::Response) -> EventStream {
        EventStream {
            provider: self.provider,
            response,
            parser: SseParser::new(),
            ready: std::collections::VecDeque::new(),
            idle: self.timeouts.idle,
            ended: false,
        }
    }
}

/// A reqwest error with its sources, which carry the useful part ("connection refused").
fn describe(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

async fn read_error_body(response: reqwest::Response, idle: Duration) -> String {
    match tokio::time::timeout(idle, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    }
}

/// The human part of an error body: `error.message` (and `error.type`) for the Anthropic and
/// OpenAI shapes, else the text itself, shortened.
fn error_message(body: &str) -> String {
    if let Ok(json) = serde_json::from_str::<Value>(body) {
        let error = &json["error"];
        let message = error["message"].as_str().or_else(|| error.as_str());
        if let Some(message) = message {
            return match error["type"].as_str() {
                Some(kind) => format!("{kind}: {message}"),
                None => message.to_owned(),
            };
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return "(empty body)".into();
    }
    let mut short: String = trimmed.chars().take(500).collect();
    if short.len() < trimmed.len() {
        short.push('…');
    }
    short
}

/// A response body read as SSE, one event at a time, with the idle timeout on every read.
pub(crate) struct EventStream {
    provider: &'static str,
    response: reqwest::Response,
    parser: SseParser,
    ready: std::collections::VecDeque<SseEvent>,
    idle: Duration,
    ended: bool,
}

impl EventStream {
    /// The next event; `None` at the end of the body. A transport failure (a cut connection)
    /// or a silence longer than the idle timeout is an error.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if self.ended {
                return Ok(None);
            }
            let chunk = tokio::time::timeout(self.idle, self.response.chunk())
                .await
                .map_err(|_| ProviderError::Failed {
                    provider: self.provider.into(),
                    message: format!(
                        "the stream was silent for {:?} (the idle timeout)",
                        self.idle
                    ),
                })?
                .map_err(|err| ProviderError::Failed {
                    provider: self.provider.into(),
                    message: format!("the stream broke: {}", describe(&err)),
                })?;
            match chunk {
                Some(bytes) => {
                    let events = self
                        .parser
                        .push(&bytes)
                        .map_err(|err| ProviderError::Failed {
                            provider: self.provider.into(),
                            message: err.to_string(),
                        })?;
                    self.ready.extend(events);
                }
                None => self.ended = true,
            }
        }
    }
}

/// Builds a header map from static names and values.
pub(crate) fn header(
    headers: &mut HeaderMap,
    name: &'static str,
    value: &str,
) -> Result<(), ProviderError> {
    let value = HeaderValue::from_str(value).map_err(|_| ProviderError::Failed {
        provider: "http".into(),
        message: format!("the value of header `{name}` is not valid in HTTP"),
    })?;
    headers.insert(HeaderName::from_static(name), value);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_either_error_shape() {
        let anthropic = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_1"}"#;
        assert_eq!(error_message(anthropic), "rate_limit_error: slow down");
        let llama = r#"{"error":{"code":400,"message":"bad"}}"#;
        assert_eq!(error_message(llama), "bad");
        assert_eq!(error_message("<html>502</html>"), "<html>502</html>");
        assert_eq!(error_message(""), "(empty body)");
    }
}
