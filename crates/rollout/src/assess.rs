//! Where each node stands with respect to its current spec revision.
//!
//! Only status about the current spec counts (`observedRevision == spec.revision`); timeouts are
//! measured from the configurator's own dispatch record, never from agent clocks.

use crate::settings::Settings;
use crate::state::{DispatchRecord, Node, NodePhase};
use crate::time::Timestamp;

/// The condition of one node, derived from its spec, status and dispatch record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cond<'a> {
    /// No spec revision yet.
    Unconfigured,
    /// The agent reported Provisioned for the spec revision.
    Settled,
    /// The agent reported Failed for the spec revision (with its reason word and message).
    Failed {
        reason: Option<&'a str>,
        message: Option<&'a str>,
    },
    /// Dispatched, not picked up yet, within the pickup timeout: in flight.
    Pending,
    /// Dispatched and not picked up within the pickup timeout: to be withdrawn.
    Overdue { record: &'a DispatchRecord },
    /// The agent reported Provisioning within the apply timeout: in flight, spec frozen.
    /// `first_seen` is set when the pickup time is not recorded yet.
    Applying { first_seen: bool },
    /// Provisioning for longer than the apply timeout: a failure if the node is Ready;
    /// never in flight; the spec stays frozen until the agent reports an outcome.
    TimedOut,
    /// A spec revision without a matching dispatch record and no final status: adopted as
    /// dispatched now, in flight.
    Untracked { provisioning: bool },
}

impl Cond<'_> {
    /// Whether the node holds a slot of the update limit.
    pub(crate) fn in_flight(&self) -> bool {
        matches!(
            self,
            Cond::Pending | Cond::Applying { .. } | Cond::Untracked { .. }
        )
    }
}

/// Assess `node` at `now`.
pub(crate) fn assess<'a>(node: &'a Node, now: Timestamp, settings: &Settings) -> Cond<'a> {
    if node.spec_revision.is_none() {
        return Cond::Unconfigured;
    }
    let status = node.current_status();
    match status.map(|s| s.phase) {
        Some(NodePhase::Provisioned) => return Cond::Settled,
        Some(NodePhase::Failed) => {
            return Cond::Failed {
                reason: status.and_then(|s| s.reason.as_deref()),
                message: status.and_then(|s| s.message.as_deref()),
            };
        }
        _ => {}
    }
    let provisioning = status.is_some();
    let Some(record) = node.current_dispatch() else {
        return Cond::Untracked { provisioning };
    };
    if provisioning {
        match record.picked_up_at {
            None => Cond::Applying { first_seen: true },
            Some(t) if now >= t.saturating_add(settings.apply_timeout) => Cond::TimedOut,
            Some(_) => Cond::Applying { first_seen: false },
        }
    } else if now >= record.at.saturating_add(settings.pickup_timeout) {
        Cond::Overdue { record }
    } else {
        Cond::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeStatus;
    use std::time::Duration;

    fn node(spec: &str, observed: Option<(&str, NodePhase)>, picked: Option<u64>) -> Node {
        let mut n = Node::new("n1");
        n.spec_revision = Some(spec.into());
        n.status = observed.map(|(r, phase)| NodeStatus {
            observed_revision: r.into(),
            phase,
            started_at: None,
            finished_at: None,
            reason: None,
            message: None,
        });
        n.dispatch = Some(DispatchRecord {
            revision: spec.into(),
            at: Timestamp::from_millis(0),
            previous: None,
            picked_up_at: picked.map(Timestamp::from_millis),
            sequence: None,
            settled_at: None,
        });
        n
    }

    fn at(secs: u64) -> Timestamp {
        Timestamp::from_millis(0).saturating_add(Duration::from_secs(secs))
    }

    #[test]
    fn stale_status_about_another_revision_counts_as_not_picked_up() {
        let n = node("r2", Some(("r1", NodePhase::Failed)), None);
        assert_eq!(assess(&n, at(1), &Settings::default()), Cond::Pending);
        assert!(matches!(
            assess(&n, at(600), &Settings::default()),
            Cond::Overdue { .. }
        ));
    }

    #[test]
    fn applying_longer_than_the_apply_timeout_after_pickup_is_a_timeout() {
        let n = node("r1", Some(("r1", NodePhase::Provisioning)), Some(1_000));
        let s = Settings::default();
        assert_eq!(assess(&n, at(60), &s), Cond::Applying { first_seen: false });
        assert_eq!(assess(&n, at(121), &s), Cond::TimedOut);
    }

    #[test]
    fn a_first_sighting_of_provisioning_starts_the_apply_clock_instead_of_timing_out() {
        let n = node("r1", Some(("r1", NodePhase::Provisioning)), None);
        assert_eq!(
            assess(&n, at(10_000), &Settings::default()),
            Cond::Applying { first_seen: true }
        );
    }

    #[test]
    fn a_spec_without_its_dispatch_record_is_adopted_as_in_flight() {
        let mut n = node("r1", None, None);
        n.dispatch = None;
        let c = assess(&n, at(10_000), &Settings::default());
        assert_eq!(
            c,
            Cond::Untracked {
                provisioning: false
            }
        );
        assert!(c.in_flight());
    }
}
