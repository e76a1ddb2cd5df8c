//! The inspector's page over a real socket: served at `/` without a key while the API needs
//! one, with the content types its browser needs, and with a `<base>` that makes it work when
//! the router is nested under a prefix.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;

use openharness::host::Host;
use openharness::store::MemoryStore;
use openharness_server::{ApiKeyHash, ServerOptions, router};
use openharness_testkit::http::{self, serve};

/// `GET path`: status, content type and body.
async fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let answer = http::Client::new(addr).get(path).await;
    let kind = answer.header("content-type").unwrap_or_default().to_owned();
    (answer.status, kind, answer.body)
}

fn keyed() -> axum::Router {
    router(
        Host::new(MemoryStore::new()),
        ServerOptions::default().api_keys([ApiKeyHash::of("k")]),
    )
}

#[tokio::test]
async fn the_page_and_its_assets_need_no_key_while_the_api_does() {
    let addr = serve(keyed()).await;
    let (status, kind, html) = get(addr, "/").await;
    assert_eq!(status, 200);
    assert_eq!(kind, "text/html; charset=utf-8");
    assert!(html.contains("<base href=\"/\">"), "{html}");
    assert!(html.contains("inspector.js"));
    let (status, kind, script) = get(addr, "/inspector.js").await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    assert!(script.contains("sessions"));
    let (status, kind, _) = get(addr, "/inspector.css").await;
    assert_eq!((status, kind.as_str()), (200, "text/css; charset=utf-8"));
    let (status, _, _) = get(addr, "/index.html").await;
    assert_eq!(status, 200);
    // The API the page calls still needs the key, and unknown paths are still the API's 404.
    let (status, _, _) = get(addr, "/sessions").await;
    assert_eq!(status, 401);
    let (status, _, _) = get(addr, "/inspector.map").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn nested_as_a_service_the_page_is_served_at_the_prefix_with_or_without_its_slash() {
    let addr = serve(axum::Router::new().nest_service("/harness", keyed())).await;
    for path in ["/harness/", "/harness", "/harness/index.html"] {
        let (status, kind, html) = get(addr, path).await;
        assert_eq!(
            (status, kind.as_str()),
            (200, "text/html; charset=utf-8"),
            "{path}: {html}"
        );
        assert!(html.contains("<base href=\"/harness/\">"), "{path}: {html}");
    }
    let (status, kind, _) = get(addr, "/harness/inspector.js").await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    // The API under the prefix still needs the key; unknown paths are still its 401.
    let (status, _, _) = get(addr, "/harness/sessions").await;
    assert_eq!(status, 401);
    let (status, _, _) = get(addr, "/harness/nothing").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn nested_as_a_router_the_page_is_served_at_the_prefix() {
    let addr = serve(axum::Router::new().nest("/harness", keyed())).await;
    let (status, _, html) = get(addr, "/harness").await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains("<base href=\"/harness/\">"), "{html}");
    let (status, _, _) = get(addr, "/harness/inspector.js").await;
    assert_eq!(status, 200);
    let (status, _, _) = get(addr, "/harness/sessions").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn at_the_root_unknown_paths_stay_the_apis_404() {
    let addr = serve(router(
        Host::new(MemoryStore::new()),
        ServerOptions::default(),
    ))
    .await;
    let (status, _, body) = get(addr, "/nothing/").await;
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("not_found"), "{body}");
    let (status, _, _) = get(addr, "/").await;
    assert_eq!(status, 200);
}
