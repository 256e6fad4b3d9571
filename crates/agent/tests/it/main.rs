//! The agent's integration tests, one module per concern, in one test binary: each binary links
//! the agent, kube, tokio, the lab API server and the test kit, so one link instead of one per
//! file. The helpers they share are `tests/common/`. The VM test (real FRR with VRFs, which this
//! machine's kernel lacks) is `tests/vm.rs`, a binary of its own behind the `vm` feature: it has
//! its own `main` (it becomes the agent inside the VM) and is built only for
//! `hack/test.d/56-agent-frr-vm.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

#[path = "../common/mod.rs"]
mod common;

mod api_late;
mod api_outage;
mod api_slow;
mod apply;
mod capabilities;
mod clock;
mod condition;
mod crash;
mod dead_watch;
mod evpn;
mod frr;
mod frr_converge;
mod frr_defaults;
mod frr_dies;
mod frr_errors;
mod frr_vty;
mod health;
mod hold;
mod kills;
mod peering;
mod restore;
mod state_dir;
