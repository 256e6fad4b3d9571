//! The netrollout lab: a whole cluster on one machine. The lab API server stands in for
//! Kubernetes, a network namespace on a shared fabric bridge stands in for each node (running the
//! real `netrollout-agent`), and the real `netrollout-configurator` rolls out the samples. Scenarios
//! script failures and check the rollout's promises.
//!
//! Layout:
//! - [`fabric`]: the host bridge and one namespace per node (iproute2).
//! - [`cluster`]: [`cluster::Lab`]: API server, Node objects, agents and configurators.
//! - [`identities`]: the bundle's RBAC and admission policies in the lab; a token per process.
//! - [`inputs`]: the samples and the scenarios' configs.
//! - [`progress`]: observing revisions and node configs; tables.
//! - [`scenario`]: the scripted stories and their checks.

#![forbid(unsafe_code)]

pub mod cluster;
pub mod fabric;
pub mod identities;
pub mod inputs;
pub mod progress;
pub mod scenario;

use std::net::SocketAddr;

/// The agent's probe flags in the lab: the API server (through the fabric) must stay reachable;
/// a break shows within 5 s; probes must keep passing for `hold` before a change is committed.
pub fn agent_probe_args(api: &SocketAddr, hold: &str) -> Vec<String> {
    [
        "--probe-tcp",
        &api.to_string(),
        "--probe-each-timeout",
        "1s",
        "--probe-timeout",
        "5s",
        "--probe-hold",
        hold,
    ]
    .map(String::from)
    .to_vec()
}
