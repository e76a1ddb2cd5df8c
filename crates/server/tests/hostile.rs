//! The server on a hostile network: probes as an outsider would run them, over real sockets.
//!
//! - DNS rebinding: a keyless server with its allowed hosts refuses a foreign `Host` and a
//!   foreign `Origin` on every route family, and answers its own.
//! - Slow and idle clients: a client dripping a request's head, and one that never sends a
//!   byte, are disconnected after the idle time; a flood of idle connections past the cap
//!   cannot keep a real client out; an event stream outlives the idle time.
#![allow(clippy::unwrap_used, missing_docs)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use openharness_host::Host;
use openharness_platform::Platform;
use openharness_server::{ConnectionLimits, ServerOptions, loopback_hosts, router, serve};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The server as `openharness serve` runs it without keys on loopback: native routes and
/// `/v1`, its allowed hosts, guarded connections with `limits`.
async fn start(options: ServerOptions, limits: ConnectionLimits) -> SocketAddr {
    let store: Arc<dyn openharness_core::Store> = Arc::new(openharness_store::MemoryStore::new());
    let platform = Platform::new(Arc::clone(&store), None);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let options = options
        .allowed_hosts(loopback_hosts(addr))
        .platform(platform);
    let app = router(Host::shared(store), options);
    tokio::spawn(serve(listener, app, limits, std::future::pending()));
    addr
}

/// A request with the given extra header lines: its status (0 when the connection closed
/// without an answer) and body.
async fn raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\n{headers}connection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response).await;
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyless_server_refuses_foreign_hosts_and_origins_on_every_family() {
    let cors = "http://localhost:5173";
    let addr = start(
        ServerOptions::default().cors(cors.parse().unwrap()),
        ConnectionLimits::default(),
    )
    .await;
    let own = format!("host: 127.0.0.1:{}\r\n", addr.port());
    let chat = r#"{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}]}"#;
    for (method, path, body) in [
        ("GET", "/sessions", ""),
        ("GET", "/v1/agents", ""),
        ("POST", "/v1/agents", r#"{"name":"a","system_prompt":"b"}"#),
        ("POST", "/api/chat", chat),
        ("GET", "/", ""),
    ] {
        // DNS rebinding: the attacker's name, pointed at 127.0.0.1.
        let (status, answer) =
            raw(addr, method, path, "host: attacker.example:8080\r\n", body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(answer.contains("host_not_allowed"), "{answer}");
        // The right host, called from another site's page.
        let foreign = format!("{own}origin: http://attacker.example\r\n");
        let (status, answer) = raw(addr, method, path, &foreign, body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
        assert!(answer.contains("origin_not_allowed"), "{answer}");
    }
    // Its own names, its own pages and the origins CORS allows are answered.
    for headers in [
        own.clone(),
        format!("host: localhost:{}\r\n", addr.port()),
        format!("{own}origin: http://127.0.0.1:{}\r\n", addr.port()),
        format!("{own}origin: {cors}\r\n"),
    ] {
        let (status, answer) = raw(addr, "GET", "/v1/agents", &headers, "").await;
        assert_eq!(status, 200, "{headers:?}: {answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_silent_clients_are_disconnected_and_others_answered() {
    let idle = Duration::from_millis(800);
    let addr = start(
        ServerOptions::default(),
        ConnectionLimits::default().idle(idle),
    )
    .await;
    // A client that drips its request's head, a byte every 100 ms, never finishing it.
    let mut dripping = TcpStream::connect(addr).await.unwrap();
    let started = Instant::now();
    let head = b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut closed = None;
    for byte in head {
        if let Err(err) = dripping.write_all(&[*byte]).await {
            closed = Some((started.elapsed(), format!("write: {err}")));
            break;
        }
        let mut probe = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(100), dripping.read(&mut probe)).await {
            Ok(Ok(0)) => closed = Some((started.elapsed(), "end of stream".to_owned())),
            Ok(Ok(n)) => {
                let answer = String::from_utf8_lossy(&probe[..n]).into_owned();
                closed = Some((started.elapsed(), format!("answered: {answer}")));
            }
            Ok(Err(err)) => closed = Some((started.elapsed(), format!("read: {err}"))),
            Err(_) => continue,
        }
        break;
    }
    let (closed_after, how) = closed.expect("the dripping client was never disconnected");
    // Closed for its silence (not at once, not answered), within a few idle times.
    assert!(!how.starts_with("answered"), "{how}");
    assert!(closed_after >= idle / 2, "{closed_after:?}: {how}");
    assert!(closed_after < idle * 4, "{closed_after:?}: {how}");
    // A client that connects and says nothing is closed too.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut buffer = [0u8; 16];
    let read = tokio::time::timeout(idle * 4, silent.read(&mut buffer)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    // Meanwhile everyone else is answered.
    let (status, _) = raw(addr, "GET", "/health", "host: 127.0.0.1\r\n", "").await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_idle_connections_cannot_keep_a_client_out() {
    let addr = start(
        ServerOptions::default(),
        ConnectionLimits::default()
            .max_connections(16)
            .idle(Duration::from_secs(60)),
    )
    .await;
    // Far more idle connections than the cap, each holding its place.
    let mut flood = Vec::new();
    for _ in 0..80 {
        flood.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let (status, _) = tokio::time::timeout(
        Duration::from_secs(5),
        raw(addr, "GET", "/health", "host: 127.0.0.1\r\n", ""),
    )
    .await
    .expect("/health did not answer under the flood");
    assert_eq!(status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // The oldest of the flood were closed to make room.
    let mut closed = 0;
    for stream in &mut flood {
        let mut buffer = [0u8; 1];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(20), stream.read(&mut buffer)).await
        {
            closed += 1;
        }
    }
    assert!(closed >= 80 - 16, "{closed} of 80 closed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_outlives_the_idle_time() {
    let idle = Duration::from_millis(600);
    let addr = start(
        ServerOptions::default().heartbeat(Duration::from_millis(150)),
        ConnectionLimits::default().idle(idle),
    )
    .await;
    // The platform log exists once something was recorded on it.
    let (status, _) = raw(
        addr,
        "POST",
        "/v1/agents",
        "host: 127.0.0.1\r\n",
        r#"{"name":"a","system_prompt":"b"}"#,
    )
    .await;
    assert_eq!(status, 201);
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let head = "GET /sessions/openharness-platform/events HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut read = Vec::new();
    let mut buffer = [0u8; 4096];
    while started.elapsed() < idle * 4 {
        match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) => panic!(
                "the stream closed after {:?}: {}",
                started.elapsed(),
                String::from_utf8_lossy(&read)
            ),
            Ok(Ok(n)) => read.extend_from_slice(&buffer[..n]),
            Err(_) => {}
        }
    }
    let text = String::from_utf8_lossy(&read);
    assert!(text.contains(": heartbeat"), "{text}");
}
