//! Bringing a store up to date with its [journal] when it is opened for
//! writing: the records after the last checkpoint (appends acknowledged before a crash, which
//! redb had not made durable yet) are applied again, in one durable commit that is itself a
//! checkpoint. Re-applying is safe however much of it redb already holds: an append whose
//! session already reaches past it is skipped (a group commit is all or nothing, so its
//! events are there), and one that starts where the session ends is applied with the usual
//! rules, which recognise events already stored by their ids. A record's snapshots are saved
//! again after its appends (inserting one redb already holds changes nothing); one its session
//! does not reach, which a journal written by this store never holds, is skipped.

use std::path::Path;

use openharness_core::SessionId;
use redb::Database;

use super::apply::{Tables, apply};
use super::guard::Db;
use super::index::Tails;
use super::jobs::Append;
use super::journal::{self, Appended, Record};
use super::layout::{SESSIONS, SNAPSHOTS};
use super::{Failure, RedbError, layout, record};

/// What [`recover`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recovered {
    /// The lsn the next journal record should have: above every lsn in the journal file and
    /// the checkpoint, so no record left in the file is mistaken for a new one.
    pub(super) next_lsn: u64,
    /// How many records were applied again.
    pub(super) replayed: usize,
}

/// The journal's records that the file's last checkpoint does not cover.
pub(super) struct Pending {
    /// The records, in order, the first numbered one past the checkpoint.
    pub(super) records: Vec<Record>,
    /// The lsn the next journal record should have (see [`Recovered::next_lsn`]).
    next_lsn: u64,
}

/// Reads the journal of the store at `path` (open as `db`, for reading or writing) and keeps
/// the records after the file's checkpoint; fails when records between are missing.
pub(super) fn pending(db: &Db, path: &Path) -> Result<Pending, RedbError> {
    let (failed, opening) = (journal_failure(path), open_failure(path));
    let records = journal::read(&journal::path_of(path)).map_err(|err| failed(err.to_string()))?;
    let checkpoint = {
        let txn = db.begin_read().map_err(&opening)?;
        match layout::read_meta(&txn).map_err(&opening)? {
            Some(meta) => layout::journal_lsn(&meta).map_err(&opening)?,
            None => 0,
        }
    };
    let last = records.last().map_or(0, |record| record.lsn);
    let next_lsn = checkpoint.max(last) + 1;
    let pending: Vec<_> = records
        .into_iter()
        .filter(|record| record.lsn > checkpoint)
        .collect();
    if let Some(first) = pending.first()
        && first.lsn != checkpoint + 1
    {
        return Err(failed(format!(
            "its records start at {} but the store was checkpointed at {checkpoint}: \
             the records between are missing",
            first.lsn
        )));
    }
    Ok(Pending {
        records: pending,
        next_lsn,
    })
}

/// Applies the journal of the store at `path` (open for writing as `db`) after its last
/// checkpoint, and records a checkpoint past every record in the file.
pub(super) fn recover(db: &Db, database: &Database, path: &Path) -> Result<Recovered, RedbError> {
    let Pending {
        records: pending,
        next_lsn,
    } = self::pending(db, path)?;
    if pending.is_empty() {
        return Ok(Recovered {
            next_lsn,
            replayed: 0,
        });
    }
    let (failed, opening) = (journal_failure(path), open_failure(path));
    let txn = database.begin_write().map_err(|err| opening(err.into()))?;
    {
        let tails = Tails::default();
        let mut tails = tails.lock();
        // As the journaled appends went: straight to `events`.
        let mut tables = Tables::open(&txn, false).map_err(&opening)?;
        for record in &pending {
            for appended in &record.appends {
                // Already held (redb made it durable with a later commit): skipped without
                // reading the session's record, which may be what a crash left damaged.
                let len = layout::len_of(&tables.events, &tables.recent, &appended.session)
                    .map_err(&opening)?;
                if len >= appended.first_seq + appended.records.len() as u64 {
                    continue;
                }
                let append = append_of(appended).map_err(|message| {
                    failed(format!(
                        "record {} holds a malformed append: {message}",
                        record.lsn
                    ))
                })?;
                match apply(&txn, &mut tables, &mut tails, &append) {
                    Ok(_) => {}
                    Err(Failure::Store(err)) => {
                        return Err(failed(format!(
                            "record {} does not fit the store: {err}",
                            record.lsn
                        )));
                    }
                    Err(Failure::Redb(err)) => return Err(opening(err)),
                }
            }
            if !record.snapshots.is_empty() {
                save_snapshots(&txn, &tables, record).map_err(&opening)?;
            }
        }
        tables.flush_owed(&mut tails).map_err(&opening)?;
    }
    layout::set_journal_lsn(&txn, next_lsn - 1).map_err(&opening)?;
    txn.commit().map_err(|err| opening(err.into()))?;
    tracing::info!(path = %path.display(), records = pending.len(), "re-applied the journal's records after the last checkpoint");
    Ok(Recovered {
        next_lsn,
        replayed: pending.len(),
    })
}

/// Saves the snapshots of `record` whose sessions hold the events they fold (by the rule
/// every save follows: [`layout::snapshot_short_of`]).
fn save_snapshots(
    txn: &redb::WriteTransaction,
    tables: &Tables<'_>,
    record: &Record,
) -> Result<(), redb::Error> {
    let sessions = txn.open_table(SESSIONS)?;
    let mut snapshots = txn.open_table(SNAPSHOTS)?;
    for saved in &record.snapshots {
        let sid = saved.session.as_str();
        if let Some(len) = layout::snapshot_short_of(
            &sessions,
            &tables.events,
            &tables.recent,
            sid,
            saved.position,
        )? {
            tracing::warn!(
                session = sid,
                position = saved.position,
                len,
                lsn = record.lsn,
                "skipping a journaled snapshot past its session's end"
            );
            continue;
        }
        snapshots.insert((sid, saved.position), saved.state.as_slice())?;
    }
    Ok(())
}

/// The append a journal record's entry stands for.
fn append_of(appended: &Appended) -> Result<Append, String> {
    let session: SessionId = appended
        .session
        .parse()
        .map_err(|err| format!("session id {:?}: {err}", appended.session))?;
    let events = appended
        .records
        .iter()
        .map(|(_, bytes)| record::decode(bytes))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| format!("an event of session {session}: {err}"))?;
    Ok(Append {
        session,
        events,
        records: appended.records.clone(),
        expected_seq: appended.first_seq,
    })
}

/// A [`RedbError::Journal`] naming the journal of the store at `path`, from a message.
fn journal_failure(path: &Path) -> impl Fn(String) -> RedbError {
    let journal = journal::path_of(path);
    move |message| RedbError::Journal {
        path: journal.clone(),
        message,
    }
}

/// A [`RedbError::Open`] naming the store at `path`, from redb's error.
fn open_failure(path: &Path) -> impl Fn(redb::Error) -> RedbError {
    let path = path.to_owned();
    move |source| RedbError::Open {
        path: path.clone(),
        source: Box::new(source),
    }
}
