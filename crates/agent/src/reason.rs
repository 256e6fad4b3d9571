//! Why a revision failed on a node: the `reason` of the `NodeNetworkConfig` status, the
//! `failures_total{reason}` metric label and the failure memory on disk (stored by name, so
//! state files written before this type existed read back unchanged).

use serde::{Deserialize, Serialize};

/// Why a revision failed on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailureReason {
    /// The config cannot be converted for this node (e.g. a VXLAN without a VTEP address).
    InvalidConfig,
    /// The kernel refused part of the netlink apply.
    ApplyFailed,
    /// FRR refused the routing config (the message holds FRR's own error line).
    FrrRejected,
    /// Probes failed after the change (the message names which).
    ProbeFailed,
    /// The agent died twice while applying the revision.
    AgentCrashed,
}

impl FailureReason {
    /// The name used in the status, metrics and state files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidConfig => "InvalidConfig",
            Self::ApplyFailed => "ApplyFailed",
            Self::FrrRejected => "FrrRejected",
            Self::ProbeFailed => "ProbeFailed",
            Self::AgentCrashed => "AgentCrashed",
        }
    }
}

impl std::fmt::Display for FailureReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::FailureReason;

    #[test]
    fn reasons_serialize_as_their_names() {
        for r in [
            FailureReason::InvalidConfig,
            FailureReason::ApplyFailed,
            FailureReason::FrrRejected,
            FailureReason::ProbeFailed,
            FailureReason::AgentCrashed,
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(json, format!("\"{}\"", r.as_str()));
            assert_eq!(serde_json::from_str::<FailureReason>(&json).unwrap(), r);
        }
    }
}
