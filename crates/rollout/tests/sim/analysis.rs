//! Analysis gates in the simulator (docs/contract.md, "Analysis"): every revision carries one
//! check; the analysis of revisions whose content is `2 mod 3` fails (at a random wave), the
//! others pass, and a measurement is sometimes inconclusive (no verdict yet: the configurator
//! measures again in a later pass). After each pass the simulated configurator measures when the
//! pass says an analysis is due, as the real one does against Prometheus.
//!
//! Invariants, after every pass (computed from the state the planner saw):
//! - A1: no node is dispatched a revision that is rolling out (Pending or Progressing) past a
//!   wave whose analysis has not passed: nodes already run it only if none is in flight and the
//!   checks passed with all of them.
//! - A2: a revision whose analysis failed is dispatched to no node, and one rolling out is
//!   failed in that very pass (the rollout halts or rolls back like after a failed node).
//! - A3: a revision whose analysis did not fail is never failed by analysis; a revision is
//!   Succeeded only once its checks passed with every node that runs it.
//! - A4: once nothing fails analysis any more, the fleet converges.

use netrollout_rollout::analysis::{Analysis, Verdict};
use netrollout_rollout::{
    Action, DispatchKind, Plan, RevisionPhase, RolloutStrategy, Settings, State, UpdateLimit,
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

fn check_analysis(before: &State, p: &Plan, w: &World) -> Result<(), String> {
    for a in &p.actions {
        match a {
            Action::Dispatch {
                revision,
                kind,
                nodes,
                ..
            } if *kind != DispatchKind::Rollback => {
                let Some(r) = before.revisions.iter().find(|r| &r.name == revision) else {
                    continue;
                };
                if let Verdict::Failed { .. } = r.analysis.verdict {
                    return Err(format!("A2: {revision} failed analysis but was dispatched"));
                }
                if !matches!(r.phase, RevisionPhase::Pending | RevisionPhase::Progressing) {
                    continue;
                }
                let on = nodes_on(before, revision);
                let flying = before.nodes.iter().any(|n| {
                    n.spec_revision.as_deref() == Some(revision) && in_flight(n, w.now, &w.settings)
                });
                if on > 0 && (flying || !r.analysis.passed_for(on)) {
                    return Err(format!(
                        "A1: {} node(s) dispatched {revision} while {on} run it (in flight: {flying}) and its analysis says {:?}",
                        nodes.len(),
                        r.analysis.verdict
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
                let failed = matches!(r.analysis.verdict, Verdict::Failed { .. });
                if *phase == RevisionPhase::Failed
                    && reason.starts_with("analysis of revision")
                    && !failed
                {
                    return Err(format!("A3: {revision} failed by analysis that passed"));
                }
                if *phase == RevisionPhase::Succeeded
                    && !r.analysis.passed_for(nodes_on(before, revision))
                {
                    return Err(format!(
                        "A3: {revision} Succeeded while its analysis says {:?} with {} node(s) on it",
                        r.analysis.verdict,
                        nodes_on(before, revision)
                    ));
                }
            }
            _ => {}
        }
    }
    for r in &before.revisions {
        let rolling = matches!(r.phase, RevisionPhase::Pending | RevisionPhase::Progressing);
        if rolling && matches!(r.analysis.verdict, Verdict::Failed { .. }) {
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

/// The simulated configurator's analysis: measure the target when the pass says it is due.
fn measure(w: &mut World, p: &Plan, failing: bool) {
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
    if let Some(r) = w
        .state
        .revisions
        .iter_mut()
        .find(|r| r.name == gate.revision)
    {
        r.analysis.verdict = verdict;
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
    for _ in 0..w.rng.range(2, 8) {
        let zone = w.rng.range(0, 2);
        w.add_node(zone, false, Agent::new(Behavior::Healthy, 1));
    }
    let first = w.add_revision(0);
    w.converge_on(&first);
    let mut content = 0;
    for _ in 0..w.rng.range(20, 60) {
        if w.rng.chance(8) {
            content += 1;
            w.add_revision(content);
            gate_all(w);
        }
        step(w, &mut checker, true)?;
    }
    w.log.push("== heal: every analysis passes".into());
    content += 3 - content % 3;
    w.add_revision(content);
    gate_all(w);
    for _ in 0..300 {
        let p = step(w, &mut checker, false)?;
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

fn step(w: &mut World, checker: &mut Checker, failing: bool) -> Result<Plan, String> {
    w.step_agents();
    let p = pass_checking(w, checker, |w, checker, before, p| {
        check_analysis(before, p, w)?;
        checker.check_pass(before, p, &w.state, w.now, &w.settings)
    })?;
    measure(w, &p, failing);
    w.advance();
    Ok(p)
}
