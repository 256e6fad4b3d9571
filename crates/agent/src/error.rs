//! The agent's error type.

use crate::convert::ConvertError;
use crate::frr::FrrError;
use crate::store::StoreError;
use crate::txn::Part;

/// What stopped the agent from finishing a step; every variant says what failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory is unreadable, unwritable or corrupt.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The last-known-good config cannot be converted (e.g. the VTEP flags changed).
    #[error("last-known-good config: {0}")]
    LastKnownGood(#[source] ConvertError),
    /// Restoring the last-known-good config failed in the kernel.
    #[error("restoring the last-known-good config failed: {0}")]
    Restore(#[source] netrollout_dataplane::Error),
    /// FRR support is on but its base config is unusable (unreadable, no ASN or router id), or
    /// FRR is not running when an apply would start ([`FrrError::Unavailable`]).
    #[error(transparent)]
    Frr(FrrError),
    /// Restoring the last-known-good FRR config failed.
    #[error("restoring the last-known-good FRR config failed: {0}")]
    FrrRestore(#[source] FrrError),
    /// The netlink connection could not be opened.
    #[error("netlink: {0}")]
    Netlink(#[source] netrollout_dataplane::Error),
    /// The transaction core stopped (a restore refused, or a driver bug).
    #[error(transparent)]
    Transaction(crate::txn::CoreError),
    /// A Kubernetes API request failed.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// A supervised task of the agent died (panicked, or returned while it should run).
    #[error("{0}; the agent ends so that it is restarted")]
    TaskDied(String),
    /// Work handed to a part ended without an answer (a panic in the agent).
    #[error(transparent)]
    Lost(#[from] crate::lane::Lost),
}

impl Error {
    /// A short label for metrics and the status `reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Store(StoreError::Corrupt { .. }) => "StateCorrupt",
            Error::Store(StoreError::Io { .. } | StoreError::TimedOut { .. }) => "StateUnavailable",
            Error::LastKnownGood(_) => "LastKnownGoodInvalid",
            Error::Restore(_) | Error::FrrRestore(_) => "RestoreFailed",
            Error::Frr(FrrError::Unavailable { .. }) => "FrrUnavailable",
            Error::Frr(_) => "FrrBaseInvalid",
            Error::Netlink(_) => "NetlinkUnavailable",
            Error::Transaction(crate::txn::CoreError::Restore(_)) => "RestoreFailed",
            Error::Transaction(crate::txn::CoreError::Unanswered { part, .. }) => match part {
                Part::Kernel => "NetlinkUnavailable",
                Part::Frr => "FrrUnavailable",
                Part::Disk => "StateUnavailable",
                Part::Probes => "ProbesUnanswered",
            },
            Error::Transaction(_) | Error::Lost(_) | Error::TaskDied(_) => "AgentBug",
            Error::Kube(_) => "ApiError",
        }
    }
}

/// The agent's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
