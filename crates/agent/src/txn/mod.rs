//! The agent's apply transaction as a pure state machine, in the style of quinn-proto: the
//! driver ([`crate::agent`]) hands [`Core::handle`] an [`Event`] and the time, and runs the
//! [`Effect`]s it returns, in order. The core does no I/O: no async runtime, no netlink, no file
//! system, no clock of its own (`hack/test.d/10-purity.sh` checks its files' imports), so every
//! rule of the agent's part of the contract is a unit test driven against the dataplane's model
//! kernel and a model FRR, and every crash point between two effects can be enumerated
//! (`tests`).
//!
//! One transaction is one [`Core`]: started by [`Event::Spec`] (a `NodeNetworkConfig` seen) or
//! [`Event::Started`] (the process started with this state on disk: crash recovery). Each batch
//! of effects ends with at most one effect that asks a question (render FRR, apply kernel or
//! FRR, probe, sleep); its answer is the next event. The other effects (disk writes, status,
//! metrics) are done in order before it; a disk write that fails ends the transaction in the
//! driver (the agent reports it cannot proceed), exactly where the state on disk says.
//!
//! Layout: the types here; `machine`: [`Core`]; `recovery`: the decision on a journal found on
//! start; `verdict`: the status reports of outcomes; `tests`: the harness (model kernel, model
//! FRR, model disk), the contract's rules and the crash points.

use std::time::{Duration, Instant};

use netrollout_api::{NodeConfig, NodePhase};
use netrollout_dataplane::Desired;

use crate::convert::{ConvertError, Vtep};
use crate::outcome::Outcome;
use crate::reason::FailureReason;
use crate::report::Report;
use crate::state::{Failures, Journal, LastKnownGood};

mod machine;
pub mod recovery;
mod verdict;

#[cfg(test)]
mod tests;

pub use machine::Core;
pub use recovery::{Recovery, decide, next_attempt};

/// The settings a transaction needs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// VTEP settings for VXLAN devices.
    pub vtep: Vtep,
    /// How long probes may take to pass after a change before the agent restores.
    pub probe_timeout: Duration,
    /// Pause between probe rounds after a change.
    pub probe_interval: Duration,
    /// How long probes must keep passing once they pass before the change is committed.
    pub probe_hold: Duration,
    /// Whether FRR is part of the transaction.
    pub frr: bool,
}

/// The time of an event: a monotonic instant (timeouts, holds) and the wall clock (times in
/// the status and the failure memory). The driver reads both; tests move them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Now {
    /// Monotonic time.
    pub instant: Instant,
    /// Wall-clock time.
    pub wall: jiff::Timestamp,
}

/// What the state directory held when the transaction started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Disk {
    /// The last-known-good record (the empty config when none was written).
    pub lkg: LastKnownGood,
    /// Whether the last-known-good file exists.
    pub has_lkg: bool,
    /// The journal, if an apply was interrupted.
    pub journal: Option<Journal>,
    /// The revisions that failed on this node.
    pub failures: Failures,
    /// Not on disk but in the driver's memory: the journal of this process's last transaction
    /// when it ended with an error (a state write refused, FRR down, a restore refused), not a
    /// crash. The next attempt of the same revision keeps its number: only crashes count
    /// towards `AgentCrashed` ([`next_attempt`]). A restart forgets it.
    pub stopped: Option<Journal>,
}

/// What was already said about a revision: by this process (the last report published) or in
/// the object's status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Said {
    /// The last report this process published.
    pub published: Option<Report>,
    /// `status.observedRevision`.
    pub observed_revision: Option<String>,
    /// `status.phase`.
    pub phase: Option<NodePhase>,
    /// The `observedGeneration` of the `NetworkConfigReady` condition in the status.
    pub observed_generation: Option<i64>,
    /// Report even what the status already says (after an agent-level error, on start).
    pub force_report: bool,
}

/// The node's `NodeNetworkConfig` as the transaction needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// `spec.revision`.
    pub revision: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `spec.config`.
    pub config: NodeConfig,
    /// The `netrollout.io/retry` annotation.
    pub retry: Option<String>,
    /// What was already said.
    pub said: Said,
}

/// What happened, handed to [`Core::handle`].
// A transaction takes a handful of events, each moved once: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The process started with this state on disk: recover from a journal, if any.
    Started(Disk),
    /// The node's `NodeNetworkConfig` was seen, with the state on disk.
    Spec(Spec, Disk),
    /// Answer to [`Effect::RenderFrr`]: the full FRR text, or why this node cannot route the
    /// config (the revision fails with `InvalidConfig`).
    FrrRendered(Result<String, String>),
    /// The kernel took every op of an [`Effect::ApplyKernel`].
    KernelApplied,
    /// The kernel refused an op (the op, the object and the kernel's errno, as text).
    KernelFailed(String),
    /// FRR runs the text of an [`Effect::ApplyFrr`].
    FrrApplied,
    /// FRR rejected a line: FRR's own message.
    FrrRejected(String),
    /// FRR could not be reached or reloaded.
    FrrFailed(String),
    /// The outcomes of a probe round ([`Effect::Probe`]).
    Probed(Vec<Outcome>),
    /// The sleep of an [`Effect::Sleep`] is over.
    TimerFired,
    /// The question asked last (render FRR, apply to the kernel or FRR, a probe round) has
    /// had no answer for its slow threshold: the core says what it waits for and since when
    /// (a status report and a metric); the driver keeps waiting for the answer.
    Slow,
    /// The question asked last had no answer by its deadline: an error of that step, handled
    /// by the transaction's rules ([`Part`] says which part did not answer). The driver
    /// keeps what it handed the part running: the next step on that part waits for it first,
    /// so a part that answers late never leaves its work behind a later step's.
    TimedOut,
}

/// The name of the check a probe round fails when it did not finish by its deadline.
pub const PROBE_ROUND: &str = "probe round";

/// The part of the node a question waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// The kernel, over netlink.
    Kernel,
    /// FRR (its daemons, vtysh, the base file).
    Frr,
    /// The probes (a round of checks).
    Probes,
    /// The state directory.
    Disk,
}

impl Part {
    /// The name in step lines and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Kernel => "kernel",
            Part::Frr => "frr",
            Part::Probes => "probes",
            Part::Disk => "disk",
        }
    }

    /// The status `reason` while the agent waits on this part past its slow threshold.
    pub fn waiting_reason(self) -> &'static str {
        match self {
            Part::Kernel => "WaitingForKernel",
            Part::Frr => "WaitingForFrr",
            Part::Probes => "WaitingForProbes",
            Part::Disk => "WaitingForDisk",
        }
    }

    /// What the part is, for people: `the kernel (netlink)`.
    pub fn describe(self) -> &'static str {
        match self {
            Part::Kernel => "the kernel (netlink)",
            Part::Frr => "FRR",
            Part::Probes => "the probes",
            Part::Disk => "the state directory",
        }
    }
}

/// Why the kernel or FRR is changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// Applying the revision.
    Apply,
    /// Restoring last-known-good.
    Restore,
}

/// The FRR text to load.
#[derive(Clone, Debug, PartialEq)]
pub enum FrrText {
    /// This full text (base + managed).
    Full(String),
    /// The text rendered from this config and the current base file (a last-known-good record
    /// written before FRR support).
    Render(NodeConfig),
}

/// A probe round.
#[derive(Clone, Debug, PartialEq)]
pub enum Round {
    /// Before the change: connectivity, and the routing checks of the config running now.
    Before {
        /// The config running now (last-known-good).
        current: NodeConfig,
    },
    /// After the change: connectivity, these links up, the routing checks of `config` against
    /// the routing state seen before.
    After {
        /// The links the config creates.
        links: Vec<String>,
        /// The config applied.
        config: NodeConfig,
        /// The checks not to run: they failed before the change, so they are not judged, and
        /// waiting for them (a ping that cannot be answered takes its whole timeout) would
        /// only slow every round down.
        skip: Vec<String>,
    },
    /// After a restore: connectivity and the routing checks of the restored config.
    Restored {
        /// The config restored.
        config: NodeConfig,
    },
}

/// A metric to count.
#[derive(Clone, Debug, PartialEq)]
pub enum Metric {
    /// A revision was committed.
    Provisioned,
    /// A revision failed here.
    Failed(FailureReason),
    /// A probe failed the change (the probe's kind, e.g. `tcp`).
    ProbeFailed(String),
    /// How long probing after the change took, and whether the probes passed.
    ProbeTime {
        /// From the first round after the change to the verdict.
        took: Duration,
        /// Whether they passed (the change is committed).
        passed: bool,
    },
    /// The probes after the change passed for the first time; the change is committed once
    /// they keep passing for this hold (`--probe-hold`).
    Holding(Duration),
    /// Last-known-good was restored.
    Restored,
    /// A question to this part had no answer for its slow threshold.
    Slow(Part),
    /// A question to this part had no answer by its deadline.
    TimedOut(Part),
}

/// What the driver does, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Write the last-known-good record (atomically, [`crate::state::write_steps`]).
    WriteLastKnownGood(LastKnownGood),
    /// Write the journal ("applying R").
    WriteJournal(Journal),
    /// Remove the journal.
    ClearJournal,
    /// Write the memory of failed revisions.
    WriteFailures(Failures),
    /// Write the memory of failed revisions before a restore, so that the revision stays
    /// Failed whatever happens to the restore. A write the disk refuses does not stop the
    /// restore (the network comes first): the driver logs it and goes on.
    WriteFailuresBeforeRestore(Failures),
    /// Publish a status report (best effort; never waited for).
    Publish(Report),
    /// Count a metric.
    Record(Metric),
    /// Render the full FRR text of a config (answer: [`Event::FrrRendered`]).
    RenderFrr(NodeConfig),
    /// Make the kernel's managed objects equal `desired` (answer: [`Event::KernelApplied`] or
    /// [`Event::KernelFailed`]).
    ApplyKernel {
        /// The kernel objects wanted.
        desired: Desired,
        /// Apply or restore.
        purpose: Purpose,
    },
    /// Write `frr.conf` and have FRR load it (answer: [`Event::FrrApplied`],
    /// [`Event::FrrRejected`] or [`Event::FrrFailed`]).
    ApplyFrr {
        /// The text.
        text: FrrText,
        /// Apply or restore.
        purpose: Purpose,
    },
    /// Run a probe round (answer: [`Event::Probed`]).
    Probe(Round),
    /// Wait (answer: [`Event::TimerFired`]).
    Sleep(Duration),
}

impl Effect {
    /// The part an asking effect waits on, whose answer may be slow or not come by the
    /// deadline ([`Event::Slow`], [`Event::TimedOut`]); `None` for the other effects and for a
    /// sleep (its answer is the timer itself).
    pub fn waits_on(&self) -> Option<Part> {
        match self {
            Effect::RenderFrr(_) | Effect::ApplyFrr { .. } => Some(Part::Frr),
            Effect::ApplyKernel { .. } => Some(Part::Kernel),
            Effect::Probe(_) => Some(Part::Probes),
            Effect::WriteLastKnownGood(_)
            | Effect::WriteJournal(_)
            | Effect::ClearJournal
            | Effect::WriteFailures(_)
            | Effect::WriteFailuresBeforeRestore(_)
            | Effect::Publish(_)
            | Effect::Record(_)
            | Effect::Sleep(_) => None,
        }
    }
}

/// A transaction that cannot go on: the agent reports it cannot proceed, and the state on disk
/// says where it stopped.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CoreError {
    /// The last-known-good config cannot be converted (e.g. the VTEP flags changed).
    #[error("last-known-good config: {0}")]
    LastKnownGood(#[source] ConvertError),
    /// Restoring last-known-good failed in the kernel or in FRR.
    #[error("restoring the last-known-good config failed: {0}")]
    Restore(String),
    /// A part did not answer a question asked before anything was changed (FRR while
    /// rendering, the probes before the change): nothing was touched; the agent reports it and
    /// tries again.
    #[error(
        "{} did not answer within {} s while {what}; nothing was changed, the agent tries again",
        part.describe(),
        waited.as_secs()
    )]
    Unanswered {
        /// The part.
        part: Part,
        /// What the transaction was doing.
        what: &'static str,
        /// How long it waited.
        waited: Duration,
    },
    /// An event that does not answer the effect asked for (a driver bug).
    #[error("the transaction got {event} while {state}; this is a bug in the agent's driver")]
    Unexpected {
        /// The event.
        event: String,
        /// What the transaction was waiting for.
        state: &'static str,
    },
}
