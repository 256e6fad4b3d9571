//! Simulated agents: one task watches every NodeNetworkConfig and, per node, writes status the
//! way the real agent does — Provisioning with observedRevision, then Provisioned or Failed
//! after a scripted latency — and never retries a revision that failed on that node.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use netrollout_api::{NodeNetworkConfig, NodeNetworkConfigSpec};
use tokio::task::JoinHandle;

/// What an agent does with one dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Provisioning, then Provisioned after the latency.
    Succeed,
    /// Provisioning, then Failed after the latency.
    Fail,
    /// Never reports anything (agent down).
    Ignore,
    /// Provisioning, then nothing (hangs mid-apply).
    Hang,
}

pub type Script = Arc<dyn Fn(&str, &NodeNetworkConfigSpec) -> (Duration, Outcome) + Send + Sync>;

/// Every agent that ever finished is healthy and takes `latency`.
pub fn healthy(latency: Duration) -> Script {
    Arc::new(move |_, _| (latency, Outcome::Succeed))
}

#[derive(Default, Debug)]
pub struct Record {
    /// Nodes between pickup and their final status now.
    pub in_flight: usize,
    /// The most ever at once.
    pub max_in_flight: usize,
    /// (node, revision) in pickup order.
    pub pickups: Vec<(String, String)>,
    /// When each revision was first seen in any node's spec.
    pub first_seen: HashMap<String, std::time::Instant>,
    /// The nodes between pickup and their final status now.
    pub applying: std::collections::BTreeSet<String>,
    /// `applying` right after each pickup, in pickup order (who was in flight together).
    pub together: Vec<Vec<String>>,
}

#[derive(Debug)]
pub struct Agents {
    pub record: Arc<Mutex<Record>>,
    task: JoinHandle<()>,
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Agents {
    pub fn start(client: Client, script: Script) -> Agents {
        let record = Arc::new(Mutex::new(Record::default()));
        let rec = record.clone();
        let task = tokio::spawn(async move {
            let api: Api<NodeNetworkConfig> = Api::all(client.clone());
            let mut handled: HashMap<String, String> = HashMap::new();
            let mut retried: HashMap<String, String> = HashMap::new();
            let failed: Arc<Mutex<HashSet<(String, String)>>> = Arc::default();
            let stream = watcher(api.clone(), watcher::Config::default())
                .default_backoff()
                .applied_objects();
            let mut stream = std::pin::pin!(stream);
            while let Some(ev) = stream.next().await {
                let Ok(nnc) = ev else { continue };
                let Some(node) = nnc.metadata.name.clone() else {
                    continue;
                };
                let revision = nnc.spec.revision.clone();
                if handled.get(&node) == Some(&revision) {
                    continue;
                }
                handled.insert(node.clone(), revision.clone());
                rec.lock()
                    .unwrap()
                    .first_seen
                    .entry(revision.clone())
                    .or_insert_with(std::time::Instant::now);
                let (latency, outcome) = script(&node, &nnc.spec);
                if outcome == Outcome::Ignore {
                    continue;
                }
                let retry = nnc
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(netrollout_api::NODE_RETRY_ANNOTATION))
                    .cloned();
                if retry.is_some() && retried.get(&node) != retry.as_ref() {
                    // A person asked for one more try of whatever failed here.
                    retried.insert(node.clone(), retry.clone().unwrap_or_default());
                    failed
                        .lock()
                        .unwrap()
                        .remove(&(node.clone(), revision.clone()));
                }
                let (api, rec, failed) = (api.clone(), rec.clone(), failed.clone());
                tokio::spawn(async move {
                    apply(api, rec, failed, node, revision, latency, outcome).await;
                });
            }
        });
        Agents { record, task }
    }

    pub fn max_in_flight(&self) -> usize {
        self.record.lock().unwrap().max_in_flight
    }

    pub fn pickups(&self) -> Vec<(String, String)> {
        self.record.lock().unwrap().pickups.clone()
    }

    /// The nodes applying together right after each pickup, in pickup order.
    pub fn together(&self) -> Vec<Vec<String>> {
        self.record.lock().unwrap().together.clone()
    }
}

async fn apply(
    api: Api<NodeNetworkConfig>,
    rec: Arc<Mutex<Record>>,
    failed: Arc<Mutex<HashSet<(String, String)>>>,
    node: String,
    revision: String,
    latency: Duration,
    outcome: Outcome,
) {
    let key = (node.clone(), revision.clone());
    if failed.lock().unwrap().contains(&key) {
        // The real agent never retries a revision that failed on its node.
        status(&api, &node, &revision, "Failed", Some("AlreadyFailed")).await;
        return;
    }
    {
        let mut r = rec.lock().unwrap();
        r.in_flight += 1;
        r.max_in_flight = r.max_in_flight.max(r.in_flight);
        r.pickups.push(key.clone());
        r.applying.insert(node.clone());
        let together = r.applying.iter().cloned().collect();
        r.together.push(together);
    }
    // The apply starts at pickup; the Provisioning report runs alongside it, as the real
    // agent's dataplane never waits on its status write.
    let done = tokio::time::Instant::now() + latency;
    status(&api, &node, &revision, "Provisioning", None).await;
    if outcome == Outcome::Hang {
        return;
    }
    tokio::time::sleep_until(done).await;
    match outcome {
        Outcome::Fail => {
            failed.lock().unwrap().insert(key);
            finished(&rec, &node);
            status(&api, &node, &revision, "Failed", Some("ProbeFailed")).await;
        }
        _ => {
            finished(&rec, &node);
            status(&api, &node, &revision, "Provisioned", None).await;
        }
    }
}

/// `node` is done applying (its final status follows).
fn finished(rec: &Mutex<Record>, node: &str) {
    let mut r = rec.lock().unwrap();
    r.in_flight -= 1;
    r.applying.remove(node);
}

async fn status(
    api: &Api<NodeNetworkConfig>,
    node: &str,
    revision: &str,
    phase: &str,
    reason: Option<&str>,
) {
    let now = jiff::Timestamp::now().to_string();
    let mut s = serde_json::json!({
        "observedRevision": revision,
        "phase": phase,
        "reason": reason,
        "message": reason.map(|r| format!("simulated agent: {r}")),
    });
    if phase == "Provisioning" {
        s["startedAt"] = now.into();
    } else {
        s["finishedAt"] = now.into();
    }
    if phase == "Provisioned" {
        s["lastKnownGoodRevision"] = revision.into();
    }
    // The request the kube client's `patch_status` sends, without decoding the object the
    // server returns (the simulated agents stand in for thousands of processes; decoding every
    // reply was a good part of their CPU).
    let request = kube::core::Request::new(api.resource_url())
        .patch_subresource(
            "status",
            node,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "status": s })),
        )
        .expect("a valid status patch");
    let client = api.clone().into_client();
    // Best effort with a few retries, like the real agent (its dataplane never waits on this).
    for _ in 0..20 {
        let r = client.request_text(request.clone()).await;
        match r {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 404 => return,
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}
