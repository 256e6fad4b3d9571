//! The FRR renderer's integration tests, one module per concern, in one test binary (one link
//! instead of one per file). The real-FRR tests in a VM are `tests/vm.rs`, behind the `vm`
//! feature.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;

mod daemons;
mod fields;
mod frr_load;
mod golden;
mod kernel_routes;
mod policy;
