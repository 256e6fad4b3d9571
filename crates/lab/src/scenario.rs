//! Scripted stories that run against a real lab and end with a summary. Each records a timeline
//! of what the API showed and checks the promises of the contract (docs/contract.md); a broken promise fails the run.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt as _;
use kube::api::Api;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event, watcher};
use netrollout_api::{NodeNetworkConfig, NodePhase, RevisionPhase};
use netrollout_lab_apiserver::Outage;

use crate::cluster::{Lab, Options};
use crate::inputs;
use crate::progress::{self, Observed};

/// The scenarios `netrollout-lab scenario <name>` runs.
pub const NAMES: [&str; 5] = [
    "happy",
    "bad-config",
    "node-join",
    "configurator-crash",
    "api-outage",
];

/// Lab settings for a scenario (fewer nodes for the crash story keeps it quick).
pub fn options(name: &str, base: Options) -> Options {
    match name {
        "configurator-crash" => Options {
            configurators: 2,
            update_limit: "1".into(),
            ..base
        },
        "node-join" => Options {
            nodes: base.nodes.max(3),
            update_limit: "1".into(),
            ..base
        },
        _ => base,
    }
}

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
    println!("[{:>6.1}s] {text}", start.elapsed().as_secs_f64());
}

impl Monitor {
    /// Starts watching the lab's node configs; the clock starts now.
    pub fn new(lab: &Lab) -> Self {
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

    /// Nodes whose spec ever named `revision`.
    pub fn dispatched(&self, revision: &str) -> BTreeSet<String> {
        let t = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        t.dispatched.get(revision).cloned().unwrap_or_default()
    }

    /// Takes one observation and prints what changed in the revisions.
    pub async fn observe(&mut self, lab: &Lab) -> Result<()> {
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
        lab: &Lab,
        what: &str,
        timeout: Duration,
        done: impl Fn(&Observed) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
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

/// The outcome of a scenario: each check with whether it held.
#[derive(Debug, Default)]
pub struct Summary {
    /// `(check, held, detail)`.
    pub checks: Vec<(String, bool, String)>,
}

impl Summary {
    fn check(&mut self, what: &str, held: bool, detail: impl Into<String>) {
        self.checks.push((what.to_string(), held, detail.into()));
    }

    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.1)
    }
}

const SETTLE: Duration = Duration::from_secs(120);

/// Runs scenario `name` on a started lab.
pub async fn run(name: &str, lab: &mut Lab) -> Result<Summary> {
    let mut m = Monitor::new(lab);
    let mut summary = Summary::default();
    let limit: usize = lab.options().update_limit.parse().unwrap_or(usize::MAX);
    let (samples, skipped) = inputs::samples(lab.vrf)?;
    if !skipped.is_empty() {
        m.say(&format!(
            "this kernel has no vrf module: leaving out {}",
            skipped.join(", ")
        ));
    }
    match name {
        "happy" => {
            let target = rollout(&mut m, lab, &samples, "the samples").await?;
            all_provisioned(&mut summary, &m, lab, &target);
        }
        "bad-config" => {
            let good = rollout(&mut m, lab, &samples, "the samples (known-good)").await?;
            m.say("applying a config that makes the API server's address local on every node");
            lab.apply(&[inputs::connectivity_breaker()?]).await?;
            let bad = new_revision(&mut m, lab, &good).await?;
            m.until(lab, "the bad revision to fail", SETTLE, |o| {
                o.phase_of(&bad) == Some(RevisionPhase::Failed)
            })
            .await?;
            summary.check("bad revision Failed", true, bad.clone());
            m.until(
                lab,
                "every node back on the known-good revision",
                SETTLE,
                |o| o.provisioned_on(&good).len() == o.configs.len(),
            )
            .await?;
            all_provisioned(&mut summary, &m, lab, &good);
            let given: Vec<String> = m.dispatched(&bad).into_iter().collect();
            summary.check(
                "the rollout halted: only the first wave was given the bad revision",
                !given.is_empty() && given.len() <= limit,
                format!("{} (limit {limit})", given.join(", ")),
            );
            let failures = m.failures();
            let failed = failures.len();
            let max_failures = lab.options().max_failures as usize;
            summary.check(
                "blast radius ≤ max-failures + update limit",
                failed <= max_failures + limit,
                format!("{failed} node(s) failed, limit {limit}, max-failures {max_failures}"),
            );
            let restored = format!("restored last-known-good {good}");
            let said_why = !failures.is_empty()
                && failures
                    .values()
                    .all(|msgs| msgs.iter().any(|msg| msg.contains(&restored)));
            summary.check(
                "failed nodes restored last-known-good locally and said why",
                said_why,
                failures
                    .iter()
                    .map(|(node, msgs)| format!("{node}: {}", msgs.join(" | ")))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
        "node-join" => {
            m.say("applying the samples; a node joins once the first wave is in flight");
            lab.apply(&samples).await?;
            m.until(lab, "the first dispatch", SETTLE, |o| {
                !o.in_flight().is_empty()
            })
            .await?;
            let joined = lab.add_node().await?;
            m.say(&format!("node {joined} joined"));
            let target = settle(&mut m, lab).await?;
            all_provisioned(&mut summary, &m, lab, &target);
            summary.check(
                "the joining node got the revision",
                m.now.provisioned_on(&target).contains(&joined.as_str()),
                joined,
            );
        }
        "configurator-crash" => {
            m.say("applying the samples; the leader is killed after the first node finishes");
            lab.apply(&samples).await?;
            m.until(lab, "a leader and the first node done", SETTLE, |o| {
                o.newest().is_some_and(|r| {
                    !o.provisioned_on(r.metadata.name.as_deref().unwrap_or_default())
                        .is_empty()
                })
            })
            .await?;
            let leader = lab.leader().await?.unwrap_or_default();
            m.say(&format!("killing the leader {leader} with SIGKILL"));
            lab.kill_configurator(&leader).await?;
            let target = settle(&mut m, lab).await?;
            let new_leader = lab.leader().await?.unwrap_or_default();
            summary.check(
                "the standby took over",
                !new_leader.is_empty() && new_leader != leader,
                format!("{leader} → {new_leader}"),
            );
            all_provisioned(&mut summary, &m, lab, &target);
        }
        "api-outage" => {
            let good = rollout(&mut m, lab, &samples, "the samples (known-good)").await?;
            lab.apply(&[inputs::layer2("lab-extra", 700, "192.168.70.1/24")?])
                .await?;
            let next = new_revision(&mut m, lab, &good).await?;
            m.until(lab, "a node applying the new revision", SETTLE, |o| {
                !o.in_flight().is_empty()
            })
            .await?;
            m.say("API server outage: it answers every request with 500 for 5 s");
            lab.server.faults().set_outage(Outage::Fail);
            tokio::time::sleep(Duration::from_secs(5)).await;
            lab.server.faults().set_outage(Outage::None);
            m.say("API server back");
            m.until(lab, "the new revision to succeed", SETTLE, |o| {
                o.phase_of(&next) == Some(RevisionPhase::Succeeded)
            })
            .await?;
            let failures = m.failures();
            summary.check(
                "the rollout finished after the outage, no node failed",
                failures.is_empty(),
                format!("{next} Succeeded; failures seen: {failures:?}"),
            );
            all_provisioned(&mut summary, &m, lab, &next);
        }
        other => bail!(
            "unknown scenario {other:?}; choose one of {}",
            NAMES.join(", ")
        ),
    }
    let (peak, at) = m.peak_in_flight();
    summary.check(
        "nodes in flight never exceeded --update-limit (every stored state watched)",
        peak <= limit,
        format!("peak {peak} (limit {limit}): {}", at.join(", ")),
    );
    Ok(summary)
}

/// Applies inputs and waits for the resulting revision to succeed; returns its name.
async fn rollout(
    m: &mut Monitor,
    lab: &Lab,
    objects: &[kube::api::DynamicObject],
    what: &str,
) -> Result<String> {
    m.say(&format!("applying {what}"));
    lab.apply(objects).await?;
    let target = settle(m, lab).await?;
    m.say(&format!("revision {target} succeeded"));
    Ok(target)
}

/// Waits until a revision other than `previous` is the newest; returns its name.
async fn new_revision(m: &mut Monitor, lab: &Lab, previous: &str) -> Result<String> {
    m.until(lab, "a new revision", SETTLE, |o| {
        o.newest()
            .is_some_and(|r| r.metadata.name.as_deref() != Some(previous))
    })
    .await?;
    Ok(m.now
        .newest()
        .and_then(|r| r.metadata.name.clone())
        .unwrap_or_default())
}

/// Waits until the newest revision succeeds; returns its name.
async fn settle(m: &mut Monitor, lab: &Lab) -> Result<String> {
    m.until(lab, "the newest revision to succeed", SETTLE, |o| {
        o.newest().and_then(|r| r.status.as_ref()?.phase) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    Ok(m.now
        .newest()
        .and_then(|r| r.metadata.name.clone())
        .unwrap_or_default())
}

fn all_provisioned(summary: &mut Summary, m: &Monitor, lab: &Lab, revision: &str) {
    let done = m.now.provisioned_on(revision).len();
    let nodes = lab.node_names().len();
    summary.check(
        &format!("every node Provisioned on {revision}"),
        done == nodes,
        format!("{done}/{nodes}"),
    );
}
