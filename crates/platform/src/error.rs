//! [`PlatformError`]: what a platform operation can fail with. The HTTP layer
//! (`openharness-server`'s `/v1` routes) answers each in its one error table: what does not
//! exist is `404`, a change the current state forbids `409` (with the conflict's code),
//! input that is well-formed but invalid `422`, provider keys that cannot be sealed or opened
//! here, or no provider, `503`.

use openharness_core::StoreError;

use crate::keys::KeyError;

/// A failed platform operation.
///
/// ```
/// use openharness_platform::PlatformError;
/// let err = PlatformError::NotFound { kind: "agent", id: "42".into() };
/// assert_eq!(err.to_string(), "no agent with id 42");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlatformError {
    /// No such resource: `404`.
    #[error("no {kind} with id {id}")]
    NotFound {
        /// What kind of resource (`agent`, `llm_provider`, ...).
        kind: &'static str,
        /// The id asked for.
        id: String,
    },
    /// The change conflicts with the current state (a model still in use, an archived agent):
    /// `409`.
    #[error("{message}")]
    Conflict {
        /// A stable code, such as `provider_in_use`.
        code: &'static str,
        /// What conflicts, for people.
        message: String,
    },
    /// Well-formed input that is not valid (an empty name, an unknown capability): `422`.
    #[error("{0}")]
    Invalid(String),
    /// Provider keys cannot be sealed or opened (no master key, an unknown key id).
    #[error(transparent)]
    Keys(#[from] KeyError),
    /// The platform log holds a record this version cannot read.
    #[error("the platform log {log} has an unreadable record at seq {seq}: {message}")]
    Corrupt {
        /// The log's session id.
        log: String,
        /// The record's seq.
        seq: u64,
        /// Why it cannot be read.
        message: String,
    },
    /// Other writers kept changing the platform log; the change was not made.
    #[error("the platform log kept changing under {attempts} attempts; try again")]
    Contended {
        /// How many times the change was tried.
        attempts: u32,
    },
    /// The store failed.
    #[error("the store failed")]
    Store(#[from] StoreError),
    /// No model provider is configured to answer messages.
    #[error("this platform has no model provider configured to answer messages")]
    NoProvider,
    /// A turn could not be started.
    #[error("the turn could not run")]
    Turn(#[from] openharness_core::Error),
    /// The host could not start or run a turn (a session busy here or in another process is
    /// [`HostError::busy`](openharness_host::HostError::busy): `409 session_busy`).
    #[error(transparent)]
    Host(#[from] openharness_host::HostError),
}

impl PlatformError {
    /// A `409` with `code`.
    pub(crate) fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }
}
