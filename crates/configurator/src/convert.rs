//! API objects → the planner's domain types, and the dispatch record persisted on each
//! `NodeNetworkConfig` (annotation [`DISPATCH_ANNOTATION`]) so that a new leader resumes from
//! what is in the API.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node as KubeNode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::{
    DISPATCH_ANNOTATION, NetworkConfigRevision, NodeNetworkConfig, NodePhase as ApiNodePhase,
    RevisionPhase as ApiRevisionPhase,
};
use netrollout_rollout::{
    DispatchRecord, Node, NodePhase, NodeStatus, Revision, RevisionPhase, State, Timestamp,
};
use serde::{Deserialize, Serialize};

/// Annotation on a `NodeNetworkConfig`: when the planner last marked the node Unresponsive
/// (RFC 3339). Cleared by the next dispatch.
pub const UNRESPONSIVE_ANNOTATION: &str = "netrollout.io/unresponsive-since";

/// The JSON form of a [`DispatchRecord`] in [`DISPATCH_ANNOTATION`].
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DispatchJson {
    /// The revision dispatched.
    pub revision: String,
    /// When (configurator clock, RFC 3339).
    pub at: String,
    /// The spec revision the node had before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// When the configurator first saw the agent applying it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picked_up_at: Option<String>,
}

impl DispatchJson {
    /// The annotation form of a record.
    pub fn from_record(r: &DispatchRecord) -> Self {
        Self {
            revision: r.revision.clone(),
            at: format_ts(r.at),
            previous: r.previous.clone(),
            picked_up_at: r.picked_up_at.map(format_ts),
        }
    }

    /// The record, or `None` if a time does not parse (then the record is treated as absent and
    /// the planner adopts the spec afresh).
    pub fn to_record(&self) -> Option<DispatchRecord> {
        Some(DispatchRecord {
            revision: self.revision.clone(),
            at: parse_ts(&self.at)?,
            previous: self.previous.clone(),
            picked_up_at: match &self.picked_up_at {
                Some(t) => Some(parse_ts(t)?),
                None => None,
            },
        })
    }
}

/// RFC 3339 with milliseconds.
pub fn format_ts(t: Timestamp) -> String {
    let ms = i64::try_from(t.as_millis()).unwrap_or(i64::MAX);
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => format!("{ts:.3}"),
        Err(_) => ms.to_string(),
    }
}

/// Parses [`format_ts`] output.
pub fn parse_ts(s: &str) -> Option<Timestamp> {
    let ts: jiff::Timestamp = s.parse().ok()?;
    u64::try_from(ts.as_millisecond())
        .ok()
        .map(Timestamp::from_millis)
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
    }
}

/// The planner's view of one node and its config.
pub fn node(n: &KubeNode, nnc: Option<&NodeNetworkConfig>, own_node: Option<&str>) -> Node {
    let name = n.metadata.name.clone().unwrap_or_default();
    let annotations = nnc.and_then(|c| c.metadata.annotations.as_ref());
    let dispatch = annotations
        .and_then(|a| a.get(DISPATCH_ANNOTATION))
        .and_then(|s| serde_json::from_str::<DispatchJson>(s).ok())
        .and_then(|j| j.to_record());
    let unresponsive_since = annotations
        .and_then(|a| a.get(UNRESPONSIVE_ANNOTATION))
        .and_then(|s| parse_ts(s));
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
            message: match (&s.reason, &s.message) {
                (Some(r), Some(m)) => Some(format!("{r}: {m}")),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (None, None) => None,
            },
        })
    });
    Node {
        runs_configurator: own_node == Some(name.as_str()),
        name,
        ready: node_ready(n),
        deleting: n.metadata.deletion_timestamp.is_some(),
        labels: n.metadata.labels.clone().unwrap_or_default(),
        spec_revision: nnc.map(|c| c.spec.revision.clone()),
        status,
        dispatch,
        unresponsive_since,
    }
}

/// The whole observed state. Revisions being deleted are left out (they are going away and
/// are never targets); a config whose Node is gone is no node at all.
pub fn state(
    nodes: &[Arc<KubeNode>],
    nncs: &[Arc<NodeNetworkConfig>],
    ncrs: &[Arc<NetworkConfigRevision>],
    own_node: Option<&str>,
) -> State {
    let by_name: HashMap<&str, &NodeNetworkConfig> = nncs
        .iter()
        .filter_map(|c| Some((c.metadata.name.as_deref()?, c.as_ref())))
        .collect();
    State {
        revisions: ncrs
            .iter()
            .filter(|r| r.metadata.deletion_timestamp.is_none())
            .map(|r| revision(r))
            .collect(),
        nodes: nodes
            .iter()
            .map(|n| {
                let nnc = n
                    .metadata
                    .name
                    .as_deref()
                    .and_then(|name| by_name.get(name).copied());
                node(n, nnc, own_node)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dispatch_record_survives_the_round_trip_through_its_annotation() {
        let r = DispatchRecord {
            revision: "ncr-1".into(),
            at: Timestamp::from_millis(1_700_000_000_123),
            previous: Some("ncr-0".into()),
            picked_up_at: Some(Timestamp::from_millis(1_700_000_001_000)),
        };
        let json = serde_json::to_string(&DispatchJson::from_record(&r)).unwrap();
        assert!(json.contains("2023-11-14T22:13:20.123Z"), "{json}");
        let back: DispatchJson = serde_json::from_str(&json).unwrap();
        assert_eq!(back.to_record(), Some(r));
    }

    #[test]
    fn a_record_with_an_unreadable_time_counts_as_no_record() {
        let j = DispatchJson {
            revision: "ncr-1".into(),
            at: "yesterday".into(),
            previous: None,
            picked_up_at: None,
        };
        assert_eq!(j.to_record(), None);
    }
}
