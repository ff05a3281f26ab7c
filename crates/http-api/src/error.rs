//! The one error type of every route, [`ApiError`]: a status, a stable machine-readable
//! `code` and a message, answered as `{"error": {"code", "message"}}`. Errors of the crates
//! below are mapped by their variant (never by their text); internal failures (a database
//! error, a panic-free but unexpected state) answer 500 with a generic message and are
//! logged here, so no internal detail reaches the client.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mcp_lifecycle::LifecycleError;
use serde_json::json;
use store::StoreError;

/// An error answered to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {code}: {message}")]
pub struct ApiError {
    pub status: StatusCode,
    /// Stable, machine-readable (`unknown_bot`, `bad_json`, …).
    pub code: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    pub fn not_found(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "missing or wrong `Authorization: Bearer <key>`",
        )
    }

    /// A failure the client cannot act on: logged with its cause, answered generically.
    pub fn internal(cause: &dyn std::error::Error) -> Self {
        tracing::error!(error = %error_chain(cause), "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
        )
    }

    /// The JSON body: `{"error": {"code", "message"}}`.
    pub fn body(&self) -> serde_json::Value {
        json!({"error": {"code": self.code, "message": self.message}})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body())).into_response()
    }
}

/// `error: cause: cause…`, for logs.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl From<axum::extract::rejection::QueryRejection> for ApiError {
    /// A query string that does not parse, or names a parameter the route does not take.
    fn from(rejection: axum::extract::rejection::QueryRejection) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            rejection.body_text(),
        )
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        let code = match status {
            StatusCode::PAYLOAD_TOO_LARGE => "body_too_large",
            StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
            _ => "bad_json",
        };
        // The rejection's text names the JSON error position; it holds no internals.
        Self::new(status, code, rejection.body_text())
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match &error {
            StoreError::Invalid(invalid) => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
                invalid.to_string(),
            ),
            StoreError::DuplicateServerName { .. }
            | StoreError::ServerNameClash { .. }
            | StoreError::DuplicateBotName { .. }
            | StoreError::DuplicateKeyName { .. } => {
                Self::new(StatusCode::CONFLICT, "duplicate_name", error.to_string())
            }
            StoreError::UnknownKey(_) => Self::not_found("unknown_key", error.to_string()),
            StoreError::UnknownServer(_) => Self::not_found("unknown_server", error.to_string()),
            StoreError::UnknownBot(_) => Self::not_found("unknown_bot", error.to_string()),
            StoreError::Corrupt { .. }
            | StoreError::UnsupportedUrl { .. }
            | StoreError::Connect(_)
            | StoreError::Migrate(_)
            | StoreError::Database(_) => Self::internal(&error),
        }
    }
}

impl From<toolset::ToolsetError> for ApiError {
    fn from(error: toolset::ToolsetError) -> Self {
        match error {
            toolset::ToolsetError::UnknownBot { bot } => {
                Self::not_found("unknown_bot", format!("no bot {bot:?}"))
            }
            toolset::ToolsetError::Store(source) => source.into(),
        }
    }
}

impl From<LifecycleError> for ApiError {
    fn from(error: LifecycleError) -> Self {
        let message = error.to_string();
        match &error {
            LifecycleError::UnknownServer { .. } => Self::not_found("unknown_server", message),
            LifecycleError::NotConfigured { .. }
            | LifecycleError::EnvNotAllowed { .. }
            | LifecycleError::BadHeader { .. } => {
                Self::new(StatusCode::CONFLICT, "server_not_configured", message)
            }
            LifecycleError::BackingOff { .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "server_backing_off",
                message,
            ),
            LifecycleError::NeedsAuth { .. } => {
                Self::new(StatusCode::CONFLICT, "server_needs_auth", message)
            }
            LifecycleError::OAuthUnavailable { .. } => {
                Self::new(StatusCode::CONFLICT, "oauth_unavailable", message)
            }
            LifecycleError::OAuthUnknownState => {
                Self::new(StatusCode::BAD_REQUEST, "oauth_unknown_state", message)
            }
            LifecycleError::OAuth { .. } => {
                Self::new(StatusCode::BAD_GATEWAY, "oauth_failed", message)
            }
            LifecycleError::CallTimeout { .. } => {
                Self::new(StatusCode::GATEWAY_TIMEOUT, "tool_timeout", message)
            }
            LifecycleError::Records(_) => Self::internal(&error),
            // Spawn, initialize, exit, crash-loop, protocol failures, and variants added
            // later: the server failed; its message names the server, never env values.
            _ => Self::new(StatusCode::BAD_GATEWAY, "server_failed", message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn store_errors_map_to_statuses_by_variant() {
        let cases = [
            (
                StoreError::UnknownBot("x".into()),
                StatusCode::NOT_FOUND,
                "unknown_bot",
            ),
            (
                StoreError::DuplicateServerName { name: "a".into() },
                StatusCode::CONFLICT,
                "duplicate_name",
            ),
            (
                StoreError::Invalid(store::ValidationError::EmptyModel { bot: "b".into() }),
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid",
            ),
        ];
        for (error, status, code) in cases {
            let api = ApiError::from(error);
            assert_eq!((api.status, api.code), (status, code));
        }
    }
}
