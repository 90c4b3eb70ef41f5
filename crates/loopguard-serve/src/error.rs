//! Error answers: `{"error": "...", "field": "..."}` with the HTTP status that says who is
//! at fault ([`ApiError`]); why the server did not start ([`ServeError`]).

use std::net::SocketAddr;

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// An error answer of the HTTP API.
///
/// ```
/// use loopguard_serve::ApiError;
/// let e = ApiError::bad_request("line 1: field `tool`: a call needs a `tool` string", Some("tool"));
/// assert_eq!(e.status.as_u16(), 400);
/// assert_eq!(e.body(), r#"{"error":"line 1: field `tool`: a call needs a `tool` string","field":"tool"}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub error: String,
    /// The request field at fault, when one is.
    pub field: Option<String>,
}

impl ApiError {
    /// An error with a status.
    pub fn new(status: StatusCode, error: impl Into<String>, field: Option<&str>) -> Self {
        ApiError {
            status,
            error: error.into(),
            field: field.map(str::to_string),
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(error: impl Into<String>, field: Option<&str>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, error, field)
    }

    /// 503: the store cannot be reached.
    pub fn unavailable(error: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, error, None)
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        serde_json::json!({ "error": self.error, "field": self.field }).to_string()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            self.body(),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer realm=\"loopguard\""),
            );
        }
        // These two are answered before the body is read. hyper then closes the connection;
        // saying so keeps a keep-alive client from sending its next request down a socket
        // that is about to close (it would see an unexpected EOF).
        if matches!(
            self.status,
            StatusCode::UNAUTHORIZED | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            r.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
        }
        r
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--listen` on a non-loopback address without `--tokens`.
    #[error("refusing to listen on {0} without --tokens: anyone who can reach it could read and reset every session (use a loopback address, or give --tokens FILE)")]
    OpenWithoutTokens(SocketAddr),
    /// The store could not be opened.
    #[error("--store {spec}: {message}")]
    Store {
        /// The `--store` value.
        spec: String,
        /// What went wrong.
        message: String,
    },
    /// `--tls-cert` / `--tls-key` cannot be used.
    #[error("{0}")]
    Tls(String),
    /// Binding or serving failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        source: std::io::Error,
    },
}
