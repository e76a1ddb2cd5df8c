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
//! - Session metadata is derived from the events: the workflow name from `workflow:started`,
//!   the parent from `session:forked`.
//! - `snapshot(session, &Snapshot)` saves a derived state at a position (0 to the session's
//!   length, replacing one saved there before); `latest_snapshot(session, at_most)` finds the
//!   one nearest at or before a position. Clearing a session clears its snapshots.
//! - `subscribe(session, from_seq)` yields every event with seq `>= from_seq`, in order and
//!   exactly once: first the stored ones (catch-up), then each new one as it is appended (live),
//!   with nothing missed or repeated at the boundary. It never ends by itself; drop it to stop.

use std::ops::Range;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::event::{Envelope, SessionId};

/// One stored session, as [`Store::sessions`] lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id.
    pub id: SessionId,
    /// Timestamp of its first event.
    pub created: DateTime<Utc>,
    /// Timestamp of its last event.
    pub last_event: DateTime<Utc>,
    /// Number of events (the session's length).
    pub count: u64,
    /// The workflow that recorded it (from `workflow:started`), if known.
    pub workflow: Option<String>,
    /// The session it was forked from (from `session:forked`), if any.
    pub parent: Option<SessionId>,
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
            if self.parent.is_none() && event.name == SessionForked::NAME {
                self.parent = event.payload["parent"]
                    .as_str()
                    .and_then(|p| p.parse().ok());
            }
            self.last_event = event.timestamp;
        }
    }
}

/// A state saved at a position of a session: the state after its first `position` events.
///
/// Snapshots are derived data (a fold of the events), kept so a replay can start near a position
/// instead of at 0. The state is JSON, as the workflow's state serializes.
///
/// ```
/// use openharness_core::Snapshot;
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

/// An event as a [`Subscription`] yields it: with its seq in the session.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The event's position in its session (0-based).
    pub seq: u64,
    /// The event.
    pub event: Envelope,
}

/// A live tail of one session, from [`Store::subscribe`]: the stored events from the requested
/// seq, then each new one as it is appended, each exactly once and in order.
///
/// It ends (returns `None`) only when the store side stops, after yielding an error that says
/// why; drop it to unsubscribe.
///
/// Backends build one with [`Subscription::channel`] and feed it from a task:
///
/// ```
/// use openharness_core::{Envelope, Recorded, Subscription};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let (tx, mut subscription) = Subscription::channel(16);
/// let event = Envelope::new("user:input", serde_json::json!({ "text": "hi" }), None);
/// tx.send(Ok(Recorded { seq: 0, event: event.clone() })).await.unwrap();
/// drop(tx);
/// let first = subscription.next().await.unwrap().unwrap();
/// assert_eq!((first.seq, first.event), (0, event));
/// assert!(subscription.next().await.is_none());
/// # });
/// ```
#[derive(Debug)]
pub struct Subscription {
    receiver: tokio::sync::mpsc::Receiver<Result<Recorded, StoreError>>,
}

/// The sending half of a [`Subscription`], held by the backend's task.
pub type SubscriptionSender = tokio::sync::mpsc::Sender<Result<Recorded, StoreError>>;

impl Subscription {
    /// A subscription fed through a bounded channel of `capacity` items (at least 1): the
    /// backend's task waits when the subscriber falls behind, so nothing piles up in memory.
    pub fn channel(capacity: usize) -> (SubscriptionSender, Self) {
        let (sender, receiver) = tokio::sync::mpsc::channel(capacity.max(1));
        (sender, Self { receiver })
    }

    /// The next event, waiting until one is appended. `None` once the backend has stopped
    /// (after an `Err` saying why).
    pub async fn next(&mut self) -> Option<Result<Recorded, StoreError>> {
        self.receiver.recv().await
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
    #[error("{0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
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

    /// Metadata of one session, or `None` if it has no events.
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError>;

    /// Every session, oldest first.
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError>;

    /// Deletes a session's events. Clearing an unknown session is not an error.
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError>;

    /// Saves `snapshot` for `session`, replacing one saved at the same position. The position
    /// may be 0 to the session's length; beyond it, or for a session with no events, is
    /// [`StoreError::Invalid`].
    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError>;

    /// The snapshot of `session` with the greatest position `<= at_most`, if any.
    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError>;

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
}

#[async_trait]
impl<T: Store + ?Sized> Store for std::sync::Arc<T> {
    fn describe(&self) -> String {
        (**self).describe()
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
    async fn session(&self, session: &SessionId) -> Result<Option<SessionInfo>, StoreError> {
        (**self).session(session).await
    }
    async fn sessions(&self) -> Result<Vec<SessionInfo>, StoreError> {
        (**self).sessions().await
    }
    async fn clear(&self, session: &SessionId) -> Result<(), StoreError> {
        (**self).clear(session).await
    }
    async fn snapshot(&self, session: &SessionId, snapshot: &Snapshot) -> Result<(), StoreError> {
        (**self).snapshot(session, snapshot).await
    }
    async fn latest_snapshot(
        &self,
        session: &SessionId,
        at_most: u64,
    ) -> Result<Option<Snapshot>, StoreError> {
        (**self).latest_snapshot(session, at_most).await
    }
    async fn subscribe(
        &self,
        session: &SessionId,
        from_seq: u64,
    ) -> Result<Subscription, StoreError> {
        (**self).subscribe(session, from_seq).await
    }
}
