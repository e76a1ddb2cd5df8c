//! Reading JSONL blocks into a store: each session's block validated whole before any of it is
//! appended, in batches, with progress.

use super::*;

/// What [`import`](fn@import) stored.
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
    /// Every block read, in the order they ended (blocks without an end line last): its
    /// chain head, when it has a chain, and what its events say about it.
    pub blocks: Vec<ImportedBlock>,
}

/// A session's block as [`import`](fn@import) read it ([`ImportSummary::blocks`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportedBlock {
    /// The session.
    pub session: SessionId,
    /// How many event lines it holds.
    pub events: u64,
    /// Its chain head, which its lines and its end line were checked against: `None` for a
    /// block without a chain (an export written before chains), or when the import was told
    /// to [ignore chains](ImportOptions::ignore_chain).
    pub chain: Option<ChainHash>,
    /// The workflow its first event names (`workflow:started`, or a fork's `session:forked`).
    pub workflow: Option<String>,
    /// The code fingerprint its `workflow:started` recorded.
    pub code: Option<String>,
    /// The last state hash its events recorded (`stateHash`)...
    pub state_hash: Option<String>,
    /// ... on the event at this seq.
    pub state_hash_seq: Option<u64>,
    /// How many of its events record a state hash.
    pub state_hashes: u64,
}

/// How [`import_with`] reads its input.
///
/// ```
/// let options = openharness_store::jsonl::ImportOptions::default().ignore_chain(true);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    ignore_chain: bool,
}

impl ImportOptions {
    /// Import blocks whose lines do not match their hash chain instead of refusing them
    /// ([`TransferError::Chain`]): for an export edited by hand (a payload redacted, say).
    /// No chain is checked, and [`ImportedBlock::chain`] is `None` for every block.
    #[must_use]
    pub fn ignore_chain(mut self, ignore: bool) -> Self {
        self.ignore_chain = ignore;
        self
    }
}

/// A session's block being read: what is checked so far and the new events to append.
pub(super) struct Block {
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
    /// Whether its chain is checked (not when the import ignores chains).
    checks_chain: bool,
    /// The value its chain has reached, once a begin line or its first event line says it
    /// has one.
    chain: Option<ChainHash>,
    /// What its events say about it.
    facts: Facts,
}

impl Block {
    /// A block of `session` opened at `line`: by a begin line when `marked` (`chained` when
    /// it names the chain algorithm), else by an event line.
    async fn open<S: Store + ?Sized>(
        store: &S,
        session: &SessionId,
        line: u64,
        marked: bool,
        chained: bool,
        options: ImportOptions,
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
            checks_chain: !options.ignore_chain,
            chain: (chained && !options.ignore_chain).then_some(ChainHash::START),
            facts: Facts::default(),
        })
    }

    /// Checks an event line's chain value against the block's chain, which it starts when it
    /// is the block's first and carries one.
    fn check_chain(
        &mut self,
        line: u64,
        session: &SessionId,
        seq: u64,
        text: &str,
    ) -> Result<(), TransferError> {
        if !self.checks_chain {
            return Ok(());
        }
        let broken = |problem| TransferError::Chain {
            line,
            session: session.clone(),
            seq: Some(seq),
            problem: Box::new(problem),
        };
        let previous = match self.chain {
            Some(previous) => previous,
            None if seq == 0 => ChainHash::START,
            None => {
                return match chain::carried_and_computed(text, &ChainHash::START) {
                    Some(_) => Err(broken(ChainBreak::Undeclared)),
                    None => Ok(()),
                };
            }
        };
        match chain::carried_and_computed(text, &previous) {
            Some((carried, computed)) if carried == computed => {
                self.chain = Some(computed);
                Ok(())
            }
            Some(_) => Err(broken(ChainBreak::Mismatch)),
            None if self.chain.is_some() => Err(broken(ChainBreak::Unchained)),
            None => Ok(()),
        }
    }

    /// Checks the block's end line at `line` against its chain and facts: each of the chain
    /// head and the seal's fields that it records (one it leaves out claims nothing).
    fn check_end(&self, line: u64, session: &SessionId, end: &Marker) -> Result<(), TransferError> {
        if !self.checks_chain {
            return Ok(());
        }
        let broken = |problem| TransferError::Chain {
            line,
            session: session.clone(),
            seq: None,
            problem: Box::new(problem),
        };
        match (self.chain, &end.chain) {
            (Some(head), Some(recorded)) if recorded.parse::<ChainHash>().ok() != Some(head) => {
                return Err(broken(ChainBreak::Head {
                    recorded: recorded.clone(),
                    computed: head,
                }));
            }
            (None, Some(_)) if self.next_seq > 0 => return Err(broken(ChainBreak::Undeclared)),
            _ => {}
        }
        let (facts, seq) = (&self.facts, |seq: Option<u64>| {
            seq.map(|seq| seq.to_string())
        });
        let seal = [
            ("workflow", end.workflow.clone(), facts.workflow.clone()),
            ("code", end.code.clone(), facts.code.clone()),
            (
                "stateHash",
                end.state_hash.clone(),
                facts.state_hash.clone(),
            ),
            (
                "stateHashSeq",
                seq(end.state_hash_seq),
                seq(facts.state_hash_seq),
            ),
        ];
        for (field, recorded, events) in seal {
            if recorded.is_some() && recorded != events {
                return Err(broken(ChainBreak::Seal {
                    field,
                    recorded,
                    events,
                }));
            }
        }
        Ok(())
    }

    /// What the block read: its chain head and facts.
    fn read(&self, session: &SessionId) -> ImportedBlock {
        let facts = self.facts.clone();
        ImportedBlock {
            session: session.clone(),
            events: self.next_seq,
            chain: self.chain,
            workflow: facts.workflow,
            code: facts.code,
            state_hash: facts.state_hash,
            state_hash_seq: facts.state_hash_seq,
            state_hashes: facts.state_hashes,
        }
    }

    /// Checks an event line of this block's session and keeps its event if it is new.
    async fn push<S: Store + ?Sized>(
        &mut self,
        store: &S,
        line: u64,
        text: &str,
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
        self.check_chain(line, &session, seq, text)?;
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
        self.facts.observe(seq, &event);
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
pub(super) async fn append<S: Store + ?Sized>(
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
pub(super) fn check_name(name: &str) -> Result<(), String> {
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
pub(super) enum Parsed {
    Event(Line<Envelope>),
    /// A begin line, and whether it names the chain algorithm.
    Begin(SessionId, bool),
    /// An end line, with its count.
    End(Marker, u64),
}

pub(super) fn parse(text: &str, line: u64) -> Result<Parsed, TransferError> {
    let err = match serde_json::from_str::<Line<Envelope>>(text) {
        Ok(event) => return Ok(Parsed::Event(event)),
        Err(err) => err,
    };
    let not_an_event = || TransferError::Malformed {
        line,
        message: format!("not an event line ({err})"),
    };
    let marker = serde_json::from_str::<Marker>(text).map_err(|_| not_an_event())?;
    let sealed = marker.workflow.is_some()
        || marker.code.is_some()
        || marker.state_hash.is_some()
        || marker.state_hash_seq.is_some();
    match (marker.begin, marker.end, marker.count) {
        (true, false, None) if !sealed => match marker.chain.as_deref() {
            None => Ok(Parsed::Begin(marker.session, false)),
            Some(CHAIN_ALGORITHM) => Ok(Parsed::Begin(marker.session, true)),
            Some(other) => Err(TransferError::Chain {
                line,
                seq: None,
                problem: Box::new(ChainBreak::Algorithm(other.to_owned())),
                session: marker.session,
            }),
        },
        (false, true, Some(count)) => Ok(Parsed::End(marker, count)),
        _ => Err(not_an_event()),
    }
}

/// Reads JSONL from `input` and appends it to `store`, each session's block all or nothing,
/// refusing a block whose lines do not match its hash chain (see the module docs).
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

/// [`import`](fn@import), calling `progress` after each append (a block of more than [`BATCH`]
/// new events takes several), for a progress bar on long imports.
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
    progress: impl FnMut(ImportProgress<'_>) + Send,
) -> Result<ImportSummary, TransferError> {
    import_with(store, input, ImportOptions::default(), progress).await
}

/// [`import_with_progress`] with `options`: [`ImportOptions::ignore_chain`] imports blocks
/// whose lines do not match their hash chain.
///
/// ```
/// use openharness_store::{MemoryStore, jsonl};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let export = r#"{"session":"s-1","begin":true,"chain":"sha256"}
/// {"session":"s-1","seq":0,"id":"01a1f0c4-5d6e-7f80-9a1b-2c3d4e5f6a7b","name":"user:input","payload":{"text":"hi"},"timestamp":"2026-01-01T00:00:00Z","causedBy":null,"chain":"0000000000000000000000000000000000000000000000000000000000000000"}
/// {"session":"s-1","end":true,"count":1,"chain":"0000000000000000000000000000000000000000000000000000000000000000"}
/// "#;
/// let err = jsonl::import(&MemoryStore::new(), export.as_bytes()).await.unwrap_err();
/// assert!(matches!(err, jsonl::TransferError::Chain { line: 2, .. }), "{err}");
/// let options = jsonl::ImportOptions::default().ignore_chain(true);
/// let summary = jsonl::import_with(&MemoryStore::new(), export.as_bytes(), options, |_| {}).await?;
/// assert_eq!(summary.events, 1);
/// # Ok::<_, jsonl::TransferError>(())
/// # }).unwrap();
/// ```
pub async fn import_with<S: Store + ?Sized>(
    store: &S,
    mut input: impl BufRead,
    options: ImportOptions,
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
    let mut bytes = Vec::new();
    let mut line = 0;
    loop {
        line += 1;
        bytes.clear();
        let read = input
            .read_until(b'\n', &mut bytes)
            .map_err(|source| TransferError::Read { line, source })?;
        if read == 0 {
            break;
        }
        // A line is its bytes without its line ending (`\n` or `\r\n`): what the chain hashes.
        let end = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let end = end.strip_suffix(b"\r").unwrap_or(end);
        let text = std::str::from_utf8(end).map_err(|err| TransferError::Malformed {
            line,
            message: format!("not UTF-8 text ({err})"),
        })?;
        if text.trim().is_empty() {
            continue;
        }
        match parse(text, line)? {
            Parsed::Begin(session, chained) => {
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
                    Block::open(store, &session, line, true, chained, options).await?,
                );
                order.push(session);
            }
            Parsed::Event(parsed) => {
                summary.events += 1;
                let session = parsed.session.clone();
                if !open.contains_key(&session) {
                    let block = Block::open(store, &session, line, false, false, options).await?;
                    open.insert(session.clone(), block);
                    order.push(session.clone());
                }
                if let Some(block) = open.get_mut(&session) {
                    block.push(store, line, text, parsed).await?;
                }
            }
            Parsed::End(end, count) => {
                let session = end.session.clone();
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
                    block.check_end(line, &session, &end)?;
                    summary.blocks.push(block.read(&session));
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
        summary.blocks.push(block.read(&session));
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
pub(super) fn note(summary: &mut ImportSummary, session: SessionId, len: u64) {
    match summary.sessions.iter_mut().find(|(s, _)| *s == session) {
        Some(entry) => entry.1 = len,
        None => summary.sessions.push((session, len)),
    }
}
