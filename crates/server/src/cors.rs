//! CORS: off unless configured. With no origins set the server adds no CORS headers, so a
//! browser page from another origin cannot read its answers; with [`CorsOrigins`] set, those
//! origins (or any, with `*`) may call every route, send `Authorization`, `Content-Type` and
//! `Last-Event-ID`, and read the answers, errors included. Preflight requests are answered
//! before the API-key check, since a browser never sends credentials with them.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The origins allowed to call the server from a browser.
///
/// Parsed from a comma-separated list of origins (`scheme://host[:port]`, no path), or `*`
/// for any origin:
///
/// ```
/// use openharness_server::CorsOrigins;
/// let origins: CorsOrigins = "http://localhost:5173, https://app.example.com".parse().unwrap();
/// assert_eq!(origins.to_string(), "http://localhost:5173, https://app.example.com");
/// assert_eq!("*".parse::<CorsOrigins>().unwrap(), CorsOrigins::Any);
/// let err = "https://app.example.com/chat".parse::<CorsOrigins>().unwrap_err();
/// assert!(err.to_string().contains("no path"), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CorsOrigins {
    /// Any origin (`Access-Control-Allow-Origin: *`).
    Any,
    /// Exactly these origins.
    List(Vec<HeaderValue>),
}

/// An origin that [`CorsOrigins`] cannot allow, with the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{origin}` is not a CORS origin: {reason}")]
pub struct InvalidOrigin {
    /// The origin as given.
    pub origin: String,
    /// Why it was refused.
    pub reason: &'static str,
}

impl FromStr for CorsOrigins {
    type Err = InvalidOrigin;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut list = Vec::new();
        for origin in text.split(',').map(str::trim) {
            if origin == "*" {
                return Ok(Self::Any);
            }
            list.push(parse_origin(origin)?);
        }
        Ok(Self::List(list))
    }
}

fn parse_origin(origin: &str) -> Result<HeaderValue, InvalidOrigin> {
    let refuse = |reason| InvalidOrigin {
        origin: origin.to_owned(),
        reason,
    };
    if origin.is_empty() {
        return Err(refuse("it is empty"));
    }
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return Err(refuse("it must start with http:// or https://"));
    };
    if authority.is_empty() {
        return Err(refuse("it names no host"));
    }
    if authority.contains(['/', '?', '#']) {
        return Err(refuse(
            "an origin is scheme://host[:port], with no path (browsers send no trailing slash)",
        ));
    }
    if authority.contains(char::is_whitespace) {
        return Err(refuse("it contains whitespace"));
    }
    HeaderValue::from_str(origin).map_err(|_| refuse("it is not a valid header value"))
}

impl fmt::Display for CorsOrigins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::List(list) => {
                for (n, origin) in list.iter().enumerate() {
                    if n > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(origin.to_str().unwrap_or("?"))?;
                }
                Ok(())
            }
        }
    }
}

/// The layer for `origins`: every method the API uses (`/v1` takes `PUT` and `PATCH` too), the
/// headers a client sends.
pub(crate) fn layer(origins: &CorsOrigins) -> CorsLayer {
    let allow = match origins {
        CorsOrigins::Any => AllowOrigin::any(),
        CorsOrigins::List(list) => AllowOrigin::list(list.iter().cloned()),
    };
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("last-event-id"),
            HeaderName::from_static("x-api-key"),
            // the chat's opt-in to approvals as AI SDK tool approvals
            HeaderName::from_static(crate::chat::APPROVALS_HEADER),
        ])
        .max_age(Duration::from_secs(600))
}
