//! Approval gates and the start checks in the simulator (docs/contract.md, "Approval gates",
//! "A healthy start"): fleets with canaries roll out revisions under one to three
//! `--pause-after` gates and a `--start-max-unhealthy` limit, while nodes' tenants become
//! unreachable and recover, a blocking query fires and clears, and a person promotes (a gate,
//! `--full`, `--force`) at random moments.
//!
//! Invariants, after every pass (from the API state before it, independently of the planner):
//! - A1: no dispatch past a pause before its promote: the nodes a rolling-out revision gets
//!   (rollouts and joins; a node leaving a bad revision is never held) never take it past its
//!   first gate not released under its current sequence.
//! - A2: a degraded fleet is never started: a revision no node runs gets no node while more
//!   nodes report their tenants unreachable than allowed, or the blocking query fires, unless
//!   forced under its current sequence.
//! - A3: a held revision never fails by waiting: nothing fails in these fleets (healthy agents,
//!   guard off), however long a hold lasts.
//! - Liveness: once the fleet recovers and a person promotes `--full`, it converges.

use netrollout_rollout::approval::{Approval, HoldCause, PauseAfter, StartCheck, Unhealthy};
use netrollout_rollout::guard::{GuardMode, Health};
use netrollout_rollout::{
    Action, DispatchKind, Mode, Plan, RevisionPhase, RolloutStrategy, Settings, State, UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::scenario::{flip_random_health, pass_checking, settled};
use crate::world::World;

/// The number of nodes at the first gate of `target` not released under its sequence (`None`:
/// none left), computed from the API state.
fn next_gate(before: &State, target: &str, s: &Settings) -> Option<usize> {
    let r = before.revisions.iter().find(|r| r.name == target)?;
    let a = r.approval.at(r.sequence);
    if a.full {
        return None;
    }
    let managed: Vec<_> = before.nodes.iter().filter(|n| !n.deleting).collect();
    let canaries = managed.iter().filter(|n| n.canary).count();
    let mut gates: Vec<usize> = (s.pause_after.iter())
        .map(|p| p.nodes(managed.len(), canaries))
        .collect();
    gates.sort_unstable();
    gates.dedup();
    gates.get(a.gates).copied()
}

/// Whether the approval gates or the start checks let no further node get `target` now (from
/// the API state): it reached its next unreleased gate, or no node runs it and the start checks
/// hold it.
pub fn held(state: &State, target: &str, s: &Settings) -> bool {
    let on = (state.nodes.iter())
        .filter(|n| !n.deleting && n.spec_revision.as_deref() == Some(target))
        .count();
    if next_gate(state, target, s).is_some_and(|g| on >= g) {
        return true;
    }
    let Some(r) = state.revisions.iter().find(|r| r.name == target) else {
        return false;
    };
    on == 0 && !r.approval.at(r.sequence).force && start_blocked(state, s).is_some()
}

/// Why the start checks hold a revision that no node runs yet, if they do.
fn start_blocked(state: &State, s: &Settings) -> Option<String> {
    let managed = state.nodes.iter().filter(|n| !n.deleting).count();
    let unhealthy = (state.nodes.iter())
        .filter(|n| !n.deleting && n.ready && n.health.regressed_since().is_some())
        .count();
    let allowed = s
        .start_max_unhealthy
        .map_or(usize::MAX, |u| u.resolve(managed));
    (unhealthy > allowed || s.start_check != StartCheck::Clear).then(|| {
        format!(
            "{unhealthy} unhealthy node(s) (allowed {allowed}), start check {:?}",
            s.start_check
        )
    })
}

fn check_approval(before: &State, p: &Plan, s: &Settings) -> Result<(), String> {
    for a in &p.actions {
        if let Action::SetRevisionPhase {
            revision,
            phase: RevisionPhase::Failed,
            ..
        } = a
        {
            return Err(format!(
                "A3: {revision} failed in a fleet where nothing fails"
            ));
        }
    }
    let (Some(target), Mode::RollingOut) = (p.summary.target.as_deref(), &p.summary.mode) else {
        return Ok(());
    };
    let got: usize = (p.actions.iter())
        .map(|a| match a {
            Action::Dispatch {
                revision,
                kind: DispatchKind::Rollout | DispatchKind::Join,
                nodes,
                ..
            } if revision == target => nodes.len(),
            _ => 0,
        })
        .sum();
    if got == 0 {
        return Ok(());
    }
    let on = (before.nodes.iter())
        .filter(|n| !n.deleting && n.spec_revision.as_deref() == Some(target))
        .count();
    if let Some(gate) = next_gate(before, target, s)
        && on + got > gate
    {
        return Err(format!(
            "A1: {target} had {on} node(s) and got {got} more, past its unreleased gate at {gate}"
        ));
    }
    let r = (before.revisions.iter())
        .find(|r| r.name == target)
        .ok_or("target unknown")?;
    let forced = r.approval.at(r.sequence).force;
    if on == 0
        && !forced
        && let Some(why) = start_blocked(before, s)
    {
        return Err(format!("A2: {target} started with {why}"));
    }
    Ok(())
}

pub fn scenario(seed: u64) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let all = [
        PauseAfter::Canary,
        PauseAfter::Count(2),
        PauseAfter::Count(4),
        PauseAfter::Percent(50),
    ];
    let gates: Vec<PauseAfter> = (0..rng.range(1, 3))
        .map(|_| all[rng.below(all.len() as u64) as usize])
        .collect();
    let settings = Settings {
        update_limit: UpdateLimit::Count(rng.range(1, 3) as u32),
        strategy: RolloutStrategy::ALL[(seed % 2) as usize],
        guard: GuardMode::Off,
        pause_after: gates,
        start_max_unhealthy: Some(Unhealthy::Count(rng.range(0, 1) as u32)),
        ..Settings::default()
    };
    let mut w = World::new(seed, settings);
    w.log.push(format!("seed {seed}: {:?}", w.settings));
    let r = run(&mut w);
    (r, w.log)
}

fn run(w: &mut World) -> Result<(), String> {
    let mut checker = Checker::default();
    for i in 0..w.rng.range(3, 8) {
        let canary = i < w.rng.range(0, 2);
        w.add_node(i % 2, canary, Agent::new(Behavior::Healthy, 1));
    }
    let first = w.change_inputs(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(20, 50) {
        if w.rng.chance(12) {
            content += 1;
            w.change_inputs(content);
        }
        if w.rng.chance(8) {
            flip_random_health(w, "tenants unreachable");
        }
        if w.rng.chance(8) {
            w.settings.start_check = match w.settings.start_check {
                StartCheck::Clear => StartCheck::Blocked {
                    message: "alert TenantLoss firing".into(),
                },
                StartCheck::Blocked { .. } => StartCheck::Clear,
            };
            w.log
                .push(format!("  blocking query: {:?}", w.settings.start_check));
        }
        step(w, &mut checker, false)?;
    }
    w.log
        .push("== heal: every node healthy, the query clear, promote --full".into());
    for n in &mut w.state.nodes {
        n.health = Health::Healthy;
    }
    w.settings.start_check = StartCheck::Clear;
    w.touch_all();
    let newest = w.change_inputs(content + 1);
    for _ in 0..300 {
        let p = step(w, &mut checker, true)?;
        if settled(w, &p) {
            let on = (w.state.nodes.iter()).all(|n| n.spec_revision.as_ref() == Some(&newest));
            let phase = (w.state.revisions.iter())
                .find(|r| r.name == newest)
                .map(|r| r.phase);
            if phase == Some(RevisionPhase::Succeeded) && on {
                w.log.push(format!("-> converged on {newest}"));
                return Ok(());
            }
        }
    }
    Err("liveness: the recovered, promoted fleet did not converge on the newest revision".into())
}

/// A person looks at the hold and, at random, promotes: the gate it waits at, every gate
/// (`--full`), or past the start checks (`--force`). `full` always promotes `--full`.
fn person(w: &mut World, p: &Plan, full: bool) {
    let Some(h) = &p.summary.hold else { return };
    if !full && !w.rng.chance(30) {
        return;
    }
    let Some(r) = w.state.revisions.iter_mut().find(|r| r.name == h.revision) else {
        return;
    };
    let mut a = r.approval.at(h.sequence);
    a.sequence = Some(h.sequence);
    let word = match &h.cause {
        HoldCause::Gate { gate, .. } if !full && w.rng.chance(70) => {
            a.gates = gate + 1;
            "promote"
        }
        HoldCause::Gate { .. } => {
            a.full = true;
            "promote --full"
        }
        HoldCause::Unhealthy { .. } | HoldCause::Blocked { .. } if full || w.rng.chance(50) => {
            a.force = true;
            "promote --force"
        }
        _ => return,
    };
    r.approval = Approval { ..a };
    w.log.push(format!("  person: {word} {}", h.revision));
}

fn step(w: &mut World, checker: &mut Checker, full: bool) -> Result<Plan, String> {
    w.step_agents();
    let p = pass_checking(w, checker, |w, checker, before, p| {
        if let Some(h) = &p.summary.hold {
            let what = match h.cause {
                HoldCause::Gate { .. } => "held at gate",
                HoldCause::Unhealthy { .. } => "held: unhealthy",
                HoldCause::Blocked { .. } => "held: blocked",
            };
            w.log.push(format!("  {} {what}", h.revision));
        }
        checker.check_pass(before, p, &w.state, w.now, &w.settings)?;
        check_approval(before, p, &w.settings)
    })?;
    person(w, &p, full);
    w.advance();
    Ok(p)
}
