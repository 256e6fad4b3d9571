//! Bake time in the simulator (docs/contract.md, "Bake time"): fleets rolling out with
//! `--bake-time` of one to four steps while nodes' health regresses and recovers at random
//! (health is what a node's agent reports after it committed).
//!
//! Invariants, after every pass (from the API state, independently of the planner):
//! - B1: a baked wave is never released early: nodes in flight plus nodes baking (committed
//!   less than the bake time ago, not regressed since) never exceed the update limit (the
//!   chaos checks count baking nodes as in flight, [`baking`]).
//! - B2: a revision is never Succeeded while a node of it bakes.
//! - B3: with `--max-failures=0`, a revision is never dispatched while a node regressed during
//!   its bake of it (that is a failure of the revision).
//! - Liveness: once health recovers, the fleet converges on the newest revision.

use std::time::Duration;

use netrollout_rollout::guard::{GuardMode, Health};
use netrollout_rollout::{
    Action, Node, NodePhase, Plan, RevisionPhase, RolloutStrategy, Settings, State, Timestamp,
    UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::scenario::{flip_random_health, pass_checking, settled};
use crate::world::{STEP_MS, World};

/// When `n` settled on its spec revision, if it did and the configurator recorded it.
fn settled_at(n: &Node) -> Option<Timestamp> {
    let st = n.current_status()?;
    (st.phase == NodePhase::Provisioned).then_some(())?;
    n.current_dispatch()?.settled_at
}

/// Whether `n` regressed during its bake (a failure of its spec revision).
pub fn regressed_in_bake(n: &Node, s: &Settings) -> bool {
    let (Some(at), Some(since)) = (settled_at(n), n.health.regressed_since()) else {
        return false;
    };
    n.ready && since > at && since < at.saturating_add(s.bake_time)
}

/// Committed less than the bake time ago, and not regressed since: holds its slot.
pub fn baking(n: &Node, now: Timestamp, s: &Settings) -> bool {
    !s.bake_time.is_zero()
        && !n.deleting
        && settled_at(n).is_some_and(|at| now < at.saturating_add(s.bake_time))
        && !regressed_in_bake(n, s)
}

fn check_bake(before: &State, p: &Plan, now: Timestamp, s: &Settings) -> Result<(), String> {
    for a in &p.actions {
        match a {
            Action::SetRevisionPhase {
                revision,
                phase: RevisionPhase::Succeeded,
                ..
            } => {
                let hot = (before.nodes.iter())
                    .find(|n| n.spec_revision.as_ref() == Some(revision) && baking(n, now, s));
                if let Some(n) = hot {
                    return Err(format!(
                        "B2: {revision} Succeeded while {} bakes: {n:?}",
                        n.name
                    ));
                }
            }
            Action::Dispatch { revision, .. } if s.max_failures == 0 => {
                let bad = (before.nodes.iter()).find(|n| {
                    n.spec_revision.as_ref() == Some(revision) && regressed_in_bake(n, s)
                });
                if let Some(n) = bad {
                    return Err(format!(
                        "B3: dispatched {revision} although {} regressed during its bake",
                        n.name
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

pub fn scenario(seed: u64) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let settings = Settings {
        update_limit: UpdateLimit::Count(rng.range(1, 3) as u32),
        strategy: RolloutStrategy::ALL[(seed % 2) as usize],
        bake_time: Duration::from_millis(rng.range(1, 4) * STEP_MS),
        max_failures: rng.range(0, 1) as usize,
        guard: GuardMode::Off,
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    w.log.push(format!("seed {seed}: {:?}", w.settings));
    let r = run(&mut w);
    (r, w.log)
}

fn run(w: &mut World) -> Result<(), String> {
    let mut checker = Checker::default();
    for _ in 0..w.rng.range(2, 8) {
        w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
    }
    let first = w.change_inputs(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(20, 40) {
        if w.rng.chance(12) {
            content += 1;
            w.change_inputs(content);
        }
        if w.rng.chance(10) {
            flip_random_health(w, "health regressed");
        }
        step(w, &mut checker)?;
    }
    w.log.push("== heal: every node healthy".into());
    for n in &mut w.state.nodes {
        n.health = Health::Healthy;
    }
    w.touch_all();
    let newest = w.change_inputs(content + 1);
    for _ in 0..300 {
        let p = step(w, &mut checker)?;
        if settled(w, &p) && p.summary.bake.is_none() {
            let on = w
                .state
                .nodes
                .iter()
                .all(|n| n.spec_revision.as_ref() == Some(&newest));
            let phase = w
                .state
                .revisions
                .iter()
                .find(|r| r.name == newest)
                .map(|r| r.phase);
            if phase == Some(RevisionPhase::Succeeded) && on {
                w.log.push(format!("-> converged on {newest}"));
                return Ok(());
            }
        }
    }
    Err("liveness: the healed fleet did not converge on the newest revision".into())
}

fn step(w: &mut World, checker: &mut Checker) -> Result<Plan, String> {
    w.step_agents();
    let p = pass_checking(w, checker, |w, checker, before, p| {
        if let Some(b) = &p.summary.bake {
            w.log
                .push(format!("  {} node(s) of {} baking", b.nodes, b.revision));
        }
        checker.check_pass(before, p, &w.state, w.now, &w.settings)?;
        check_bake(before, p, w.now, &w.settings)
    })?;
    w.advance();
    Ok(p)
}
