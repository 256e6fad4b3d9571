//! The workspace's test kit (dev-only, never published): one place for the plumbing the crates'
//! tests and benchmarks share, so no test harness is copied between crates.
//!
//! - [`cmd`]: run a tool and assert it succeeded; [`cmd::Run`], a finished process.
//! - [`netns`]: a fresh network namespace per test, cleaned up on drop and after crashes.
//! - [`poll`]: waiting with a deadline from blocking code (the VM suites).
//! - [`http`]: scrape a binary's `/metrics` from blocking test code.
//! - [`manifests`]: the Go operator's `v1alpha1` manifests (the repository's fixtures, and the
//!   third-party ones of `NETROLLOUT_COMPAT_DIR` when set).
//! - `prefixes` (feature `api`): prefix-list builders of the VM suites.
//! - `apiserver` (feature `kube`): the lab API server per test, optionally with the netrollout
//!   CRDs and namespace installed and servable.
//! - `fleet` (`kube`): the harness's builders and waits: Nodes, inputs, revisions and node
//!   configs on `LabApi`, the lists a test reads, waits for a phase or Event.
//! - `kubectl` (`kube`): the real kubectl bound to a lab API server.
//! - `objects` (`kube`): builders for Nodes, layer-2 configs, snapshots and statuses in the shapes
//!   the configurator and the agent write.
//! - `wait` (`kube`): polling with a deadline.
//! - `fake_agents` (`kube`): simulated agents that write NodeNetworkConfig status as the real one.
//! - `fake_prometheus` (`kube`): a Prometheus query API that answers what a test says and
//!   records when each query came.
//! - `agent` (feature `agent`): the real `netrollout-agent` in a namespace against a lab server.
//!
//! Everything here runs inside tests: a failed step panics with what went wrong, which is the
//! test failure (hence the crate-wide allow below).
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod cmd;
pub mod http;
pub mod manifests;
pub mod netns;
pub mod poll;

#[cfg(feature = "api")]
pub mod prefixes;

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "kube")]
pub mod apiserver;
#[cfg(feature = "kube")]
pub mod fake_agents;
#[cfg(feature = "kube")]
pub mod fake_prometheus;
#[cfg(feature = "kube")]
pub mod fleet;
#[cfg(feature = "kube")]
pub mod kubectl;
#[cfg(feature = "kube")]
pub mod objects;
#[cfg(feature = "kube")]
pub mod wait;
