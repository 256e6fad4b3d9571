//! The netrollout configurator: the leader-elected controller that turns the four input kinds
//! into content-addressed `NetworkConfigRevision`s and rolls them out to `NodeNetworkConfig`s in
//! waves, as the contract (`docs/contract.md`) describes. It is the I/O shell around `netrollout-render` (validation,
//! hashing, per-node configs) and `netrollout-rollout` (the pure planner): it watches the API,
//! converts what it sees into the planner's types, and carries the planner's actions out with
//! timeouts, retries with backoff, log lines, Events and metrics.
//!
//! Layout (private modules but `controller`; the crate exports [`run`], [`Args`],
//! [`Metrics`], [`Error`] and what `main` and the end-to-end tests use):
//! - `args`: command-line flags and the planner settings they give.
//! - `analysis`: analysis gates: the `RolloutAnalysis` objects a new revision copies, each
//!   revision's checks and verdict for the planner, and the checks measured against Prometheus
//!   after a wave (verdict in `status.analysis`, condition `AnalysisPassed`, Event).
//! - [`controller`]: [`run`] — watches, leader election (kube-lease-manager), HTTP endpoints
//!   and the debounced reconcile loop.
//! - `reconcile`: `Passes`, what passes keep between them (the planner settings, the fleet,
//!   the render cache, progress and halt memos), and one pass — retries, inputs → revision,
//!   plan, execute, progress, gauges.
//! - `revisions`: converts the inputs and revisions into the types of the revision lifecycle
//!   (`netrollout_rollout::lifecycle`, the pure decision: retry, create, reuse, wait, clash,
//!   block, `Accepted` verdicts) and carries its actions out as API writes.
//! - `accepted`: writes the `Accepted` condition on inputs.
//! - `conditions`: a revision's kstatus conditions (`Ready`, `Reconciling`, `Stalled`) and
//!   `InputsRefused`, from its phase (pure), written with each phase and when out of date.
//! - `memo`: what this replica already wrote or told (typed memos).
//! - `convert`: API objects → planner types; the dispatch record and times to and from the
//!   API's typed annotations (`netrollout_api::annotations`).
//! - `execute`: the planner's actions as API writes.
//! - `fleet`: the planner's node state, kept up to date from watch events (a pass costs what
//!   changed, not the fleet size), with the render nodes and the failure index.
//! - `health`: the fleet guard's input (each node's `TenantReachable` health, the time the
//!   configurator first saw it regress) and its Event note.
//! - `preflight`: each revision's nodes that lack what its config for them needs (from their
//!   reported capabilities), and the target's `NodesCapable` condition and Event.
//! - `late_failures`: failure reports that arrive after a revision was halted, added to its
//!   failed-node list and counts.
//! - `render_cache`: revisions rendered once per node set.
//! - `overlay`: own writes laid over the watch caches until the caches catch up.
//! - `views`: what the configurator decodes of the node configs it watches and writes (their
//!   metadata without managedFields, the spec's revision, the status; never the rendered
//!   config).
//! - `context`: what everything a pass calls shares, with private fields and no flags: a read
//!   view of the watch caches with the overlays, the guarded writer (leader, timeout, counter,
//!   Events, overlays), the metrics.
//! - `spans`: the tracing span of each action (create revision, dispatch, halt, revert, ...).
//! - `metrics`: Prometheus metrics, `/metrics`, `/healthz`, `/readyz`.
//! - `error`: the error type, [`Error`].
//!
//! Pause, resume and retry work through the API (see `docs/configurator.md`): `spec.paused` on
//! a revision, `data.paused: "true"` in the `netrollout-control` ConfigMap, and the
//! `netrollout.io/retry` annotation on a Failed revision.

#![forbid(unsafe_code)]

mod accepted;
mod analysis;
mod approval;
mod args;
mod conditions;
mod context;
pub mod controller;
mod convert;
mod error;
mod execute;
mod fleet;
mod health;
mod late_failures;
mod memo;
mod metrics;
mod overlay;
mod preflight;
mod reconcile;
mod render_cache;
mod revisions;
mod schedule;
mod spans;
mod views;

pub use args::{Args, LogFormat};
pub use controller::run;
pub use error::{Error, Result};
pub use metrics::Metrics;
