//! The `Host` and `Origin` check that keeps a keyless server from being reached through DNS
//! rebinding or driven by another site's page.
//!
//! A server on loopback without API keys trusts whoever can reach it. A web page from
//! `attacker.example` can reach it too: it rebinds its own name to `127.0.0.1` and calls the
//! server as `attacker.example`, or posts to it from the browser. With
//! [`ServerOptions::allowed_hosts`](crate::ServerOptions::allowed_hosts) set (`openharness
//! serve` sets it when it has no keys), every request must name an allowed host in `Host`,
//! and a request that carries an `Origin` must come from one of those hosts or from an origin
//! CORS allows; anything else is `403 host_not_allowed` / `origin_not_allowed`, before any
//! route runs.
//!
//! A host is written `name` or `name:port` (`127.0.0.1:8080`, `localhost`, `[::1]:8080`); names
//! are compared without regard to case, and ports are not compared (DNS rebinding changes the
//! name, not the port).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::AppState;
use crate::cors::CorsOrigins;
use crate::error::ApiError;

/// The hosts a keyless server on `addr` answers to: the address itself and, on loopback,
/// `localhost` and the other loopback spelling, each on the bound port. On an unspecified
/// address (`0.0.0.0`), any of the machine's own names is unknown here, so only loopback's
/// are listed: add others with `--allowed-host`.
///
/// ```
/// let hosts = openharness_server::loopback_hosts("127.0.0.1:8080".parse().unwrap());
/// assert_eq!(hosts, ["127.0.0.1:8080", "localhost:8080", "[::1]:8080"]);
/// ```
pub fn loopback_hosts(addr: std::net::SocketAddr) -> Vec<String> {
    let port = addr.port();
    let own = match addr {
        std::net::SocketAddr::V4(v4) => format!("{}:{port}", v4.ip()),
        std::net::SocketAddr::V6(v6) => format!("[{}]:{port}", v6.ip()),
    };
    let mut hosts = vec![own];
    for loopback in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        if !hosts.contains(&loopback) {
            hosts.push(loopback);
        }
    }
    hosts
}

/// The name of `host` without its port: `localhost:8080` → `localhost`, `[::1]:8080` → `[::1]`.
fn name_of(host: &str) -> &str {
    let host = host.trim();
    match host.rsplit_once(':') {
        Some((name, port))
            if !name.is_empty()
                && port.bytes().all(|b| b.is_ascii_digit())
                && (name.starts_with('[') || !name.contains(':')) =>
        {
            name
        }
        _ => host,
    }
}

/// Whether `host` (a `Host` header's value, or an origin's host and port) names one of
/// `allowed`. Names are compared, not ports: what DNS rebinding changes is the name.
fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let name = name_of(host);
    !name.is_empty()
        && allowed
            .iter()
            .any(|allowed| name_of(allowed).eq_ignore_ascii_case(name))
}

/// The host and port of an `Origin` (`http://localhost:8080` → `localhost:8080`), with the
/// scheme's default port when it names none; `None` for `null` and other opaque origins.
fn origin_host(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()) && !port.is_empty());
    Some(if has_port {
        authority.to_owned()
    } else {
        format!("{authority}:{default}")
    })
}

/// Whether CORS lets `origin` call the server.
fn cors_allows(cors: Option<&CorsOrigins>, origin: &str) -> bool {
    match cors {
        None => false,
        Some(CorsOrigins::Any) => true,
        Some(CorsOrigins::List(list)) => list.iter().any(|o| o.as_bytes() == origin.as_bytes()),
    }
}

/// The middleware: with allowed hosts set, refuses a request to another host, or from an
/// origin that is neither one of them nor allowed by CORS.
pub(crate) async fn check(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(allowed) = state.options.allowed_hosts.as_deref() else {
        return next.run(request).await;
    };
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| request.uri().authority().map(|a| a.as_str().to_owned()));
    let Some(host) = host.filter(|host| host_allowed(host, allowed)) else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            format!(
                "this server answers to {} only (a page of another site may not reach it through DNS rebinding); serve with --allowed-host NAME to add a name, or with API keys",
                allowed.join(", ")
            ),
        )
        .into_response();
    };
    if let Some(origin) = headers.get(header::ORIGIN) {
        let text = origin.to_str().unwrap_or("");
        let same_site = origin_host(text).is_some_and(|h| host_allowed(&h, allowed));
        if !same_site && !cors_allows(state.options.cors.as_ref(), text) {
            return ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                format!(
                    "a page from {text:?} may not call this server (it serves {host}); allow its origin with --cors-origin"
                ),
            )
            .into_response();
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_by_name() {
        let allowed = vec!["127.0.0.1:8080".to_owned(), "example.com".to_owned()];
        assert!(host_allowed("127.0.0.1:8080", &allowed));
        assert!(host_allowed("127.0.0.1", &allowed));
        assert!(!host_allowed("attacker.example:8080", &allowed));
        assert!(!host_allowed("127.0.0.1.attacker.example:8080", &allowed));
        assert!(host_allowed("EXAMPLE.com:443", &allowed));
        assert!(host_allowed("example.com", &allowed));
        assert!(!host_allowed("", &allowed));
        let v6 = loopback_hosts("[::1]:7000".parse().unwrap_or_else(|_| unreachable!()));
        assert!(host_allowed("[::1]:7000", &v6));
        assert!(host_allowed("localhost:7000", &v6));
    }

    #[test]
    fn origins_read_as_host_and_port() {
        assert_eq!(
            origin_host("http://localhost:8080").as_deref(),
            Some("localhost:8080")
        );
        assert_eq!(
            origin_host("https://app.example").as_deref(),
            Some("app.example:443")
        );
        assert_eq!(origin_host("null"), None);
        assert_eq!(origin_host("file://"), None);
    }
}
