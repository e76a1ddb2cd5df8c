//! The [`Store`] port, implemented over the redb file: appends through the writer thread,
//! reads on blocking threads, subscriptions, snapshots, listings.

use super::*;

/// Checks that the events read from `start` on have consecutive seqs: a record lost to
/// damage is [`StoreError::Corrupt`] at its seq, not a shorter read whose later events a
/// caller would number wrongly.
pub(super) fn check_contiguous(
    session: &SessionId,
    start: u64,
    records: &[(u64, &[u8])],
) -> Result<(), StoreError> {
    for (expected, (seq, _)) in (start..).zip(records) {
        let (seq, message) = match (*seq).cmp(&expected) {
            std::cmp::Ordering::Equal => continue,
            std::cmp::Ordering::Less => (*seq, format!("event {seq} is stored twice")),
            std::cmp::Ordering::Greater => (
                expected,
                format!("stored event {expected} is missing (the next one stored is {seq})"),
            ),
        };
        return Err(StoreError::Corrupt {
            session: session.clone(),
            seq,
            message,
        });
    }
    Ok(())
}

/// The listing of one session: from its record, or, when the record is damaged, from its
/// first event (the workflow and parent then come from that event alone), with what was
/// damaged.
pub(super) fn listed_info<R>(
    events: &redb::ReadOnlyTable<(&'static str, u64), &'static [u8]>,
    recent: &R,
    session: &SessionId,
    record: &[u8],
    last: Option<(u64, Vec<u8>)>,
) -> Result<(SessionInfo, Option<String>), Failure>
where
    R: ReadableTable<u64, (&'static str, u64, &'static [u8])>,
{
    let sid = session.as_str();
    let mut damaged = None;
    let record = match SessionRecord::decode(session, record) {
        Ok(record) => record,
        Err(damage) => {
            damaged = Some(damage.to_string());
            let first = match events.get((sid, 0))? {
                Some(bytes) => Some(bytes.value().to_vec()),
                None => staging::staged(recent, sid, 0..1)?
                    .pop()
                    .map(|(_, bytes)| bytes),
            };
            let Some(first) = first else {
                return Err(damage.into());
            };
            let first: Envelope = record::decode(&first).map_err(|_| damage)?;
            tracing::warn!(%session, "listing a session whose metadata is damaged from its events");
            SessionRecord::start(session, &first, std::slice::from_ref(&first))
        }
    };
    Ok((layout::session_info(session, record, last)?, damaged))
}

/// Encodes an event for storage (see [`record`]).
pub(super) fn encode_event(event: &Envelope) -> Result<Vec<u8>, StoreError> {
    record::encode(event).map_err(|err| {
        StoreError::Invalid(format!(
            "event {} cannot be encoded for storage: {err}",
            event.id
        ))
    })
}

impl RedbStore {
    /// Saves a snapshot's JSON text: with a journal, by the next group commit (durable with its
    /// record); without, in a transaction of its own.
    async fn save_snapshot_text(
        &self,
        session: &SessionId,
        position: u64,
        state: String,
    ) -> Result<(), StoreError> {
        let name = session;
        let session = session.clone();
        if let Some(writer) = &self.writer
            && writer.journal().is_some()
        {
            // Saved by the next group commit, durable with its journal record.
            self.health.check_writable(&self.path, || {
                format!("saving a snapshot of session {name}")
            })?;
            let save = SaveSnapshot {
                session,
                position,
                state,
            };
            return writer.snapshot(save).await;
        }
        self.run_write(
            || format!("saving a snapshot of session {name}"),
            move |db| {
                let sid = session.as_str();
                let txn = db.begin_write()?;
                {
                    if let Some(len) = layout::snapshot_short_of(
                        &txn.open_table(SESSIONS)?,
                        &txn.open_table(EVENTS)?,
                        &txn.open_table(staging::RECENT)?,
                        sid,
                        position,
                    )? {
                        return Err(crate::snapshot_beyond_end(&session, position, len).into());
                    }
                    let mut snapshots = txn.open_table(SNAPSHOTS)?;
                    snapshots.insert((sid, position), state.as_bytes())?;
                }
                txn.commit()?;
                Ok(())
            },
        )
        .await
    }

    /// The snapshot of `session` with the greatest position `<= at_most`: its position and its
    /// state's JSON text, as stored.
    async fn snapshot_text(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}'s snapshots"),
            move |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(SNAPSHOTS)?;
                let sid = session.as_str();
                let Some(entry) = table.range((sid, 0)..=(sid, at_most))?.next_back() else {
                    return Ok(None);
                };
                let (key, bytes) = entry?;
                Ok(Some((key.value().1, bytes.value().to_vec())))
            },
        )
        .await
    }

    /// The events of `session` in `range`, with the payloads of those `folds` names (see
    /// [`Store::events_for_fold`]).
    async fn read_events(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.start >= range.end {
            return Ok(Vec::new());
        }
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}"),
            move |db| {
                let sid = session.as_str();
                let txn = db.begin_read()?;
                let table = txn.open_table(EVENTS)?;
                let mut guards = Vec::new();
                for entry in table.range((sid, range.start)..(sid, range.end))? {
                    let (key, bytes) = entry?;
                    guards.push((key.value().1, bytes));
                }
                // One transaction: the staged events are those no compaction had moved yet.
                let start = range.start;
                let staged = staging::staged(&txn.open_table(staging::RECENT)?, sid, range)?;
                let mut records: Vec<(u64, &[u8])> = guards
                    .iter()
                    .map(|(seq, bytes)| (*seq, bytes.value()))
                    .chain(staged.iter().map(|(seq, bytes)| (*seq, bytes.as_slice())))
                    .collect();
                if !records.is_sorted_by_key(|(seq, _)| *seq) {
                    records.sort_unstable_by_key(|(seq, _)| *seq);
                }
                check_contiguous(&session, start, &records)?;
                Ok(crate::decode_all(&session, &records, |bytes| {
                    record::decode_for_fold(bytes, folds)
                })?)
            },
        )
        .await
    }
}

#[async_trait]
impl Store for RedbStore {
    fn describe(&self) -> String {
        format!("redb:{}", self.path.display())
    }

    /// `false` when opened read-only.
    fn saves_snapshots(&self) -> bool {
        self.writer.is_some()
    }

    /// Fails once the file was found damaged (a contained panic, a session skipped from a
    /// listing): a command or a turn that met damage does not end in success.
    async fn sync(&self) -> Result<(), StoreError> {
        self.health
            .check_writable(&self.path, || "sync".to_owned())?;
        match &self.writer {
            Some(writer) => writer.sync().await,
            None => Ok(()),
        }
    }

    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let name = session;
        let session = session.clone();
        let note = note.map(str::to_owned);
        self.run_write(
            || format!("marking session {name} unfinished"),
            move |db| {
                let txn = db.begin_write()?;
                {
                    let mut marks = txn.open_table(UNFINISHED)?;
                    match &note {
                        Some(note) => {
                            marks.insert(session.as_str(), note.as_str())?;
                        }
                        None => {
                            marks.remove(session.as_str())?;
                        }
                    }
                }
                txn.commit()?;
                Ok(())
            },
        )
        .await
    }

    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        self.run(
            || "listing of unfinished sessions".to_owned(),
            |db| {
                let txn = db.begin_read()?;
                let marks = match txn.open_table(UNFINISHED) {
                    Ok(marks) => marks,
                    // Never marked: the table was never created.
                    Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
                    Err(err) => return Err(err.into()),
                };
                let mut listed = Vec::new();
                for entry in marks.range::<&str>(..)? {
                    let (key, note) = entry?;
                    match key.value().parse::<SessionId>() {
                        Ok(session) => listed.push((session, note.value().to_owned())),
                        Err(err) => {
                            tracing::warn!(key = key.value(), %err, "skipping a mark with an invalid session id");
                        }
                    }
                }
                Ok(listed)
            },
        )
        .await
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        // Encode before taking the write lock; an empty batch still reports the length.
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            let bytes = encode_event(event)?;
            records.push((event.id.as_uuid().as_u128(), bytes));
        }
        let append = Append {
            session: session.clone(),
            events: events.iter().map(SessionRecord::what_it_reads).collect(),
            records,
            expected_seq,
        };
        let Some(writer) = &self.writer else {
            return Err(RedbError::ReadOnly {
                path: self.path.to_path_buf(),
                operation: format!("append to session {session}"),
            }
            .into());
        };
        let Some(result) = writer.append(append).await else {
            return Err(RedbError::Task {
                path: self.path.to_path_buf(),
                operation: format!("append to session {session}"),
                message: "the writer thread stopped".to_owned(),
            }
            .into());
        };
        let len = result?;
        let first = len.saturating_sub(events.len() as u64);
        self.notifier.appended(session, first, events);
        Ok(len)
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.read_events(session, range, |_| true).await
    }

    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.read_events(session, range, folds).await
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let name = session;
        let session = session.clone();
        self.run(
            || format!("read of session {name}'s metadata"),
            move |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(SESSIONS)?;
                let Some(bytes) = table.get(session.as_str())? else {
                    return Ok(None);
                };
                let record = SessionRecord::decode(&session, bytes.value())?;
                let events = txn.open_table(EVENTS)?;
                let recent = txn.open_table(staging::RECENT)?;
                let last = layout::last_event(&events, &recent, session.as_str())?;
                Ok(Some(layout::session_info(&session, record, last)?))
            },
        )
        .await
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let listed = self.run(
            || "listing of sessions".to_owned(),
            |db| {
                let txn = db.begin_read()?;
                let table = txn.open_table(SESSIONS)?;
                let events = txn.open_table(EVENTS)?;
                let recent = txn.open_table(staging::RECENT)?;
                let mut staged = staging::last_staged_by_session(&recent)?;
                let mut infos = Vec::new();
                // The first session left out of the list or listed from its events because
                // its record is damaged, and the damage.
                let mut skipped = None;
                for entry in table.range::<&str>(..)? {
                    let (key, bytes) = entry?;
                    let session = match key.value().parse::<SessionId>() {
                        Ok(session) => session,
                        Err(err) => {
                            tracing::warn!(key = key.value(), %err, "skipping a session with an invalid id");
                            skipped.get_or_insert((key.value().to_owned(), err.to_string()));
                            continue;
                        }
                    };
                    let last = layout::later(
                        layout::events_tail(&events, session.as_str())?,
                        staged.remove(session.as_str()),
                    );
                    match listed_info(&events, &recent, &session, bytes.value(), last) {
                        Ok((info, damaged)) => {
                            if let Some(damage) = damaged {
                                skipped.get_or_insert((session.to_string(), damage));
                            }
                            infos.push(info);
                        }
                        Err(Failure::Store(err)) => {
                            tracing::warn!(%session, %err, "skipping a damaged session");
                            skipped.get_or_insert((session.to_string(), err.to_string()));
                        }
                        Err(failure) => return Err(failure),
                    }
                }
                crate::sort_oldest_first(&mut infos);
                Ok((infos, skipped))
            },
        )
        .await?;
        let (infos, skipped) = listed;
        if let Some((session, err)) = skipped {
            // The list answers what it can; the file is known damaged from now on (writes
            // refused, `sync` failing), so a command that listed it does not end in success.
            let _ = self
                .health
                .damaged(&self.path, format!("listing of session {session}"), err);
        }
        Ok(infos)
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        let name = session;
        let session = session.clone();
        let tails = self
            .writer
            .as_ref()
            .map(|writer| Arc::clone(writer.tails()));
        let writer = self.writer.clone();
        if let Some(writer) = &writer {
            writer.clearing(name);
        }
        let cleared = self
            .run_write(
                || format!("clearing of session {name}"),
                move |db| {
                    let sid = session.as_str();
                    // Held until the commit is decided, like an append's; the session's tail is
                    // forgotten whatever the outcome.
                    let Some(tails) = tails else {
                        return Ok(());
                    };
                    let mut tails = tails.lock();
                    tails.remove(&session);
                    let txn = db.begin_write()?;
                    {
                        let mut sessions = txn.open_table(SESSIONS)?;
                        if sessions.remove(sid)?.is_none() {
                            drop(sessions);
                            txn.abort()?;
                            return Ok(());
                        }
                        let mut table = txn.open_table(EVENTS)?;
                        let mut index = txn.open_table(EVENT_INDEX)?;
                        let mut ids = Vec::new();
                        let mut all_decoded = true;
                        let mut note_id =
                            |seq: u64, bytes: &[u8]| match layout::id_of(&session, seq, bytes) {
                                Ok(id) => ids.push(id.as_uuid().as_u128()),
                                Err(_) => all_decoded = false,
                            };
                        for entry in table.range((sid, 0)..=(sid, u64::MAX))? {
                            let (key, bytes) = entry?;
                            note_id(key.value().1, bytes.value());
                        }
                        let mut recent = txn.open_table(staging::RECENT)?;
                        for (seq, bytes) in staging::remove_session(&mut recent, sid)? {
                            note_id(seq, &bytes);
                        }
                        if all_decoded {
                            for id in ids {
                                index.remove((id, sid))?;
                            }
                        } else {
                            // A damaged event hides its id: look through the whole index.
                            index.retain(|(_, owner), _| owner != sid)?;
                        }
                        table.retain_in((sid, 0)..=(sid, u64::MAX), |_, _| false)?;
                        let mut snapshots = txn.open_table(SNAPSHOTS)?;
                        snapshots.retain_in((sid, 0)..=(sid, u64::MAX), |_, _| false)?;
                    }
                    // A checkpoint too: the journal's records of this session must not bring its
                    // events back after a crash.
                    if let Some(journal) = writer.as_ref().and_then(|writer| writer.journal()) {
                        layout::set_journal_lsn(&txn, journal.applied())?;
                    }
                    txn.commit()?;
                    Ok(())
                },
            )
            .await;
        if let Some(writer) = &self.writer {
            writer.cleared(name);
        }
        cleared?;
        self.notifier.notify(name);
        Ok(())
    }

    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        self.save_snapshot_text(session, position, crate::raw_snapshot_text(state))
            .await
    }

    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        let found = self.snapshot_text(session, at_most).await?;
        Ok(found.map(|(position, text)| (position, SnapshotJson::Text(text))))
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        tail(self, &self.notifier, session, from_seq)
    }
}
