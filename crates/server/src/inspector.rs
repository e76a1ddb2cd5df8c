//! The tape inspector: a browser page at `GET /` to read, step through, search, follow and fork
//! the server's sessions. Its built files (`packages/inspector`, built by `npm run build` there
//! into `crates/server/inspector/` and checked in; CI checks they are fresh) are embedded, so
//! the Rust build never needs Node.
//!
//! The page and its assets are served without an API key (they hold no data); the page asks
//! for a key when the API answers `401` and sends it as `Authorization: Bearer`. The page names
//! its assets and the API relative to where it is served (a `<base>` from the request's path),
//! so it works as well when the router is nested under a prefix: `Router::nest_service("/harness",
//! router)` serves it at `/harness/` and `/harness`; `Router::nest` at `/harness` only (axum
//! routes no `/harness/` there).

use axum::Router;
use axum::extract::OriginalUri;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX: &str = include_str!("../inspector/index.html");
const SCRIPT: &[u8] = include_bytes!("../inspector/inspector.js");
const STYLE: &[u8] = include_bytes!("../inspector/inspector.css");

/// The page's own files only: scripts, styles and API calls from this origin, no framing.
const POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'";

/// The inspector's routes: `/` (also `/index.html`), `/inspector.js`, `/inspector.css`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .route("/inspector.js", get(script))
        .route("/inspector.css", get(style))
}

/// The page, with a `<base>` naming the directory it is served from: `/` at the root; under a
/// prefix, `/harness/` whether the page was asked for as `/harness` (where axum's
/// `Router::nest` routes the nested `/`) or `/harness/` (also routed by `Router::nest_service`).
/// The page's own links keep its path, so they work from either.
async fn page(OriginalUri(uri): OriginalUri) -> Response {
    let path = uri.path();
    let dir = match path.strip_suffix("index.html") {
        Some(dir) => dir.to_owned(),
        None if path.ends_with('/') => path.to_owned(),
        None => format!("{path}/"),
    };
    let base = format!("<base href=\"{}\">", escape(&dir));
    let html = INDEX.replacen(
        "<meta charset=\"utf-8\">",
        &format!("<meta charset=\"utf-8\">\n{base}"),
        1,
    );
    asset("text/html; charset=utf-8", html.into_bytes())
}

async fn script() -> Response {
    asset("text/javascript; charset=utf-8", SCRIPT.to_vec())
}

async fn style() -> Response {
    asset("text/css; charset=utf-8", STYLE.to_vec())
}

fn asset(content_type: &'static str, body: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(POLICY),
            ),
        ],
        body,
    )
        .into_response()
}

/// `text` safe inside a double-quoted HTML attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_embedded_page_names_the_assets_it_is_served_with() {
        assert!(super::INDEX.contains("<meta charset=\"utf-8\">"));
        assert!(super::INDEX.contains("src=\"inspector.js\""));
        assert!(super::INDEX.contains("href=\"inspector.css\""));
        assert!(!super::SCRIPT.is_empty());
        assert!(!super::STYLE.is_empty());
    }

    #[test]
    fn a_path_is_escaped_for_the_base_attribute() {
        assert_eq!(super::escape("/a\"<b>&"), "/a&quot;&lt;b&gt;&amp;");
    }
}
