//! The observed state the planner reads: revisions and nodes, in the planner's own types.
//!
//! The configurator converts `NetworkConfigRevision`, `Node` and `NodeNetworkConfig` objects
//! (including the dispatch record it persisted as an annotation) into these.

use crate::analysis::Analysis;
use crate::approval::Approval;
use crate::guard::Health;
use crate::time::Timestamp;

/// Everything the planner looks at in one pass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// All `NetworkConfigRevision`s, in any order.
    pub revisions: Vec<Revision>,
    /// The nodes matching `--node-selector` (the caller applies the selector), in any order,
    /// including nodes being deleted.
    pub nodes: Vec<Node>,
}

/// One `NetworkConfigRevision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// The object name (derived from the content hash); the identity used everywhere.
    pub name: String,
    /// `spec.sequence`: orders revisions (never the creation time).
    pub sequence: u64,
    /// Content hash of the snapshot.
    pub hash: String,
    /// `status.phase`.
    pub phase: RevisionPhase,
    /// `spec.paused`: no new dispatches of this revision.
    pub paused: bool,
    /// The fleet guard failed it (its status says `GuardTripped`; cleared with the failure when
    /// a person retries it). With `--guard=halt` such a failure halts instead of rolling back.
    pub guard_tripped: bool,
    /// Pre-flight: the nodes whose config under this revision needs what their agent reported
    /// missing (the configurator compares each node's rendered config with its capabilities).
    /// No node listed here gets this revision, and while a managed node that does not run it
    /// yet is listed, it is not rolled out to any node.
    pub unmet: Vec<Unmet>,
    /// Its analysis checks and their last verdict (the configurator measures them when a pass
    /// says so and fills this in; [`crate::analysis`]).
    pub analysis: Analysis,
    /// Its current targeting is an undo: the inputs came back to its content while it was
    /// Succeeded (known-good), so the configurator raised it. An undo is never held by the
    /// maintenance schedule ([`crate::schedule`]).
    pub undo: bool,
    /// The promotions a person gave it (`kubectl netrollout promote`; [`crate::approval`]).
    pub approval: Approval,
}

/// A node that lacks capabilities a revision's config for it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    /// Node name.
    pub node: String,
    /// The missing capabilities' words (`vrf`, `bgpd`, …), sorted.
    pub missing: Vec<String>,
}

impl Revision {
    /// A new revision in phase `Pending`, not paused.
    pub fn new(name: impl Into<String>, sequence: u64, hash: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            sequence,
            hash: hash.into(),
            phase: RevisionPhase::Pending,
            paused: false,
            guard_tripped: false,
            unmet: Vec::new(),
            analysis: Analysis::default(),
            undo: false,
            approval: Approval::default(),
        }
    }
}

/// The rollout phase of a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RevisionPhase {
    /// Created, nothing dispatched yet (also: no status written yet).
    Pending,
    /// Being rolled out.
    Progressing,
    /// Every counted node (managed, Ready, not marked unresponsive) finished it when it was
    /// the target, at least one Provisioned: known-good, a rollback target. It stays Succeeded
    /// when a newer revision follows. When it is the target again (its sequence raised) it is
    /// Progressing while counted nodes run another revision, and Failed if more than
    /// `max_failures` nodes fail it then.
    Succeeded,
    /// More than `max_failures` nodes failed it; never dispatched again until a person retries.
    Failed,
    /// A newer revision replaced it before it finished. When it is the target again (its
    /// sequence raised) it is Progressing from that pass on.
    Superseded,
    /// Never rolled out: its content is identical to a Failed revision.
    Blocked,
}

impl RevisionPhase {
    /// Whether a revision in this phase may never be dispatched.
    pub fn is_bad(self) -> bool {
        matches!(self, RevisionPhase::Failed | RevisionPhase::Blocked)
    }
}

/// One managed node, with its `NodeNetworkConfig`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Node name (also the name of its `NodeNetworkConfig`).
    pub name: String,
    /// The Node's `Ready` condition is True.
    pub ready: bool,
    /// The Node has a `deletionTimestamp`: it is leaving and dropped from all counts.
    pub deleting: bool,
    /// The node's zone (`""` without one); nodes are dispatched round-robin over zones. The
    /// configurator reads it from the zone label of the wire contract.
    pub zone: String,
    /// The node's failure domain (`""` without one: the nodes without the label form one
    /// domain together). The configurator reads it from the `--domain-key` label; read only
    /// with [`crate::Settings::domains`] set.
    pub domain: String,
    /// Whether the node is a canary, dispatched before all other configured nodes (the canary
    /// label of the wire contract set to `"true"`).
    pub canary: bool,
    /// The configurator itself runs on this node: it is updated last.
    pub runs_configurator: bool,
    /// `spec.revision` of its `NodeNetworkConfig` (`None`: no config yet).
    pub spec_revision: Option<String>,
    /// The status its agent reported, if any.
    pub status: Option<NodeStatus>,
    /// The dispatch record the configurator persisted when it last changed the spec.
    pub dispatch: Option<DispatchRecord>,
    /// When the planner last marked it Unresponsive (persisted by the configurator; cleared by
    /// the next dispatch). Such nodes are retried only after `pickup_timeout` has passed again.
    pub unresponsive_since: Option<Timestamp>,
    /// The health its agent reports after committing (the fleet guard's input).
    pub health: Health,
}

impl Node {
    /// A Ready node with no labels and no config.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ready: true,
            deleting: false,
            zone: String::new(),
            domain: String::new(),
            canary: false,
            runs_configurator: false,
            spec_revision: None,
            status: None,
            dispatch: None,
            unresponsive_since: None,
            health: Health::Healthy,
        }
    }

    /// The zone (`""` without one).
    pub fn zone(&self) -> &str {
        &self.zone
    }

    /// Whether the node is a canary.
    pub fn is_canary(&self) -> bool {
        self.canary
    }

    /// The status, but only if it is about the current spec revision: stale status
    /// (`observedRevision != spec.revision`) never counts.
    pub fn current_status(&self) -> Option<&NodeStatus> {
        let spec = self.spec_revision.as_deref()?;
        self.status.as_ref().filter(|s| s.observed_revision == spec)
    }

    /// The dispatch record, but only if it is about the current spec revision.
    pub fn current_dispatch(&self) -> Option<&DispatchRecord> {
        let spec = self.spec_revision.as_deref()?;
        self.dispatch.as_ref().filter(|d| d.revision == spec)
    }
}

/// `NodeNetworkConfig.status`, written by the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    /// The revision this status is about.
    pub observed_revision: String,
    /// How far the agent got with it.
    pub phase: NodePhase,
    /// Agent clock; informational only (timeouts use the configurator's clock).
    pub started_at: Option<Timestamp>,
    /// Agent clock; informational only.
    pub finished_at: Option<Timestamp>,
    /// The agent's reason word for a failure (`ProbeFailed`, `AgentCrashed`, …), if any.
    pub reason: Option<String>,
    /// The agent's message for a failure, if any.
    pub message: Option<String>,
}

/// The phase an agent reports for the revision it observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodePhase {
    /// Applying: the node's spec must not change until it finishes.
    Provisioning,
    /// Applied and probed successfully.
    Provisioned,
    /// Probes failed; the agent restored its last-known-good config.
    Failed,
}

/// What the configurator persisted when it changed a node's spec, so that a new leader can
/// compute timeouts and withdraw a dispatch without any memory of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchRecord {
    /// The revision dispatched.
    pub revision: String,
    /// When (configurator clock).
    pub at: Timestamp,
    /// The spec revision the node had before (restored if the agent never picks it up).
    pub previous: Option<String>,
    /// When the configurator first saw the agent report Provisioning for it.
    pub picked_up_at: Option<Timestamp>,
    /// The revision's sequence when it was dispatched: the targeting the dispatch belongs to.
    /// A raise (an undo, inputs returning to its content, a retry) makes the revision the
    /// target again under a new sequence, and only dispatches of the current one make its wave
    /// ([`DispatchRecord::of_targeting`]). `None`: a record written before dispatches named
    /// their targeting, of no current wave.
    pub sequence: Option<u64>,
    /// When the configurator first saw the agent report Provisioned for it (recorded only with
    /// a bake time: the bake runs from here).
    pub settled_at: Option<Timestamp>,
}

impl DispatchRecord {
    /// Whether this dispatch belongs to the current targeting of `revision`: it dispatched that
    /// revision while it had its current sequence.
    pub fn of_targeting(&self, revision: &Revision) -> bool {
        self.revision == revision.name && self.sequence == Some(revision.sequence)
    }
}
