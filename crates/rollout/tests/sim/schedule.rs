//! Maintenance windows and freezes in the simulator (docs/contract.md, "Maintenance windows
//! and freezes"): fleets rolling revisions out under a schedule of periodic windows and random
//! freezes, while contents fail, inputs go back to known-good revisions (undo) and nodes join.
//!
//! Invariants, after every pass (from the schedule and the state before the pass, not from
//! the planner's summary):
//! - S1: no dispatch while the schedule is closed, except of a revision that is Succeeded (the
//!   rollback to known-good after a failure, or a join to the revision the fleet runs) or an
//!   undo (inputs back to a known-good revision).
//! - S2: a pass reports a hold only when the schedule is closed, it is rolling a revision out
//!   and that revision is not an undo: the rollback and an undo are never held (with S1 and
//!   the window's idle-slot check, which a legitimate hold alone exempts, they move at once).
//! - Liveness: once contents are good, the fleet converges on the newest revision in a later
//!   window.

use std::time::Duration;

use netrollout_rollout::{
    Action, Freeze, Mode, Plan, RevisionPhase, RolloutStrategy, Schedule, Settings, Span, State,
    Timestamp, UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::Checker;
use crate::lifecycle::Inputs;
use crate::scenario::{pass_checking, settled};
use crate::world::{STEP_MS, World, rev_name};

/// Steps the windows are laid out for (past the longest scenario).
const HORIZON: u64 = 2_000;

fn at(start: Timestamp, step: u64) -> Timestamp {
    start.saturating_add(Duration::from_millis(step * STEP_MS))
}

/// Windows of `open` steps every `period` steps from `start`, and up to two freezes.
fn schedule(rng: &mut crate::rng::Rng, start: Timestamp) -> Schedule {
    let period = rng.range(3, 10);
    let open = rng.range(1, period - 1);
    let windows = (0..HORIZON / period)
        .map(|i| Span {
            start: at(start, i * period),
            end: at(start, i * period + open),
        })
        .collect();
    let freezes = (0..rng.range(0, 2))
        .map(|i| {
            let from = rng.range(0, 60);
            Freeze {
                name: format!("freeze-{i}"),
                span: Span {
                    start: at(start, from),
                    end: at(start, from + rng.range(2, 20)),
                },
            }
        })
        .collect();
    Schedule {
        windows: Some(windows),
        freezes,
        invalid: None,
    }
}

fn check_schedule(before: &State, p: &Plan, now: Timestamp, s: &Settings) -> Result<(), String> {
    let closed = s.schedule.closed_at(now);
    let rev = |name: &str| before.revisions.iter().find(|r| r.name == name);
    if closed.is_some() {
        for a in &p.actions {
            if let Action::Dispatch { revision, .. } = a {
                let r = rev(revision).ok_or("dispatch of an unknown revision")?;
                if r.phase != RevisionPhase::Succeeded && !r.undo {
                    return Err(format!(
                        "S1: dispatched {revision} ({:?}) while the schedule is closed ({closed:?})",
                        r.phase
                    ));
                }
            }
        }
    }
    if let Some(h) = &p.summary.schedule {
        let undo = rev(&h.revision).is_some_and(|r| r.undo);
        if closed.is_none() || p.summary.mode != Mode::RollingOut || undo {
            return Err(format!(
                "S2: held {h:?} with the schedule {closed:?}, mode {:?}, undo {undo}",
                p.summary.mode
            ));
        }
    }
    Ok(())
}

pub fn scenario(seed: u64) -> (Result<(), String>, Vec<String>) {
    let mut rng = crate::rng::Rng::new(seed);
    let mut w = World::new(seed, Settings::default());
    let settings = Settings {
        update_limit: UpdateLimit::Count(rng.range(1, 3) as u32),
        strategy: RolloutStrategy::ALL[(seed % 2) as usize],
        max_failures: rng.range(0, 1) as usize,
        schedule: schedule(&mut rng, w.now),
        ..Settings::default()
    };
    w.log.push(format!("seed {seed}: {settings:?}"));
    w.settings = settings;
    let r = run(&mut w);
    (r, w.log)
}

fn run(w: &mut World) -> Result<(), String> {
    let mut checker = Checker::default();
    for _ in 0..w.rng.range(2, 6) {
        w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
    }
    let first = w.change_inputs(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(30, 60) {
        if w.rng.chance(15) {
            content += 1;
            if w.rng.chance(35) {
                w.bad.insert(rev_name(content));
            }
            w.change_inputs(content);
        } else if w.rng.chance(8) {
            // An undo: inputs back to a known-good revision.
            let good: Vec<u64> = (0..=content)
                .filter(|c| {
                    let name = rev_name(*c);
                    w.state
                        .revisions
                        .iter()
                        .any(|r| r.name == name && r.phase == RevisionPhase::Succeeded)
                })
                .collect();
            if let Some(&c) = good.get(w.rng.below(good.len().max(1) as u64) as usize) {
                w.log.push(format!("undo to {}", rev_name(c)));
                w.change_inputs(c);
            }
        } else if w.rng.chance(4) {
            w.add_node(0, false, Agent::new(Behavior::Healthy, 1));
        }
        step(w, &mut checker)?;
    }
    w.log.push("== heal: good content".into());
    let newest = w.change_inputs(content + 1);
    for _ in 0..300 {
        let p = step(w, &mut checker)?;
        let on = (w.state.nodes.iter()).all(|n| n.spec_revision.as_ref() == Some(&newest));
        let done = (w.state.revisions.iter())
            .any(|r| r.name == newest && r.phase == RevisionPhase::Succeeded);
        if settled(w, &p) && on && done {
            w.log.push(format!("-> converged on {newest}"));
            return Ok(());
        }
    }
    Err("liveness: the fleet did not converge on the newest revision in a later window".into())
}

fn step(w: &mut World, checker: &mut Checker) -> Result<Plan, String> {
    w.step_agents();
    let p = pass_checking(w, checker, |w, checker, before, p| {
        let closed = w.settings.schedule.closed_at(w.now);
        if let Some(h) = &p.summary.schedule {
            w.log.push(format!("  held {:?}", h.closed));
        }
        if closed.is_some() {
            for a in &p.actions {
                if let Action::Dispatch { revision, kind, .. } = a {
                    let undo = (before.revisions.iter()).any(|r| &r.name == revision && r.undo);
                    w.log.push(format!(
                        "  closed dispatch of {revision} ({kind:?}) undo={undo}"
                    ));
                }
            }
        }
        checker.check_pass(before, p, &w.state, w.now, &w.settings)?;
        check_schedule(before, p, w.now, &w.settings)
    })?;
    w.advance();
    Ok(p)
}
