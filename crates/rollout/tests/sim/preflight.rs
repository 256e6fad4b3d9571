//! Pre-flight in the simulator (docs/contract.md, "Pre-flight"): revisions with odd content
//! need `vrf`; some nodes lack it and load it at random times (or join lacking it). Before each
//! pass the simulated configurator fills every revision's `unmet` from the nodes' capabilities,
//! as the real one does from their reports.
//!
//! Invariants, after every pass (computed from the state the planner saw):
//! - P1: no node is ever dispatched a revision that lists it as lacking.
//! - P2: a revision rolling out (Pending or Progressing) is dispatched (Rollout or Join) only
//!   when no managed node it still has to reach lacks what it needs: nothing is half rolled
//!   out. (A Succeeded revision is not held: a node joining without vrf just waits.)
//! - P3: once every node has what the newest revision needs, the fleet converges on it.

use std::collections::BTreeSet;

use netrollout_rollout::{
    Action, DispatchKind, Plan, RevisionPhase, RolloutStrategy, Settings, State, Unmet, UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::scenario::{pass_checking, settled};
use crate::world::World;

/// Whether the revision named `name` needs vrf (odd content).
fn needs_vrf(name: &str) -> bool {
    name.strip_prefix("ncr-")
        .and_then(|c| c.parse::<u64>().ok())
        .is_some_and(|c| c % 2 == 1)
}

/// The simulated configurator's pre-flight: every revision's unmet nodes.
fn fill_unmet(w: &mut World, lacking: &BTreeSet<String>) {
    let nodes: Vec<String> = w.state.nodes.iter().map(|n| n.name.clone()).collect();
    for r in &mut w.state.revisions {
        r.unmet = if needs_vrf(&r.name) {
            nodes
                .iter()
                .filter(|n| lacking.contains(*n))
                .map(|n| Unmet {
                    node: n.clone(),
                    missing: vec!["vrf".into()],
                })
                .collect()
        } else {
            Vec::new()
        };
    }
}

fn check_preflight(before: &State, p: &Plan) -> Result<Option<String>, String> {
    let mut note = None;
    for a in &p.actions {
        let Action::Dispatch {
            revision,
            kind,
            nodes,
            ..
        } = a
        else {
            continue;
        };
        let Some(r) = before.revisions.iter().find(|r| &r.name == revision) else {
            continue;
        };
        for n in nodes {
            if r.unmet.iter().any(|u| u.node == n.node) {
                return Err(format!(
                    "P1: {} was dispatched {revision}, which lists it as lacking {:?}",
                    n.node, r.unmet
                ));
            }
        }
        let rolling_out = matches!(r.phase, RevisionPhase::Pending | RevisionPhase::Progressing);
        if *kind != DispatchKind::Rollback && rolling_out {
            let held: Vec<&str> = r
                .unmet
                .iter()
                .filter(|u| {
                    before.nodes.iter().any(|n| {
                        n.name == u.node
                            && !n.deleting
                            && n.spec_revision.as_deref() != Some(revision)
                    })
                })
                .map(|u| u.node.as_str())
                .collect();
            if !held.is_empty() {
                return Err(format!(
                    "P2: {revision} was rolled out ({kind:?}) while {held:?} lack what it needs"
                ));
            }
        }
    }
    if p.summary.held {
        note = Some(format!(
            "  held by pre-flight: {:?} lacks vrf",
            p.summary.unmet.iter().map(|u| &u.node).collect::<Vec<_>>()
        ));
    }
    Ok(note)
}

pub fn scenario(seed: u64) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let settings = Settings {
        update_limit: UpdateLimit::Count(rng.range(1, 3) as u32),
        strategy: RolloutStrategy::ALL[(seed % 2) as usize],
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    let r = run(&mut w);
    (r, w.log)
}

fn run(w: &mut World) -> Result<(), String> {
    let mut checker = Checker::default();
    let mut lacking = BTreeSet::new();
    for _ in 0..w.rng.range(2, 8) {
        let zone = w.rng.range(0, 2);
        let n = w.add_node(zone, false, Agent::new(Behavior::Healthy, 1));
        if w.rng.chance(40) {
            w.log.push(format!("  {n} lacks vrf"));
            lacking.insert(n);
        }
    }
    let first = w.add_revision(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(20, 40) {
        if w.rng.chance(15) {
            content += 1;
            w.add_revision(content);
        }
        if w.rng.chance(10) && w.state.nodes.len() < 10 {
            let n = w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
            if w.rng.chance(50) {
                w.log.push(format!("  {n} joins lacking vrf"));
                lacking.insert(n);
            }
        }
        if !lacking.is_empty() && w.rng.chance(8) {
            let i = w.rng.below(lacking.len() as u64) as usize;
            let n = lacking.iter().nth(i).cloned().unwrap();
            w.log.push(format!("  {n} module loaded: vrf"));
            lacking.remove(&n);
        }
        step(w, &mut checker, &lacking)?;
    }
    w.log.push("== heal: every node loads vrf".into());
    lacking.clear();
    for _ in 0..200 {
        let p = step(w, &mut checker, &lacking)?;
        if settled(w, &p) {
            let newest = w.state.revisions.iter().max_by_key(|r| r.sequence).unwrap();
            let on_newest = w
                .state
                .nodes
                .iter()
                .all(|n| n.spec_revision.as_deref() == Some(&newest.name));
            if newest.phase != RevisionPhase::Succeeded || !on_newest {
                return Err(format!(
                    "P3: settled, but not on the newest revision {} ({:?})",
                    newest.name, newest.phase
                ));
            }
            w.log.push(format!("-> converged on {}", newest.name));
            return Ok(());
        }
    }
    Err("P3: no convergence once every node had vrf".into())
}

fn step(w: &mut World, checker: &mut Checker, lacking: &BTreeSet<String>) -> Result<Plan, String> {
    w.step_agents();
    fill_unmet(w, lacking);
    let p = pass_checking(w, checker, |w, checker, before, p| {
        if let Some(line) = check_preflight(before, p)? {
            w.log.push(line);
        }
        checker.check_pass(before, p, &w.state, w.now, &w.settings)
    })?;
    w.advance();
    Ok(p)
}
