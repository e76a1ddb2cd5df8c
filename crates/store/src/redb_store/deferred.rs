//! Appends acknowledged once queued, for a [`RedbStore`](super::RedbStore) that defers
//! durability ([`RedbDurability::Periodic`](super::RedbDurability::Periodic) or
//! [`TurnEnd`](super::RedbDurability::TurnEnd)).
//!
//! Such a store promises only that an append survives a crash once the period has passed or
//! the turn has ended; until then it is in memory. So the caller need not wait for the writer
//! thread's commit either: an append whose outcome is already certain is answered at once and
//! committed by the writer thread with whatever else is queued, in one transaction. On the race
//! shape (one append per task) that took 5,000 tasks from 1.02 s to 0.25 s.
//!
//! An outcome is certain when this module **knows** the session: its length and the id of
//! every event in it, counting the appends queued and not applied yet. Then the append is
//! accepted when its `expected_seq` is that length and none of its ids is in the session (or
//! twice in the batch); anything else (a conflict, a retry, a repeated id, a session not known
//! yet) is sent to the writer thread to be checked against the file, as every append is in the
//! `EveryAppend` mode, and answered after its commit. Sessions become known from those checked
//! appends: a session written from its first event, or read back once after an append to an
//! existing one. What is known is bounded: a session over [`MAX_KNOWN_EVENTS`] events is
//! never known, and above about a million ids in all, every session is forgotten.
//!
//! Reads wait for the writer thread to apply every append acknowledged before they started
//! ([`Settle::settled`]), so a caller reads its own writes, as in the other modes. An
//! acknowledged append the writer thread then fails to commit (redb failed, or the file was
//! found damaged) marks the store damaged: every later write, `Store::sync` included, fails
//! with the reason, so the turn that made it does not end in success.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openharness_core::SessionId;

use super::guard::Db;
use super::jobs::Append;
use super::layout::EVENTS;
use super::settle::Settle;
use super::{Failure, index, staging};

/// A session longer than this is never known (its appends are checked by the writer thread,
/// as in the `EveryAppend` mode): its ids would take over 2 MB, and reading them back longer
/// than the checked appends it saves.
pub(super) const MAX_KNOWN_EVENTS: u64 = 1 << 17;

/// Above this many ids known in all sessions (about 24 MB), every session is forgotten (each
/// is read back when next appended to).
const MAX_KNOWN_IDS: usize = 1 << 20;

/// Above this many sessions in the account, those with nothing in progress are dropped.
const MAX_SESSIONS: usize = 1024;

/// At most this many acknowledged appends wait for the writer thread; the next ones are
/// checked and answered by it, so a caller faster than the disk is slowed down to it.
const MAX_WAITING: u64 = 4096;

/// What the store knows of the sessions appended to, and how far the writer thread is.
pub(super) struct Deferred {
    sessions: Mutex<HashMap<SessionId, Entry>>,
    /// How many ids the known sessions hold, in all (changed under `sessions`' lock).
    known_ids: AtomicUsize,
    /// The appends acknowledged before the writer thread applied them (shared with the
    /// writer, which counts what it applies).
    settle: Arc<Settle>,
}

/// One session's entry.
#[derive(Default)]
struct Entry {
    /// Its length and ids, when known.
    known: Option<Known>,
    /// Appends to it sent to the writer thread to be checked, not answered yet: while there
    /// are any, its appends are all checked (their outcome depends on those).
    checking: usize,
    /// Longer than [`MAX_KNOWN_EVENTS`]: never read back.
    too_long: bool,
    /// Clearings of it in progress: while there are any, its appends are all checked, and
    /// it does not become known (what it holds depends on where the clearing lands).
    clearing: usize,
}

/// A session's length and the ids of all its events, acknowledged appends included.
struct Known {
    len: u64,
    ids: HashSet<u128>,
}

/// What to do with an append.
pub(super) enum Offer {
    /// Acknowledged: the session's new length; the append is queued for the writer thread.
    Acknowledged(u64),
    /// To be checked by the writer thread, which answers it.
    Check(Append),
    /// The writer thread is gone.
    Gone,
}

impl Deferred {
    /// A new account, acknowledging appends in `settle`.
    pub(super) fn new(settle: Arc<Settle>) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            known_ids: AtomicUsize::new(0),
            settle,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Acknowledges `append` if its outcome is certain, handing it to `queue` (in the order
    /// of acknowledgement: the lock is held); otherwise returns it to be checked, counted as
    /// such until [`checked`](Self::checked).
    pub(super) fn offer(&self, append: Append, queue: impl FnOnce(Append) -> bool) -> Offer {
        let mut sessions = self.lock();
        let waiting = self.settle.waiting();
        let entry = sessions.entry(append.session.clone()).or_default();
        let known = match entry.known.as_mut() {
            Some(known)
                if entry.checking == 0
                    && entry.clearing == 0
                    && waiting < MAX_WAITING
                    && !append.records.is_empty()
                    && known.len == append.expected_seq
                    && all_new(&known.ids, &append.records) =>
            {
                known
            }
            _ => {
                entry.checking += 1;
                return Offer::Check(append);
            }
        };
        known.ids.extend(append.records.iter().map(|(id, _)| *id));
        known.len += append.records.len() as u64;
        let len = known.len;
        self.known_ids
            .fetch_add(append.records.len(), Ordering::Relaxed);
        // Counted before it is queued, so a read that starts once it is answered waits for it.
        self.settle.acknowledge();
        if !queue(append) {
            self.settle.withdraw();
            self.drop_known(entry);
            return Offer::Gone;
        }
        if len > MAX_KNOWN_EVENTS {
            self.drop_known(entry);
            entry.too_long = true;
        }
        Offer::Acknowledged(len)
    }

    /// A checked append of `session` was never sent (the writer thread is gone).
    pub(super) fn unsent(&self, session: &SessionId) {
        if let Some(entry) = self.lock().get_mut(session) {
            entry.checking = entry.checking.saturating_sub(1);
        }
    }

    /// After a checked append's commit (on the writer thread): what it left the session as,
    /// when it succeeded. A session not known yet becomes known: from the append itself when
    /// it holds all of the session, else read back from `db` (its length at most
    /// [`MAX_KNOWN_EVENTS`]).
    pub(super) fn checked(&self, db: &Db, append: &Append, outcome: Option<u64>) {
        let mut sessions = self.lock();
        if sessions.len() > MAX_SESSIONS || self.known_ids.load(Ordering::Relaxed) > MAX_KNOWN_IDS {
            for entry in sessions.values_mut() {
                entry.known = None;
            }
            self.known_ids.store(0, Ordering::Relaxed);
            sessions.retain(|_, entry| entry.checking > 0 || entry.clearing > 0 || entry.too_long);
        }
        let entry = sessions.entry(append.session.clone()).or_default();
        entry.checking = entry.checking.saturating_sub(1);
        let Some(len) = outcome.filter(|_| entry.clearing == 0) else {
            return;
        };
        if len > MAX_KNOWN_EVENTS {
            self.drop_known(entry);
            entry.too_long = true;
            return;
        }
        let before = entry.known.as_ref().map_or(0, |known| known.ids.len());
        match entry.known.as_mut() {
            // A retry of stored events, or new ones: either way, what the session holds now.
            Some(known) => {
                known.ids.extend(append.records.iter().map(|(id, _)| *id));
                known.len = known.len.max(len);
            }
            None if len == append.records.len() as u64 => {
                entry.known = Some(Known {
                    len,
                    ids: append.records.iter().map(|(id, _)| *id).collect(),
                });
            }
            None if !entry.too_long => match read_ids(db, &append.session, len) {
                Ok(ids) => entry.known = Some(Known { len, ids }),
                Err(err) => {
                    tracing::debug!(session = %append.session, %err, "the session's ids could not be read back; its appends stay checked");
                }
            },
            None => {}
        }
        let after = entry.known.as_ref().map_or(0, |known| known.ids.len());
        self.known_ids
            .fetch_add(after.saturating_sub(before), Ordering::Relaxed);
    }

    /// Forgets what `entry` knows, and its ids from the count.
    fn drop_known(&self, entry: &mut Entry) {
        if let Some(known) = entry.known.take() {
            let _ = self
                .known_ids
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |ids| {
                    Some(ids.saturating_sub(known.ids.len()))
                });
        }
    }

    /// Forgets `session` (an acknowledged append to it failed): its next appends are checked
    /// until it is known again.
    pub(super) fn forget(&self, session: &SessionId) {
        if let Some(entry) = self.lock().get_mut(session) {
            self.drop_known(entry);
        }
    }

    /// `session` is about to be cleared: from now until [`cleared`](Self::cleared), its
    /// appends are checked by the writer thread, so each lands wholly before or after the
    /// clearing. Call before waiting for the acknowledged ones ([`Settle::settled`]).
    pub(super) fn clearing(&self, session: &SessionId) {
        let mut sessions = self.lock();
        let entry = sessions.entry(session.clone()).or_default();
        entry.clearing += 1;
        self.drop_known(entry);
    }

    /// The clearing of `session` is over, done or failed.
    pub(super) fn cleared(&self, session: &SessionId) {
        if let Some(entry) = self.lock().get_mut(session) {
            entry.clearing = entry.clearing.saturating_sub(1);
            self.drop_known(entry);
        }
    }
}

/// Whether none of `records`' ids is in `ids` or twice among them.
fn all_new(ids: &HashSet<u128>, records: &[(u128, Vec<u8>)]) -> bool {
    let mut batch = HashSet::with_capacity(records.len());
    records
        .iter()
        .all(|(id, _)| !ids.contains(id) && batch.insert(*id))
}

/// The ids of the first `len` events of `session` (stored or staged), read from `db`.
fn read_ids(db: &Db, session: &SessionId, len: u64) -> Result<HashSet<u128>, String> {
    let read = || -> Result<HashSet<u128>, Failure> {
        let txn = db.begin_read()?;
        let mut ids = HashSet::with_capacity(usize::try_from(len).unwrap_or(0));
        let (events, recent) = (txn.open_table(EVENTS)?, txn.open_table(staging::RECENT)?);
        index::each_id(&events, &recent, session, 0..len, |id, _| {
            ids.insert(id);
        })?;
        Ok(ids)
    };
    let ids = match super::guard::contained(read)? {
        Ok(ids) => ids,
        Err(Failure::Store(err)) => return Err(err.to_string()),
        Err(Failure::Redb(err)) => return Err(err.to_string()),
    };
    if ids.len() as u64 == len {
        Ok(ids)
    } else {
        Err(format!("{} distinct ids among {len} events", ids.len()))
    }
}
