//! [`OtelError`]: what can go wrong exporting spans.

use openharness_core::{SessionId, StoreError};

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// No collector to send to.
    #[error(
        "no OpenTelemetry endpoint is configured: pass --endpoint URL or set OTEL_EXPORTER_OTLP_ENDPOINT (for example http://127.0.0.1:4318)"
    )]
    NoEndpoint,
    /// The endpoint is not a URL the exporter can use.
    #[error("cannot export to {endpoint}: {message}")]
    Endpoint {
        /// The endpoint given.
        endpoint: String,
        /// What is wrong with it.
        message: String,
    },
    /// The collector could not be reached or refused the spans.
    #[error("the collector at {endpoint} did not accept {spans} spans: {message}")]
    Refused {
        /// Where the spans were sent.
        endpoint: String,
        /// How many spans the refused request carried.
        spans: usize,
        /// What the exporter said.
        message: String,
    },
    /// The session has no events in the store.
    #[error("there is no session {0} in the store")]
    UnknownSession(SessionId),
    /// Reading a session's events failed.
    #[error("cannot read session {session}")]
    Store {
        /// The session being read.
        session: SessionId,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}
