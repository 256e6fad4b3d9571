//! The fleet guard's input and output on the configurator's side (docs/contract.md, "Fleet
//! guard"): each node's health read from its `NodeNetworkConfig` (the agent's
//! `TenantReachable` condition and `status.health.failingChecks`), whether a revision was failed
//! by the guard (read back from its status), and the sentence of the `GuardTripped` Event.

use std::sync::Arc;

use netrollout_api::{
    NetworkConfigRevision, RevisionPhase as ApiRevisionPhase, TENANT_REACHABLE_CONDITION,
};
use netrollout_rollout::guard::{GuardTrip, Health};
use netrollout_rollout::{Timestamp, reason};

use crate::context::Context;
use crate::views::NodeConfigView;

/// The message prefix the planner writes on a revision the guard failed.
const TRIP_PREFIX: &str = "fleet guard tripped";

/// The failing checks `nnc`'s agent reports, or `None` when it reports the node reachable or
/// reports nothing (an agent that does not watch is healthy to the guard). The names come from
/// `status.health.failingChecks`; an agent that only wrote the condition gets `(unnamed)`.
pub fn failing_checks(nnc: Option<&NodeConfigView>) -> Option<Vec<String>> {
    let status = nnc?.status.as_ref()?;
    let cond = status
        .conditions
        .iter()
        .find(|c| c.type_ == TENANT_REACHABLE_CONDITION)?;
    if cond.status != "False" {
        return None;
    }
    let checks = status
        .health
        .as_ref()
        .map(|h| h.failing_checks.clone())
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| vec!["(unnamed)".to_owned()]);
    Some(checks)
}

/// Whether `nnc`'s agent reports its checks passing (`TenantReachable=True`).
pub fn reports_reachable(nnc: Option<&NodeConfigView>) -> bool {
    nnc.and_then(|n| n.status.as_ref()).is_some_and(|s| {
        s.conditions
            .iter()
            .any(|c| c.type_ == TENANT_REACHABLE_CONDITION && c.status == "True")
    })
}

/// The planner's health of a node whose agent reports `checks` failing (see
/// [`failing_checks`]; `reachable`: it reports them passing, [`reports_reachable`]). `previous`
/// is the health the fleet held for the node. A node that stays regressed keeps its `since`; one
/// the configurator saw healthy and now sees failing gets `now` (its clock when it first sees
/// the transition). A node seen failing without having been seen healthy first (the first
/// report of a freshly configured node, or any failing node when this configurator starts)
/// regressed at an unknown time before: it gets [`BEFORE_ANYTHING_SEEN`], which no wave starts
/// before, so it never counts against a rollout (docs/contract.md, "Fleet guard").
pub fn health(
    checks: Option<Vec<String>>,
    reachable: bool,
    previous: Option<&Health>,
    now: Timestamp,
) -> Health {
    let Some(checks) = checks else {
        return if reachable {
            Health::Healthy
        } else {
            Health::Unreported
        };
    };
    let since = match previous {
        Some(Health::Regressed { since, .. }) => *since,
        Some(Health::Healthy) => now,
        Some(Health::Unreported) | None => BEFORE_ANYTHING_SEEN,
    };
    Health::Regressed { since, checks }
}

/// The `since` of a node first seen regressed without having been seen healthy: before every
/// wave.
pub const BEFORE_ANYTHING_SEEN: Timestamp = Timestamp::from_millis(0);

/// Whether the fleet guard failed `ncr` (the planner's `Revision::guard_tripped`): Failed, with
/// a regressed node in its failed-node list or the guard's sentence as its message. A retry
/// clears the failure and with it this.
pub fn guard_tripped(ncr: &NetworkConfigRevision) -> bool {
    let Some(status) = ncr.status.as_ref() else {
        return false;
    };
    status.phase == Some(ApiRevisionPhase::Failed)
        && (status
            .failed_nodes
            .iter()
            .any(|f| f.reason == reason::HEALTH_REGRESSED)
            || status
                .message
                .as_deref()
                .is_some_and(|m| m.starts_with(TRIP_PREFIX)))
}

/// The note of the `GuardTripped` Warning Event: the regressed nodes with their failing checks,
/// the current wave and what happens next (bounded: an Event note holds at most 1 kB).
pub fn trip_note(trip: &GuardTrip) -> String {
    let regressed: Vec<String> = trip
        .regressed
        .iter()
        .map(|r| format!("{} ({})", r.node, r.checks.join(", ")))
        .collect();
    let next = match (trip.mode, trip.known_good.as_deref()) {
        (netrollout_rollout::guard::GuardMode::Revert, Some(g)) => {
            format!("its nodes return to known-good revision {g}")
        }
        (netrollout_rollout::guard::GuardMode::Revert, None) => {
            "no known-good revision: nothing moves".to_owned()
        }
        _ => "nothing moves (--guard=halt)".to_owned(),
    };
    let note = format!(
        "fleet guard tripped on revision {}: regressed during the current wave: {}; wave: {}; revision Failed, {next}",
        trip.revision,
        regressed.join("; "),
        if trip.wave.is_empty() {
            "none still on it".to_owned()
        } else {
            trip.wave.join(", ")
        },
    );
    bounded(note, 1000)
}

/// Tells a trip the pass carried out (its revision is Failed by now): a Warning Event
/// `GuardTripped` on the revision naming the regressed nodes and their checks, a log line and
/// `netrollout_configurator_guard_trips_total`.
pub async fn tell_trip(ctx: &Context, trip: &GuardTrip, ncrs: &[Arc<NetworkConfigRevision>]) {
    ctx.metrics().guard_trips.inc();
    let note = trip_note(trip);
    tracing::warn!(revision = %trip.revision, mode = %trip.mode, regressed = trip.regressed.len(), wave = trip.wave.len(), "{note}");
    if let Some(ncr) = ncrs
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(trip.revision.as_str()))
    {
        ctx.writer()
            .event(ncr.as_ref(), true, reason::GUARD_TRIPPED, "Guard", &note)
            .await;
    }
}

/// `s` cut to at most `max` bytes on a character boundary, with an ellipsis when cut.
fn bounded(mut s: String, max: usize) -> String {
    if s.len() <= max {
        return s;
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str("...");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use netrollout_api::{NodeHealth, NodeNetworkConfigStatus};
    use netrollout_rollout::guard::{GuardMode, Regression};

    fn nnc(status: &str, checks: &[&str]) -> NodeConfigView {
        let mut c = netrollout_api::NodeNetworkConfig::new("n1", Default::default());
        c.status = Some(NodeNetworkConfigStatus {
            health: Some(NodeHealth {
                failing_checks: checks.iter().map(|s| s.to_string()).collect(),
            }),
            conditions: vec![Condition {
                type_: TENANT_REACHABLE_CONDITION.into(),
                status: status.into(),
                reason: "ChecksFailing".into(),
                message: String::new(),
                last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    jiff::Timestamp::UNIX_EPOCH,
                ),
                observed_generation: None,
            }],
            ..Default::default()
        });
        NodeConfigView::of(&c)
    }

    #[test]
    fn a_node_is_regressed_only_when_its_condition_is_false_and_names_the_structured_checks() {
        assert_eq!(failing_checks(None), None);
        assert_eq!(failing_checks(Some(&nnc("True", &[]))), None);
        assert_eq!(failing_checks(Some(&nnc("Unknown", &["a"]))), None);
        assert_eq!(
            failing_checks(Some(&nnc("False", &["tenant-a", "gw"]))),
            Some(vec!["tenant-a".to_string(), "gw".to_string()])
        );
        assert_eq!(
            failing_checks(Some(&nnc("False", &[]))),
            Some(vec!["(unnamed)".to_string()])
        );
    }

    #[test]
    fn a_node_that_stays_regressed_keeps_the_time_it_was_first_seen_regressed() {
        let t = Timestamp::from_millis;
        let first = health(Some(vec!["a".into()]), false, Some(&Health::Healthy), t(5));
        assert_eq!(first.regressed_since(), Some(t(5)));
        let later = health(
            Some(vec!["a".into(), "b".into()]),
            false,
            Some(&first),
            t(9),
        );
        assert_eq!(later.regressed_since(), Some(t(5)));
        assert_eq!(health(None, true, Some(&later), t(10)), Health::Healthy);
        let again = health(Some(vec!["a".into()]), false, Some(&Health::Healthy), t(11));
        assert_eq!(again.regressed_since(), Some(t(11)));
    }

    #[test]
    fn a_node_first_seen_failing_without_being_seen_healthy_regressed_before_any_wave() {
        let t = Timestamp::from_millis;
        // No report yet, then failing checks: the first report of a freshly configured node.
        let quiet = health(None, false, Some(&Health::Healthy), t(3));
        assert_eq!(quiet, Health::Unreported);
        let first = health(Some(vec!["icmp".into()]), false, Some(&quiet), t(5));
        assert_eq!(first.regressed_since(), Some(BEFORE_ANYTHING_SEEN));
        // A configurator that starts sees a failing node for the first time: the same.
        let restart = health(Some(vec!["icmp".into()]), false, None, t(7));
        assert_eq!(restart.regressed_since(), Some(BEFORE_ANYTHING_SEEN));
        // Once it passes and fails again, the regression is seen happen.
        let healthy = health(None, true, Some(&first), t(8));
        let again = health(Some(vec!["icmp".into()]), false, Some(&healthy), t(9));
        assert_eq!(again.regressed_since(), Some(t(9)));
    }

    #[test]
    fn only_a_failed_revision_with_a_regressed_node_or_the_guards_sentence_was_failed_by_the_guard()
    {
        use netrollout_api::{FailedNode, NetworkConfigRevisionStatus};
        let rev = |phase, reason: &str, message: &str| {
            let mut r = NetworkConfigRevision::new("ncr-2", Default::default());
            r.status = Some(NetworkConfigRevisionStatus {
                phase: Some(phase),
                message: Some(message.into()),
                failed_nodes: vec![FailedNode {
                    node: "n-1".into(),
                    reason: reason.into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
            r
        };
        let failed = ApiRevisionPhase::Failed;
        assert!(guard_tripped(&rev(failed, "HealthRegressed", "x")));
        assert!(guard_tripped(&rev(
            failed,
            "ApplyTimeout",
            "fleet guard tripped: n-1"
        )));
        assert!(!guard_tripped(&rev(failed, "ProbeFailed", "1 node failed")));
        assert!(!guard_tripped(&rev(
            ApiRevisionPhase::Progressing,
            "HealthRegressed",
            "fleet guard tripped"
        )));
        assert!(!guard_tripped(&NetworkConfigRevision::new(
            "ncr-3",
            Default::default()
        )));
    }

    #[test]
    fn the_trip_note_names_each_regressed_node_with_its_checks_and_the_way_back() {
        let trip = GuardTrip {
            revision: "ncr-2".into(),
            mode: GuardMode::Revert,
            wave_start: Timestamp::from_millis(0),
            wave: vec!["w1".into(), "w2".into()],
            regressed: vec![Regression {
                node: "u1".into(),
                since: Timestamp::from_millis(1),
                checks: vec!["tenant-a".into()],
                dispatched: false,
            }],
            known_good: Some("ncr-1".into()),
        };
        let note = trip_note(&trip);
        for word in [
            "ncr-2",
            "u1 (tenant-a)",
            "w1, w2",
            "known-good revision ncr-1",
        ] {
            assert!(note.contains(word), "{note}");
        }
        let long = bounded("é".repeat(600), 1000);
        assert!(long.len() <= 1000 && long.ends_with("..."));
    }
}
