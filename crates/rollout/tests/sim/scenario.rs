//! Seeded scenarios: random chaos with invariants after every step and convergence once healed
//! (small fleets, and 10,000-node fleets), for both rollout strategies (the healthy fleets'
//! waves are in `waves`).

use std::time::Duration;

use netrollout_rollout::{
    HistoryLimits, Mode, NodePhase, Plan, RolloutStrategy, Settings, State, UpdateLimit,
};

use netrollout_rollout::guard::Health;

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
pub fn pass(w: &mut World, checker: &mut Checker) -> Result<Plan, String> {
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

/// Flips the health of one node picked at random (healthy to regressed with `tenant-ping`
/// failing, regressed to healthy) and logs `  NAME WHAT=true|false` (regressed or not).
pub fn flip_random_health(w: &mut World, what: &str) {
    let i = w.rng.below(w.state.nodes.len() as u64) as usize;
    let name = w.state.nodes[i].name.clone();
    let now = w.now;
    let Some(n) = w.node_mut(&name) else { return };
    n.health = match n.health {
        Health::Regressed { .. } => Health::Healthy,
        _ => Health::Regressed {
            since: now,
            checks: vec!["tenant-ping".into()],
        },
    };
    let line = format!("  {name} {what}={}", n.health.regressed_since().is_some());
    w.log.push(line);
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
