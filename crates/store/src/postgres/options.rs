//! [`PostgresOptions`] and the limits and timings of a [`PostgresStore`](super::PostgresStore)'s
//! connections.

use std::time::Duration;

/// How many connections a store opens for queries at most (besides its listener), unless
/// [`PostgresOptions::connections`] says otherwise.
pub const CONNECTIONS: usize = 4;

/// The most query connections [`PostgresOptions::connections`] takes.
pub const MAX_CONNECTIONS: usize = 256;

/// How [`PostgresStore::connect_with`](crate::PostgresStore::connect_with) connects: the schema its tables live in and how many
/// query connections it pools.
///
/// ```
/// use openharness_store::{CONNECTIONS, PostgresOptions};
/// let options = PostgresOptions::default();
/// assert_eq!((options.schema.as_str(), options.connections), ("public", CONNECTIONS));
/// let options = PostgresOptions::default().schema("tenant_a").connections(16);
/// assert_eq!((options.schema.as_str(), options.connections), ("tenant_a", 16));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PostgresOptions {
    /// The schema every table is kept in (created if needed): lowercase letters, digits and
    /// underscores. `public` by default.
    pub schema: String,
    /// The most query connections the pool opens (besides the listener and the claims'
    /// connection): [`CONNECTIONS`] by default, 1 to [`MAX_CONNECTIONS`]. More lets more
    /// sessions' operations run at once on a busy replica; each is a server process.
    pub connections: usize,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: "public".to_owned(),
            connections: CONNECTIONS,
        }
    }
}

impl PostgresOptions {
    /// Keeps the tables in `schema`.
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// Pools at most `connections` query connections.
    pub fn connections(mut self, connections: usize) -> Self {
        self.connections = connections;
        self
    }
}

/// How long the listener connection may stay lost (reconnecting) before live tails end with an
/// error.
pub const LISTENER_GRACE: Duration = Duration::from_secs(30);

/// How long connecting may take (unless the URL sets `connect_timeout`).
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The listener's first pause before reconnecting, doubled after each failure up to
/// [`RECONNECT_PAUSE_MAX`].
pub(super) const RECONNECT_PAUSE: Duration = Duration::from_millis(50);

/// The listener's longest pause between reconnection attempts.
pub(super) const RECONNECT_PAUSE_MAX: Duration = Duration::from_secs(1);
