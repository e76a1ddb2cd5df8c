//! The tables of a [`PostgresStore`](super::PostgresStore): the migrations that create them, and
//! the prepared statements of appends, claims and reads.

use tokio_postgres::Client;

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
///
/// Version 4 adds `oh_claims`, the fencing token of every session ever claimed: a claim
/// increments its session's token, and an append made under a claim checks, in its own
/// statement, that the token is still the one its claim got (see `claims.rs`). Rows
/// are never deleted, not even by `clear`, so a session's tokens only grow.
///
/// Version 5 adds `oh_unfinished`, the sessions marked unfinished (`Store::mark_unfinished`)
/// with their notes.
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
    (
        4,
        "CREATE TABLE oh_claims (
            session text PRIMARY KEY,
            token bigint NOT NULL
        );",
    ),
    (
        5,
        "CREATE TABLE oh_unfinished (
            session text PRIMARY KEY,
            note text NOT NULL
        );",
    ),
];

/// The fence of an append: true when it is not made under a claim (`$N` null), or when the
/// claim's token `$N` is still the session's (`$1`). The row is locked `FOR SHARE`, so a claim
/// moving the token (an `UPDATE`) waits for an append that checked it, and an append that
/// waited for such a claim re-checks the new token: no append under an old token commits
/// after a newer claim did.
macro_rules! fence {
    ($token:literal) => {
        concat!(
            "($",
            $token,
            "::bigint IS NULL OR EXISTS (
          SELECT 1 FROM oh_claims WHERE session = $1 AND token = $",
            $token,
            "::bigint FOR SHARE
      ))"
        )
    };
}

/// The batch insert of [`APPEND`] and [`APPEND_WITH_SESSION`], a `WITH ins AS (…)` whose rows
/// are the events it wrote: all of the batch when the session's length is `$2` (and the event
/// before `$2` exists, locked `FOR KEY SHARE` as every append locks it) and the fence with the
/// token `$N` holds, none otherwise.
macro_rules! insert_batch {
    ($token:literal) => {
        concat!(
            "
WITH ins AS (
    INSERT INTO oh_events (session, seq, id, body)
    SELECT $1, $2::bigint + e.ord - 1, e.id, e.body
    FROM unnest($3::uuid[], $4::text[]) WITH ORDINALITY AS e(id, body, ord)
    WHERE (SELECT COALESCE(max(seq) + 1, 0) FROM oh_events WHERE session = $1) = $2::bigint
      AND ($2::bigint = 0 OR EXISTS (
          SELECT 1 FROM oh_events WHERE session = $1 AND seq = $2::bigint - 1 FOR KEY SHARE
      ))
      AND ",
            fence!($token),
            "
    RETURNING 1
)"
        )
    };
}

/// The most common append, one event to a session that has a row, at `$2` > 0: `$1` session,
/// `$2` expected seq, `$3` id, `$4` body, `$5` the notification channel, `$6` the claim's
/// fencing token (null when unclaimed). Writes one row when the event at `$2 - 1` exists and
/// the fence holds, none otherwise; when the session is longer than `$2`, the primary key
/// fails it.
///
/// The cheapest form measured with pgbench: no `WITH` (its materialised `RETURNING` cost about
/// as much as the notification), no `unnest`, no `max(seq)` subquery (the previous event is
/// the row selected), and the notification as the `RETURNING` value.
pub(super) const APPEND_ONE: &str = concat!(
    "
INSERT INTO oh_events (session, seq, id, body)
SELECT $1::text, $2::bigint, $3::uuid, $4::text
FROM oh_events WHERE session = $1 AND seq = $2::bigint - 1 AND ",
    fence!("6"),
    "
FOR KEY SHARE
RETURNING pg_notify($5, $1)"
);

/// A batch to a session that has a row: `$1` session, `$2` expected seq, `$3` ids, `$4`
/// bodies, `$5` the notification channel, `$6` the fencing token (null when unclaimed). Returns
/// one row when it wrote the batch, none when the session's length is not `$2` or the fence
/// fails. (One notification per batch, not per event.)
pub(super) const APPEND: &str = concat!(
    insert_batch!("6"),
    "
SELECT pg_notify($5, $1) FROM (SELECT 1 FROM ins LIMIT 1) AS written"
);

/// [`APPEND`] that also writes the session's row: for the first batch of a session (`$2` = 0:
/// `$6` created, `$7` workflow, `$8` parent) and for a later batch that names the workflow or
/// the parent, which fills them in if the session has none yet. `$9` is the fencing token.
pub(super) const APPEND_WITH_SESSION: &str = concat!(
    insert_batch!("9"),
    ", written AS (
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
SELECT pg_notify($5, $1) FROM written"
);

/// A claim, in one statement: takes the session-level advisory lock `$1` and, when it was
/// free, moves session `$2`'s fencing token on (1 for a session never claimed). Returns the
/// new token, or no row when another database session holds the lock. The lock is taken even
/// if the statement then fails: the caller releases it.
pub(crate) const CLAIM: &str = "
WITH lock AS (SELECT pg_try_advisory_lock($1) AS taken)
INSERT INTO oh_claims AS c (session, token)
SELECT $2, 1 FROM lock WHERE lock.taken
ON CONFLICT (session) DO UPDATE SET token = c.token + 1
RETURNING c.token";

/// The fencing token of session `$1` (no row when it was never claimed).
pub(super) const TOKEN: &str = "SELECT token FROM oh_claims WHERE session = $1";

/// A session's length.
pub(super) const LENGTH: &str =
    "SELECT COALESCE(max(seq) + 1, 0) FROM oh_events WHERE session = $1";

/// Session metadata: the row and the session's last event (its seq gives the count, its body
/// the last event time). `WHERE` clauses are appended.
pub(super) const SESSION_INFO: &str = "
SELECT s.id, s.created, s.workflow, s.parent, last.seq, last.body
FROM oh_sessions s
CROSS JOIN LATERAL (
    SELECT seq, body FROM oh_events e WHERE e.session = s.id ORDER BY seq DESC LIMIT 1
) AS last";

/// Applies the missing [`MIGRATIONS`] to `schema`, under an advisory lock.
pub(super) async fn migrate(
    client: &mut Client,
    schema: &str,
) -> Result<(), tokio_postgres::Error> {
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
