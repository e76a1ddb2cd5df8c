//! The pool of query connections of a [`PostgresStore`](super::PostgresStore): each opened with
//! its statements prepared, handed out only while it is open.

use deadpool::managed::{Metrics, RecycleError, RecycleResult};
use tokio_postgres::{Client, NoTls};

use super::error::detail;
use super::schema::{APPEND, APPEND_ONE, APPEND_WITH_SESSION, LENGTH};

/// A query connection with its prepared statements (prepared once, when it opens: a statement
/// sent as text costs an extra round trip per query).
pub(super) struct Connection {
    pub(super) client: Client,
    pub(super) append_one: tokio_postgres::Statement,
    pub(super) append: tokio_postgres::Statement,
    pub(super) append_with_session: tokio_postgres::Statement,
    pub(super) length: tokio_postgres::Statement,
    pub(super) events: tokio_postgres::Statement,
}

/// Opens the pool's connections, and tells closed ones from live ones when handing them out.
pub(super) struct Manager {
    pub(super) config: tokio_postgres::Config,
    /// `SET search_path` to the store's schema.
    pub(super) set_path: String,
}

impl deadpool::managed::Manager for Manager {
    type Type = Connection;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<Connection, tokio_postgres::Error> {
        let (client, connection) = self.config.connect(NoTls).await?;
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::warn!(err = %detail(&err), "a PostgreSQL store connection ended");
            }
        });
        client.batch_execute(&self.set_path).await?;
        // Sent together: the driver pipelines them, one round trip in all.
        let (append_one, append, append_with_session, length, events) = tokio::try_join!(
            client.prepare(APPEND_ONE),
            client.prepare(APPEND),
            client.prepare(APPEND_WITH_SESSION),
            client.prepare(LENGTH),
            client.prepare(EVENTS),
        )?;
        Ok(Connection {
            client,
            append_one,
            append,
            append_with_session,
            length,
            events,
        })
    }

    async fn recycle(
        &self,
        connection: &mut Connection,
        _: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        // No query (that would cost a round trip per operation): a connection that broke
        // since is caught by the operation's retry.
        if connection.client.is_closed() {
            return Err(RecycleError::message("the connection is closed"));
        }
        Ok(())
    }
}

/// Reads a range of a session's events.
pub(super) const EVENTS: &str =
    "SELECT seq, body FROM oh_events WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq";
