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
use crate::settings::UpdateLimit;
use crate::traffic::{self, Loss};

/// The scripted stories.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    /// The samples roll out; traffic flows; a one-network change costs nothing on the others.
    Happy,
    /// A config that cuts the nodes off the API server.
    BadConfig,
    /// A node joins mid-rollout.
    NodeJoin,
    /// The leading configurator is killed mid-rollout.
    ConfiguratorCrash,
    /// The API server fails every request for 5 s while nodes apply.
    ApiOutage,
    /// A wrong VNI on the tenant network.
    TenantBreak,
}

impl Scenario {
    /// Every scenario, in the order `all` runs them.
    pub const ALL: [Scenario; 6] = [
        Scenario::Happy,
        Scenario::BadConfig,
        Scenario::NodeJoin,
        Scenario::ConfiguratorCrash,
        Scenario::ApiOutage,
        Scenario::TenantBreak,
    ];

    /// Lab settings for the scenario (fewer nodes for the crash story keeps it quick).
    pub fn options(self, base: Options) -> Options {
        match self {
            Scenario::ConfiguratorCrash => Options {
                configurators: 2,
                update_limit: UpdateLimit::Count(1),
                ..base
            },
            Scenario::NodeJoin => Options {
                nodes: base.nodes.max(3),
                update_limit: UpdateLimit::Count(1),
                ..base
            },
            _ => base,
        }
    }
}

impl std::fmt::Display for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum as _;
        match self.to_possible_value() {
            Some(v) => f.write_str(v.get_name()),
            None => write!(f, "{self:?}"),
        }
    }
}

/// What `netrollout-lab scenario NAME` runs: one scenario or `all`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Every scenario, one lab each.
    All,
    /// One scenario.
    One(Scenario),
}

impl Choice {
    /// The scenarios to run.
    pub fn scenarios(self) -> Vec<Scenario> {
        match self {
            Choice::All => Scenario::ALL.to_vec(),
            Choice::One(s) => vec![s],
        }
    }
}

impl std::str::FromStr for Choice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        use clap::ValueEnum as _;
        if s == "all" {
            return Ok(Choice::All);
        }
        Scenario::from_str(s, false).map(Choice::One).map_err(|_| {
            let names: Vec<String> = Scenario::ALL.iter().map(ToString::to_string).collect();
            format!(
                "unknown scenario {s:?}: choose one of {} or all",
                names.join(", ")
            )
        })
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

/// How long a rollout may take to settle: 2 min, 5 min with the nodes in the VM (TCG).
fn settle(lab: &Lab) -> Duration {
    Duration::from_secs(if lab.in_vm() { 300 } else { 120 })
}

/// Runs scenario `name` on a started lab.
pub async fn run(name: Scenario, lab: &mut Lab) -> Result<Summary> {
    let mut m = Monitor::new(lab);
    let mut summary = Summary::default();
    let (samples, skipped) = inputs::initial(lab.vrf)?;
    if !skipped.is_empty() {
        m.say(&format!(
            "no VRFs (no vrf module, or --without-vrfs): leaving out {}",
            skipped.join(", ")
        ));
    }
    match name {
        Scenario::Happy => {
            let target = rollout(&mut m, lab, &samples, "the samples").await?;
            all_provisioned(&mut summary, &m, lab, &target);
            start_traffic(&mut summary, &m, lab, &samples).await?;
            untainted(
                &mut summary,
                &m,
                lab,
                "startup taints removed once each node's checks passed",
            )
            .await?;
            let mut sessions = Vec::new();
            for n in lab.node_names() {
                if let Err(e) = lab.evpn_established(&n).await {
                    sessions.push(format!("{e:#}"));
                }
            }
            summary.check(
                "every node's FRR has an Established EVPN session with the route reflector",
                sessions.is_empty(),
                if sessions.is_empty() {
                    format!(
                        "{} node(s), show bgp l2vpn evpn summary",
                        lab.node_names().len()
                    )
                } else {
                    sessions.join("; ")
                },
            );
            // A change to one network: the first one of the traffic's networks.
            let changed = lab
                .traffic
                .networks
                .first()
                .map(|n| n.name.clone())
                .unwrap_or_default();
            let objects: Vec<_> = samples
                .iter()
                .filter(|o| o.metadata.name.as_deref() == Some(changed.as_str()))
                .cloned()
                .map(|mut o| {
                    o.data["spec"]["mtu"] = serde_json::json!(1400);
                    o
                })
                .collect();
            let t0 = traffic::now_ms();
            m.say(&format!("applying MTU 1400 on {changed}"));
            lab.apply(&objects).await?;
            let next = new_revision(&mut m, lab, &target).await?;
            m.until(lab, "the MTU change to succeed", settle(lab), |o| {
                o.phase_of(&next) == Some(RevisionPhase::Succeeded)
            })
            .await?;
            let t1 = traffic::now_ms();
            all_provisioned(&mut summary, &m, lab, &next);
            traffic_report(&mut summary, &m, lab, (t0, t1), &[changed.as_str()], &[]).await;
        }
        Scenario::BadConfig => {
            let good = rollout(&mut m, lab, &samples, "the samples (known-good)").await?;
            start_traffic(&mut summary, &m, lab, &samples).await?;
            m.say("applying a config that makes the API server's address local on every node");
            let breaker = [inputs::connectivity_breaker()?];
            let (given, (t0, t1)) =
                fail_and_restore(&mut summary, &mut m, lab, &good, &breaker, "bad revision")
                    .await?;
            let first_wave: Vec<&str> = given.iter().map(String::as_str).collect();
            traffic_report(&mut summary, &m, lab, (t0, t1), &[], &first_wave).await;
        }
        Scenario::NodeJoin => {
            m.say("applying the samples; a node joins once the first wave is in flight");
            lab.apply(&samples).await?;
            m.until(lab, "the first dispatch", settle(lab), |o| {
                !o.in_flight().is_empty()
            })
            .await?;
            let joined = lab.add_node().await?;
            m.say(&format!("node {joined} joined"));
            let target = settle_newest(&mut m, lab).await?;
            all_provisioned(&mut summary, &m, lab, &target);
            summary.check(
                "the joining node got the revision",
                m.now.provisioned_on(&target).contains(&joined.as_str()),
                joined.clone(),
            );
            start_traffic(&mut summary, &m, lab, &samples).await?;
            let carried = lab.traffic.pairs().iter().any(|p| p.from == joined);
            summary.check(
                "the joining node carries tenant traffic",
                carried,
                format!("{joined} pings its neighbour on every network"),
            );
        }
        Scenario::ConfiguratorCrash => {
            m.say("applying the samples; the leader is killed after the first node finishes");
            lab.apply(&samples).await?;
            m.until(lab, "a leader and the first node done", settle(lab), |o| {
                o.newest().is_some_and(|r| {
                    !o.provisioned_on(r.metadata.name.as_deref().unwrap_or_default())
                        .is_empty()
                })
            })
            .await?;
            let leader = lab.leader().await?.unwrap_or_default();
            m.say(&format!("killing the leader {leader} with SIGKILL"));
            lab.kill_configurator(&leader).await?;
            let target = settle_newest(&mut m, lab).await?;
            let new_leader = lab.leader().await?.unwrap_or_default();
            summary.check(
                "the standby took over",
                !new_leader.is_empty() && new_leader != leader,
                format!("{leader} → {new_leader}"),
            );
            all_provisioned(&mut summary, &m, lab, &target);
            start_traffic(&mut summary, &m, lab, &samples).await?;
        }
        Scenario::ApiOutage => {
            let good = rollout(&mut m, lab, &samples, "the samples (known-good)").await?;
            start_traffic(&mut summary, &m, lab, &samples).await?;
            let t0 = traffic::now_ms();
            lab.apply(&[inputs::layer2("lab-extra", 700, "192.168.70.1/24")?])
                .await?;
            let next = new_revision(&mut m, lab, &good).await?;
            m.until(lab, "a node applying the new revision", settle(lab), |o| {
                !o.in_flight().is_empty()
            })
            .await?;
            m.say("API server outage: it answers every request with 500 for 5 s");
            lab.server.faults().set_outage(Outage::Fail);
            tokio::time::sleep(Duration::from_secs(5)).await;
            lab.server.faults().set_outage(Outage::None);
            m.say("API server back");
            m.until(lab, "the new revision to succeed", settle(lab), |o| {
                o.phase_of(&next) == Some(RevisionPhase::Succeeded)
            })
            .await?;
            let t1 = traffic::now_ms();
            let failures = m.failures();
            summary.check(
                "the rollout finished after the outage, no node failed",
                failures.is_empty(),
                format!("{next} Succeeded; failures seen: {failures:?}"),
            );
            all_provisioned(&mut summary, &m, lab, &next);
            traffic_report(&mut summary, &m, lab, (t0, t1), &["lab-extra"], &[]).await;
        }
        Scenario::TenantBreak => {
            let good = rollout(&mut m, lab, &samples, "the samples (known-good)").await?;
            start_traffic(&mut summary, &m, lab, &samples).await?;
            untainted(
                &mut summary,
                &m,
                lab,
                "startup taints removed before the break",
            )
            .await?;
            let wrong = inputs::TENANT_VNI + 1;
            m.say(&format!(
                "applying a wrong VNI ({wrong}) on {}: its nodes no longer reach the others' workloads",
                inputs::TENANT
            ));
            let wrong_vni = [inputs::tenant(wrong)?];
            let (given, (t0, t1)) = fail_and_restore(
                &mut summary,
                &mut m,
                lab,
                &good,
                &wrong_vni,
                "wrong-VNI revision",
            )
            .await?;
            let failures = m.failures();
            let tenant_probe = failures.values().flatten().any(|msg| msg.contains("icmp"));
            summary.check(
                "the tenant probe (not the API server check) caught it",
                tenant_probe,
                failures
                    .values()
                    .flatten()
                    .next()
                    .cloned()
                    .unwrap_or_default(),
            );
            let first_wave: Vec<&str> = given.iter().map(String::as_str).collect();
            traffic_report(
                &mut summary,
                &m,
                lab,
                (t0, t1),
                &[inputs::TENANT],
                &first_wave,
            )
            .await;
            let tainted = lab.tainted().await?;
            summary.check(
                "a later failure does not taint the nodes again",
                tainted.is_empty(),
                format!("tainted: {tainted:?}"),
            );
        }
    }
    let (peak, at) = m.peak_in_flight();
    let limit = limit(lab);
    summary.check(
        "nodes in flight never exceeded --update-limit (every stored state watched)",
        peak <= limit,
        format!("peak {peak} (limit {limit}): {}", at.join(", ")),
    );
    Ok(summary)
}

/// The update limit resolved for the lab's current node count.
fn limit(lab: &Lab) -> usize {
    lab.options().update_limit.resolve(lab.node_names().len())
}

/// A change that must fail: applies `objects` on top of revision `good`, waits until the new
/// revision (`what`) Fails and every node is back on `good`, and checks what a halted rollout
/// promises. Returns the nodes the failed revision was dispatched to and the traffic window
/// (from the apply to the last node's restore).
async fn fail_and_restore(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &Lab,
    good: &str,
    objects: &[kube::api::DynamicObject],
    what: &str,
) -> Result<(Vec<String>, (u64, u64))> {
    let t0 = traffic::now_ms();
    lab.apply(objects).await?;
    let bad = new_revision(m, lab, good).await?;
    m.until(lab, &format!("the {what} to fail"), settle(lab), |o| {
        o.phase_of(&bad) == Some(RevisionPhase::Failed)
    })
    .await?;
    summary.check(&format!("{what} Failed"), true, bad.clone());
    m.until(
        lab,
        "every node back on the known-good revision",
        settle(lab),
        |o| o.provisioned_on(good).len() == o.configs.len(),
    )
    .await?;
    let t1 = traffic::now_ms();
    all_provisioned(summary, m, lab, good);
    let given: Vec<String> = m.dispatched(&bad).into_iter().collect();
    halted_and_restored(summary, m, lab, &given, good, limit(lab));
    Ok((given, (t0, t1)))
}

/// Checks of a failed rollout: only the first wave got the revision, at most max-failures +
/// limit nodes failed, each restored last-known-good locally and said why.
fn halted_and_restored(
    summary: &mut Summary,
    m: &Monitor,
    lab: &Lab,
    given: &[String],
    good: &str,
    limit: usize,
) {
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

/// How long tenant traffic may take to flow after workloads attach or a node restores (EVPN
/// routes travel through the route reflector).
fn converge(lab: &Lab) -> Duration {
    Duration::from_secs(if lab.in_vm() { 60 } else { 30 })
}

/// Waits (up to 20 s) until no Node carries the startup taint; checks that.
async fn untainted(summary: &mut Summary, m: &Monitor, lab: &Lab, what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut tainted = lab.tainted().await?;
    while !tainted.is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        tainted = lab.tainted().await?;
    }
    m.say(&format!(
        "startup taint {}: {}",
        crate::cluster::STARTUP_TAINT,
        if tainted.is_empty() {
            "removed from every node by its agent".to_string()
        } else {
            format!("still on {}", tainted.join(", "))
        }
    ));
    summary.check(
        what,
        tainted.is_empty(),
        format!(
            "{} by the agents (health-check file passing); still tainted: {tainted:?}",
            crate::cluster::STARTUP_TAINT
        ),
    );
    Ok(())
}

/// How long the traffic report watches after a rollout ends.
const AFTER: Duration = Duration::from_secs(3);

/// Attaches workloads, starts the ping streams and checks full reachability.
async fn start_traffic(
    summary: &mut Summary,
    m: &Monitor,
    lab: &mut Lab,
    objects: &[kube::api::DynamicObject],
) -> Result<()> {
    lab.start_traffic(objects).await?;
    let nets: Vec<String> = lab
        .traffic
        .networks
        .iter()
        .map(|n| n.name.clone())
        .collect();
    m.say(&format!(
        "tenant traffic: workloads on {}, {} pair(s), {} probes/s each",
        nets.join(", "),
        lab.traffic.pairs().len(),
        traffic::RATE
    ));
    let missing = lab.traffic.wait_reachable(converge(lab)).await;
    m.say(&format!(
        "tenant traffic: {}",
        if missing.is_empty() {
            "every pair answers".to_string()
        } else {
            format!("{} pair(s) without replies", missing.len())
        }
    ));
    summary.check(
        "full tenant reachability",
        missing.is_empty() && lab.traffic.running() > 0,
        reachability_detail(lab, &missing),
    );
    Ok(())
}

fn reachability_detail(lab: &Lab, missing: &[traffic::Pair]) -> String {
    if missing.is_empty() {
        format!(
            "{} pair(s) on {} network(s), every probe answered for 2 s",
            lab.traffic.pairs().len(),
            lab.traffic.networks.len()
        )
    } else {
        missing
            .iter()
            .map(|p| format!("{} {}→{}", p.network, p.from, p.to))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Prints loss per network and node — before the change, while each node applied, during the
/// rollout `window` and after it — and checks: networks not in `changed` lost nothing during the
/// rollout; with `first_wave` given, pairs not touching those nodes lost nothing either; every
/// pair answers again at the end.
async fn traffic_report(
    summary: &mut Summary,
    m: &Monitor,
    lab: &Lab,
    window: (u64, u64),
    changed: &[&str],
    first_wave: &[&str],
) {
    let (t0, t1) = window;
    // Some probes after the rollout, then until every pair answers again.
    tokio::time::sleep(AFTER).await;
    let missing = lab.traffic.wait_reachable(converge(lab)).await;
    let end = traffic::now_ms().saturating_sub(traffic::PROBE_TIMEOUT.as_millis() as u64);
    let t = &lab.traffic;
    let mut rows = vec![vec![
        "NETWORK".to_string(),
        "NODE".into(),
        "BEFORE".into(),
        "WHILE IT APPLIED".into(),
        "ROLLOUT".into(),
        "AFTER".into(),
    ]];
    let mut nodes: Vec<String> = t.pairs().into_iter().map(|p| p.from).collect();
    nodes.sort();
    nodes.dedup();
    for net in &t.networks {
        for node in &nodes {
            let applied =
                m.windows(node, t0, t1)
                    .into_iter()
                    .fold(Loss::default(), |acc, (a, b)| {
                        let l = t.node_loss(&net.name, node, a, b);
                        Loss {
                            sent: acc.sent + l.sent,
                            lost: acc.lost + l.lost,
                        }
                    });
            rows.push(vec![
                net.name.clone(),
                node.clone(),
                t.node_loss(&net.name, node, 0, t0).to_string(),
                applied.to_string(),
                t.node_loss(&net.name, node, t0, t1).to_string(),
                t.node_loss(&net.name, node, t1, end).to_string(),
            ]);
        }
    }
    m.say("tenant probes lost/sent per network and node (a node counts the pairs it sends or answers):");
    for line in progress::table(&rows).lines() {
        crate::out!("           {line}");
    }
    for net in t
        .networks
        .iter()
        .filter(|n| !changed.contains(&n.name.as_str()))
    {
        let l = t.loss(t0, t1, |p| p.network == net.name);
        if !changed.is_empty() {
            summary.check(
                &format!(
                    "untouched network {} lost no probe during the rollout",
                    net.name
                ),
                l.lost == 0 && l.sent > 0,
                format!("{l} lost/sent"),
            );
        }
    }
    if !first_wave.is_empty() {
        let l = t.loss(t0, t1, |p| {
            !first_wave.contains(&p.from.as_str()) && !first_wave.contains(&p.to.as_str())
        });
        summary.check(
            "tenant loss confined to the first wave's nodes",
            l.lost == 0 && l.sent > 0,
            format!(
                "pairs between other nodes: {l} lost/sent; first wave {}",
                first_wave.join(", ")
            ),
        );
    }
    summary.check(
        "full tenant reachability at the end",
        missing.is_empty() && lab.traffic.running() > 0,
        reachability_detail(lab, &missing),
    );
}

/// Applies inputs and waits for the resulting revision to succeed; returns its name.
pub(crate) async fn rollout(
    m: &mut Monitor,
    lab: &Lab,
    objects: &[kube::api::DynamicObject],
    what: &str,
) -> Result<String> {
    m.say(&format!("applying {what}"));
    lab.apply(objects).await?;
    let target = settle_newest(m, lab).await?;
    m.say(&format!("revision {target} succeeded"));
    Ok(target)
}

/// Waits until a revision other than `previous` is the newest; returns its name.
pub(crate) async fn new_revision(m: &mut Monitor, lab: &Lab, previous: &str) -> Result<String> {
    m.until(lab, "a new revision", settle(lab), |o| {
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
async fn settle_newest(m: &mut Monitor, lab: &Lab) -> Result<String> {
    m.until(lab, "the newest revision to succeed", settle(lab), |o| {
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
