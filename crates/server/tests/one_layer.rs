//! The server's route families — native (`/sessions…`), `/api/chat`, `/api/workflow` and the
//! platform's `/v1` — are one HTTP layer: the same bad request gets the same status, code and
//! sentence on each, one key check guards them all, one CORS layer covers every method they
//! take, and every event stream is counted under the same per-session cap by the same writer.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;

use openharness_host::Host;
use openharness_platform::Platform;
use openharness_server::{ApiKeyHash, ServerOptions, router};
use openharness_testkit::http;
use openharness_testkit::{LIMIT, eventually};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The server as `openharness serve` runs it (native routes and `/v1` over one store).
async fn serve(options: ServerOptions) -> SocketAddr {
    let store: Arc<dyn openharness_core::Store> = Arc::new(openharness_store::MemoryStore::new());
    let platform = Platform::new(Arc::clone(&store), None);
    let host = Host::shared(store);
    http::serve(router(host, options.platform(platform))).await
}

/// `method path` with `body` (as JSON unless `content_type` says otherwise): the status and
/// the body as JSON (null when it is not).
async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<(&str, &str)>,
    key: Option<&str>,
) -> (u16, Value) {
    let client = http::Client::new(addr).with_key(key);
    let headers: Vec<(&str, &str)> = body
        .iter()
        .map(|(content_type, _)| ("content-type", *content_type))
        .collect();
    let answer = client
        .call(method, path, body.map(|(_, body)| body), &headers)
        .await;
    (answer.status, answer.json_or_null())
}

/// The error's status, code and message, checking its shape.
fn error(answer: &(u16, Value)) -> (u16, String, String) {
    let (status, body) = answer;
    let fields = body["error"].as_object().unwrap_or_else(|| {
        panic!("{status}: not the error shape: {body}");
    });
    assert_eq!(fields.len(), 2, "{body}");
    (
        *status,
        fields["code"].as_str().unwrap().to_owned(),
        fields["message"].as_str().unwrap().to_owned(),
    )
}

const JSON: &str = "application/json";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_bad_request_gets_the_same_answer_on_every_family() {
    let addr = serve(ServerOptions::default().body_limit(256)).await;
    let big = json!({ "text": "x".repeat(1000) }).to_string();
    for path in ["/sessions", "/api/chat", "/api/workflow", "/v1/agents"] {
        // Too large: 413, never a 400.
        let (status, code, _) = error(&call(addr, "POST", path, Some((JSON, &big)), None).await);
        assert_eq!(
            (status, code.as_str()),
            (413, "payload_too_large"),
            "{path}"
        );
        // Not JSON at all: 400.
        let (status, code, _) = error(&call(addr, "POST", path, Some((JSON, "{nope")), None).await);
        assert_eq!((status, code.as_str()), (400, "bad_request"), "{path}");
        // JSON that is not an object, or not the route's shape: 422.
        for wrong in ["[1, 2]", r#"{"surely": "not a field of any route"}"#] {
            let (status, code, _) =
                error(&call(addr, "POST", path, Some((JSON, wrong)), None).await);
            assert_eq!((status, code.as_str()), (422, "invalid"), "{path} {wrong}");
        }
        // Not declared as JSON: 415.
        let (status, code, _) =
            error(&call(addr, "POST", path, Some(("text/plain", "{}")), None).await);
        assert_eq!(
            (status, code.as_str()),
            (415, "unsupported_media_type"),
            "{path}"
        );
    }
    // An unknown path and a wrong method: one sentence, naming where the routes are listed.
    for path in ["/nowhere", "/v1/nowhere", "/api/nowhere"] {
        let (status, code, message) = error(&call(addr, "GET", path, None, None).await);
        assert_eq!((status, code.as_str()), (404, "not_found"));
        assert_eq!(
            message,
            format!("no route is `GET {path}`: GET /openapi.json lists the routes")
        );
    }
    for path in ["/sessions", "/v1/agents", "/api/chat"] {
        let (status, code, message) = error(&call(addr, "PUT", path, None, None).await);
        assert_eq!((status, code.as_str()), (405, "method_not_allowed"));
        assert_eq!(
            message,
            format!(
                "`{path}` does not take PUT: GET /openapi.json lists the methods each path takes"
            )
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_key_check_guards_every_family_alike() {
    let addr = serve(ServerOptions::default().api_keys([ApiKeyHash::of("s3cret")])).await;
    let mut refusals = Vec::new();
    for path in ["/sessions", "/v1/agents", "/v1/sessions", "/v1/models"] {
        let refused = error(&call(addr, "GET", path, None, Some("guess")).await);
        assert_eq!(refused.0, 401, "{path}");
        refusals.push(refused);
        let (status, _) = call(addr, "GET", path, None, Some("s3cret")).await;
        assert_eq!(status, 200, "{path}");
    }
    // The same answer, word for word.
    refusals.dedup();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].1, "unauthorized");
    // Public on every family: health and the document.
    assert_eq!(call(addr, "GET", "/health", None, None).await.0, 200);
    let (status, doc) = call(addr, "GET", "/openapi.json", None, None).await;
    assert_eq!(status, 200);
    // One document: native and /v1 paths, one error schema.
    assert!(doc["paths"]["/sessions"].is_object());
    assert!(doc["paths"]["/v1/agents"].is_object());
    assert!(doc["components"]["schemas"]["Error"].is_object());
    assert!(doc["components"]["schemas"].get("V1Error").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_covers_every_method_of_every_family() {
    let origin = "http://localhost:5173";
    let addr = serve(ServerOptions::default().cors(origin.parse().unwrap())).await;
    for (path, method) in [
        ("/sessions", "POST"),
        ("/v1/agents/x", "PATCH"),
        ("/v1/agents/x/capabilities", "PUT"),
        ("/v1/sessions/x", "DELETE"),
    ] {
        let response = http::Client::new(addr)
            .call(
                "OPTIONS",
                path,
                None,
                &[
                    ("origin", origin),
                    ("access-control-request-method", method),
                ],
            )
            .await;
        assert_eq!(response.status, 200, "{path}");
        let allowed = response
            .header("access-control-allow-methods")
            .unwrap_or_default();
        assert!(allowed.contains(method), "{path}: {allowed}");
    }
}

/// Opens an event stream over a raw connection: its status and, for a 200, the connection
/// (kept open until dropped) with the first bytes of the stream read.
async fn open_stream(addr: SocketAddr, path: &str) -> (u16, Option<(TcpStream, String)>) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head =
        format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    // Until the head and the first bytes of the body (a stream's hello, or an error body).
    while !String::from_utf8_lossy(&read).contains("\r\n\r\n{")
        && !String::from_utf8_lossy(&read).contains("retry:")
    {
        let n = stream.read(&mut buffer).await.unwrap();
        assert!(
            n > 0,
            "{path}: closed after {:?}",
            String::from_utf8_lossy(&read)
        );
        read.extend_from_slice(&buffer[..n]);
    }
    let text = String::from_utf8_lossy(&read).into_owned();
    let status: u16 = text[9..12].parse().unwrap();
    if status == 200 {
        (status, Some((stream, text)))
    } else {
        assert!(text.contains("too_many_streams"), "{text}");
        (status, None)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_stream_is_capped_per_session_by_the_one_writer() {
    let addr = serve(ServerOptions::default().max_streams_per_session(1)).await;
    let (status, agent) = call(
        addr,
        "POST",
        "/v1/agents",
        Some((JSON, r#"{"name":"a","system_prompt":"be brief"}"#)),
        None,
    )
    .await;
    assert_eq!(status, 201, "{agent}");
    let (status, session) = call(
        addr,
        "POST",
        "/v1/sessions",
        Some((JSON, &json!({ "agent_id": agent["id"] }).to_string())),
        None,
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap();
    // The platform's session and its log (a native session of the same id), and the platform
    // log itself: each stream family, one cap.
    for (first, second) in [
        (
            format!("/v1/sessions/{id}/sse"),
            format!("/v1/sessions/{id}/events"),
        ),
        (
            format!("/v1/sessions/{id}/sse"),
            format!("/sessions/{id}/events"),
        ),
        (
            "/sessions/openharness-platform/events".to_owned(),
            "/sessions/openharness-platform/events".to_owned(),
        ),
    ] {
        // The previous round's last stream of this session may not be counted out yet (the
        // server notices a client gone when its next write fails): wait for it as below.
        let (status, open) = open_when_free(addr, &first).await;
        assert_eq!(status, 200, "{first}");
        // The one writer's opening: the retry hint.
        let hello = &open.as_ref().unwrap().1;
        assert!(hello.contains(": openharness\nretry: "), "{hello}");
        assert_eq!(open_stream(addr, &second).await.0, 429, "{second}");
        drop(open);
        // The count drops with the client: a new stream may open.
        assert_eq!(open_when_free(addr, &first).await.0, 200, "{first}");
    }
}

/// Opens the stream at `path`, trying again while the session's cap refuses it.
async fn open_when_free(addr: SocketAddr, path: &str) -> (u16, Option<(TcpStream, String)>) {
    eventually(LIMIT, &format!("{path} to open"), || async {
        let opened = open_stream(addr, path).await;
        if opened.0 == 429 {
            Err(opened.0)
        } else {
            Ok(opened)
        }
    })
    .await
}
