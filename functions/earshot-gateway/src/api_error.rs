//! Errors answered before a stream starts: a status and `{"error": {"code", "message", "retryable"}}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: String,
    pub message: String,
    pub retryable: bool,
}

impl ApiError {
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::BAD_REQUEST, code: code.into(), message: message.into(), retryable: false }
    }

    pub fn too_large(code: &str, message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::PAYLOAD_TOO_LARGE, code: code.into(), message: message.into(), retryable: false }
    }

    pub fn upstream(code: &str, message: impl Into<String>, retryable: bool) -> Self {
        ApiError { status: StatusCode::BAD_GATEWAY, code: code.into(), message: message.into(), retryable }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"code": self.code, "message": self.message, "retryable": self.retryable}});
        (self.status, Json(body)).into_response()
    }
}
