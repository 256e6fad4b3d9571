//! The fleet guard's input and output on the configurator's side (docs/contract.md, "Fleet
//! guard"): each node's health read from its `NodeNetworkConfig` (the agent's
//! `TenantReachable` condition and `status.health.failingChecks`, as `netrollout_api::health`
//! reads them) and the sentence of the `GuardTripped` Event (told by `reconcile`). Pure. Whether the guard failed a revision
//! is read back from its status by word (`NetworkConfigRevisionStatus::failed_by_guard`).

use netrollout_api::Reachability;
use netrollout_rollout::Timestamp;
use netrollout_rollout::guard::{GuardTrip, Health};

use crate::views::NodeConfigView;

/// The failing checks `nnc`'s agent reports, or `None` when it reports the node reachable or
/// reports nothing (an agent that does not watch is healthy to the guard). The names come from
/// `status.health.failingChecks`; an agent that only wrote the condition gets `(unnamed)`.
pub fn failing_checks(nnc: Option<&NodeConfigView>) -> Option<Vec<String>> {
    match nnc?.status.as_ref()?.reachability()?.0 {
        Reachability::Reachable => None,
        Reachability::Unreachable(checks) if checks.is_empty() => {
            Some(vec!["(unnamed)".to_owned()])
        }
        Reachability::Unreachable(checks) => Some(checks),
    }
}

/// Whether `nnc`'s agent reports its checks passing (`TenantReachable=True`).
pub fn reports_reachable(nnc: Option<&NodeConfigView>) -> bool {
    nnc.and_then(|n| n.status.as_ref())
        .is_some_and(|s| s.reports_reachable())
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
    use netrollout_api::{NodeHealth, NodeNetworkConfigStatus, TENANT_REACHABLE_CONDITION};
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
