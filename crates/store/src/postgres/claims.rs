//! Claims on a [`PostgresStore`](super::PostgresStore) (see
//! [`Store::claim`](openharness_core::Store::claim)): session-level advisory locks held on one
//! connection of the claiming process, so PostgreSQL itself decides which replica runs a
//! session's turns and frees the claims of a replica that dies (its connection ends with it),
//! and a fencing token per claim, so a replica that lost its claim without knowing cannot
//! write into the session any more.
//!
//! One connection, opened at the first claim, holds every claim of the process: advisory locks
//! are per database session, and a connection can hold any number of them. Since a database
//! session may take the same advisory lock twice, the process keeps the set of keys it holds
//! and refuses a second claim of a session itself. A claim is released when dropped: `SELECT
//! pg_advisory_unlock(key)` on the connection that took it, sent by a task.
//!
//! # Fencing
//!
//! If the claims connection is lost while the process lives (a network partition, a server
//! restart, `pg_terminate_backend`), its claims are gone and another replica may claim those
//! sessions, while this one's turn still runs and still appends. So each claim also moves the
//! session's token in `oh_claims` on, in the same statement that takes the lock ([`CLAIM`]:
//! one round trip), and every append this process makes to a session it holds carries the
//! token its claim got; the append's own statement checks it ([`fence!`]) and writes nothing
//! when the session's token moved. The store then answers [`StoreError::Fenced`]. The check
//! locks the token's row `FOR SHARE`, so a newer claim (an `UPDATE` of that row) and an
//! append under the older token are ordered: the append commits first, or sees the new token.
//!
//! The claims connection commits with `synchronous_commit = off`, so a claim does not wait for
//! the disk. That is safe: a token moved by a claim can be lost only in a crash of PostgreSQL
//! itself, which ends every claim anyway, and only together with everything committed after it
//! (the write-ahead log is flushed in order, so an append the new holder made durable made the
//! token durable before it). A token lost that way leaves the older holder as the only writer
//! the log accepted; the newer holder's appends are refused.
//!
//! Appends not made under a claim of this process are not fenced (an import, a test, a tool
//! writing into a session nobody runs); they still conflict on the session's length as with
//! every store.
//!
//! [`CLAIM`]: super::schema::CLAIM
//! [`fence!`]: super::schema

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use openharness_core::{SessionId, StoreError, adapter::Claim};
use tokio_postgres::{Client, NoTls, Statement};

use super::error::{PostgresError, broken, detail};
use super::schema::CLAIM;

/// The claims of one store in this process.
pub(crate) struct Claims {
    config: tokio_postgres::Config,
    /// Makes keys of different schemas differ (advisory locks are per database).
    namespace: String,
    /// `SET search_path` to the store's schema, and the claims' commit mode.
    setup: String,
    describe: String,
    connection: tokio::sync::Mutex<Option<Arc<ClaimsConnection>>>,
    /// The keys this process holds or is claiming, with the session and the fencing token of
    /// each claim granted (`None` while it is being claimed).
    held: Mutex<HashMap<i64, Held>>,
}

/// A claim this process holds or is taking: the session, and its fencing token once granted.
type Held = (SessionId, Option<i64>);

/// The connection that holds the claims, with the claim statement prepared on it.
struct ClaimsConnection {
    client: Client,
    claim: Statement,
}

impl Claims {
    pub(crate) fn new(mut config: tokio_postgres::Config, schema: &str, describe: String) -> Self {
        // Operators see which connection holds a store's claims.
        config.application_name(format!("openharness {schema} claims"));
        Self {
            config,
            namespace: format!("openharness/{schema}/"),
            setup: format!("SET search_path TO \"{schema}\"; SET synchronous_commit TO off"),
            describe,
            connection: tokio::sync::Mutex::new(None),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Claims `session`: `None` when this process or another holds it.
    pub(crate) async fn claim(
        self: &Arc<Self>,
        session: &SessionId,
    ) -> Result<Option<Claim>, StoreError> {
        let key = lock_key(&self.namespace, session);
        {
            let mut held = self.held();
            if held.contains_key(&key) {
                return Ok(None);
            }
            held.insert(key, (session.clone(), None));
        }
        match self.try_lock(session, key).await {
            Ok(Some((connection, token))) => {
                self.held().insert(key, (session.clone(), Some(token)));
                let claims = Arc::clone(self);
                Ok(Some(Claim::new(move || claims.release(key, connection))))
            }
            Ok(None) => {
                self.held().remove(&key);
                Ok(None)
            }
            Err(err) => {
                self.held().remove(&key);
                Err(err)
            }
        }
    }

    /// The fencing token of this process's claim on `session`, if it holds one: appends to
    /// the session carry it.
    pub(crate) fn token(&self, session: &SessionId) -> Option<i64> {
        let key = lock_key(&self.namespace, session);
        match self.held().get(&key) {
            Some((holder, token)) if holder == session => *token,
            _ => None,
        }
    }

    /// Takes the advisory lock `key` and moves the session's token on; the connection that
    /// holds the lock and the new token, or `None` when another database session holds it.
    async fn try_lock(
        &self,
        session: &SessionId,
        key: i64,
    ) -> Result<Option<(Arc<ClaimsConnection>, i64)>, StoreError> {
        // A connection found broken (the server ended it) is replaced once: its claims are
        // gone anyway. So is a new one that breaks while it opens (a termination racing the
        // open), within the same single retry.
        let mut retried = false;
        loop {
            let connection = match self.connection().await {
                Ok(connection) => connection,
                Err(source) if !retried && broken(&source) => {
                    retried = true;
                    tracing::debug!(
                        store = %self.describe,
                        err = %detail(&source),
                        "the claims connection broke as it opened; opening another"
                    );
                    continue;
                }
                Err(source) => {
                    return Err(PostgresError::Connect {
                        store: self.describe.clone(),
                        source,
                    }
                    .into());
                }
            };
            match connection
                .client
                .query_opt(&connection.claim, &[&key, &session.as_str()])
                .await
            {
                Ok(row) => return Ok(row.map(|row| (connection, row.get::<_, i64>(0)))),
                Err(source) => {
                    let err = PostgresError::Query {
                        store: self.describe.clone(),
                        operation: format!("claim of session {session}"),
                        source,
                    };
                    if retried || !err.is_connection_lost() {
                        // The lock may have been taken before the token's write failed.
                        unlock(&connection, key).await;
                        return Err(err.into());
                    }
                    retried = true;
                    self.forget(&connection).await;
                }
            }
        }
    }

    /// Drops `connection` as the claims connection if it still is.
    async fn forget(&self, connection: &Arc<ClaimsConnection>) {
        let mut current = self.connection.lock().await;
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, connection)) {
            *current = None;
        }
    }

    /// The claims connection, opened (again) when there is none or it closed.
    async fn connection(&self) -> Result<Arc<ClaimsConnection>, tokio_postgres::Error> {
        let mut current = self.connection.lock().await;
        if let Some(connection) = current.as_ref().filter(|c| !c.client.is_closed()) {
            return Ok(Arc::clone(connection));
        }
        let connection = Arc::new(self.open().await?);
        *current = Some(Arc::clone(&connection));
        Ok(connection)
    }

    async fn open(&self) -> Result<ClaimsConnection, tokio_postgres::Error> {
        let (client, driver) = self.config.connect(NoTls).await?;
        tokio::spawn(async move {
            let _ = driver.await;
        });
        client.batch_execute(&self.setup).await?;
        let claim = client.prepare(CLAIM).await?;
        Ok(ClaimsConnection { client, claim })
    }

    fn release(&self, key: i64, connection: Arc<ClaimsConnection>) {
        self.held().remove(&key);
        // Without a runtime (the process is ending) the connection's end releases it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { unlock(&connection, key).await });
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Held>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Releases the advisory lock `key` held on `connection`, if it is (a closed connection
/// released every lock it held).
async fn unlock(connection: &ClaimsConnection, key: i64) {
    if let Err(err) = connection
        .client
        .execute("SELECT pg_advisory_unlock($1)", &[&key])
        .await
    {
        tracing::debug!(error = %err, "releasing a claim failed");
    }
}

/// The advisory lock key of `session` in `namespace`: 64-bit FNV-1a of both (stable across
/// processes and versions, unlike `std`'s hasher). A collision only makes two sessions share
/// one claim.
fn lock_key(namespace: &str, session: &SessionId) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in namespace.bytes().chain(session.as_str().bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_and_differ_by_schema_and_session() {
        let a = SessionId::new();
        let b = SessionId::new();
        assert_eq!(
            lock_key("openharness/x/", &a),
            lock_key("openharness/x/", &a)
        );
        assert_ne!(
            lock_key("openharness/x/", &a),
            lock_key("openharness/y/", &a)
        );
        assert_ne!(
            lock_key("openharness/x/", &a),
            lock_key("openharness/x/", &b)
        );
    }
}
