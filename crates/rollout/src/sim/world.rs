//! The simulated cluster: API objects (as the planner's `State`), agents, virtual time, and a
//! configurator that plans and executes actions with injected faults (failed writes, crashes).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::{
    Action, Fleet, Node, Plan, Revision, RevisionPhase, Settings, State, Timestamp, plan_with,
};

use super::agent::{Agent, Behavior};
use super::rng::Rng;

/// Virtual time per step (unless a benchmark sets [`World::step_ms`]).
pub const STEP_MS: u64 = 30_000;

/// One simulated cluster.
#[derive(Debug)]
pub struct World {
    /// What the API server holds, already in the planner's types.
    pub state: State,
    pub agents: BTreeMap<String, Agent>,
    pub now: Timestamp,
    pub settings: Settings,
    /// Revision names whose content fails every probe.
    pub bad: HashSet<String>,
    pub rng: Rng,
    /// Percent chance that one API write of the configurator fails (the rest of the plan is
    /// then abandoned, as the contract says).
    pub write_fail_pct: u64,
    /// Percent chance that the configurator crashes somewhere in a pass.
    pub crash_pct: u64,
    /// Trace, printed when a scenario fails.
    pub log: Vec<String>,
    /// Steps taken so far.
    pub step: u64,
    /// Virtual time per step ([`STEP_MS`]).
    pub step_ms: u64,
    /// The planner's fleet, kept up to date node by node from the nodes the world changed (as
    /// the configurator keeps its own from watch events); the passes plan from it.
    fleet: Fleet,
    /// Nodes changed since the fleet was last brought up to date.
    touched: BTreeSet<String>,
    next_seq: u64,
    next_node: u32,
}

/// The number in a simulated node's name (`node-042` is 42).
fn node_number(name: &str) -> Option<u32> {
    name.strip_prefix("node-")?.parse().ok()
}

/// The revision name for a content id (names derive from content, as in the real system).
pub fn rev_name(content: u64) -> String {
    format!("ncr-{content}")
}

impl World {
    pub fn new(seed: u64, settings: Settings) -> Self {
        Self {
            state: State::default(),
            agents: BTreeMap::new(),
            now: Timestamp::from_millis(1_700_000_000_000),
            settings,
            bad: HashSet::new(),
            rng: Rng::new(seed),
            write_fail_pct: 0,
            crash_pct: 0,
            log: Vec::new(),
            step: 0,
            step_ms: STEP_MS,
            fleet: Fleet::default(),
            touched: BTreeSet::new(),
            next_seq: 1,
            next_node: 0,
        }
    }

    /// Add a Ready node with the given agent; returns its name.
    pub fn add_node(&mut self, zone: u64, canary: bool, agent: Agent) -> String {
        let name = format!("node-{:03}", self.next_node);
        self.next_node += 1;
        let mut n = Node::new(&name);
        n.zone = format!("zone-{zone}");
        n.canary = canary;
        self.log.push(format!(
            "join {name} zone-{zone} canary={canary} {:?}",
            agent.behavior
        ));
        self.state.nodes.push(n);
        self.agents.insert(name.clone(), agent);
        self.touch(&name);
        name
    }

    /// Node `name` changed (or is gone): the next pass brings the fleet up to date with it.
    /// Whoever changes `state.nodes` directly says so here (or with [`World::touch_all`]).
    pub fn touch(&mut self, name: &str) {
        self.touched.insert(name.to_owned());
    }

    /// Every node may have changed.
    pub fn touch_all(&mut self) {
        let names: Vec<String> = self.state.nodes.iter().map(|n| n.name.clone()).collect();
        self.touched.extend(names);
    }

    /// Brings the fleet up to date with the touched nodes only.
    fn update_fleet(&mut self) {
        for name in std::mem::take(&mut self.touched) {
            match self.find(&name).map(|i| self.state.nodes[i].clone()) {
                Some(n) => self.fleet.upsert(n),
                None => {
                    self.fleet.remove(&name);
                }
            }
        }
    }

    /// The invariant of the incremental fleet: brought up to date with the touched nodes, it
    /// equals the fleet indexed from scratch from `state.nodes` (an update missed anywhere
    /// shows here), and a pass planned from it now equals one planned from the recomputed
    /// fleet (the same actions in the same order: dispatch order included). `Err` names the
    /// first node that differs, or says the index or the plan does.
    pub fn check_fleet(&mut self) -> Result<(), String> {
        self.update_fleet();
        let fresh = Fleet::from_nodes(self.state.nodes.iter().cloned());
        if fresh == self.fleet {
            let kept = plan_with(&self.state, &self.fleet, self.now, &self.settings);
            let recomputed = plan_with(&self.state, &fresh, self.now, &self.settings);
            if kept == recomputed {
                return Ok(());
            }
            return Err(format!(
                "a pass planned from the incrementally kept fleet differs from one planned from a recomputed fleet: kept {kept:?}, recomputed {recomputed:?}"
            ));
        }
        let kept: Vec<&Node> = self.fleet.nodes().collect();
        let rebuilt: Vec<&Node> = fresh.nodes().collect();
        let differs = kept
            .iter()
            .zip(&rebuilt)
            .find(|(a, b)| a != b)
            .map(|(a, b)| format!("node {}: kept {a:?}, recomputed {b:?}", a.name));
        Err(match differs {
            Some(d) => format!("the incrementally kept fleet differs from a recomputed one: {d}"),
            None if kept.len() != rebuilt.len() => format!(
                "the incrementally kept fleet has {} nodes, a recomputed one {}",
                kept.len(),
                rebuilt.len()
            ),
            None => format!(
                "the incrementally kept fleet's index differs from a recomputed one: kept {:?}, recomputed {:?}",
                self.fleet, fresh
            ),
        })
    }

    /// A configurator (re)started: its fleet is indexed from scratch from what the API holds,
    /// as a new leader's first pass does after its watches listed everything.
    fn restart_fleet(&mut self) {
        self.touched.clear();
        self.fleet = Fleet::from_nodes(self.state.nodes.iter().cloned());
    }

    /// The position of node `name` in `state.nodes`.
    fn find(&self, name: &str) -> Option<usize> {
        let by_number = node_number(name).and_then(|id| {
            self.state
                .nodes
                .binary_search_by_key(&id, |n| node_number(&n.name).unwrap_or(u32::MAX))
                .ok()
        });
        by_number
            .filter(|&i| self.state.nodes[i].name == name)
            .or_else(|| self.state.nodes.iter().position(|n| n.name == name))
    }

    /// Nodes are only appended (numbered in creation order) and removed in place, so the list
    /// stays sorted by number: a binary search finds a node in a 10,000-node fleet.
    /// The node is touched ([`World::touch`]).
    pub fn node_mut(&mut self, name: &str) -> Option<&mut Node> {
        let i = self.find(name)?;
        self.touch(name);
        self.state.nodes.get_mut(i)
    }

    /// Remove a node and its agent entirely (its deletion completed).
    pub fn remove_node(&mut self, name: &str) {
        self.state.nodes.retain(|n| n.name != name);
        self.agents.remove(name);
        self.touch(name);
    }

    /// The configurator renders a snapshot with this content (docs/contract.md, "Revisions" rule 5):
    /// same content reuses the object, raising its sequence unless it is Failed.
    pub fn add_revision(&mut self, content: u64) -> String {
        let name = rev_name(content);
        let seq = self.next_seq;
        match self.state.revisions.iter_mut().find(|r| r.name == name) {
            Some(r) if r.phase == RevisionPhase::Failed => {
                self.log.push(format!(
                    "revision {name}: identical to failed revision, not rolled out"
                ));
            }
            Some(r) => {
                r.sequence = seq;
                self.next_seq += 1;
                self.log.push(format!(
                    "revision {name}: existing, sequence raised to {seq}"
                ));
            }
            None => {
                self.state
                    .revisions
                    .push(Revision::new(&name, seq, format!("h{content}")));
                self.next_seq += 1;
                self.log
                    .push(format!("revision {name}: created, sequence {seq}"));
            }
        }
        name
    }

    /// Mark `rev` Succeeded and put every node on it, converged (the starting point of most
    /// scenarios: a healthy fleet on a known-good revision).
    pub fn converge_on(&mut self, rev: &str) {
        for r in &mut self.state.revisions {
            if r.name == rev {
                r.phase = RevisionPhase::Succeeded;
            }
        }
        for n in &mut self.state.nodes {
            n.spec_revision = Some(rev.to_owned());
            n.status = Some(crate::NodeStatus {
                observed_revision: rev.to_owned(),
                phase: crate::NodePhase::Provisioned,
                started_at: None,
                finished_at: None,
                reason: None,
                message: None,
            });
            let steps = self.agents.get(&n.name).map_or(1, |a| a.apply_steps);
            let behavior = self
                .agents
                .get(&n.name)
                .map_or(Behavior::Healthy, |a| a.behavior);
            let mut a = Agent::converged(rev, steps);
            a.behavior = behavior;
            self.agents.insert(n.name.clone(), a);
        }
        self.touch_all();
    }

    /// Every agent of a node that is not being deleted takes one step.
    pub fn step_agents(&mut self) {
        let now = self.now;
        for n in &mut self.state.nodes {
            if n.deleting {
                continue;
            }
            if let Some(a) = self.agents.get_mut(&n.name) {
                let before = n.clone();
                a.step(n, now, &self.bad, &mut self.rng);
                if *n != before {
                    self.touched.insert(n.name.clone());
                }
            }
        }
    }

    /// One configurator pass: plan from API-visible state, then execute in order, stopping at
    /// the first failed write or a crash. Returns the plan and how many writes were executed.
    pub fn configurator_pass(&mut self) -> (Plan, usize) {
        self.update_fleet();
        let p = plan_with(&self.state, &self.fleet, self.now, &self.settings);
        let writes: usize = p.actions.iter().map(write_count).sum();
        let crash_at = self
            .rng
            .chance(self.crash_pct)
            .then(|| self.rng.below(writes as u64 + 1) as usize);
        let mut done = 0;
        let mut crashed = false;
        'actions: for a in &p.actions {
            self.log.push(format!("  {}", describe(a)));
            for w in 0..write_count(a) {
                if crash_at == Some(done) {
                    self.log
                        .push("  !! configurator crashed; a new leader plans from the API".into());
                    crashed = true;
                    break 'actions;
                }
                if self.rng.chance(self.write_fail_pct) {
                    self.log
                        .push("  !! API write failed; plan abandoned, retried next pass".into());
                    break 'actions;
                }
                self.apply_write(a, w);
                done += 1;
            }
        }
        if crashed {
            // The writes before the crash are in the API; the new leader's index starts from
            // there (the old one's incremental state is gone with it).
            self.restart_fleet();
        }
        (p, done)
    }

    fn apply_write(&mut self, a: &Action, w: usize) {
        match a {
            Action::SetRevisionPhase {
                revision, phase, ..
            } => {
                if let Some(r) = self
                    .state
                    .revisions
                    .iter_mut()
                    .find(|r| &r.name == revision)
                {
                    r.phase = *phase;
                }
            }
            Action::MarkUnresponsive {
                node, restore, at, ..
            } => {
                if let Some(n) = self.node_mut(node) {
                    n.spec_revision = restore.clone();
                    n.dispatch = None;
                    n.unresponsive_since = Some(*at);
                }
            }
            Action::RecordDispatch { node, record, .. } => {
                if let Some(n) = self.node_mut(node) {
                    n.dispatch = Some(record.clone());
                }
            }
            Action::Dispatch { nodes, .. } => {
                let d = &nodes[w];
                if let Some(n) = self.node_mut(&d.node) {
                    n.spec_revision = Some(d.record.revision.clone());
                    n.dispatch = Some(d.record.clone());
                    n.unresponsive_since = None;
                }
            }
            Action::Prune { revision, .. } => self.state.revisions.retain(|r| &r.name != revision),
        }
    }

    pub fn advance(&mut self) {
        self.now = Timestamp::from_millis(self.now.as_millis() + self.step_ms);
        self.step += 1;
    }
}

/// How many API writes an action takes (a dispatch writes one object per node).
pub fn write_count(a: &Action) -> usize {
    match a {
        Action::Dispatch { nodes, .. } => nodes.len(),
        _ => 1,
    }
}

fn describe(a: &Action) -> String {
    match a {
        Action::SetRevisionPhase {
            revision,
            phase,
            reason,
            ..
        } => {
            format!("phase {revision} -> {phase:?}: {reason}")
        }
        Action::MarkUnresponsive {
            node,
            revision,
            restore,
            ..
        } => {
            format!("unresponsive {node}: withdraw {revision}, back to {restore:?}")
        }
        Action::RecordDispatch { node, record, .. } => format!("record {node}: {record:?}"),
        Action::Dispatch {
            revision,
            kind,
            nodes,
            ..
        } => {
            let names: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
            format!(
                "dispatch {revision} ({kind:?}) to {}: {}",
                names.join(","),
                a.reason()
            )
        }
        Action::Prune { revision, .. } => format!("prune {revision}"),
    }
}
