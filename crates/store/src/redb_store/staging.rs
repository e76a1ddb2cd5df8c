//! Staging of a [`RedbStore`](super::RedbStore)'s small appends, so that a group commit of many
//! sessions writes few pages.
//!
//! A durable commit costs about one disk write per separate run of pages it dirties, and in
//! `events`, keyed (session, seq), every session's newest events sit in a leaf of their own: a
//! group commit of eight sessions' single events dirtied eight leaves and cost about twice a
//! single append. So small batches (fewer than [`DIRECT_BATCH`] events) go first to
//! `recent_events`, keyed by the order they were staged in, where the events of every session
//! committed together land in the same leaf; once it holds [`COMPACT_AT`] events, the writer
//! thread moves them all to `events` in a transaction of its own, after answering the appends
//! that filled it, so no caller waits for the move. Large batches (imports) go straight to
//! `events`.
//!
//! Only a store without a journal stages: with one, redb's commits are not durable (the
//! journal's records are), a checkpoint writes the pages of many appends at once, and staging
//! would only insert each event twice. Events staged by a store opened earlier without a
//! journal are read, compacted and cleared as before.
//!
//! A session's events are therefore those in `events` plus its staged ones, merged by seq;
//! every read does that inside one read transaction, so it sees a consistent state whether a
//! compaction happened before it or not. Reading the staged events of one session scans the
//! whole staging table, which is small by construction.

use std::collections::HashMap;
use std::ops::Range;

use redb::{ReadableTable, ReadableTableMetadata, Table, TableDefinition};

/// Staged events by staging order: (session id, seq, the event as JSON).
pub(super) const RECENT: TableDefinition<'_, u64, (&str, u64, &[u8])> =
    TableDefinition::new("recent_events");

/// How many staged events trigger a compaction.
pub(super) const COMPACT_AT: u64 = 128;

/// Batches at least this long skip staging.
pub(super) const DIRECT_BATCH: usize = 32;

/// The staged events of session `sid` with seqs in `range`, by seq.
pub(super) fn staged<T>(
    recent: &T,
    sid: &str,
    range: Range<u64>,
) -> Result<Vec<(u64, Vec<u8>)>, redb::Error>
where
    T: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let mut found = Vec::new();
    for entry in recent.iter()? {
        let (_, value) = entry?;
        let (session, seq, bytes) = value.value();
        if session == sid && range.contains(&seq) {
            found.push((seq, bytes.to_vec()));
        }
    }
    found.sort_unstable_by_key(|(seq, _)| *seq);
    Ok(found)
}

/// The staged event of session `sid` with the highest seq.
pub(super) fn last_staged<T>(recent: &T, sid: &str) -> Result<Option<(u64, Vec<u8>)>, redb::Error>
where
    T: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    Ok(staged(recent, sid, 0..u64::MAX)?.pop())
}

/// Every session's staged event with the highest seq, by session id.
pub(super) fn last_staged_by_session<T>(
    recent: &T,
) -> Result<HashMap<String, (u64, Vec<u8>)>, redb::Error>
where
    T: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let mut last: HashMap<String, (u64, Vec<u8>)> = HashMap::new();
    for entry in recent.iter()? {
        let (_, value) = entry?;
        let (session, seq, bytes) = value.value();
        match last.get_mut(session) {
            Some((at, _)) if *at >= seq => {}
            Some(slot) => *slot = (seq, bytes.to_vec()),
            None => {
                last.insert(session.to_owned(), (seq, bytes.to_vec()));
            }
        }
    }
    Ok(last)
}

/// The staging order the next staged event gets.
pub(super) fn next_order<T>(recent: &T) -> Result<u64, redb::Error>
where
    T: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    Ok(match recent.last()? {
        Some((order, _)) => order.value() + 1,
        None => 0,
    })
}

/// Whether [`COMPACT_AT`] events are staged.
pub(super) fn due<T>(recent: &T) -> Result<bool, redb::Error>
where
    T: ReadableTableMetadata,
{
    Ok(recent.len()? >= COMPACT_AT)
}

/// Moves every staged event to `events` once there are [`COMPACT_AT`] of them; whether it did.
pub(super) fn compact_if_due(
    recent: &mut Table<'_, u64, (&'static str, u64, &'static [u8])>,
    events: &mut Table<'_, (&'static str, u64), &'static [u8]>,
) -> Result<bool, redb::Error> {
    if !due(recent)? {
        return Ok(false);
    }
    for entry in recent.iter()? {
        let (_, value) = entry?;
        let (session, seq, bytes) = value.value();
        events.insert((session, seq), bytes)?;
    }
    recent.retain(|_, _| false)?;
    Ok(true)
}

/// Removes the staged events of session `sid`, returning them (seq, JSON).
pub(super) fn remove_session(
    recent: &mut Table<'_, u64, (&'static str, u64, &'static [u8])>,
    sid: &str,
) -> Result<Vec<(u64, Vec<u8>)>, redb::Error> {
    let removed = staged(recent, sid, 0..u64::MAX)?;
    if !removed.is_empty() {
        recent.retain(|_, (session, _, _)| session != sid)?;
    }
    Ok(removed)
}
