//! [`HostError`]: what a host operation can fail with.

use openharness_core::{SessionId, StoreError};

/// A failure of a [`crate::Host`] operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// No registered workflow has this name.
    #[error(
        "no workflow named `{name}` is registered (registered: {})",
        list_names(known)
    )]
    UnknownWorkflow {
        /// The name asked for.
        name: String,
        /// The registered names.
        known: Vec<String>,
    },
    /// Two workflows were registered under one name.
    #[error("a workflow named `{0}` is registered already: each name may be registered once")]
    DuplicateWorkflow(String),
    /// The session was recorded by a workflow this host does not have (or by none it can
    /// tell), so its states cannot be derived; its events can still be read.
    #[error("session {session} was recorded by {}, which this host does not have (registered: {}); its events can still be read", recorded.as_deref().map_or_else(|| "an unknown workflow".to_owned(), |w| format!("workflow `{w}`")), list_names(known))]
    Unhosted {
        /// The session.
        session: SessionId,
        /// The workflow that recorded it, if its log says.
        recorded: Option<String>,
        /// The registered names.
        known: Vec<String>,
    },
    /// The session does not exist.
    #[error("session {0} not found")]
    SessionNotFound(SessionId),
    /// The store failed.
    #[error("store `{store}` failed")]
    Store {
        /// The store's description.
        store: String,
        /// The cause.
        #[source]
        source: StoreError,
    },
    /// A workflow operation failed (busy session, request not open, store failure while
    /// running, ...).
    #[error(transparent)]
    Workflow(#[from] openharness_core::Error),
    /// A tape, fork or cassette operation failed.
    #[error(transparent)]
    Tape(#[from] openharness_tape::TapeError),
    /// The workflow is registered to read its sessions only ([`crate::Host::reader`]).
    #[error(
        "workflow `{0}` is registered here to read its sessions only: its turns run in the program that runs it"
    )]
    ReadOnly(String),
    /// A turn this request waited on failed (its error, as the turn reported it), or ended
    /// before it could answer.
    #[error("the turn failed: {0}")]
    TurnFailed(String),
    /// An answer was given where no request is open (a fork point before any question, or
    /// after its answer).
    #[error("session {session} waits for no answer there: no request is open at that point")]
    NothingToAnswer {
        /// The session.
        session: SessionId,
    },
    /// An answer named no request where several are open.
    #[error("session {session} waits for {} answers there ({}): name the request answered", open.len(), open.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))]
    AmbiguousRequest {
        /// The session.
        session: SessionId,
        /// The open requests.
        open: Vec<openharness_core::EventId>,
    },
    /// Feedback (an annotation, a score) that cannot be recorded as given: why.
    #[error("{0}")]
    BadFeedback(String),
    /// A session list's cursor is not one a page gave.
    #[error("`{0}` is not a cursor of a session list (pass a page's nextAfter as it is)")]
    BadCursor(String),
    /// A state did not encode as JSON.
    #[error("the state of session {session} at position {position} does not encode as JSON")]
    Encode {
        /// The session.
        session: SessionId,
        /// The position.
        position: u64,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// A host error as the workflow error every part of Open Harness composes into: a workflow
/// failure as itself, anything else as [`openharness_core::Error::Other`].
impl From<HostError> for openharness_core::Error {
    fn from(err: HostError) -> Self {
        match err {
            HostError::Workflow(err) => err,
            HostError::Tape(err) => err.into(),
            other => Self::Other(Box::new(other)),
        }
    }
}

/// Names as `` `a`, `b` `` for a message, or `none`: how the host's errors (and the CLI's,
/// which name the same registered workflows) list names.
///
/// ```
/// assert_eq!(openharness_host::list_names(&["chat".to_owned(), "plan".to_owned()]), "`chat`, `plan`");
/// assert_eq!(openharness_host::list_names(&[]), "none");
/// ```
pub fn list_names(names: &[String]) -> String {
    if names.is_empty() {
        "none".to_owned()
    } else {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl HostError {
    /// The one refusal of a session whose turn is running (in this process, or in another
    /// sharing the store): [`openharness_core::Error::SessionBusy`] saying why, and that
    /// nothing was recorded. Every surface (HTTP `409 session_busy`, the CLI, `/v1`) answers
    /// with it.
    ///
    /// ```
    /// let session = openharness_core::SessionId::new();
    /// let busy = openharness_host::HostError::busy(&session, "a turn is running on it");
    /// assert!(busy.to_string().contains("nothing was recorded"));
    /// ```
    pub fn busy(session: &SessionId, why: &str) -> Self {
        Self::Workflow(openharness_core::Error::SessionBusy {
            session: session.clone(),
            reason: format!("{why}; nothing was recorded"),
        })
    }

    pub(crate) fn store(store: &dyn openharness_core::Store, source: StoreError) -> Self {
        Self::Store {
            store: store.describe(),
            source,
        }
    }
}
