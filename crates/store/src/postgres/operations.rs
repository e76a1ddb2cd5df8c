//! The [`Store`] operations of a [`PostgresStore`]: appends, reads, listings, snapshots, claims
//! and live tails, each on a pooled connection with the retry the store's module docs describe.

use super::*;

#[async_trait]
impl Store for PostgresStore {
    fn describe(&self) -> String {
        self.inner.describe.clone()
    }

    /// A session-level advisory lock on a connection of this process (see the module docs of
    /// claims): PostgreSQL frees it when the process dies.
    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        self.inner.claims.claim(session).await
    }

    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        with_connection!(self, |c| match note {
            Some(note) => {
                c.client
                    .execute(
                        "INSERT INTO oh_unfinished (session, note) VALUES ($1, $2)
                         ON CONFLICT (session) DO UPDATE SET note = EXCLUDED.note",
                        &[&session.as_str(), &note],
                    )
                    .await
            }
            None => {
                c.client
                    .execute(
                        "DELETE FROM oh_unfinished WHERE session = $1",
                        &[&session.as_str()],
                    )
                    .await
            }
        })
        .map_err(self.query_error(format!("marking session {session} unfinished")))?;
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        let rows = with_connection!(self, |c| {
            c.client
                .query(
                    "SELECT session, note FROM oh_unfinished ORDER BY session",
                    &[],
                )
                .await
        })
        .map_err(self.query_error("listing of unfinished sessions"))?;
        let mut listed = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: &str = row.get(0);
            let session = id.parse().map_err(|err| {
                StoreError::Invalid(format!("the store marks an invalid session id: {err}"))
            })?;
            listed.push((session, row.get::<_, String>(1)));
        }
        Ok(listed)
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        let Some(meta) = SessionInfo::from_first_events(session.clone(), events) else {
            // An empty batch: report the length.
            return self.length(session).await;
        };
        let mut ids = Vec::with_capacity(events.len());
        let mut bodies = Vec::with_capacity(events.len());
        for event in events {
            ids.push(*event.id.as_uuid());
            bodies.push(serde_json::to_string(event).map_err(|err| {
                StoreError::Invalid(format!(
                    "event {} cannot be encoded as JSON: {err}",
                    event.id
                ))
            })?);
        }
        // Only a session's first batch, or one naming its workflow or parent, writes its row.
        let with_session = expected_seq == 0 || meta.workflow.is_some() || meta.parent.is_some();
        let created = if with_session {
            timestamp(&meta.created)
        } else {
            String::new()
        };
        let parent = meta.parent.as_ref().map(SessionId::as_str);
        let expected = seq_param(expected_seq);
        let written = expected_seq.saturating_add(events.len() as u64);
        // Under this process's claim, the append carries the claim's fencing token.
        let token = self.inner.claims.token(session);
        for _ in 0..8 {
            let channel = &self.inner.channel;
            let result = with_connection!(self, |connection| {
                if let ([id], [body], false) = (&ids[..], &bodies[..], with_session) {
                    connection
                        .client
                        .execute(
                            &connection.append_one,
                            &[&session.as_str(), &expected, id, body, channel, &token],
                        )
                        .await
                } else if with_session {
                    connection
                        .client
                        .query_opt(
                            &connection.append_with_session,
                            &[
                                &session.as_str(),
                                &expected,
                                &ids,
                                &bodies,
                                channel,
                                &created,
                                &meta.workflow,
                                &parent,
                                &token,
                            ],
                        )
                        .await
                        .map(|row| u64::from(row.is_some()))
                } else {
                    connection
                        .client
                        .query_opt(
                            &connection.append,
                            &[&session.as_str(), &expected, &ids, &bodies, channel, &token],
                        )
                        .await
                        .map(|row| u64::from(row.is_some()))
                }
            });
            match result {
                Ok(0) => {}
                Ok(_) => return Ok(written),
                Err(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
                Err(err) => {
                    return Err(self.query_error(format!("append to session {session}"))(
                        err,
                    ));
                }
            }
            // Not written: decide why, with the rules every backend shares.
            let (len, stored) = self.state_of(session, &ids).await?;
            let plan =
                plan_append::<StoreError>(session, events, expected_seq, len, |id: &EventId| {
                    Ok(stored.get(id.as_uuid()).copied())
                });
            if let Ok(Plan::Done(len)) = plan {
                // Recorded already (by an attempt whose answer was lost), while it held.
                return Ok(len);
            }
            if let Some(token) = token {
                self.check_fence(session, token).await?;
            }
            plan?;
            // The session moved under us and is now where the writer expected: try again.
        }
        Err(StoreError::Invalid(format!(
            "append to session {session} kept racing with other writers; try again"
        )))
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if range.end.saturating_sub(range.start) <= PARALLEL_READ {
            return self.read_range(session, range).await;
        }
        // A long read: split it across the connections, so the server and the client both work
        // on several parts at once.
        let len = self.length(session).await?;
        let end = range.end.min(len);
        let span = end.saturating_sub(range.start);
        if span <= PARALLEL_READ {
            return self.read_range(session, range.start..end).await;
        }
        let parts = self.inner.connections.min(*crate::codec::CORES).max(1) as u64;
        let size = span.div_ceil(parts);
        let mut tasks = Vec::new();
        for part in 0..parts {
            let from = range.start + part * size;
            let to = (from + size).min(end);
            let store = self.clone();
            let session = session.clone();
            tasks.push(tokio::spawn(async move {
                store.read_range(&session, from..to).await
            }));
        }
        let mut events = Vec::with_capacity(usize::try_from(span).unwrap_or(0));
        for task in tasks {
            let part = task.await.map_err(|err| {
                StoreError::Invalid(format!(
                    "a read of session {session} did not complete: {err}"
                ))
            })??;
            events.extend(part);
        }
        if events.len() as u64 != span {
            // The session was cleared while the parts were read: read it in one snapshot.
            return self.read_range(session, range).await;
        }
        Ok(events)
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        let sql = format!("{SESSION_INFO} WHERE s.id = $1");
        let row = with_connection!(self, |c| c
            .client
            .query_opt(&sql, &[&session.as_str()])
            .await)
        .map_err(self.query_error(format!("read of session {session}'s metadata")))?;
        row.as_ref().map(info_from_row).transpose()
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let rows = with_connection!(self, |c| c.client.query(SESSION_INFO, &[]).await)
            .map_err(self.query_error("listing of sessions"))?;
        let mut infos = rows
            .iter()
            .map(info_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        crate::sort_oldest_first(&mut infos);
        Ok(infos)
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        with_connection!(self, |c| {
            c.client
                .execute(
                    "SELECT oh_clear($1, $2)",
                    &[&session.as_str(), &self.inner.channel],
                )
                .await
        })
        .map_err(self.query_error(format!("clearing of session {session}")))?;
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
        let at_most = seq_param(at_most);
        let row = with_connection!(self, |c| {
            c.client
                .query_opt(
                    "SELECT position, state FROM oh_snapshots \
                         WHERE session = $1 AND position <= $2 \
                         ORDER BY position DESC LIMIT 1",
                    &[&session.as_str(), &at_most],
                )
                .await
        })
        .map_err(self.query_error(format!("read of session {session}'s snapshots")))?;
        let Some(row) = row else {
            return Ok(None);
        };
        let position = row.get::<_, i64>(0) as u64;
        let text: String = row.get(1);
        Ok(Some((position, SnapshotJson::Text(text.into_bytes()))))
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        tail(self, &self.inner.notifier, session, from_seq)
    }
}

impl PostgresStore {
    /// Saves a snapshot's JSON text at `position`, unless the session is shorter.
    async fn save_snapshot_text(
        &self,
        session: &SessionId,
        position: u64,
        state: String,
    ) -> Result<(), StoreError> {
        let seq = seq_param(position);
        let written = with_connection!(self, |c| {
            c.client
                .execute(
                    // The event before the position is locked, as an append locks its previous
                    // event, so a racing clear either waits for this snapshot (and then deletes
                    // it) or has already deleted that event (and this inserts nothing).
                    "INSERT INTO oh_snapshots (session, position, state)
                 SELECT $1, $2, $3 FROM (
                     SELECT max(seq) + 1 AS len FROM oh_events WHERE session = $1
                 ) AS session WHERE session.len >= $2
                   AND ($2 = 0 OR EXISTS (
                       SELECT 1 FROM oh_events WHERE session = $1 AND seq = $2 - 1 FOR KEY SHARE
                   ))
                 ON CONFLICT (session, position) DO UPDATE SET state = EXCLUDED.state",
                    &[&session.as_str(), &seq, &state],
                )
                .await
        })
        .map_err(self.query_error(format!("saving a snapshot of session {session}")))?;
        if written == 0 {
            let len = self.length(session).await?;
            return Err(crate::snapshot_beyond_end(session, position, len));
        }
        Ok(())
    }
}
