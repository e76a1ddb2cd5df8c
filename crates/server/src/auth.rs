//! The one key check of every route family (native, `/api/chat`, `/api/workflow`, `/v1`).
//!
//! API keys: when the server has any, every route but `GET /health`, `GET /openapi.json` and
//! the inspector's page and assets (`/`, `/index.html`, `/inspector.js`, `/inspector.css`,
//! which hold no data: the page asks for a key and sends it with its API calls) requires one,
//! sent as
//! `Authorization: Bearer <key>`, the bare key in `Authorization` (as the Everruns SDK sends
//! it), or `x-api-key: <key>`. Keys are kept only as SHA-256 hashes
//! and compared in constant time; a key is never logged or echoed. A refused request is `401`
//! in the error shape.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::AppState;
use crate::error::ApiError;

/// The SHA-256 hash of an API key: what the server keeps instead of the key.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyHash([u8; 32]);

impl std::fmt::Debug for ApiKeyHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKeyHash(…)")
    }
}

impl ApiKeyHash {
    /// The hash of `key`.
    ///
    /// ```
    /// use openharness_server::ApiKeyHash;
    /// let stored = ApiKeyHash::of("s3cret");
    /// assert!(stored.matches("s3cret"));
    /// assert!(!stored.matches("guess"));
    /// assert_eq!(format!("{stored:?}"), "ApiKeyHash(…)");
    /// ```
    pub fn of(key: &str) -> Self {
        Self(Sha256::digest(key.as_bytes()).into())
    }

    /// A hash written as 64 hex digits (as `sha256:<hex>` lines of a keys file keep them).
    pub fn from_hex(hex: &str) -> Option<Self> {
        let hex = hex.trim();
        if hex.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(Self(bytes))
    }

    /// Whether `key` hashes to this, compared in constant time.
    pub fn matches(&self, key: &str) -> bool {
        let candidate: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        bool::from(self.0.ct_eq(&candidate))
    }
}

/// Reads API keys from text: one per line, either the key itself or `sha256:<hex>` of it;
/// blank lines and `#` comments are skipped.
pub fn parse_api_keys(text: &str) -> Result<Vec<ApiKeyHash>, String> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(n, line)| match line.strip_prefix("sha256:") {
            Some(hex) => ApiKeyHash::from_hex(hex)
                .ok_or_else(|| format!("line {n}: `sha256:` must be followed by 64 hex digits")),
            None => Ok(ApiKeyHash::of(line)),
        })
        .collect()
}

/// The key in an `Authorization` value: after `Bearer ` (any case, RFC 9110), or the whole
/// value, as the Everruns SDK's management client sends it.
fn bearer_or_bare(value: &str) -> &str {
    let value = value.trim();
    match value.split_at_checked("Bearer ".len()) {
        Some((scheme, key)) if scheme.eq_ignore_ascii_case("bearer ") => key.trim(),
        _ => value,
    }
}

/// The middleware: lets `/health`, `/openapi.json`, the A2A agent cards and keyless servers
/// through, else checks the key.
pub(crate) async fn require_key(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if state.options.api_keys.is_empty()
        || path.ends_with("/health")
        || path.ends_with("/openapi.json")
        // A2A agent cards: what a client reads to learn how to authenticate.
        || path.ends_with("/.well-known/agent-card.json")
    {
        return next.run(request).await;
    }
    let headers = request.headers();
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(bearer_or_bare)
        .or_else(|| headers.get("x-api-key").and_then(|v| v.to_str().ok()));
    // Every stored hash is compared, so the time does not tell which one (if any) matched.
    let accepted = presented.is_some_and(|key| {
        state
            .options
            .api_keys
            .iter()
            .fold(false, |found, hash| found | hash.matches(key))
    });
    if accepted {
        next.run(request).await
    } else {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this server requires an API key: send `Authorization: Bearer <key>` (or the bare key in `Authorization`, or `x-api-key: <key>`)",
        )
        .into_response()
    }
}
