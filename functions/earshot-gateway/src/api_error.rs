//! Errors answered before a stream starts: a status and `{"error": {"code", "message", "retryable"}}`,
//! with `Retry-After` when the client should simply try again shortly. The body is the same failure
//! shape an `error` message carries mid-stream ([`earshot_core::error::Error`]).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use earshot_core::error::Error;
use earshot_core::speech::codes;

/// An error answered before a stream starts: its HTTP status, its body and, when a retry may soon
/// succeed, its `Retry-After`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status answered.
    pub status: StatusCode,
    /// The body's `error`: its code, message and whether a retry may succeed.
    pub error: Error,
    /// Seconds after which a retry may succeed (`Retry-After`).
    pub retry_after: Option<u32>,
    /// Which limit of the deployment's spend ceiling refused the request, where one did
    /// ([`crate::spend_ceiling`]): its metric line is logged from this.
    pub ceiling: Option<CeilingLimit>,
}

/// Which of the deployment's spend ceiling's limits a refusal is for ([`crate::spend_ceiling`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeilingLimit {
    /// Characters spoken.
    Characters,
    /// Characters sent to the agent.
    Input,
    /// Requests.
    Requests,
}

impl CeilingLimit {
    /// The name in the refusal's message and the metric line's `Limit`.
    pub fn as_str(self) -> &'static str {
        match self {
            CeilingLimit::Characters => "characters",
            CeilingLimit::Input => "input",
            CeilingLimit::Requests => "requests",
        }
    }
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>, retryable: bool) -> Self {
        ApiError { status, error: Error::new(code, message, retryable), retry_after: None, ceiling: None }
    }

    /// 400: the request is malformed or asks for something that does not exist.
    pub fn bad_request(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message, false)
    }

    /// 401: no valid credentials; the client must get a (new) token.
    pub fn unauthorized(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, code, message, false)
    }

    /// 403: valid credentials that do not allow this request.
    pub fn forbidden(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, code, message, false)
    }

    /// 404: nothing by that name (a conversation with no live turn of the caller's under its id).
    pub fn not_found(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message, false)
    }

    /// 501: the request asks for something this gateway does not offer.
    pub fn not_implemented(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_IMPLEMENTED, code, message, false)
    }

    /// 413: the request, or a part of it (its body, its input, its earlier turns), is over the gateway's limits.
    pub fn too_large(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code, message, false)
    }

    /// 431: the request's headers are over the server's caps (`earshot serve`).
    pub fn headers_too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large", message, false)
    }

    /// 408: the request's body did not arrive in time; retryable.
    pub fn timeout(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, code, message, true)
    }

    /// 502: no backend could take the request, or one could not be reached.
    pub fn upstream(code: &str, message: impl Into<String>, retryable: bool) -> Self {
        Self::new(StatusCode::BAD_GATEWAY, code, message, retryable)
    }

    /// 429: this caller is over one of its limits; try again in `retry_after` seconds.
    pub fn too_many(code: &str, message: impl Into<String>, retry_after: u32) -> Self {
        ApiError { retry_after: Some(retry_after), ..Self::new(StatusCode::TOO_MANY_REQUESTS, code, message, true) }
    }

    /// 503: try again in `retry_after` seconds.
    pub fn unavailable(code: &str, message: impl Into<String>, retry_after: u32) -> Self {
        ApiError { retry_after: Some(retry_after), ..Self::new(StatusCode::SERVICE_UNAVAILABLE, code, message, true) }
    }

    /// A backend that could not take the conversation: 503 when it is starting or full (the client
    /// retries), 502 when it failed.
    pub fn from_backend(e: Error) -> Self {
        match e.code.as_str() {
            codes::NOT_READY => Self::unavailable(codes::NOT_READY, e.message, 2),
            codes::BUSY => Self::unavailable(codes::BUSY, e.message, 1),
            _ => Self::from_upstream(e),
        }
    }

    /// 502: a backend or the agent failed before the stream started.
    pub fn from_upstream(error: Error) -> Self {
        ApiError { status: StatusCode::BAD_GATEWAY, error, retry_after: None, ceiling: None }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.error });
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6750: a missing token gets the scheme alone; a token that fails, `invalid_token`.
            let challenge = if self.error.code == "token_missing" { r#"Bearer realm="earshot""# } else { r#"Bearer realm="earshot", error="invalid_token""# };
            response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(challenge));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_401_names_its_scheme_and_a_failed_token_says_so() {
        let missing = ApiError::unauthorized("token_missing", "no token").into_response();
        assert_eq!(missing.headers()[header::WWW_AUTHENTICATE], r#"Bearer realm="earshot""#);
        let expired = ApiError::unauthorized("token_expired", "old").into_response();
        assert_eq!(expired.headers()[header::WWW_AUTHENTICATE], r#"Bearer realm="earshot", error="invalid_token""#);
        assert!(ApiError::forbidden("token_out_of_scope", "no").into_response().headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
