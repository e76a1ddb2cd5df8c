//! Compaction of a store file no [`RedbStore`](super::RedbStore) has open (`openharness
//! compact`): redb's `Database::compact`, which moves pages towards the start of the file and
//! gives the free tail back to the file system.
//!
//! A redb file grows by doubling until its first full region and keeps the pages a long run
//! freed, so a file can be half as large again as the pages it holds (the race bench's 5,000
//! tasks: 10.5 MB of pages in a 12.9 MB file, or a 19.3 MB one when the machine was busy).
//! Compaction takes time in proportion to the file, so on its own it happens only when a
//! small file grew while open, as the store closes ([`compact_on_close`]); otherwise it is a
//! command.

use std::path::Path;
use std::sync::Arc;

use super::guard::{self, Db, Health};
use super::options::COMPACT_ON_CLOSE_BYTES;
use super::{DEFAULT_CACHE_BYTES, RedbError, Sharing, open_prepared, retire_journal};

/// What [`RedbStore::compact_file`](super::RedbStore::compact_file) did: the file's size
/// before and after, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compaction {
    /// The file's size before.
    pub before: u64,
    /// The file's size after.
    pub after: u64,
}

/// Compacts the store file at `path`, which must exist and be an Open Harness store.
pub(super) fn compact_file(path: &Path) -> Result<Compaction, RedbError> {
    let size = |path: &Path| {
        std::fs::metadata(path)
            .map(|metadata| metadata.len())
            .map_err(|err| RedbError::Open {
                path: path.to_owned(),
                source: Box::new(redb::Error::Io(err)),
            })
    };
    // Never creates a file: a missing one is a mistake (a typo in the path).
    let before = size(path)?;
    // Alone: compaction moves the pages readers in other processes would read.
    // Opening for writing applies a journal a crash left (see `super::replay`).
    let (db, _) = open_prepared(path, false, DEFAULT_CACHE_BYTES, Sharing::Exclusive)?;
    retire_journal(path)?;
    let Some(mut database) = db.into_writable() else {
        return Err(RedbError::ReadOnly {
            path: path.to_owned(),
            operation: "compacting".to_owned(),
        });
    };
    let compacted =
        guard::contained(|| database.compact()).map_err(|message| RedbError::Damaged {
            path: path.to_owned(),
            operation: "compacting".to_owned(),
            message,
        })?;
    // Closed (and the panic of a damaged file contained) before the size is read again.
    drop(Db::writable(database));
    compacted.map_err(|err| RedbError::Database {
        path: path.to_owned(),
        operation: "compacting".to_owned(),
        source: Box::new(err.into()),
    })?;
    Ok(Compaction {
        before,
        after: size(path)?,
    })
}

/// Compacts the file of a closing store (its writer thread done, its journal retired) when it
/// grew since it was `opened_len` bytes long and is at most [`COMPACT_ON_CLOSE_BYTES`]: see
/// [`RedbOptions::compact_on_close`](super::RedbOptions::compact_on_close). Skipped when
/// another handle still holds the database (a live tail) or the file was found damaged; a
/// failure is logged, and loses nothing.
pub(super) fn compact_on_close(db: &mut Arc<Db>, path: &Path, opened_len: u64, health: &Health) {
    let Ok(len) = std::fs::metadata(path).map(|metadata| metadata.len()) else {
        return;
    };
    if len <= opened_len || len > COMPACT_ON_CLOSE_BYTES || health.is_damaged() {
        return;
    }
    let Some(database) = Arc::get_mut(db).and_then(Db::database_mut) else {
        return;
    };
    let started = std::time::Instant::now();
    match guard::contained(|| database.compact()) {
        Ok(Ok(_)) => {
            let after = std::fs::metadata(path).map_or(len, |metadata| metadata.len());
            tracing::debug!(path = %path.display(), before = len, after, took = ?started.elapsed(), "compacted the store file on close");
        }
        Ok(Err(err)) => {
            tracing::warn!(path = %path.display(), %err, "could not compact the store file on close")
        }
        Err(panic) => {
            tracing::warn!(path = %path.display(), %panic, "compacting the store file on close found it damaged")
        }
    }
}
