//! OpenTelemetry export for Open Harness: a session's event log as spans after the GenAI
//! semantic conventions, sent to any OTLP collector (Jaeger, Arize Phoenix, Langfuse, an
//! OpenTelemetry Collector).
//!
//! - [`SessionSpans`] maps a log to spans, purely: a turn is `invoke_workflow {workflow}`, an
//!   agent call `invoke_agent {agent}`, each model call `chat {model}`, each tool call
//!   `execute_tool {tool}`. Ids are derived from the session id and positions ([`trace_id`]),
//!   times are the recorded timestamps, so exporting a session again sends identical spans.
//! - [`Collector`] sends spans over OTLP/HTTP (protobuf); [`export_sessions`] exports recorded
//!   sessions after the fact.
//! - [`LiveExport`] wraps a [`Store`](openharness_core::Store) so that every append is exported
//!   as it is recorded, through a bounded queue that drops (and counts) rather than slow or
//!   fail a run.
//!
//! # Modules
//!
//! - `mapping` (`mapping/`): [`SessionSpans`], a log to spans; `turns` and `agents` make each kind.
//! - `span`: [`Span`], one span as plain data, and its conversion for the SDK's exporter.
//! - `ids`: [`trace_id`] and the span ids, derived from the log so a re-export is identical.
//! - `export`: [`Endpoint`], [`Collector`] and [`export_sessions`], the after-the-fact export.
//! - `live`: [`LiveExport`], a store that exports what is appended, through a bounded queue.
//! - `error`: [`OtelError`].
//! - `testing` (feature `testing`): `Receiver`, an OTLP/HTTP collector on 127.0.0.1 for tests.
//!
//! ```no_run
//! # async fn demo(store: std::sync::Arc<dyn openharness_core::Store>) -> Result<(), openharness_otel::OtelError> {
//! use openharness_otel::{Collector, Endpoint, SpanOptions, export_sessions};
//! let collector = Collector::new(&Endpoint::base("http://127.0.0.1:4318"))?;
//! let sent = export_sessions(&store, &["my-session".parse().unwrap()], &collector, SpanOptions::default()).await?;
//! println!("{} spans sent", sent.spans);
//! # Ok(()) }
//! ```

mod error;
mod export;
mod ids;
mod live;
mod mapping;
mod span;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::OtelError;
pub use export::{
    Collector, ENDPOINT_VAR, Endpoint, ExportReport, TRACES_ENDPOINT_VAR, export_sessions, spans_of,
};
pub use ids::trace_id;
pub use live::{ExportStats, LiveExport, LiveOptions};
pub use mapping::{SessionSpans, SpanOptions};
pub use span::{Span, SpanEvent, SpanRef};

/// The OpenTelemetry crates this one is built on, for users who add their own spans.
pub use opentelemetry;
