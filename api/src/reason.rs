//! The reason words the configurator writes into a revision's status (`failedNodes[].reason`)
//! and its Events, defined once: the configurator writes them, and it, the kubectl plugin and
//! the lab read them back (never a message: the sentence beside a word is for people).
//!
//! A reason is one CamelCase word, as Kubernetes condition and Event reasons are (tools match
//! on it).

use crate::revision::{NetworkConfigRevisionStatus, RevisionPhase};

/// A revision's analysis checks failed (the reason of the Event and of the `Analysis`
/// condition).
pub const ANALYSIS_FAILED: &str = "AnalysisFailed";

/// A node's apply did not finish within `--apply-timeout` after its agent started it.
pub const APPLY_TIMEOUT: &str = "ApplyTimeout";

/// The agent reported Failed without a reason word (or with one that is not a word).
pub const FAILED: &str = "Failed";

/// The fleet guard failed the revision: nodes regressed during its current wave (the reason of
/// the `GuardTripped` Warning Event).
pub const GUARD_TRIPPED: &str = "GuardTripped";

/// A failed node of a revision the fleet guard failed: its health checks regressed during the
/// current wave (it may never have been dispatched the revision). Only the guard writes it, so
/// a Failed revision with such a node was failed by the guard
/// ([`NetworkConfigRevisionStatus::failed_by_guard`]).
pub const HEALTH_REGRESSED: &str = "HealthRegressed";

/// A node committed the revision, then its health checks regressed before `--bake-time` was
/// over: a failure of the revision like any other.
pub const BAKE_REGRESSED: &str = "BakeRegressed";

/// The reason of a rolling-out revision's conditions while nodes that committed it bake
/// (`--bake-time`); `status.bake` says until when.
pub const BAKING: &str = "Baking";

/// The reason of a rolling-out revision's conditions while it is outside every maintenance
/// window (`MaintenanceSchedule`); `status.schedule.opensAt` says when the next one opens.
pub const OUTSIDE_MAINTENANCE_WINDOW: &str = "OutsideMaintenanceWindow";

/// The reason of a rolling-out revision's conditions while a change freeze holds it;
/// `status.schedule` names the freeze and when rollouts may go on.
pub const CHANGE_FREEZE: &str = "ChangeFreeze";

/// The reason of a rolling-out revision's conditions while a `MaintenanceSchedule` cannot be
/// read (a time zone or date the configurator does not know): every rollout is held until it
/// is fixed.
pub const MAINTENANCE_SCHEDULE_INVALID: &str = "MaintenanceScheduleInvalid";
/// A rolling-out revision reached an approval gate (`--pause-after`) and waits for a person's
/// `kubectl netrollout promote` (the reason of its `Reconciling` condition, `status.hold` and
/// the Event).
pub const AWAITING_PROMOTION: &str = "AwaitingPromotion";

/// A revision waits to start: more nodes report their tenants unreachable than
/// `--start-max-unhealthy` allows.
pub const FLEET_UNHEALTHY: &str = "FleetUnhealthy";

/// A revision waits to start: the blocking query (`--start-blocking-query`) returns something,
/// or could not be run.
pub const START_BLOCKED: &str = "StartBlocked";

/// A person promoted a revision (the Event's reason; `status.promotions` keeps who and when).
pub const PROMOTED: &str = "Promoted";

/// Whether `s` is a reason word: an ASCII capital letter, then ASCII letters and digits only
/// (at most 128 characters), e.g. `ProbeFailed`.
pub fn is_reason_word(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The reason word for a node whose agent reported Failed with `agent_reason`: the agent's own
/// word (`ProbeFailed`, `AgentCrashed`, …) when it is one, otherwise [`FAILED`] (the agent's
/// text then stays in the message).
pub fn agent_failure(agent_reason: Option<&str>) -> &str {
    agent_reason.filter(|r| is_reason_word(r)).unwrap_or(FAILED)
}

impl NetworkConfigRevisionStatus {
    /// Whether the fleet guard failed this revision: Failed, with a node failed for
    /// [`HEALTH_REGRESSED`] (a trip lists every node it counted). A retry clears the failure
    /// and with it this.
    pub fn failed_by_guard(&self) -> bool {
        self.phase == Some(RevisionPhase::Failed)
            && self
                .failed_nodes
                .iter()
                .any(|f| f.reason == HEALTH_REGRESSED)
    }

    /// The nodes the fleet guard counted against this revision, each with its failing checks.
    pub fn regressed_nodes(&self) -> impl Iterator<Item = &crate::FailedNode> {
        self.failed_nodes
            .iter()
            .filter(|f| f.reason == HEALTH_REGRESSED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FailedNode;

    #[test]
    fn reason_words_are_camel_case_words_and_sentences_are_not() {
        for ok in [
            ANALYSIS_FAILED,
            APPLY_TIMEOUT,
            FAILED,
            GUARD_TRIPPED,
            HEALTH_REGRESSED,
            AWAITING_PROMOTION,
            FLEET_UNHEALTHY,
            START_BLOCKED,
            PROMOTED,
            "ProbeFailed",
            "AgentCrashed",
            "Frr2Rejected",
        ] {
            assert!(is_reason_word(ok), "{ok}");
        }
        for bad in [
            "",
            "probeFailed",
            "Probe failed",
            "ProbeFailed: gateway unreachable",
            "did not finish applying within the apply timeout of 2m",
            "Probe-Failed",
            "Über",
        ] {
            assert!(!is_reason_word(bad), "{bad}");
        }
        assert!(!is_reason_word(&format!("A{}", "b".repeat(128))));
    }

    #[test]
    fn an_agent_failure_keeps_the_agents_word_and_falls_back_to_failed() {
        assert_eq!(agent_failure(Some("ProbeFailed")), "ProbeFailed");
        assert_eq!(agent_failure(Some("probe failed after apply")), FAILED);
        assert_eq!(agent_failure(None), FAILED);
    }

    #[test]
    fn only_a_failed_revision_with_a_regressed_node_was_failed_by_the_guard_whatever_its_message() {
        let status = |phase, reason: &str, message: &str| NetworkConfigRevisionStatus {
            phase: Some(phase),
            message: Some(message.into()),
            failed_nodes: vec![FailedNode {
                node: "n-1".into(),
                reason: reason.into(),
                failing_checks: vec!["icmp".into()],
                ..Default::default()
            }],
            ..Default::default()
        };
        let failed = RevisionPhase::Failed;
        assert!(status(failed, HEALTH_REGRESSED, "x").failed_by_guard());
        assert_eq!(
            status(failed, HEALTH_REGRESSED, "x")
                .regressed_nodes()
                .count(),
            1
        );
        // A message that reads like the guard's sentence changes nothing.
        assert!(!status(failed, APPLY_TIMEOUT, "fleet guard tripped: n-1").failed_by_guard());
        assert!(!status(failed, "ProbeFailed", "1 node failed").failed_by_guard());
        assert!(!status(RevisionPhase::Progressing, HEALTH_REGRESSED, "").failed_by_guard());
        assert!(!NetworkConfigRevisionStatus::default().failed_by_guard());
    }
}
