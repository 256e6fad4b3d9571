//! A node's continuous health as its agent reports it after a commit: the `TenantReachable`
//! condition on its `NodeNetworkConfig` with the failing checks in `status.health`. Written by
//! the agent ([`tenant_reachable`]) and read by the agent itself, the configurator's fleet guard
//! and the lab ([`NodeNetworkConfigStatus::reachability`]): the one shape, defined here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::node::NodeNetworkConfigStatus;

/// Condition type the agent sets on its `NodeNetworkConfig` from its continuous health checks
/// after it committed: `True` when every enforced tenant/VRF reachability check passes, `False`
/// with the failing checks named in the message and in `status.health.failingChecks`. Written
/// only when it changes; the configurator's fleet guard reads it.
pub const TENANT_REACHABLE_CONDITION: &str = "TenantReachable";

/// The `TenantReachable` condition's status, reason and message for a node whose `failing`
/// checks fail (`True`, `ChecksPass` when none do): the one shape the agent writes.
pub fn tenant_reachable(failing: &[impl AsRef<str>]) -> (&'static str, &'static str, String) {
    if failing.is_empty() {
        (
            "True",
            "ChecksPass",
            "every tenant reachability check passes".to_string(),
        )
    } else {
        let names: Vec<&str> = failing.iter().map(AsRef::as_ref).collect();
        (
            "False",
            "ChecksFailing",
            format!("failing: {}", names.join(", ")),
        )
    }
}

/// What a node's `TenantReachable` condition says, with the checks `status.health` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reachability {
    /// `True`: every enforced check passes.
    Reachable,
    /// `False`: the failing checks as `status.health.failingChecks` names them (empty when the
    /// writer named none, which the agent never does).
    Unreachable(Vec<String>),
}

impl NodeNetworkConfigStatus {
    /// The agent's verdict with the condition's `lastTransitionTime`; `None` when it reported
    /// none (no `TenantReachable` condition, or one that is neither `True` nor `False`).
    pub fn reachability(&self) -> Option<(Reachability, &Time)> {
        let c = self
            .conditions
            .iter()
            .find(|c| c.type_ == TENANT_REACHABLE_CONDITION)?;
        let verdict = match c.status.as_str() {
            "True" => Reachability::Reachable,
            "False" => Reachability::Unreachable(
                self.health
                    .as_ref()
                    .map(|h| h.failing_checks.clone())
                    .unwrap_or_default(),
            ),
            _ => return None,
        };
        Some((verdict, &c.last_transition_time))
    }

    /// Whether the agent reports every check passing (`TenantReachable=True`).
    pub fn reports_reachable(&self) -> bool {
        matches!(self.reachability(), Some((Reachability::Reachable, _)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::NodeHealth;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    fn status(condition: Option<&str>, checks: &[&str]) -> NodeNetworkConfigStatus {
        let (_, reason, message) = tenant_reachable(checks);
        NodeNetworkConfigStatus {
            health: Some(NodeHealth {
                failing_checks: checks.iter().map(|s| s.to_string()).collect(),
            }),
            conditions: condition
                .map(|s| Condition {
                    type_: TENANT_REACHABLE_CONDITION.into(),
                    status: s.into(),
                    reason: reason.into(),
                    message,
                    last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
                    observed_generation: None,
                })
                .into_iter()
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_verdict_is_the_conditions_status_with_the_structured_checks_never_its_message() {
        assert_eq!(status(None, &[]).reachability(), None);
        assert_eq!(status(Some("Unknown"), &["a"]).reachability(), None);
        let up = status(Some("True"), &[]);
        assert_eq!(
            up.reachability().map(|r| r.0),
            Some(Reachability::Reachable)
        );
        assert!(up.reports_reachable());
        let mut down = status(Some("False"), &["tenant-a", "gw"]);
        down.conditions[0].message = "reworded: nothing to parse here".into();
        assert_eq!(
            down.reachability().map(|r| r.0),
            Some(Reachability::Unreachable(vec![
                "tenant-a".into(),
                "gw".into()
            ]))
        );
        assert!(!down.reports_reachable());
    }

    #[test]
    fn the_written_shape_names_the_failing_checks_or_says_they_pass() {
        assert_eq!(tenant_reachable(&[] as &[&str]).0, "True");
        let (s, r, m) = tenant_reachable(&["a", "b"]);
        assert_eq!((s, r), ("False", "ChecksFailing"));
        assert!(m.contains("a, b"), "{m}");
    }
}
