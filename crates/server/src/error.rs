//! [`ApiError`]: every error answer of the server, in one JSON shape:
//! `{"error": {"code": "…", "message": "…"}}` with a status that fits.

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
        let message = openharness_core::ErrorChain(&err).to_string();
        match err {
            HostError::SessionNotFound(_) => Self::not_found(message),
            HostError::UnknownWorkflow { .. } => Self::not_found(message),
            HostError::Unhosted { .. } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "unhosted_session",
                message,
            ),
            HostError::Workflow(err)
            | HostError::Tape(openharness_tape::TapeError::Harness(err)) => Self::from(err),
            HostError::Tape(openharness_tape::TapeError::NoForkPoint { .. }) => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "no_fork_point", message)
            }
            _ => {
                tracing::error!(error = %message, "a request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}

impl From<openharness_core::Error> for ApiError {
    fn from(err: openharness_core::Error) -> Self {
        use openharness_core::Error;
        // Each cause once: the store that failed and why.
        let message = openharness_core::ErrorChain(&err).to_string();
        match err {
            Error::SessionNotFound(_) => Self::not_found(message),
            Error::SessionBusy { .. } => Self::new(StatusCode::CONFLICT, "session_busy", message),
            Error::RequestNotOpen { .. } => {
                Self::new(StatusCode::CONFLICT, "request_not_open", message)
            }
            Error::WrongWorkflow { .. }
            | Error::MissingParent { .. }
            | Error::Undecodable { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "cannot_continue", message)
            }
            _ => {
                tracing::error!(error = %message, "a request failed");
                Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
            }
        }
    }
}
