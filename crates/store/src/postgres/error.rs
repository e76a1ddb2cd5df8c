//! [`PostgresError`]: why a [`PostgresStore`](super::PostgresStore) could not connect or
//! complete an operation, and which of those mean a lost connection.

use deadpool::managed::PoolError;
use openharness_core::StoreError;

/// Why a [`PostgresStore`](super::PostgresStore) could not connect or complete an operation.
///
/// Carried inside [`StoreError::Backend`]; get it back with [`PostgresError::of`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PostgresError {
    /// The URL is not a PostgreSQL connection string.
    #[error("invalid PostgreSQL URL: {0}")]
    Url(String),
    /// The schema name is not a plain lowercase identifier.
    #[error("invalid schema name {0:?}: use lowercase letters, digits and underscores")]
    Schema(String),
    /// The pool size asked for is not a whole number from 1 to [`MAX_CONNECTIONS`](super::options::MAX_CONNECTIONS).
    #[error("invalid pool size `{0}`: give a whole number of connections from 1 to {max}", max = super::options::MAX_CONNECTIONS)]
    Connections(String),
    /// Connecting failed.
    #[error("cannot connect to {store}")]
    Connect {
        /// The store, as [`Store::describe`](openharness_core::Store::describe) gives it.
        store: String,
        /// What the driver reported.
        source: tokio_postgres::Error,
    },
    /// No connection could be had: the pool timed out or is closed.
    #[error("{store}: no connection: {reason}")]
    Unavailable {
        /// The store, as [`Store::describe`](openharness_core::Store::describe) gives it.
        store: String,
        /// Why.
        reason: String,
    },
    /// A query failed.
    #[error("{store}: {operation} failed")]
    Query {
        /// The store, as [`Store::describe`](openharness_core::Store::describe) gives it.
        store: String,
        /// What was being done.
        operation: String,
        /// What the driver reported.
        source: tokio_postgres::Error,
    },
}

/// The driver's error with what it wraps: tokio-postgres displays a server error as just
/// "db error", leaving the server's message (such as the violated constraint) to the source.
pub(super) fn detail(err: &tokio_postgres::Error) -> String {
    match std::error::Error::source(err) {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

impl PostgresError {
    /// The `PostgresError` inside a store error, if it came from a [`PostgresStore`](super::PostgresStore).
    pub fn of(err: &StoreError) -> Option<&PostgresError> {
        match err {
            StoreError::Backend(source) => source.downcast_ref(),
            _ => None,
        }
    }

    /// Whether the error is the server being out of reach (connecting failed, or the
    /// connection broke) rather than the server refusing a request: trying again later may
    /// succeed.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            PostgresError::Url(_) | PostgresError::Schema(_) | PostgresError::Connections(_) => {
                false
            }
            PostgresError::Connect { .. } | PostgresError::Unavailable { .. } => true,
            PostgresError::Query { source, .. } => broken(source),
        }
    }
}

/// Whether `err` means the connection is gone (so the query may run again on another one),
/// rather than the server refusing the query: the driver found it closed, the socket failed,
/// or the server ended the session (connection exception class 08, an administrator or crash
/// shutdown, a server not accepting connections, or any `FATAL` error).
pub(super) fn broken(err: &tokio_postgres::Error) -> bool {
    if err.is_closed() {
        return true;
    }
    if let Some(db) = err.as_db_error() {
        let code = db.code().code();
        return code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03")
            || matches!(db.severity(), "FATAL" | "PANIC");
    }
    std::error::Error::source(err).is_some_and(|cause| cause.is::<std::io::Error>())
}

impl From<PostgresError> for StoreError {
    fn from(err: PostgresError) -> Self {
        StoreError::backend(err)
    }
}

/// The error for a failed `Pool::get` (deadpool's).
pub(super) fn pool_error(store: &str, err: PoolError<tokio_postgres::Error>) -> PostgresError {
    match err {
        PoolError::Backend(source) => PostgresError::Connect {
            store: store.to_owned(),
            source,
        },
        other => PostgresError::Unavailable {
            store: store.to_owned(),
            reason: other.to_string(),
        },
    }
}
