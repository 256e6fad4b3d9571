//! [`Error`]: every way a reconcile pass or the configurator itself can fail.

use std::time::Duration;

/// Why a pass (or the configurator) failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API request failed; the pass is retried with backoff. Never a config failure.
    #[error("API request failed: {what}: {source}")]
    Api {
        /// The request, e.g. `patch NodeNetworkConfig node-1`.
        what: String,
        /// What the client or the API server said.
        #[source]
        source: kube::Error,
    },
    /// An API request did not answer within `--api-timeout`.
    #[error("API request timed out after {timeout:?}: {what}; is the API server overloaded?")]
    Timeout {
        /// The request.
        what: String,
        /// The timeout that passed.
        timeout: Duration,
    },
    /// A revision with the snapshot's name exists with different content (contract rule 4, docs/contract.md).
    #[error(transparent)]
    NameClash(#[from] netrollout_rollout::lifecycle::NameClash),
    /// A revision's snapshot cannot be rendered for the current nodes.
    #[error("cannot render NetworkConfigRevision {revision} for the current nodes: {source}")]
    Render {
        /// Revision name.
        revision: String,
        /// What rendering said.
        #[source]
        source: netrollout_render::Error,
    },
    /// The action names a revision the configurator does not know (deleted meanwhile).
    #[error("NetworkConfigRevision {0} is gone; re-planning")]
    UnknownRevision(String),
    /// This replica lost the lease; it stops writing.
    #[error("this replica is not the leader; no writes")]
    NotLeader,
    /// A value could not be serialised (a bug).
    #[error("cannot serialise {what}: {source}")]
    Serialize {
        /// What.
        what: &'static str,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A command-line flag is invalid.
    #[error("invalid flag {flag}: {message}")]
    Flag {
        /// The flag.
        flag: &'static str,
        /// What is wrong and what to give instead.
        message: String,
    },
    /// Leader election failed.
    #[error("leader election on Lease {lease}: {source}")]
    Lease {
        /// `namespace/name`.
        lease: String,
        /// Why.
        #[source]
        source: kube_lease_manager::LeaseManagerError,
    },
    /// An HTTP listener (metrics or health) could not bind.
    #[error("cannot listen on {addr}: {source}; pick another address with the flag")]
    Listen {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A background task (watch, lease, HTTP server) ended; the process must restart.
    #[error("background task ended: {0}")]
    TaskEnded(String),
}

impl Error {
    /// The Prometheus label of this error (`reconcile_errors_total{reason}`).
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Api { .. } => "api",
            Error::Timeout { .. } => "timeout",
            Error::NameClash { .. } => "name_clash",
            Error::Render { .. } => "render",
            Error::UnknownRevision(_) => "unknown_revision",
            Error::NotLeader => "not_leader",
            Error::Serialize { .. } => "serialize",
            Error::Flag { .. } => "flag",
            Error::Lease { .. } => "lease",
            Error::Listen { .. } => "listen",
            Error::TaskEnded(_) => "task_ended",
        }
    }

    /// Whether the API server answered 409 Conflict (a stale view; re-plan at once).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Api { source: kube::Error::Api(s), .. } if s.code == 409)
    }
}

/// Result of this crate's fallible functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;
