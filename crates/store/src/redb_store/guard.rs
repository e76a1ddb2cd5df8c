//! Containment of redb's panics on damaged files, and the database handle.
//!
//! redb trusts the bytes it reads: on a damaged file some reads panic inside it (a `&str` key
//! that is not UTF-8, a page type it does not know, a slice range past a page's end). Storing
//! keys as bytes would remove only the first kind, so instead every redb call of the store runs
//! under [`contained`], at a few choke points: opening (`RedbStore::open_typed`), each blocking
//! operation (`RedbStore::run`), each group commit and compaction of the writer, and dropping
//! the database ([`Db`]). A caught panic becomes a [`RedbError::Damaged`] naming the file and
//! the operation, and marks the store's [`Health`] damaged: its later writes are refused (a
//! write transaction a panic cut short, or a half-updated in-memory tail, must not be built
//! on), while reads, each contained again, go on answering what they can.
//!
//! redb itself is written for this: a panic inside a write transaction poisons it, and its
//! `Drop` does not touch the file while unwinding. The panic is caught without the panic
//! hook's print ([`openharness_core::adapter::catch_quietly`]): the caller sees the typed error, and a
//! command on a damaged file prints no raw panic text.

use std::path::Path;
use std::sync::OnceLock;

use redb::{Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, TransactionError};

use super::RedbError;

/// Runs `op`, turning a panic inside it into its message.
///
/// `op` must not own the database or anything that outlives it: what a panic unwinds through
/// is dropped mid-panic, and a database dropped then could panic again and abort.
pub(super) fn contained<T>(op: impl FnOnce() -> T) -> Result<T, String> {
    openharness_core::adapter::catch_quietly(op).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|message| (*message).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}

/// Whether the store found its file damaged; shared by every handle of one open store.
#[derive(Debug, Default)]
pub(super) struct Health {
    /// What the first contained panic said, once one happened.
    damage: OnceLock<String>,
}

impl Health {
    /// Records a contained panic of `operation`, and returns the error for it.
    pub(super) fn damaged(&self, path: &Path, operation: String, message: String) -> RedbError {
        let _ = self.damage.set(format!("{operation}: {message}"));
        tracing::warn!(path = %path.display(), %operation, %message, "the store file is damaged");
        RedbError::Damaged {
            path: path.to_owned(),
            operation,
            message,
        }
    }

    /// Whether an operation found the file damaged.
    pub(super) fn is_damaged(&self) -> bool {
        self.damage.get().is_some()
    }

    /// Refuses `operation`, a write, once the file was found damaged.
    pub(super) fn check_writable(
        &self,
        path: &Path,
        operation: impl FnOnce() -> String,
    ) -> Result<(), RedbError> {
        match self.damage.get() {
            None => Ok(()),
            Some(earlier) => Err(RedbError::Damaged {
                path: path.to_owned(),
                operation: operation(),
                message: format!(
                    "writes are refused since an earlier operation found the file damaged \
                     ({earlier})"
                ),
            }),
        }
    }
}

/// The open database: writable, or read-only when the file cannot be written. Dropping it
/// closes the file with any panic contained.
pub(super) struct Db {
    inner: Option<Inner>,
}

enum Inner {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl Db {
    /// A writable database.
    pub(super) fn writable(db: Database) -> Self {
        Self {
            inner: Some(Inner::Writable(db)),
        }
    }

    /// A read-only database.
    pub(super) fn read_only(db: ReadOnlyDatabase) -> Self {
        Self {
            inner: Some(Inner::ReadOnly(db)),
        }
    }

    /// The database, if it may be written.
    pub(super) fn database(&self) -> Option<&Database> {
        match &self.inner {
            Some(Inner::Writable(db)) => Some(db),
            _ => None,
        }
    }

    /// The writable database, mutably, for work that needs it alone (compaction); `None` when
    /// it is read-only.
    pub(super) fn database_mut(&mut self) -> Option<&mut Database> {
        match &mut self.inner {
            Some(Inner::Writable(db)) => Some(db),
            _ => None,
        }
    }

    /// The writable database itself, for work that needs it alone (compaction); `None`, the
    /// database dropped, when it is read-only.
    pub(super) fn into_writable(mut self) -> Option<Database> {
        match self.inner.take() {
            Some(Inner::Writable(db)) => Some(db),
            other => {
                self.inner = other;
                None
            }
        }
    }

    /// Begins a read transaction.
    pub(super) fn begin_read(&self) -> Result<ReadTransaction, redb::Error> {
        let begun: Result<ReadTransaction, TransactionError> = match &self.inner {
            Some(Inner::Writable(db)) => db.begin_read(),
            Some(Inner::ReadOnly(db)) => db.begin_read(),
            None => return Err(redb::Error::DatabaseClosed),
        };
        Ok(begun?)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let _ = contained(move || drop(inner));
        }
    }
}
