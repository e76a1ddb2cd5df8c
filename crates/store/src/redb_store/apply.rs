//! One append applied inside a write transaction: the rules checked, the events staged or
//! written, the session's tail and record kept up to date. Used by group commits
//! ([`super::writer`]) and by the journal's replay when a store opens ([`super::replay`]).

use openharness_core::{SessionId, StoreError};

use super::Failure;
use super::index::{self, Locked};
use super::jobs::Append;
use super::layout::{EVENT_INDEX, EVENTS, SESSIONS, SessionRecord};
use super::staging;
use crate::append::{Plan, plan_append};

/// The tables every append writes, open for one group's transaction.
pub(super) struct Tables<'txn> {
    pub(super) events: redb::Table<'txn, (&'static str, u64), &'static [u8]>,
    pub(super) index: redb::Table<'txn, (u128, &'static str), u64>,
    pub(super) recent: redb::Table<'txn, u64, (&'static str, u64, &'static [u8])>,
    /// The staging order of the next staged event.
    pub(super) next_order: u64,
    /// The sessions whose waiting ids this transaction owes the index ([`Tables::flush_owed`]).
    owed: Vec<SessionId>,
    /// Whether small batches are staged ([`staging`]): only when each commit is durable.
    stage_small: bool,
}

impl<'txn> Tables<'txn> {
    /// Opens the tables in `txn`, once for every append it will hold (opening a table costs
    /// a lookup in redb's table tree). With `stage_small`, batches of fewer than
    /// [`staging::DIRECT_BATCH`] events are staged: for a store whose every commit is durable.
    /// With a journal, commits are not durable (its records are), staging saves no disk write,
    /// and every event goes straight to `events`: inserted once, never moved.
    pub(super) fn open(
        txn: &'txn redb::WriteTransaction,
        stage_small: bool,
    ) -> Result<Self, redb::Error> {
        let recent = txn.open_table(staging::RECENT)?;
        Ok(Self {
            events: txn.open_table(EVENTS)?,
            index: txn.open_table(EVENT_INDEX)?,
            next_order: staging::next_order(&recent)?,
            recent,
            owed: Vec::new(),
            stage_small,
        })
    }

    /// Writes the ids the appends of this transaction moved the watermark over to the index.
    /// An append only notes the flush it owes: writing 64 index entries is the dearest part of
    /// an append (about 400,000 instructions, every 16 appends of four events), and a group
    /// whose journal record is durable can answer its callers before paying it. Call before
    /// the commit; the ids stay in their tails until then, so a later append of the group
    /// still finds them.
    pub(super) fn flush_owed(&mut self, tails: &mut Locked<'_>) -> Result<(), redb::Error> {
        for session in self.owed.drain(..) {
            if let Some(tail) = tails.get_mut(&session) {
                tail.flush(&mut self.index, session.as_str())?;
            }
        }
        Ok(())
    }
}

/// One append inside the group's transaction: the new length, and whether it wrote.
///
/// It takes the session's length and finds the batch's ids in the session's tail (read back
/// from the file when not in memory) or in `event_index`. Small batches are staged when the
/// tables say so (see [`staging`]), the others written to `events`. Everything that can refuse
/// the append (the rules, a missing or unencodable session record) is decided before anything
/// is written, so a refused append leaves the transaction as it found it. A write adds the
/// events (and their ids to the tail), and writes the session record only when the session is
/// new, the batch reveals its workflow or parent, or the tail's ids are due for the index
/// (which the group writes after answering its callers, [`Tables::flush_owed`]).
pub(super) fn apply(
    txn: &redb::WriteTransaction,
    tables: &mut Tables<'_>,
    tails: &mut Locked<'_>,
    append: &Append,
) -> Result<(u64, bool), Failure> {
    let Append {
        session,
        events,
        records,
        expected_seq,
    } = append;
    let sid = session.as_str();
    let tail = index::tail_of(tails, txn, &tables.events, &tables.recent, session)?;
    let len = tail.len;
    let plan = plan_append(session, events, *expected_seq, len, |id| {
        tail.stored_seq(&tables.index, sid, id.as_uuid().as_u128())
    })?;
    let first = match (plan, events.first()) {
        (Plan::Done(len), _) => return Ok((len, false)),
        (Plan::Write, Some(first)) => first,
        (Plan::Write, None) => return Ok((len, false)),
    };
    let new_len = len + events.len() as u64;
    let (mut record, mut changed) = match tail.record.clone() {
        Some(mut record) => {
            let changed = record.absorb(session, events);
            (record, changed)
        }
        None if len == 0 => (SessionRecord::start(session, first, events), true),
        None => {
            return Err(StoreError::Corrupt {
                session: session.clone(),
                seq: 0,
                message: "the session's metadata is missing".to_owned(),
            }
            .into());
        }
    };
    let flush = index::flush_due(&record, new_len);
    if flush {
        record.indexed = new_len;
        changed = true;
    }
    let encoded = if changed {
        Some(record.encode(session)?)
    } else {
        None
    };

    // Only redb can fail from here on, and that fails the whole group.
    let direct = !tables.stage_small || records.len() >= staging::DIRECT_BATCH;
    for ((id, bytes), seq) in records.iter().zip(len..) {
        if direct {
            tables.events.insert((sid, seq), bytes.as_slice())?;
        } else {
            tables
                .recent
                .insert(tables.next_order, (sid, seq, bytes.as_slice()))?;
            tables.next_order += 1;
        }
        tail.add(*id, seq);
    }
    tail.len = new_len;
    if flush && !tables.owed.contains(session) {
        tables.owed.push(session.clone());
    }
    if let Some(encoded) = encoded {
        let mut sessions = txn.open_table(SESSIONS)?;
        sessions.insert(sid, encoded.as_slice())?;
        tail.record = Some(record);
    }
    Ok((new_len, true))
}
