//! Errors: [`Error`] for the library's own failures (binding, files) and [`ApiError`], a
//! Kubernetes `Status` failure returned to HTTP clients.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

/// Failures of the server itself (not of a client request).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}; pick another address or port")]
    Bind {
        /// The address that was asked for.
        addr: String,
        /// Why binding failed.
        source: std::io::Error,
    },
    /// A file (kubeconfig or persisted data) could not be read or written.
    #[error("cannot access {path}: {source}")]
    File {
        /// The file involved.
        path: String,
        /// The I/O failure.
        source: std::io::Error,
    },
    /// The persisted data file is not valid.
    #[error("persisted data {path} is corrupt: {message}; move it away to start empty")]
    CorruptData {
        /// The data file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The token table file is not valid.
    #[error("token table {path} is corrupt: {message}; delete it and issue new kubeconfigs")]
    Data {
        /// The file.
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// The server's TLS certificate could not be made.
    #[error("cannot set up TLS: {message}")]
    Tls {
        /// What failed.
        message: String,
    },
    /// A lock was poisoned by an earlier panic.
    #[error("a lock of the lab API server was poisoned by an earlier panic")]
    Poisoned,
    /// The kube client could not be built from the server's configuration.
    #[error("cannot build a kube client for {url}: {message}")]
    Client {
        /// The server URL.
        url: String,
        /// The client's complaint.
        message: String,
    },
}

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Largest request body kube-apiserver reads for a write (`MaxRequestBodyBytes`, 3 MiB); a
/// bigger one gets 413 `RequestEntityTooLarge`.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

/// Largest object etcd stores with its default `--max-request-bytes` (1.5 MiB). Custom objects
/// are stored as JSON, so the lab compares an object's JSON with it.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;

/// A failed API request, rendered as a `meta/v1` `Status` object.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// The Kubernetes `reason` (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// Human readable message.
    pub message: String,
    /// Optional `details` object.
    pub details: Option<Value>,
}

impl ApiError {
    /// An error with no details.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// Attaches a `details` object naming the object concerned.
    pub fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(json!({"name": name, "group": group, "kind": kind}));
        self
    }

    /// 404 for an object that does not exist.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let what = qualified(group, plural);
        Self::new(404, "NotFound", format!("{what} \"{name}\" not found"))
            .with_details(group, plural, name)
    }

    /// 404 for a URL that names no resource.
    pub fn no_resource() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 409 for a create of an existing object.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let what = qualified(group, plural);
        Self::new(
            409,
            "AlreadyExists",
            format!("{what} \"{name}\" already exists"),
        )
        .with_details(group, plural, name)
    }

    /// 409 for a write with a stale resourceVersion.
    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        let what = qualified(group, plural);
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {what} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        )
        .with_details(group, plural, name)
    }

    /// 400 for a request that cannot be understood.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 for an object that fails validation; `causes` are `(field, message)` pairs.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: &[(String, String)]) -> Self {
        let summary: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let list = summary.join(", ");
        let message = if summary.len() == 1 {
            format!("{gk} \"{name}\" is invalid: {list}")
        } else {
            format!("{gk} \"{name}\" is invalid: [{list}]")
        };
        let causes: Vec<Value> = causes
            .iter()
            .map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f}))
            .collect();
        let mut e = Self::new(422, "Invalid", message);
        e.details = Some(json!({"name": name, "group": group, "kind": kind, "causes": causes}));
        e
    }

    /// 410 for a watch or list from a resourceVersion older than the retained window.
    pub fn gone(rv: u64, oldest: u64) -> Self {
        Self::new(
            410,
            "Expired",
            format!("too old resource version: {rv} ({oldest})"),
        )
    }

    /// 403 in the words of the Kubernetes RBAC authorizer: `<resource> "<name>" is forbidden:
    /// User "<user>" cannot <verb> resource "<resource>" in API group "<group>" ...`.
    #[allow(clippy::too_many_arguments)]
    pub fn forbidden(
        user: &str,
        verb: &str,
        group: &str,
        resource: &str,
        sub: Option<&str>,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> Self {
        let full = match sub {
            Some(s) => format!("{resource}/{s}"),
            None => resource.to_string(),
        };
        let scope = match ns {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let what = match name {
            Some(n) => format!("{} \"{n}\"", qualified(group, &full)),
            None => qualified(group, &full),
        };
        let message = format!(
            "{what} is forbidden: User \"{user}\" cannot {verb} resource \"{full}\" in API group \"{group}\" {scope}"
        );
        let mut e = Self::new(403, "Forbidden", message);
        let mut d = json!({"group": group, "kind": resource});
        if let Some(n) = name {
            d["name"] = json!(n);
        }
        e.details = Some(d);
        e
    }

    /// 403 from a ValidatingAdmissionPolicy (`reason: Forbidden`), or 422 (`Invalid`).
    pub fn denied_by_policy(code: u16, message: String) -> Self {
        let reason = if code == 403 { "Forbidden" } else { "Invalid" };
        Self::new(code, reason, message)
    }

    /// 413 for a request body over [`MAX_REQUEST_BYTES`], in kube-apiserver's words
    /// (`Request entity too large: limit is 3145728`).
    pub fn request_too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {MAX_REQUEST_BYTES}"),
        )
    }

    /// 500 for an object over [`MAX_OBJECT_BYTES`]: etcd refuses to store it and kube-apiserver
    /// passes its error on as it is (a `Status` with code 500 and no reason).
    pub fn object_too_large() -> Self {
        Self::new(500, "", "etcdserver: request is too large")
    }

    /// 405 for a verb the resource does not support.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }

    /// The `Status` object for this error.
    pub fn status(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if self.reason.is_empty() {
            // kube-apiserver leaves `reason` out when it has none (StatusReasonUnknown).
            s.as_object_mut().map(|o| o.remove("reason"));
        }
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, self.status().to_string()).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        resp
    }
}
