//! [`Receiver`] (feature `testing`): an OTLP/HTTP collector on 127.0.0.1 that decodes what it
//! is sent and keeps it, for tests and benchmarks that need a real collector without running
//! one. It can be told to refuse everything, to test what a failing collector does. And
//! [`small_turn`]: the events of one small turn, to export.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use prost::Message;

use openharness_core::Envelope;
use serde_json::json;

use crate::export::Endpoint;

/// The six events of one small turn: a workflow turn whose agent calls the tool `calc` once.
///
/// ```
/// let events = openharness_otel::testing::small_turn();
/// assert_eq!(events[0].name, "workflow:started");
/// assert_eq!(events.len(), 6);
/// ```
pub fn small_turn() -> [Envelope; 6] {
    [
        Envelope::new("workflow:started", json!({ "workflow": "burst" }), None),
        Envelope::new(
            "agent:started",
            json!({ "agentName": "a", "model": "m", "prompt": "p" }),
            None,
        ),
        Envelope::new(
            "tool:called",
            json!({ "agentName": "a", "toolId": "t1", "toolName": "calc", "input": {} }),
            None,
        ),
        Envelope::new(
            "tool:result",
            json!({ "agentName": "a", "toolId": "t1", "toolName": "calc", "output": 1 }),
            None,
        ),
        Envelope::new(
            "agent:completed",
            json!({ "agentName": "a", "outcome": "success", "usage": { "inputTokens": 1, "outputTokens": 1 } }),
            None,
        ),
        Envelope::new("workflow:completed", json!({ "reason": "idle" }), None),
    ]
}

/// The spans [`small_turn`] maps to: the workflow, the agent, two model calls, the tool.
pub const SMALL_TURN_SPANS: u64 = 5;

/// One span as the receiver got it, ids in lowercase hex.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReceivedSpan {
    /// The trace id.
    pub trace_id: String,
    /// The span id.
    pub span_id: String,
    /// The parent's span id (empty for a root).
    pub parent_span_id: String,
    /// The name.
    pub name: String,
    /// The linked spans, as (trace id, span id).
    pub links: Vec<(String, String)>,
    /// The start time, in nanoseconds since the Unix epoch.
    pub start_unix_nanos: u64,
    /// The attributes, as received (read them with [`ReceivedSpan::attribute`]).
    attributes: Vec<KeyValue>,
}

impl ReceivedSpan {
    /// The value of the attribute `key`, as text (`true`, `42`, a string as it is).
    pub fn attribute(&self, key: &str) -> Option<String> {
        self.attributes
            .iter()
            .find(|kv| kv.key == key)
            .map(|kv| as_text(kv.value.as_ref()))
    }
}

#[derive(Debug, Default)]
struct Shared {
    spans: Mutex<Vec<ReceivedSpan>>,
    requests: Mutex<u64>,
    refuse: AtomicBool,
}

/// An OTLP/HTTP collector on 127.0.0.1 (an ephemeral port), serving until dropped.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use openharness_otel::testing::Receiver;
/// use openharness_otel::{Collector, SessionSpans, SpanOptions};
/// use openharness_core::Envelope;
/// use serde_json::json;
///
/// let receiver = Receiver::start().await;
/// let events = [
///     Envelope::new("workflow:started", json!({ "workflow": "w" }), None),
///     Envelope::new("workflow:completed", json!({ "reason": "idle" }), None),
/// ];
/// let spans = SessionSpans::map("s".parse().unwrap(), &events, SpanOptions::default());
/// Collector::new(&receiver.endpoint()).unwrap().send(&spans).await.unwrap();
/// assert_eq!(receiver.spans()[0].name, "invoke_workflow w");
/// # }
/// ```
#[derive(Debug)]
pub struct Receiver {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Starts a receiver on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// When no port on 127.0.0.1 can be bound (a test fixture fails loudly).
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|err| panic!("cannot bind a port on 127.0.0.1: {err}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|err| panic!("the listener has no address: {err}"));
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .route("/v1/traces", axum::routing::post(receive))
            .with_state(Arc::clone(&shared));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            addr,
            shared,
            server,
        }
    }

    /// Where to send spans.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::base(&format!("http://{}", self.addr))
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.shared
            .spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many export requests arrived.
    pub fn requests(&self) -> u64 {
        *self
            .shared
            .requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// From now on, answer every request `400 Bad Request` (a collector refusing), or again
    /// accept them.
    pub fn refuse(&self, refuse: bool) {
        self.shared.refuse.store(refuse, Ordering::Relaxed);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// An attribute's value as text.
fn as_text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn receive(State(shared): State<Arc<Shared>>, body: Bytes) -> impl IntoResponse {
    *shared
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner) += 1;
    if shared.refuse.load(Ordering::Relaxed) {
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain")],
            Vec::new(),
        );
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain")],
            Vec::new(),
        );
    };
    // Taken apart, not copied: a collector in the benchmarks' process costs what it must.
    let received = request
        .resource_spans
        .into_iter()
        .flat_map(|resource| resource.scope_spans)
        .flat_map(|scope| scope.spans)
        .map(|span| ReceivedSpan {
            trace_id: hex(&span.trace_id),
            span_id: hex(&span.span_id),
            parent_span_id: hex(&span.parent_span_id),
            name: span.name,
            links: span
                .links
                .iter()
                .map(|link| (hex(&link.trace_id), hex(&link.span_id)))
                .collect(),
            start_unix_nanos: span.start_time_unix_nano,
            attributes: span.attributes,
        });
    shared
        .spans
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(received);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-protobuf")],
        ExportTraceServiceResponse::default().encode_to_vec(),
    )
}
