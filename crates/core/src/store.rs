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
}
