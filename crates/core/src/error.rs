//! [`Error`]: everything the public API of a workflow can fail with.

use crate::event::SessionId;
use crate::store::StoreError;

/// A failure of a workflow operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed. While recording, the run stopped at once; every event it acknowledged
    /// before the failure is in the log.
    #[error("store `{store}` failed{}: {source}", session.as_ref().map(|s| format!(" on session {s}")).unwrap_or_default())]
    Store {
        /// The store's description.
        store: String,
        /// The session being read or written, if any.
        session: Option<SessionId>,
        /// The cause.
        #[source]
        source: StoreError,
    },
    /// The workflow was built or run with an invalid configuration.
    #[error("workflow `{workflow}` is misconfigured: {message}")]
    Config {
        /// The workflow's name.
        workflow: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// The session does not exist in the store.
    #[error("session {0} not found")]
    SessionNotFound(SessionId),
    /// The session was recorded by another workflow.
    #[error("session {session} was recorded by workflow `{recorded}`, not `{workflow}`")]
    WrongWorkflow {
        /// The session.
        session: SessionId,
        /// The workflow that recorded it.
        recorded: String,
        /// The workflow asked to load it.
        workflow: String,
    },
}

impl Error {
    pub(crate) fn store(
        store: &dyn crate::Store,
        session: Option<&SessionId>,
        source: StoreError,
    ) -> Self {
        Self::Store {
            store: store.describe(),
            session: session.cloned(),
            source,
        }
    }
}
