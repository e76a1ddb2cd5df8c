//! [`RedbStore`]: the embedded, durable default store, one [redb](https://docs.rs/redb) file.
//!
//! The file's tables and format are described in [`layout`]; how small appends are staged so
//! durable group commits stay cheap when there is no journal, in [`staging`]; the batched event-id index, in [`index`]; how a
//! new file is created safely, in [`create`]. Appends go through one writer thread that
//! commits every append waiting at the moment in one write transaction ([`writer`]): group
//! commit, so throughput grows with concurrency, while each `append` still returns only when
//! its events are on disk, and a crash before that leaves none of them. What puts them on disk
//! is, for a writer that has the file alone, one record in the [`journal`] beside it (redb's
//! commit is then made without waiting for the disk, and made durable later by a checkpoint;
//! [`replay`] re-applies the journal after a crash), and otherwise a durable redb commit.
//! A store that defers durability answers an append whose outcome is certain before its
//! commit ([`deferred`]). One append applied inside a transaction is [`apply`]. Other operations are synchronous
//! redb calls on tokio's blocking pool.
//!
//! No file makes the store panic: redb's panics on damaged data are contained ([`guard`]) and
//! reported as [`RedbError::Damaged`], after which the store refuses writes. A file the process
//! cannot write opens read-only; another application's redb file is refused.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::{
    Envelope, SessionId, SessionInfo, Store, StoreError,
    adapter::{Folded, SnapshotJson, Subscription},
};
use redb::{Database, ReadableTable};

use crate::live::{Notifier, tail};

mod apply;
mod compact;
mod create;
mod deferred;
mod error;
mod group;
mod guard;
mod holder;
mod index;
mod jobs;
mod journal;
mod layout;
mod maintain;
mod open;
mod options;
mod port;
mod record;
mod replay;
mod settle;
mod staging;
mod write_loop;
mod writer;

pub use compact::Compaction;
pub use error::RedbError;
use guard::{Db, Health};
use jobs::{Append, Journaled, SaveSnapshot};
use layout::{EVENT_INDEX, EVENTS, SESSIONS, SNAPSHOTS, SessionRecord, UNFINISHED};
use open::{Sharing, open_prepared, recover_before_reading, retire_journal};
pub use options::{
    COMPACT_ON_CLOSE_BYTES, DEFAULT_CACHE_BYTES, DEFAULT_CALLER_SPIN, DEFAULT_WRITER_SPIN,
    RedbDurability, RedbOptions,
};
use writer::Writer;

/// The environment variable naming the store file when no `--store PATH` is given.
pub const STORE_ENV: &str = "OPENHARNESS_STORE";

/// The store file to use when the user names none: `$OPENHARNESS_STORE` if set and not empty,
/// else [`RedbStore::DEFAULT_PATH`] (relative to the working directory).
///
/// A `--store PATH` flag should override both.
///
/// ```
/// use openharness_store::{RedbStore, default_store_path};
/// if std::env::var_os("OPENHARNESS_STORE").is_none() {
///     assert_eq!(default_store_path(), std::path::Path::new(RedbStore::DEFAULT_PATH));
/// }
/// ```
pub fn default_store_path() -> PathBuf {
    store_path_from(std::env::var_os(STORE_ENV))
}

/// [`default_store_path`] given the environment variable's value.
fn store_path_from(env: Option<std::ffi::OsString>) -> PathBuf {
    match env {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(RedbStore::DEFAULT_PATH),
    }
}

/// The embedded, durable [`Store`]: every session in one redb file.
///
/// Clones share the open database. One `RedbStore` writes a file at a time (redb locks it):
/// opening it for writing again, in this process or another, gives [`RedbError::AlreadyOpen`]
/// naming the processes that have it open. A writer keeps the file to itself unless it was
/// opened with [`RedbOptions::share_with_readers`]; then any number of read-only stores
/// ([`RedbOptions::read_only`]) read it meanwhile, in any process, and see each commit. Read-only
/// stores never refuse each other.
///
/// A stored record that does not decode, or a seq missing among a session's events, is
/// [`StoreError::Corrupt`] with its seq; for a session's metadata record the seq is 0 and the
/// message names the metadata. [`sessions`](Store::sessions) still lists a session whose
/// record is damaged, from its first event, and skips (with a `tracing` warning) one whose
/// events are damaged too, so one damaged session does not hide the others. redb's own
/// failures are [`StoreError::Backend`] holding a [`RedbError`] that names the file and the
/// operation; a damaged file that makes redb panic gives [`RedbError::Damaged`] (the panic is
/// caught), and from then on this store refuses writes.
///
/// A file the process may not write (or any file, with [`RedbOptions::read_only`]) is opened
/// read-only: listing and reading work, writes fail with [`RedbError::ReadOnly`]. Opening a
/// current file writes nothing. A redb file that is not a store is refused with
/// [`RedbError::Foreign`].
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::RedbStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("nested/store.redb");
/// let session = SessionId::new();
/// {
///     let store = RedbStore::open(&path)?;
///     let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
///     store.append(&session, &[event], 0).await?;
/// }
/// let store = RedbStore::open(&path)?;
/// assert_eq!(store.all_events(&session).await?.len(), 1);
/// assert_eq!(store.describe(), format!("redb:{}", path.display()));
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct RedbStore {
    db: Arc<Db>,
    path: Arc<Path>,
    notifier: Notifier,
    /// `None` when the store is open read-only.
    writer: Option<Arc<Writer>>,
    health: Arc<Health>,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A failure inside a blocking operation: ours, or redb's (which gets the path attached).
enum Failure {
    Store(StoreError),
    Redb(redb::Error),
}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        Self::Store(err)
    }
}

macro_rules! redb_failure {
    ($($ty:ty),*) => {$(
        impl From<$ty> for Failure {
            fn from(err: $ty) -> Self {
                Self::Redb(err.into())
            }
        }
    )*};
}
redb_failure!(
    redb::Error,
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError
);

impl RedbStore {
    /// Where the CLI keeps its store unless told otherwise (see [`default_store_path`]).
    pub const DEFAULT_PATH: &'static str = ".openharness/store.redb";

    /// Opens the store file at `path`, creating it (and its parent directories) if needed;
    /// read-only if the file exists and cannot be written.
    ///
    /// Fails with [`StoreError::Backend`] holding a [`RedbError`] that names the file
    /// ([`RedbError::AlreadyOpen`] when another store holds it, [`RedbError::Foreign`] for
    /// another application's redb file, [`RedbError::NewerFormat`] or
    /// [`RedbError::NewerFileFormat`] for a file from a newer version, [`RedbError::Damaged`]
    /// when redb fails on the file's contents); use [`RedbError::of`] to get at it.
    ///
    /// This is synchronous and brief; call it before starting work, or from `spawn_blocking`
    /// if the file may be large.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, RedbOptions::default())
    }

    /// Opens the store file at `path` like [`open`](Self::open), with `options`.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = RedbOptions::default().commit_on_caller(true);
    /// let store = RedbStore::open_with(dir.path().join("store.redb"), options)?;
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn open_with(path: impl AsRef<Path>, options: RedbOptions) -> Result<Self, StoreError> {
        Ok(Self::open_typed(path.as_ref(), &options)?)
    }

    fn open_typed(path: &Path, options: &RedbOptions) -> Result<Self, RedbError> {
        // A reader always joins a shared file; a writer shares it when asked and when every
        // commit is durable (redb makes no commit non-durable in a shared file).
        let sharing = match (
            options.read_only,
            options.share_with_readers,
            options.durability,
        ) {
            (true, _, _) | (false, true, RedbDurability::EveryAppend) => Sharing::Readers,
            (false, true, _) => {
                tracing::warn!(path = %path.display(), "a store that defers durability keeps its file to itself: readers in other processes are refused");
                Sharing::Exclusive
            }
            (false, false, _) => Sharing::Exclusive,
        };
        if options.read_only {
            recover_before_reading(path, options.cache_size)?;
        }
        let (db, recovered) = open_prepared(path, options.read_only, options.cache_size, sharing)?;
        let db = Arc::new(db);
        let journaled = match recovered {
            Some(recovered)
                if options.journal
                    && sharing == Sharing::Exclusive
                    && options.durability == RedbDurability::EveryAppend =>
            {
                // Covered by the checkpoint the recovery made: a new one is made with
                // the first append.
                retire_journal(path)?;
                let journal = journal::Journal::new(&journal::path_of(path), recovered.next_lsn);
                Some(Journaled::new(journal, options.journal_checkpoint))
            }
            Some(_) => {
                retire_journal(path)?;
                None
            }
            None => None,
        };
        let health = Arc::new(Health::default());
        let writer = db.database().is_some().then(|| {
            Arc::new(Writer::start(
                Arc::clone(&db),
                path,
                options,
                Arc::clone(&health),
                journaled,
                // Compaction moves the pages readers in other processes read.
                options.compact_on_close && sharing == Sharing::Exclusive,
            ))
        });
        tracing::debug!(path = %path.display(), read_only = writer.is_none(), "opened redb store");
        Ok(Self {
            db,
            path: Arc::from(path),
            notifier: Notifier::default(),
            writer,
            health,
        })
    }

    /// Compacts the store file at `path`, which no `RedbStore` may have open: moves its pages
    /// towards the start and gives the free tail back to the file system (`openharness
    /// compact`). Takes time in proportion to the file, so on its own it happens only for a
    /// small file that grew while open, as its store closes
    /// ([`RedbOptions::compact_on_close`]).
    ///
    /// Fails with [`RedbError::AlreadyOpen`] while a store has the file open (in this process
    /// or another), and with [`RedbError::Open`] when there is no file at `path` (it never
    /// creates one).
    ///
    /// ```
    /// use openharness_store::{RedbError, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let store = RedbStore::open(&path)?;
    /// let err = RedbStore::compact_file(&path).unwrap_err();
    /// assert!(matches!(RedbError::of(&err), Some(RedbError::AlreadyOpen { .. })));
    /// drop(store);
    /// let compaction = RedbStore::compact_file(&path)?;
    /// assert!(compaction.after <= compaction.before);
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn compact_file(path: impl AsRef<Path>) -> Result<Compaction, StoreError> {
        Ok(compact::compact_file(path.as_ref())?)
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `op` on the blocking pool, attaching the path and `operation` to redb's errors.
    /// A panic inside it (redb on a damaged file) is contained: it fails the operation with
    /// [`RedbError::Damaged`] and marks the store damaged.
    async fn run<T: Send + 'static>(
        &self,
        operation: impl FnOnce() -> String,
        op: impl FnOnce(&Db) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, StoreError> {
        // After every append acknowledged before its commit: a caller reads its own writes.
        if let Some(writer) = &self.writer {
            writer.settled().await;
        }
        let db = Arc::clone(&self.db);
        let ran = tokio::task::spawn_blocking(move || {
            let result = guard::contained(|| op(&db));
            drop(db);
            result
        })
        .await;
        match ran {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(Failure::Store(err)))) => Err(err),
            Ok(Ok(Err(Failure::Redb(source)))) => Err(RedbError::Database {
                path: self.path.to_path_buf(),
                operation: operation(),
                source: Box::new(source),
            }
            .into()),
            Ok(Err(panic)) => Err(self.health.damaged(&self.path, operation(), panic).into()),
            Err(join) => Err(RedbError::Task {
                path: self.path.to_path_buf(),
                operation: operation(),
                message: join.to_string(),
            }
            .into()),
        }
    }

    /// [`run`](Self::run) for an operation that writes: refused when the store is read-only
    /// or was found damaged.
    async fn run_write<T: Send + 'static>(
        &self,
        operation: impl Fn() -> String,
        op: impl FnOnce(&Database) -> Result<T, Failure> + Send + 'static,
    ) -> Result<T, StoreError> {
        if self.writer.is_none() {
            return Err(RedbError::ReadOnly {
                path: self.path.to_path_buf(),
                operation: operation(),
            }
            .into());
        }
        self.health.check_writable(&self.path, &operation)?;
        let path = self.path.to_path_buf();
        let name = operation();
        self.run(operation, move |db| match db.database() {
            Some(db) => op(db),
            None => Err(StoreError::from(RedbError::ReadOnly {
                path,
                operation: name,
            })
            .into()),
        })
        .await
    }
}

#[cfg(test)]
mod tests;
