//! The agent's lab from the test kit, running this crate's `netrollout-agent` binary.

// Each test file takes the part it needs.
#[allow(unused_imports)]
pub use lab_ext::AgentLab;
#[allow(unused_imports)]
pub use netrollout_testkit::agent::{Lab, layer2, layer2s};

pub mod lab_ext;

/// A fresh lab (namespace, veth, lab API server, Node) for this crate's agent binary.
pub async fn lab() -> Lab {
    Lab::new(env!("CARGO_BIN_EXE_netrollout-agent").into()).await
}

/// The FRR world (only the FRR test files use it).
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
pub mod frr;

/// `kill -9` of the agent's process tree, its log per start, where a kill landed (the kill
/// tests use it).
#[allow(dead_code)]
pub mod kills;

/// A supervisor's view of FRR: one daemon killed, later started again.
#[allow(dead_code)]
pub mod supervisor;
