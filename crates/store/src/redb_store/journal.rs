//! The journal in front of a [`RedbStore`](super::RedbStore)'s file: what makes an append
//! durable at the cost of one sequential write and one `fdatasync`, instead of a durable redb
//! commit (about eight scattered page writes and an fsync).
//!
//! A group commit writes its appends to redb without making them durable (redb's
//! `Durability::None`: readers in the process see them at once), and one journal record
//! holding the same appends, which it makes durable before any caller is answered. redb is
//! made durable off the callers' path by a **checkpoint** (a durable commit that records the
//! last journal record it covers, under `meta`'s `journal_lsn`), after which the journal is
//! written again from its start. Opening the store re-applies the records after the
//! checkpoint ([`super::replay`]); a clean close checkpoints and removes the journal.
//!
//! The journal is the file `<store>-journal` beside the store. Records follow one another from
//! offset 0:
//!
//! | bytes | what |
//! |---|---|
//! | 4 | payload length `n` (little-endian `u32`; 0 marks the end) |
//! | 4 | CRC-32 of the length, the lsn and the payload |
//! | 8 | lsn: the record's number, one more than the previous record's |
//! | n | payload: the group's appends and snapshots ([`Group`]) |
//!
//! The file is filled with zeros when created or grown, so records overwrite blocks the file
//! system has already allocated and `fdatasync` has no metadata to write. Reading stops at the
//! first record that is cut short, fails its checksum or does not follow the previous one's
//! lsn: a record torn by a crash (never acknowledged) and the older records a restart from
//! offset 0 left behind it are never applied.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use openharness_core::SessionId;

/// A new journal's size, zero-filled.
const INITIAL_SIZE: u64 = 1 << 20;

/// Growth is rounded up to this.
const GROW_STEP: u64 = 1 << 20;

/// Once this many bytes of records are written since the last checkpoint, the writer makes
/// the next one (unless the store's options say otherwise).
pub(super) const DEFAULT_CHECKPOINT_BYTES: u64 = 4 << 20;

/// A record's header: length, checksum, lsn.
const HEADER: usize = 16;

/// The journal of the store at `store`: `<store>-journal`.
pub(super) fn path_of(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push("-journal");
    PathBuf::from(name)
}

/// The journal, for writing records. The file is created with the first record, so a store
/// opened without appending never makes one (nor pays for its creation).
pub(super) struct Journal {
    /// The open file, once the first record was written.
    file: Option<File>,
    path: PathBuf,
    /// Where the next record goes.
    pos: u64,
    /// The file's length (zeros after `pos`, or records from before the last restart).
    size: u64,
    /// The next record's lsn.
    next_lsn: u64,
    /// Where the last record written starts.
    last_start: u64,
    /// The record being built: header room, then the payload.
    record: Vec<u8>,
}

impl Journal {
    /// The journal at `path`, to write records from its start, the first numbered `next_lsn`.
    /// Every record already in the file must be covered by a durable checkpoint: they are
    /// overwritten. Nothing is done to the file before the first record.
    pub(super) fn new(path: &Path, next_lsn: u64) -> Self {
        Self {
            file: None,
            path: path.to_owned(),
            pos: 0,
            size: 0,
            next_lsn,
            last_start: 0,
            record: Vec::new(),
        }
    }

    /// The file, opened (created and zero-filled, its name made durable) the first time.
    fn file(&mut self) -> std::io::Result<&mut File> {
        if self.file.is_none() {
            let existed = self.path.exists();
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?;
            let size = file.metadata()?.len();
            if size < INITIAL_SIZE {
                zero_fill(&mut file, size, INITIAL_SIZE)?;
                file.sync_all()?;
            }
            if !existed {
                sync_parent(&self.path)?;
            }
            self.size = size.max(INITIAL_SIZE);
            self.file = Some(file);
        }
        match &mut self.file {
            Some(file) => Ok(file),
            None => Err(std::io::Error::other("the journal is not open")),
        }
    }

    /// Whether the file was created (a record was written).
    pub(super) fn created(&self) -> bool {
        self.file.is_some()
    }

    /// The journal's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of records written since the journal (re)started.
    pub(super) fn written(&self) -> u64 {
        self.pos
    }

    /// The lsn of the last record written (the one before the next).
    pub(super) fn last_lsn(&self) -> u64 {
        self.next_lsn.saturating_sub(1)
    }

    /// Starts a record for a group of appends.
    pub(super) fn group(&mut self) -> Group<'_> {
        self.record.clear();
        self.record.resize(HEADER, 0);
        self.record.extend_from_slice(&0u32.to_le_bytes());
        Group {
            record: &mut self.record,
            appends: 0,
            snapshots: None,
        }
    }

    /// Takes back the last record written (its group's redb commit failed after it was made
    /// durable): the next record gets its lsn and overwrites it, so the journal never holds
    /// a record redb was refused, followed by others that would not fit after it.
    pub(super) fn take_back(&mut self, lsn: u64) {
        if lsn + 1 == self.next_lsn && self.last_start <= self.pos {
            self.pos = self.last_start;
            self.next_lsn = lsn;
        }
    }

    /// Writes the record built by the last [`group`](Self::group) after the previous one and
    /// makes it durable: its lsn. A record that fails leaves the position as it was: the next
    /// one overwrites what it wrote.
    pub(super) fn commit(&mut self) -> std::io::Result<u64> {
        let len = u32::try_from(self.record.len() - HEADER).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a group of appends over 4 GiB cannot be journaled",
            )
        })?;
        let lsn = self.next_lsn;
        self.record[0..4].copy_from_slice(&len.to_le_bytes());
        self.record[8..16].copy_from_slice(&lsn.to_le_bytes());
        let crc = checksum(&self.record);
        self.record[4..8].copy_from_slice(&crc.to_le_bytes());
        let end = self.pos + self.record.len() as u64;
        let (pos, size) = (self.pos, self.size.max(INITIAL_SIZE));
        let record = std::mem::take(&mut self.record);
        let written = (|| {
            let file = self.file()?;
            // Always at `pos`, wherever a failed write left the file's cursor.
            write_all_at(file, &record, pos)?;
            let mut size = size;
            if end > size {
                // The record ran past the zeros: grow the file, so the next records
                // overwrite allocated blocks again.
                size = (end.max(size * 2)).div_ceil(GROW_STEP) * GROW_STEP;
                zero_fill(file, end, size)?;
            }
            file.sync_data()?;
            Ok::<_, std::io::Error>(size)
        })();
        self.record = record;
        self.size = written?;
        self.last_start = self.pos;
        self.pos = end;
        self.next_lsn += 1;
        Ok(lsn)
    }

    /// Writes the next records from the journal's start again (call once a durable checkpoint
    /// covers every record written).
    pub(super) fn restart(&mut self) {
        self.pos = 0;
        self.last_start = 0;
    }
}

/// Writes `bytes` at `offset` of `file`: one `pwrite` on Unix (no seek first).
fn write_all_at(file: &mut File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
    }
    #[cfg(not(unix))]
    {
        file.seek(SeekFrom::Start(offset))?;
        file.write_all(bytes)
    }
}

/// Writes zeros over `from..to` of `file` (growing it to `to`).
fn zero_fill(file: &mut File, from: u64, to: u64) -> std::io::Result<()> {
    static ZEROS: [u8; 64 * 1024] = [0; 64 * 1024];
    file.seek(SeekFrom::Start(from))?;
    let mut left = to.saturating_sub(from);
    while left > 0 {
        let chunk = left.min(ZEROS.len() as u64) as usize;
        file.write_all(&ZEROS[..chunk])?;
        left -= chunk as u64;
    }
    Ok(())
}

/// The CRC-32 of a record: its length, lsn and payload (everything but the checksum).
fn checksum(record: &[u8]) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&record[0..4]);
    hasher.update(&record[8..]);
    hasher.finalize()
}

/// Makes a new file's name in its directory durable.
fn sync_parent(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// A journal record being built: the appends and the snapshots of one group commit.
///
/// Payload: the number of appends (`u32`), then for each: the session id's length (`u32`) and
/// bytes, the seq of its first event (`u64`), the number of events (`u32`), and for each event
/// its id (`u128`) and its JSON's length (`u32`) and bytes. Then, only when the group saved
/// snapshots: their number (`u32`), and for each the session id's length (`u32`) and bytes,
/// its position (`u64`) and the state's JSON length (`u32`) and bytes. All little-endian. A
/// record without snapshots is the format journals had before snapshots were journaled.
pub(super) struct Group<'a> {
    record: &'a mut Vec<u8>,
    appends: u32,
    /// Where the snapshot count is, and the count, once one was added.
    snapshots: Option<(usize, u32)>,
}

impl Group<'_> {
    /// Adds an append: `records` (each event's id and JSON) stored in `session` from `first_seq`.
    /// Every append comes before the first snapshot.
    pub(super) fn add(&mut self, session: &SessionId, first_seq: u64, records: &[(u128, Vec<u8>)]) {
        debug_assert!(self.snapshots.is_none(), "an append after a snapshot");
        let record = &mut *self.record;
        let sid = session.as_str().as_bytes();
        record.extend_from_slice(&(sid.len() as u32).to_le_bytes());
        record.extend_from_slice(sid);
        record.extend_from_slice(&first_seq.to_le_bytes());
        record.extend_from_slice(&(records.len() as u32).to_le_bytes());
        for (id, json) in records {
            record.extend_from_slice(&id.to_le_bytes());
            record.extend_from_slice(&(json.len() as u32).to_le_bytes());
            record.extend_from_slice(json);
        }
        self.appends += 1;
        record[HEADER..HEADER + 4].copy_from_slice(&self.appends.to_le_bytes());
    }

    /// Adds a snapshot of `session` at `position`: its state's JSON. After the appends, which
    /// replay applies first, so the events a snapshot covers are there when it is.
    pub(super) fn add_snapshot(&mut self, session: &SessionId, position: u64, state: &[u8]) {
        let record = &mut *self.record;
        let (at, count) = self.snapshots.get_or_insert_with(|| {
            let at = record.len();
            record.extend_from_slice(&0u32.to_le_bytes());
            (at, 0)
        });
        let sid = session.as_str().as_bytes();
        record.extend_from_slice(&(sid.len() as u32).to_le_bytes());
        record.extend_from_slice(sid);
        record.extend_from_slice(&position.to_le_bytes());
        record.extend_from_slice(&(state.len() as u32).to_le_bytes());
        record.extend_from_slice(state);
        *count += 1;
        record[*at..*at + 4].copy_from_slice(&count.to_le_bytes());
    }
}

/// One record read back.
#[derive(Debug)]
pub(super) struct Record {
    /// Its lsn.
    pub(super) lsn: u64,
    /// Its appends.
    pub(super) appends: Vec<Appended>,
    /// Its snapshots, saved after its appends.
    pub(super) snapshots: Vec<Snapshotted>,
}

/// One snapshot of a record read back.
#[derive(Debug, PartialEq)]
pub(super) struct Snapshotted {
    /// The session.
    pub(super) session: String,
    /// The number of events the state folds.
    pub(super) position: u64,
    /// The state's JSON.
    pub(super) state: Vec<u8>,
}

/// One append of a record read back.
#[derive(Debug, PartialEq)]
pub(super) struct Appended {
    /// The session.
    pub(super) session: String,
    /// The seq of the first event.
    pub(super) first_seq: u64,
    /// Each event's id and JSON.
    pub(super) records: Vec<(u128, Vec<u8>)>,
}

/// Why a journal could not be read.
#[derive(Debug, thiserror::Error)]
pub(super) enum ReadError {
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// A record passed its checksum but its payload does not decode.
    #[error("record {lsn} is malformed: {message}")]
    Malformed {
        /// The record's lsn.
        lsn: u64,
        /// What is wrong.
        message: String,
    },
}

/// The records of the journal at `path`, in order, up to the first one cut short, failing its
/// checksum or out of sequence; none when there is no journal.
pub(super) fn read(path: &Path) -> Result<Vec<Record>, ReadError> {
    let mut bytes = Vec::new();
    match File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)?;
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(err.into()),
    }
    let mut records = Vec::new();
    let mut pos = 0usize;
    let mut expected: Option<u64> = None;
    while let Some(header) = bytes.get(pos..pos + HEADER) {
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let mut lsn_bytes = [0u8; 8];
        lsn_bytes.copy_from_slice(&header[8..16]);
        let lsn = u64::from_le_bytes(lsn_bytes);
        if len == 0 || expected.is_some_and(|next| next != lsn) {
            break;
        }
        let Some(record) = bytes.get(pos..pos + HEADER + len) else {
            break;
        };
        if checksum(record) != crc {
            break;
        }
        let (appends, snapshots) =
            decode(&record[HEADER..]).map_err(|message| ReadError::Malformed { lsn, message })?;
        records.push(Record {
            lsn,
            appends,
            snapshots,
        });
        expected = Some(lsn + 1);
        pos += HEADER + len;
    }
    Ok(records)
}

/// A group's payload, decoded: its appends and its snapshots.
fn decode(payload: &[u8]) -> Result<(Vec<Appended>, Vec<Snapshotted>), String> {
    let mut cursor = Cursor(payload);
    let count = cursor.u32()?;
    let mut appends = Vec::with_capacity(count.min(1024) as usize);
    for _ in 0..count {
        let session = cursor.session()?;
        let first_seq = cursor.u64()?;
        let events = cursor.u32()?;
        let mut records = Vec::with_capacity(events.min(1024) as usize);
        for _ in 0..events {
            let id = cursor.u128()?;
            let len = cursor.u32()? as usize;
            records.push((id, cursor.take(len)?.to_vec()));
        }
        appends.push(Appended {
            session,
            first_seq,
            records,
        });
    }
    let mut snapshots = Vec::new();
    if !cursor.0.is_empty() {
        let count = cursor.u32()?;
        snapshots.reserve(count.min(1024) as usize);
        for _ in 0..count {
            let session = cursor.session()?;
            let position = cursor.u64()?;
            let len = cursor.u32()? as usize;
            snapshots.push(Snapshotted {
                session,
                position,
                state: cursor.take(len)?.to_vec(),
            });
        }
    }
    if !cursor.0.is_empty() {
        return Err(format!("{} bytes after its last snapshot", cursor.0.len()));
    }
    Ok((appends, snapshots))
}

/// Reads little-endian numbers and byte runs off a payload.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    /// A session id: its length (`u32`) and UTF-8.
    fn session(&mut self) -> Result<String, String> {
        let len = self.u32()? as usize;
        String::from_utf8(self.take(len)?.to_vec())
            .map_err(|_| "a session id is not UTF-8".to_owned())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.0.len() < n {
            return Err(format!("it ends {} bytes early", n - self.0.len()));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, String> {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(bytes))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(bytes))
    }

    fn u128(&mut self) -> Result<u128, String> {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(self.take(16)?);
        Ok(u128::from_le_bytes(bytes))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn write_group(journal: &mut Journal, session: &SessionId, first: u64, n: u64) -> u64 {
        let records: Vec<(u128, Vec<u8>)> = (0..n)
            .map(|i| {
                (
                    u128::from(first + i),
                    format!("{{\"seq\":{}}}", first + i).into_bytes(),
                )
            })
            .collect();
        let mut group = journal.group();
        group.add(session, first, &records);
        journal.commit().unwrap()
    }

    #[test]
    fn records_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let session = SessionId::new();
        let mut journal = Journal::new(&path, 7);
        assert_eq!(write_group(&mut journal, &session, 0, 2), 7);
        assert_eq!(write_group(&mut journal, &session, 2, 1), 8);
        let records = read(&path).unwrap();
        assert_eq!(records.iter().map(|r| r.lsn).collect::<Vec<_>>(), [7, 8]);
        assert_eq!(records[1].appends[0].first_seq, 2);
        assert_eq!(records[1].appends[0].records[0].1, b"{\"seq\":2}");
        assert_eq!(records[0].appends[0].session, session.as_str());
    }

    #[test]
    fn a_torn_record_and_everything_after_it_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let session = SessionId::new();
        let mut journal = Journal::new(&path, 1);
        for k in 0..3 {
            write_group(&mut journal, &session, k, 1);
        }
        let mut bytes = std::fs::read(&path).unwrap();
        // Flip a byte inside the second record's payload.
        let first_len = HEADER + u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize;
        bytes[first_len + HEADER + 10] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
        // Cut short in its header.
        std::fs::write(&path, &bytes[..first_len + 5]).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
    }

    #[test]
    fn records_left_from_before_a_restart_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let session = SessionId::new();
        let mut journal = Journal::new(&path, 1);
        for k in 0..5 {
            write_group(&mut journal, &session, k * 3, 3);
        }
        journal.restart();
        write_group(&mut journal, &session, 15, 3);
        let records = read(&path).unwrap();
        assert_eq!(records.iter().map(|r| r.lsn).collect::<Vec<_>>(), [6]);
    }

    #[test]
    fn a_record_taken_back_is_overwritten_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let session = SessionId::new();
        let mut journal = Journal::new(&path, 1);
        write_group(&mut journal, &session, 0, 1);
        let refused = write_group(&mut journal, &session, 1, 5);
        journal.take_back(refused);
        assert_eq!(write_group(&mut journal, &session, 1, 1), refused);
        let records = read(&path).unwrap();
        assert_eq!(records.iter().map(|r| r.lsn).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(records[1].appends[0].records.len(), 1);
        // Only the last record can be taken back.
        journal.take_back(1);
        assert_eq!(write_group(&mut journal, &session, 2, 1), 3);
    }

    #[test]
    fn a_record_larger_than_the_file_grows_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let session = SessionId::new();
        let mut journal = Journal::new(&path, 1);
        let big = vec![(1u128, vec![b'x'; 3 << 20])];
        let mut group = journal.group();
        group.add(&session, 0, &big);
        journal.commit().unwrap();
        write_group(&mut journal, &session, 1, 1);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size >= 4 << 20, "{size}");
        assert_eq!(read(&path).unwrap().len(), 2);
    }

    #[test]
    fn snapshots_read_back_after_the_appends_of_their_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.redb-journal");
        let (first, second) = (SessionId::new(), SessionId::new());
        let mut journal = Journal::new(&path, 1);
        let mut group = journal.group();
        group.add(&first, 0, &[(1, b"{}".to_vec())]);
        group.add_snapshot(&first, 1, br#"{"n":1}"#);
        group.add_snapshot(&second, 4, br#"[]"#);
        journal.commit().unwrap();
        // A group of snapshots alone, then one of appends alone (the older format).
        let mut group = journal.group();
        group.add_snapshot(&second, 5, b"7");
        journal.commit().unwrap();
        write_group(&mut journal, &first, 1, 1);
        let records = read(&path).unwrap();
        assert_eq!(records.len(), 3);
        assert_eq!(records[0].appends.len(), 1);
        assert_eq!(
            records[0].snapshots,
            [
                Snapshotted {
                    session: first.as_str().to_owned(),
                    position: 1,
                    state: br#"{"n":1}"#.to_vec(),
                },
                Snapshotted {
                    session: second.as_str().to_owned(),
                    position: 4,
                    state: b"[]".to_vec(),
                },
            ]
        );
        assert!(records[1].appends.is_empty());
        assert_eq!(records[1].snapshots[0].position, 5);
        assert!(records[2].snapshots.is_empty());
        // A payload cut inside a snapshot is malformed, not a panic.
        let mut record = Vec::new();
        record.extend_from_slice(&0u32.to_le_bytes());
        record.extend_from_slice(&1u32.to_le_bytes());
        record.extend_from_slice(&3u32.to_le_bytes());
        assert!(decode(&record).unwrap_err().contains("early"));
    }

    #[test]
    fn no_journal_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(&dir.path().join("missing")).unwrap().is_empty());
    }
}
