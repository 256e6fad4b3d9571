//! The lab API server's integration tests, one module per concern, in one test binary: each
//! binary links kube, tokio and the server, so one link instead of one per file.
//! `redteam_watch_memory` stays a binary of its own: it reads the process's resident memory, so
//! nothing else may run beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

#[path = "../common/mod.rs"]
mod common;

mod client;
mod client_late;
mod client_ops;
mod client_watch;
mod history_and_cel;
mod kubectl;
mod kubectl_refusals;
mod redteam_gc;
mod redteam_identities;
mod redteam_requests;
mod redteam_watch;
mod security;
mod security_agent;
mod write_checks;
