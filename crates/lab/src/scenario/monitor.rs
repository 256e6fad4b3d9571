//! The monitor every scenario watches the lab through: a watch on the node configs (every stored
//! state, in order) and polled revisions, printed as a timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt as _;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event, watcher};
use netrollout_api::{NodeNetworkConfig, NodePhase};

use crate::cluster::Cluster;
use crate::progress::{self, Observed};
use crate::traffic;

/// Follows the rollout. A watch on the node configs sees every state the API server stores, in
/// order, so the nodes in flight are counted exactly (polling would miss a wave that lasts less
/// than its interval); each node change is printed with its time. Revisions are polled.
#[derive(Debug)]
pub struct Monitor {
    start: Instant,
    last: BTreeMap<String, String>,
    nodes: Arc<Mutex<NodeTracker>>,
    watch: tokio::task::JoinHandle<()>,
    /// The latest observation.
    pub now: Observed,
}

/// What the watch on node configs has seen.
#[derive(Debug, Default)]
struct NodeTracker {
    configs: BTreeMap<String, NodeNetworkConfig>,
    peak_in_flight: usize,
    peak_at: Vec<String>,
    /// Every Failed status message seen, per node.
    failures: BTreeMap<String, Vec<String>>,
    /// Nodes whose spec ever named each revision.
    dispatched: BTreeMap<String, BTreeSet<String>>,
    /// Per node, when it was in flight (Unix ms; an open end while it still is).
    windows: BTreeMap<String, Vec<(u64, Option<u64>)>>,
}

impl NodeTracker {
    fn seen(&mut self, start: Instant, c: NodeNetworkConfig) {
        let name = c.metadata.name.clone().unwrap_or_default();
        let line = describe(&c);
        let changed = self.configs.get(&name).map(describe) != Some(line.clone());
        if changed {
            say_at(start, &format!("node {name}: {line}"));
        }
        if let Some(s) = c
            .status
            .as_ref()
            .filter(|s| s.phase == Some(NodePhase::Failed))
        {
            let msg = s.message.clone().unwrap_or_default();
            let seen = self.failures.entry(name.clone()).or_default();
            if !seen.contains(&msg) {
                seen.push(msg);
            }
        }
        self.dispatched
            .entry(c.spec.revision.clone())
            .or_default()
            .insert(name.clone());
        let busy = !progress::finished(&c);
        let windows = self.windows.entry(name.clone()).or_default();
        let open = windows.last().is_some_and(|w| w.1.is_none());
        if busy && !open {
            windows.push((traffic::now_ms(), None));
        } else if !busy
            && open
            && let Some(w) = windows.last_mut()
        {
            w.1 = Some(traffic::now_ms());
        }
        self.configs.insert(name, c);
        let in_flight: Vec<String> = self
            .configs
            .values()
            .filter(|c| !progress::finished(c))
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        if in_flight.len() > self.peak_in_flight {
            self.peak_in_flight = in_flight.len();
            self.peak_at = in_flight;
        }
    }
}

fn describe(c: &NodeNetworkConfig) -> String {
    let s = c.status.clone().unwrap_or_default();
    let phase = s
        .phase
        .map(|p| format!("{p:?}"))
        .unwrap_or_else(|| "-".into());
    let observed = s.observed_revision.unwrap_or_else(|| "-".into());
    let msg = s.message.map(|m| format!(" ({m})")).unwrap_or_default();
    format!("spec {} / status {phase} {observed}{msg}", c.spec.revision)
}

fn say_at(start: Instant, text: &str) {
    crate::out!("[{:>6.1}s] {text}", start.elapsed().as_secs_f64());
}

impl Monitor {
    /// Starts watching the lab's node configs; the clock starts now.
    pub fn new(lab: &Cluster) -> Self {
        let start = Instant::now();
        let nodes = Arc::new(Mutex::new(NodeTracker::default()));
        let api: Api<NodeNetworkConfig> = Api::all(lab.client.clone());
        let tracker = nodes.clone();
        let watch = tokio::spawn(async move {
            let events = watcher(api, watcher::Config::default()).default_backoff();
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                let mut t = tracker.lock().unwrap_or_else(PoisonError::into_inner);
                match event {
                    Ok(Event::Apply(c) | Event::InitApply(c)) => t.seen(start, c),
                    Ok(Event::Delete(c)) => {
                        t.configs
                            .remove(c.metadata.name.as_deref().unwrap_or_default());
                    }
                    Ok(Event::Init | Event::InitDone) | Err(_) => {}
                }
            }
        });
        Self {
            start,
            last: BTreeMap::new(),
            nodes,
            watch,
            now: Observed::default(),
        }
    }

    /// Prints a timeline line.
    pub fn say(&self, text: &str) {
        say_at(self.start, text);
    }

    /// Most nodes the watch saw in flight at once, and which they were.
    pub fn peak_in_flight(&self) -> (usize, Vec<String>) {
        let t = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        (t.peak_in_flight, t.peak_at.clone())
    }

    /// Every Failed status message the watch saw, per node.
    pub fn failures(&self) -> BTreeMap<String, Vec<String>> {
        let t = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        t.failures.clone()
    }

    /// When `node` was in flight (Unix ms), clipped to `[from, to)`.
    pub fn windows(&self, node: &str, from: u64, to: u64) -> Vec<(u64, u64)> {
        let t = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        t.windows
            .get(node)
            .into_iter()
            .flatten()
            .map(|(a, b)| ((*a).max(from), b.unwrap_or(to).min(to)))
            .filter(|(a, b)| a < b)
            .collect()
    }

    /// Nodes whose spec ever named `revision`.
    pub fn dispatched(&self, revision: &str) -> BTreeSet<String> {
        let t = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        t.dispatched.get(revision).cloned().unwrap_or_default()
    }

    /// Takes one observation and prints what changed in the revisions.
    pub async fn observe(&mut self, lab: &Cluster) -> Result<()> {
        let obs = Observed::fetch(&lab.client).await?;
        let mut now = BTreeMap::new();
        for r in &obs.revisions {
            let s = r.status.clone().unwrap_or_default();
            let phase = s
                .phase
                .map(|p| format!("{p:?}"))
                .unwrap_or_else(|| "-".into());
            let key = format!("revision {}", r.metadata.name.clone().unwrap_or_default());
            now.insert(
                key,
                format!(
                    "seq {} {phase} {}",
                    r.spec.sequence,
                    s.message.unwrap_or_default()
                ),
            );
        }
        for (key, value) in &now {
            if self.last.get(key) != Some(value) {
                self.say(&format!("{key}: {value}"));
            }
        }
        self.last = now;
        self.now = obs;
        Ok(())
    }

    /// Observes until `done` holds, or fails after `timeout` naming `what`.
    pub async fn until(
        &mut self,
        lab: &Cluster,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Observed) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            // Its watch feeds the scenario's checks (peak in flight, failures, windows): one
            // that died would make them pass on nothing.
            if self.watch.is_finished() {
                bail!(
                    "the monitor's watch of the node configs ended (panicked); the scenario's \
                     checks would read nothing"
                );
            }
            if let Err(e) = self.observe(lab).await {
                self.say(&format!("(API not answering: {e})"));
            } else if done(&self.now) {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("timed out after {timeout:?} waiting for {what}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.watch.abort();
    }
}
