//! [`RetryPolicy`]: when to retry a failed HTTP request and how long to wait first.
//!
//! The rules are those of the official Anthropic and OpenAI SDKs: an `x-should-retry: true|false`
//! response header decides; otherwise 408, 409, 429 and every status from 500 up (Anthropic's
//! 529 included) are retried, as are connection failures. The wait is `retry-after-ms` if the
//! server sent it, else `retry-after` (seconds or an HTTP date), else exponential backoff with
//! jitter: `min(initial · 2ⁿ, max) · (1 − 0.25 · random)`. A server-given wait is honoured
//! only when it is positive and at most [`RetryPolicy::max_server_delay`].

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use reqwest::header::HeaderMap;

/// How many times to retry and how long to wait.
///
/// ```
/// use openharness_provider::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::default()
///     .max_retries(4)
///     .backoff(Duration::from_millis(200), Duration::from_secs(5));
/// assert_eq!(policy.max_retries, 4);
/// assert!(RetryPolicy::is_retryable_status(529));
/// assert!(!RetryPolicy::is_retryable_status(400));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt (default 2).
    pub max_retries: u32,
    /// The first backoff delay (default 0.5 s).
    pub initial_delay: Duration,
    /// The largest backoff delay (default 8 s).
    pub max_delay: Duration,
    /// The largest wait a `retry-after`/`retry-after-ms` header is honoured for (default 60 s);
    /// longer or non-positive values fall back to backoff.
    pub max_server_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_server_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> Self {
        Self::default().max_retries(0)
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the backoff range.
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_delay = initial;
        self.max_delay = max.max(initial);
        self
    }

    /// Sets the largest server-given wait that is honoured.
    #[must_use]
    pub fn max_server_delay(mut self, max: Duration) -> Self {
        self.max_server_delay = max;
        self
    }

    /// Whether a status is worth retrying when the server gave no `x-should-retry`.
    pub fn is_retryable_status(status: u16) -> bool {
        matches!(status, 408 | 409 | 429) || status >= 500
    }

    /// Whether a response with this status and these headers should be retried.
    ///
    /// ```
    /// use openharness_provider::RetryPolicy;
    /// use reqwest::header::{HeaderMap, HeaderValue};
    ///
    /// let mut headers = HeaderMap::new();
    /// assert!(RetryPolicy::should_retry(503, &headers));
    /// headers.insert("x-should-retry", HeaderValue::from_static("false"));
    /// assert!(!RetryPolicy::should_retry(503, &headers));
    /// headers.insert("x-should-retry", HeaderValue::from_static("true"));
    /// assert!(RetryPolicy::should_retry(400, &headers));
    /// ```
    pub fn should_retry(status: u16, headers: &HeaderMap) -> bool {
        match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
            Some("true") => true,
            Some("false") => false,
            _ => Self::is_retryable_status(status),
        }
    }

    /// How long to wait before retry number `retry` (0 for the first retry), given the failed
    /// response's headers (empty for a connection failure).
    ///
    /// ```
    /// use openharness_provider::RetryPolicy;
    /// use reqwest::header::{HeaderMap, HeaderValue};
    /// use std::time::Duration;
    ///
    /// let policy = RetryPolicy::default();
    /// let mut headers = HeaderMap::new();
    /// headers.insert("retry-after", HeaderValue::from_static("2"));
    /// assert_eq!(policy.delay(0, &headers), Duration::from_secs(2));
    /// headers.insert("retry-after-ms", HeaderValue::from_static("150.5"));
    /// assert_eq!(policy.delay(0, &headers), Duration::from_micros(150_500));
    ///
    /// let backoff = policy.delay(3, &HeaderMap::new());
    /// assert!(backoff <= Duration::from_secs(4) && backoff >= Duration::from_secs(3));
    /// ```
    pub fn delay(&self, retry: u32, headers: &HeaderMap) -> Duration {
        if let Some(delay) = self.server_delay(headers) {
            return delay;
        }
        let exponential = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retry.min(16)));
        let capped = exponential.min(self.max_delay);
        capped.mul_f64(1.0 - 0.25 * random_unit())
    }

    fn server_delay(&self, headers: &HeaderMap) -> Option<Duration> {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let from_ms = header("retry-after-ms")
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms > 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0));
        let delay = from_ms.or_else(|| {
            let value = header("retry-after")?.trim();
            match value.parse::<f64>() {
                Ok(secs) if secs.is_finite() && secs > 0.0 => Some(Duration::from_secs_f64(secs)),
                Ok(_) => None,
                Err(_) => {
                    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
                    (at.with_timezone(&chrono::Utc) - chrono::Utc::now())
                        .to_std()
                        .ok()
                }
            }
        })?;
        (delay > Duration::ZERO && delay <= self.max_server_delay).then_some(delay)
    }
}

/// A random number in `[0, 1)`, from the standard library's randomly keyed hasher (jitter
/// needs no cryptographic quality).
fn random_unit() -> f64 {
    let bits = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retryable_statuses_follow_the_sdk_policy() {
        let retried: Vec<u16> = [400, 401, 403, 404, 408, 409, 413, 429, 500, 502, 529]
            .into_iter()
            .filter(|s| RetryPolicy::is_retryable_status(*s))
            .collect();
        assert_eq!(retried, [408, 409, 429, 500, 502, 529]);
    }

    #[test]
    fn server_delays_out_of_range_fall_back_to_backoff() {
        let policy =
            RetryPolicy::default().backoff(Duration::from_millis(10), Duration::from_millis(10));
        for value in ["0", "-3", "3600", "soon"] {
            let mut headers = HeaderMap::new();
            headers.insert("retry-after", HeaderValue::from_static(value));
            let delay = policy.delay(0, &headers);
            assert!(delay <= Duration::from_millis(10), "{value}: {delay:?}");
        }
    }

    #[test]
    fn retry_after_may_be_an_http_date() {
        let at = chrono::Utc::now() + chrono::Duration::seconds(30);
        let mut headers = HeaderMap::new();
        let value = at.to_rfc2822();
        headers.insert(
            "retry-after",
            HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("x")),
        );
        let delay = RetryPolicy::default().delay(0, &headers);
        assert!(
            delay > Duration::from_secs(25) && delay <= Duration::from_secs(30),
            "{delay:?}"
        );
    }

    #[test]
    fn backoff_doubles_up_to_the_cap_with_at_most_a_quarter_of_jitter() {
        let policy =
            RetryPolicy::default().backoff(Duration::from_millis(100), Duration::from_millis(800));
        for (retry, full) in [(0, 100), (1, 200), (2, 400), (3, 800), (9, 800)] {
            let delay = policy.delay(retry, &HeaderMap::new());
            let full = Duration::from_millis(full);
            assert!(
                delay <= full && delay >= full.mul_f64(0.75),
                "retry {retry}: {delay:?}"
            );
        }
    }
}
