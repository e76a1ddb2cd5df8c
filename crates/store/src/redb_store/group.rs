//! One group commit's transaction: every append of the group applied under the tails' lock,
//! the journal's record written and made durable before redb's commit (the appends it holds
//! answered then, and the index entries they owe written after the answer), and what a failure
//! does to the group ([`write_group`]), and the database a commit writes with what goes with
//! it ([`Target`]: whether a commit must be durable now). The writer thread
//! ([`super::writer`]) gathers the groups and answers the callers.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use openharness_core::{SessionId, StoreError};
use redb::Database;

use super::apply::{Tables, apply};
use super::deferred::Deferred;
use super::guard::{self, Db, Health};
use super::index::{Locked, Tails};
use super::jobs::{Append, Journaled, SaveSnapshot, Shared};
use super::layout::{self, SESSIONS, SNAPSHOTS};
use super::settle::Settle;
use super::{Failure, RedbDurability, RedbError, staging};

/// Given a group's results once its journal record is durable, answers the appends it can
/// before redb's commit; says whether it answered any.
pub(super) type Answer<'a> = &'a mut dyn FnMut(&[Result<u64, StoreError>]) -> bool;

/// An append acknowledged before its commit failed: the store is marked damaged, so every
/// later write (the turn's closing sync among them) fails with the reason.
pub(super) fn lost(target: &Target<'_>, append: &Append, err: &StoreError) {
    if let Some(deferred) = target.deferred {
        deferred.forget(&append.session);
    }
    target.health.damaged(
        target.path,
        format!("append to session {}", append.session),
        format!("an append acknowledged before its commit could not be committed: {err}"),
    );
}

/// What a group's transaction did.
pub(super) struct Written {
    /// One result per append.
    pub(super) results: Vec<Result<u64, StoreError>>,
    /// One result per snapshot.
    pub(super) snapshots: Vec<Result<(), StoreError>>,
    /// Whether enough events are staged to move them (see [`staging::COMPACT_AT`]).
    pub(super) compact: bool,
    /// Whether enough journal records are written since the last checkpoint to make one.
    pub(super) checkpoint: bool,
}

/// Why a whole group failed.
pub(super) enum GroupFailure {
    /// redb failed (its message).
    Redb(String),
    /// The file is damaged: redb panicked (contained), or an earlier operation did.
    Damaged(RedbError),
}

impl GroupFailure {
    /// The error each append of the group gets.
    pub(super) fn error(&self, path: &Path, session: &SessionId) -> StoreError {
        self.error_in(path, format!("append to session {session}"))
    }

    /// The error each snapshot of the group gets.
    pub(super) fn snapshot_error(&self, path: &Path, session: &SessionId) -> StoreError {
        self.error_in(path, format!("saving a snapshot of session {session}"))
    }

    fn error_in(&self, path: &Path, operation: String) -> StoreError {
        match self {
            Self::Redb(message) => RedbError::Task {
                path: PathBuf::from(path),
                operation,
                message: format!("the group commit failed: {message}"),
            },
            Self::Damaged(RedbError::Damaged { message, .. }) => RedbError::Damaged {
                path: PathBuf::from(path),
                operation,
                message: message.clone(),
            },
            Self::Damaged(other) => RedbError::Task {
                path: PathBuf::from(path),
                operation,
                message: other.to_string(),
            },
        }
        .into()
    }
}

/// Applies a group of appends, then its snapshots (only with a journal), in one transaction, holding the tails' lock until the commit
/// is decided. A redb failure fails the whole group (and forgets the tails of its sessions,
/// which may hold ids that were never committed); a refused append fails only itself. A
/// panic inside redb is contained: every tail is forgotten and the store marked damaged, so
/// no later write builds on what the panic cut short. A snapshot past its session's end fails
/// only itself.
///
/// With a journal, `answer` is given the results once the group's record is durable, before
/// redb's commit; an append it answers is the caller's to count ([`super::settle`]), and if
/// the commit then fails the caller marks the store damaged ([`lost`]).
pub(super) fn write_group(
    target: &Target<'_>,
    group: &[Append],
    snapshots: &[SaveSnapshot],
    answer: Answer<'_>,
) -> Result<Written, GroupFailure> {
    let operation = || "group commit".to_owned();
    target
        .health
        .check_writable(target.path, operation)
        .map_err(GroupFailure::Damaged)?;
    let Some(db) = target.db.database() else {
        return Err(GroupFailure::Redb("the store is open read-only".to_owned()));
    };
    let mut tails = target.tails.lock();
    match guard::contained(|| write_locked(target, db, &mut tails, group, snapshots, answer)) {
        Ok(Ok(written)) => Ok(written),
        Ok(Err(err)) => {
            for append in group {
                tails.remove(&append.session);
            }
            Err(GroupFailure::Redb(err.to_string()))
        }
        Err(panic) => {
            tails.clear();
            Err(GroupFailure::Damaged(target.health.damaged(
                target.path,
                operation(),
                panic,
            )))
        }
    }
}

fn write_locked(
    target: &Target<'_>,
    db: &Database,
    tails: &mut Locked<'_>,
    group: &[Append],
    snapshots: &[SaveSnapshot],
    answer: Answer<'_>,
) -> Result<Written, redb::Error> {
    let mut txn = db.begin_write()?;
    let durable = target.durable_now();
    if !durable {
        txn.set_durability(redb::Durability::None)?;
    }
    let mut results = Vec::with_capacity(group.len());
    let mut saved = Vec::with_capacity(snapshots.len());
    let mut wrote = false;
    let mut journal = target.journal.map(Journaled::lock);
    let mut record = journal.as_mut().map(|journal| journal.group());
    // Staging saves disk writes only when the commit itself is durable.
    let mut tables = Tables::open(&txn, target.journal.is_none())?;
    let compact = {
        for append in group {
            match apply(&txn, &mut tables, tails, append) {
                Ok((len, written)) => {
                    if written && let Some(record) = record.as_mut() {
                        let first_seq = len - append.records.len() as u64;
                        record.add(&append.session, first_seq, &append.records);
                    }
                    wrote |= written;
                    results.push(Ok(len));
                }
                Err(Failure::Store(err)) => results.push(Err(err)),
                Err(Failure::Redb(err)) => return Err(err),
            }
        }
        if !snapshots.is_empty() {
            let sessions = txn.open_table(SESSIONS)?;
            let mut table = txn.open_table(SNAPSHOTS)?;
            for save in snapshots {
                let (sid, position) = (save.session.as_str(), save.position);
                if let Some(len) = layout::snapshot_short_of(
                    &sessions,
                    &tables.events,
                    &tables.recent,
                    sid,
                    position,
                )? {
                    saved.push(Err(crate::snapshot_beyond_end(
                        &save.session,
                        position,
                        len,
                    )));
                    continue;
                }
                table.insert((sid, position), save.state.as_bytes())?;
                if let Some(record) = record.as_mut() {
                    record.add_snapshot(&save.session, position, save.state.as_bytes());
                }
                wrote = true;
                saved.push(Ok(()));
            }
        }
        staging::due(&tables.recent)?
    };
    if !wrote {
        drop(tables);
        txn.abort()?;
        return Ok(Written {
            results,
            snapshots: saved,
            compact,
            checkpoint: false,
        });
    }
    // The journal's record first: an append is acknowledged only once it is durable, and a
    // record that cannot be written leaves redb as it was.
    let mut journaled = None;
    if let Some(journal) = journal.as_mut() {
        match journal.commit() {
            Ok(lsn) => journaled = Some(lsn),
            Err(err) => {
                drop(tables);
                txn.abort()?;
                return Err(redb::Error::Io(std::io::Error::new(
                    err.kind(),
                    format!("writing the journal {}: {err}", journal.path().display()),
                )));
            }
        }
    }
    // Durable: the answers need not wait for redb's in-memory commit.
    let answered = journaled.is_some() && answer(&results);
    // Then what the answer need not wait for: the index entries the appends owe, and redb's
    // commit.
    let flushed = tables.flush_owed(tails);
    drop(tables);
    let committed = flushed.and_then(|()| txn.commit().map_err(redb::Error::from));
    if let Err(err) = committed {
        if let (Some(journal), Some(lsn)) = (journal.as_mut(), journaled)
            && !answered
        {
            // The callers are told their appends failed: the record must not be applied
            // later. (An answered one stays in the journal: the next open applies it.)
            journal.take_back(lsn);
        }
        return Err(err);
    }
    target.committed(durable);
    let mut checkpoint = false;
    if let (Some(lsn), Some(journaled_by), Some(journal)) = (journaled, target.journal, &journal) {
        journaled_by.applied.store(lsn, Ordering::Release);
        checkpoint = journal.written() >= journaled_by.checkpoint_bytes;
    }
    Ok(Written {
        results,
        snapshots: saved,
        compact,
        checkpoint,
    })
}

/// The database a group commit writes and what goes with it.
pub(super) struct Target<'a> {
    /// The database, writable.
    pub(super) db: &'a Db,
    pub(super) path: &'a Path,
    pub(super) tails: &'a Tails,
    pub(super) health: &'a Health,
    pub(super) durability: RedbDurability,
    pub(super) shared: &'a Shared,
    pub(super) journal: Option<&'a Journaled>,
    pub(super) deferred: Option<&'a Deferred>,
    /// The appends answered before their commit.
    pub(super) settle: &'a Settle,
}

impl Target<'_> {
    /// Whether a commit made now must be durable. Call inside the write transaction.
    pub(super) fn durable_now(&self) -> bool {
        if self.journal.is_some() {
            return false;
        }
        match self.durability {
            RedbDurability::EveryAppend => true,
            RedbDurability::TurnEnd => false,
            RedbDurability::Periodic(every) => self
                .shared
                .pending()
                .is_some_and(|since| since.elapsed() >= every),
        }
    }

    /// Records a commit's durability. Call inside the write transaction, once it committed.
    pub(super) fn committed(&self, durable: bool) {
        if self.journal.is_some() {
            // The journal made it durable.
        } else if durable {
            self.shared.set_pending(None);
        } else if self.shared.pending().is_none() {
            self.shared.set_pending(Some(Instant::now()));
        }
    }

    /// How long the writer thread may wait for work before the period makes a commit due.
    pub(super) fn wait_limit(&self) -> Option<Duration> {
        if self.journal.is_some() {
            return None;
        }
        match self.durability {
            RedbDurability::Periodic(every) => self
                .shared
                .pending()
                .map(|since| every.saturating_sub(since.elapsed())),
            _ => None,
        }
    }
}
