//! Reporting: the status of the node's own `NodeNetworkConfig` and its Node's
//! `NetworkConfigReady` condition — the only two things the agent writes.
//!
//! The agent publishes a [`Report`] into a channel and never waits for the API server: the
//! [`reporter`] task writes the newest report, retrying with backoff until it lands (so a status
//! decided during an API outage is written once the server returns). Each request is a bounded
//! step ([`crate::bounded`]): `status` (the object's status), `node-condition` (the Node's),
//! `event`; past `--step-slow` the wait is logged and counted, past `--api-deadline` the write
//! failed and is tried again.
//!
//! The `NodeNetworkConfig`'s `NetworkConfigReady` condition is kstatus-shaped: its
//! `observedGeneration` is the `metadata.generation` whose spec the report is about, and its
//! `lastTransitionTime` changes only when its status flips. Conditions of other types in the
//! list are kept as the agent last saw them in its watch (a JSON merge patch replaces the whole
//! list, so the agent writes the list it saw with its own entry replaced).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use netrollout_api::{GROUP, NODE_CONDITION, NodeNetworkConfig, NodePhase, VERSION};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "netrollout-agent";

use crate::bounded::Bounded;
pub use crate::report::Report;

impl Report {
    /// The merge patch of the `NodeNetworkConfig` status; `conditions` is the whole list
    /// (see [`conditions`]).
    pub fn status_patch(&self, conditions: &[Condition]) -> Value {
        let mut status = json!({
            "reason": self.reason,
            "message": self.message,
            "conditions": conditions,
        });
        let time = |t: Option<jiff::Timestamp>| t.map(|t| json!(Time(t))).unwrap_or(Value::Null);
        if let Some(rev) = &self.revision {
            status["observedRevision"] = json!(rev);
            status["startedAt"] = time(self.started_at);
            status["finishedAt"] = time(self.finished_at);
        }
        if let Some(phase) = self.phase {
            status["phase"] = json!(phase);
        }
        if let Some(lkg) = &self.last_known_good {
            status["lastKnownGoodRevision"] = json!(lkg);
        }
        if let Some(checks) = &self.preexisting_failures {
            status["preexistingFailures"] = json!(checks);
        }
        json!({ "status": status })
    }

    /// The `NodeNetworkConfig`'s `NetworkConfigReady` condition. `previous` is the one the
    /// agent last wrote (or, before its first write since start, found on the object): its
    /// `lastTransitionTime` is kept while the status stays the same, and its
    /// `observedGeneration` when the report names no generation.
    pub fn ready_condition(&self, previous: Option<&Condition>, now: jiff::Timestamp) -> Condition {
        let status = if self.ready { "True" } else { "False" };
        let last_transition_time = previous
            .filter(|p| p.status == status)
            .map_or(Time(now), |p| p.last_transition_time.clone());
        Condition {
            type_: NODE_CONDITION.into(),
            status: status.into(),
            reason: self.reason.clone(),
            message: self.message.clone(),
            last_transition_time,
            observed_generation: self
                .generation
                .or_else(|| previous.and_then(|p| p.observed_generation)),
        }
    }

    /// The Node's `NetworkConfigReady` condition (its `lastTransitionTime` is fixed up by the
    /// writer from the Node's current one).
    pub fn node_condition(&self, now: jiff::Timestamp) -> Value {
        json!({
            "type": NODE_CONDITION,
            "status": if self.ready { "True" } else { "False" },
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": Time(now),
            "lastHeartbeatTime": Time(now),
        })
    }
}

/// The whole `status.conditions` list to write: `seen` (the list as last seen) with the agent's
/// own `NetworkConfigReady` replaced by `ours` (or added at the end); other types are kept.
pub fn conditions(seen: &[Condition], ours: Condition) -> Vec<Condition> {
    let mut list: Vec<Condition> = seen
        .iter()
        .filter(|c| c.type_ != NODE_CONDITION)
        .cloned()
        .collect();
    match seen.iter().position(|c| c.type_ == NODE_CONDITION) {
        Some(i) => list.insert(i.min(list.len()), ours),
        None => list.push(ours),
    }
    list
}

/// Writes every new report to the API, newest first, retrying until it lands; then records an
/// Event for outcomes (Provisioned, Failed, agent problems) on the `NodeNetworkConfig`.
/// `seen` is the node's `NodeNetworkConfig` as the agent's watch last delivered it: a report
/// waits until it has been seen (its status cannot be written before it exists), and its
/// conditions are the list the report's condition is written into.
pub async fn reporter(
    client: kube::Client,
    node: String,
    mut reports: watch::Receiver<Option<Report>>,
    mut seen: watch::Receiver<Option<NodeNetworkConfig>>,
    bounded: Bounded,
) {
    let nnc: Api<NodeNetworkConfig> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    let recorder = Recorder::new(
        client,
        Reporter {
            controller: FIELD_MANAGER.into(),
            instance: Some(node.clone()),
        },
    );
    let mut written: Option<Report> = None;
    // The NetworkConfigReady condition this process last wrote; before its first write, the
    // one on the object (written before a restart).
    let mut last: Option<Condition> = None;
    let mut backoff = Duration::from_millis(200);
    loop {
        let latest = reports.borrow_and_update().clone();
        let Some(report) = latest.filter(|r| Some(r) != written.as_ref()) else {
            if reports.changed().await.is_err() {
                return;
            }
            continue;
        };
        let Some(object) = seen.borrow_and_update().clone() else {
            tokio::select! {
                changed = seen.changed() => if changed.is_err() { return },
                changed = reports.changed() => if changed.is_err() { return },
            }
            continue;
        };
        let on_object = object.status.map(|s| s.conditions).unwrap_or_default();
        let previous = last.clone().or_else(|| {
            on_object
                .iter()
                .find(|c| c.type_ == NODE_CONDITION)
                .cloned()
        });
        let now = jiff::Timestamp::now();
        let list = conditions(&on_object, report.ready_condition(previous.as_ref(), now));
        let t = Instant::now();
        let target = Target {
            nnc: &nnc,
            nodes: &nodes,
            node: &node,
            bounded: &bounded,
        };
        match write(target, &report, &list, now, &mut last).await {
            Ok(()) => {
                tracing::info!(
                    step = "status",
                    revision = report.revision.as_deref().unwrap_or(""),
                    reason = %report.reason,
                    duration_ms = t.elapsed().as_secs_f64() * 1e3,
                    "status written"
                );
                event(&recorder, &node, &report, &bounded).await;
                written = Some(report);
                backoff = Duration::from_millis(200);
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64,
                    "writing status failed; will retry");
                // A newer report is written at once; otherwise the same one after the backoff.
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    changed = reports.changed() => if changed.is_err() { return },
                }
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
        }
    }
}

/// Records an Event for an outcome; best effort (a lost Event loses no state).
async fn event(recorder: &Recorder, node: &str, report: &Report, bounded: &Bounded) {
    let (type_, action) = match report.phase {
        Some(NodePhase::Provisioning) => return,
        Some(NodePhase::Provisioned) => (EventType::Normal, "Apply"),
        Some(NodePhase::Failed) => (EventType::Warning, "Apply"),
        None => (EventType::Warning, "Recover"),
    };
    let ev = Event {
        type_,
        reason: report.reason.clone(),
        note: Some(match &report.revision {
            Some(rev) => format!("{rev}: {}", report.message),
            None => report.message.clone(),
        }),
        action: action.into(),
        secondary: None,
    };
    let reference = ObjectReference {
        api_version: Some(format!("{GROUP}/{VERSION}")),
        kind: Some("NodeNetworkConfig".into()),
        name: Some(node.to_string()),
        ..Default::default()
    };
    if let Err(e) = bounded
        .api("event", recorder.publish(&ev, &reference))
        .await
    {
        tracing::warn!(error = %e, "recording an Event failed");
    }
}

/// Where a report is written.
#[derive(Clone, Copy)]
struct Target<'a> {
    nnc: &'a Api<NodeNetworkConfig>,
    nodes: &'a Api<Node>,
    node: &'a str,
    bounded: &'a Bounded,
}

/// One report's writes: the `NodeNetworkConfig` status (with `conditions`, the whole list;
/// once it lands, `last` is the agent's condition in it), then the Node's condition.
async fn write(
    to: Target<'_>,
    report: &Report,
    conditions: &[Condition],
    now: jiff::Timestamp,
    last: &mut Option<Condition>,
) -> Result<(), String> {
    let Target {
        nnc,
        nodes,
        node,
        bounded,
    } = to;
    let pp = PatchParams::apply(FIELD_MANAGER);
    let patch = Patch::Merge(report.status_patch(conditions));
    bounded
        .api("status", nnc.patch_status(node, &pp, &patch))
        .await
        .map_err(|e| format!("NodeNetworkConfig {node} status: {e}"))?;
    *last = conditions
        .iter()
        .find(|c| c.type_ == NODE_CONDITION)
        .cloned();
    let current = bounded
        .api("node-condition", nodes.get_status(node))
        .await
        .map_err(|e| format!("Node {node}: {e}"))?;
    let mut condition = report.node_condition(now);
    let previous = current
        .status
        .and_then(|s| s.conditions)
        .and_then(|cs| cs.into_iter().find(|c| c.type_ == NODE_CONDITION));
    if let Some(prev) = previous
        && prev.status == condition["status"]
        && let Some(t) = prev.last_transition_time
    {
        condition["lastTransitionTime"] = json!(t);
    }
    let patch = Patch::Strategic(json!({ "status": { "conditions": [condition] } }));
    bounded
        .api(
            "node-condition",
            nodes.patch_status(node, &PatchParams::default(), &patch),
        )
        .await
        .map_err(|e| format!("Node {node} condition {NODE_CONDITION}: {e}"))?;
    Ok(())
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
