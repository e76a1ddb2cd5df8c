//! [`PostgresStore`] (feature `postgres`): sessions in PostgreSQL, shared by many processes on
//! many machines, with live tails across processes through `LISTEN`/`NOTIFY`.
//!
//! Schema (created by the embedded [`MIGRATIONS`], recorded in `oh_migrations`):
//!
//! | table          | key                                   | columns                        |
//! |----------------|---------------------------------------|--------------------------------|
//! | `oh_events`    | (session, seq); unique (session, id)  | id uuid, body (envelope JSON)  |
//! | `oh_sessions`  | id                                    | created, workflow, parent      |
//! | `oh_snapshots` | (session, position)                   | state (JSON)                   |
//!
//! The events are the only record of a session's length: it is `max(seq) + 1`, read from the
//! primary key's index, and a session's last event time is that of its last event. So an append
//! inserts its events and nothing else, except that the first append of a session inserts its
//! `oh_sessions` row (created, workflow, parent), and so does, rarely, a later batch that
//! carries the session's first `workflow:started` or `session:forked`. (Version 1 of the schema
//! kept a count and the last event time in `oh_sessions`, rewriting that row on every append;
//! migration 2 drops both columns.)
//!
//! An append is one SQL statement, so one round trip and atomic without an explicit
//! transaction: it inserts the batch only when the session's length equals `expected_seq`, and
//! calls `pg_notify` with the session id, once per batch. There are three prepared forms, the
//! cheapest that fits: [`APPEND_ONE`](schema::APPEND_ONE) for a single event (it selects the
//! previous event as its source row: no subquery, no `WITH`), [`APPEND`](schema::APPEND) for a
//! batch (`unnest` of an id array and a body array), and
//! [`APPEND_WITH_SESSION`](schema::APPEND_WITH_SESSION) when the session row must be written
//! too.
//! The unique keys make a racing writer fail; only then (or when the length differs) a second
//! query decides between conflict, retry and invalid batch with the same rules as every
//! backend. Every append after a session's first also locks the event before its own (`FOR KEY
//! SHARE`), so that `clear` (the `oh_clear` function, which deletes a session's events until
//! none are left) and appends racing it never leave half a session.
//!
//! # Connections, and what happens when they drop
//!
//! Queries go through a pool ([`deadpool`]) of at most [`CONNECTIONS`] connections (or
//! [`PostgresOptions::connections`]), opened as
//! needed; each prepares the store's statements once, when it opens (a statement sent as text
//! costs an extra round trip per query). The pool hands out the connection returned last
//! (LIFO), so a lone writer stays on one warm server process: measured on the 2-core bench
//! machine, spreading sequential appends over four connections cost about 40 µs per append
//! (each server process woke from idle), while concurrent operations still get a connection
//! each.
//!
//! Connections drop: a server restart, a failover, `pg_terminate_backend`, an idle reaper. A
//! connection found closed when the pool hands it out is replaced by a new one. An operation
//! whose connection breaks under it (the driver reports it closed, an I/O error, or the server
//! ends the session: SQLSTATE class 08, 57P01–57P03, any `FATAL`) runs again on another
//! connection, and the broken one leaves the pool; so does one whose new connection breaks
//! while it opens (a termination racing the open). Every operation is safe to repeat: an append
//! is idempotent by event id (a repeat of a batch that did commit finds its events stored at
//! the expected seqs and succeeds, writing nothing), a snapshot write is an upsert, `clear` is
//! idempotent, reads read. At most one retry per pooled connection. Server errors (a conflict,
//! an invalid request) are never retried.
//!
//! The listener connection (live tails) reconnects on its own, pausing 50 ms, then twice as
//! long each time up to 1 s. Once it `LISTEN`s again it wakes every tail, and each re-reads
//! from the next seq it has not delivered: appends made while it was down are delivered, once.
//! A tail whose read fails because the connections are down retries it meanwhile. Only when the
//! listener stays down for [`LISTENER_GRACE`] do tails end, with an error saying why; new
//! subscriptions work again once it is back.
//!
//! # Claims
//!
//! [`Store::claim`] takes a session-level advisory lock (`pg_try_advisory_lock`) on one
//! connection of this process kept for claims, so PostgreSQL decides which of several
//! processes runs a session's turns and frees the claims of a process that dies with its
//! connection. Keys hash the schema and the session id.
//!
//! Each claim also moves the session's fencing token on (in `oh_claims`, in the statement that
//! takes the lock), and every append this process makes under a claim checks that token in its
//! own statement: a process that lost its claim without knowing (its claims connection cut,
//! another replica claiming the session since) has its appends refused with
//! [`StoreError::Fenced`], and the log keeps one writer. See `postgres/claims.rs`.
//!
//! Connections report `application_name` `openharness <schema>` (unless the URL sets one), so
//! operators see which store a backend serves. Nothing the store returns or logs contains the
//! password of its URL: [`Store::describe`] is `postgres:<host>/<database>/<schema>`, and
//! [`redact_url`](crate::redact_url) is there for callers that show the URL itself.

mod claims;
mod error;
mod listen;
mod options;
mod pool;
mod schema;

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use deadpool::managed::{Object, Pool, PoolError, QueueMode};
use openharness_core::{
    Envelope, EventId, SessionId, SessionInfo, Store, StoreError,
    adapter::{Claim, SnapshotJson, Subscription},
};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

use crate::append::{Plan, plan_append};
use crate::live::{Notifier, tail};

pub use error::PostgresError;
pub use options::{CONNECTIONS, LISTENER_GRACE, MAX_CONNECTIONS, PostgresOptions};
pub use schema::MIGRATIONS;

use options::{CONNECT_TIMEOUT, RECONNECT_PAUSE, RECONNECT_PAUSE_MAX};
use pool::{Connection, Manager};

use error::{broken, detail, pool_error};
use listen::listen;
use schema::{SESSION_INFO, TOKEN, migrate};

/// Reads longer than this are split across the connections.
const PARALLEL_READ: u64 = 20_000;

/// A [`Store`] in PostgreSQL: many processes on many machines may share its sessions, and
/// [`subscribe`](Store::subscribe) sees appends made by any of them.
///
/// Clones share the connections. Each store holds a pool of query connections and one
/// listener connection, and replaces any that drop (see the module docs): operations and live
/// tails carry on through a server restart or a failover.
///
/// ```no_run
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::PostgresStore;
///
/// # async fn demo() -> Result<(), openharness_core::StoreError> {
/// let store = PostgresStore::connect("postgres://postgres@127.0.0.1:5432/test").await?;
/// let session = SessionId::new();
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// store.append(&session, &[event], 0).await?;
/// let mut tail = store.subscribe(&session, 0).await?;
/// assert_eq!(tail.next().await.unwrap()?.seq, 0);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool<Manager>,
    /// The pool's size.
    connections: usize,
    notifier: Notifier,
    channel: String,
    describe: String,
    /// The listener task (it owns the listener connection), stopped with the store.
    listener: tokio::task::AbortHandle,
    /// The claims this process holds (advisory locks on a connection of their own).
    claims: Arc<claims::Claims>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("store", &self.inner.describe)
            .finish_non_exhaustive()
    }
}

/// Evaluates `$query` (a query's result, using the connection `$c`) on a connection of
/// `$store`; when the connection breaks under it, evaluates it again on another (every
/// operation of this store is safe to repeat; see the module docs), at most once per pooled
/// connection. Returns the query's result; having no connection at all returns from the
/// enclosing function with the error. (A macro, not a method taking an async closure: the
/// futures of those are not yet known to be `Send` for every borrow.)
macro_rules! with_connection {
    ($store:expr, |$c:ident| $query:expr) => {{
        let store: &PostgresStore = $store;
        let mut retries = 0;
        loop {
            // The connection returned last (see the module docs), a new one if none is idle,
            // or the first returned if all the pool's connections are busy.
            let connection = match store.inner.pool.get().await {
                Ok(connection) => connection,
                // A new connection the server ended while it opened (a restart or a
                // termination racing the open): as a query's broken connection, try another.
                Err(PoolError::Backend(err))
                    if broken(&err) && retries < store.inner.connections =>
                {
                    retries += 1;
                    tracing::debug!(
                        store = %store.inner.describe,
                        err = %detail(&err),
                        "a new PostgreSQL connection broke as it opened; opening another"
                    );
                    continue;
                }
                Err(err) => return Err(pool_error(&store.inner.describe, err).into()),
            };
            let result = {
                let $c: &Connection = &connection;
                $query
            };
            match result {
                Err(err) if broken(&err) && retries < store.inner.connections => {
                    // Out of the pool for good: it is dead.
                    drop(Object::take(connection));
                    retries += 1;
                    tracing::debug!(
                        store = %store.inner.describe,
                        err = %detail(&err),
                        "a PostgreSQL connection broke; running the query again on another"
                    );
                }
                result => break result,
            }
        }
    }};
}

// After `with_connection!`, which it uses.
mod operations;

impl PostgresStore {
    /// Connects to the database at `url` (a `postgres://` URL or key-value string), creating
    /// the tables in the `public` schema if needed.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(url, "public").await
    }

    /// Connects and keeps every table in `schema` (created if needed): separate schemas are
    /// separate stores in one database, as tests use them.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PostgresOptions::default().schema(schema)).await
    }

    /// Connects with `options`: the schema to keep the tables in and the pool's size.
    ///
    /// ```no_run
    /// use openharness_store::{PostgresOptions, PostgresStore};
    /// # async fn demo() -> Result<(), openharness_core::StoreError> {
    /// let options = PostgresOptions::default().connections(16);
    /// let store = PostgresStore::connect_with("postgres://postgres@127.0.0.1:5432/test", options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self, StoreError> {
        let PostgresOptions {
            schema,
            connections,
        } = options;
        let schema = schema.as_str();
        if !(1..=MAX_CONNECTIONS).contains(&connections) {
            return Err(PostgresError::Connections(connections.to_string()).into());
        }
        let valid = !schema.is_empty()
            && schema.len() <= 50
            && schema
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(PostgresError::Schema(schema.to_owned()).into());
        }
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|err: tokio_postgres::Error| PostgresError::Url(err.to_string()))?;
        if config.get_application_name().is_none() {
            // Names the store's connections in `pg_stat_activity`, for operators (and tests).
            config.application_name(application_name(schema));
        }
        let host = config
            .get_hosts()
            .first()
            .map(|host| match host {
                tokio_postgres::config::Host::Tcp(name) => name.clone(),
                tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
            })
            .unwrap_or_default();
        let describe = format!(
            "postgres:{host}/{}/{schema}",
            config.get_dbname().unwrap_or("")
        );
        let connect_error = |source| PostgresError::Connect {
            store: describe.clone(),
            source,
        };

        // Migrations first, on a connection of their own: the pool's connections prepare
        // statements on the tables.
        {
            let (mut client, connection) = config.connect(NoTls).await.map_err(connect_error)?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            migrate(&mut client, schema)
                .await
                .map_err(|source| PostgresError::Query {
                    store: describe.clone(),
                    operation: "migration".to_owned(),
                    source,
                })?;
        }
        let pool = Pool::builder(Manager {
            config: config.clone(),
            set_path: format!("SET search_path TO \"{schema}\""),
        })
        .max_size(connections)
        .queue_mode(QueueMode::Lifo)
        .runtime(deadpool::Runtime::Tokio1)
        .create_timeout(Some(CONNECT_TIMEOUT * 2))
        .build()
        .map_err(|err| PostgresError::Unavailable {
            store: describe.clone(),
            reason: err.to_string(),
        })?;
        // One connection now: a server out of reach or a wrong password fails here.
        drop(pool.get().await.map_err(|err| pool_error(&describe, err))?);

        let claims = Arc::new(claims::Claims::new(
            config.clone(),
            schema,
            describe.clone(),
        ));
        let channel = format!("oh_{schema}");
        let notifier = Notifier::with_transient_errors(LISTENER_GRACE, |err| {
            PostgresError::of(err).is_some_and(PostgresError::is_connection_lost)
        });
        let (ready, listening) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen(
            config,
            channel.clone(),
            notifier.clone(),
            describe.clone(),
            ready,
        ))
        .abort_handle();
        let first = listening.await.unwrap_or(Err(None));
        if let Err(err) = first {
            listener.abort();
            return Err(match err {
                Some(source) => connect_error(source),
                None => PostgresError::Unavailable {
                    store: describe.clone(),
                    reason: "the listener connection closed".to_owned(),
                },
            }
            .into());
        }

        tracing::debug!(store = %describe, "connected to PostgreSQL");
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                connections,
                notifier,
                channel,
                describe,
                listener,
                claims,
            }),
        })
    }

    fn query_error(
        &self,
        operation: impl Into<String>,
    ) -> impl FnOnce(tokio_postgres::Error) -> StoreError {
        let store = self.inner.describe.clone();
        let operation = operation.into();
        move |source| {
            PostgresError::Query {
                store,
                operation,
                source,
            }
            .into()
        }
    }

    /// The events of `session` in `range`, in one query (one snapshot).
    async fn read_range(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let (start, end) = (seq_param(range.start), seq_param(range.end));
        let rows = with_connection!(self, |c| {
            c.client
                .query(&c.events, &[&session.as_str(), &start, &end])
                .await
        })
        .map_err(self.query_error(format!("read of session {session}")))?;
        let records: Vec<(u64, &[u8])> = rows
            .iter()
            .map(|row| {
                (
                    row.get::<_, i64>(0) as u64,
                    row.get::<_, &str>(1).as_bytes(),
                )
            })
            .collect();
        crate::decode_all(session, &records, crate::decode_json)
    }

    /// The session's length.
    async fn length(&self, session: &SessionId) -> Result<u64, StoreError> {
        let row = with_connection!(self, |c| c
            .client
            .query_one(&c.length, &[&session.as_str()])
            .await)
        .map_err(self.query_error(format!("read of session {session}'s length")))?;
        Ok(row.get::<_, i64>(0) as u64)
    }

    /// The session's length and where each of `ids` is stored in it.
    async fn state_of(
        &self,
        session: &SessionId,
        ids: &[uuid::Uuid],
    ) -> Result<(u64, std::collections::HashMap<uuid::Uuid, u64>), StoreError> {
        let len = self.length(session).await?;
        let rows = with_connection!(self, |c| {
            c.client
                .query(
                    "SELECT id, seq FROM oh_events WHERE session = $1 AND id = ANY($2)",
                    &[&session.as_str(), &ids],
                )
                .await
        })
        .map_err(self.query_error(format!("read of session {session}'s event ids")))?;
        let stored = rows
            .iter()
            .map(|row| (row.get::<_, uuid::Uuid>(0), row.get::<_, i64>(1) as u64))
            .collect();
        Ok((len, stored))
    }

    /// Fails with [`StoreError::Fenced`] when session's fencing token is no longer `token`
    /// (another claim replaced the one an append was made under).
    async fn check_fence(&self, session: &SessionId, token: i64) -> Result<(), StoreError> {
        let row = with_connection!(self, |c| c
            .client
            .query_opt(TOKEN, &[&session.as_str()])
            .await)
        .map_err(self.query_error(format!("read of session {session}'s claim")))?;
        let current = row.map_or(0, |row| row.get::<_, i64>(0));
        if current == token {
            return Ok(());
        }
        Err(StoreError::Fenced {
            session: session.clone(),
            token: u64::try_from(token).unwrap_or(0),
            current: u64::try_from(current).unwrap_or(0),
        })
    }
}

/// The `application_name` a store's connections report unless the URL sets one:
/// `openharness <schema>`.
fn application_name(schema: &str) -> String {
    format!("openharness {schema}")
}

fn timestamp(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

fn seq_param(seq: u64) -> i64 {
    i64::try_from(seq).unwrap_or(i64::MAX)
}

fn corrupt(session: &SessionId, seq: u64, message: String) -> StoreError {
    StoreError::Corrupt {
        session: session.clone(),
        seq,
        message,
    }
}

/// Session metadata from a [`SESSION_INFO`] row.
fn info_from_row(row: &tokio_postgres::Row) -> Result<SessionInfo, StoreError> {
    let id: String = row.get(0);
    let session: SessionId = id.parse().map_err(|err| {
        StoreError::Invalid(format!("the store holds an invalid session id: {err}"))
    })?;
    let created: String = row.get(1);
    let created = created.parse().map_err(|err| {
        corrupt(
            &session,
            0,
            format!("stored session metadata has a bad timestamp: {err}"),
        )
    })?;
    let parent: Option<String> = row.get(3);
    let last_seq = row.get::<_, i64>(4) as u64;
    let last: &str = row.get(5);
    let (last_event, status) = openharness_core::adapter::last_event_summary(last.as_bytes())
        .map_err(|err| corrupt(&session, last_seq, crate::not_an_envelope(err)))?;
    Ok(SessionInfo {
        created,
        last_event,
        status,
        count: last_seq + 1,
        workflow: row.get(2),
        parent: parent.and_then(|p| p.parse().ok()),
        id: session,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn errors_and_descriptions_never_show_the_password() {
        // Nothing listens on port 1 of the loopback: connecting fails.
        for url in [
            "postgres://alice:Hunter2Secret@127.0.0.1:1/app",
            "host=127.0.0.1 port=1 user=alice password=Hunter2Secret dbname=app",
            "postgres://alice:Hunter2Secret@127.0.0.1:notaport/app",
        ] {
            let err = PostgresStore::connect(url)
                .await
                .expect_err("nothing listens there");
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains("Hunter2Secret"), "{shown}");
        }
    }
}
