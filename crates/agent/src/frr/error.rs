//! What went wrong with FRR.

use std::net::Ipv4Addr;
use std::path::PathBuf;

/// What to do about a base file the agent cannot read: in its pod the agent is root without
/// the capability to bypass file permissions, so FRR's own files (`frr:frr`, mode 0640) need
/// FRR's groups.
fn base_fix(e: &std::io::Error) -> &'static str {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied => {
            "give the agent's pod FRR's groups (supplementalGroups) and make /etc/frr group-writable \
             (docs/operations.md, \"FRR on the node\", step 3)"
        }
        _ => "create it (see docs/operations.md) or drop --frr-base-config",
    }
}

/// What went wrong with FRR.
#[derive(Debug, thiserror::Error)]
pub enum FrrError {
    /// The base file cannot be read.
    #[error("FRR base config {path}: {source}; {fix}", fix = base_fix(.source))]
    Base {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The ASN or router id is neither a flag nor in the base file, or they disagree.
    #[error("FRR base config {path}: {problem}")]
    Routing {
        /// The base file.
        path: PathBuf,
        /// What is missing or inconsistent and what to do.
        problem: String,
    },
    /// A config with VRFs cannot be routed: the managed router id equals the default VRF's, and
    /// FRR refuses the iBGP session between a VRF and the default VRF over equal ids.
    #[error(
        "FRR: {vrfs} VRF(s) would peer with the default VRF over iBGP, but the managed router id \
         {router_id} equals `bgp router-id` of the default `router bgp` in {path} ({why}); pass \
         --router-id (NETROLLOUT_ROUTER_ID) or an IPv4 --vtep-ip (VTEP_IP) that differs from it"
    )]
    RouterIdClash {
        /// The base file.
        path: PathBuf,
        /// The clashing id.
        router_id: Ipv4Addr,
        /// How many VRFs the config has.
        vrfs: usize,
        /// Why no other id was chosen.
        why: String,
    },
    /// `frr.conf` (or its temporary file) cannot be written.
    #[error("FRR config {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// A program (vtysh, frr-reload.py) cannot be started.
    #[error("running {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// A daemon the agent needs (zebra, bgpd) does not answer: FRR is down or restarting.
    /// `frr-reload.py` skips the lines of a daemon that is not running and still succeeds, so
    /// the agent asks each daemon before and after a reload.
    #[error(
        "FRR is not running: {} not answering ({detail}); the agent changes nothing in FRR \
         until it answers: start or restart FRR (e.g. `systemctl restart frr`; watchfrr does it \
         on its own)",
        daemons.join(" and ")
    )]
    Unavailable {
        /// The daemons that do not answer, e.g. `["bgpd"]`.
        daemons: Vec<&'static str>,
        /// What vtysh said when asked.
        detail: String,
    },
    /// FRR refused the config; `line` is FRR's own error output.
    #[error("FRR rejected the config: {line}")]
    Rejected {
        /// FRR's error line(s).
        line: String,
        /// Whether FRR was written to (a daemon refused a line while loading) or not (the
        /// parser refused the file first).
        wrote: bool,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_file_the_agent_may_not_read_points_to_frrs_groups() {
        let denied = FrrError::Base {
            path: "/etc/frr/netrollout-base.conf".into(),
            source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        };
        assert!(
            denied.to_string().contains("supplementalGroups"),
            "{denied}"
        );
        let missing = FrrError::Base {
            path: "/etc/frr/netrollout-base.conf".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(missing.to_string().contains("create it"), "{missing}");
    }
}
