//! JSONL export and import: sessions as text, one JSON object per line, to move them between
//! stores (a laptop's redb file and a team's PostgreSQL) or keep them in version control.
//!
//! # Format
//!
//! Each session's export is a block of lines: a begin line, one line per event (its envelope
//! with its session and seq, seqs 0, 1, 2, … in order), and an end line with the number of
//! event lines, so that a truncated file cannot import as a shorter session:
//!
//! ```text
//! {"session":"0190…","begin":true}
//! {"session":"0190…","seq":0,"id":"0190…","name":"workflow:started","payload":{…},"timestamp":"…","causedBy":null}
//! {"session":"0190…","seq":1,"id":"0190…","name":"user:input","payload":{…},"timestamp":"…","causedBy":null}
//! {"session":"0190…","end":true,"count":2}
//! ```
//!
//! A file holds any number of blocks (a fork's export holds its ancestors' first, see
//! [`export_with_ancestors`]); blocks of different sessions may interleave line by line.
//! Blank lines are skipped.
//!
//! A block that begins with an event line instead of a begin line comes from an export written
//! before these markers existed: it still imports when the file ends without its end line, with
//! a warning (`tracing::warn!`) and its session listed in [`ImportSummary::unmarked`], since
//! nothing can tell whether it was cut short. A block opened by a begin line must be closed by
//! its end line with the right count, else the import fails ([`TransferError::Truncated`],
//! [`TransferError::Count`]).
//!
//! # Import
//!
//! [`import`] reads each line once. It validates a session's whole block before appending any
//! of it — every line parses, names are non-empty, at most [`MAX_NAME_BYTES`] bytes and free of
//! control characters, seqs run 0, 1, 2, … without a gap, no event id repeats, and the lines at
//! seqs the target already holds carry the ids stored there — so an invalid block stores
//! nothing of its session, and the error names the exact line and what is wrong with it. A
//! block is appended when its end line is read (or at the end of an unmarked file), in batches
//! of [`BATCH`] events however its lines interleave with other sessions'.
//!
//! The target may already hold a prefix of the session (an earlier import of a shorter export of
//! it): the lines at those seqs must match the stored ids, else [`TransferError::Diverged`]
//! names the first seq that differs; only the events beyond are appended. So importing the same
//! file twice stores every event once, and importing a grown export appends only the new tail
//! (incremental sync from one store to another).
//!
//! Memory: while a block is being read, at most [`BATCH`] of its new events stay in memory; the
//! rest go to an anonymous temporary file (deleted when the import ends) and are read back to
//! append. What grows with a session's length is the set of its event ids (kept to refuse a
//! repeated one), about 50 bytes per event: some 50 MB for a session of a million events. A
//! store failure while appending a validated block (the disk fills up, another writer appends
//! to the same session) is [`TransferError::Interrupted`]: a session the import created is
//! removed again, so nothing of it is kept; a session that already held a prefix keeps what
//! was appended, and importing the file again appends the rest.
//!
//! A process killed while a block is appended cannot roll back: a block whose new events
//! take more than one append is [marked unfinished](Store::mark_unfinished) before its first
//! append, and the mark cleared after its last, so a session an import was killed in reads as
//! a prefix marked as one (`openharness sessions` and `check` say so). Importing the same
//! export again appends the rest and clears the mark ([`ImportSummary::finished`]).

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, BufWriter, Seek, Write};

use openharness_core::builtin::Builtin;
use openharness_core::{EVENT_PAGE, Envelope, EventId, SessionId, Store, StoreError};
use serde::{Deserialize, Serialize};

/// Events per append when importing. (Exports read through [`Store::stream_events`], a page
/// at a time.)
pub const BATCH: usize = 1000;

/// The longest event name [`import`] accepts, in bytes.
pub const MAX_NAME_BYTES: usize = 128;

/// Why an export or import failed. Import errors name the 1-based line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransferError {
    /// A line is not a valid event line (or marker), or the event it carries is invalid.
    #[error("line {line}: {message}")]
    Malformed {
        /// The line number, from 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// A line's seq is not the next one for its session.
    #[error(
        "line {line}: session {session} continues at seq {expected}, but the line has seq {found}"
    )]
    OutOfOrder {
        /// The line number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The seq the line should have.
        expected: u64,
        /// The seq it has.
        found: u64,
    },
    /// A session's block began with a begin line and the file ends before its end line.
    #[error(
        "the export of session {session} ends after line {line} without its end marker: truncated?"
    )]
    Truncated {
        /// The session.
        session: SessionId,
        /// The block's last line.
        line: u64,
    },
    /// A session's end line counts a different number of event lines than its block holds.
    #[error(
        "line {line}: the end marker of session {session} counts {count} events, but its export holds {found}: lines lost or added?"
    )]
    Count {
        /// The end line's number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The count the end line carries.
        count: u64,
        /// How many event lines the block holds.
        found: u64,
    },
    /// The target already holds the session, with a different event at a seq the file covers.
    #[error(
        "line {line}: the store's session {session} differs from the file at seq {seq}: the store holds {}, the file event {found}",
        stored.map_or_else(|| "no event".to_owned(), |id| format!("event {id}"))
    )]
    Diverged {
        /// The line number, from 1.
        line: u64,
        /// The session.
        session: SessionId,
        /// The first seq that differs.
        seq: u64,
        /// The event id the store holds there.
        stored: Option<EventId>,
        /// The file's event id at that seq.
        found: EventId,
    },
    /// The input could not be read.
    #[error("line {line}: cannot read the input")]
    Read {
        /// The line number, from 1.
        line: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The output could not be written.
    #[error("cannot write the export")]
    Write(#[source] std::io::Error),
    /// The temporary file that holds a long session's events during an import failed.
    #[error("cannot buffer the import in a temporary file")]
    Buffer(#[source] std::io::Error),
    /// The store failed; for an import, `line` is the line being checked against the store, or
    /// the first line of the batch it refused.
    #[error("{}store {store} failed", line.map(|l| format!("line {l}: ")).unwrap_or_default())]
    Store {
        /// The line being checked, or the first line of the refused batch (imports only).
        line: Option<u64>,
        /// The store, as [`Store::describe`] gives it.
        store: String,
        /// What the store reported.
        source: StoreError,
    },
    /// Appending a validated block failed part way (the disk filled up, another writer
    /// appended to the session). A session the import created is removed again, so nothing of
    /// it is kept (`removed`); a session that already held a prefix keeps what was appended,
    /// and importing the same file again appends the rest. `source` says what failed.
    #[error(
        "the import of session {session} stopped after storing {appended} of its new events{}",
        if *removed {
            "; the session was new, and was removed again: nothing of it is kept"
        } else {
            "; import the file again to append the rest"
        }
    )]
    Interrupted {
        /// The session.
        session: SessionId,
        /// How many of its new events had been appended when it failed.
        appended: u64,
        /// Whether the session, new before the import, was removed again.
        removed: bool,
        /// What failed.
        source: Box<TransferError>,
    },
    /// The session to export has no events.
    #[error("session {session} not found in {store}")]
    NotFound {
        /// The session.
        session: SessionId,
        /// The store, as [`Store::describe`] gives it.
        store: String,
    },
    /// The session to export is a fork whose parent is not in the store.
    #[error(
        "session {session} is forked from {parent}, which is not in {store}: the export would not import on its own"
    )]
    MissingParent {
        /// The fork.
        session: SessionId,
        /// Its missing parent.
        parent: SessionId,
        /// The store, as [`Store::describe`] gives it.
        store: String,
    },
}

/// One event line of the format (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
struct Line<E> {
    session: SessionId,
    seq: u64,
    #[serde(flatten)]
    event: E,
}

/// A begin or end line of the format (see the module docs).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Marker {
    session: SessionId,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    begin: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    end: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    count: Option<u64>,
}

/// How deep a chain of forks [`export_with_ancestors`] follows.
const MAX_ANCESTORS: usize = 64;

/// Writes `session` and, when it is a fork, the sessions it descends from (oldest first, each
/// whole), so the file imports on its own into an empty store; returns how many events. A fork
/// whose parent is not in the store is [`TransferError::MissingParent`], and nothing is
/// written.
///
/// ```
/// use openharness_core::builtin::SessionForked;
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let (parent, child) = (SessionId::new(), SessionId::new());
/// from.append(&parent, &[Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None)], 0).await?;
/// let forked = SessionForked { parent: parent.clone(), position: 1, workflow: None, open_requests: Vec::new(), state_hash: None, state_edit: None };
/// from.append(&child, &[Envelope::typed(&forked, None)?], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export_with_ancestors(&from, &child, &mut file).await?, 2);
/// jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(to.all_events(&parent).await?.len(), 1);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export_with_ancestors<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let failed = |source| TransferError::Store {
        line: None,
        store: store.describe(),
        source,
    };
    let mut chain = vec![session.clone()];
    let mut current = session.clone();
    for _ in 0..MAX_ANCESTORS {
        let first = store.events(&current, 0..1).await.map_err(failed)?;
        let parent = match first.first().map(Builtin::decode) {
            Some(Some(Ok(Builtin::SessionForked(forked)))) => forked.parent,
            _ => break,
        };
        if store
            .events(&parent, 0..1)
            .await
            .map_err(failed)?
            .is_empty()
        {
            return Err(TransferError::MissingParent {
                session: current,
                parent,
                store: store.describe(),
            });
        }
        chain.push(parent.clone());
        current = parent;
    }
    let mut count = 0;
    for session in chain.iter().rev() {
        count += export(store, session, &mut out).await?;
    }
    Ok(count)
}

/// Writes every event of `session` to `out` as JSONL, between its begin and end lines (see the
/// module docs); returns how many events. The session is read
/// with [`Store::stream_events`], so a session of any length needs memory for one page only.
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::{MemoryStore, jsonl};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (from, to) = (MemoryStore::new(), MemoryStore::new());
/// let session = SessionId::new();
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// from.append(&session, &[event.clone()], 0).await?;
///
/// let mut file = Vec::new();
/// assert_eq!(jsonl::export(&from, &session, &mut file).await?, 1);
/// let summary = jsonl::import(&to, file.as_slice()).await?;
/// assert_eq!(summary.events, 1);
/// assert_eq!(to.all_events(&session).await?, vec![event]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub async fn export<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    mut out: impl Write,
) -> Result<u64, TransferError> {
    let mut events = store.stream_events(session, 0..u64::MAX);
    let mut count = 0u64;
    while let Some(recorded) = events.next().await {
        let recorded = recorded.map_err(|source| TransferError::Store {
            line: None,
            store: store.describe(),
            source,
        })?;
        if count == 0 {
            write_marker(&mut out, session, true, None)?;
        }
        let line = Line {
            session: session.clone(),
            seq: recorded.seq,
            event: &recorded.event,
        };
        serde_json::to_writer(&mut out, &line).map_err(|err| TransferError::Write(err.into()))?;
        out.write_all(b"\n").map_err(TransferError::Write)?;
        count += 1;
    }
    if count > 0 {
        write_marker(&mut out, session, false, Some(count))?;
    }
    out.flush().map_err(TransferError::Write)?;
    if count == 0 {
        return Err(TransferError::NotFound {
            session: session.clone(),
            store: store.describe(),
        });
    }
    Ok(count)
}

fn write_marker(
    mut out: impl Write,
    session: &SessionId,
    begin: bool,
    count: Option<u64>,
) -> Result<(), TransferError> {
    let marker = Marker {
        session: session.clone(),
        begin,
        end: !begin,
        count,
    };
    serde_json::to_writer(&mut out, &marker).map_err(|err| TransferError::Write(err.into()))?;
    out.write_all(b"\n").map_err(TransferError::Write)
}

/// What [`import`] stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportSummary {
    /// Each imported session with its length after the import, in the order their blocks
    /// ended.
    pub sessions: Vec<(SessionId, u64)>,
    /// How many event lines were read.
    pub events: u64,
    /// How many events were appended (the rest were stored already).
    pub appended: u64,
    /// Sessions whose block had no begin and end lines (an export from before they existed), so
    /// that a truncated export of them would not have been noticed.
    pub unmarked: Vec<SessionId>,
    /// Sessions an earlier, interrupted import had left [marked
    /// unfinished](openharness_core::Store::mark_unfinished), which this one finished.
    pub finished: Vec<SessionId>,
}

/// A session's block being read: what is checked so far and the new events to append.
struct Block {
    /// The session's length in the store when the block opened.
    stored_len: u64,
    /// The seq the next event line must carry (the block's event lines so far).
    next_seq: u64,
    /// Whether a begin line opened it.
    marked: bool,
    /// The block's last line so far.
    last_line: u64,
    /// Every event id of the block so far.
    ids: HashSet<EventId>,
    /// Stored ids from seq `.0` on, to compare the lines at seqs the store holds.
    stored_page: (u64, Vec<EventId>),
    /// New events (seq >= `stored_len`) with their lines, not yet spilled.
    buffer: Vec<(u64, Envelope)>,
    /// New events that did not fit in `buffer`, as `[line, envelope]` JSON lines.
    spill: Option<BufWriter<std::fs::File>>,
}

impl Block {
    async fn open<S: Store + ?Sized>(
        store: &S,
        session: &SessionId,
        line: u64,
        marked: bool,
    ) -> Result<Self, TransferError> {
        let stored_len = store
            .session(session)
            .await
            .map_err(|source| TransferError::Store {
                line: Some(line),
                store: store.describe(),
                source,
            })?
            .map_or(0, |info| info.count);
        Ok(Self {
            stored_len,
            next_seq: 0,
            marked,
            last_line: line,
            ids: HashSet::new(),
            stored_page: (0, Vec::new()),
            buffer: Vec::new(),
            spill: None,
        })
    }

    /// Checks an event line of this block's session and keeps its event if it is new.
    async fn push<S: Store + ?Sized>(
        &mut self,
        store: &S,
        line: u64,
        parsed: Line<Envelope>,
    ) -> Result<(), TransferError> {
        let Line {
            session,
            seq,
            event,
        } = parsed;
        if seq != self.next_seq {
            return Err(TransferError::OutOfOrder {
                line,
                session,
                expected: self.next_seq,
                found: seq,
            });
        }
        check_name(&event.name).map_err(|message| TransferError::Malformed { line, message })?;
        if !self.ids.insert(event.id) {
            return Err(TransferError::Malformed {
                line,
                message: format!(
                    "event {} appears twice in the export of session {session}",
                    event.id
                ),
            });
        }
        self.next_seq += 1;
        self.last_line = line;
        if seq < self.stored_len {
            let (start, ids) = &self.stored_page;
            if seq < *start || seq >= start + ids.len() as u64 {
                let end = seq.saturating_add(EVENT_PAGE as u64).min(self.stored_len);
                let page = store.events(&session, seq..end).await.map_err(|source| {
                    TransferError::Store {
                        line: Some(line),
                        store: store.describe(),
                        source,
                    }
                })?;
                self.stored_page = (seq, page.iter().map(|event| event.id).collect());
            }
            let (start, ids) = &self.stored_page;
            let stored = usize::try_from(seq - start)
                .ok()
                .and_then(|index| ids.get(index));
            if stored != Some(&event.id) {
                return Err(TransferError::Diverged {
                    line,
                    session,
                    seq,
                    stored: stored.copied(),
                    found: event.id,
                });
            }
            return Ok(());
        }
        if self.buffer.len() >= BATCH {
            self.spill_buffer()?;
        }
        self.buffer.push((line, event));
        Ok(())
    }

    /// Moves the buffered events to the temporary file.
    fn spill_buffer(&mut self) -> Result<(), TransferError> {
        let spill = match &mut self.spill {
            Some(spill) => spill,
            None => self.spill.insert(BufWriter::new(
                tempfile::tempfile().map_err(TransferError::Buffer)?,
            )),
        };
        for entry in self.buffer.drain(..) {
            serde_json::to_writer(&mut *spill, &entry)
                .map_err(|err| TransferError::Buffer(err.into()))?;
            spill.write_all(b"\n").map_err(TransferError::Buffer)?;
        }
        Ok(())
    }

    /// Appends the block's new events, in batches; returns the session's length. When an
    /// append fails part way, a session that was new is cleared again
    /// ([`TransferError::Interrupted`]).
    ///
    /// New events that take more than one append are a window in which a killed process
    /// would leave a prefix: the session is [marked unfinished](Store::mark_unfinished)
    /// before the first append and the mark cleared after the last (or after the roll back).
    /// `was_marked` says an earlier import left the session marked: its mark is cleared once
    /// this one has appended the rest.
    async fn commit<S: Store + ?Sized>(
        self,
        store: &S,
        session: &SessionId,
        was_marked: bool,
        summary: &mut ImportSummary,
        progress: &mut Progress<'_>,
    ) -> Result<u64, TransferError> {
        let before = self.stored_len;
        let new = self.next_seq.saturating_sub(before);
        let mark = |note: Option<String>| async move {
            store
                .mark_unfinished(session, note.as_deref())
                .await
                .map_err(|source| TransferError::Store {
                    line: None,
                    store: store.describe(),
                    source,
                })
        };
        let marks = new > BATCH as u64;
        if marks {
            mark(Some(format!(
                "an import was appending {new} events (seqs {before} to {}) when it stopped; \
                 import the same export again to append the rest",
                before + new - 1
            )))
            .await?;
        }
        let appended_before = summary.appended;
        match self.append_all(store, session, summary, progress).await {
            Ok(len) => {
                if marks || was_marked {
                    mark(None).await?;
                }
                if was_marked {
                    summary.finished.push(session.clone());
                }
                Ok(len)
            }
            Err(err) => {
                let appended = summary.appended - appended_before;
                if appended == 0 {
                    if marks && !was_marked {
                        mark(None).await?;
                    }
                    return Err(err);
                }
                let removed = before == 0 && store.clear(session).await.is_ok();
                if removed {
                    summary.appended = appended_before;
                    mark(None).await?;
                }
                Err(TransferError::Interrupted {
                    session: session.clone(),
                    appended,
                    removed,
                    source: Box::new(err),
                })
            }
        }
    }

    async fn append_all<S: Store + ?Sized>(
        self,
        store: &S,
        session: &SessionId,
        summary: &mut ImportSummary,
        progress: &mut Progress<'_>,
    ) -> Result<u64, TransferError> {
        let mut len = self.stored_len;
        let total = self.next_seq;
        let mut batch = Vec::with_capacity(BATCH);
        if let Some(spill) = self.spill {
            let mut file = spill
                .into_inner()
                .map_err(|err| TransferError::Buffer(err.into_error()))?;
            file.rewind().map_err(TransferError::Buffer)?;
            for text in BufReader::new(file).lines() {
                let text = text.map_err(TransferError::Buffer)?;
                let entry: (u64, Envelope) =
                    serde_json::from_str(&text).map_err(|err| TransferError::Buffer(err.into()))?;
                batch.push(entry);
                if batch.len() == BATCH {
                    len = append(store, session, &mut batch, len, total, summary, progress).await?;
                }
            }
        }
        for entry in self.buffer {
            batch.push(entry);
            if batch.len() == BATCH {
                len = append(store, session, &mut batch, len, total, summary, progress).await?;
            }
        }
        if !batch.is_empty() {
            len = append(store, session, &mut batch, len, total, summary, progress).await?;
        }
        Ok(len)
    }
}

/// Appends `batch` (events with their lines) at `at` and empties it, and reports the session's
/// new length out of its block's `total` to `progress`; returns the new length.
async fn append<S: Store + ?Sized>(
    store: &S,
    session: &SessionId,
    batch: &mut Vec<(u64, Envelope)>,
    at: u64,
    total: u64,
    summary: &mut ImportSummary,
    progress: &mut Progress<'_>,
) -> Result<u64, TransferError> {
    let first_line = batch.first().map(|(line, _)| *line);
    let events: Vec<Envelope> = batch.drain(..).map(|(_, event)| event).collect();
    let len = store
        .append(session, &events, at)
        .await
        .map_err(|source| TransferError::Store {
            line: first_line,
            store: store.describe(),
            source,
        })?;
    summary.appended += events.len() as u64;
    progress(ImportProgress {
        session,
        stored: len,
        total,
    });
    Ok(len)
}

/// Why `name` is not a valid event name, if it is not.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the event name is empty".to_owned());
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "the event name is {} bytes long, more than {MAX_NAME_BYTES} bytes",
            name.len()
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!(
            "the event name {name:?} contains a control character (U+{:04X})",
            u32::from(c)
        ));
    }
    Ok(())
}

/// What a line of the input is.
enum Parsed {
    Event(Line<Envelope>),
    Begin(SessionId),
    End(SessionId, u64),
}

fn parse(text: &str, line: u64) -> Result<Parsed, TransferError> {
    let err = match serde_json::from_str::<Line<Envelope>>(text) {
        Ok(event) => return Ok(Parsed::Event(event)),
        Err(err) => err,
    };
    match serde_json::from_str::<Marker>(text) {
        Ok(Marker {
            session,
            begin: true,
            end: false,
            count: None,
        }) => Ok(Parsed::Begin(session)),
        Ok(Marker {
            session,
            begin: false,
            end: true,
            count: Some(count),
        }) => Ok(Parsed::End(session, count)),
        _ => Err(TransferError::Malformed {
            line,
            message: format!("not an event line ({err})"),
        }),
    }
}

/// Reads JSONL from `input` and appends it to `store`, each session's block all or nothing
/// (see the module docs).
pub async fn import<S: Store + ?Sized>(
    store: &S,
    input: impl BufRead,
) -> Result<ImportSummary, TransferError> {
    import_with_progress(store, input, |_| {}).await
}

/// How far an import has got: `session`'s length after an append, out of the `total` its block
/// holds. Reported by [`import_with_progress`] after each append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportProgress<'a> {
    /// The session appended to.
    pub session: &'a SessionId,
    /// Its length now.
    pub stored: u64,
    /// Its length once its block is imported.
    pub total: u64,
}

/// What [`import_with_progress`] calls after each append.
type Progress<'p> = dyn FnMut(ImportProgress<'_>) + Send + 'p;

/// [`import`], calling `progress` after each append (a block of more than [`BATCH`] new events
/// takes several), for a progress bar on long imports.
///
/// ```
/// use openharness_store::{MemoryStore, jsonl};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let export = r#"{"session":"01a1f0c4-5d6e-7f80-9a1b-2c3d4e5f6a7b","begin":true}
/// {"session":"01a1f0c4-5d6e-7f80-9a1b-2c3d4e5f6a7b","end":true,"count":0}
/// "#;
/// let mut appends = 0;
/// jsonl::import_with_progress(&MemoryStore::new(), export.as_bytes(), |p| appends += 1).await?;
/// assert_eq!(appends, 0); // an empty block appends nothing
/// # Ok::<_, jsonl::TransferError>(())
/// # }).unwrap();
/// ```
pub async fn import_with_progress<S: Store + ?Sized>(
    store: &S,
    input: impl BufRead,
    mut progress: impl FnMut(ImportProgress<'_>) + Send,
) -> Result<ImportSummary, TransferError> {
    let progress: &mut Progress<'_> = &mut progress;
    let mut summary = ImportSummary::default();
    // Sessions an interrupted import left marked: this one clears their marks as it finishes
    // them.
    let unfinished: HashSet<SessionId> = store
        .unfinished()
        .await
        .map_err(|source| TransferError::Store {
            line: None,
            store: store.describe(),
            source,
        })?
        .into_iter()
        .map(|(session, _)| session)
        .collect();
    // Open blocks, and their sessions in order of opening (for the end of an unmarked file).
    let mut open: HashMap<SessionId, Block> = HashMap::new();
    let mut order: Vec<SessionId> = Vec::new();
    for (index, text) in input.lines().enumerate() {
        let line = index as u64 + 1;
        let text = text.map_err(|source| TransferError::Read { line, source })?;
        if text.trim().is_empty() {
            continue;
        }
        match parse(&text, line)? {
            Parsed::Begin(session) => {
                if let Some(block) = open.get(&session) {
                    return Err(TransferError::Malformed {
                        line,
                        message: format!(
                            "session {session} begins again, but its block before (up to line {}) has no end marker",
                            block.last_line
                        ),
                    });
                }
                open.insert(
                    session.clone(),
                    Block::open(store, &session, line, true).await?,
                );
                order.push(session);
            }
            Parsed::Event(parsed) => {
                summary.events += 1;
                let session = parsed.session.clone();
                if !open.contains_key(&session) {
                    let block = Block::open(store, &session, line, false).await?;
                    open.insert(session.clone(), block);
                    order.push(session.clone());
                }
                if let Some(block) = open.get_mut(&session) {
                    block.push(store, line, parsed).await?;
                }
            }
            Parsed::End(session, count) => {
                let block = open.remove(&session);
                order.retain(|open| *open != session);
                let found = block.as_ref().map_or(0, |block| block.next_seq);
                if found != count {
                    return Err(TransferError::Count {
                        line,
                        session,
                        count,
                        found,
                    });
                }
                if let Some(block) = block {
                    let was_marked = unfinished.contains(&session);
                    let len = block
                        .commit(store, &session, was_marked, &mut summary, progress)
                        .await?;
                    note(&mut summary, session, len);
                }
            }
        }
    }
    let truncated = order
        .iter()
        .filter_map(|session| open.get(session).map(|block| (session, block)))
        .find(|(_, block)| block.marked);
    if let Some((session, block)) = truncated {
        return Err(TransferError::Truncated {
            line: block.last_line,
            session: session.clone(),
        });
    }
    for session in order {
        let Some(block) = open.remove(&session) else {
            continue;
        };
        tracing::warn!(
            %session,
            "the export of session {session} has no end marker (written before markers existed?): imported without a truncation check"
        );
        let was_marked = unfinished.contains(&session);
        let len = block
            .commit(store, &session, was_marked, &mut summary, progress)
            .await?;
        summary.unmarked.push(session.clone());
        note(&mut summary, session, len);
    }
    Ok(summary)
}

/// Records a session's length after the import in the summary.
fn note(summary: &mut ImportSummary, session: SessionId, len: u64) {
    match summary.sessions.iter_mut().find(|(s, _)| *s == session) {
        Some(entry) => entry.1 = len,
        None => summary.sessions.push((session, len)),
    }
}
