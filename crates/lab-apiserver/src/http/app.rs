//! What every request handler shares: the [`App`] (state, faults, settings, tokens), the
//! request as the verbs see it ([`Req`], [`Target`]) and the response builders. `front` builds
//! these; `verbs` consumes them.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;

use crate::authz::auth::{Identity, Tokens};
use crate::error::ApiError;
use crate::faults::Faults;
use crate::resources::ResourceType;
use crate::storage::State;

/// Shared by every request.
#[derive(Debug)]
pub struct App {
    /// All objects.
    pub state: Arc<Mutex<State>>,
    /// Fault injection.
    pub faults: Faults,
    /// `host:port` the server listens on.
    pub addr: SocketAddr,
    /// Buffer per watcher before a slow watcher is dropped.
    pub watch_buffer: usize,
    /// Bookmark period.
    pub bookmark_every: Duration,
    /// Bearer tokens and the identities they stand for.
    pub tokens: Tokens,
}

impl App {
    /// Locks the state, turning a poisoned lock into a 500.
    pub fn lock(&self) -> Result<MutexGuard<'_, State>, ApiError> {
        self.state.lock().map_err(|_| {
            ApiError::new(
                500,
                "InternalError",
                "state lock poisoned by an earlier panic",
            )
        })
    }
}

/// A request addressed to a resource.
#[derive(Debug)]
pub struct Target {
    /// The resource type at the requested version.
    pub rt: Arc<ResourceType>,
    /// Namespace from the URL.
    pub ns: Option<String>,
    /// Object name from the URL.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub sub: Option<String>,
}

/// Everything a verb handler needs from the request.
#[derive(Debug)]
pub struct Req {
    /// HTTP method.
    pub method: Method,
    /// Decoded query parameters.
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: HeaderMap,
    /// Request body.
    pub body: bytes::Bytes,
    /// Who sent it (authenticated by its bearer token).
    pub user: Arc<Identity>,
}

impl Req {
    /// A query parameter.
    pub fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }

    /// A header as text.
    pub fn header(&self, k: header::HeaderName) -> &str {
        self.headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    }
}

/// A JSON response with status 200 (or `code`).
pub fn json_response(code: u16, v: &Value) -> Response {
    bytes_response(
        code,
        serde_json::to_vec(v).unwrap_or_default(),
        "application/json",
    )
}

/// A response from already encoded bytes.
pub fn bytes_response(code: u16, body: impl Into<Body>, content_type: &'static str) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}
