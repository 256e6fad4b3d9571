//! Reporting: the status of the node's own `NodeNetworkConfig` and its Node's
//! `NetworkConfigReady` condition — the only two things the agent writes.
//!
//! The agent publishes a [`Report`] into a channel and never waits for the API server: the
//! [`reporter`] task writes the newest report, retrying with backoff until it lands (so a status
//! decided during an API outage is written once the server returns).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use netrollout_api::{GROUP, NODE_CONDITION, NodeNetworkConfig, NodePhase, VERSION};
use serde_json::{Value, json};
use tokio::sync::watch;

/// Field manager of the agent's writes.
pub const FIELD_MANAGER: &str = "netrollout-agent";
/// Time limit of each API write.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// What the agent tells the API about its node.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The revision the report is about (`status.observedRevision`); `None` leaves it alone.
    pub revision: Option<String>,
    /// The phase; `None` leaves it alone (agent-level problems such as corrupt state).
    pub phase: Option<NodePhase>,
    /// Machine-readable reason, e.g. `ProbeFailed`.
    pub reason: String,
    /// What happened, for people.
    pub message: String,
    /// When the attempt started.
    pub started_at: Option<jiff::Timestamp>,
    /// When the attempt finished.
    pub finished_at: Option<jiff::Timestamp>,
    /// The node's last-known-good revision.
    pub last_known_good: Option<String>,
    /// `NetworkConfigReady` on the Node.
    pub ready: bool,
}

impl Report {
    /// The merge patch of the `NodeNetworkConfig` status.
    pub fn status_patch(&self, now: jiff::Timestamp) -> Value {
        let mut status = json!({
            "reason": self.reason,
            "message": self.message,
            "conditions": [self.condition(now)],
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
        json!({ "status": status })
    }

    /// The `NetworkConfigReady` condition (its `lastTransitionTime` is fixed up by the writer).
    pub fn condition(&self, now: jiff::Timestamp) -> Value {
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

/// Writes every new report to the API, newest first, retrying until it lands; then records an
/// Event for outcomes (Provisioned, Failed, agent problems) on the `NodeNetworkConfig`.
pub async fn reporter(
    client: kube::Client,
    node: String,
    mut reports: watch::Receiver<Option<Report>>,
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
    let mut backoff = Duration::from_millis(200);
    loop {
        let latest = reports.borrow_and_update().clone();
        let Some(report) = latest.filter(|r| Some(r) != written.as_ref()) else {
            if reports.changed().await.is_err() {
                return;
            }
            continue;
        };
        let t = Instant::now();
        match write(&nnc, &nodes, &node, &report).await {
            Ok(()) => {
                tracing::info!(
                    step = "status",
                    revision = report.revision.as_deref().unwrap_or(""),
                    reason = %report.reason,
                    duration_ms = t.elapsed().as_secs_f64() * 1e3,
                    "status written"
                );
                event(&recorder, &node, &report).await;
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
async fn event(recorder: &Recorder, node: &str, report: &Report) {
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
    if let Err(e) = timed(recorder.publish(&ev, &reference)).await {
        tracing::warn!(error = %e, "recording an Event failed");
    }
}

async fn write(
    nnc: &Api<NodeNetworkConfig>,
    nodes: &Api<Node>,
    node: &str,
    report: &Report,
) -> Result<(), String> {
    let now = jiff::Timestamp::now();
    let pp = PatchParams::apply(FIELD_MANAGER);
    let patch = Patch::Merge(report.status_patch(now));
    timed(nnc.patch_status(node, &pp, &patch))
        .await
        .map_err(|e| format!("NodeNetworkConfig {node} status: {e}"))?;
    let current = timed(nodes.get_status(node))
        .await
        .map_err(|e| format!("Node {node}: {e}"))?;
    let mut condition = report.condition(now);
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
    timed(nodes.patch_status(node, &PatchParams::default(), &patch))
        .await
        .map_err(|e| format!("Node {node} condition {NODE_CONDITION}: {e}"))?;
    Ok(())
}

async fn timed<T>(f: impl std::future::Future<Output = kube::Result<T>>) -> Result<T, String> {
    match tokio::time::timeout(WRITE_TIMEOUT, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!("no answer within {WRITE_TIMEOUT:?}")),
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
