//! [`open`]: the store a location names. The one place that tells a PostgreSQL connection
//! string from a redb file path, used by the CLI's `--store` and by tools of your own that
//! take a store location from their users.

use std::path::Path;

use openharness_core::{Store, StoreError};

#[cfg(feature = "postgres")]
use crate::{PostgresOptions, PostgresStore};
use crate::{RedbOptions, RedbStore};

/// Whether the opener records into the store or only reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// It records: a redb file is opened for writing (created if missing), and refused while
    /// another process writes it.
    #[default]
    Write,
    /// It only reads: a redb file is opened read-only, beside a process writing it, and never
    /// created.
    Read,
}

/// How [`open_with`] opens each kind of store.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct OpenOptions {
    /// Write or read.
    pub access: Access,
    /// A redb file's options ([`Access::Read`] adds `read_only(true)`).
    pub redb: RedbOptions,
    /// A PostgreSQL store's options.
    #[cfg(feature = "postgres")]
    pub postgres: PostgresOptions,
}

impl OpenOptions {
    /// The defaults, for `access`.
    pub fn new(access: Access) -> Self {
        Self {
            access,
            ..Self::default()
        }
    }

    /// A redb file's options.
    pub fn redb(mut self, options: RedbOptions) -> Self {
        self.redb = options;
        self
    }

    /// A PostgreSQL store's options.
    #[cfg(feature = "postgres")]
    pub fn postgres(mut self, options: PostgresOptions) -> Self {
        self.postgres = options;
        self
    }
}

/// Whether `location` is a PostgreSQL connection string (a `postgres://` or `postgresql://`
/// URL, or key-value `host=… dbname=…`) rather than a file path.
///
/// ```
/// use openharness_store::is_postgres;
///
/// assert!(is_postgres("postgres://postgres@127.0.0.1:5432/test"));
/// assert!(is_postgres("host=127.0.0.1 dbname=test"));
/// assert!(!is_postgres("sessions.redb"));
/// assert!(!is_postgres("odd=name.redb"));
/// ```
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://")
        || location.starts_with("postgresql://")
        || (location.contains('=')
            && ["host=", "dbname=", "user="].iter().any(|key| {
                location
                    .split_whitespace()
                    .any(|part| part.starts_with(key))
            }))
}

/// Opens the store `location` names with the default options: PostgreSQL for a connection
/// string ([`is_postgres`]; feature `postgres`), else the redb file at that path.
///
/// ```
/// use openharness_store::{Access, open};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), openharness_store::StoreError> {
/// let dir = tempfile::tempdir().map_err(openharness_store::StoreError::backend)?;
/// let path = dir.path().join("sessions.redb");
/// let store = open(&path.to_string_lossy(), Access::Write).await?;
/// assert!(store.sessions().await?.is_empty());
/// # Ok(()) }
/// ```
pub async fn open(location: &str, access: Access) -> Result<Box<dyn Store>, StoreError> {
    open_with(location, OpenOptions::new(access)).await
}

/// [`open`] with options for each kind of store.
pub async fn open_with(location: &str, options: OpenOptions) -> Result<Box<dyn Store>, StoreError> {
    if is_postgres(location) {
        #[cfg(feature = "postgres")]
        return Ok(Box::new(
            PostgresStore::connect_with(location, options.postgres).await?,
        ));
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::Invalid(
            "this is a PostgreSQL connection string, and this build has no PostgreSQL store \
             (openharness-store's feature `postgres`)"
                .to_owned(),
        ));
    }
    let redb = match options.access {
        Access::Read => options.redb.read_only(true),
        Access::Write => options.redb,
    };
    Ok(Box::new(RedbStore::open_with(Path::new(location), redb)?))
}
