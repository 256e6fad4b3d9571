//! The rollout planner of netrollout: a pure state machine that decides, from observed state
//! and the current time, which nodes get which `NetworkConfigRevision` next.
//!
//! It implements "The plan" of the contract (`docs/contract.md`): a global update limit across revisions, dispatch
//! order (unconfigured, canaries, zones round-robin, names, the configurator's node last),
//! pickup and apply timeouts measured on the configurator's clock, failure budget, rollback
//! only to known-good revisions, supersession, joins, pauses and bounded history. It does no
//! I/O: no clock, no async, no Kubernetes client. The configurator converts API objects into
//! [`State`], calls [`plan`] and executes the returned [`Action`]s in order.
//!
//! ```
//! use netrollout_rollout::{plan, Action, Node, Revision, Settings, State, Timestamp};
//! let state = State {
//!     revisions: vec![Revision::new("ncr-abc", 1, "abc")],
//!     nodes: vec![Node::new("node-a"), Node::new("node-b")],
//! };
//! let p = plan(&state, Timestamp::from_millis(0), &Settings::default());
//! assert!(matches!(&p.actions[1], Action::Dispatch { nodes, .. } if nodes.len() == 1));
//! ```
//!
//! # Layout
//! - [`state`]: the observed state (revisions, nodes, dispatch records).
//! - [`fleet`]: the nodes kept by name with an index of them by state, updated node by node, so
//!   a pass ([`plan_with`]) reads the clock only for the nodes without an outcome.
//! - [`settings`]: update limit (`"5"` / `"20%"`), strategy (waves or window), timeouts,
//!   failure budget, history limits.
//! - [`action`]: the plan, its actions and summary.
//! - [`domain`]: failure domains (`--domain-key`): a cap per domain, domains one after the
//!   other, a budget of failed domains (`plan/domains.rs` is its step).
//! - [`approval`]: approval gates (`--pause-after`, promotes) and the start checks
//!   (`--start-max-unhealthy`, a blocking query) (`plan/approval.rs` is its step).
//! - [`analysis`]: analysis gates: a revision with checks rolls out wave by wave, each wave
//!   only after the checks passed with the ones before (`plan/analysis.rs` is its step).
//! - `plan`: the planning pass ([`plan()`], [`plan_with`]), which reads the fleet's index into
//!   per-revision tallies; `plan/nodes.rs` holds its node-level half, `plan/eligible.rs` picks
//!   a wave from the index.
//! - `assess`: each node's condition relative to its spec revision.
//! - [`order`]: dispatch order ([`order::first_in_dispatch_order_of`] picks a wave from bounded
//!   per-group heaps, without collecting or sorting the candidates).
//! - [`schedule`]: maintenance windows and freezes as spans of time (`plan/schedule.rs` is
//!   its step).
//! - `prune`: history limits.
//! - [`time`]: caller-supplied instants.
//! - `sim` (feature `sim`, for this crate's tests and benchmark only): the deterministic fleet
//!   simulator that drives [`plan`] in virtual time against simulated agents.
//! - [`lifecycle`]: the revision lifecycle (create, reuse, raise, refuse, retry, `Accepted`
//!   verdicts), the other pure decision of the configurator, on its own small types.
//!
//! The contract and the decisions taken where the contract leaves room are in `docs/planner.md`.
#![forbid(unsafe_code)]

pub mod action;
pub mod analysis;
pub mod approval;
mod assess;
pub mod domain;
pub mod fleet;
pub mod guard;
pub mod lifecycle;
pub mod order;
mod plan;
mod prune;
pub mod schedule;
pub mod settings;
#[cfg(feature = "sim")]
pub mod sim;
pub mod state;
pub mod time;

pub use action::{
    Action, Bake, DispatchKind, FailureCause, Mode, NodeDispatch, NodeFailure, Plan, Summary,
};
pub use domain::{DomainOrder, DomainPolicy, ParseDomainOrderError};
pub use fleet::Fleet;
pub use plan::{plan, plan_with};
pub use schedule::{Closed, Freeze, Schedule, ScheduleHold, Span};
pub use settings::{
    HistoryLimits, ParseRolloutStrategyError, ParseUpdateLimitError, RolloutStrategy, Settings,
    UpdateLimit,
};
pub use state::{
    DispatchRecord, Node, NodePhase, NodeStatus, Revision, RevisionPhase, State, Unmet,
};
pub use time::Timestamp;
