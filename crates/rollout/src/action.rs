//! What the planner asks the configurator to do, each with a human-readable reason.

use crate::analysis::Gate;
use crate::approval::Hold;
use crate::guard::GuardTrip;
use crate::state::{DispatchRecord, RevisionPhase, Unmet};
use crate::time::Timestamp;

/// The result of one planning pass.
///
/// Execute `actions` **in order** and stop at the first write that fails, then plan again from
/// fresh state: later actions may depend on earlier ones (a rollback follows the write that
/// marks a revision Failed). Every action is idempotent, so re-planning is always safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The actions, in execution order.
    pub actions: Vec<Action>,
    /// Counts and the decision taken, for logs, metrics and status.
    pub summary: Summary,
}

/// One write for the configurator to perform. Every variant carries a `reason` for the log line
/// and the Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Set `status.phase` of a revision (with `reason` as its message). For `Failed`,
    /// `failed_nodes` lists the nodes that failed it.
    SetRevisionPhase {
        /// Revision name.
        revision: String,
        /// The new phase.
        phase: RevisionPhase,
        /// Why.
        reason: String,
        /// The failed nodes (only for `Failed`, otherwise empty).
        failed_nodes: Vec<NodeFailure>,
    },
    /// The agent never picked up `revision` within the pickup timeout: set the node's spec back
    /// to `restore` (`None`: clear it), delete its dispatch record and persist
    /// `unresponsive_since = at`. Not a config failure; the node is retried later.
    MarkUnresponsive {
        /// Node name.
        node: String,
        /// The revision that was withdrawn.
        revision: String,
        /// The spec revision to put back.
        restore: Option<String>,
        /// Now.
        at: Timestamp,
        /// Why.
        reason: String,
    },
    /// Persist a dispatch record without changing the spec: the first sighting of the agent
    /// applying (`picked_up_at`), or adoption of a spec that has no record.
    RecordDispatch {
        /// Node name.
        node: String,
        /// The record to persist.
        record: DispatchRecord,
        /// Why.
        reason: String,
    },
    /// Set `spec.revision = revision` on every listed node's `NodeNetworkConfig`, each together
    /// with its dispatch record (in the same write), and clear `unresponsive_since`.
    Dispatch {
        /// The revision sent.
        revision: String,
        /// Why these nodes get it.
        kind: DispatchKind,
        /// The nodes, in dispatch order, each with the record to persist.
        nodes: Vec<NodeDispatch>,
        /// Why.
        reason: String,
    },
    /// Delete an old revision (history limits); no node refers to it.
    Prune {
        /// Revision name.
        revision: String,
        /// Why.
        reason: String,
    },
}

impl Action {
    /// The human-readable reason, for logs and Events.
    pub fn reason(&self) -> &str {
        match self {
            Action::SetRevisionPhase { reason, .. }
            | Action::MarkUnresponsive { reason, .. }
            | Action::RecordDispatch { reason, .. }
            | Action::Dispatch { reason, .. }
            | Action::Prune { reason, .. } => reason,
        }
    }
}

/// Why a dispatch happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DispatchKind {
    /// A node moves to the rollout target.
    Rollout,
    /// A node with no config gets its first one.
    Join,
    /// A node moves back to a known-good revision after a failure.
    Rollback,
}

/// One node of a [`Action::Dispatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDispatch {
    /// Node name.
    pub node: String,
    /// The record to persist with the spec change (`previous` is the spec it replaces).
    pub record: DispatchRecord,
}

/// A node that failed a revision, as listed in the revision's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    /// Node name.
    pub node: String,
    /// Why: the configurator writes it as the failed node's reason word.
    pub cause: FailureCause,
    /// What went wrong, for people: the agent's reason and message, or the apply timeout.
    pub message: String,
    /// When it was detected (configurator clock).
    pub at: Timestamp,
}

/// Why a node failed a revision. The planner knows causes, not words: the configurator writes
/// each as the reason word the API defines for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureCause {
    /// The agent reported Failed, with its reason as reported (`ProbeFailed`, `AgentCrashed`,
    /// …; absent or not a word when the agent gave none).
    Reported(Option<String>),
    /// The apply did not finish within `--apply-timeout` after the agent started it.
    ApplyTimeout,
    /// The fleet guard counted the node: its health checks regressed during the current wave
    /// (it may never have been dispatched the revision).
    HealthRegressed {
        /// The checks its agent reports failing.
        checks: Vec<String>,
    },
    /// The node committed the revision, then its health regressed before its bake time was
    /// over (`--bake-time`).
    BakeRegressed {
        /// The checks its agent reports failing.
        checks: Vec<String>,
    },
}

/// The target's bake: its nodes that committed it and must stay healthy for `--bake-time`
/// before their slots (or their wave) are released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bake {
    /// The revision.
    pub revision: String,
    /// Its nodes baking now.
    pub nodes: usize,
    /// When the last of them is done (configurator clock).
    pub until: Timestamp,
}

/// Counts and the overall decision of one pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// Nodes managed (matching the selector, not being deleted).
    pub managed: usize,
    /// Managed nodes that are NotReady (skipped, caught up when Ready).
    pub not_ready: usize,
    /// The resolved update limit.
    pub limit: usize,
    /// Nodes in flight after this plan's actions.
    pub in_flight: usize,
    /// Those nodes by name, in fleet order (the ones already in flight, then the ones this
    /// plan dispatches): once every one of them has reported, the next pass can move the
    /// rollout on, so the configurator runs it at once instead of after its debounce.
    pub awaited: Vec<String>,
    /// The revision nodes are being moved to, if any.
    pub target: Option<String>,
    /// Managed nodes that run the target and reported Provisioned for it.
    pub target_updated: usize,
    /// Managed nodes that failed the target (reported Failed, or the apply timed out).
    pub target_failed: usize,
    /// What the planner is doing.
    pub mode: Mode,
    /// The fleet guard tripped in this pass (and failed the target): the regressed nodes and
    /// their failing checks, for the Event and the status line.
    pub guard: Option<GuardTrip>,
    /// Pre-flight: the managed nodes the target still has to reach that lack what it needs
    /// for them; none of them gets it.
    pub unmet: Vec<Unmet>,
    /// Pre-flight holds the target: it is rolling out (Pending or Progressing) and `unmet`
    /// is not empty, so it is dispatched to no node.
    pub held: bool,
    /// The target's analysis gate, when it has checks and is rolling out: whether the
    /// configurator must measure now ([`Gate::due`]) and whether it holds the target.
    pub analysis: Option<Gate>,
    /// The target's nodes baking (`--bake-time`), if any.
    pub bake: Option<Bake>,
    /// The maintenance schedule holds the target: outside a window or in a freeze, nothing
    /// of it is dispatched until it opens ([`crate::schedule`]).
    pub schedule: Option<crate::schedule::ScheduleHold>,
    /// What holds the target for a person: an approval gate it reached, or the start checks
    /// before its first dispatch ([`crate::approval`]).
    pub hold: Option<Hold>,
}

/// The overall decision of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// No revision to roll out.
    #[default]
    Idle,
    /// Rolling the newest revision out (or done with it).
    RollingOut,
    /// The newest revision failed; moving nodes back to the newest Succeeded revision.
    RollingBack,
    /// The newest revision failed and no known-good revision exists, or more than
    /// `max_failures` nodes failed the rollback to it, or the fleet guard failed it with
    /// `--guard=halt`: nothing moves.
    Halted,
    /// Paused (globally or the target revision): no new dispatches; in-flight nodes finish.
    Paused,
}
