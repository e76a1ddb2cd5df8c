//! The [`Store`] port: where sessions' event logs live.
//!
//! Implemented by `openharness-store` (memory, redb, PostgreSQL). The contract, which one
//! conformance suite checks for every backend:
//!
//! - `append(session, events, expected_seq)` writes all the events or none; it fails with
//!   [`StoreError::Conflict`] (carrying the actual length) when the session is not at
//!   `expected_seq`, and it is idempotent by event id: appending the same events again at the
//!   same seq (after a lost acknowledgement) stores them once and succeeds. It returns only
//!   when the events are durable (for durable backends).
//! - `events(session, range)` returns the events with seqs in `range`, in order (seq = index).
//!   [`stream_events`](Store::stream_events) yields the same events as a [`Stream`] of
//!   [`Recorded`], reading up to [`EVENT_PAGE`] events at a time, so a long session is never
//!   held in memory whole.
//! - Session metadata is derived from the events: the workflow name from `workflow:started`,
//!   the parent from `session:forked`.
//! - `snapshot_json(session, position, state)` saves a derived state, JSON text, at a position
//!   (0 to the session's length, replacing one saved there before); `latest_snapshot_json(session,
//!   at_most)` finds the one nearest at or before a position. Clearing a session clears its
//!   snapshots. `snapshot` and `latest_snapshot` are the same with a [`Snapshot`] value, provided
//!   over those two.
//! - `subscribe(session, from_seq)` yields every event with seq `>= from_seq`, in order and
//!   exactly once: first the stored ones (catch-up), then each new one as it is appended (live),
//!   with nothing missed or repeated at the boundary. It never ends by itself; drop it to stop.
//!   A [`Subscription`] is a [`Stream`](futures_core::Stream) too.

mod stream;
mod subscription;

use std::ops::Range;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use stream::{EVENT_PAGE, EventStream};

/// Which events a fold decodes, by name: given to [`Store::events_for_fold`], which may leave
/// the payloads of the others out. A workflow's is its event set's
/// [`EventSet::contains`](crate::EventSet::contains).
pub type Folded = fn(&str) -> bool;
pub use subscription::{Recorded, Subscription, SubscriptionSender};

use crate::claim::Claim;
use crate::event::{Envelope, SessionId};
use crate::status::SessionStatus;

/// One stored session, as [`Store::sessions`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// Timestamp of its first event.
    pub created: DateTime<Utc>,
    /// Timestamp of its last event (`lastEvent` on the wire; `last_event` is read too).
    #[serde(alias = "last_event")]
    pub last_event: DateTime<Utc>,
    /// Number of events (the session's length).
    pub count: u64,
    /// The workflow that recorded it (from `workflow:started`), if known.
    pub workflow: Option<String>,
    /// The session it was forked from (from `session:forked`), if any.
    pub parent: Option<SessionId>,
    /// What the session is doing, from its last event (see [`SessionStatus::after`]).
    #[serde(default)]
    pub status: SessionStatus,
}

impl SessionInfo {
    /// Metadata for a session whose first events are `events` (at least one).
    pub fn from_first_events(id: SessionId, events: &[Envelope]) -> Option<Self> {
        let first = events.first()?;
        let last = events.last()?;
        let mut info = Self {
            id,
            created: first.timestamp,
            last_event: last.timestamp,
            count: 0,
            workflow: None,
            parent: None,
            status: SessionStatus::after(&last.name, &last.payload),
        };
        info.absorb(events);
        info.count = events.len() as u64;
        Some(info)
    }

    /// Updates metadata with newly appended events (without changing `count`).
    pub fn absorb(&mut self, events: &[Envelope]) {
        use crate::builtin::{SessionForked, WorkflowStarted};
        use crate::event::Event;
        for event in events {
            if self.workflow.is_none() && event.name == WorkflowStarted::NAME {
                self.workflow = event.payload["workflow"].as_str().map(str::to_owned);
            }
            if self.parent.is_none()
                && event.name == SessionForked::NAME
                && let Ok(forked) = event.decode::<SessionForked>()
            {
                self.parent = Some(forked.parent);
                if self.workflow.is_none() {
                    self.workflow = forked.workflow;
                }
            }
            self.last_event = event.timestamp;
        }
        if let Some(last) = events.last() {
            self.status = SessionStatus::after(&last.name, &last.payload);
        }
    }
}

/// A state saved at a position of a session: the state after its first `position` events.
///
/// Snapshots are derived data (a fold of the events), kept so a replay can start near a position
/// instead of at 0. The state is JSON, as the workflow's state serializes.
///
/// ```
/// use openharness_core::adapter::Snapshot;
/// let snapshot = Snapshot::new(12, serde_json::json!({ "done": 3 }));
/// assert_eq!(snapshot.position, 12);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// How many events were folded into `state`.
    pub position: u64,
    /// The state, as JSON.
    pub state: serde_json::Value,
}

impl Snapshot {
    /// A snapshot of `state` after `position` events.
    pub fn new(position: u64, state: serde_json::Value) -> Self {
        Self { position, state }
    }
}

/// A snapshot's state as [`Store::latest_snapshot_json`] hands it out: a JSON value, or the
/// JSON text it is stored as.
///
/// ```
/// use openharness_core::adapter::SnapshotJson;
/// let text = SnapshotJson::Text(br#"{"done":3}"#.to_vec());
/// assert_eq!(text.byte_len(), 10);
/// let value: serde_json::Value = text.decode()?;
/// assert_eq!(value, serde_json::json!({ "done": 3 }));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotJson {
    /// The state, decoded into a JSON value already.
    Value(serde_json::Value),
    /// The state's JSON text, as stored.
    Text(Vec<u8>),
}

impl SnapshotJson {
    /// Decodes the state into `T`, from the text in one pass when there is text.
    pub fn decode<T: serde::de::DeserializeOwned>(self) -> Result<T, serde_json::Error> {
        match self {
            Self::Value(value) => serde_json::from_value(value),
            Self::Text(text) => serde_json::from_slice(&text),
        }
    }

    /// The length of the state's JSON text in bytes (counted, for a value, without writing it).
    pub fn byte_len(&self) -> u64 {
        match self {
            Self::Value(value) => json_len(value),
            Self::Text(text) => text.len() as u64,
        }
    }
}

/// The length in bytes of `value`'s JSON encoding, counted without building it (`u64::MAX` if
/// it does not serialize). What the runtime spaces its snapshots by.
pub(crate) fn json_len(value: &impl Serialize) -> u64 {
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => u64::MAX,
    }
}

/// A failure of a [`Store`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The session was not at the expected seq (another writer got there first).
    #[error(
        "append to session {session} expected seq {expected} but the session is at seq {actual}"
    )]
    Conflict {
        /// The session.
        session: SessionId,
        /// The seq the writer expected.
        expected: u64,
        /// The session's actual length.
        actual: u64,
    },
    /// The append was made under a claim that another claim has since replaced: this
    /// process lost the session (its claim's connection ended, say) and another process claimed
    /// it. Nothing of the batch was recorded; the turn that made it must stop, since another
    /// process now runs the session. Only stores shared between processes fence (PostgreSQL).
    #[error(
        "append to session {session} refused: it was made under claim {token}, but the session has been claimed again since (claim {current}); another process runs it now, and nothing of this batch was recorded"
    )]
    Fenced {
        /// The session.
        session: SessionId,
        /// The fencing token of the claim the append was made under.
        token: u64,
        /// The session's token now.
        current: u64,
    },
    /// A stored record could not be read back.
    #[error("corrupt record in session {session} at seq {seq}: {message}")]
    Corrupt {
        /// The session.
        session: SessionId,
        /// The record's seq.
        seq: u64,
        /// What is wrong with it.
        message: String,
    },
    /// The request itself is invalid (for example, events whose ids repeat within one batch).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The backend failed (I/O, database, connection).
    ///
    /// Transparent: it shows the backend's error and its causes once each, so an error
    /// reporter that prints the chain (`{:#}` of anyhow, eyre) does not print it twice.
    #[error(transparent)]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl StoreError {
    /// Wraps any backend error.
    pub fn backend(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend(Box::new(err))
    }
}

/// An append-only log of events per session. See the module docs for the contract.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// A short description for error messages, such as `redb:.openharness/store.redb`.
    fn describe(&self) -> String;

    /// Whether [`snapshot_json`](Self::snapshot_json) can save at all: `false` for a store opened
    /// read-only, so a long state read does not prepare snapshots to leave behind that the
    /// store would refuse. The default is `true`.
    ///
    /// ```
    /// use openharness_core::Store;
    ///
    /// fn mode(store: &dyn Store) -> &'static str {
    ///     if store.saves_snapshots() { "read-write" } else { "read-only" }
    /// }
    /// ```
    fn saves_snapshots(&self) -> bool {
        true
    }

    /// Appends `events` to `session`, which must currently hold exactly `expected_seq` events.
    /// Returns the session's new length.
    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError>;

    /// The events of `session` with seqs in `range` (clamped to the session's length), in
    /// order. An unknown session has no events.
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError>;

    /// [`events`](Self::events) for a fold: the events whose name `folds` refuses may come
    /// without their payload ([`serde_json::Value::Null`] in its place), so a backend need not
    /// decode what the reader never looks at. A state read folds only the events its
    /// handlers decode (`S::Events::contains`); the agents' requests and replies, most of a
    /// log's bytes, it skips by name. Such a payload is then not checked either.
    ///
    /// The default returns every payload, as `events` does; the redb and in-memory stores
    /// leave the others out (the race bench's slowest cold read at 5,000 tasks, 3,000 events
    /// past a snapshot, went from 5.0–5.9 ms to 3.5–3.7 ms).
    ///
    /// ```
    /// use openharness_core::{Envelope, SessionId, Store, StoreError};
    ///
    /// /// The texts of a session's user inputs; other payloads are not decoded.
    /// async fn inputs(store: &impl Store, session: &SessionId) -> Result<Vec<String>, StoreError> {
    ///     let events = store
    ///         .events_for_fold(session, 0..u64::MAX, |name| name == "user:input")
    ///         .await?;
    ///     Ok(events
    ///         .iter()
    ///         .filter(|event| event.name == "user:input")
    ///         .filter_map(|event| event.payload["text"].as_str().map(str::to_owned))
    ///         .collect())
    /// }
    /// ```
    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        let _ = folds;
        self.events(session, range).await
    }

    /// Metadata of one session, or `None` if it has no events.
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError>;

    /// Every session, oldest first.
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError>;

    /// Deletes a session's events. Clearing an unknown session is not an error.
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError>;

    /// Saves `snapshot` for `session`: [`Store::snapshot_json`] of its state written as JSON
    /// text (a state that cannot be written is [`StoreError::Invalid`]). Implement
    /// `snapshot_json`, not this.
    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        let position = snapshot.position;
        let state = serde_json::value::to_raw_value(&snapshot.state).map_err(|err| {
            StoreError::Invalid(format!(
                "the snapshot of session {session} at {position} cannot be written as JSON: {err}"
            ))
        })?;
        self.snapshot_json(session, position, state).await
    }

    /// Saves the state `state`, JSON text, as `session`'s snapshot at `position`, replacing one
    /// saved there. The position may be 0 to the session's length; beyond it, or for a session
    /// with no events, is [`StoreError::Invalid`]. The runtime's snapshots come this way,
    /// serialized once: a store that keeps snapshots as text saves it as it is, without
    /// building a [`serde_json::Value`] and writing it out again (for a large state, most of
    /// the save). Stores that wrap another pass it on.
    ///
    /// ```
    /// # use openharness_core::{Envelope, SessionId, Store};
    /// # async fn save(store: &impl Store) -> Result<(), Box<dyn std::error::Error>> {
    /// let session: SessionId = "chat".parse()?;
    /// let input = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
    /// store.append(&session, &[input], 0).await?;
    /// let state = serde_json::value::to_raw_value(&serde_json::json!({ "turns": 1 }))?;
    /// store.snapshot_json(&session, 1, state).await?;
    /// let (position, saved) = store.latest_snapshot_json(&session, 1).await?.ok_or("no snapshot")?;
    /// assert_eq!(position, 1);
    /// assert_eq!(saved.decode::<serde_json::Value>()?, serde_json::json!({ "turns": 1 }));
    /// # Ok(()) }
    /// ```
    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError>;

    /// The snapshot of `session` with the greatest position `<= at_most`, if any:
    /// [`Store::latest_snapshot_json`] with its state decoded (stored text that is not JSON is
    /// [`StoreError::Corrupt`]). Implement `latest_snapshot_json`, not this.
    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        let Some((position, state)) = self.latest_snapshot_json(session, at_most).await? else {
            return Ok(None);
        };
        let state = state.decode().map_err(|err| StoreError::Corrupt {
            session: session.clone(),
            seq: position,
            message: format!("stored snapshot state is not valid JSON: {err}"),
        })?;
        Ok(Some(Snapshot::new(position, state)))
    }

    /// The snapshot of `session` with the greatest position `<= at_most`, if any: its position
    /// and its state as the store holds it. A store that keeps snapshots as text answers
    /// [`SnapshotJson::Text`], so the reader decodes it straight into its state type without
    /// building a [`serde_json::Value`] first (for a 144 KB state, most of the read); one that
    /// keeps values answers [`SnapshotJson::Value`]. Stores that wrap another pass it on.
    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError>;

    /// A live tail of `session` from `from_seq`: every stored event with seq `>= from_seq`,
    /// then each new one as it is appended, exactly once and in order. See [`Subscription`].
    ///
    /// Subscribing to a session that does not exist yet is allowed: its first events arrive
    /// when they are appended. After [`clear`](Self::clear), events appended again at seqs the
    /// subscriber has already passed are not delivered; subscribe again.
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError>;

    /// Every event of `session`.
    async fn all_events(&self, session: &SessionId) -> Result<Vec<Envelope>, StoreError> {
        self.events(session, 0..u64::MAX).await
    }

    /// Makes every append made so far durable. The runtime calls it at the end of every turn.
    ///
    /// For a store told to defer durability (redb's `RedbDurability::Periodic` or
    /// `TurnEnd`), this is where a turn's events reach the disk. The default does nothing:
    /// the store's appends are durable when they return. A store that wraps another must
    /// pass it on.
    async fn sync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Claims the right to run `session`'s turns among every process sharing this store:
    /// `Ok(None)` when another process holds it. The claim lasts until the returned
    /// [`Claim`] is dropped, or the holding process dies.
    ///
    /// It is how replicas on one database decide who runs a session and notice that the one
    /// running it died (its claim is free again while the session's last turn is unfinished:
    /// then `resume` it). Within one process, exclusion is the caller's business (a
    /// workflow's per-session locks); a store may grant a second claim of the same session to
    /// the same process or refuse it.
    ///
    /// The default, for stores one process owns (memory; redb, whose file only one process can
    /// open), grants every claim. A store that wraps another must pass it on.
    ///
    /// ```
    /// # async fn demo(store: &impl openharness_core::Store, session: openharness_core::SessionId) -> Result<(), openharness_core::StoreError> {
    /// if let Some(claim) = store.claim(&session).await? {
    ///     // run or resume the session's turn, then
    ///     drop(claim);
    /// }
    /// # Ok(()) }
    /// ```
    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        let _ = session;
        Ok(Some(Claim::unshared()))
    }

    /// Marks `session` unfinished, with a `note` saying what is under way, or clears its mark
    /// (`None`). A writer that records a session in several appends (an import) sets the mark
    /// before its first append and clears it after its last, so that a writer killed in
    /// between leaves a session that reads as a prefix marked as one: `openharness sessions`
    /// and `check` show it, and running the writer again finishes it. Marks are kept apart from
    /// the session's events, which they never change; clearing a session does not clear its
    /// mark.
    ///
    /// The default keeps no marks (a store whose sessions cannot outlive a killed writer, or
    /// that records nothing across processes): setting one does nothing and
    /// [`unfinished`](Self::unfinished) lists none. A store that wraps another must pass both
    /// on.
    ///
    /// ```
    /// # async fn demo(store: &impl openharness_core::Store, session: openharness_core::SessionId) -> Result<(), openharness_core::StoreError> {
    /// store.mark_unfinished(&session, Some("import of export.jsonl: 1000 of 5000 events")).await?;
    /// // … the appends …
    /// store.mark_unfinished(&session, None).await?;
    /// # Ok(()) }
    /// ```
    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        let _ = (session, note);
        Ok(())
    }

    /// The sessions [marked unfinished](Self::mark_unfinished), with their notes, in session id
    /// order.
    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        Ok(Vec::new())
    }

    /// The events of `session` with seqs in `range` (clamped to the session's length), in
    /// order, each with its seq, as a stream that holds at most two pages of events in memory:
    /// for exporting or scanning sessions of any length. An unknown session, an empty range and
    /// a range past the end give an empty stream; a failed read is yielded, then the stream
    /// ends.
    ///
    /// The default reads up to [`EVENT_PAGE`] events at a time through
    /// [`events`](Self::events) (see [`EventStream::paged`]: each page is read while the one
    /// before is taken); a backend may override it to stream rows natively.
    /// Each page is read on its own, so the stream is not one consistent snapshot: an event
    /// appended meanwhile appears if its seq is still ahead. To follow a session live, use
    /// [`subscribe`](Self::subscribe).
    ///
    /// ```
    /// use openharness_core::{SessionId, Store, StoreError};
    ///
    /// /// How many events of a session of any length are tool calls.
    /// async fn tool_calls(store: &impl Store, session: &SessionId) -> Result<u64, StoreError> {
    ///     let mut events = store.stream_events(session, 0..u64::MAX);
    ///     let mut calls = 0;
    ///     while let Some(recorded) = events.next().await {
    ///         calls += u64::from(recorded?.event.name == "tool:called");
    ///     }
    ///     Ok(calls)
    /// }
    /// ```
    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        EventStream::paged(self, session, range, EVENT_PAGE)
    }

    /// [`stream_events`](Self::stream_events) for a fold: the events whose name `folds`
    /// refuses may come without their payload, as from
    /// [`events_for_fold`](Self::events_for_fold), which the default reads its pages through
    /// ([`EventStream::paged_for_fold`]).
    ///
    /// ```
    /// use openharness_core::{SessionId, Store, StoreError};
    ///
    /// /// How many tasks a session of any length completed, decoding only those events.
    /// async fn completed(store: &impl Store, session: &SessionId) -> Result<u64, StoreError> {
    ///     let is_completion = |name: &str| name == "task:completed";
    ///     let mut events = store.stream_events_for_fold(session, 0..u64::MAX, is_completion);
    ///     let mut done = 0;
    ///     while let Some(recorded) = events.next().await {
    ///         done += u64::from(recorded?.event.name == "task:completed");
    ///     }
    ///     Ok(done)
    /// }
    /// ```
    fn stream_events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> EventStream<'_> {
        EventStream::paged_for_fold(self, session, range, EVENT_PAGE, folds)
    }
}

#[async_trait]
impl<T: Store + ?Sized> Store for std::sync::Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
    }
    fn saves_snapshots(&self) -> bool {
        (**self).saves_snapshots()
    }

    async fn sync(&self) -> Result<(), StoreError> {
        (**self).sync().await
    }
    async fn claim(&self, session: &SessionId) -> Result<Option<Claim>, StoreError> {
        (**self).claim(session).await
    }
    async fn mark_unfinished(
        &self,
        session: &SessionId,
        note: Option<&str>,
    ) -> Result<(), StoreError> {
        (**self).mark_unfinished(session, note).await
    }
    async fn unfinished(&self) -> Result<Vec<(SessionId, String)>, StoreError> {
        (**self).unfinished().await
    }
    async fn append(
        &self,
        session: &SessionId,
        events: &[Envelope],
        expected_seq: u64,
    ) -> Result<u64, StoreError> {
        (**self).append(session, events, expected_seq).await
    }
    async fn events(
        &self,
        session: &SessionId,
        range: Range<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        (**self).events(session, range).await
    }
    fn stream_events(&self, session: &SessionId, range: Range<u64>) -> EventStream<'_> {
        (**self).stream_events(session, range)
    }
    async fn events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> Result<Vec<Envelope>, StoreError> {
        (**self).events_for_fold(session, range, folds).await
    }
    fn stream_events_for_fold(
        &self,
        session: &SessionId,
        range: Range<u64>,
        folds: Folded,
    ) -> EventStream<'_> {
        (**self).stream_events_for_fold(session, range, folds)
    }
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        (**self).session(session).await
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        (**self).sessions().await
    }
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        (**self).clear(session).await
    }
    async fn snapshot_json(
        &self,
        session: &SessionId,
        position: u64,
        state: Box<serde_json::value::RawValue>,
    ) -> Result<(), StoreError> {
        (**self).snapshot_json(session, position, state).await
    }
    async fn latest_snapshot_json(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<(u64, SnapshotJson)>, StoreError> {
        (**self).latest_snapshot_json(session, at_most).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        (**self).subscribe(session, from_seq).await
    }
}

#[cfg(test)]
pub(crate) mod tests;
