//! Sending spans: [`Endpoint`] (where, from flags or the standard environment variables),
//! [`Collector`] (OTLP over HTTP with protobuf bodies) and [`export_sessions`], the after-the-fact
//! export of recorded sessions.

use std::time::Duration;

use openharness_core::builtin::SessionForked;
use openharness_core::{Event, SessionId, Store};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};

use crate::error::OtelError;
use crate::mapping::{SessionSpans, SpanOptions};
use crate::span::{Span, SpanRef};

/// The standard variable naming a collector's base URL (`/v1/traces` is appended).
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// The standard variable naming the traces URL itself (used as it is).
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";

/// How many spans one OTLP request carries at most.
pub(crate) const BATCH: usize = 512;

/// Where spans go: the full URL of a collector's OTLP/HTTP traces route.
///
/// ```
/// use openharness_otel::Endpoint;
/// assert_eq!(Endpoint::base("http://127.0.0.1:4318/").url(), "http://127.0.0.1:4318/v1/traces");
/// assert_eq!(Endpoint::traces("http://127.0.0.1:6006/v1/traces").url(), "http://127.0.0.1:6006/v1/traces");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    traces: String,
}

impl Endpoint {
    /// A collector's base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT` gives it: spans go to
    /// `{url}/v1/traces` (a URL that already ends so is taken as it is).
    ///
    /// ```
    /// use openharness_otel::Endpoint;
    /// assert_eq!(Endpoint::base("http://collector:4318/v1/traces").url(), "http://collector:4318/v1/traces");
    /// ```
    pub fn base(url: &str) -> Self {
        let url = url.trim_end_matches('/');
        if url.ends_with("/v1/traces") {
            return Self::traces(url);
        }
        Self {
            traces: format!("{url}/v1/traces"),
        }
    }

    /// The traces URL itself, as `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` gives it.
    pub fn traces(url: &str) -> Self {
        Self {
            traces: url.to_owned(),
        }
    }

    /// The endpoint the environment configures: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as it is,
    /// else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`; `None` when neither is set (or both
    /// are empty).
    pub fn from_env() -> Option<Self> {
        let var = |name| {
            std::env::var(name)
                .ok()
                .filter(|v: &String| !v.trim().is_empty())
        };
        var(TRACES_ENDPOINT_VAR)
            .map(|url| Self::traces(url.trim()))
            .or_else(|| var(ENDPOINT_VAR).map(|url| Self::base(url.trim())))
    }

    /// The URL spans are posted to.
    pub fn url(&self) -> &str {
        &self.traces
    }
}

/// A connection to an OTLP collector over HTTP (protobuf bodies), sending spans with the ids
/// and times they carry. Its resource is `service.name = openharness`.
///
/// ```no_run
/// # async fn demo(spans: Vec<openharness_otel::Span>) -> Result<(), openharness_otel::OtelError> {
/// use openharness_otel::{Collector, Endpoint};
/// let collector = Collector::new(&Endpoint::base("http://127.0.0.1:4318"))?;
/// collector.send(&spans).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Collector {
    exporter: opentelemetry_otlp::SpanExporter,
    endpoint: Endpoint,
}

impl Collector {
    /// A collector at `endpoint`. Nothing is sent until [`send`](Self::send).
    pub fn new(endpoint: &Endpoint) -> Result<Self, OtelError> {
        let failed = |message: String| OtelError::Endpoint {
            endpoint: endpoint.url().to_owned(),
            message,
        };
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|err| failed(err.to_string()))?;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(endpoint.url())
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_timeout(Duration::from_secs(10))
            .with_retry_policy(opentelemetry_otlp::RetryPolicy::recommended().with_max_retries(2))
            .build()
            .map_err(|err| failed(err.to_string()))?;
        exporter.set_resource(
            &Resource::builder_empty()
                .with_service_name("openharness")
                .build(),
        );
        Ok(Self {
            exporter,
            endpoint: endpoint.clone(),
        })
    }

    /// Where this collector is.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Sends `spans`, at most `BATCH` (512) to a request. The first request the collector does not
    /// accept (after the exporter's retries) fails the call; the ones before it were sent.
    pub async fn send(&self, spans: &[Span]) -> Result<(), OtelError> {
        for chunk in spans.chunks(BATCH) {
            self.send_batch(chunk.iter().map(Span::to_span_data).collect())
                .await?;
        }
        Ok(())
    }

    /// Sends one request of spans already converted.
    pub(crate) async fn send_batch(&self, batch: Vec<SpanData>) -> Result<(), OtelError> {
        let spans = batch.len();
        self.exporter
            .export(batch)
            .await
            .map_err(|err| OtelError::Refused {
                endpoint: self.endpoint.url().to_owned(),
                spans,
                message: err.to_string(),
            })
    }
}

/// Makes ring the process's rustls crypto provider (reqwest is built without one), unless the
/// application installed another first: for `https://` collectors.
fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // `Err` means another thread installed one meanwhile, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// What [`export_sessions`] sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExportReport {
    /// Sessions exported.
    pub sessions: usize,
    /// Spans sent.
    pub spans: usize,
}

/// The span a fork's first span links to: `forked.parent`'s span at `forked.position`, derived
/// from the parent's log. `None` when the parent has no span there.
pub(crate) async fn fork_link(
    store: &dyn Store,
    forked: &SessionForked,
) -> Result<Option<SpanRef>, OtelError> {
    let mut parent = SessionSpans::new(forked.parent.clone(), SpanOptions::default());
    let mut events = store.stream_events(&forked.parent, 0..forked.position);
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(|source| OtelError::Store {
            session: forked.parent.clone(),
            source,
        })?;
        parent.push(recorded.seq, &recorded.event);
    }
    Ok(parent.position_span())
}

/// Every span of `session`, read from `store` (a fork linked to its parent's span), open spans
/// closed at the last event. For a session of any length prefer [`export_sessions`], which
/// holds one batch of spans at a time.
///
/// ```
/// # async fn demo(store: &dyn openharness_core::Store) -> Result<(), openharness_otel::OtelError> {
/// use openharness_otel::{SpanOptions, spans_of};
/// let spans = spans_of(store, &"my-session".parse().unwrap(), SpanOptions::default()).await?;
/// for span in &spans {
///     println!("{} {}", span.span_id, span.name);
/// }
/// # Ok(()) }
/// ```
pub async fn spans_of(
    store: &dyn Store,
    session: &SessionId,
    options: SpanOptions,
) -> Result<Vec<Span>, OtelError> {
    let mut spans = Vec::new();
    walk(store, session, options, |batch| {
        spans.extend(batch);
        std::future::ready(Ok(()))
    })
    .await?;
    Ok(spans)
}

/// Maps `session` event by event, handing `sink` the closed spans in batches of [`BATCH`].
async fn walk<F, Fut>(
    store: &dyn Store,
    session: &SessionId,
    options: SpanOptions,
    mut sink: F,
) -> Result<(), OtelError>
where
    F: FnMut(Vec<Span>) -> Fut,
    Fut: Future<Output = Result<(), OtelError>>,
{
    let read_failed = |source| OtelError::Store {
        session: session.clone(),
        source,
    };
    if store.session(session).await.map_err(read_failed)?.is_none() {
        return Err(OtelError::UnknownSession(session.clone()));
    }
    let mut mapping = SessionSpans::new(session.clone(), options);
    let mut pending = Vec::new();
    let mut events = store.stream_events(session, 0..u64::MAX);
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(read_failed)?;
        if recorded.seq == 0
            && recorded.event.name == SessionForked::NAME
            && let Ok(forked) = recorded.event.decode::<SessionForked>()
            && let Some(link) = fork_link(store, &forked).await?
        {
            mapping.link_fork(link);
        }
        pending.extend(mapping.push(recorded.seq, &recorded.event));
        if pending.len() >= BATCH {
            sink(std::mem::take(&mut pending)).await?;
        }
    }
    pending.extend(mapping.finish());
    if !pending.is_empty() {
        sink(pending).await?;
    }
    Ok(())
}

/// Exports recorded sessions to `collector`, each mapped with `options`: what a re-export of the
/// same sessions sends again is identical (ids, times, attributes).
///
/// ```no_run
/// # async fn demo(store: &dyn openharness_core::Store) -> Result<(), openharness_otel::OtelError> {
/// use openharness_otel::{Collector, Endpoint, SpanOptions, export_sessions};
/// let endpoint = Endpoint::from_env().ok_or(openharness_otel::OtelError::NoEndpoint)?;
/// let report = export_sessions(store, &["s-1".parse().unwrap()], &Collector::new(&endpoint)?, SpanOptions::default()).await?;
/// assert_eq!(report.sessions, 1);
/// # Ok(()) }
/// ```
pub async fn export_sessions(
    store: &dyn Store,
    sessions: &[SessionId],
    collector: &Collector,
    options: SpanOptions,
) -> Result<ExportReport, OtelError> {
    let mut report = ExportReport::default();
    for session in sessions {
        let mut sent = 0;
        walk(store, session, options, |batch| {
            sent += batch.len();
            async move { collector.send(&batch).await }
        })
        .await?;
        report.sessions += 1;
        report.spans += sent;
    }
    Ok(report)
}
