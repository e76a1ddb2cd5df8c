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
//! cheapest that fits: [`APPEND_ONE`] for a single event (it selects the previous event as
//! its source row: no subquery, no `WITH`), [`APPEND`] for a batch (`unnest` of an id array
//! and a body array), and [`APPEND_WITH_SESSION`] when the session row must be written too.
//! The unique keys make a racing writer fail; only then (or when the length differs) a second
//! query decides between conflict, retry and invalid batch with the same rules as every
//! backend. Every append after a session's first also locks the event before its own (`FOR KEY
//! SHARE`), so that `clear` (the `oh_clear` function, which deletes a session's events until
//! none are left) and appends racing it never leave half a session.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, SecondsFormat, Utc};
use openharness_core::{
    Envelope, EventId, SessionId, SessionInfo, Snapshot, Store, StoreError, Subscription,
};
use tokio_postgres::error::SqlState;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::append::{Plan, plan_append};
use crate::live::{Notifier, tail};

/// The schema migrations, applied in order; each runs once per schema, inside a transaction
/// holding an advisory lock, so concurrent processes starting together apply them once.
///
/// Version 2 drops `oh_sessions.count` and `oh_sessions.last_event`, which every append used to
/// rewrite: both are now derived from the events (see the module docs), so existing data needs
/// no copying. A process of an older version still running against a migrated schema fails
/// its appends with an error rather than writing a stale count.
///
/// Version 3 adds `oh_clear`, which clears a session so that no append racing it can leave an
/// event behind: every append after the first locks the event before its own (`FOR KEY
/// SHARE`), and the function deletes the session's events until none are left.
pub const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        "CREATE TABLE oh_sessions (
            id text PRIMARY KEY,
            created text NOT NULL,
            last_event text NOT NULL,
            count bigint NOT NULL,
            workflow text,
            parent text
        );
        CREATE TABLE oh_events (
            session text NOT NULL,
            seq bigint NOT NULL,
            id uuid NOT NULL,
            body text NOT NULL,
            PRIMARY KEY (session, seq),
            UNIQUE (session, id)
        );
        CREATE TABLE oh_snapshots (
            session text NOT NULL,
            position bigint NOT NULL,
            state text NOT NULL,
            PRIMARY KEY (session, position)
        );",
    ),
    (
        2,
        "ALTER TABLE oh_sessions DROP COLUMN count, DROP COLUMN last_event;",
    ),
    (
        3,
        "CREATE FUNCTION oh_clear(p_session text, p_channel text) RETURNS void
         LANGUAGE plpgsql AS $$
         DECLARE
             existed boolean;
         BEGIN
             -- Each DELETE takes a new snapshot. One that waited for an append holding the
             -- previous event (FOR KEY SHARE) misses the event that append added, so repeat
             -- until none is left; appends that come later wait for this transaction and then
             -- find their previous event gone.
             LOOP
                 DELETE FROM oh_events WHERE session = p_session;
                 EXIT WHEN NOT FOUND;
             END LOOP;
             DELETE FROM oh_sessions WHERE id = p_session;
             existed := FOUND;
             -- A first append (seq 0 locks nothing) may have committed its events and its row
             -- between the two statements above: its row is gone now, so its events go too.
             -- Later first appends wait for this transaction on the deleted row.
             LOOP
                 DELETE FROM oh_events WHERE session = p_session;
                 EXIT WHEN NOT FOUND;
             END LOOP;
             DELETE FROM oh_snapshots WHERE session = p_session;
             IF existed THEN
                 PERFORM pg_notify(p_channel, p_session);
             END IF;
         END
         $$;",
    ),
];

/// The most common append, one event to a session that has a row, at `$2` > 0: `$1` session,
/// `$2` expected seq, `$3` id, `$4` body, `$5` the notification channel. Writes one row when
/// the event at `$2 - 1` exists, none otherwise; when the session is longer than `$2`, the
/// primary key fails it.
///
/// The cheapest form measured with pgbench: no `WITH` (its materialised `RETURNING` cost about
/// as much as the notification), no `unnest`, no `max(seq)` subquery (the previous event is
/// the row selected), and the notification as the `RETURNING` value.
const APPEND_ONE: &str = "
INSERT INTO oh_events (session, seq, id, body)
SELECT $1::text, $2::bigint, $3::uuid, $4::text
FROM oh_events WHERE session = $1 AND seq = $2::bigint - 1
FOR KEY SHARE
RETURNING pg_notify($5, $1)";

/// A batch to a session that has a row: `$1` session, `$2` expected seq, `$3` ids, `$4`
/// bodies, `$5` the notification channel. Returns one row when it wrote the batch, none when
/// the session's length is not `$2`. (One notification per batch, not per event.)
const APPEND: &str = "
WITH ins AS (
    INSERT INTO oh_events (session, seq, id, body)
    SELECT $1, $2::bigint + e.ord - 1, e.id, e.body
    FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS e(id, body, ord)
    WHERE (SELECT COALESCE(max(seq) + 1, 0) FROM oh_events WHERE session = $1) = $2::bigint
      AND ($2::bigint = 0 OR EXISTS (
          SELECT 1 FROM oh_events WHERE session = $1 AND seq = $2::bigint - 1 FOR KEY SHARE
      ))
    RETURNING 1
)
SELECT pg_notify($5, $1) FROM (SELECT 1 FROM ins LIMIT 1) AS written";

/// [`APPEND`] that also writes the session's row: for the first batch of a session (`$2` = 0:
/// `$6` created, `$7` workflow, `$8` parent) and for a later batch that names the workflow or
/// the parent, which fills them in if the session has none yet.
const APPEND_WITH_SESSION: &str = "
WITH ins AS (
    INSERT INTO oh_events (session, seq, id, body)
    SELECT $1, $2::bigint + e.ord - 1, e.id, e.body
    FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS e(id, body, ord)
    WHERE (SELECT COALESCE(max(seq) + 1, 0) FROM oh_events WHERE session = $1) = $2::bigint
      AND ($2::bigint = 0 OR EXISTS (
          SELECT 1 FROM oh_events WHERE session = $1 AND seq = $2::bigint - 1 FOR KEY SHARE
      ))
    RETURNING 1
), written AS (
    SELECT 1 FROM ins LIMIT 1
), meta AS (
    INSERT INTO oh_sessions (id, created, workflow, parent)
    SELECT $1, $6, $7, $8 FROM written
    ON CONFLICT (id) DO UPDATE SET
        created = CASE WHEN $2::bigint = 0 THEN EXCLUDED.created ELSE oh_sessions.created END,
        workflow = CASE WHEN $2::bigint = 0 THEN EXCLUDED.workflow
                        ELSE COALESCE(oh_sessions.workflow, EXCLUDED.workflow) END,
        parent = CASE WHEN $2::bigint = 0 THEN EXCLUDED.parent
                      ELSE COALESCE(oh_sessions.parent, EXCLUDED.parent) END
)
SELECT pg_notify($5, $1) FROM written";

/// A session's length.
const LENGTH: &str = "SELECT COALESCE(max(seq) + 1, 0) FROM oh_events WHERE session = $1";

/// Session metadata: the row and the session's last event (its seq gives the count, its body
/// the last event time). `WHERE` clauses are appended.
const SESSION_INFO: &str = "
SELECT s.id, s.created, s.workflow, s.parent, last.seq, last.body
FROM oh_sessions s
CROSS JOIN LATERAL (
    SELECT seq, body FROM oh_events e WHERE e.session = s.id ORDER BY seq DESC LIMIT 1
) AS last";

/// Reads longer than this are split across the connections.
const PARALLEL_READ: u64 = 20_000;

/// How many connections a store opens for queries (besides its listener).
const CONNECTIONS: usize = 4;

/// Why a [`PostgresStore`] could not connect or complete an operation.
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
    /// Connecting failed.
    #[error("cannot connect to {store}: {}", detail(source))]
    Connect {
        /// The store, as [`Store::describe`] gives it.
        store: String,
        /// What the driver reported.
        source: tokio_postgres::Error,
    },
    /// A query failed.
    #[error("{store}: {operation} failed: {}", detail(source))]
    Query {
        /// The store, as [`Store::describe`] gives it.
        store: String,
        /// What was being done.
        operation: String,
        /// What the driver reported.
        source: tokio_postgres::Error,
    },
}

/// The driver's error with what it wraps: tokio-postgres displays a server error as just
/// "db error", leaving the server's message (such as the violated constraint) to the source.
fn detail(err: &tokio_postgres::Error) -> String {
    match std::error::Error::source(err) {
        Some(cause) => format!("{err}: {cause}"),
        None => err.to_string(),
    }
}

impl PostgresError {
    /// The `PostgresError` inside a store error, if it came from a [`PostgresStore`].
    pub fn of(err: &StoreError) -> Option<&PostgresError> {
        match err {
            StoreError::Backend(source) => source.downcast_ref(),
            _ => None,
        }
    }
}

/// A [`Store`] in PostgreSQL: many processes on many machines may share its sessions, and
/// [`subscribe`](Store::subscribe) sees appends made by any of them.
///
/// Clones share the connections. Each store holds a few query connections and one listener
/// connection; when the listener is lost, live tails end with an error rather than hang.
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
    clients: Vec<Connection>,
    /// Keeps the listener connection open.
    _listener: Client,
    notifier: Notifier,
    channel: String,
    describe: String,
}

/// A query connection with its prepared statements (prepared once: a statement sent as text
/// costs an extra round trip per query).
struct Connection {
    client: Client,
    /// How many queries are using the connection now (see [`PostgresStore::connection`]).
    in_flight: AtomicUsize,
    append_one: tokio_postgres::Statement,
    append: tokio_postgres::Statement,
    append_with_session: tokio_postgres::Statement,
    length: tokio_postgres::Statement,
    events: tokio_postgres::Statement,
}

/// Reads a range of a session's events.
const EVENTS: &str =
    "SELECT seq, body FROM oh_events WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq";

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("store", &self.inner.describe)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (a `postgres://` URL or key-value string), creating
    /// the tables in the `public` schema if needed.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_in_schema(url, "public").await
    }

    /// Connects and keeps every table in `schema` (created if needed): separate schemas are
    /// separate stores in one database, as tests use them.
    pub async fn connect_in_schema(url: &str, schema: &str) -> Result<Self, StoreError> {
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

        let mut clients = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let (client, connection) = config.connect(NoTls).await.map_err(connect_error)?;
            tokio::spawn(async move {
                if let Err(err) = connection.await {
                    tracing::warn!(%err, "a PostgreSQL store connection ended");
                }
            });
            clients.push(client);
        }
        let set_path = format!("SET search_path TO \"{schema}\"");
        migrate(&mut clients[0], schema)
            .await
            .map_err(|source| PostgresError::Query {
                store: describe.clone(),
                operation: "migration".to_owned(),
                source,
            })?;
        let mut connections = Vec::with_capacity(clients.len());
        for client in clients {
            client
                .batch_execute(&set_path)
                .await
                .map_err(connect_error)?;
            let append_one = client.prepare(APPEND_ONE).await.map_err(connect_error)?;
            let append = client.prepare(APPEND).await.map_err(connect_error)?;
            let append_with_session = client
                .prepare(APPEND_WITH_SESSION)
                .await
                .map_err(connect_error)?;
            let length = client.prepare(LENGTH).await.map_err(connect_error)?;
            let events = client.prepare(EVENTS).await.map_err(connect_error)?;
            connections.push(Connection {
                client,
                in_flight: AtomicUsize::new(0),
                append_one,
                append,
                append_with_session,
                length,
                events,
            });
        }

        let channel = format!("oh_{schema}");
        let notifier = Notifier::default();
        let (listener, mut connection) = config.connect(NoTls).await.map_err(connect_error)?;
        let dispatch = notifier.clone();
        tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(note))) => {
                        if let Ok(session) = note.payload().parse::<SessionId>() {
                            dispatch.notify(&session);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(err)) => {
                        dispatch.close(format!("the listener connection failed: {err}"));
                        return;
                    }
                    None => {
                        dispatch.close("the listener connection closed".to_owned());
                        return;
                    }
                }
            }
        });
        listener
            .batch_execute(&format!("LISTEN \"{channel}\""))
            .await
            .map_err(connect_error)?;

        tracing::debug!(store = %describe, "connected to PostgreSQL");
        Ok(Self {
            inner: Arc::new(Inner {
                clients: connections,
                _listener: listener,
                notifier,
                channel,
                describe,
            }),
        })
    }

    /// A query connection for one operation: the first idle one, else the least busy (each
    /// pipelines concurrent queries).
    ///
    /// Preferring the first idle connection keeps a lone writer on one warm server process:
    /// measured on the 2-core bench machine, spreading sequential appends round robin over the
    /// four connections cost about 40 µs per append (each server process woke from idle),
    /// while concurrent operations still spread over all of them.
    fn connection(&self) -> Lease<'_> {
        let clients = &self.inner.clients;
        let pick = clients
            .iter()
            .find(|c| c.in_flight.load(Ordering::Relaxed) == 0)
            .or_else(|| {
                clients
                    .iter()
                    .min_by_key(|c| c.in_flight.load(Ordering::Relaxed))
            })
            .unwrap_or(&clients[0]);
        pick.in_flight.fetch_add(1, Ordering::Relaxed);
        Lease(pick)
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
        let connection = self.connection();
        let rows = connection
            .client
            .query(
                &connection.events,
                &[
                    &session.as_str(),
                    &seq_param(range.start),
                    &seq_param(range.end),
                ],
            )
            .await
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
        crate::decode_all(session, &records)
    }

    /// The session's length.
    async fn length(&self, session: &SessionId) -> Result<u64, StoreError> {
        let connection = self.connection();
        let row = connection
            .client
            .query_one(&connection.length, &[&session.as_str()])
            .await
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
        let rows = self
            .connection()
            .client
            .query(
                "SELECT id, seq FROM oh_events WHERE session = $1 AND id = ANY($2)",
                &[&session.as_str(), &ids],
            )
            .await
            .map_err(self.query_error(format!("read of session {session}'s event ids")))?;
        let stored = rows
            .iter()
            .map(|row| (row.get::<_, uuid::Uuid>(0), row.get::<_, i64>(1) as u64))
            .collect();
        Ok((len, stored))
    }
}

/// A connection in use by one operation; counted in its `in_flight` until dropped.
struct Lease<'a>(&'a Connection);

impl std::ops::Deref for Lease<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.0
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl From<PostgresError> for StoreError {
    fn from(err: PostgresError) -> Self {
        StoreError::backend(err)
    }
}

/// Applies the missing [`MIGRATIONS`] to `schema`, under an advisory lock.
async fn migrate(client: &mut Client, schema: &str) -> Result<(), tokio_postgres::Error> {
    let txn = client.transaction().await?;
    txn.batch_execute(&format!(
        "SELECT pg_advisory_xact_lock(7306298535227459584);
         CREATE SCHEMA IF NOT EXISTS \"{schema}\";
         SET LOCAL search_path TO \"{schema}\";
         CREATE TABLE IF NOT EXISTS oh_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now()
         );"
    ))
    .await?;
    let applied: i32 = txn
        .query_one("SELECT COALESCE(max(version), 0) FROM oh_migrations", &[])
        .await?
        .get(0);
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > applied) {
        txn.batch_execute(sql).await?;
        txn.execute(
            "INSERT INTO oh_migrations (version) VALUES ($1)",
            &[version],
        )
        .await?;
    }
    txn.commit().await
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
    let (last_event, status) =
        openharness_core::last_event_summary(last.as_bytes()).map_err(|err| {
            corrupt(
                &session,
                last_seq,
                format!("stored event is not a valid envelope: {err}"),
            )
        })?;
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

#[async_trait]
impl Store for PostgresStore {
    fn describe(&self) -> String {
        self.inner.describe.clone()
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        let Some(meta) = SessionInfo::from_first_events(session.clone(), events) else {
            // An empty batch: report the length.
            return self.length(session).await;
        };
        let mut ids = Vec::with_capacity(events.len());
        let mut bodies = Vec::with_capacity(events.len());
        for event in events {
            ids.push(*event.id.as_uuid());
            bodies.push(serde_json::to_string(event).map_err(|err| {
                StoreError::Invalid(format!(
                    "event {} cannot be encoded as JSON: {err}",
                    event.id
                ))
            })?);
        }
        // Only a session's first batch, or one naming its workflow or parent, writes its row.
        let with_session = expected_seq == 0 || meta.workflow.is_some() || meta.parent.is_some();
        let created = if with_session {
            timestamp(&meta.created)
        } else {
            String::new()
        };
        let parent = meta.parent.as_ref().map(SessionId::as_str);
        let expected = seq_param(expected_seq);
        let written = expected_seq.saturating_add(events.len() as u64);
        for _ in 0..8 {
            let connection = self.connection();
            let result = if let ([id], [body], false) = (&ids[..], &bodies[..], with_session) {
                connection
                    .client
                    .execute(
                        &connection.append_one,
                        &[&session.as_str(), &expected, id, body, &self.inner.channel],
                    )
                    .await
            } else if with_session {
                connection
                    .client
                    .query_opt(
                        &connection.append_with_session,
                        &[
                            &session.as_str(),
                            &expected,
                            &ids,
                            &bodies,
                            &self.inner.channel,
                            &created,
                            &meta.workflow,
                            &parent,
                        ],
                    )
                    .await
                    .map(|row| u64::from(row.is_some()))
            } else {
                connection
                    .client
                    .query_opt(
                        &connection.append,
                        &[
                            &session.as_str(),
                            &expected,
                            &ids,
                            &bodies,
                            &self.inner.channel,
                        ],
                    )
                    .await
                    .map(|row| u64::from(row.is_some()))
            };
            drop(connection);
            match result {
                Ok(0) => {}
                Ok(_) => return Ok(written),
                Err(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
                Err(err) => {
                    return Err(self.query_error(format!("append to session {session}"))(
                        err,
                    ));
                }
            }
            // Not written: decide why, with the rules every backend shares.
            let (len, stored) = self.state_of(session, &ids).await?;
            let plan =
                plan_append::<StoreError>(session, events, expected_seq, len, |id: &EventId| {
                    Ok(stored.get(id.as_uuid()).copied())
                })?;
            if let Plan::Done(len) = plan {
                return Ok(len);
            }
            // The session moved under us and is now where the writer expected: try again.
        }
        Err(StoreError::Invalid(format!(
            "append to session {session} kept racing with other writers; try again"
        )))
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.end.saturating_sub(range.start) <= PARALLEL_READ {
            return self.read_range(session, range).await;
        }
        // A long read: split it across the connections, so the server and the client both work
        // on several parts at once.
        let len = self.length(session).await?;
        let end = range.end.min(len);
        let span = end.saturating_sub(range.start);
        if span <= PARALLEL_READ {
            return self.read_range(session, range.start..end).await;
        }
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let parts = self.inner.clients.len().min(cores).max(1) as u64;
        let size = span.div_ceil(parts);
        let mut tasks = Vec::new();
        for part in 0..parts {
            let from = range.start + part * size;
            let to = (from + size).min(end);
            let store = self.clone();
            let session = session.clone();
            tasks.push(tokio::spawn(async move {
                store.read_range(&session, from..to).await
            }));
        }
        let mut events = Vec::with_capacity(usize::try_from(span).unwrap_or(0));
        for task in tasks {
            let part = task.await.map_err(|err| {
                StoreError::Invalid(format!(
                    "a read of session {session} did not complete: {err}"
                ))
            })??;
            events.extend(part);
        }
        if events.len() as u64 != span {
            // The session was cleared while the parts were read: read it in one snapshot.
            return self.read_range(session, range).await;
        }
        Ok(events)
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let row = self
            .connection()
            .client
            .query_opt(
                &format!("{SESSION_INFO} WHERE s.id = $1"),
                &[&session.as_str()],
            )
            .await
            .map_err(self.query_error(format!("read of session {session}'s metadata")))?;
        row.as_ref().map(info_from_row).transpose()
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let rows = self
            .connection()
            .client
            .query(SESSION_INFO, &[])
            .await
            .map_err(self.query_error("listing of sessions"))?;
        let mut infos = rows
            .iter()
            .map(info_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        crate::sort_oldest_first(&mut infos);
        Ok(infos)
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        self.connection()
            .client
            .execute(
                "SELECT oh_clear($1, $2)",
                &[&session.as_str(), &self.inner.channel],
            )
            .await
            .map_err(self.query_error(format!("clearing of session {session}")))?;
        Ok(())
    }

    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        let state = serde_json::to_string(&snapshot.state).map_err(|err| {
            StoreError::Invalid(format!(
                "the snapshot of session {session} at {} cannot be encoded as JSON: {err}",
                snapshot.position
            ))
        })?;
        let position = seq_param(snapshot.position);
        let written = self
            .connection()
            .client
            .execute(
                // The event before the position is locked, as an append locks its previous
                // event, so a racing clear either waits for this snapshot (and then deletes
                // it) or has already deleted that event (and this inserts nothing).
                "INSERT INTO oh_snapshots (session, position, state)
                 SELECT $1, $2, $3 FROM (
                     SELECT max(seq) + 1 AS len FROM oh_events WHERE session = $1
                 ) AS session WHERE session.len >= $2
                   AND ($2 = 0 OR EXISTS (
                       SELECT 1 FROM oh_events WHERE session = $1 AND seq = $2 - 1 FOR KEY SHARE
                   ))
                 ON CONFLICT (session, position) DO UPDATE SET state = EXCLUDED.state",
                &[&session.as_str(), &position, &state],
            )
            .await
            .map_err(self.query_error(format!("saving a snapshot of session {session}")))?;
        if written == 0 {
            let len = self.length(session).await?;
            return Err(crate::snapshot_beyond_end(session, snapshot.position, len));
        }
        Ok(())
    }

    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        let row = self
            .connection()
            .client
            .query_opt(
                "SELECT position, state FROM oh_snapshots WHERE session = $1 AND position <= $2 \
                 ORDER BY position DESC LIMIT 1",
                &[&session.as_str(), &seq_param(at_most)],
            )
            .await
            .map_err(self.query_error(format!("read of session {session}'s snapshots")))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let position = row.get::<_, i64>(0) as u64;
        let state = serde_json::from_str(row.get(1)).map_err(|err| {
            corrupt(
                session,
                position,
                format!("stored snapshot state is not valid JSON: {err}"),
            )
        })?;
        Ok(Some(Snapshot::new(position, state)))
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        tail(
            self.clone(),
            self.inner.notifier.clone(),
            session.clone(),
            from_seq,
        )
    }
}
