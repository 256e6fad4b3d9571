//! Seeded healthy fleets whose rollouts must take the ideal number of waves, or keep every slot
//! busy with a window.

use netrollout_rollout::{Action, NodePhase, RolloutStrategy, Settings, UpdateLimit};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::scenario::{pass, settled};
use crate::world::World;

/// A healthy fleet (no faults; agents apply in 1-4 steps, all the same or each its own) rolls a
/// new revision out, once with each strategy. Waves: the number of passes that dispatched it
/// must be exactly ceil(N / limit), plus at most one per join or leave. Window: no slot is idle
/// while a node could move (checked after every pass), and without churn the rollout finishes
/// no later than with waves.
pub fn waves(seed: u64) -> (Result<(), String>, Vec<String>) {
    let (waves, mut log) = rollout(seed, RolloutStrategy::Waves);
    let waves = match waves {
        Ok(w) => w,
        Err(e) => return (Err(e), log),
    };
    let (window, more) = rollout(seed, RolloutStrategy::Window);
    log.extend(more);
    let result = window.and_then(|window| {
        if waves.churn || window.steps <= waves.steps {
            Ok(())
        } else {
            Err(format!(
                "window: the rollout took {} steps, waves only {}",
                window.steps, waves.steps
            ))
        }
    });
    (result, log)
}

/// How a healthy rollout went.
struct Outcome {
    churn: bool,
    /// Steps until every node ran the target.
    steps: u64,
}

fn rollout(seed: u64, strategy: RolloutStrategy) -> (Result<Outcome, String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let n0 = rng.range(1, 12);
    let churn = rng.chance(50);
    let limit = if churn || rng.chance(50) {
        UpdateLimit::Count(rng.range(1, 4) as u32)
    } else {
        UpdateLimit::Percent(rng.range(5, 100) as u32)
    };
    let settings = Settings {
        update_limit: limit,
        strategy,
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    w.log.push(format!("== {strategy}"));
    let zones = rng.range(1, 3);
    let varied = rng.chance(50);
    for _ in 0..n0 {
        let z = rng.below(zones);
        let canary = rng.chance(20);
        let apply_steps = if varied { rng.range(1, 4) as u32 } else { 1 };
        w.add_node(z, canary, Agent::new(Behavior::Healthy, apply_steps));
    }
    if rng.chance(50) {
        let s = w.change_inputs(0);
        w.converge_on(&s);
    }
    let target = w.change_inputs(1);
    let ideal = (n0 as usize).div_ceil(limit.resolve(n0 as usize));
    let (mut joins, mut leaves) = (0, 0);
    let mut checker = Checker::default();
    let mut waves = 0;
    let result = (|| {
        for step in 0..400 {
            if churn && step < 8 && rng.chance(15) {
                if rng.chance(50) {
                    joins += 1;
                    w.add_node(rng.below(zones), false, Agent::new(Behavior::Healthy, 1));
                } else if w.state.nodes.len() > 1 {
                    leaves += 1;
                    let name = w.state.nodes[rng.below(w.state.nodes.len() as u64) as usize]
                        .name
                        .clone();
                    w.log.push(format!("gone {name}"));
                    w.remove_node(&name);
                }
            }
            w.step_agents();
            let p = pass(&mut w, &mut checker)?;
            let dispatched = p
                .actions
                .iter()
                .any(|a| matches!(a, Action::Dispatch { revision, .. } if *revision == target));
            waves += usize::from(dispatched);
            let done = w.state.nodes.iter().all(|n| {
                n.spec_revision.as_ref() == Some(&target)
                    && n.current_status()
                        .is_some_and(|s| s.phase == NodePhase::Provisioned)
            });
            if done && settled(&w, &p) {
                w.log.push(format!(
                    "{strategy}: {waves} dispatching passes in {step} steps, ideal {ideal} waves, joins {joins}, leaves {leaves}"
                ));
                let allowed = ideal + joins + leaves;
                let ok = match (strategy, joins + leaves) {
                    (RolloutStrategy::Window, _) => true,
                    (RolloutStrategy::Waves, 0) => waves == ideal,
                    (RolloutStrategy::Waves, _) => waves <= allowed,
                };
                return if ok {
                    Ok(Outcome { churn, steps: step })
                } else {
                    Err(format!(
                        "invariant 8: {waves} waves for {n0} nodes with limit {limit} (ideal {ideal}, joins {joins}, leaves {leaves})"
                    ))
                };
            }
            w.advance();
        }
        Err(format!(
            "invariant 8: the healthy {strategy} rollout did not finish in 400 steps"
        ))
    })();
    (result, w.log)
}
