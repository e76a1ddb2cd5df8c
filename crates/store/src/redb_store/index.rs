//! The event-id index of a [`RedbStore`](super::RedbStore), written in batches.
//!
//! An append must find where the batch's ids are already stored in the session (a retry after
//! a lost acknowledgement, or an id appended twice). One index entry per event would dirty a
//! second B-tree on every durable commit, and a commit costs about one disk write per page it
//! dirties (measured here: the index alone added 13% to a single append). So `event_index`
//! holds the ids of a session's first `indexed` events only (the watermark in its
//! [`SessionRecord`]); the ids of the events after it, fewer than [`INDEX_EVERY`], are kept in
//! memory in the session's [`Tail`], and the append that collects [`INDEX_EVERY`] of them writes
//! them to the index together with the new watermark, in its transaction but after its group
//! has answered ([`super::apply::Tables::flush_owed`]). A tail is read back from the session's
//! events when first needed: after the store is opened, or after a failed commit dropped it.
//!
//! [`Tails`] is locked across every transaction that writes events, commit included, so what it
//! holds always matches the committed file: a transaction that fails forgets the tails of the
//! sessions it touched.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, MutexGuard};

use openharness_core::SessionId;
use redb::{ReadableTable, Table, WriteTransaction};

use super::Failure;
use super::layout::{self, SESSIONS, SessionRecord};
use super::staging;

/// How many events of a session may wait for the index: the most ids kept in memory per
/// session, and the most events read back to rebuild a tail.
pub(super) const INDEX_EVERY: u64 = 64;

/// Above this many sessions in memory, every tail is dropped (each is cheap to read back).
const MAX_TAILS: usize = 4096;

/// The tails of the sessions this store has appended to, behind the lock that every
/// event-writing transaction holds.
#[derive(Default)]
pub(super) struct Tails {
    sessions: Mutex<HashMap<SessionId, Tail>>,
}

/// What an append needs to know of a session beyond its length: its record as committed, and
/// the ids of the events after the record's watermark, by seq.
pub(super) struct Tail {
    /// The committed session record; `None` for a session with no events.
    pub(super) record: Option<SessionRecord>,
    /// The session's length, stored and staged events together.
    pub(super) len: u64,
    /// Ids (as u128) of the events at `record.indexed..`, with their seqs.
    ids: HashMap<u128, u64>,
}

/// The tails, locked for one transaction.
pub(super) type Locked<'a> = MutexGuard<'a, HashMap<SessionId, Tail>>;

impl Tails {
    /// Locks the tails for a transaction. After a panic in an earlier transaction the tails
    /// may not match the file, so they are all dropped.
    pub(super) fn lock(&self) -> Locked<'_> {
        match self.sessions.lock() {
            Ok(tails) => tails,
            Err(poisoned) => {
                let mut tails = poisoned.into_inner();
                tails.clear();
                self.sessions.clear_poison();
                tails
            }
        }
    }
}

/// The tail of `session`, read back from the file if it is not in memory.
pub(super) fn tail_of<'t, E, R>(
    tails: &'t mut Locked<'_>,
    txn: &WriteTransaction,
    events: &E,
    recent: &R,
    session: &SessionId,
) -> Result<&'t mut Tail, Failure>
where
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    if tails.len() >= MAX_TAILS && !tails.contains_key(session) {
        tails.clear();
    }
    Ok(match tails.entry(session.clone()) {
        Entry::Occupied(tail) => tail.into_mut(),
        Entry::Vacant(slot) => slot.insert(read_tail(txn, events, recent, session)?),
    })
}

/// Reads a session's record, its length and the ids of its events after the record's
/// watermark (stored or staged).
fn read_tail<E, R>(
    txn: &WriteTransaction,
    events: &E,
    recent: &R,
    session: &SessionId,
) -> Result<Tail, Failure>
where
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let sid = session.as_str();
    let sessions = txn.open_table(SESSIONS)?;
    let record = match sessions.get(sid)? {
        Some(bytes) => Some(SessionRecord::decode(session, bytes.value())?),
        None => None,
    };
    let len = layout::len_of(events, recent, sid)?;
    let mut ids = HashMap::new();
    let from = record.as_ref().map_or(0, |record| record.indexed);
    each_id(events, recent, session, from..len, |id, seq| {
        ids.insert(id, seq);
    })?;
    Ok(Tail { record, len, ids })
}

/// Calls `found` with the id (as u128) and seq of each of `session`'s events at `seqs`,
/// stored in `events` or staged in `recent`.
pub(super) fn each_id<E, R>(
    events: &E,
    recent: &R,
    session: &SessionId,
    seqs: std::ops::Range<u64>,
    mut found: impl FnMut(u128, u64),
) -> Result<(), Failure>
where
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    if seqs.is_empty() {
        return Ok(());
    }
    let sid = session.as_str();
    let mut add = |seq: u64, bytes: &[u8]| -> Result<(), Failure> {
        found(layout::id_of(session, seq, bytes)?.as_uuid().as_u128(), seq);
        Ok(())
    };
    for entry in events.range((sid, seqs.start)..(sid, seqs.end))? {
        let (key, bytes) = entry?;
        add(key.value().1, bytes.value())?;
    }
    for (seq, bytes) in staging::staged(recent, sid, seqs)? {
        add(seq, &bytes)?;
    }
    Ok(())
}

impl Tail {
    /// Where the event with `id` is stored in the session, if it is.
    pub(super) fn stored_seq<T>(
        &self,
        index: &T,
        sid: &str,
        id: u128,
    ) -> Result<Option<u64>, Failure>
    where
        T: ReadableTable<(u128, &'static str), u64>,
    {
        if let Some(seq) = self.ids.get(&id) {
            return Ok(Some(*seq));
        }
        Ok(index.get((id, sid))?.map(|seq| seq.value()))
    }

    /// Notes an event written at `seq` in this transaction.
    pub(super) fn add(&mut self, id: u128, seq: u64) {
        self.ids.insert(id, seq);
    }

    /// Writes the waiting ids below the record's watermark to the index (when [`flush_due`]
    /// said so), and forgets them; the ids of events after it stay waiting.
    pub(super) fn flush(
        &mut self,
        index: &mut Table<'_, (u128, &'static str), u64>,
        sid: &str,
    ) -> Result<(), redb::Error> {
        let watermark = self.record.as_ref().map_or(0, |record| record.indexed);
        let below: Vec<(u128, u64)> = self
            .ids
            .iter()
            .filter(|&(_, &seq)| seq < watermark)
            .map(|(&id, &seq)| (id, seq))
            .collect();
        for &(id, seq) in &below {
            index.insert((id, sid), seq)?;
        }
        for (id, _) in below {
            self.ids.remove(&id);
        }
        Ok(())
    }
}

/// Whether a session `len` events long, whose record is `record`, has [`INDEX_EVERY`] ids
/// waiting: then the append writes them to the index and moves the watermark to `len`.
pub(super) fn flush_due(record: &SessionRecord, len: u64) -> bool {
    len.saturating_sub(record.indexed) >= INDEX_EVERY
}
