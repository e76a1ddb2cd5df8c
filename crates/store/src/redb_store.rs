//! [`RedbStore`]: the embedded, durable default store, one [redb](https://docs.rs/redb) file.
//!
//! The file's tables and format are described in [`layout`]; how small appends are staged so
//! group commits stay cheap, in [`staging`]; the batched event-id index, in [`index`]; how a
//! new file is created safely, in [`create`]. Appends go through one writer thread that
//! commits every append waiting at the moment in one write transaction with redb's default
//! (immediate) durability ([`writer`]): group commit, so throughput grows with concurrency,
//! while each `append` still returns only when its events are on disk, and a crash before
//! that leaves none of them. Other operations are synchronous redb calls on
//! tokio's blocking pool.
//!
//! No file makes the store panic: redb's panics on damaged data are contained ([`guard`]) and
//! reported as [`RedbError::Damaged`], after which the store refuses writes. A file the process
//! cannot write opens read-only; another application's redb file is refused.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use openharness_core::{
    Envelope, SessionId, SessionInfo, Snapshot, Store, StoreError, Subscription,
};
use redb::{Database, ReadableTable};

use crate::live::{Notifier, tail};

mod apply;
mod compact;
mod create;
mod guard;
mod holder;
mod index;
mod journal;
mod layout;
mod replay;
mod staging;
mod writer;

pub use compact::Compaction;
use guard::{Db, Health};
use layout::{EVENT_INDEX, EVENTS, SESSIONS, SNAPSHOTS, SessionRecord, UNFINISHED};
use writer::{Append, Journaled, Writer};

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

/// Why a [`RedbStore`] could not be opened or could not complete an operation.
///
/// Carried inside [`StoreError::Backend`] by the [`Store`] methods; every message names the
/// store file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedbError {
    /// The directory that should hold the store file could not be created.
    #[error("cannot create the directory {} for the store", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The store file could not be created.
    #[error("cannot create the store {}", path.display())]
    CreateFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Another `RedbStore` (in this process or another one) writes the file: only one writes
    /// a store at a time, and a writer not opened with [`RedbOptions::share_with_readers`]
    /// refuses readers too.
    #[error(
        "the store {} is already open for writing{}: one process writes a store at a time, \
         and readers join it only when it shares the file (RedbOptions::share_with_readers)",
        path.display(),
        holder::describe(holders)
    )]
    AlreadyOpen {
        /// The store file.
        path: PathBuf,
        /// The processes that have the file open, as `pid N (command line)`, when the system
        /// tells (Linux, processes of the same user); empty otherwise.
        holders: Vec<String>,
    },
    /// The file could not be opened as a redb database.
    #[error("cannot open the store {}", path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// What redb reported.
        source: Box<redb::Error>,
    },
    /// The file was written by a newer version of Open Harness, in a format this version
    /// cannot read.
    #[error(
        "the store {} was written by a newer version of Open Harness (store format {format}; \
         this version reads up to {}); upgrade Open Harness",
        path.display(),
        layout::FORMAT
    )]
    NewerFormat {
        /// The store file.
        path: PathBuf,
        /// The file's format version.
        format: u64,
    },
    /// The file was written by a newer version of redb (the database library), in a file
    /// format this version cannot read.
    #[error(
        "the store {} was written by a newer version (redb file format {version}); \
         upgrade Open Harness",
        path.display()
    )]
    NewerFileFormat {
        /// The store file.
        path: PathBuf,
        /// The redb file format version found in the file's header.
        version: u8,
    },
    /// The file is a redb database of another application: it is refused rather than given
    /// the store's tables.
    #[error("{} is not an Open Harness store: {reason}", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        reason: String,
    },
    /// The store is open read-only (the file cannot be written, or
    /// [`RedbOptions::read_only`] asked for it) and the operation writes.
    #[error(
        "the store {} is open read-only (the file is not writable): {operation} needs to write it",
        path.display()
    )]
    ReadOnly {
        /// The store file.
        path: PathBuf,
        /// What would have written, such as `append to session 0190…`.
        operation: String,
    },
    /// The file was not closed cleanly and redb must repair it, which needs write access.
    #[error(
        "the store {} was not closed cleanly and must be repaired, which needs write access to it",
        path.display()
    )]
    NeedsRepair {
        /// The store file.
        path: PathBuf,
    },
    /// The file is damaged: redb failed on its contents (caught inside the store), or an
    /// earlier operation did and this one, a write, is refused. Restore the file from a backup;
    /// what still reads can be exported first.
    #[error("the store {} is damaged: {operation} failed: {message}", path.display())]
    Damaged {
        /// The store file.
        path: PathBuf,
        /// What was being done.
        operation: String,
        /// What went wrong.
        message: String,
    },
    /// A read or write failed.
    #[error("store {}: {operation} failed", path.display())]
    Database {
        /// The store file.
        path: PathBuf,
        /// What was being done, such as `append to session 0190…`.
        operation: String,
        /// What redb reported.
        source: Box<redb::Error>,
    },
    /// The store's journal (`<store>-journal`, see [`RedbOptions::journal`]) could not be
    /// written, read or applied when the store was opened. The journal is left as it was, so
    /// nothing in it is lost.
    #[error("the store's journal {} cannot be used: {message}", path.display())]
    Journal {
        /// The journal file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The blocking task running an operation panicked or was cancelled.
    #[error("store {}: {operation} did not complete: {message}", path.display())]
    Task {
        /// The store file.
        path: PathBuf,
        /// What was being done.
        operation: String,
        /// Why the task ended.
        message: String,
    },
}

impl RedbError {
    /// The `RedbError` inside a store error, if it came from a [`RedbStore`].
    ///
    /// ```
    /// use openharness_store::{RedbError, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let _first = RedbStore::open(&path).unwrap();
    /// let err = RedbStore::open(&path).unwrap_err();
    /// assert!(matches!(RedbError::of(&err), Some(RedbError::AlreadyOpen { .. })));
    /// ```
    pub fn of(err: &StoreError) -> Option<&RedbError> {
        match err {
            StoreError::Backend(source) => source.downcast_ref(),
            _ => None,
        }
    }
}

impl From<RedbError> for StoreError {
    fn from(err: RedbError) -> Self {
        StoreError::backend(err)
    }
}

/// How a [`RedbStore`] works, for [`RedbStore::open_with`]. The default is what
/// [`RedbStore::open`] uses.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RedbOptions {
    /// Let a lone writer commit on its own thread (see
    /// [`commit_on_caller`](Self::commit_on_caller)). Off by default.
    pub commit_on_caller: bool,
    /// Open the file read-only (see [`read_only`](Self::read_only)). Off by default.
    pub read_only: bool,
    /// When appends reach the disk (see [`durability`](Self::durability)). Every append by
    /// default.
    pub durability: RedbDurability,
    /// The most memory redb's page cache may hold, in bytes (see
    /// [`cache_size`](Self::cache_size)). [`DEFAULT_CACHE_BYTES`] by default.
    pub cache_size: usize,
    /// Let read-only stores in other processes open the file while this one writes it (see
    /// [`share_with_readers`](Self::share_with_readers)). Off by default.
    pub share_with_readers: bool,
    /// Make appends durable with a journal beside the file (see [`journal`](Self::journal)).
    /// On by default.
    pub journal: bool,
    /// How many bytes of journal records are written before redb is made durable and the
    /// journal starts over (see [`journal_checkpoint`](Self::journal_checkpoint)).
    pub journal_checkpoint: u64,
}

/// The default bound of a [`RedbStore`]'s page cache: 64 MiB. (redb's own default is 1 GiB,
/// which a long read fills: about 216 MB after reading a million-event session.)
pub const DEFAULT_CACHE_BYTES: usize = 64 * 1024 * 1024;

impl Default for RedbOptions {
    fn default() -> Self {
        Self {
            commit_on_caller: false,
            read_only: false,
            durability: RedbDurability::default(),
            cache_size: DEFAULT_CACHE_BYTES,
            share_with_readers: false,
            journal: true,
            journal_checkpoint: journal::DEFAULT_CHECKPOINT_BYTES,
        }
    }
}

/// When a [`RedbStore`]'s appends reach the disk, and so what a crash can lose.
///
/// Whatever the choice, the file stays consistent after a crash (redb falls back to its last
/// durable commit), readers in the process see every append at once, and a clean close (the
/// last handle dropped) makes everything durable.
///
/// | choice | an append returns once | a crash (process or machine) can lose |
/// |---|---|---|
/// | `EveryAppend` (default) | it is on disk (in the journal, or a durable commit; shared by concurrent appends) | nothing that was acknowledged |
/// | `Periodic(t)` | it is committed in memory; the disk catches up every `t` and at each turn's end | the appends of the last `t` |
/// | `TurnEnd` | it is committed in memory; the disk catches up at each turn's end ([`Store::sync`]) | the turn in progress, as if it never started |
///
/// The last two trade that window for throughput: a turn's events then cost one fsync per
/// period or per turn instead of one per step. An agent call made in a lost window is made
/// again when the session is resumed.
///
/// ```
/// use std::time::Duration;
/// use openharness_store::{RedbDurability, RedbOptions, RedbStore};
/// let dir = tempfile::tempdir().unwrap();
/// let options = RedbOptions::default().durability(RedbDurability::Periodic(Duration::from_millis(50)));
/// let store = RedbStore::open_with(dir.path().join("store.redb"), options)?;
/// # Ok::<_, openharness_core::StoreError>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedbDurability {
    /// Every append is durable before it returns.
    #[default]
    EveryAppend,
    /// Appends are made durable at least this often, and at [`Store::sync`].
    Periodic(std::time::Duration),
    /// Appends are made durable at [`Store::sync`], which the runtime calls when a turn ends.
    TurnEnd,
}

impl RedbOptions {
    /// When on, an append made while no other append is in flight commits on the calling
    /// thread inside [`tokio::task::block_in_place`] instead of handing the batch to the
    /// store's writer thread and waiting to be woken: the lowest latency for a single writer
    /// (the usual case: one workflow run recording its session). Overlapping appends still
    /// share group commits on the writer thread, and a current-thread runtime always uses it.
    ///
    /// Turn it on only where every append runs on a multi-thread tokio runtime and **not
    /// inside a `LocalSet`**: tokio panics when `block_in_place` is called there, and that
    /// cannot be detected beforehand. The `openharness` CLI turns it on.
    pub fn commit_on_caller(mut self, on: bool) -> Self {
        self.commit_on_caller = on;
        self
    }

    /// When on, the store file is opened read-only: it must exist and be a current store;
    /// reads work, and writes fail with [`RedbError::ReadOnly`]. A file the process may not
    /// write is opened this way even when this is off.
    pub fn read_only(mut self, on: bool) -> Self {
        self.read_only = on;
        self
    }

    /// When on, read-only stores ([`read_only`](Self::read_only)) in other processes may open
    /// the file while this store writes it, and see each of its commits: the CLI's read
    /// commands beside a running `openharness serve`, say. A second writer is still refused.
    ///
    /// It has a price, which is why it is off by default: redb then commits in two phases (two
    /// `fdatasync`s per durable commit instead of one) and frees a commit's pages one commit
    /// later. On the race shape (a planner, then 2,000 executor calls, every append durable)
    /// that made the run about 20% slower and the file 45% larger. It applies to
    /// [`RedbDurability::EveryAppend`] only: redb keeps non-durable commits out of a shared
    /// file, so a store that defers durability keeps its file to itself. The `openharness` CLI
    /// turns it on.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let writer = RedbStore::open_with(&path, RedbOptions::default().share_with_readers(true))?;
    /// let reader = RedbStore::open_with(&path, RedbOptions::default().read_only(true))?;
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn share_with_readers(mut self, on: bool) -> Self {
        self.share_with_readers = on;
        self
    }

    /// Sets when appends reach the disk; see [`RedbDurability`] for what a crash can lose.
    pub fn durability(mut self, durability: RedbDurability) -> Self {
        self.durability = durability;
        self
    }

    /// Bounds the memory redb's page cache may hold ([`DEFAULT_CACHE_BYTES`] by default).
    /// Pages read beyond it are read again from the file (usually from the operating
    /// system's cache), so a smaller cache costs some speed on sessions larger than it.
    ///
    /// ```
    /// use openharness_store::RedbOptions;
    /// let options = RedbOptions::default().cache_size(16 * 1024 * 1024);
    /// assert_eq!(options.cache_size, 16 * 1024 * 1024);
    /// ```
    pub fn cache_size(mut self, bytes: usize) -> Self {
        self.cache_size = bytes;
        self
    }

    /// When on (the default), a store that writes its file alone with
    /// [`RedbDurability::EveryAppend`] makes each group of appends durable with one sequential
    /// record in a journal beside the file (`<store>-journal`) and one `fdatasync`, and writes
    /// redb without waiting for the disk; redb is made durable every
    /// [`journal_checkpoint`](Self::journal_checkpoint) bytes of records, off the appends'
    /// path, and when the store closes (which removes the journal). An append costs about
    /// half of a durable redb commit (measured by `cargo xtask bench stores`). Opening the file
    /// again after a crash re-applies the records the last checkpoint does not cover, so the
    /// guarantee is the same: an acknowledged append survives any crash.
    ///
    /// When off, or when the file is shared ([`share_with_readers`](Self::share_with_readers),
    /// where readers in other processes see only redb's durable commits), each group of
    /// appends is a durable redb commit.
    ///
    /// ```
    /// use openharness_store::{RedbOptions, RedbStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("store.redb");
    /// let store = RedbStore::open_with(&path, RedbOptions::default().journal(false))?;
    /// assert!(!dir.path().join("store.redb-journal").exists());
    /// # Ok::<_, openharness_core::StoreError>(())
    /// ```
    pub fn journal(mut self, on: bool) -> Self {
        self.journal = on;
        self
    }

    /// How many bytes of journal records are written between two checkpoints (4 MiB by
    /// default): a smaller figure keeps the journal short and the replay after a crash brief,
    /// at the cost of more durable redb commits.
    pub fn journal_checkpoint(mut self, bytes: u64) -> Self {
        self.journal_checkpoint = bytes;
        self
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
        let journaled =
            match recovered {
                Some(recovered)
                    if options.journal
                        && sharing == Sharing::Exclusive
                        && options.durability == RedbDurability::EveryAppend =>
                {
                    let journal_path = journal::path_of(path);
                    let journal = journal::Journal::start(&journal_path, recovered.next_lsn)
                        .map_err(|err| RedbError::Journal {
                            path: journal_path,
                            message: err.to_string(),
                        })?;
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
                options.commit_on_caller,
                options.durability,
                Arc::clone(&health),
                journaled,
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
    /// compact`). Takes time in proportion to the file, so it never happens on its own.
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

/// Whether other processes may read the file while this one has it open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sharing {
    /// One writer and any number of readers, in any processes (redb's
    /// [`SingleWriter`](redb::ConcurrencyMode::SingleWriter) mode): every reader, and a writer
    /// opened with [`RedbOptions::share_with_readers`].
    Readers,
    /// This handle alone: a writer by default (one fsync per commit), and compaction (which
    /// moves the pages readers would read).
    Exclusive,
}

/// Opens the store file at `path` ([`open_db`]), shared as `sharing` says, brings it to the
/// store's layout and, when it is open for writing, up to date with its journal
/// ([`replay::recover`], whose result it returns then). Each step has a panic (redb on a
/// damaged file) contained as [`RedbError::Damaged`].
fn open_prepared(
    path: &Path,
    read_only: bool,
    cache_size: usize,
    sharing: Sharing,
) -> Result<(Db, Option<replay::Recovered>), RedbError> {
    let opening = |message| Health::default().damaged(path, "opening".to_owned(), message);
    // Each step contained on its own, so a panic never unwinds through the open database.
    let db =
        guard::contained(|| open_db(path, read_only, cache_size, sharing)).map_err(opening)??;
    guard::contained(|| layout::prepare_file(&db, path)).map_err(opening)??;
    let recovered = match db.database() {
        Some(database) => {
            Some(guard::contained(|| replay::recover(database, path)).map_err(opening)??)
        }
        None => None,
    };
    Ok((db, recovered))
}

/// Removes the journal of the store at `path`, if any, once a checkpoint covers it (after
/// [`replay::recover`]): a store that does not journal keeps no journal beside it.
fn retire_journal(path: &Path) -> Result<(), RedbError> {
    let journal = journal::path_of(path);
    match std::fs::remove_file(&journal) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(RedbError::Journal {
            path: journal,
            message: format!("cannot remove it after applying it: {err}"),
        }),
    }
}

/// Before a read-only open: a journal left by a writer that crashed holds acknowledged
/// appends the file may not have yet, so the file is opened for writing once to apply it, when
/// this process may and nobody else writes it (a writer that has the file open is refused by
/// the read-only open that follows). A journal that cannot be applied fails the open, so a
/// reader (`openharness check` among them) never reports a store whole without its journal.
fn recover_before_reading(path: &Path, cache_size: usize) -> Result<(), RedbError> {
    if !journal::path_of(path).exists() {
        return Ok(());
    }
    match open_prepared(path, false, cache_size, Sharing::Exclusive) {
        Ok((db, recovered)) => {
            drop(db);
            if recovered.is_some() {
                retire_journal(path)?;
            }
            Ok(())
        }
        Err(err @ RedbError::Journal { .. }) => Err(err),
        Err(err) => {
            tracing::debug!(%err, "the journal could not be applied before reading; reading the file as it is");
            Ok(())
        }
    }
}

/// Opens the database at `path`: writable (creating the file if needed) unless `read_only`
/// or the file cannot be written, with a page cache of at most `cache_size` bytes.
fn open_db(
    path: &Path,
    read_only: bool,
    cache_size: usize,
    sharing: Sharing,
) -> Result<Db, RedbError> {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(cache_size);
    builder.set_concurrency_mode(match sharing {
        Sharing::Readers => redb::ConcurrencyMode::SingleWriter,
        Sharing::Exclusive => redb::ConcurrencyMode::ExclusiveWriter,
    });
    let open_error = |err: redb::DatabaseError| match redb::Error::from(err) {
        redb::Error::DatabaseAlreadyOpen => RedbError::AlreadyOpen {
            path: path.to_owned(),
            holders: holder::holders(path),
        },
        redb::Error::RepairAborted => RedbError::NeedsRepair {
            path: path.to_owned(),
        },
        source => match newer_file_format(path, &source) {
            Some(version) => RedbError::NewerFileFormat {
                path: path.to_owned(),
                version,
            },
            None => RedbError::Open {
                path: path.to_owned(),
                source: Box::new(source),
            },
        },
    };
    let open_read_only = || {
        builder
            .open_read_only(path)
            .map(Db::read_only)
            .map_err(open_error)
    };
    if read_only {
        return match open_read_only() {
            // Left unclean by a writer that died: repaired by opening it for writing once
            // (when this process may write it and nobody else does), then read.
            Err(RedbError::NeedsRepair { .. }) if builder.create(path).is_ok() => open_read_only(),
            opened => opened,
        };
    }
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| RedbError::CreateDir {
            path: dir.to_owned(),
            source,
        })?;
    }
    // A file that is there already is read first: one that is not a store's (another
    // application's redb file) is refused before anything opens it for writing, which would
    // change its header even when nothing else is written.
    if std::fs::metadata(path).is_ok_and(|meta| meta.len() > 0)
        && let Ok(existing) = builder.open_read_only(path)
    {
        let existing = Db::read_only(existing);
        layout::refuse_foreign(&existing, path)?;
    }
    create::ensure_exists(path)?;
    match builder.create(path) {
        Ok(db) => Ok(Db::writable(db)),
        Err(redb::DatabaseError::Storage(redb::StorageError::Io(err)))
            if err.kind() == std::io::ErrorKind::PermissionDenied
                || err.kind() == std::io::ErrorKind::ReadOnlyFilesystem =>
        {
            open_read_only()
        }
        Err(err) => Err(open_error(err)),
    }
}

/// The redb file format version of the file at `path`, when redb refused it and its header
/// names a version newer than redb's own (redb reports that as corruption).
fn newer_file_format(path: &Path, err: &redb::Error) -> Option<u8> {
    /// redb's magic number, then the byte whose low bit names the primary commit slot.
    const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
    /// Where the two commit slots (128 bytes each) start; each begins with its version.
    const SLOTS: usize = 64;
    /// The newest redb file format this version of redb reads.
    const NEWEST: u8 = 3;
    if !matches!(err, redb::Error::Corrupted(_)) {
        return None;
    }
    let mut header = [0u8; SLOTS + 256];
    let mut file = std::fs::File::open(path).ok()?;
    std::io::Read::read_exact(&mut file, &mut header).ok()?;
    if header[..MAGIC.len()] != MAGIC {
        return None;
    }
    let primary = usize::from(header[MAGIC.len()] & 1);
    let version = header[SLOTS + primary * 128];
    (version > NEWEST).then_some(version)
}

/// Checks that the events read from `start` on have consecutive seqs: a record lost to
/// damage is [`StoreError::Corrupt`] at its seq, not a shorter read whose later events a
/// caller would number wrongly.
fn check_contiguous(
    session: &SessionId,
    start: u64,
    records: &[(u64, &[u8])],
) -> Result<(), StoreError> {
    for (expected, (seq, _)) in (start..).zip(records) {
        let (seq, message) = match (*seq).cmp(&expected) {
            std::cmp::Ordering::Equal => continue,
            std::cmp::Ordering::Less => (*seq, format!("event {seq} is stored twice")),
            std::cmp::Ordering::Greater => (
                expected,
                format!("stored event {expected} is missing (the next one stored is {seq})"),
            ),
        };
        return Err(StoreError::Corrupt {
            session: session.clone(),
            seq,
            message,
        });
    }
    Ok(())
}

/// The listing of one session: from its record, or, when the record is damaged, from its
/// first event (the workflow and parent then come from that event alone), with what was
/// damaged.
fn listed_info<R>(
    events: &redb::ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    recent: &R,
    session: &SessionId,
    record: &[u8],
    last: Option<(u64, Vec<u8>)>,
) -> Result<(SessionInfo, Option<String>), Failure>
where
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let sid = session.as_str();
    let mut damaged = None;
    let record = match SessionRecord::decode(session, record) {
        Ok(record) => record,
        Err(damage) => {
            damaged = Some(damage.to_string());
            let first = match events.get((sid, 0))? {
                Some(bytes) => Some(bytes.value().to_vec()),
                None => staging::staged(recent, sid, 0..1)?
                    .pop()
                    .map(|(_, bytes)| bytes),
            };
            let Some(first) = first else {
                return Err(damage.into());
            };
            let first: Envelope = serde_json::from_slice(&first).map_err(|_| damage)?;
            tracing::warn!(%session, "listing a session whose metadata is damaged from its events");
            SessionRecord::start(session, &first, std::slice::from_ref(&first))
        }
    };
    Ok((layout::session_info(session, record, last)?, damaged))
}

/// Encodes an event for storage.
fn encode_event(event: &Envelope) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(event).map_err(|err| {
        StoreError::Invalid(format!(
            "event {} cannot be encoded as JSON: {err}",
            event.id
        ))
    })
}

#[async_trait]
impl Store for RedbStore {
    fn describe(&self) -> String {
        format!("redb:{}", self.path.display())
    }

    /// Fails once the file was found damaged (a contained panic, a session skipped from a
    /// listing): a command or a turn that met damage does not end in success.
    async fn sync(&self) -> Result<(), StoreError> {
        self.health
            .check_writable(&self.path, || "sync".to_owned())?;
        match &self.writer {
            Some(writer) => writer.sync().await,
            None => Ok(()),
        }
    }

    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let name = session;
        let session = session.clone();
        let note = note.map(str::to_owned);
        self.run_write(
            || format!("marking session {name} unfinished"),
            move |db| {
                let txn = db.begin_write()?;
                {
                    let mut marks = txn.open_table(UNFINISHED)?;
                    match &note {
                        Some(note) => {
                            marks.insert(session.as_str(), note.as_str())?;
                        }
                        None => {
                            marks.remove(session.as_str())?;
                        }
                    }
                }
                txn.commit()?;
                Ok(())
            },
        )
        .await
    }

    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        self.run(
            || "listing of unfinished sessions".to_owned(),
            |db| {
                let txn = db.begin_read()?;
                let marks = match txn.open_table(UNFINISHED) {
                    Ok(marks) => marks,
                    // Never marked: the table was never created.
                    Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                    Err(err) => return Err(err.into()),
                };
                let mut listed = Vec::new();
                for entry in marks.range::<&str>(..)? {
                    let (key, note) = entry?;
                    match key.value().parse::<SessionId>() {
                        Ok(session) => listed.push((session, note.value().to_owned())),
                        Err(err) => {
                            tracing::warn!(key = key.value(), %err, "skipping a mark with an invalid session id");
                        }
                    }
                }
                Ok(listed)
            },
        )
        .await
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        // Encode before taking the write lock; an empty batch still reports the length.
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            let bytes = encode_event(event)?;
            records.push((event.id.as_uuid().as_u128(), bytes));
        }
        let append = Append {
            session: session.clone(),
            events: events.to_vec(),
            records,
            expected_seq,
        };
        let Some(writer) = &self.writer else {
            return Err(RedbError::ReadOnly {
                path: self.path.to_path_buf(),
                operation: format!("append to session {session}"),
            }
            .into());
        };
        let Some(result) = writer.append(append).await else {
            return Err(RedbError::Task {
                path: self.path.to_path_buf(),
                operation: format!("append to session {session}"),
                message: "the writer thread stopped".to_owned(),
            }
            .into());
        };
        let len = result?;
        self.notifier.notify(session);
        Ok(len)
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}"),
            move |db| {
                let sid = session.as_str();
                let txn = db.begin_read()?;
                let table = txn.open_table(EVENTS)?;
                let mut guards = Vec::new();
                for entry in table.range((sid, range.start)..(sid, range.end))? {
                    let (key, bytes) = entry?;
                    guards.push((key.value().1, bytes));
                }
                // One transaction: the staged events are those no compaction had moved yet.
                let start = range.start;
                let staged = staging::staged(&txn.open_table(staging::RECENT)?, sid, range)?;
                let mut records: Vec<(u64, &[u8])> = guards
                    .iter()
                    .map(|(seq, bytes)| (*seq, bytes.value()))
                    .chain(staged.iter().map(|(seq, bytes)| (*seq, bytes.as_slice())))
                    .collect();
                if !records.is_sorted_by_key(|(seq, _)| *seq) {
                    records.sort_unstable_by_key(|(seq, _)| *seq);
                }
                check_contiguous(&session, start, &records)?;
                Ok(crate::decode_all(&session, &records)?)
            },
        )
        .await
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}'s metadata"),
            move |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(SESSIONS)?;
                let Some(bytes) = table.get(session.as_str())? else {
                    return Ok(None);
                };
                let record = SessionRecord::decode(&session, bytes.value())?;
                let events = txn.open_table(EVENTS)?;
                let recent = txn.open_table(staging::RECENT)?;
                let last = layout::last_event(&events, &recent, session.as_str())?;
                Ok(Some(layout::session_info(&session, record, last)?))
            },
        )
        .await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let listed = self.run(
            || "listing of sessions".to_owned(),
            |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(SESSIONS)?;
                let events = txn.open_table(EVENTS)?;
                let recent = txn.open_table(staging::RECENT)?;
                let mut staged = staging::last_staged_by_session(&recent)?;
                let mut infos = Vec::new();
                // The first session left out of the list or listed from its events because
                // its record is damaged, and the damage.
                let mut skipped = None;
                for entry in table.range::<&str>(..)? {
                    let (key, bytes) = entry?;
                    let session = match key.value().parse::<SessionId>() {
                        Ok(session) => session,
                        Err(err) => {
                            tracing::warn!(key = key.value(), %err, "skipping a session with an invalid id");
                            skipped.get_or_insert((key.value().to_owned(), err.to_string()));
                            continue;
                        }
                    };
                    let last = layout::later(
                        layout::events_tail(&events, session.as_str())?,
                        staged.remove(session.as_str()),
                    );
                    match listed_info(&events, &recent, &session, bytes.value(), last) {
                        Ok((info, damaged)) => {
                            if let Some(damage) = damaged {
                                skipped.get_or_insert((session.to_string(), damage));
                            }
                            infos.push(info);
                        }
                        Err(Failure::Store(err)) => {
                            tracing::warn!(%session, %err, "skipping a damaged session");
                            skipped.get_or_insert((session.to_string(), err.to_string()));
                        }
                        Err(failure) => return Err(failure),
                    }
                }
                crate::sort_oldest_first(&mut infos);
                Ok((infos, skipped))
            },
        )
        .await?;
        let (infos, skipped) = listed;
        if let Some((session, err)) = skipped {
            // The list answers what it can; the file is known damaged from now on (writes
            // refused, `sync` failing), so a command that listed it does not end in success.
            let _ = self
                .health
                .damaged(&self.path, format!("listing of session {session}"), err);
        }
        Ok(infos)
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        let name = session;
        let session = session.clone();
        let tails = self
            .writer
            .as_ref()
            .map(|writer| Arc::clone(writer.tails()));
        let writer = self.writer.clone();
        self.run_write(
            || format!("clearing of session {name}"),
            move |db| {
                let sid = session.as_str();
                // Held until the commit is decided, like an append's; the session's tail is
                // forgotten whatever the outcome.
                let Some(tails) = tails else {
                    return Ok(());
                };
                let mut tails = tails.lock();
                tails.remove(&session);
                let txn = db.begin_write()?;
                {
                    let mut sessions = txn.open_table(SESSIONS)?;
                    if sessions.remove(sid)?.is_none() {
                        drop(sessions);
                        txn.abort()?;
                        return Ok(());
                    }
                    let mut table = txn.open_table(EVENTS)?;
                    let mut index = txn.open_table(EVENT_INDEX)?;
                    let mut ids = Vec::new();
                    let mut all_decoded = true;
                    let mut note_id =
                        |seq: u64, bytes: &[u8]| match layout::id_of(&session, seq, bytes) {
                            Ok(id) => ids.push(id.as_uuid().as_u128()),
                            Err(_) => all_decoded = false,
                        };
                    for entry in table.range((sid, 0)..=(sid, u64::MAX))? {
                        let (key, bytes) = entry?;
                        note_id(key.value().1, bytes.value());
                    }
                    let mut recent = txn.open_table(staging::RECENT)?;
                    for (seq, bytes) in staging::remove_session(&mut recent, sid)? {
                        note_id(seq, &bytes);
                    }
                    if all_decoded {
                        for id in ids {
                            index.remove((id, sid))?;
                        }
                    } else {
                        // A damaged event hides its id: look through the whole index.
                        index.retain(|(_, owner), _| owner != sid)?;
                    }
                    table.retain_in((sid, 0)..=(sid, u64::MAX), |_, _| false)?;
                    let mut snapshots = txn.open_table(SNAPSHOTS)?;
                    snapshots.retain_in((sid, 0)..=(sid, u64::MAX), |_, _| false)?;
                }
                // A checkpoint too: the journal's records of this session must not bring its
                // events back after a crash.
                if let Some(journal) = writer.as_ref().and_then(|writer| writer.journal()) {
                    layout::set_journal_lsn(&txn, journal.applied())?;
                }
                txn.commit()?;
                Ok(())
            },
        )
        .await?;
        self.notifier.notify(name);
        Ok(())
    }

    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        let state = serde_json::to_vec(&snapshot.state).map_err(|err| {
            StoreError::Invalid(format!(
                "the snapshot of session {session} at {} cannot be encoded as JSON: {err}",
                snapshot.position
            ))
        })?;
        let name = session;
        let session = session.clone();
        let position = snapshot.position;
        self.run_write(
            || format!("saving a snapshot of session {name}"),
            move |db| {
                let sid = session.as_str();
                let txn = db.begin_write()?;
                {
                    let sessions = txn.open_table(SESSIONS)?;
                    let len = match sessions.get(sid)? {
                        Some(_) => Some(layout::len_of(
                            &txn.open_table(EVENTS)?,
                            &txn.open_table(staging::RECENT)?,
                            sid,
                        )?),
                        None => None,
                    };
                    match len {
                        Some(len) if position <= len => {}
                        len => {
                            return Err(crate::snapshot_beyond_end(
                                &session,
                                position,
                                len.unwrap_or(0),
                            )
                            .into());
                        }
                    }
                    let mut snapshots = txn.open_table(SNAPSHOTS)?;
                    snapshots.insert((sid, position), state.as_slice())?;
                }
                txn.commit()?;
                Ok(())
            },
        )
        .await
    }

    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}'s snapshots"),
            move |db| {
                let sid = session.as_str();
                let txn = db.begin_read()?;
                let table = txn.open_table(SNAPSHOTS)?;
                let Some(entry) = table.range((sid, 0)..=(sid, at_most))?.next_back() else {
                    return Ok(None);
                };
                let (key, bytes) = entry?;
                let (_, position) = key.value();
                let state =
                    serde_json::from_slice(bytes.value()).map_err(|err| StoreError::Corrupt {
                        session: session.clone(),
                        seq: position,
                        message: format!("stored snapshot state is not valid JSON: {err}"),
                    })?;
                Ok(Some(Snapshot::new(position, state)))
            },
        )
        .await
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        tail(
            self.clone(),
            self.notifier.clone(),
            session.clone(),
            from_seq,
        )
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    /// A journal whose record cannot be applied (here: it starts past the session's end) fails
    /// every open, readers' included, with an error naming the journal, and is left as it was.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_journal_that_does_not_fit_fails_the_open_and_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let session = SessionId::new();
        {
            let store = RedbStore::open(&path).unwrap();
            let event = Envelope::new("test:appended", json!({}), None);
            store.append(&session, &[event], 0).await.unwrap();
        }
        let journal_path = journal::path_of(&path);
        {
            // The clean close checkpointed at lsn 1; record 2 claims seq 5 of a 1-event session.
            let mut journal = journal::Journal::start(&journal_path, 2).unwrap();
            let event = Envelope::new("test:appended", json!({}), None);
            let records = vec![(
                event.id.as_uuid().as_u128(),
                serde_json::to_vec(&event).unwrap(),
            )];
            journal.group().add(&session, 5, &records);
            journal.commit().unwrap();
        }
        let before = std::fs::read(&journal_path).unwrap();
        for options in [
            RedbOptions::default(),
            RedbOptions::default().read_only(true),
        ] {
            let err = RedbStore::open_with(&path, options).unwrap_err();
            assert!(
                matches!(RedbError::of(&err), Some(RedbError::Journal { message, .. }) if message.contains("record 2 does not fit")),
                "{err:?}"
            );
            assert!(err.to_string().contains("store.redb-journal"), "{err}");
        }
        assert_eq!(std::fs::read(&journal_path).unwrap(), before);
    }

    #[test]
    fn store_path_prefers_the_environment() {
        assert_eq!(store_path_from(None), Path::new(RedbStore::DEFAULT_PATH));
        assert_eq!(
            store_path_from(Some("".into())),
            Path::new(RedbStore::DEFAULT_PATH)
        );
        assert_eq!(
            store_path_from(Some("/x/y.redb".into())),
            Path::new("/x/y.redb")
        );
    }

    /// Overwrites one raw record, as a damaged file or a foreign writer might.
    fn damage(store: &RedbStore, write: impl FnOnce(&redb::WriteTransaction)) {
        let txn = store.db.database().unwrap().begin_write().unwrap();
        write(&txn);
        txn.commit().unwrap();
    }

    #[tokio::test]
    async fn corrupt_records_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("store.redb")).unwrap();
        let session = SessionId::new();
        let events: Vec<Envelope> = (0..3)
            .map(|n| Envelope::new("test:appended", json!({ "n": n }), None))
            .collect();
        store.append(&session, &events, 0).await.unwrap();

        damage(&store, |txn| {
            let mut table = txn.open_table(EVENTS).unwrap();
            table
                .insert((session.as_str(), 1), b"{not json".as_slice())
                .unwrap();
        });
        let err = store.all_events(&session).await.unwrap_err();
        assert!(
            matches!(&err, StoreError::Corrupt { session: s, seq: 1, .. } if s == &session),
            "{err:?}"
        );
        // Reads that avoid the damaged record still work.
        assert_eq!(store.events(&session, 2..3).await.unwrap(), events[2..]);

        damage(&store, |txn| {
            let mut table = txn.open_table(SESSIONS).unwrap();
            table.insert(session.as_str(), b"[]".as_slice()).unwrap();
        });
        // An append made after reopening reads the damaged record back (this store keeps the
        // record it wrote in memory).
        let path = store.path().to_path_buf();
        let reads = [store.session(&session).await.map(|_| ())];
        // The listing shows the session from its events (its first one here), not an error.
        let listed = store.sessions().await.unwrap();
        assert_eq!(
            (listed.len(), listed[0].count, listed[0].created),
            (1, 3, events[0].timestamp)
        );
        drop(store);
        let store = RedbStore::open(&path).unwrap();
        let fresh = Envelope::new("test:appended", json!({ "n": 3 }), None);
        let append = store.append(&session, &[fresh], 3).await.map(|_| ());
        for result in reads.into_iter().chain([append]) {
            let err = result.unwrap_err();
            assert!(matches!(err, StoreError::Corrupt { .. }), "{err:?}");
            assert!(err.to_string().contains("metadata"), "{err}");
        }
        // Clearing removes the damage, and the index entries of every event, even the one whose
        // damaged record hides its id: the same events can be appended again from 0.
        store.clear(&session).await.unwrap();
        assert!(store.sessions().await.unwrap().is_empty());
        assert_eq!(store.append(&session, &events, 0).await.unwrap(), 3);
        // The usual path, where every event names its id, clears the index too.
        store.clear(&session).await.unwrap();
        assert_eq!(store.append(&session, &events, 0).await.unwrap(), 3);
        assert_eq!(store.all_events(&session).await.unwrap(), events);
    }

    #[tokio::test]
    async fn backend_errors_name_the_file_and_operation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.redb");
        let store = RedbStore::open(&path).unwrap();
        // Drop a table so the read fails inside redb.
        let txn = store.db.database().unwrap().begin_write().unwrap();
        txn.delete_table(EVENTS).unwrap();
        txn.commit().unwrap();
        let session: SessionId = "s-1".parse().unwrap();
        let err = store.events(&session, 0..1).await.unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, StoreError::Backend(_)), "{err:?}");
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert!(message.contains("read of session s-1"), "{message}");
    }
}
