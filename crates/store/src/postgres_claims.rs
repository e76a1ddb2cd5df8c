//! Claims on a [`PostgresStore`](crate::PostgresStore) (see
//! [`Store::claim`](openharness_core::Store::claim)): session-level advisory locks held on one
//! connection of the claiming process, so PostgreSQL itself decides which replica runs a
//! session's turns, and frees the claims of a replica that dies (its connection ends with it).
//!
//! One connection, opened at the first claim, holds every claim of the process: advisory locks
//! are per database session, and a connection can hold any number of them. Since a database
//! session may take the same advisory lock twice, the process keeps the set of keys it holds
//! and refuses a second claim of a session itself. A claim is released when dropped: `SELECT
//! pg_advisory_unlock(key)` on the connection that took it, sent by a task.
//!
//! If that connection is lost while the process lives (a server restart, a failover,
//! `pg_terminate_backend`), its claims are gone: another replica may claim those sessions and
//! resume them. The log stays whole even then: appends check the session's length, so of two
//! writers the later fails with a conflict (`SessionBusy` in the runtime). The next claim
//! opens a new connection.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use openharness_core::{Claim, SessionId, StoreError};
use tokio_postgres::{Client, NoTls};

use crate::postgres::PostgresError;

/// The claims of one store in this process.
pub(crate) struct Claims {
    config: tokio_postgres::Config,
    /// Makes keys of different schemas differ (advisory locks are per database).
    namespace: String,
    describe: String,
    connection: tokio::sync::Mutex<Option<Arc<Client>>>,
    held: Mutex<HashSet<i64>>,
}

impl Claims {
    pub(crate) fn new(mut config: tokio_postgres::Config, schema: &str, describe: String) -> Self {
        // Operators see which connection holds a store's claims.
        config.application_name(format!("openharness {schema} claims"));
        Self {
            config,
            namespace: format!("openharness/{schema}/"),
            describe,
            connection: tokio::sync::Mutex::new(None),
            held: Mutex::new(HashSet::new()),
        }
    }

    /// Claims `session`: `None` when this process or another holds it.
    pub(crate) async fn claim(
        self: &Arc<Self>,
        session: &SessionId,
    ) -> Result<Option<Claim>, StoreError> {
        let key = lock_key(&self.namespace, session);
        if !self.held().insert(key) {
            return Ok(None);
        }
        match self.try_lock(session, key).await {
            Ok(Some(client)) => {
                let claims = Arc::clone(self);
                Ok(Some(Claim::new(move || claims.release(key, client))))
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

    /// Takes the advisory lock `key`; the connection that holds it, or `None` when another
    /// database session holds it.
    async fn try_lock(
        &self,
        session: &SessionId,
        key: i64,
    ) -> Result<Option<Arc<Client>>, StoreError> {
        // A connection found broken (the server ended it) is replaced once: its claims are
        // gone anyway.
        let mut retried = false;
        loop {
            let client = self.client().await?;
            match client
                .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
                .await
            {
                Ok(row) => return Ok(row.get::<_, bool>(0).then_some(client)),
                Err(source) => {
                    let err = PostgresError::Query {
                        store: self.describe.clone(),
                        operation: format!("claim of session {session}"),
                        source,
                    };
                    if retried || !err.is_connection_lost() {
                        return Err(err.into());
                    }
                    retried = true;
                    self.forget(&client).await;
                }
            }
        }
    }

    /// Drops `client` as the claims connection if it still is.
    async fn forget(&self, client: &Arc<Client>) {
        let mut connection = self.connection.lock().await;
        if connection.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) {
            *connection = None;
        }
    }

    /// The claims connection, opened (again) when there is none or it closed.
    async fn client(&self) -> Result<Arc<Client>, StoreError> {
        let mut connection = self.connection.lock().await;
        if let Some(client) = connection.as_ref().filter(|c| !c.is_closed()) {
            return Ok(Arc::clone(client));
        }
        let (client, driver) =
            self.config
                .connect(NoTls)
                .await
                .map_err(|source| PostgresError::Connect {
                    store: self.describe.clone(),
                    source,
                })?;
        tokio::spawn(async move {
            let _ = driver.await;
        });
        let client = Arc::new(client);
        *connection = Some(Arc::clone(&client));
        Ok(client)
    }

    fn release(&self, key: i64, client: Arc<Client>) {
        self.held().remove(&key);
        // Without a runtime (the process is ending) the connection's end releases it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = client
                    .execute("SELECT pg_advisory_unlock($1)", &[&key])
                    .await
                {
                    // A closed connection released every lock it held.
                    tracing::debug!(error = %err, "releasing a claim failed");
                }
            });
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashSet<i64>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
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
