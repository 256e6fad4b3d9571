//! `nodes`: each node's state and last error, from its `Node` and its `NodeNetworkConfig`.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::{FailedCheck, NODE_CONDITION, NodeNetworkConfig, NodePhase};
use serde::Serialize;

use crate::cluster::Observed;
use crate::output::{Table, age, or_dash, truncate};

/// The domain shown for a node without the `--domain-key` label.
pub const NO_DOMAIN: &str = "(none)";

/// One node as `nodes` and `status` show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRow {
    /// Node name.
    pub node: String,
    /// Its failure domain: the value of the `--domain-key` label, `(none)` without it (such
    /// nodes form one domain together); absent without `--domain-key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// The Node's `Ready` condition (`True`, `False`, `Unknown`); `None` when the Node is gone.
    pub node_ready: Option<String>,
    /// The agent's `NetworkConfigReady` condition on the Node.
    pub network_config_ready: Option<String>,
    /// The `NodeNetworkConfig`'s `NetworkConfigReady` condition (what
    /// `kubectl wait --for=condition=NetworkConfigReady nnc/NODE` reads): its status, with
    /// `stale: generation G observed O` when it was written for an older spec.
    pub config_condition: Option<String>,
    /// The revision the configurator wants the node to run (`spec.revision`).
    pub revision: Option<String>,
    /// The revision the agent's status is about.
    pub observed_revision: Option<String>,
    /// The agent's phase for `observedRevision`.
    pub phase: Option<NodePhase>,
    /// Whether the agent finished applying the wanted revision (`observed == spec`, Provisioned).
    pub up_to_date: bool,
    /// The revision the node restores on failure.
    pub last_known_good_revision: Option<String>,
    /// Machine-readable reason of the last outcome, e.g. `ProbeFailed`.
    pub reason: Option<String>,
    /// The agent's message: the last error when the phase is `Failed`.
    pub message: Option<String>,
    /// When the agent last finished (or started, while applying).
    pub since: Option<Time>,
    /// The capabilities the node's agent reported missing (`vrf`, `bgpd`, …); `None` when it
    /// reported none yet. A revision whose config for this node needs one of them is not
    /// dispatched (docs/contract.md, "Pre-flight").
    pub missing_capabilities: Option<Vec<String>>,
    /// The FRR version the node's agent found its daemons running (`status.capabilities`);
    /// `None` without FRR support, while FRR does not answer, or before the agent reported.
    pub frr_version: Option<String>,
    /// The checks that already failed before the node's last change, with their errors: the
    /// agent did not judge the change by them (`-o wide` shows them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub preexisting_failures: Vec<FailedCheck>,
}

impl NodeRow {
    /// The row of one node; either the Node or its config may be missing.
    pub fn new(name: &str, node: Option<&Node>, config: Option<&NodeNetworkConfig>) -> Self {
        let condition = |ty: &str| {
            node.and_then(|n| n.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == ty))
                .map(|c| c.status.clone())
        };
        let status = config.and_then(|c| c.status.as_ref());
        let revision = config.map(|c| c.spec.revision.clone());
        let observed = status.and_then(|s| s.observed_revision.clone());
        let phase = status.and_then(|s| s.phase);
        let generation = config.and_then(|c| c.metadata.generation);
        let config_condition = status
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == NODE_CONDITION))
            .map(|c| match (generation, c.observed_generation) {
                (Some(g), Some(o)) if o < g => {
                    format!("{} (stale: generation {g} observed {o})", c.status)
                }
                (Some(g), None) => format!("{} (stale: generation {g} observed none)", c.status),
                _ => c.status.clone(),
            });
        Self {
            config_condition,
            node: name.to_string(),
            domain: None,
            node_ready: node.map(|_| condition("Ready").unwrap_or_else(|| "Unknown".into())),
            network_config_ready: condition(NODE_CONDITION),
            up_to_date: revision.is_some()
                && observed == revision
                && phase == Some(NodePhase::Provisioned),
            revision,
            observed_revision: observed,
            phase,
            last_known_good_revision: status.and_then(|s| s.last_known_good_revision.clone()),
            reason: status.and_then(|s| s.reason.clone()),
            message: status.and_then(|s| s.message.clone()),
            since: status.and_then(|s| s.finished_at.clone().or_else(|| s.started_at.clone())),
            missing_capabilities: status
                .and_then(|s| s.capabilities.as_ref())
                .map(|c| c.missing.clone()),
            frr_version: status
                .and_then(|s| s.capabilities.as_ref())
                .and_then(|c| c.frr_version.clone()),
            preexisting_failures: status
                .map(|s| s.preexisting_failures.clone())
                .unwrap_or_default(),
        }
    }

    /// Every node that exists or has a config, sorted by name.
    pub fn all(observed: &Observed) -> Vec<Self> {
        let mut names: Vec<&String> = observed
            .nodes
            .keys()
            .chain(observed.configs.keys())
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| {
                let node = observed.nodes.get(n);
                let mut row = Self::new(n, node, observed.configs.get(n));
                row.domain = observed.domain_key.as_deref().map(|key| {
                    (node
                        .and_then(|n| n.metadata.labels.as_ref()?.get(key))
                        .cloned())
                    .unwrap_or_else(|| NO_DOMAIN.to_string())
                });
                row
            })
            .collect()
    }

    /// A short state word for people: what the node is doing with its wanted revision.
    pub fn state(&self) -> String {
        let Some(revision) = &self.revision else {
            return "NoConfig".into();
        };
        let phase = self.phase.map(|p| format!("{p:?}"));
        if self.observed_revision.as_ref() == Some(revision) {
            phase.unwrap_or_else(|| "Unknown".into())
        } else {
            "Dispatched".into()
        }
    }
}

/// The aligned table of node rows; `since` is the age of the last finish (or start). `wide`
/// adds the checks not judged (name: error) and prints the whole message.
pub fn table(rows: &[NodeRow], now: jiff::Timestamp, wide: bool) -> String {
    let domains = rows.iter().any(|r| r.domain.is_some());
    let mut columns = vec!["node"];
    if domains {
        columns.push("domain");
    }
    columns.extend([
        "ready",
        "config-ready",
        "state",
        "revision",
        "observed",
        "known-good",
        "since",
        "lacks",
        "frr",
        "reason",
    ]);
    if wide {
        columns.push("not-judged");
    }
    columns.push("message");
    let mut t = Table::new(&columns);
    for r in rows {
        let message = r
            .message
            .as_deref()
            .map(|m| if wide { m.to_string() } else { truncate(m, 80) });
        let mut row = vec![r.node.clone()];
        if domains {
            row.push(or_dash(r.domain.as_ref()));
        }
        row.extend([
            or_dash(r.node_ready.as_ref()),
            or_dash(r.config_condition.as_ref()),
            r.state(),
            or_dash(r.revision.as_ref()),
            or_dash(r.observed_revision.as_ref()),
            or_dash(r.last_known_good_revision.as_ref()),
            age(r.since.as_ref(), now),
            lacks(r.missing_capabilities.as_deref()),
            or_dash(r.frr_version.as_ref()),
            or_dash(r.reason.as_ref()),
        ]);
        if wide {
            row.push(not_judged(&r.preexisting_failures));
        }
        row.push(or_dash(message.as_ref()));
        t.row(row);
    }
    if t.is_empty() {
        return "no nodes\n".into();
    }
    t.render()
}

/// The `lacks` column: the missing capabilities, `none`, or `-` when the agent reported none
/// yet.
fn lacks(missing: Option<&[String]>) -> String {
    match missing {
        None => "-".into(),
        Some([]) => "none".into(),
        Some(m) => m.join(","),
    }
}

/// The `not-judged` column: each check that failed before the last change, with its error.
fn not_judged(checks: &[FailedCheck]) -> String {
    if checks.is_empty() {
        return "-".into();
    }
    checks
        .iter()
        .map(|c| format!("{}: {}", c.name, c.error))
        .collect::<Vec<_>>()
        .join("; ")
}
