//! One revision's row of `status` (and `history`): its counts, verdicts and holds, and the
//! lines it adds (the fleet guard's trip, the maintenance schedule's hold).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::reason::HEALTH_REGRESSED;
use netrollout_api::{FailedNode, NetworkConfigRevision, RevisionPhase};
use serde::Serialize;

use crate::cluster::{name, phase};

/// One revision's progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RevisionRow {
    /// Name.
    pub name: String,
    /// `spec.sequence`.
    pub sequence: i64,
    /// Phase (`Pending` until the configurator writes one).
    pub phase: RevisionPhase,
    /// `spec.paused`.
    pub paused: bool,
    /// Managed nodes targeted.
    pub total: i32,
    /// Nodes Provisioned.
    pub ready: i32,
    /// Nodes dispatched and not finished.
    pub in_flight: i32,
    /// Nodes waiting for a slot.
    pub queued: i32,
    /// Nodes failed.
    pub failed: i32,
    /// Nodes whose agent did not pick up.
    pub unresponsive: i32,
    /// NotReady nodes skipped.
    pub skipped: i32,
    /// The configurator's message.
    pub message: Option<String>,
    /// Failed nodes with reasons.
    pub failed_nodes: Vec<FailedNode>,
    /// The pre-flight verdict while nodes lack what it needs (the message of its
    /// `NodesCapable=False` condition, docs/contract.md "Pre-flight").
    pub preflight: Option<String>,
    /// The verdict of its analysis checks (`status.analysis`, docs/contract.md "Analysis gates"):
    /// the phase and the configurator's message (which says how many nodes ran it).
    pub analysis: Option<String>,
    /// Its nodes baking (`status.bake`, docs/contract.md "Bake time").
    pub bake: Option<netrollout_api::RevisionBake>,
    /// The maintenance schedule holds it (`status.schedule`, docs/contract.md "Maintenance
    /// windows and freezes").
    pub schedule: Option<netrollout_api::RevisionSchedule>,
    /// What holds it for a person (`status.hold`, docs/contract.md "Approval gates").
    pub hold: Option<netrollout_api::RevisionHold>,
    /// Who promoted it, and when (`status.promotions`, oldest first).
    pub promotions: Vec<netrollout_api::Promotion>,
    /// Creation time.
    pub created: Option<Time>,
}

impl RevisionRow {
    /// The row of one revision.
    pub fn new(rev: &NetworkConfigRevision) -> Self {
        let s = rev.status.clone().unwrap_or_default();
        Self {
            name: name(rev).to_string(),
            sequence: rev.spec.sequence,
            phase: phase(rev),
            paused: rev.spec.paused,
            total: s.total,
            ready: s.ready,
            in_flight: s.in_flight,
            queued: s.queued,
            failed: s.failed,
            unresponsive: s.unresponsive,
            skipped: s.skipped,
            message: s.message,
            preflight: s
                .conditions
                .iter()
                .find(|c| c.type_ == netrollout_api::NODES_CAPABLE_CONDITION && c.status == "False")
                .map(|c| c.message.clone()),
            analysis: s
                .analysis
                .as_ref()
                .map(|a| format!("{:?}: {}", a.phase, a.message)),
            failed_nodes: s.failed_nodes,
            bake: s.bake,
            schedule: s.schedule,
            hold: s.hold,
            promotions: s.promotions,
            created: rev.metadata.creation_timestamp.clone(),
        }
    }
}

impl RevisionRow {
    /// When the fleet guard failed this revision (docs/contract.md, "Fleet guard"): one line
    /// naming the regressed nodes and their failing checks.
    pub fn guard_line(&self) -> Option<String> {
        if self.phase != RevisionPhase::Failed {
            return None;
        }
        let regressed: Vec<String> = self
            .failed_nodes
            .iter()
            .filter(|f| f.reason == HEALTH_REGRESSED)
            .map(|f| match f.failing_checks.as_slice() {
                [] => format!("{} ({})", f.node, f.message),
                checks => format!("{} ({})", f.node, checks.join(", ")),
            })
            .collect();
        if regressed.is_empty() {
            return None;
        }
        Some(format!(
            "fleet guard tripped on {}: regressed during its wave: {}",
            self.name,
            regressed.join(", ")
        ))
    }
}

/// The line for a revision the maintenance schedule holds: why, and when the next window opens
/// (from the typed `status.schedule`).
pub(super) fn schedule_line(
    name: &str,
    h: &netrollout_api::RevisionSchedule,
    now: jiff::Timestamp,
) -> String {
    use netrollout_api::reason::{CHANGE_FREEZE, OUTSIDE_MAINTENANCE_WINDOW};
    let why = match h.reason.as_str() {
        OUTSIDE_MAINTENANCE_WINDOW => "held outside the maintenance windows".to_string(),
        CHANGE_FREEZE => format!("held by change freeze {}", h.freeze),
        _ => format!("held: {}", h.message),
    };
    let opens = match &h.opens_at {
        Some(t) => {
            let secs = t.0.duration_since(now).as_secs().max(0);
            format!(
                "next window opens at {} (in {}h{:02}m)",
                t.0,
                secs / 3600,
                secs % 3600 / 60
            )
        }
        None => "no window opens within 400 days".into(),
    };
    format!("{name} {why}: {opens}")
}
