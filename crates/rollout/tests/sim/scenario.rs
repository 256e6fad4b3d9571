//! Seeded scenarios: random chaos with invariants after every step and convergence once healed
//! (small fleets, and 10,000-node fleets), for both rollout strategies; and healthy fleets whose
//! rollouts must take the ideal number of waves, or keep every slot busy with a window.

use std::time::Duration;

use netrollout_rollout::{
    Action, HistoryLimits, Mode, NodePhase, Plan, RolloutStrategy, Settings, State, UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::slots::{check_awaited, check_window};
use crate::world::{STEP_MS, World, rev_name, write_count};

fn steps(n: u64) -> Duration {
    Duration::from_millis(n * STEP_MS)
}

fn random_behavior(w: &mut World) -> Behavior {
    match w.rng.below(100) {
        0..=64 => Behavior::Healthy,
        65..=71 => Behavior::Hang,
        72..=78 => Behavior::HangApplying,
        79..=89 => Behavior::Crashy,
        _ => Behavior::FailProbe,
    }
}

/// The size of a chaos scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// 1-8 nodes (at most 10 with joins), one node event per step, any agent misbehaves.
    Small,
    /// 10,000 nodes, twenty node events per step, about 1% of the agents misbehave.
    Large,
}

impl Size {
    fn misbehaving_pct(self) -> u64 {
        match self {
            Size::Small => 100,
            Size::Large => 1,
        }
    }
}

fn random_node(w: &mut World, zones: u64, size: Size) {
    let zone = w.rng.below(zones);
    let canary = w.rng.chance(15);
    let pct = size.misbehaving_pct();
    let behavior = if pct >= 100 || w.rng.chance(pct) {
        random_behavior(w)
    } else {
        Behavior::Healthy
    };
    let steps = w.rng.range(1, 3) as u32;
    let name = w.add_node(zone, canary, Agent::new(behavior, steps));
    if w.settings.domains.is_some() {
        crate::domains::place_in_a_rack(w, &name);
    }
}

/// Plan, execute with faults, check every invariant (after a pass that was written in full:
/// its awaited nodes are the ones in flight, and with a window no slot is idle). Returns the
/// plan.
fn pass(w: &mut World, checker: &mut Checker) -> Result<Plan, String> {
    pass_checking(w, checker, |w, checker, before, p| {
        if let (Mode::Halted, Some(t)) = (&p.summary.mode, &p.summary.target) {
            w.log.push(format!(
                "  rollback halted: more than max_failures nodes failed known-good revision {t}"
            ));
        }
        checker.check_pass(before, p, &w.state, w.now, &w.settings)?;
        if let Some(line) = crate::domains::check(before, p, &w.state, w.now, &w.settings)? {
            w.log.push(line);
        }
        Ok(())
    })
}

/// One pass: the blast radius and the incrementally kept fleet checked before it, the
/// configurator's pass executed with
/// faults, then `check` (given the state before the pass and the plan: the pass's own
/// invariants), then, if the pass was written in full, the awaited nodes (and with a window,
/// the slots). Returns the plan.
pub fn pass_checking(
    w: &mut World,
    checker: &mut Checker,
    check: impl FnOnce(&mut World, &mut Checker, &State, &Plan) -> Result<(), String>,
) -> Result<Plan, String> {
    checker.check_blast_radius(&w.state, w.now, &w.settings)?;
    // The fleet the pass plans from, kept node by node, equals one recomputed from scratch.
    w.check_fleet()?;
    let before = w.state.clone();
    w.log.push(format!("t={} pass", w.step));
    let (p, done) = w.configurator_pass();
    check(w, checker, &before, &p)?;
    let complete = done == p.actions.iter().map(write_count).sum::<usize>();
    if complete {
        check_awaited(&p, &w.state, w.now, &w.settings)?;
    }
    if w.settings.strategy == RolloutStrategy::Window && complete {
        check_window(&p, &w.state, w.now, &w.settings)?;
    }
    Ok(p)
}

/// Whether the fleet has settled where the planner wants it.
pub fn settled(w: &World, p: &Plan) -> bool {
    if !p.actions.is_empty() || w.agents.values().any(Agent::busy) {
        return false;
    }
    match (&p.summary.mode, &p.summary.target) {
        (Mode::Halted | Mode::Idle, _) => true,
        (_, Some(goal)) => w
            .state
            .nodes
            .iter()
            .filter(|n| !n.deleting && n.ready)
            .all(|n| {
                n.spec_revision.as_ref() == Some(goal)
                    && n.current_status()
                        .is_some_and(|s| s.phase != NodePhase::Provisioning)
            }),
        _ => false,
    }
}

/// A random scenario: faults and churn for a while, then everything heals and the fleet must
/// converge on the planner's target (or stay halted) within a bounded time.
pub fn chaos(seed: u64) -> (Result<(), String>, Vec<String>) {
    chaos_with(seed, RolloutStrategy::Waves, Size::Small, false)
}

/// [`chaos`] with the window strategy.
pub fn chaos_window(seed: u64) -> (Result<(), String>, Vec<String>) {
    chaos_with(seed, RolloutStrategy::Window, Size::Small, false)
}

/// [`chaos`] at 10,000 nodes; even seeds use waves, odd seeds a window.
pub fn chaos_large(seed: u64) -> (Result<(), String>, Vec<String>) {
    let strategy = RolloutStrategy::ALL[(seed % 2) as usize];
    chaos_with(seed, strategy, Size::Large, false)
}

/// A chaos scenario; `domains`: with random failure domains ([`crate::domains`]).
pub fn chaos_with(
    seed: u64,
    strategy: RolloutStrategy,
    size: Size,
    domains: bool,
) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let pickup = rng.range(2, 6);
    let apply = rng.range(1, 4);
    let (update_limit, max_failures) = match size {
        Size::Small => (
            if rng.chance(60) {
                UpdateLimit::Count(rng.range(1, 3) as u32)
            } else {
                UpdateLimit::Percent(rng.range(10, 100) as u32)
            },
            rng.range(0, 2) as usize,
        ),
        Size::Large => (
            if rng.chance(50) {
                UpdateLimit::Count(rng.range(500, 2_000) as u32)
            } else {
                UpdateLimit::Percent(rng.range(5, 20) as u32)
            },
            rng.range(0, 150) as usize,
        ),
    };
    let settings = Settings {
        update_limit,
        strategy,
        apply_timeout: steps(apply),
        pickup_timeout: steps(pickup),
        max_failures,
        history: HistoryLimits {
            succeeded: rng.range(1, 10) as usize,
            failed: rng.range(1, 20) as usize,
        },
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    if domains {
        w.settings.domains = Some(crate::domains::random_policy(&mut rng));
    }
    w.log.push(format!("seed {seed}: {:?}", w.settings));
    let r = run_chaos(&mut w, pickup + apply, size);
    (r, w.log)
}

fn run_chaos(w: &mut World, timeouts: u64, size: Size) -> Result<(), String> {
    let mut checker = Checker::default();
    let zones = w.rng.range(1, 3);
    let (n0, node_events) = match size {
        Size::Small => (w.rng.range(1, 8), 1),
        Size::Large => (10_000, 20),
    };
    let max_nodes = match size {
        Size::Small => 10,
        Size::Large => 10_050,
    };
    for _ in 0..n0 {
        random_node(w, zones, size);
    }
    if w.rng.chance(30) {
        let i = w.rng.below(w.state.nodes.len() as u64) as usize;
        w.state.nodes[i].runs_configurator = true;
        let name = w.state.nodes[i].name.clone();
        w.touch(&name);
    }
    for c in 1..=5 {
        if w.rng.chance(30) {
            w.bad.insert(rev_name(c));
        }
    }
    if size == Size::Large || w.rng.chance(60) {
        let s = w.change_inputs(0);
        w.converge_on(&s);
    }
    w.write_fail_pct = w.rng.range(0, 5);
    w.crash_pct = w.rng.range(0, 5);
    if size == Size::Large {
        // A new revision from the start; per-write failures would cut every large dispatch
        // short, so large fleets see crashes mid-plan instead.
        w.change_inputs(1);
        w.write_fail_pct = 0;
    }
    for _ in 0..w.rng.range(15, 40) {
        events(w, zones, size, node_events, max_nodes);
        w.step_agents();
        pass(w, &mut checker)?;
        w.advance();
    }
    // Heal: no more faults or churn; every agent behaves; every node is Ready.
    w.log.push("== heal".into());
    w.write_fail_pct = 0;
    w.crash_pct = 0;
    let leaving: Vec<String> = w
        .state
        .nodes
        .iter()
        .filter(|n| n.deleting)
        .map(|n| n.name.clone())
        .collect();
    for n in leaving {
        w.remove_node(&n);
    }
    for n in &mut w.state.nodes {
        n.ready = true;
    }
    w.touch_all();
    for a in w.agents.values_mut() {
        a.heal();
    }
    w.settings.paused = false;
    for r in &mut w.state.revisions {
        r.paused = false;
    }
    let n = w.state.nodes.len() as u64;
    // Failure domains may leave slots of the limit idle: a node per step at worst.
    let limit = match w.settings.domains {
        Some(_) => 1,
        None => w.settings.update_limit.resolve(n as usize) as u64,
    };
    let cap = 20 + (n / limit + 2) * (timeouts + 6) + 2 * timeouts;
    for _ in 0..cap {
        w.step_agents();
        let p = pass(w, &mut checker)?;
        if settled(w, &p) {
            return Ok(());
        }
        w.advance();
    }
    Err(format!(
        "liveness: the healed fleet did not settle within {cap} steps"
    ))
}

fn events(w: &mut World, zones: u64, size: Size, node_events: usize, max_nodes: usize) {
    if w.rng.chance(8) {
        let c = w.rng.below(6);
        w.change_inputs(c);
    }
    if w.rng.chance(2) {
        w.settings.paused = !w.settings.paused;
        w.log.push(format!("global pause={}", w.settings.paused));
    }
    if w.rng.chance(3) && !w.state.revisions.is_empty() {
        let i = w.rng.below(w.state.revisions.len() as u64) as usize;
        let r = &mut w.state.revisions[i];
        r.paused = !r.paused;
        w.log
            .push(format!("revision {} paused={}", r.name, r.paused));
    }
    if w.rng.chance(4) && w.state.nodes.len() < max_nodes {
        random_node(w, zones, size);
    }
    for _ in 0..node_events {
        node_event(w);
    }
}

/// Something happens to one random node: it goes, starts leaving, flips Ready, or its agent
/// loses the API server.
fn node_event(w: &mut World) {
    if !w.state.nodes.is_empty() {
        let i = w.rng.below(w.state.nodes.len() as u64) as usize;
        let name = w.state.nodes[i].name.clone();
        // Whatever happens to it below changes the node (a watch event in the configurator).
        w.touch(&name);
        if w.state.nodes[i].deleting && w.rng.chance(50) {
            w.log.push(format!("gone {name}"));
            w.remove_node(&name);
        } else if w.rng.chance(3) {
            w.log.push(format!("leaving {name}"));
            w.state.nodes[i].deleting = true;
        } else if w.rng.chance(4) {
            let n = &mut w.state.nodes[i];
            n.ready = !n.ready;
            w.log.push(format!("{name} ready={}", n.ready));
        } else if w.rng.chance(3) {
            let down = w.rng.range(1, 6) as u32;
            w.log.push(format!(
                "{name}: agent loses the API server for {down} steps"
            ));
            if let Some(a) = w.agents.get_mut(&name) {
                a.api_down = down;
            }
        }
    }
}

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
