//! [`PlatformError`]: what a platform operation can fail with, and its HTTP answer in the
//! server's error shape, `{"error": {"code": "…", "message": "…"}}`: `401` without the API
//! key, `404` for what does not exist (a path included), `405` for a method a path does not
//! take, `409` for a change the current state forbids, `422` for input that is well-formed
//! JSON but invalid, `503` when provider keys cannot be sealed or opened here. The codes are
//! the server's where both have the case (`not_found`, `bad_request`, `session_busy`,
//! `unauthorized`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use openharness_core::StoreError;

use crate::keys::KeyError;

/// A failed platform operation.
///
/// ```
/// use openharness_platform::PlatformError;
/// let err = PlatformError::NotFound { kind: "agent", id: "42".into() };
/// assert_eq!(err.to_string(), "no agent with id 42");
/// assert_eq!(err.code(), "not_found");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlatformError {
    /// The request cannot be read (bad JSON, a bad query, an id that is not a UUID): `400`.
    #[error("{0}")]
    BadRequest(String),
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
    /// No `/v1` route has this path: `404`.
    #[error("no /v1 route is `{method} {path}`: GET /openapi.json lists the routes")]
    NoRoute {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
    },
    /// The path exists but does not take this method: `405`.
    #[error("`{path}` does not take {method}: GET /openapi.json lists the methods each path takes")]
    MethodNotAllowed {
        /// The request's method.
        method: String,
        /// The request's path.
        path: String,
    },
    /// An API key is required and none, or a wrong one, was sent: `401`.
    #[error(
        "this server requires an API key: send `Authorization: Bearer <key>` (or the bare key, or `x-api-key: <key>`)"
    )]
    Unauthorized,
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
}

impl PlatformError {
    /// The HTTP status of the answer.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::NotFound { .. } | Self::NoRoute { .. } => StatusCode::NOT_FOUND,
            Self::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Conflict { .. } | Self::Contended { .. } => StatusCode::CONFLICT,
            Self::Invalid(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Keys(_) | Self::NoProvider => StatusCode::SERVICE_UNAVAILABLE,
            Self::Turn(openharness_core::Error::SessionBusy { .. }) => StatusCode::CONFLICT,
            Self::Turn(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Corrupt { .. } | Self::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable, machine-readable code of the answer.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::NotFound { .. } | Self::NoRoute { .. } => "not_found",
            Self::MethodNotAllowed { .. } => "method_not_allowed",
            Self::Unauthorized => "unauthorized",
            Self::Conflict { code, .. } => code,
            Self::Invalid(_) => "invalid",
            Self::Keys(KeyError::NoMasterKey) => "no_master_key",
            Self::Keys(KeyError::UnknownKeyId { .. }) => "unknown_master_key",
            Self::Keys(_) => "provider_key_unavailable",
            Self::Contended { .. } => "contended",
            Self::NoProvider => "no_provider",
            Self::Turn(openharness_core::Error::SessionBusy { .. }) => "session_busy",
            Self::Turn(_) => "internal",
            Self::Corrupt { .. } | Self::Store(_) => "internal",
        }
    }

    /// A `409` with `code`.
    pub(crate) fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::Conflict {
            code,
            message: message.into(),
        }
    }
}

impl IntoResponse for PlatformError {
    fn into_response(self) -> Response {
        let status = self.status();
        // A 503 is this platform's configuration (no provider, no master key), not a fault.
        // The message names each cause once (the store's failure, the turn's error).
        let message = openharness_core::ErrorChain(&self).to_string();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            tracing::warn!(error = %message, "a platform request could not be served");
        } else if status.is_server_error() {
            tracing::error!(error = %message, "a platform request failed");
        }
        let body = serde_json::json!({
            "error": { "code": self.code(), "message": message }
        });
        (status, Json(body)).into_response()
    }
}
