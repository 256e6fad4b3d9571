//! The fleet guard in the simulator (docs/contract.md, "Fleet guard"): a world whose nodes'
//! health regresses, and the guard's invariants, computed from API-visible state independently
//! of the planner.
//!
//! Regressions are injected three ways: caused by the rollout (while a node runs a revision
//! that breaks others, untouched nodes regress; they recover once no node runs it), before any
//! wave (chronic: regressed from the start until the world heals), and random flaps.
//!
//! Invariants, after every pass:
//! - G1: a regression during a wave with the guard on never lets another node get the revision:
//!   the pass fails it, and with `--guard=halt` dispatches nothing at all.
//! - G2: every guard failure names only Ready nodes that regressed at or after the wave start,
//!   at least `guard_threshold` of them: nodes that regressed before the wave never trigger it.
//! - G3: a healthy fleet is never halted by the guard.
//! - G4: with `--guard=off` the guard never acts.
//! - G5: a revision the guard failed with `--guard=halt` holds the fleet: no dispatch while it
//!   is the newest revision.

use std::collections::{HashMap, HashSet};

use netrollout_rollout::guard::{GuardMode, Health};
use netrollout_rollout::{
    Action, FailureCause, Node, NodeFailure, Plan, RevisionPhase, RolloutStrategy, Settings, State,
    Timestamp, UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::{Checker, in_flight};
use crate::scenario::{pass_checking, settled};
use crate::world::World;

/// Whether a failure was written by the guard (its failed nodes regressed, they did not fail
/// the revision themselves); the ordinary failure invariants skip it, G2 checks it.
pub fn is_guard_failure(failed: &[NodeFailure]) -> bool {
    !failed.is_empty()
        && failed
            .iter()
            .all(|f| matches!(f.cause, FailureCause::HealthRegressed { .. }))
}

fn counts(n: &Node) -> bool {
    n.ready && !n.deleting
}

/// The revision rolling out, if any: the newest by sequence, Pending or Progressing, or
/// Succeeded and the target again (raised) while counted nodes run another revision.
fn rolling_out(s: &State) -> Option<&str> {
    let newest = s.revisions.iter().max_by_key(|r| r.sequence)?;
    let known = |n: &Node| {
        (n.spec_revision.as_deref()).is_some_and(|r| s.revisions.iter().any(|x| x.name == r))
    };
    let elsewhere = s.nodes.iter().any(|n| {
        counts(n)
            && n.unresponsive_since.is_none()
            && known(n)
            && n.spec_revision.as_deref() != Some(newest.name.as_str())
    });
    let rolling = match newest.phase {
        RevisionPhase::Pending | RevisionPhase::Progressing => true,
        RevisionPhase::Succeeded => elsewhere,
        _ => false,
    };
    rolling.then_some(newest.name.as_str())
}

/// When each revision last became the target (created, or its sequence raised: an undo or
/// inputs returning to it), on the world's clock: only dispatches since belong to its current
/// rollout.
pub type Targeted = HashMap<String, Timestamp>;

/// Where the current wave of `rev` started: among its dispatches since it last became the
/// target, the earliest in flight, else the latest.
fn wave_start(
    s: &State,
    rev: &str,
    now: Timestamp,
    set: &Settings,
    targeted: &Targeted,
) -> Option<Timestamp> {
    let since = targeted.get(rev).copied()?;
    let on = || {
        s.nodes
            .iter()
            .filter(move |n| !n.deleting && n.spec_revision.as_deref() == Some(rev))
            .filter_map(|n| Some((n, n.current_dispatch()?.at)))
            .filter(move |(_, at)| *at >= since)
    };
    on().filter(|(n, _)| in_flight(n, now, set))
        .map(|(_, at)| at)
        .min()
        .or_else(|| on().map(|(_, at)| at).max())
}

/// The counted nodes regressed at or after `start`.
fn regressed_since(s: &State, start: Timestamp) -> impl Iterator<Item = &Node> {
    s.nodes
        .iter()
        .filter(move |n| counts(n) && n.health.regressed_since().is_some_and(|t| t >= start))
}

/// Checks G1-G5 for one pass: `before` is what the planner saw. Returns a line for the trace
/// when the pass met a case the coverage list wants to see.
pub fn check_guard(
    before: &State,
    p: &Plan,
    now: Timestamp,
    s: &Settings,
    targeted: &Targeted,
) -> Result<Option<String>, String> {
    let guard_failures: Vec<(&String, &Vec<NodeFailure>)> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::SetRevisionPhase {
                revision,
                phase: RevisionPhase::Failed,
                failed_nodes,
                ..
            } if is_guard_failure(failed_nodes) => Some((revision, failed_nodes)),
            _ => None,
        })
        .collect();
    let failed_in_pass = |rev: &str| {
        p.actions.iter().any(|a| {
            matches!(a, Action::SetRevisionPhase { revision, phase: RevisionPhase::Failed, .. } if revision == rev)
        })
    };
    let dispatches_of = |rev: Option<&str>| {
        p.actions.iter().any(
            |a| matches!(a, Action::Dispatch { revision, .. } if rev.is_none_or(|r| r == revision)),
        )
    };
    let any_regressed = before
        .nodes
        .iter()
        .any(|n| n.health.regressed_since().is_some());
    // G3 and G4.
    if (!any_regressed || s.guard == GuardMode::Off)
        && (!guard_failures.is_empty() || p.summary.guard.is_some())
    {
        return Err(format!(
            "G3/G4: the guard acted (guard {}, a node regressed: {any_regressed}): {p:?}",
            s.guard
        ));
    }
    // G5.
    let newest = before.revisions.iter().max_by_key(|r| r.sequence);
    if s.guard == GuardMode::Halt
        && newest.is_some_and(|r| r.phase == RevisionPhase::Failed && r.guard_tripped)
        && dispatches_of(None)
    {
        return Err(format!(
            "G5: a dispatch while the guard holds the fleet: {p:?}"
        ));
    }
    let wave =
        rolling_out(before).and_then(|r| Some((r, wave_start(before, r, now, s, targeted)?)));
    // G2.
    for (rev, failed) in &guard_failures {
        let Some((_, start)) = wave.filter(|w| w.0 == rev.as_str()) else {
            return Err(format!(
                "G2: guard failed {rev}, which is not rolling out in a wave"
            ));
        };
        if failed.len() < s.guard_threshold.max(1) {
            return Err(format!(
                "G2: guard failed {rev} with {} node(s), threshold {}",
                failed.len(),
                s.guard_threshold
            ));
        }
        let ok: HashSet<&str> = regressed_since(before, start)
            .map(|n| n.name.as_str())
            .collect();
        if let Some(f) = failed.iter().find(|f| !ok.contains(f.node.as_str())) {
            return Err(format!(
                "G2: {} counted against {rev}, but it did not regress during the wave (start {start:?}): {:?}",
                f.node,
                before.nodes.iter().find(|n| n.name == f.node)
            ));
        }
    }
    let Some((rev, start)) = wave else {
        return Ok(None);
    };
    let during = regressed_since(before, start).count();
    let earlier = before
        .nodes
        .iter()
        .any(|n| counts(n) && n.health.regressed_since().is_some_and(|t| t < start));
    // G1.
    if during >= s.guard_threshold.max(1) {
        if s.guard == GuardMode::Off {
            return Ok(Some(format!(
                "guard off: {during} regression(s) during the wave of {rev} ignored"
            )));
        }
        if !failed_in_pass(rev) || dispatches_of(Some(rev)) {
            return Err(format!(
                "G1: {during} node(s) regressed during the wave of {rev} (start {start:?}), yet it was not failed or was dispatched: {p:?}"
            ));
        }
        // (An ordinary failure of the same pass rolls back as always.)
        if s.guard == GuardMode::Halt && !guard_failures.is_empty() && dispatches_of(None) {
            return Err(format!("G1: --guard=halt tripped, yet a dispatch: {p:?}"));
        }
    } else if earlier && dispatches_of(Some(rev)) {
        return Ok(Some(format!(
            "regressed before the wave of {rev}: rollout goes on"
        )));
    }
    Ok(None)
}

/// How the world's health changes in one step.
fn inject(w: &mut World, breaking: &HashSet<String>, chronic: &HashSet<String>) {
    let now = w.now;
    let broken = w.state.nodes.iter().any(|n| {
        !n.deleting
            && n.spec_revision
                .as_ref()
                .is_some_and(|r| breaking.contains(r))
    });
    let len = w.state.nodes.len() as u64;
    if broken && len > 0 && w.rng.chance(60) {
        let i = w.rng.below(len) as usize;
        let n = &mut w.state.nodes[i];
        if n.health == Health::Healthy
            && !n
                .spec_revision
                .as_ref()
                .is_some_and(|r| breaking.contains(r))
        {
            n.health = Health::Regressed {
                since: now,
                checks: vec!["tenant-exit".into()],
            };
            w.log
                .push(format!("caused regression on {} (untouched)", n.name));
            let name = n.name.clone();
            w.touch(&name);
        }
    }
    if len > 0 && w.rng.chance(6) {
        let i = w.rng.below(len) as usize;
        let n = &mut w.state.nodes[i];
        if !chronic.contains(&n.name) {
            n.health = match n.health {
                Health::Healthy | Health::Unreported => Health::Regressed {
                    since: now,
                    checks: vec!["flap".into()],
                },
                Health::Regressed { .. } => Health::Healthy,
            };
            w.log.push(format!("flap {} -> {:?}", n.name, n.health));
            let name = n.name.clone();
            w.touch(&name);
        }
    }
    if !broken {
        for n in &mut w.state.nodes {
            if !chronic.contains(&n.name) && w.rng.chance(30) {
                n.health = Health::Healthy;
            }
        }
        w.touch_all();
    }
}

/// One pass with every invariant: the fleet's (check.rs) and the guard's.
fn pass(w: &mut World, checker: &mut Checker, targeted: &Targeted) -> Result<Plan, String> {
    pass_checking(w, checker, |w, checker, before, p| {
        checker.check_pass(before, p, &w.state, w.now, &w.settings)?;
        if let Some(line) = check_guard(before, p, w.now, &w.settings, targeted)? {
            w.log.push(format!("  {line}"));
        }
        // The configurator persists the guard's failure with the phase write.
        if let Some(g) = &p.summary.guard {
            w.log
                .push(format!("  guard={} tripped on {}", g.mode, g.revision));
            for r in &mut w.state.revisions {
                if r.name == g.revision && r.phase == RevisionPhase::Failed {
                    r.guard_tripped = true;
                }
            }
        }
        Ok(())
    })
}

/// A seeded guard scenario: a fleet on a known-good revision rolls new ones out while health
/// regresses (caused, chronic, flaps), with a random guard mode and threshold; then the world
/// heals and the fleet must settle.
pub fn scenario(seed: u64) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let settings = Settings {
        update_limit: UpdateLimit::Count(rng.range(1, 3) as u32),
        strategy: RolloutStrategy::ALL[rng.below(2) as usize],
        guard: GuardMode::ALL[rng.below(3) as usize],
        guard_threshold: rng.range(1, 2) as usize,
        max_failures: rng.range(0, 1) as usize,
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    w.log.push(format!("seed {seed}: {:?}", w.settings));
    let r = run(&mut w, &mut rng);
    (r, w.log)
}

fn run(w: &mut World, rng: &mut crate::rng::Rng) -> Result<(), String> {
    let mut checker = Checker::default();
    for _ in 0..rng.range(3, 9) {
        let behavior = if rng.chance(85) {
            Behavior::Healthy
        } else {
            Behavior::FailProbe
        };
        w.add_node(
            rng.below(2),
            rng.chance(15),
            Agent::new(behavior, rng.range(1, 3) as u32),
        );
    }
    let mut targeted = Targeted::new();
    let good = w.add_revision(0);
    targeted.insert(good.clone(), w.now);
    w.converge_on(&good);
    let mut chronic = HashSet::new();
    for n in &mut w.state.nodes {
        if rng.chance(20) {
            n.health = Health::Regressed {
                since: w.now,
                checks: vec!["chronic".into()],
            };
            chronic.insert(n.name.clone());
            w.log.push(format!("pre-wave regression on {}", n.name));
        }
    }
    w.touch_all();
    let mut breaking = HashSet::new();
    for c in 1..=4 {
        if rng.chance(50) {
            breaking.insert(crate::world::rev_name(c));
        }
    }
    w.advance();
    for step in 0..rng.range(20, 40) {
        if step % 8 == 0 {
            // New content, or the inputs return to an earlier one (an undo): that revision is
            // the target again, a known-good one among them.
            let c = 1 + step / 8;
            let c = if c > 1 && rng.chance(40) {
                rng.below(c)
            } else {
                c
            };
            target(w, &mut targeted, c);
        }
        inject(w, &breaking, &chronic);
        w.step_agents();
        pass(w, &mut checker, &targeted)?;
        w.advance();
    }
    w.log.push("== heal".into());
    for n in &mut w.state.nodes {
        n.health = Health::Healthy;
    }
    w.touch_all();
    for a in w.agents.values_mut() {
        a.heal();
    }
    for _ in 0..200 {
        w.step_agents();
        let p = pass(w, &mut checker, &targeted)?;
        if settled(w, &p) {
            return Ok(());
        }
        w.advance();
    }
    Err("liveness: the healed fleet did not settle within 200 steps".into())
}

/// The inputs change to content `c`: its revision is created, or raised (logged as a
/// reversion when it had rolled out before), unless it is Failed.
fn target(w: &mut World, targeted: &mut Targeted, c: u64) {
    let name = crate::world::rev_name(c);
    let before = w.state.revisions.iter().find(|r| r.name == name);
    let (seq, phase) = (before.map(|r| r.sequence), before.map(|r| r.phase));
    w.add_revision(c);
    let after = w.state.revisions.iter().find(|r| r.name == name);
    if after.map(|r| r.sequence) != seq {
        targeted.insert(name.clone(), w.now);
        if let Some(phase) = phase {
            w.log
                .push(format!("inputs reverted to {name} ({phase:?}): raised"));
        }
    }
}
