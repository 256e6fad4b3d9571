//! API objects → the planner's domain types, and the dispatch record persisted on each
//! `NodeNetworkConfig` (annotation [`DISPATCH_ANNOTATION`]) so that a new leader resumes from
//! what is in the API.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node as KubeNode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::annotations;
use netrollout_api::{
    CANARY_LABEL, Dispatch, NetworkConfigRevision, NodePhase as ApiNodePhase,
    RevisionPhase as ApiRevisionPhase, ZONE_LABEL,
};
use netrollout_rollout::guard::Health;

use crate::views::NodeConfigView;
use netrollout_rollout::{
    DispatchRecord, FailureCause, Node, NodePhase, NodeStatus, Revision, RevisionPhase, Timestamp,
};

/// The dispatch record in its annotation form ([`netrollout_api::Dispatch`]).
pub fn dispatch_annotation(r: &DispatchRecord) -> Option<Dispatch> {
    Some(Dispatch {
        revision: r.revision.clone(),
        at: to_jiff(r.at)?,
        previous: r.previous.clone(),
        picked_up_at: match r.picked_up_at {
            Some(t) => Some(to_jiff(t)?),
            None => None,
        },
        sequence: r.sequence.and_then(|s| i64::try_from(s).ok()),
        settled_at: match r.settled_at {
            Some(t) => Some(to_jiff(t)?),
            None => None,
        },
    })
}

/// The planner's record of an annotation, or `None` if a time lies before 1970 (then the
/// record is treated as absent and the planner adopts the spec afresh).
pub fn dispatch_record(d: &Dispatch) -> Option<DispatchRecord> {
    Some(DispatchRecord {
        revision: d.revision.clone(),
        at: from_jiff(d.at)?,
        previous: d.previous.clone(),
        picked_up_at: match d.picked_up_at {
            Some(t) => Some(from_jiff(t)?),
            None => None,
        },
        sequence: d.sequence.and_then(|s| u64::try_from(s).ok()),
        settled_at: match d.settled_at {
            Some(t) => Some(from_jiff(t)?),
            None => None,
        },
    })
}

fn to_jiff(t: Timestamp) -> Option<jiff::Timestamp> {
    jiff::Timestamp::from_millisecond(i64::try_from(t.as_millis()).ok()?).ok()
}

fn from_jiff(t: jiff::Timestamp) -> Option<Timestamp> {
    u64::try_from(t.as_millisecond())
        .ok()
        .map(Timestamp::from_millis)
}

/// RFC 3339 with milliseconds, as the annotations carry times.
pub fn format_ts(t: Timestamp) -> String {
    match to_jiff(t) {
        Some(ts) => annotations::format_time(ts),
        None => t.as_millis().to_string(),
    }
}

/// Parses [`format_ts`] output (the tests' check of the round trip).
#[cfg(test)]
pub fn parse_ts(s: &str) -> Option<Timestamp> {
    from_jiff(annotations::parse_time(s)?)
}

/// A Kubernetes `Time` as a planner timestamp.
pub fn from_time(t: &Time) -> Timestamp {
    Timestamp::from_millis(u64::try_from(t.0.as_millisecond()).unwrap_or(0))
}

/// A planner timestamp as a Kubernetes `Time`.
pub fn to_time(t: Timestamp) -> Time {
    let ms = i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
    Time(jiff::Timestamp::from_millisecond(ms).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// Now on the configurator's clock.
pub fn now() -> Timestamp {
    from_time(&Time(jiff::Timestamp::now()))
}

/// Whether the Node's `Ready` condition is `True`.
pub fn node_ready(node: &KubeNode) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The planner phase of a revision's `status.phase` (no status yet: Pending).
pub fn revision_phase(ncr: &NetworkConfigRevision) -> RevisionPhase {
    match ncr.status.as_ref().and_then(|s| s.phase) {
        None | Some(ApiRevisionPhase::Pending) => RevisionPhase::Pending,
        Some(ApiRevisionPhase::Progressing) => RevisionPhase::Progressing,
        Some(ApiRevisionPhase::Succeeded) => RevisionPhase::Succeeded,
        Some(ApiRevisionPhase::Failed) => RevisionPhase::Failed,
        Some(ApiRevisionPhase::Superseded) => RevisionPhase::Superseded,
        Some(ApiRevisionPhase::Blocked) => RevisionPhase::Blocked,
    }
}

/// The reason word a failed node is written with for the planner's `cause`
/// ([`netrollout_api::reason`]): the agent's own word when it reported one, `Failed` when it
/// did not.
pub fn failure_reason(cause: &FailureCause) -> &str {
    use netrollout_api::reason;
    match cause {
        FailureCause::Reported(r) => reason::agent_failure(r.as_deref()),
        FailureCause::ApplyTimeout => reason::APPLY_TIMEOUT,
        FailureCause::HealthRegressed { .. } => reason::HEALTH_REGRESSED,
        FailureCause::BakeRegressed { .. } => reason::BAKE_REGRESSED,
    }
}

/// The API phase of a planner phase.
pub fn api_phase(p: RevisionPhase) -> ApiRevisionPhase {
    match p {
        RevisionPhase::Pending => ApiRevisionPhase::Pending,
        RevisionPhase::Progressing => ApiRevisionPhase::Progressing,
        RevisionPhase::Succeeded => ApiRevisionPhase::Succeeded,
        RevisionPhase::Failed => ApiRevisionPhase::Failed,
        RevisionPhase::Superseded => ApiRevisionPhase::Superseded,
        RevisionPhase::Blocked => ApiRevisionPhase::Blocked,
    }
}

/// One revision as the planner sees it.
pub fn revision(ncr: &NetworkConfigRevision) -> Revision {
    Revision {
        name: ncr.metadata.name.clone().unwrap_or_default(),
        sequence: u64::try_from(ncr.spec.sequence).unwrap_or(0),
        hash: ncr.spec.hash.clone(),
        phase: revision_phase(ncr),
        paused: ncr.spec.paused,
        guard_tripped: ncr.status.as_ref().is_some_and(|s| s.failed_by_guard()),
        unmet: Vec::new(),
        // Filled by the analysis step (it knows whether Prometheus is configured).
        analysis: Default::default(),
        undo: ncr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(netrollout_api::UNDO_ANNOTATION))
            .is_some_and(|v| v.trim().parse::<i64>().ok() == Some(ncr.spec.sequence)),
        approval: approval(ncr),
    }
}

/// A revision's promotion as the planner reads it (`spec.promotion`; the planner applies it
/// only under the sequence it names).
fn approval(ncr: &NetworkConfigRevision) -> netrollout_rollout::approval::Approval {
    let Some(p) = &ncr.spec.promotion else {
        return Default::default();
    };
    netrollout_rollout::approval::Approval {
        sequence: u64::try_from(p.sequence).ok(),
        gates: usize::try_from(p.gates).unwrap_or(0),
        full: p.full,
        force: p.force,
    }
}

/// How this configurator reads a Node besides the wire contract's labels: the node it runs on
/// (updated last) and the label that names a node's failure domain (`--domain-key`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// The node this replica runs on (`--node-name`).
    pub own_node: Option<String>,
    /// The failure-domain label (`--domain-key`), e.g. a rack label.
    pub domain_key: Option<String>,
}

#[cfg(test)]
impl Reading {
    /// Reading with only the node this replica runs on.
    pub fn on(own_node: Option<&str>) -> Self {
        Self {
            own_node: own_node.map(str::to_owned),
            domain_key: None,
        }
    }
}

/// The planner's view of one node and its config; `previous` is the health the fleet held for
/// it (a node that stays regressed keeps the time the configurator first saw it regress).
pub fn node(
    n: &KubeNode,
    nnc: Option<&NodeConfigView>,
    reading: &Reading,
    previous: Option<&Health>,
) -> Node {
    let name = n.metadata.name.clone().unwrap_or_default();
    let labels = n.metadata.labels.as_ref();
    let annotations = nnc.and_then(|c| c.metadata.annotations.as_ref());
    let dispatch = Dispatch::from_annotations(annotations).and_then(|d| dispatch_record(&d));
    let unresponsive_since = annotations::unresponsive_since(annotations).and_then(from_jiff);
    let status = nnc.and_then(|c| c.status.as_ref()).and_then(|s| {
        Some(NodeStatus {
            observed_revision: s.observed_revision.clone()?,
            phase: match s.phase? {
                ApiNodePhase::Provisioning => NodePhase::Provisioning,
                ApiNodePhase::Provisioned => NodePhase::Provisioned,
                ApiNodePhase::Failed => NodePhase::Failed,
            },
            started_at: s.started_at.as_ref().map(from_time),
            finished_at: s.finished_at.as_ref().map(from_time),
            reason: s.reason.clone(),
            message: s.message.clone(),
        })
    });
    Node {
        runs_configurator: reading.own_node.as_deref() == Some(name.as_str()),
        domain: (reading.domain_key.as_deref())
            .and_then(|key| labels.and_then(|l| l.get(key)))
            .cloned()
            .unwrap_or_default(),
        name,
        ready: node_ready(n),
        deleting: n.metadata.deletion_timestamp.is_some(),
        zone: labels
            .and_then(|l| l.get(ZONE_LABEL))
            .cloned()
            .unwrap_or_default(),
        canary: labels
            .and_then(|l| l.get(CANARY_LABEL))
            .is_some_and(|v| v == "true"),
        spec_revision: nnc.map(|c| c.spec.revision.clone()),
        status,
        dispatch,
        unresponsive_since,
        health: crate::health::health(
            crate::health::failing_checks(nnc),
            crate::health::reports_reachable(nnc),
            previous,
            now(),
        ),
    }
}

/// The revisions as the planner sees them; those being deleted are left out (they are going
/// away and are never targets).
pub fn revisions(ncrs: &[Arc<NetworkConfigRevision>]) -> Vec<Revision> {
    ncrs.iter()
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .map(|r| revision(r))
        .collect()
}

/// The whole observed state. Revisions being deleted are left out (they are going away and
/// are never targets); a config whose Node is gone is no node at all. The fleet keeps this
/// state up to date incrementally; its tests compare against this whole conversion.
#[cfg(test)]
pub fn state(
    nodes: &[Arc<KubeNode>],
    nncs: &[Arc<NodeConfigView>],
    ncrs: &[Arc<NetworkConfigRevision>],
    own_node: Option<&str>,
) -> netrollout_rollout::State {
    let by_name: std::collections::HashMap<&str, &NodeConfigView> = nncs
        .iter()
        .filter_map(|c| Some((c.metadata.name.as_deref()?, c.as_ref())))
        .collect();
    netrollout_rollout::State {
        revisions: revisions(ncrs),
        nodes: nodes
            .iter()
            .map(|n| {
                let nnc = n
                    .metadata
                    .name
                    .as_deref()
                    .and_then(|name| by_name.get(name).copied());
                node(n, nnc, &Reading::on(own_node), None)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failure_cause_is_written_as_a_reason_word() {
        use netrollout_api::reason::{self, is_reason_word};
        for (cause, word) in [
            (
                FailureCause::Reported(Some("ProbeFailed".into())),
                "ProbeFailed",
            ),
            (
                FailureCause::Reported(Some("probe failed".into())),
                reason::FAILED,
            ),
            (FailureCause::Reported(None), reason::FAILED),
            (FailureCause::ApplyTimeout, reason::APPLY_TIMEOUT),
            (
                FailureCause::HealthRegressed { checks: vec![] },
                reason::HEALTH_REGRESSED,
            ),
        ] {
            assert_eq!(failure_reason(&cause), word);
            assert!(is_reason_word(failure_reason(&cause)), "{cause:?}");
        }
    }

    /// Every sentence an object carries, reworded to one that means nothing.
    fn reworded_revision(mut ncr: NetworkConfigRevision) -> NetworkConfigRevision {
        const NOTHING: &str = "reworded: no program may read this";
        if let Some(s) = ncr.status.as_mut() {
            s.message = Some(NOTHING.into());
            s.failed_nodes
                .iter_mut()
                .for_each(|f| f.message = NOTHING.into());
            s.conditions
                .iter_mut()
                .for_each(|c| c.message = NOTHING.into());
        }
        ncr
    }

    #[test]
    fn a_reworded_message_changes_nothing_the_planner_reads() {
        use netrollout_api::reason::{APPLY_TIMEOUT, HEALTH_REGRESSED};
        use netrollout_api::{FailedNode, NetworkConfigRevisionStatus, NodeNetworkConfig};
        let rev = |reason: &str, message: &str| {
            let mut r = NetworkConfigRevision::new("ncr-2", Default::default());
            r.status = Some(NetworkConfigRevisionStatus {
                phase: Some(ApiRevisionPhase::Failed),
                message: Some(message.into()),
                failed_nodes: vec![FailedNode {
                    node: "n-1".into(),
                    reason: reason.into(),
                    message: message.into(),
                    ..Default::default()
                }],
                ..Default::default()
            });
            r
        };
        for r in [
            rev(HEALTH_REGRESSED, "fleet guard tripped: n-1"),
            rev(HEALTH_REGRESSED, "x"),
            rev(APPLY_TIMEOUT, "fleet guard tripped: n-1"),
            rev("ProbeFailed", "1 node failed"),
        ] {
            assert_eq!(revision(&reworded_revision(r.clone())), revision(&r));
        }
        assert!(revision(&rev(HEALTH_REGRESSED, "x")).guard_tripped);
        assert!(!revision(&rev(APPLY_TIMEOUT, "fleet guard tripped: n-1")).guard_tripped);

        // A node's health: the condition's status and the named checks, never its message.
        let kube = KubeNode::default();
        for failing in [&[][..], &["tenant-a", "gw"][..]] {
            let mut nnc = NodeNetworkConfig::new("n-1", Default::default());
            let (status, reason, message) = netrollout_api::tenant_reachable(failing);
            nnc.status = Some(netrollout_api::NodeNetworkConfigStatus {
                health: Some(netrollout_api::NodeHealth {
                    failing_checks: failing.iter().map(|c| c.to_string()).collect(),
                }),
                conditions: vec![k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                    type_: netrollout_api::TENANT_REACHABLE_CONDITION.into(),
                    status: status.into(),
                    reason: reason.into(),
                    message,
                    last_transition_time: to_time(Timestamp::from_millis(0)),
                    observed_generation: None,
                }],
                ..Default::default()
            });
            let view = NodeConfigView::of(&nnc);
            let mut other = view.clone();
            let conditions = &mut other.status.as_mut().unwrap().conditions;
            conditions[0].message = "reworded: no program may read this".into();
            let previous = Health::Regressed {
                since: Timestamp::from_millis(3),
                checks: vec!["a".into()],
            };
            for previous in [None, Some(&previous)] {
                assert_eq!(
                    node(&kube, Some(&other), &Reading::default(), previous).health,
                    node(&kube, Some(&view), &Reading::default(), previous).health
                );
            }
        }
    }

    #[test]
    fn a_dispatch_record_survives_the_round_trip_through_its_annotation() {
        let r = DispatchRecord {
            revision: "ncr-1".into(),
            at: Timestamp::from_millis(1_700_000_000_123),
            previous: Some("ncr-0".into()),
            picked_up_at: Some(Timestamp::from_millis(1_700_000_001_000)),
            sequence: Some(4),
            settled_at: Some(Timestamp::from_millis(1_700_000_002_000)),
        };
        let json = dispatch_annotation(&r).unwrap().to_annotation().unwrap();
        assert!(json.contains("2023-11-14T22:13:20.123Z"), "{json}");
        let annotations = [(netrollout_api::DISPATCH_ANNOTATION.to_string(), json)].into();
        let back = Dispatch::from_annotations(Some(&annotations)).unwrap();
        assert_eq!(dispatch_record(&back), Some(r));
    }

    #[test]
    fn a_record_with_an_unreadable_time_counts_as_no_record() {
        let annotations = [(
            netrollout_api::DISPATCH_ANNOTATION.to_string(),
            r#"{"revision":"ncr-1","at":"yesterday"}"#.to_string(),
        )]
        .into();
        assert_eq!(Dispatch::from_annotations(Some(&annotations)), None);
        let before_1970 = Dispatch {
            revision: "ncr-1".into(),
            at: jiff::Timestamp::from_millisecond(-1).unwrap(),
            previous: None,
            picked_up_at: None,
            sequence: None,
            settled_at: None,
        };
        assert_eq!(dispatch_record(&before_1970), None);
    }

    #[test]
    fn times_format_and_parse_as_the_annotations_carry_them() {
        let t = Timestamp::from_millis(1_700_000_000_123);
        assert_eq!(format_ts(t), "2023-11-14T22:13:20.123Z");
        assert_eq!(parse_ts(&format_ts(t)), Some(t));
        assert_eq!(parse_ts("soon"), None);
    }
}
