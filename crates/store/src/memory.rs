//! [`MemoryStore`]: an in-process store for tests, examples and throwaway runs.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use openharness_core::{
    Envelope, EventId, SessionId, SessionInfo, Store, StoreError,
    adapter::{Folded, SnapshotJson, Subscription},
};

use crate::append::{Plan, plan_append};
use crate::live::{Notifier, tail};

/// A [`Store`] that keeps every session in memory.
///
/// Clones share the same data, so a test can hand one clone to a run and inspect another.
/// Nothing survives the process.
///
/// ```
/// use openharness_core::{Envelope, SessionId, Store};
/// use openharness_store::MemoryStore;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let session = SessionId::new();
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// assert_eq!(store.append(&session, &[event.clone()], 0).await?, 1);
/// assert_eq!(store.clone().all_events(&session).await?, vec![event]);
/// # Ok::<_, openharness_core::StoreError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    sessions: Arc<Mutex<HashMap<SessionId, Log>>>,
    /// Sessions marked unfinished, with their notes.
    unfinished: Arc<Mutex<BTreeMap<SessionId, String>>>,
    notifier: Notifier,
}

/// One session's events, the index of their ids and the derived metadata.
#[derive(Debug)]
struct Log {
    events: Vec<Envelope>,
    seqs: HashMap<EventId, u64>,
    info: SessionInfo,
    /// Snapshot states by position, as the JSON text they were saved as.
    snapshots: BTreeMap<u64, String>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// The events of `session` with seqs in `range` (clamped), each copied by `copy`.
    fn copies(
        &self,
        session: &SessionId,
        range: Range<u64>,
        copy: impl Fn(&Envelope) -> Envelope,
    ) -> Vec<Envelope> {
        let sessions = self.lock();
        let Some(log) = sessions.get(session) else {
            return Vec::new();
        };
        let len = log.events.len();
        let start = usize::try_from(range.start).unwrap_or(usize::MAX).min(len);
        let end = usize::try_from(range.end).unwrap_or(usize::MAX).min(len);
        log.events
            .get(start..end)
            .map(|events| events.iter().map(copy).collect())
            .unwrap_or_default()
    }

    /// Locks the sessions. A panic while the lock was held cannot leave a log half-written
    /// (appends check everything before they change anything), so a poisoned lock is usable.
    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Log>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn describe(&self) -> String {
        "memory".to_owned()
    }

    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut marks = self
            .unfinished
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match note {
            Some(note) => marks.insert(session.clone(), note.to_owned()),
            None => marks.remove(session),
        };
        Ok(())
    }

    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        let marks = self
            .unfinished
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        Ok(marks
            .iter()
            .map(|(session, note)| (session.clone(), note.clone()))
            .collect())
    }

    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        let mut sessions = self.lock();
        let log = sessions.get(session);
        let len = log.map_or(0, |log| log.events.len() as u64);
        let plan = plan_append::<StoreError>(session, events, expected_seq, len, |id| {
            Ok(log.and_then(|log| log.seqs.get(id).copied()))
        })?;
        if let Plan::Done(len) = plan {
            return Ok(len);
        }

        let info = match log {
            Some(log) => {
                let mut info = log.info.clone();
                info.absorb(events);
                info.count += events.len() as u64;
                info
            }
            None => SessionInfo::from_first_events(session.clone(), events).ok_or_else(|| {
                StoreError::Invalid("cannot derive metadata from an empty batch".to_owned())
            })?,
        };
        let log = sessions.entry(session.clone()).or_insert_with(|| Log {
            events: Vec::new(),
            seqs: HashMap::new(),
            info: info.clone(),
            snapshots: BTreeMap::new(),
        });
        for (event, seq) in events.iter().zip(len..) {
            log.seqs.insert(event.id, seq);
            log.events.push(event.clone());
        }
        log.info = info;
        let end = log.events.len() as u64;
        drop(sessions);
        self.notifier.appended(session, len, events);
        Ok(end)
    }

    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        Ok(self.copies(session, range, Envelope::clone))
    }

    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        // The payloads the fold does not read are not copied.
        Ok(self.copies(session, range, |event| {
            if folds(&event.name) {
                event.clone()
            } else {
                Envelope {
                    payload: serde_json::Value::Null,
                    name: event.name.clone(),
                    state_hash: event.state_hash.clone(),
                    ..*event
                }
            }
        }))
    }

    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        Ok(self.lock().get(session).map(|log| log.info.clone()))
    }

    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        let mut infos: Vec<SessionInfo> =
            self.lock().values().map(|log| log.info.clone()).collect();
        crate::sort_oldest_first(&mut infos);
        Ok(infos)
    }

    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        let removed = self.lock().remove(session);
        if removed.is_some() {
            self.notifier.notify(session);
        }
        Ok(())
    }

    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        let mut sessions = self.lock();
        let log = sessions.get_mut(session);
        let len = log.as_ref().map_or(0, |log| log.events.len() as u64);
        match log {
            Some(log) if position <= len => {
                log.snapshots
                    .insert(position, crate::raw_snapshot_text(state));
                Ok(())
            }
            _ => Err(crate::snapshot_beyond_end(session, position, len)),
        }
    }

    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        Ok(self.lock().get(session).and_then(|log| {
            log.snapshots
                .range(..=at_most)
                .next_back()
                .map(|(position, text)| (*position, SnapshotJson::Text(text.as_bytes().to_vec())))
        }))
    }

    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        tail(self, &self.notifier, session, from_seq)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn events(n: usize) -> Vec<Envelope> {
        (0..n)
            .map(|k| Envelope::new("test:event", serde_json::json!({ "k": k }), None))
            .collect()
    }

    /// Writes `events` at the session's end without announcing them (as an append whose
    /// announcement has not run yet).
    fn write_unannounced(store: &MemoryStore, session: &SessionId, events: &[Envelope]) {
        let mut sessions = store.lock();
        let log = sessions.entry(session.clone()).or_insert_with(|| Log {
            events: Vec::new(),
            seqs: HashMap::new(),
            info: SessionInfo::from_first_events(session.clone(), events)
                .expect("a first batch gives metadata"),
            snapshots: BTreeMap::new(),
        });
        for event in events {
            log.seqs.insert(event.id, log.events.len() as u64);
            log.events.push(event.clone());
        }
    }

    /// The next `count` events of `subscription`, with their seqs.
    async fn next(subscription: &mut Subscription, count: usize) -> Vec<(u64, Envelope)> {
        let mut received = Vec::new();
        for _ in 0..count {
            let item = tokio::time::timeout(Duration::from_secs(5), subscription.next()).await;
            match item {
                Ok(Some(Ok(recorded))) => received.push((recorded.seq, recorded.event)),
                other => panic!("expected an event, got {other:?}"),
            }
        }
        received
    }

    async fn assert_quiet(subscription: &mut Subscription) {
        let item = tokio::time::timeout(Duration::from_millis(100), subscription.next()).await;
        assert!(item.is_err(), "more than was appended: {item:?}");
    }

    /// Announcements that arrive out of commit order neither lose nor repeat an event: a
    /// batch past the tail's next seq makes it read, a stale one changes nothing.
    #[tokio::test]
    async fn a_tail_reads_what_announcements_out_of_order_skip() {
        let store = MemoryStore::new();
        let session = SessionId::new();
        let mut tail = store.subscribe(&session, 0).await.expect("subscribe");
        let (first, second) = (events(2), events(3));
        write_unannounced(&store, &session, &first);
        write_unannounced(&store, &session, &second);
        // The second batch is announced before the first.
        store.notifier.appended(&session, 2, &second);
        let seqs: Vec<u64> = next(&mut tail, 5)
            .await
            .into_iter()
            .map(|(seq, _)| seq)
            .collect();
        assert_eq!(seqs, vec![0, 1, 2, 3, 4]);
        store.notifier.appended(&session, 0, &first);
        assert_quiet(&mut tail).await;
        // A batch that continues the tail is delivered as it was appended.
        let third = events(2);
        assert_eq!(store.append(&session, &third, 5).await.expect("append"), 7);
        assert_eq!(
            next(&mut tail, 2).await,
            vec![(5, third[0].clone()), (6, third[1].clone())]
        );
        assert_quiet(&mut tail).await;
    }
}
