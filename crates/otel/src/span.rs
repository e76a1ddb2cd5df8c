//! [`Span`]: one span as the mapping makes it — plain data with the recorded times and the
//! derived ids — and its conversion to the SDK's [`SpanData`] for an exporter.

use std::borrow::Cow;
use std::time::SystemTime;

use chrono::{DateTime, Utc};
use opentelemetry::trace::{
    Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// Where a span is: its trace and its id. A forked session's first span links to one of these
/// in its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanRef {
    /// The trace the span is in.
    pub trace_id: TraceId,
    /// The span's id.
    pub span_id: SpanId,
}

/// Something that happened during a span (an `error:occurred`, a rejected output).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    /// Its name (`exception`, `output:rejected`).
    pub name: String,
    /// When it was recorded.
    pub time: DateTime<Utc>,
    /// What it says.
    pub attributes: Vec<KeyValue>,
}

/// One span derived from a session's log: a turn (`invoke_workflow`), an agent call
/// (`invoke_agent`), a model call (`chat`) or a tool call (`execute_tool`).
///
/// ```
/// use openharness_core::{Envelope, SessionId};
/// use openharness_otel::{SessionSpans, SpanOptions};
/// let session: SessionId = "demo".parse().unwrap();
/// let mut spans = SessionSpans::new(session, SpanOptions::default());
/// spans.push(0, &Envelope::new("workflow:started", serde_json::json!({ "workflow": "triage" }), None));
/// let ended = spans.push(1, &Envelope::new("workflow:completed", serde_json::json!({ "reason": "idle" }), None));
/// assert_eq!(ended[0].name, "invoke_workflow triage");
/// assert_eq!(ended[0].attribute("gen_ai.operation.name").map(|v| v.as_str().into_owned()), Some("invoke_workflow".into()));
/// let data = ended[0].to_span_data();
/// assert_eq!(data.span_context.span_id(), ended[0].span_id);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Span {
    /// The trace it is in (one per turn).
    pub trace_id: TraceId,
    /// Its id.
    pub span_id: SpanId,
    /// The span it is part of, if any.
    pub parent: Option<SpanId>,
    /// Its name, such as `invoke_agent planner`.
    pub name: String,
    /// `Internal` for turns, agent and tool calls; `Client` for model calls.
    pub kind: SpanKind,
    /// The timestamp of the event that opened it.
    pub start: DateTime<Utc>,
    /// The timestamp of the event that closed it (or of the last event, when none did).
    pub end: DateTime<Utc>,
    /// Its attributes (`gen_ai.*`, `openharness.*`).
    pub attributes: Vec<KeyValue>,
    /// What happened during it.
    pub events: Vec<SpanEvent>,
    /// Spans it follows from (a fork's first span: its parent's span at the fork position).
    pub links: Vec<SpanRef>,
    /// `Error` when what it stands for failed, or never finished.
    pub status: Status,
    /// The seq of the event that opened it.
    pub seq: u64,
}

impl Span {
    /// Where this span is.
    pub fn reference(&self) -> SpanRef {
        SpanRef {
            trace_id: self.trace_id,
            span_id: self.span_id,
        }
    }

    /// The value of attribute `key`, if the span has it.
    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    /// The span as the OpenTelemetry SDK's exporters take it, with exactly these ids and times.
    pub fn to_span_data(&self) -> SpanData {
        self.clone().into_span_data()
    }

    /// [`to_span_data`](Self::to_span_data), without copying the attributes.
    pub fn into_span_data(self) -> SpanData {
        let mut events = SpanEvents::default();
        events.events = self
            .events
            .into_iter()
            .map(|event| {
                Event::new(
                    event.name,
                    SystemTime::from(event.time),
                    event.attributes,
                    0,
                )
            })
            .collect();
        let mut links = SpanLinks::default();
        links.links = self
            .links
            .iter()
            .map(|link| Link::new(context(link.trace_id, link.span_id), Vec::new(), 0))
            .collect();
        SpanData {
            span_context: context(self.trace_id, self.span_id),
            parent_span_id: self.parent.unwrap_or(SpanId::INVALID),
            parent_span_is_remote: false,
            span_kind: self.kind,
            name: Cow::Owned(self.name),
            start_time: SystemTime::from(self.start),
            end_time: SystemTime::from(self.end.max(self.start)),
            attributes: self.attributes,
            dropped_attributes_count: 0,
            events,
            links,
            status: self.status,
            instrumentation_scope: scope(),
        }
    }
}

fn context(trace_id: TraceId, span_id: SpanId) -> SpanContext {
    SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::SAMPLED,
        false,
        TraceState::default(),
    )
}

/// The instrumentation scope of every exported span: this crate, at its version.
fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(env!("CARGO_PKG_NAME"))
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}
