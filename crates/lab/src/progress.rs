//! What the lab shows and checks: revisions and node configs as the API reports them, rendered
//! as aligned tables.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use netrollout_api::{
    Capability, NetworkConfigRevision, NodeNetworkConfig, NodeNetworkConfigStatus, NodePhase,
    RevisionPhase,
};

use crate::workload::Pair;

/// One look at the rollout.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Revisions, newest (highest sequence) first.
    pub revisions: Vec<NetworkConfigRevision>,
    /// Node configs by node name.
    pub configs: Vec<NodeNetworkConfig>,
    /// Names of the cluster's Nodes.
    pub nodes: Vec<String>,
}

impl Observed {
    /// Lists revisions and node configs.
    pub async fn fetch(client: &kube::Client) -> Result<Self> {
        let ncr: Api<NetworkConfigRevision> = Api::all(client.clone());
        let nnc: Api<NodeNetworkConfig> = Api::all(client.clone());
        let mut revisions = ncr.list(&ListParams::default()).await?.items;
        revisions.sort_by_key(|r| std::cmp::Reverse(r.spec.sequence));
        let mut configs = nnc.list(&ListParams::default()).await?.items;
        configs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let node_api: Api<Node> = Api::all(client.clone());
        let mut nodes: Vec<String> = node_api
            .list_metadata(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        nodes.sort();
        Ok(Self {
            revisions,
            configs,
            nodes,
        })
    }

    /// The newest revision.
    pub fn newest(&self) -> Option<&NetworkConfigRevision> {
        self.revisions.first()
    }

    /// A revision's phase by name.
    pub fn phase_of(&self, name: &str) -> Option<RevisionPhase> {
        self.revisions
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .and_then(|r| r.status.as_ref()?.phase)
    }

    /// Nodes dispatched but not finished: their status does not yet report `Provisioned` or
    /// `Failed` for their spec's revision.
    pub fn in_flight(&self) -> Vec<&str> {
        self.configs
            .iter()
            .filter(|c| !finished(c))
            .filter_map(|c| c.metadata.name.as_deref())
            .collect()
    }

    /// Nodes whose status says `Provisioned` for `revision`, which is also their spec.
    pub fn provisioned_on(&self, revision: &str) -> Vec<&str> {
        self.configs
            .iter()
            .filter(|c| {
                c.spec.revision == revision
                    && finished(c)
                    && phase(c) == Some(NodePhase::Provisioned)
            })
            .filter_map(|c| c.metadata.name.as_deref())
            .collect()
    }

    /// Nodes whose agent does not report `TenantReachable=True` (its continuous health), each
    /// with the checks it names as failing (none when it reported nothing yet).
    pub fn not_reachable(&self) -> Vec<(&str, Vec<String>)> {
        self.configs
            .iter()
            .filter(|c| {
                !c.status
                    .as_ref()
                    .is_some_and(NodeNetworkConfigStatus::reports_reachable)
            })
            .map(|c| {
                let failing = (c.status.as_ref())
                    .and_then(|s| s.health.as_ref())
                    .map(|h| h.failing_checks.clone())
                    .unwrap_or_default();
                (c.metadata.name.as_deref().unwrap_or_default(), failing)
            })
            .collect()
    }

    /// Nodes whose agent does not report every one of `daemons` running in its FRR
    /// (`status.capabilities.present`, from `show daemons`), each with what it lacks ("bfdd",
    /// or "no capability report yet").
    pub fn frr_lacking(&self, daemons: &[Capability]) -> Vec<(&str, String)> {
        self.configs
            .iter()
            .filter_map(|c| {
                let node = c.metadata.name.as_deref().unwrap_or_default();
                let Some(caps) = c.status.as_ref().and_then(|s| s.capabilities.as_ref()) else {
                    return Some((node, "no capability report yet".to_string()));
                };
                let lacking: Vec<&str> = (daemons.iter())
                    .map(|d| d.as_str())
                    .filter(|d| !caps.present.iter().any(|p| p == d))
                    .collect();
                (!lacking.is_empty())
                    .then(|| (node, format!("FRR runs without {}", lacking.join(", "))))
            })
            .collect()
    }

    /// What `up` says once its first rollout succeeded `waited` ago, with `silent` the workload
    /// pairs that did not answer every probe of the last 2 s: that the lab is ready when none
    /// is silent, every agent reports `TenantReachable=True` and every agent reports the FRR
    /// daemons the lab runs ([`crate::frr::DAEMONS`]) running; after `converge` without that,
    /// what still does not work; else nothing yet.
    pub fn readiness(
        &self,
        silent: &[Pair],
        waited: Duration,
        converge: Duration,
    ) -> Option<String> {
        let unhealthy = self.not_reachable();
        let lacking = self.frr_lacking(&crate::frr::DAEMONS);
        if silent.is_empty() && unhealthy.is_empty() && lacking.is_empty() {
            return Some(
                "rollout succeeded; tenant traffic flows between the nodes' workloads and every \
                 agent's health checks pass."
                    .into(),
            );
        }
        if waited < converge {
            return None;
        }
        let mut not = Vec::new();
        if !silent.is_empty() {
            let pairs: Vec<String> = silent.iter().map(ToString::to_string).collect();
            not.push(format!("pairs without replies: {}", pairs.join(", ")));
        }
        if !unhealthy.is_empty() {
            let nodes: Vec<String> = (unhealthy.iter())
                .map(|(node, failing)| match failing.as_slice() {
                    [] => format!("{node} (no report yet)"),
                    f => format!("{node} ({})", f.join(", ")),
                })
                .collect();
            not.push(format!(
                "agents whose health checks fail: {} (kubectl netrollout nodes -o wide)",
                nodes.join("; ")
            ));
        }
        if !lacking.is_empty() {
            let nodes: Vec<String> = (lacking.iter())
                .map(|(node, what)| format!("{node} ({what})"))
                .collect();
            not.push(format!(
                "agents whose FRR lacks a daemon the lab runs: {} (kubectl get nnc -o \
                 yaml: status.capabilities; the VM's or node's FRR log)",
                nodes.join("; ")
            ));
        }
        let traffic = !silent.is_empty() || !unhealthy.is_empty();
        Some(format!(
            "rollout succeeded, but {}s later the lab is not ready: {}{}",
            waited.as_secs(),
            not.join("; "),
            if traffic {
                "; a RolloutAnalysis over tenant loss would fail the next revision."
            } else {
                "."
            }
        ))
    }

    /// Aligned tables of revisions and nodes.
    pub fn render(&self) -> String {
        if self.revisions.is_empty() {
            return format!(
                "{} node(s); waiting for the configurator to render the first revision ...\n",
                self.nodes.len()
            );
        }
        let mut rows = vec![vec![
            "REVISION".to_string(),
            "SEQ".into(),
            "PHASE".into(),
            "READY".into(),
            "IN-FLIGHT".into(),
            "FAILED".into(),
            "MESSAGE".into(),
        ]];
        for r in self.revisions.iter().take(5) {
            let s = r.status.clone().unwrap_or_default();
            rows.push(vec![
                r.metadata.name.clone().unwrap_or_default(),
                r.spec.sequence.to_string(),
                s.phase
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_else(|| "-".into()),
                s.progress
                    .clone()
                    .unwrap_or_else(|| format!("{}/{}", s.ready, s.total)),
                s.in_flight.to_string(),
                s.failed.to_string(),
                s.message.clone().unwrap_or_default(),
            ]);
        }
        let mut out = table(&rows);
        out.push('\n');
        let mut rows = vec![vec![
            "NODE".to_string(),
            "SPEC".into(),
            "OBSERVED".into(),
            "PHASE".into(),
            "MESSAGE".into(),
        ]];
        for name in &self.nodes {
            let Some(c) = self
                .configs
                .iter()
                .find(|c| c.metadata.name.as_ref() == Some(name))
            else {
                rows.push(vec![
                    name.clone(),
                    "-".into(),
                    "-".into(),
                    "Waiting".into(),
                    "not dispatched yet (waits for its wave)".into(),
                ]);
                continue;
            };
            let s = c.status.clone().unwrap_or_default();
            rows.push(vec![
                c.metadata.name.clone().unwrap_or_default(),
                c.spec.revision.clone(),
                s.observed_revision.unwrap_or_else(|| "-".into()),
                s.phase
                    .map(|p| format!("{p:?}"))
                    .unwrap_or_else(|| "-".into()),
                s.message.unwrap_or_default(),
            ]);
        }
        out.push_str(&table(&rows));
        out
    }
}

fn phase(c: &NodeNetworkConfig) -> Option<NodePhase> {
    c.status.as_ref().and_then(|s| s.phase)
}

/// Whether a node's status reports a finished attempt (`Provisioned` or `Failed`) for its spec's
/// revision.
pub fn finished(c: &NodeNetworkConfig) -> bool {
    c.status.as_ref().is_some_and(|s| {
        s.observed_revision.as_deref() == Some(c.spec.revision.as_str())
            && matches!(s.phase, Some(NodePhase::Provisioned | NodePhase::Failed))
    })
}

/// Left-aligned columns separated by two spaces; long cells are cut.
pub fn table(rows: &[Vec<String>]) -> String {
    let cut = |s: &str| {
        if s.chars().count() > 80 {
            format!("{}…", s.chars().take(79).collect::<String>())
        } else {
            s.to_string()
        }
    };
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| cut(c)).collect())
        .collect();
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use netrollout_api::TENANT_REACHABLE_CONDITION;

    use super::*;
    use crate::workload::Kind;

    /// A node config whose agent reports `reachable` ("True", "False"; `None`: nothing yet)
    /// with `failing` checks.
    fn config(node: &str, reachable: Option<&str>, failing: &[&str]) -> NodeNetworkConfig {
        let mut c = NodeNetworkConfig::new(node, Default::default());
        let conditions: Vec<serde_json::Value> = (reachable.iter())
            .map(|s| {
                serde_json::json!({"type": TENANT_REACHABLE_CONDITION, "status": s, "reason": "R",
                    "message": "", "lastTransitionTime": "2026-11-27T00:00:00Z"})
            })
            .collect();
        let status = serde_json::json!({"conditions": conditions, "health": {"failingChecks": failing},
            "capabilities": {"present": ["bfdd", "bgpd", "bridge"], "missing": []}});
        c.status = Some(serde_json::from_value::<NodeNetworkConfigStatus>(status).unwrap());
        c
    }

    #[test]
    fn the_lab_is_ready_only_when_every_pair_answers_and_every_agent_reports_reachable() {
        let s = Duration::from_secs;
        let obs = |configs| Observed {
            configs,
            ..Observed::default()
        };
        let healthy = obs(vec![
            config("n1", Some("True"), &[]),
            config("n2", Some("True"), &[]),
        ]);
        let ready = healthy.readiness(&[], s(1), s(30)).unwrap();
        assert!(
            ready.starts_with("rollout succeeded; tenant traffic flows"),
            "{ready}"
        );

        let silent = [Pair {
            kind: Kind::Bridged,
            network: "lab-tenant".into(),
            from: "n1".into(),
            to: "n2".into(),
        }];
        let sick = obs(vec![
            config("n1", Some("False"), &["icmp 172.31.88.12"]),
            config("n2", None, &[]),
        ]);
        // Before the convergence time: nothing said yet, whichever is missing.
        assert_eq!(healthy.readiness(&silent, s(29), s(30)), None);
        assert_eq!(sick.readiness(&[], s(29), s(30)), None);
        // After it: what still fails, by pair and by agent.
        let late = sick.readiness(&silent, s(31), s(30)).unwrap();
        assert!(
            late.starts_with("rollout succeeded, but 31s later"),
            "{late}"
        );
        assert!(
            late.contains("pairs without replies: lab-tenant n1→n2"),
            "{late}"
        );
        assert!(
            late.contains("n1 (icmp 172.31.88.12); n2 (no report yet)"),
            "{late}"
        );
    }

    #[test]
    fn the_lab_is_not_ready_while_an_agent_reports_frr_without_a_daemon_the_lab_runs() {
        let s = Duration::from_secs;
        let mut no_bfdd = config("n1", Some("True"), &[]);
        let caps = serde_json::json!({"present": ["bgpd"], "missing": ["bfdd"]});
        no_bfdd.status.as_mut().unwrap().capabilities = Some(serde_json::from_value(caps).unwrap());
        let mut unreported = config("n2", Some("True"), &[]);
        unreported.status.as_mut().unwrap().capabilities = None;
        let obs = Observed {
            configs: vec![no_bfdd, unreported, config("n3", Some("True"), &[])],
            ..Observed::default()
        };
        assert_eq!(
            obs.frr_lacking(&crate::frr::DAEMONS),
            [
                ("n1", "FRR runs without bfdd".to_string()),
                ("n2", "no capability report yet".to_string())
            ]
        );
        assert_eq!(
            obs.readiness(&[], s(29), s(30)),
            None,
            "not ready, not yet said"
        );
        let late = obs.readiness(&[], s(31), s(30)).unwrap();
        assert!(
            late.contains(
                "not ready: agents whose FRR lacks a daemon the lab runs: n1 (FRR runs without \
                 bfdd); n2 (no capability report yet)"
            ),
            "{late}"
        );
        assert!(!late.contains("RolloutAnalysis"), "traffic flows: {late}");
    }
}
