//! [`RedbError`]: why a [`RedbStore`] could not open a file or complete an
//! operation; every message names the file.

use std::path::PathBuf;

use openharness_core::StoreError;

#[cfg(doc)]
use super::{RedbOptions, RedbStore};
use super::{holder, layout};

/// Why a [`RedbStore`] could not be opened or could not complete an operation.
///
/// Carried inside [`StoreError::Backend`] by the [`Store`](openharness_core::Store) methods; every message names the
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
