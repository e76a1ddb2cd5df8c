//! The redb file's layout: its tables, its format version and the migration from older
//! formats, and how a session's metadata is put together from them.
//!
//! | table         | key                           | value                                  |
//! |---------------|-------------------------------|----------------------------------------|
//! | `events`      | (session id, seq)             | the [`Envelope`] as a binary record ([`super::record`]) |
//! | `event_index` | (event id as u128, session id)| seq, for the ids below each watermark  |
//! | `sessions`    | session id                    | a [`SessionRecord`] as JSON            |
//! | `snapshots`   | (session id, position)        | the snapshot's state as JSON           |
//! | `meta`        | `"format"`                    | [`FORMAT`]                             |
//! | `meta`        | `"journal_lsn"`               | the last journal record a durable commit covers ([`super::journal`]) |
//! | `unfinished`  | session id                    | the note of a session marked unfinished (created at the first mark) |
//! | `recent_events` | staging order               | (session id, seq, record): small appends not yet moved to `events` ([`super::staging`]) |
//!
//! An append touches as few pages as it can, because a durable commit costs about one disk
//! write per page it dirties: without a journal, small batches are staged in `recent_events`
//! in commit order, so concurrent sessions' events share a leaf, and moved to `events` in bulk
//! (see [`super::staging`]; with a journal, whose records make the appends durable, they go
//! straight to `events`); a session's length is its highest seq, stored or staged (not a counter
//! to rewrite); `event_index` is written in batches (see [`super::index`]) and keyed by event
//! id first; and the session record is written only when a session starts, an event reveals
//! its workflow or parent, or the index catches up.
//!
//! Format 2 stored each event as its JSON envelope; it reads as it is and is marked format 3
//! when opened for writing (see [`super::record`]). Format 1 (before `meta` existed) kept the
//! index as `event_ids`, keyed (session id, event id), with every event in it, and a full
//! [`SessionInfo`] per session; [`prepare`] rewrites the index and the records once when it
//! opens such a file.
//!
//! Opening a file that is already current only reads it (so a read-only file can be listed
//! and read); a redb file that is not a store (tables of its own, no format marker) is refused
//! rather than given our tables.

use std::path::Path;

use chrono::{DateTime, Utc};
use openharness_core::{Envelope, EventId, SessionId, SessionInfo, SessionStatus, StoreError};
use redb::{ReadableTable, TableDefinition, TableHandle};
use serde::{Deserialize, Serialize};

use super::guard::Db;
use super::{RedbError, staging};

/// Events by (session id, seq), as JSON.
pub(super) const EVENTS: TableDefinition<'_, (&str, u64), &[u8]> = TableDefinition::new("events");
/// Seq by (event id as u128, session id).
pub(super) const EVENT_INDEX: TableDefinition<'_, (u128, &str), u64> =
    TableDefinition::new("event_index");
/// Session records by session id, as JSON.
pub(super) const SESSIONS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("sessions");
/// Snapshot states by (session id, position), as JSON.
pub(super) const SNAPSHOTS: TableDefinition<'_, (&str, u64), &[u8]> =
    TableDefinition::new("snapshots");
/// Notes of the sessions marked unfinished (see `Store::mark_unfinished`), by session id.
/// Created at the first mark: a file without it has none.
pub(super) const UNFINISHED: TableDefinition<'_, &str, &str> = TableDefinition::new("unfinished");
/// The file's format version under the key `"format"`.
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
/// `meta`'s key for the lsn of the last journal record a durable commit covers (see
/// [`super::journal`]).
const JOURNAL_LSN: &str = "journal_lsn";

/// The lsn of the last journal record the file holds durably (0: none).
pub(super) fn journal_lsn<T: ReadableTable<&'static str, u64>>(
    meta: &T,
) -> Result<u64, redb::Error> {
    Ok(meta.get(JOURNAL_LSN)?.map_or(0, |lsn| lsn.value()))
}

/// Opens `meta` for reading in `txn`, when the file has it.
pub(super) fn read_meta(
    txn: &redb::ReadTransaction,
) -> Result<Option<redb::ReadOnlyTable<&'static str, u64>>, redb::Error> {
    match txn.open_table(META) {
        Ok(table) => Ok(Some(table)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Records in `txn` that the file holds every journal record up to `lsn`: made durable, the
/// commit is a checkpoint.
pub(super) fn set_journal_lsn(txn: &redb::WriteTransaction, lsn: u64) -> Result<(), redb::Error> {
    txn.open_table(META)?.insert(JOURNAL_LSN, lsn)?;
    Ok(())
}

/// Format 1's index: seq by (session id, event id as u128).
const FORMAT_1_EVENT_IDS: TableDefinition<'_, (&str, u128), u64> =
    TableDefinition::new("event_ids");

/// The format this version writes: 3 stores each event as a binary record (see
/// [`super::record`]).
pub(super) const FORMAT: u64 = 3;

/// The last format whose events are all JSON envelopes. Its files read as they are (the
/// decoder reads both kinds); opening one for writing marks it [`FORMAT`] first, so an older
/// version refuses it once it may hold binary records.
const FORMAT_JSON_EVENTS: u64 = 2;

/// The names of format 1's tables: a file without `meta` holding only these is format 1.
const FORMAT_1_TABLES: [&str; 4] = ["events", "event_ids", "sessions", "snapshots"];

/// [`prepare`], with its failure named after the file at `path`.
/// Refuses a file that is not a store's (or is a newer store's) without writing to it: for
/// a file read before it is opened for writing. Other failures are left to that opening.
pub(super) fn refuse_foreign(db: &Db, path: &Path) -> Result<(), RedbError> {
    match inspect(db) {
        Err(PrepareError::Foreign(reason)) => Err(RedbError::Foreign {
            path: path.to_owned(),
            reason,
        }),
        Err(PrepareError::Newer(format)) => Err(RedbError::NewerFormat {
            path: path.to_owned(),
            format,
        }),
        _ => Ok(()),
    }
}

pub(super) fn prepare_file(db: &Db, path: &Path) -> Result<(), RedbError> {
    prepare(db).map_err(|err| match err {
        PrepareError::Newer(format) => RedbError::NewerFormat {
            path: path.to_owned(),
            format,
        },
        PrepareError::Foreign(reason) => RedbError::Foreign {
            path: path.to_owned(),
            reason,
        },
        PrepareError::ReadOnly => RedbError::ReadOnly {
            path: path.to_owned(),
            operation: format!("bringing the file to format {FORMAT}"),
        },
        PrepareError::Redb(source) => RedbError::Open {
            path: path.to_owned(),
            source: Box::new(source),
        },
    })
}

/// Why a file could not be prepared for use.
#[derive(Debug)]
enum PrepareError {
    /// redb failed.
    Redb(redb::Error),
    /// The file was written by a newer version of Open Harness.
    Newer(u64),
    /// The file is another application's redb database.
    Foreign(String),
    /// The file must be written to be used (created or migrated) and is open read-only.
    ReadOnly,
}

impl<E: Into<redb::Error>> From<E> for PrepareError {
    fn from(err: E) -> Self {
        Self::Redb(err.into())
    }
}

/// What a file holds, as far as [`prepare`] cares.
#[derive(Debug, PartialEq)]
enum Found {
    /// Format [`FORMAT`] with every table: nothing to do.
    Current,
    /// Format [`FORMAT_JSON_EVENTS`] with every table: readable as it is, marked current
    /// when opened for writing.
    Readable,
    /// A new (empty) file, an older format, or a current one missing a table created since.
    NeedsWrite,
}

/// Creates the tables of a new file, or brings an older file to [`FORMAT`], in one
/// transaction (a crash part way leaves the file as it was). A file already current is only
/// read, so a read-only file can be opened. A redb file holding tables that are not ours (and
/// not format 1's) is refused rather than given our tables; an empty one is taken as a new
/// store (it may be a store whose creation an older version did not finish).
fn prepare(db: &Db) -> Result<(), PrepareError> {
    let found = inspect(db)?;
    if found == Found::Current {
        return Ok(());
    }
    let Some(db) = db.database() else {
        return match found {
            Found::Readable => Ok(()),
            _ => Err(PrepareError::ReadOnly),
        };
    };
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        let format = meta.get("format")?.map(|value| value.value());
        if format != Some(FORMAT) {
            let has_format_1_index = txn
                .list_tables()?
                .any(|table| table.name() == FORMAT_1_EVENT_IDS.name());
            if has_format_1_index {
                migrate_index(&txn)?;
            }
            meta.insert("format", FORMAT)?;
        }
        txn.open_table(EVENTS)?;
        txn.open_table(EVENT_INDEX)?;
        txn.open_table(SESSIONS)?;
        txn.open_table(SNAPSHOTS)?;
        txn.open_table(staging::RECENT)?;
    }
    txn.commit()?;
    Ok(())
}

/// Reads what the file holds, refusing a newer or foreign one.
fn inspect(db: &Db) -> Result<Found, PrepareError> {
    let txn = db.begin_read()?;
    let tables: Vec<String> = txn
        .list_tables()?
        .map(|table| table.name().to_owned())
        .collect();
    if txn.list_multimap_tables()?.next().is_some() {
        return Err(PrepareError::Foreign(
            "it holds multimap tables, which a store never has".to_owned(),
        ));
    }
    let has = |name: &str| tables.iter().any(|table| table == name);
    let mismatch = |name: &str| {
        PrepareError::Foreign(format!(
            "its table `{name}` does not have the types of a store's"
        ))
    };
    // Each of our tables present must have our types (redb checks them when opening).
    macro_rules! check_types {
        ($($table:expr),*) => {$(
            if has($table.name()) {
                match txn.open_table($table) {
                    Ok(_) => {}
                    Err(redb::TableError::TableTypeMismatch { .. }) => {
                        return Err(mismatch($table.name()));
                    }
                    Err(err) => return Err(err.into()),
                }
            }
        )*};
    }
    check_types!(
        META,
        EVENTS,
        EVENT_INDEX,
        SESSIONS,
        SNAPSHOTS,
        staging::RECENT,
        UNFINISHED
    );
    let format = if has(META.name()) {
        txn.open_table(META)?
            .get("format")?
            .map(|value| value.value())
    } else {
        None
    };
    let complete = || {
        [
            EVENTS.name(),
            EVENT_INDEX.name(),
            SESSIONS.name(),
            SNAPSHOTS.name(),
            staging::RECENT.name(),
        ]
        .iter()
        .all(|name| has(name))
    };
    match format {
        Some(FORMAT) if complete() => Ok(Found::Current),
        Some(FORMAT_JSON_EVENTS) if complete() => Ok(Found::Readable),
        Some(newer) if newer > FORMAT => Err(PrepareError::Newer(newer)),
        Some(_) => Ok(Found::NeedsWrite),
        None if tables.is_empty() => Ok(Found::NeedsWrite),
        None => {
            if let Some(other) = tables
                .iter()
                .find(|table| !FORMAT_1_TABLES.contains(&table.as_str()))
            {
                return Err(PrepareError::Foreign(format!(
                    "it has no format marker and holds the table `{other}`, which is not a \
                     store's"
                )));
            }
            if has(EVENTS.name()) && has(SESSIONS.name()) {
                Ok(Found::NeedsWrite)
            } else {
                Err(PrepareError::Foreign(format!(
                    "it has no format marker and only the tables {tables:?}"
                )))
            }
        }
    }
}

/// Rewrites format 1's `event_ids` as `event_index` and drops it; every event was indexed, so
/// each session record's watermark becomes the session's length. A record that does not decode
/// is left as it is (reading it reports the damage).
fn migrate_index(txn: &redb::WriteTransaction) -> Result<(), redb::Error> {
    {
        let old = txn.open_table(FORMAT_1_EVENT_IDS)?;
        let mut index = txn.open_table(EVENT_INDEX)?;
        for entry in old.iter()? {
            let (key, seq) = entry?;
            let (session, id) = key.value();
            index.insert((id, session), seq.value())?;
        }
        let events = txn.open_table(EVENTS)?;
        let mut sessions = txn.open_table(SESSIONS)?;
        let mut rewritten = Vec::new();
        for entry in sessions.iter()? {
            let (key, bytes) = entry?;
            let Ok(session) = key.value().parse::<SessionId>() else {
                continue;
            };
            if let Ok(mut record) = SessionRecord::decode(&session, bytes.value()) {
                record.indexed = events_len(&events, session.as_str())?;
                if let Ok(bytes) = record.encode(&session) {
                    rewritten.push((session, bytes));
                }
            }
        }
        for (session, bytes) in rewritten {
            sessions.insert(session.as_str(), bytes.as_slice())?;
        }
    }
    txn.delete_table(FORMAT_1_EVENT_IDS)?;
    Ok(())
}

/// What the `sessions` table keeps of a session: what its events do not give cheaply. The
/// length and the last event's time come from the `events` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct SessionRecord {
    /// Timestamp of the first event.
    pub(super) created: DateTime<Utc>,
    /// From the first `workflow:started`, once seen.
    #[serde(default)]
    pub(super) workflow: Option<String>,
    /// From the first `session:forked`, once seen.
    #[serde(default)]
    pub(super) parent: Option<SessionId>,
    /// The watermark of `event_index`: the ids of the first `indexed` events are in it.
    #[serde(default)]
    pub(super) indexed: u64,
}

impl SessionRecord {
    /// The record a session starts with, from its first appended events (not empty).
    pub(super) fn start(session: &SessionId, first: &Envelope, events: &[Envelope]) -> Self {
        let mut record = Self {
            created: first.timestamp,
            workflow: None,
            parent: None,
            indexed: 0,
        };
        record.absorb(session, events);
        record
    }

    /// What the record reads of an appended event, for the writer thread: the whole event
    /// when it can reveal the session's workflow or parent (`workflow:started`,
    /// `session:forked`), else the envelope without its payload (the event's encoded record
    /// carries that). So an append does not deep-copy every payload on its way to the writer.
    pub(super) fn what_it_reads(event: &Envelope) -> Envelope {
        if Self::may_reveal(event) {
            return event.clone();
        }
        Envelope {
            id: event.id,
            name: event.name.clone(),
            payload: serde_json::Value::Null,
            timestamp: event.timestamp,
            caused_by: event.caused_by,
            state_hash: event.state_hash.clone(),
            version: event.version,
        }
    }

    /// Whether `event` can tell a session's workflow or parent ([`Self::absorb`] reads it).
    fn may_reveal(event: &Envelope) -> bool {
        use openharness_core::Event;
        use openharness_core::builtin::{SessionForked, WorkflowStarted};
        event.name == WorkflowStarted::NAME || event.name == SessionForked::NAME
    }

    /// Takes the workflow and parent from `events` if not known yet (by the rules of
    /// [`SessionInfo::absorb`]); whether that changed the record.
    pub(super) fn absorb(&mut self, session: &SessionId, events: &[Envelope]) -> bool {
        let known = self.workflow.is_some() && self.parent.is_some();
        if known || !events.iter().any(Self::may_reveal) {
            return false;
        }
        let mut info = SessionInfo {
            id: session.clone(),
            created: self.created,
            last_event: self.created,
            count: 0,
            workflow: self.workflow.take(),
            parent: self.parent.take(),
            status: SessionStatus::Running,
        };
        let before = (info.workflow.is_some(), info.parent.is_some());
        info.absorb(events);
        let changed = before != (info.workflow.is_some(), info.parent.is_some());
        self.workflow = info.workflow;
        self.parent = info.parent;
        changed
    }

    /// Decodes a stored record; a damaged one is [`StoreError::Corrupt`] at seq 0 whose message
    /// names the metadata.
    pub(super) fn decode(session: &SessionId, bytes: &[u8]) -> Result<Self, StoreError> {
        serde_json::from_slice(bytes).map_err(|err| StoreError::Corrupt {
            session: session.clone(),
            seq: 0,
            message: format!("stored session metadata is not valid: {err}"),
        })
    }

    /// Encodes the record for storage.
    pub(super) fn encode(&self, session: &SessionId) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(self).map_err(|err| {
            StoreError::Invalid(format!(
                "metadata of session {session} cannot be encoded as JSON: {err}"
            ))
        })
    }
}

/// A session's last event in the `events` table (seq and JSON); its staged events may be later.
pub(super) fn events_tail<T>(events: &T, sid: &str) -> Result<Option<(u64, Vec<u8>)>, redb::Error>
where
    T: ReadableTable<(&'static str, u64), &'static [u8]>,
{
    match events.range((sid, 0)..=(sid, u64::MAX))?.next_back() {
        Some(entry) => {
            let (key, bytes) = entry?;
            Ok(Some((key.value().1, bytes.value().to_vec())))
        }
        None => Ok(None),
    }
}

/// One past the seq of a session's last event in the `events` table alone.
pub(super) fn events_len<T>(events: &T, sid: &str) -> Result<u64, redb::Error>
where
    T: ReadableTable<(&'static str, u64), &'static [u8]>,
{
    match events.range((sid, 0)..=(sid, u64::MAX))?.next_back() {
        Some(entry) => Ok(entry?.0.value().1 + 1),
        None => Ok(0),
    }
}

/// A session's last event, stored or staged: the one of `a` and `b` with the higher seq.
pub(super) fn later(
    a: Option<(u64, Vec<u8>)>,
    b: Option<(u64, Vec<u8>)>,
) -> Option<(u64, Vec<u8>)> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// A session's last event (seq and JSON), stored or staged.
pub(super) fn last_event<E, R>(
    events: &E,
    recent: &R,
    sid: &str,
) -> Result<Option<(u64, Vec<u8>)>, redb::Error>
where
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    Ok(later(
        events_tail(events, sid)?,
        staging::last_staged(recent, sid)?,
    ))
}

/// A session's length: one past the seq of its last event, stored or staged.
pub(super) fn len_of<E, R>(events: &E, recent: &R, sid: &str) -> Result<u64, redb::Error>
where
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let stored = events_len(events, sid)?;
    let staged = staging::last_staged(recent, sid)?.map_or(0, |(seq, _)| seq + 1);
    Ok(stored.max(staged))
}

/// Whether a snapshot of session `sid` at `position` falls short of it: the session's length
/// when the snapshot does not fit (0 for a session with no record), `None` when it does.
/// Snapshots are saved at positions 0 to the length of a session that exists.
pub(super) fn snapshot_short_of<S, E, R>(
    sessions: &S,
    events: &E,
    recent: &R,
    sid: &str,
    position: u64,
) -> Result<Option<u64>, redb::Error>
where
    S: ReadableTable<&'static str, &'static [u8]>,
    E: ReadableTable<(&'static str, u64), &'static [u8]>,
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    if sessions.get(sid)?.is_none() {
        return Ok(Some(0));
    }
    let len = len_of(events, recent, sid)?;
    Ok((position > len).then_some(len))
}

/// The [`SessionInfo`] of a session from its record and its last event (stored or staged).
pub(super) fn session_info(
    session: &SessionId,
    record: SessionRecord,
    last: Option<(u64, Vec<u8>)>,
) -> Result<SessionInfo, StoreError> {
    let (count, (last_event, status)) = match last {
        Some((seq, bytes)) => (seq + 1, summary_of(session, seq, &bytes)?),
        None => (0, (record.created, SessionStatus::Running)),
    };
    Ok(SessionInfo {
        id: session.clone(),
        created: record.created,
        last_event,
        count,
        workflow: record.workflow,
        parent: record.parent,
        status,
    })
}

/// The timestamp of a stored event and the status it leaves its session in.
fn summary_of(
    session: &SessionId,
    seq: u64,
    bytes: &[u8],
) -> Result<(DateTime<Utc>, SessionStatus), StoreError> {
    super::record::summary(bytes).map_err(|message| corrupt_event(session, seq, message))
}

/// The id of a stored event, decoding nothing else.
pub(super) fn id_of(session: &SessionId, seq: u64, bytes: &[u8]) -> Result<EventId, StoreError> {
    super::record::id(bytes).map_err(|message| corrupt_event(session, seq, message))
}

fn corrupt_event(session: &SessionId, seq: u64, message: String) -> StoreError {
    StoreError::Corrupt {
        session: session.clone(),
        seq,
        message,
    }
}
