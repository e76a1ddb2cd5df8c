//! The writer thread's work off the appends' path: making deferred commits durable
//! ([`sync_commits`]), checkpointing the journal ([`checkpoint`]) and moving staged events to
//! `events` ([`compact_staged`]). Each holds the tails' lock like a group commit, so no commit
//! lands in the middle of it, and a failure is logged (or returned, for a sync someone waits
//! on) without changing what is stored.

use std::path::PathBuf;

use openharness_core::StoreError;

use super::group::Target;
use super::guard;
use super::{RedbError, layout, staging};

/// Makes every commit so far durable with an empty durable commit.
pub(super) fn sync_commits(target: &Target<'_>) -> Result<(), StoreError> {
    let failed = |message: String| -> StoreError {
        RedbError::Task {
            path: PathBuf::from(target.path),
            operation: "making the appends durable".to_owned(),
            message,
        }
        .into()
    };
    target
        .health
        .check_writable(target.path, || "making the appends durable".to_owned())
        .map_err(StoreError::from)?;
    let Some(db) = target.db.database() else {
        return Ok(());
    };
    // Held like a group commit holds it, so no commit lands between this one and the record
    // that everything is durable.
    let _tails = target.tails.lock();
    let synced = guard::contained(|| -> Result<(), redb::Error> {
        let txn = db.begin_write()?;
        if target.shared.pending().is_none() {
            txn.abort()?;
            return Ok(());
        }
        txn.commit()?;
        target.committed(true);
        Ok(())
    });
    match synced {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err)) => Err(failed(err.to_string())),
        Err(panic) => Err(target
            .health
            .damaged(target.path, "making the appends durable".to_owned(), panic)
            .into()),
    }
}

/// Checkpoints the journal: a durable commit recording the last record redb holds, after which
/// the journal is written from its start again. Whether it succeeded; a failure is logged and
/// changes nothing (the journal keeps growing until the next attempt).
pub(super) fn checkpoint(target: &Target<'_>) -> bool {
    let Some(journaled) = target.journal else {
        return false;
    };
    let path = target.path;
    if target
        .health
        .check_writable(path, || "checkpointing the journal".to_owned())
        .is_err()
    {
        return false;
    }
    let Some(db) = target.db.database() else {
        return false;
    };
    // Held like a group commit holds it: no record is written between the checkpoint and the
    // restart, which would overwrite it.
    let _tails = target.tails.lock();
    let mut journal = journaled.lock();
    let applied = journaled.applied();
    let committed = guard::contained(|| -> Result<(), redb::Error> {
        let txn = db.begin_write()?;
        layout::set_journal_lsn(&txn, applied)?;
        txn.commit()?;
        Ok(())
    });
    let failure = match committed {
        Ok(Ok(())) => {
            journal.restart();
            return true;
        }
        Ok(Err(err)) => err.to_string(),
        Err(panic) => {
            target
                .health
                .damaged(path, "checkpointing the journal".to_owned(), panic);
            return false;
        }
    };
    tracing::warn!(path = %path.display(), error = %failure, "checkpointing the journal failed; retrying later");
    false
}

/// Moves the staged events to `events` in a transaction of its own, when due. A failure is
/// logged and changes nothing: the events stay staged, readable, until the next attempt.
pub(super) fn compact_staged(target: &Target<'_>) {
    let path = target.path;
    if target
        .health
        .check_writable(path, || "moving staged events".to_owned())
        .is_err()
    {
        return;
    }
    let Some(db) = target.db.database() else {
        return;
    };
    let compacted = guard::contained(|| -> Result<(), redb::Error> {
        let mut txn = db.begin_write()?;
        if target.journal.is_some() {
            // Nothing is lost with it: the journal's records re-apply on top of the last
            // checkpoint.
            txn.set_durability(redb::Durability::None)?;
        }
        let moved = {
            let mut recent = txn.open_table(staging::RECENT)?;
            let mut events = txn.open_table(layout::EVENTS)?;
            staging::compact_if_due(&mut recent, &mut events)?
        };
        if moved {
            txn.commit()?;
        } else {
            txn.abort()?;
        }
        Ok(())
    });
    match compacted {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            tracing::warn!(path = %path.display(), %err, "moving staged events failed; they stay staged");
        }
        Err(panic) => {
            target
                .health
                .damaged(path, "moving staged events".to_owned(), panic);
        }
    }
}
