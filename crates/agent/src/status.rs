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
//! A write the agent gave up on may still be served by the API server later, after the newer
//! report the agent wrote next. So every write is conditional on the version of the object it
//! was computed from (`metadata.resourceVersion` in the patch): the newer write changed that
//! version, and the late one fails with 409 Conflict instead of overwriting it. A conflict the
//! agent sees itself (a spec change landed first) reads the object again and writes at once.
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
    // The newest version of the object the writer knows: what its last write returned, or the
    // watch's when that delivered one since. Each write is conditional on it.
    let mut base: Option<NodeNetworkConfig> = None;
    let mut conflicts = 0;
    let mut backoff = Duration::from_millis(200);
    loop {
        let latest = reports.borrow_and_update().clone();
        let Some(report) = latest.filter(|r| Some(r) != written.as_ref()) else {
            if reports.changed().await.is_err() {
                return;
            }
            continue;
        };
        if base.is_none() || seen.has_changed().unwrap_or(false) {
            // (An event of the writer's own last write delivered late is older than `base`:
            // the write conditional on it gets a conflict and reads the object again.)
            base = seen.borrow_and_update().clone().or(base);
        }
        let Some(object) = base.as_mut() else {
            tokio::select! {
                changed = seen.changed() => if changed.is_err() { return },
                changed = reports.changed() => if changed.is_err() { return },
            }
            continue;
        };
        let now = jiff::Timestamp::now();
        let t = Instant::now();
        let target = Target {
            nnc: &nnc,
            nodes: &nodes,
            node: &node,
            bounded: &bounded,
        };
        let outcome = match write(target, &report, object, now, &mut last).await {
            Err(Failed::Conflict) if conflicts < MAX_CONFLICTS => {
                // Another write landed first (a spec change, or one of the writer's own that
                // the server served late): the object was read again, write on it at once.
                conflicts += 1;
                continue;
            }
            Err(Failed::Conflict) => Err(format!(
                "NodeNetworkConfig {node} status: {MAX_CONFLICTS} conflicts in a row"
            )),
            Err(Failed::Other(e)) => Err(e),
            Ok(()) => Ok(()),
        };
        conflicts = 0;
        match outcome {
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

/// Conflicts in a row after which a write is treated as failed (and tried again after the
/// backoff): each one means another write landed in between, so they end unless something
/// writes the object without pause.
const MAX_CONFLICTS: u32 = 10;

/// Why a report's writes failed.
#[derive(Debug)]
enum Failed {
    /// The object changed since the version the write was conditional on; it was read again.
    Conflict,
    /// Any other failure, to retry after a backoff.
    Other(String),
}

/// One report's writes: the `NodeNetworkConfig` status, then the Node's condition.
///
/// Each is conditional on the version of the object it was computed from (its
/// `resourceVersion` in the patch, a 409 Conflict otherwise), so a write the server serves
/// late, after the agent gave up on it and wrote a newer report, cannot overwrite that newer
/// report: the newer one changed the version. The status is written on `object` (its
/// conditions are kept, the agent's own replaced); once it lands `object` is what the server
/// returned and `last` the agent's condition in it; on a conflict `object` is read again.
async fn write(
    to: Target<'_>,
    report: &Report,
    object: &mut NodeNetworkConfig,
    now: jiff::Timestamp,
    last: &mut Option<Condition>,
) -> Result<(), Failed> {
    let Target {
        nnc,
        nodes,
        node,
        bounded,
    } = to;
    let on_object = object
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    let previous = last.clone().or_else(|| {
        on_object
            .iter()
            .find(|c| c.type_ == NODE_CONDITION)
            .cloned()
    });
    let list = conditions(&on_object, report.ready_condition(previous.as_ref(), now));
    let mut body = report.status_patch(&list);
    body["metadata"] = json!({ "resourceVersion": object.metadata.resource_version });
    let pp = PatchParams::apply(FIELD_MANAGER);
    let failed =
        |e: &dyn std::fmt::Display| Failed::Other(format!("NodeNetworkConfig {node} status: {e}"));
    match bounded
        .api_answer("status", nnc.patch_status(node, &pp, &Patch::Merge(body)))
        .await
        .map_err(|e| failed(&e))?
    {
        Ok(written) => *object = written,
        Err(kube::Error::Api(s)) if s.code == 409 => {
            *object = bounded
                .api("status", nnc.get_status(node))
                .await
                .map_err(|e| failed(&e))?;
            return Err(Failed::Conflict);
        }
        Err(e) => return Err(failed(&e)),
    }
    *last = list.into_iter().find(|c| c.type_ == NODE_CONDITION);
    node_condition(nodes, node, bounded, report, now)
        .await
        .map_err(Failed::Other)
}

/// The Node's `NetworkConfigReady` condition, conditional on the Node as just read (read again
/// on a conflict: kubelets and others write Nodes too); `lastTransitionTime` kept while the
/// condition's status stays.
async fn node_condition(
    nodes: &Api<Node>,
    node: &str,
    bounded: &Bounded,
    report: &Report,
    now: jiff::Timestamp,
) -> Result<(), String> {
    for _ in 0..MAX_CONFLICTS {
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
        let patch = Patch::Strategic(json!({
            "metadata": { "resourceVersion": current.metadata.resource_version },
            "status": { "conditions": [condition] },
        }));
        match bounded
            .api_answer(
                "node-condition",
                nodes.patch_status(node, &PatchParams::default(), &patch),
            )
            .await?
        {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(format!("Node {node} condition {NODE_CONDITION}: {e}")),
        }
    }
    Err(format!(
        "Node {node} condition {NODE_CONDITION}: {MAX_CONFLICTS} conflicts in a row"
    ))
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
