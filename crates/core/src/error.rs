//! [`Error`]: everything the public API of a workflow can fail with, and what every other
//! error of Open Harness converts into, so `?` composes in a `main` returning
//! `Result<(), openharness::Error>`.

use crate::event::SessionId;
use crate::store::StoreError;

/// A failure of a workflow operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store failed. While recording, the run stopped at once; every event it acknowledged
    /// before the failure is in the log.
    #[error("{} failed{}", if store.is_empty() { "the store".to_owned() } else { format!("store `{store}`") }, session.as_ref().map(|s| format!(" on session {s}")).unwrap_or_default())]
    Store {
        /// The store's description (empty when the error came from the store directly, through
        /// `?`).
        store: String,
        /// The session being read or written, if any.
        session: Option<SessionId>,
        /// The cause.
        #[source]
        source: StoreError,
    },
    /// Another part of Open Harness failed (a tape, fork or cassette, a host, an import or
    /// export); the cause says what. Their own error types convert into this one with `?`.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
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
    /// The session is a fork whose parent is not in the store, so its state at position 0 (the
    /// parent's at the fork point) cannot be derived. Import the parent too (an export of the
    /// fork carries it).
    #[error("session {session} is forked from session {parent}, which is not in the store")]
    MissingParent {
        /// The fork.
        session: SessionId,
        /// Its missing parent.
        parent: SessionId,
    },
    /// The session was recorded by another workflow. The message names the one line that lets
    /// `workflow` read it (`WorkflowBuilder::reads`).
    #[error(
        "session {session} was recorded by workflow `{recorded}`, not `{workflow}`: if `{workflow}` is a version of `{recorded}`, add `.reads(\"{recorded}\")` to its `Workflow::builder(\"{workflow}\")` so it folds, forks and continues `{recorded}`'s sessions"
    )]
    WrongWorkflow {
        /// The session.
        session: SessionId,
        /// The workflow that recorded it.
        recorded: String,
        /// The workflow asked to load it.
        workflow: String,
    },
    /// Another turn holds the session: one running in this process (with
    /// [`RunOptions::refuse_if_busy`](crate::RunOptions::refuse_if_busy)), one running in
    /// another process (the store refused an append because another writer got there first),
    /// or one a crash cut off (finish it with [`Workflow::resume`](crate::Workflow::resume)).
    /// Nothing was recorded by the refused turn, and no model was called for it.
    #[error("session {session} is busy: {reason}")]
    SessionBusy {
        /// The session.
        session: SessionId,
        /// Which of the cases above, in words.
        reason: String,
    },
    /// An event after the session's latest snapshot no longer decodes into the workflow's
    /// events, so its state cannot be derived to continue it. Nothing was recorded.
    #[error("session {session}: the event at seq {seq} (`{name}`) no longer decodes: {message}")]
    Undecodable {
        /// The session.
        session: SessionId,
        /// The event's seq (0-based; the state after it is position `seq + 1`).
        seq: u64,
        /// The event's name.
        name: String,
        /// Why it does not decode.
        message: String,
    },
    /// An answer named an `input:requested` that the session does not have open: it does not
    /// exist, or it was already answered. Nothing was recorded.
    #[error(
        "session {session} has no open input request {request} (it does not exist or was already answered){}",
        open_list(open)
    )]
    RequestNotOpen {
        /// The session.
        session: SessionId,
        /// The request id that was given.
        request: crate::EventId,
        /// The requests that are open.
        open: Vec<crate::EventId>,
    },
}

fn open_list(open: &[crate::EventId]) -> String {
    if open.is_empty() {
        "; it has none open".to_owned()
    } else {
        let ids: Vec<String> = open.iter().map(ToString::to_string).collect();
        format!("; open: {}", ids.join(", "))
    }
}

/// A store's own error, through `?` (opening a store, say):
///
/// ```
/// fn open() -> Result<(), openharness_core::Error> {
///     Err(openharness_core::StoreError::Invalid("no such file".into()))?
/// }
/// let err = open().unwrap_err();
/// // The message says what failed; the cause is its source, printed once by a chain.
/// assert_eq!(err.to_string(), "the store failed");
/// assert_eq!(openharness_core::adapter::ErrorChain(&err).to_string(), "the store failed: invalid request: no such file");
/// ```
impl From<StoreError> for Error {
    fn from(source: StoreError) -> Self {
        Self::Store {
            store: String::new(),
            session: None,
            source,
        }
    }
}

/// A provider's error, through `?` (a provider called directly, outside a run).
impl From<crate::ProviderError> for Error {
    fn from(err: crate::ProviderError) -> Self {
        Self::Other(Box::new(err))
    }
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

/// An error with its causes, for a reporter: `top: cause: cause`, each message once.
///
/// Errors of Open Harness that wrap a cause return it from
/// [`source`](std::error::Error::source) and leave it out of their own message, so a reporter
/// that walks the chain (this type, anyhow's `{:#}`) prints every cause once. A cause whose
/// message the text so far already holds (an error of another library that repeats its
/// source) is skipped, so nothing is printed twice.
///
/// ```
/// use openharness_core::{Error, StoreError, adapter::ErrorChain};
///
/// let err = Error::from(StoreError::Invalid("no such file".into()));
/// assert_eq!(err.to_string(), "the store failed");
/// assert_eq!(
///     ErrorChain(&err).to_string(),
///     "the store failed: invalid request: no such file"
/// );
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ErrorChain<'a>(pub &'a (dyn std::error::Error + 'static));

impl std::fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut text = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(err) = cause {
            let message = err.to_string();
            if !message.is_empty() && !text.contains(&message) {
                text.push_str(": ");
                text.push_str(&message);
            }
            cause = err.source();
        }
        f.write_str(&text)
    }
}
