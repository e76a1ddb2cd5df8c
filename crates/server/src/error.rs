//! [`ApiError`]: every error answer of every route family (native, `/api/chat`,
//! `/api/workflow`, `/v1`), in one JSON shape, `{"error": {"code": "…", "message": "…"}}`,
//! with a status that fits; and the one table from the domain's errors (the host's, the
//! runtime's, the platform's) to those statuses and codes.
//!
//! | status | codes |
//! |---|---|
//! | `400` | `bad_request`: a body, query, header or id that cannot be read |
//! | `401` | `unauthorized`: no API key, or a wrong one |
//! | `404` | `not_found`: no such session, workflow, resource or route; `no_fork_point`: the parent has no such position or occurrence |
//! | `405` | `method_not_allowed`: the path takes other methods |
//! | `409` | `session_busy` (a turn runs), `session_waiting`, `ambiguous_request`, `request_not_open`, `has_forks`, `missing_parent` (an export of a fork whose parent is gone), `contended`, and the platform's conflicts (`agent_archived`, `provider_in_use`, …) |
//! | `413`, `415` | `payload_too_large`, `unsupported_media_type` |
//! | `422` | `invalid` (well-formed but not valid input), `unhosted_session`, `cannot_continue` |
//! | `429` | `too_many_streams` |
//! | `500` | `internal` |
//! | `503` | `no_provider`, `no_master_key`, `unknown_master_key`, `provider_key_unavailable`: this server's configuration |

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openharness_host::HostError;
use serde::Serialize;

/// An error answer: its HTTP status, a stable machine-readable code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable code, such as `not_found` or `session_busy`.
    pub code: &'static str,
    /// What went wrong, for people.
    pub message: String,
}

#[derive(Serialize)]
struct Body<'a> {
    error: Inner<'a>,
}

#[derive(Serialize)]
struct Inner<'a> {
    code: &'a str,
    message: &'a str,
}

impl ApiError {
    /// An error answer.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    /// A request the server cannot read (400).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// Something that does not exist (404).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// Well-formed input that is not valid (422).
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", message)
    }

    /// A fault of the server or its store (500); logged, as it is nobody's input.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        tracing::error!(error = %message, "a request failed");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// A session that runs a turn already (409 `session_busy`).
    pub fn session_busy(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "session_busy", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Body {
            error: Inner {
                code: self.code,
                message: &self.message,
            },
        };
        (self.status, Json(body)).into_response()
    }
}

impl From<HostError> for ApiError {
    fn from(err: HostError) -> Self {
        // Each cause once: the store that failed and why.
        let message = openharness_core::adapter::ErrorChain(&err).to_string();
        match err {
            HostError::SessionNotFound(_) => Self::not_found(message),
            HostError::UnknownWorkflow { .. } => Self::not_found(message),
            HostError::BadCursor(_) | HostError::BadFeedback(_) => Self::bad_request(message),
            HostError::NothingToAnswer { .. } => {
                Self::new(StatusCode::CONFLICT, "request_not_open", message)
            }
            HostError::AmbiguousRequest { .. } => {
                Self::new(StatusCode::CONFLICT, "ambiguous_request", message)
            }
            HostError::ReadOnly(_) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "read_only_workflow",
                message,
            ),
            HostError::Unhosted { .. } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unhosted_session",
                message,
            ),
            HostError::Workflow(err)
            | HostError::Tape(openharness_tape::TapeError::Harness(err)) => Self::from(err),
            HostError::Tape(openharness_tape::TapeError::NoForkPoint { .. }) => {
                // What is asked for does not exist in the parent's log: not found.
                Self::new(StatusCode::NOT_FOUND, "no_fork_point", message)
            }
            _ => Self::internal(message),
        }
    }
}

impl From<openharness_core::Error> for ApiError {
    fn from(err: openharness_core::Error) -> Self {
        use openharness_core::Error;
        // Each cause once: the store that failed and why.
        let message = openharness_core::adapter::ErrorChain(&err).to_string();
        match err {
            Error::SessionNotFound(_) => Self::not_found(message),
            Error::SessionBusy { .. } => Self::session_busy(message),
            Error::RequestNotOpen { .. } => {
                Self::new(StatusCode::CONFLICT, "request_not_open", message)
            }
            Error::WrongWorkflow { .. }
            | Error::MissingParent { .. }
            | Error::Undecodable { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "cannot_continue", message)
            }
            _ => Self::internal(message),
        }
    }
}

#[cfg(feature = "platform")]
impl From<openharness_platform::PlatformError> for ApiError {
    fn from(err: openharness_platform::PlatformError) -> Self {
        use openharness_platform::{KeyError, PlatformError};
        // Each cause once: the store that failed, the turn's error.
        let message = openharness_core::adapter::ErrorChain(&err).to_string();
        let unavailable = |code| {
            // This platform's configuration (no provider, no master key), not a fault.
            tracing::warn!(error = %message, "a platform request could not be served");
            Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message.clone())
        };
        match err {
            PlatformError::NotFound { .. } => Self::not_found(message),
            PlatformError::Conflict { code, .. } => Self::new(StatusCode::CONFLICT, code, message),
            PlatformError::Contended { .. } => {
                Self::new(StatusCode::CONFLICT, "contended", message)
            }
            PlatformError::Invalid(_) => Self::invalid(message),
            PlatformError::Keys(KeyError::NoMasterKey) => unavailable("no_master_key"),
            PlatformError::Keys(KeyError::UnknownKeyId { .. }) => unavailable("unknown_master_key"),
            PlatformError::Keys(_) => unavailable("provider_key_unavailable"),
            PlatformError::NoProvider => unavailable("no_provider"),
            PlatformError::Turn(err) => Self::from(err),
            PlatformError::Host(err) => Self::from(err),
            _ => Self::internal(message),
        }
    }
}
