//! The netrollout node agent. It runs on every node (a DaemonSet pod in the host network
//! namespace), watches only its own `NodeNetworkConfig`, and for each new revision: writes the
//! last-known-good config and a journal entry to disk, reports `Provisioning`, probes, applies the
//! difference via netlink (the dataplane crate) and, with FRR support on, its routing config through FRR's
//! `frr-reload.py`, probes again, then commits (`Provisioned`) or
//! restores the last-known-good config (`Failed`, with reason). The safety of the node never
//! depends on the API server: status is reported when it can be. A revision that failed on this
//! node is retried only when a person sets a new value of the `netrollout.io/retry` annotation on
//! the `NodeNetworkConfig`.
//!
//! Layout:
//! - [`cli`]: flags and environment variables.
//! - [`daemon`]: the process: flags to config, logging, client, listeners, signals.
//! - [`run`]: the main loop: recover, watch, reconcile, report.
//! - [`txn`]: the apply transaction as a pure state machine (events in, effects out; no I/O).
//! - [`agent`]: the driver that runs the core's effects on the kernel, FRR, disk and API.
//! - [`convert`]: rendered `NodeConfig` → the dataplane's desired kernel objects.
//! - [`frr`]: the FRR step, one file per verb: render and write the base + managed text
//!   atomically, reload (`frr-reload.py`), query (`vtysh`), parse FRR's output.
//! - [`routing`]: routing probes asked of FRR (sessions, EVPN VNIs); `peering`: the probe of
//!   the workloads' BGP peerings; both read FRR's answer, `routing_state` (routing → peering →
//!   routing_state, never back).
//! - [`reason`]: why a revision failed ([`reason::FailureReason`]).
//! - [`state`]: the state files' records, encoding and write plans (pure).
//! - [`store`]: runs those plans in the state directory (last-known-good, journal, failures).
//! - [`report`]: [`report::Report`], what the agent tells the API.
//! - [`probe`] (with [`icmp`], `ticks`): connectivity and link checks; runs the health-check
//!   file's too. [`icmp`]: one echo over a raw socket (the VM tests send theirs with it).
//!   `ticks`: a check's time limit counted in real waiting (clock jumps).
//! - [`healthcheck`]: the health-check file (interfaces, TCP/ICMP reachability in a VRF).
//! - `outcome`: [`probe::Outcome`], the result of one check (probe → healthcheck → outcome,
//!   never back).
//! - [`watch`]: continuous health after commit: the health-check file's checks every
//!   `--watch-interval`, transitions written as the `TenantReachable` condition.
//! - [`capabilities`]: what the node's kernel and FRR can do (scratch devices, `show
//!   daemons`), reported once in `status.capabilities` for the configurator's pre-flight.
//! - [`neighbours`]: the neighbour task (`advertiseNeighbors`): the neighbours of such networks
//!   as host routes in their VRF's table, kept beside the transaction as neighbours come and go.
//! - [`taints`]: removing the startup taints once the network works.
//! - [`status`]: the `NodeNetworkConfig` status and the Node's `NetworkConfigReady` condition.
//! - [`steps`]: the steps in flight, what the parts owe, the main loop's progress: the wait
//!   metrics and `/healthz`'s verdict. `lane`: work handed to the kernel, FRR and the state
//!   directory in order, never cancelled at a step's deadline.
//!   `bounded`: steps outside the transaction (API writes, capability detection), each with a
//!   slow threshold and a deadline.
//! - [`metrics`]: Prometheus metrics, `/healthz`, `/readyz`.
//! - [`error`]: the [`Error`] type.
#![forbid(unsafe_code)]

mod agent;
mod bounded;
pub mod capabilities;
pub mod cli;
pub mod convert;
pub mod daemon;
mod error;
pub mod frr;
mod healthcheck;
pub mod icmp;
mod lane;
mod metrics;
pub mod neighbours;
mod outcome;
mod peering;
mod probe;
mod reason;
mod report;
pub mod routing;
mod routing_state;
pub mod run;
mod state;
mod status;
mod steps;
pub mod store;
mod taints;
mod ticks;
mod txn;
mod watch;

pub use error::{Error, Result};
