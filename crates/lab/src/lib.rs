//! The netrollout lab: a whole cluster on one machine. The lab API server stands in for
//! Kubernetes, a network namespace on a shared fabric bridge stands in for each node (running the
//! real `netrollout-agent`), and the real `netrollout-configurator` rolls out the samples. Scenarios
//! script failures and check the rollout's promises.
//!
//! Layout:
//! - [`fabric`]: the host bridge and one namespace per node (iproute2).
//! - [`frr`]: zebra + bgpd per node (the test kit's one FRR start) and a route reflector (EVPN).
//! - [`bench`]: the lab benchmark (a one-network change under tenant traffic).
//! - [`cluster`]: [`cluster::Cluster`]: API server, Node objects, agents and configurators.
//! - [`identities`]: the bundle's RBAC and admission policies in the lab; a token per process.
//! - [`inputs`]: the samples (or the user's manifests) and the scenarios' configs.
//! - [`manifests`]: `--manifests DIR`: reading and checking the user's own input files.
//! - [`progress`]: observing revisions and node configs; tables.
//! - [`prometheus`]: `--prometheus`: a real Prometheus scraping the lab with the shipped rules.
//! - [`traffic`]: the host's table of ping streams between the workloads, loss per window.
//! - [`workload`]: a node's workload on a network and its pinger (host and guest both run them).
//! - [`pids`]: the pid file every started process is recorded in.
//! - [`pods`]: container mode: the bundle's pod templates onto podman, and a kubelet's probes.
//! - [`pinger`]: the raw-ICMP probe stream a workload runs.
//! - [`settings`]: [`settings::Settings`], the one settings type: the flags of `up`, `scenario`
//!   and `bench` (clap), what a scenario adjusts and what the cluster reads.
//! - [`vm`]: VM mode's host side: boots the Debian-kernel VM, talks to its guest side.
//! - [`guest`]: VM mode's guest side: the nodes, FRR, agents and traffic inside the VM.
//! - [`scenario`]: the scripted stories (one file each behind one trait) and their checks.
//!
//! Dependencies point one way: `cluster` -> `traffic` -> `vm` -> {`workload`, `pids`};
//! `guest` -> {`vm`, `workload`}; `workload` and `pids` call back into none of them.

#![forbid(unsafe_code)]

pub mod bench;
pub mod cluster;
mod fabric;
mod frr;
pub mod guest;
mod identities;
pub mod inputs;
mod manifests;
mod pids;
pub mod pinger;
mod pods;
pub mod progress;
mod prometheus;
pub mod scenario;
pub mod settings;
pub mod traffic;
mod vm;
mod workload;

use std::net::SocketAddr;

/// Prints a line to stdout and ignores a failed write: the lab's output often goes into a pipe
/// (`| tee`) that the same Ctrl-C ends, and teardown must still run (`println!` would panic).
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// [`out!`] for stderr.
#[macro_export]
macro_rules! err {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

/// The agent's probe flags in the lab: the API server (through the fabric) must stay reachable,
/// each of the agent's own checks (the API server, the TCP probe) answering within `each`; a
/// break shows within 5 s; probes must keep passing for `hold` before a change is committed.
pub fn agent_probe_args(api: &SocketAddr, hold: &str, each: &str) -> Vec<String> {
    [
        "--probe-tcp",
        &api.to_string(),
        "--probe-each-timeout",
        each,
        "--probe-timeout",
        "5s",
        "--probe-hold",
        hold,
    ]
    .map(String::from)
    .to_vec()
}
