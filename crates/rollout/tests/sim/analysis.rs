//! Analysis gates in the simulator (docs/contract.md, "Analysis gates"): every revision carries
//! one check; the analysis of revisions whose content is `2 mod 3` fails (at a random wave), the
//! others pass, and a measurement is sometimes inconclusive (no verdict yet: the configurator
//! measures again in a later pass). After each pass the simulated configurator measures when the
//! pass says an analysis is due, as the real one does against Prometheus, and writes the verdict
//! with the sequence the pass planned under. The inputs sometimes return to an earlier content
//! (an undo, or reverted inputs): that revision is raised, and its last verdict stays in its
//! status, as a raise leaves it until the configurator clears it.
//!
//! Invariants, after every pass, computed from the state the planner saw and the simulated
//! configurator's own record of what it measured (never from the planner's reading of it):
//! - A1: no node is dispatched a gated revision past a wave whose analysis has not passed:
//!   nodes already run it only if none is in flight and a measurement under its *current*
//!   sequence passed with all of them (a raised revision is measured afresh).
//! - A2: a revision whose analysis failed under its current sequence is dispatched to no node,
//!   and one rolling out is failed in that very pass (the rollout halts or rolls back like
//!   after a failed node).
//! - A3: a revision whose analysis did not fail is never failed by analysis; a revision is
//!   Succeeded only once a measurement under its current sequence passed with every node that
//!   runs it.
//! - A4: once nothing fails analysis any more, the fleet converges.

use netrollout_rollout::analysis::{Analysis, Verdict};
use netrollout_rollout::{
    Action, DispatchKind, Plan, Revision, RevisionPhase, RolloutStrategy, Settings, State,
    UpdateLimit,
};

use crate::agent::{Agent, Behavior};
use crate::check::{Checker, in_flight};
use crate::scenario::{pass_checking, settled};
use crate::world::World;

/// Whether the analysis of revision `name` fails (content `2 mod 3`).
fn fails(name: &str) -> bool {
    name.strip_prefix("ncr-")
        .and_then(|c| c.parse::<u64>().ok())
        .is_some_and(|c| c % 3 == 2)
}

fn nodes_on(state: &State, rev: &str) -> usize {
    state
        .nodes
        .iter()
        .filter(|n| !n.deleting && n.spec_revision.as_deref() == Some(rev))
        .count()
}

/// What the simulated configurator measured: revision, the sequence the pass planned it under,
/// the nodes on it, passed.
type Measured = Vec<(String, u64, usize, bool)>;

/// Whether a measurement of `r` under its current sequence passed with at least `on` nodes.
fn passed_now(measured: &Measured, r: &Revision, on: usize) -> bool {
    (measured.iter())
        .any(|(m, seq, nodes, ok)| *m == r.name && *seq == r.sequence && *ok && *nodes >= on)
}

/// Whether the last measurement of `r` under its current sequence failed.
fn failed_now(measured: &Measured, r: &Revision) -> bool {
    (measured.iter().rev())
        .find(|(m, seq, ..)| *m == r.name && *seq == r.sequence)
        .is_some_and(|(.., ok)| !ok)
}

fn check_analysis(before: &State, p: &Plan, w: &World, measured: &Measured) -> Result<(), String> {
    for a in &p.actions {
        match a {
            Action::Dispatch {
                revision,
                kind: DispatchKind::Rollout,
                nodes,
                ..
            } => {
                let Some(r) = before.revisions.iter().find(|r| &r.name == revision) else {
                    continue;
                };
                if failed_now(measured, r) {
                    return Err(format!("A2: {revision} failed analysis but was dispatched"));
                }
                let on = nodes_on(before, revision);
                let flying = before.nodes.iter().any(|n| {
                    n.spec_revision.as_deref() == Some(revision) && in_flight(n, w.now, &w.settings)
                });
                if on > 0 && (flying || !passed_now(measured, r, on)) {
                    return Err(format!(
                        "A1: {} node(s) dispatched {revision} (sequence {}) while {on} run it (in flight: {flying}) and no measurement under that sequence passed with them; its status says {:?} (sequence {:?})",
                        nodes.len(),
                        r.sequence,
                        r.analysis.verdict,
                        r.analysis.sequence
                    ));
                }
            }
            Action::SetRevisionPhase {
                revision,
                phase,
                reason,
                ..
            } => {
                let Some(r) = before.revisions.iter().find(|r| &r.name == revision) else {
                    continue;
                };
                if *phase == RevisionPhase::Failed
                    && reason.starts_with("analysis of revision")
                    && !failed_now(measured, r)
                {
                    return Err(format!("A3: {revision} failed by analysis that passed"));
                }
                let on = nodes_on(before, revision);
                if *phase == RevisionPhase::Succeeded && !passed_now(measured, r, on) {
                    return Err(format!(
                        "A3: {revision} Succeeded (sequence {}) with {on} node(s) on it, but no measurement under that sequence passed with them; its status says {:?} (sequence {:?})",
                        r.sequence, r.analysis.verdict, r.analysis.sequence
                    ));
                }
            }
            _ => {}
        }
    }
    for r in &before.revisions {
        let rolling = matches!(r.phase, RevisionPhase::Pending | RevisionPhase::Progressing);
        if rolling && failed_now(measured, r) {
            let failed_now = p.actions.iter().any(|a| {
                matches!(a, Action::SetRevisionPhase { revision, phase: RevisionPhase::Failed, .. } if *revision == r.name)
            });
            if !failed_now {
                return Err(format!(
                    "A2: {} failed analysis but the pass did not fail it",
                    r.name
                ));
            }
        }
    }
    Ok(())
}

/// The simulated configurator's analysis: measure the target when the pass says it is due, and
/// write the verdict with the sequence the pass planned under.
fn measure(w: &mut World, p: &Plan, failing: bool, measured: &mut Measured) {
    let Some(gate) = p.summary.analysis.as_ref().filter(|g| g.due) else {
        return;
    };
    let verdict = if w.rng.chance(20) {
        w.log
            .push(format!("  analysis of {} inconclusive", gate.revision));
        return;
    } else if failing && fails(&gate.revision) && w.rng.chance(60) {
        w.log.push(format!(
            "  analysis of {} failed with {} node(s)",
            gate.revision, gate.nodes
        ));
        Verdict::Failed {
            message: format!(
                "check lost: result 1 with {} node(s), wanted result == 0",
                gate.nodes
            ),
        }
    } else {
        w.log.push(format!(
            "  analysis of {} passed with {} node(s)",
            gate.revision, gate.nodes
        ));
        Verdict::Passed { nodes: gate.nodes }
    };
    let passed = matches!(verdict, Verdict::Passed { .. });
    measured.push((gate.revision.clone(), gate.sequence, gate.nodes, passed));
    if let Some(r) = w
        .state
        .revisions
        .iter_mut()
        .find(|r| r.name == gate.revision)
    {
        r.analysis.verdict = verdict;
        r.analysis.sequence = Some(gate.sequence);
    }
}

fn gate_all(w: &mut World) {
    for r in &mut w.state.revisions {
        if r.analysis.checks == 0 {
            r.analysis = Analysis {
                checks: 1,
                verdict: Verdict::None,
                ..Analysis::default()
            };
        }
    }
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
    let mut measured = Measured::new();
    for _ in 0..w.rng.range(2, 8) {
        let zone = w.rng.range(0, 2);
        w.add_node(zone, false, Agent::new(Behavior::Healthy, 1));
    }
    let first = w.add_revision(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(20, 60) {
        if w.rng.chance(8) {
            // New content, or (an undo) the inputs return to an earlier one, whose revision is
            // raised with the verdict its last rollout left in its status.
            let c = if content > 0 && w.rng.chance(40) {
                w.rng.below(content + 1)
            } else {
                content += 1;
                content
            };
            let name = crate::world::rev_name(c);
            let was = (w.state.revisions.iter().find(|r| r.name == name))
                .map(|r| (r.phase, r.analysis.verdict.clone()));
            w.add_revision(c);
            if let Some((phase, verdict)) = was {
                w.log.push(format!(
                    "inputs reverted to {name} ({phase:?}, analysis {verdict:?})"
                ));
            }
            gate_all(w);
        }
        step(w, &mut checker, true, &mut measured)?;
    }
    w.log.push("== heal: every analysis passes".into());
    content += 3 - content % 3;
    w.add_revision(content);
    gate_all(w);
    for _ in 0..300 {
        let p = step(w, &mut checker, false, &mut measured)?;
        // A last wave that was just measured is planned on by the next pass.
        let measured = p.summary.analysis.as_ref().is_some_and(|g| g.due);
        if settled(w, &p) && !measured {
            let newest = w.state.revisions.iter().max_by_key(|r| r.sequence).unwrap();
            if newest.phase != RevisionPhase::Succeeded {
                return Err(format!(
                    "A4: settled, but newest revision {} is {:?}",
                    newest.name, newest.phase
                ));
            }
            w.log.push(format!("-> converged on {}", newest.name));
            return Ok(());
        }
    }
    Err("A4: no convergence once every analysis passed".into())
}

fn step(
    w: &mut World,
    checker: &mut Checker,
    failing: bool,
    measured: &mut Measured,
) -> Result<Plan, String> {
    w.step_agents();
    let p = pass_checking(w, checker, |w, checker, before, p| {
        check_analysis(before, p, w, measured)?;
        checker.check_pass(before, p, &w.state, w.now, &w.settings)
    })?;
    measure(w, &p, failing, measured);
    w.advance();
    Ok(p)
}
