//! The one request parser of every route family (native, `/api/chat`, `/api/workflow`, `/v1`):
//! a body or a query that cannot be used gets the same typed answer everywhere.
//!
//! | what is wrong | status | code |
//! |---|---|---|
//! | a body that is not JSON, or a query that does not parse | `400` | `bad_request` |
//! | a body over [`crate::ServerOptions::body_limit`] | `413` | `payload_too_large` |
//! | a body without `Content-Type: application/json` | `415` | `unsupported_media_type` |
//! | JSON that is not an object, or an object of the wrong shape (an unknown field included) | `422` | `invalid` |
//! | an [`ON_BUSY_HEADER`] that names no busy policy | `400` | `bad_request` |

use axum::Json;
use axum::extract::Query;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use openharness_core::BusyPolicy;
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// The request header that says what a second input gets while a turn runs on the session
/// (`reject`, `enqueue`, `interrupt`, `rollback`, `steer`; see [`BusyPolicy`]), on every route
/// that takes input. Absent, the route family's default applies
/// ([`crate::ServerOptions::on_busy`], [`crate::ServerOptions::chat_on_busy`]).
pub const ON_BUSY_HEADER: &str = "x-openharness-on-busy";

/// The busy policy a request asks for: `asked` (a body's field) wins over [`ON_BUSY_HEADER`];
/// neither gives `default`. A header that names no policy is refused even when the body names
/// one: a client that sends it means something by it.
pub(crate) fn busy_policy(
    headers: &axum::http::HeaderMap,
    asked: Option<BusyPolicy>,
    default: BusyPolicy,
) -> Result<BusyPolicy, ApiError> {
    let header = match headers.get(ON_BUSY_HEADER) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| format!("header `{ON_BUSY_HEADER}` is not text"))
                .and_then(str::parse)
                .map_err(|why: String| {
                    ApiError::bad_request(format!("header `{ON_BUSY_HEADER}`: {why}"))
                })?,
        ),
    };
    Ok(asked.or(header).unwrap_or(default))
}

/// The largest number any route reads (JavaScript's largest safe integer), so an answer that
/// echoes it stays exact; the OpenAPI document gives it as the `maximum`.
pub(crate) const MAX_SAFE: u64 = 9_007_199_254_740_991;

/// A request body as a handler takes it: read as JSON, turned into its type by [`body`].
pub(crate) type Body = Result<Json<serde_json::Value>, JsonRejection>;

/// A request's query as a handler takes it, turned into its type by [`query`].
pub(crate) type QueryOf<T> = Result<Query<T>, QueryRejection>;

/// The body as `T` (see the module's table). Serde would read a struct from an array too, so
/// anything but an object is refused before it is read.
pub(crate) fn body<T: DeserializeOwned>(body: Body) -> Result<T, ApiError> {
    let value = body.map(|Json(value)| value).map_err(|rejection| {
        let status = rejection.status();
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            _ => "bad_request",
        };
        ApiError::new(status, code, rejection.body_text())
    })?;
    if !value.is_object() {
        return Err(ApiError::invalid("the body must be a JSON object"));
    }
    serde_json::from_value(value).map_err(|err| ApiError::invalid(err.to_string()))
}

/// The query as `T`: one that does not parse (an unknown parameter included, where `T` denies
/// them) is `400`.
pub(crate) fn query<T>(query: QueryOf<T>) -> Result<T, ApiError> {
    query
        .map(|Query(value)| value)
        .map_err(|rejection| ApiError::bad_request(rejection.body_text()))
}

/// A session id from a path, or a `400` saying why it is not one.
pub(crate) fn session_id(id: &str) -> Result<openharness_core::SessionId, ApiError> {
    id.parse()
        .map_err(|err| ApiError::bad_request(format!("`{id}` is not a session id: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Named {
        #[allow(dead_code)]
        name: String,
    }

    #[test]
    fn wrong_shapes_are_invalid_and_objects_are_read() {
        let read = |value: serde_json::Value| body::<Named>(Ok(Json(value)));
        assert!(read(serde_json::json!({ "name": "a" })).is_ok());
        for wrong in [
            serde_json::json!(["a"]),
            serde_json::json!({ "name": "a", "extra": 1 }),
            serde_json::json!({}),
        ] {
            let err = read(wrong).err();
            assert_eq!(
                err.map(|e| (e.status, e.code)),
                Some((StatusCode::UNPROCESSABLE_ENTITY, "invalid"))
            );
        }
    }
}
