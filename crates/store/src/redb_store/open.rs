//! Opening a store file: redb's database in the right sharing mode, the store's layout, the
//! journal a crash left applied, and the errors that name what went wrong.

use std::path::Path;

use super::guard::{self, Db, Health};
use super::{RedbError, create, holder, journal, layout, replay};

/// Whether other processes may read the file while this one has it open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sharing {
    /// One writer and any number of readers, in any processes (redb's
    /// [`SingleWriter`](redb::ConcurrencyMode::SingleWriter) mode): every reader, and a writer
    /// opened with [`RedbOptions::share_with_readers`](super::RedbOptions::share_with_readers).
    Readers,
    /// This handle alone: a writer by default (one fsync per commit), and compaction (which
    /// moves the pages readers would read).
    Exclusive,
}

/// Opens the store file at `path` ([`open_db`]), shared as `sharing` says, brings it to the
/// store's layout and, when it is open for writing, up to date with its journal
/// ([`replay::recover`], whose result it returns then). Each step has a panic (redb on a
/// damaged file) contained as [`RedbError::Damaged`].
pub(super) fn open_prepared(
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
            Some(guard::contained(|| replay::recover(&db, database, path)).map_err(opening)??)
        }
        None => None,
    };
    Ok((db, recovered))
}

/// Removes the journal of the store at `path`, if any, once a checkpoint covers it (after
/// [`replay::recover`]): a store that does not journal keeps no journal beside it.
pub(super) fn retire_journal(path: &Path) -> Result<(), RedbError> {
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
pub(super) fn recover_before_reading(path: &Path, cache_size: usize) -> Result<(), RedbError> {
    if !journal::path_of(path).exists() {
        return Ok(());
    }
    match open_prepared(path, false, cache_size, Sharing::Exclusive) {
        // Removed while the file is still held, so no writer can open it and take the
        // journal over in between.
        Ok((_db, Some(_))) => retire_journal(path),
        // The process may not write the file: a journal holding appends the file lacks
        // cannot be applied, and reading without them would pass them over.
        Ok((db, None)) => {
            let pending = replay::pending(&db, path)?;
            if pending.records.is_empty() {
                Ok(())
            } else {
                Err(RedbError::Journal {
                    path: journal::path_of(path),
                    message: format!(
                        "it holds {} records of acknowledged appends the file lacks, and \
                         applying them needs write access to the file",
                        pending.records.len()
                    ),
                })
            }
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
