//! The plugin's integration tests, one module per command family, in one test binary: each
//! binary links kube, tokio and the lab API server, so one link instead of one per file.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod bake;
mod change;
mod common;

mod go_operator;
mod migrate;
mod nodes;
mod peering;
mod promote;
mod schedule;
mod status;
mod steer;
