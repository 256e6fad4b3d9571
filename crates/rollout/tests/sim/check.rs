//! The invariants of issue 3, checked after every step of the simulation. They are computed
//! from API-visible state and the plan, independently of the planner's internals.

use std::collections::HashMap;
use std::time::Duration;

use netrollout_rollout::{
    Action, FailureCause, Node, NodePhase, Plan, RevisionPhase, Settings, State, Timestamp,
};

use crate::world::STEP_MS;

/// Cross-step memory of the checker (the planner itself has none).
#[derive(Debug, Default)]
pub struct Checker {
    /// Blast-radius bound per revision: `max_failures` + nodes that could still fail it,
    /// frozen once the failure is detected.
    bounds: HashMap<String, (usize, bool)>,
}

fn applying(n: &Node) -> bool {
    n.current_status()
        .is_some_and(|s| s.phase == NodePhase::Provisioning)
}

fn timed_out(n: &Node, now: Timestamp, s: &Settings) -> bool {
    applying(n)
        && n.current_dispatch()
            .and_then(|d| d.picked_up_at)
            .is_some_and(|t| now >= t.saturating_add(s.apply_timeout))
}

/// In flight: the spec was dispatched, the agent has not finished it, and no timeout expired.
pub fn in_flight(n: &Node, now: Timestamp, s: &Settings) -> bool {
    if n.deleting || n.spec_revision.is_none() {
        return false;
    }
    if n.current_status()
        .is_some_and(|st| st.phase != NodePhase::Provisioning)
    {
        return false;
    }
    match n.current_dispatch() {
        None => true,
        Some(d) if applying(n) => d
            .picked_up_at
            .is_none_or(|t| now < t.saturating_add(s.apply_timeout)),
        Some(d) => now < d.at.saturating_add(s.pickup_timeout),
    }
}

/// Holds a slot of the update limit: in flight, or baking (`--bake-time`) a revision that is
/// not Failed or Blocked ([`crate::bake::baking`]).
pub fn holds_slot(state: &State, n: &Node, now: Timestamp, s: &Settings) -> bool {
    in_flight(n, now, s)
        || (crate::bake::baking(n, now, s)
            && !state
                .revisions
                .iter()
                .any(|r| n.spec_revision.as_ref() == Some(&r.name) && r.phase.is_bad()))
}

/// Ready, not leaving, spec `rev`, and status about `rev` says Failed or its apply timed out,
/// or it regressed during its bake of `rev` ([`crate::bake::regressed_in_bake`]).
fn counted_failure(n: &Node, rev: &str, now: Timestamp, s: &Settings) -> bool {
    !n.deleting
        && n.ready
        && n.spec_revision.as_deref() == Some(rev)
        && (n
            .current_status()
            .is_some_and(|st| st.phase == NodePhase::Failed || timed_out(n, now, s))
            || crate::bake::regressed_in_bake(n, s))
}

fn failed_now(state: &State, rev: &str, now: Timestamp, s: &Settings) -> usize {
    state
        .nodes
        .iter()
        .filter(|n| counted_failure(n, rev, now, s))
        .count()
}

/// Nodes on `rev` that could still turn into counted failures.
fn potential(state: &State, rev: &str, now: Timestamp, s: &Settings) -> usize {
    state
        .nodes
        .iter()
        .filter(|n| !n.deleting && n.spec_revision.as_deref() == Some(rev))
        .filter(|n| {
            !n.current_status()
                .is_some_and(|st| st.phase == NodePhase::Provisioned)
                || crate::bake::baking(n, now, s)
        })
        .filter(|n| !counted_failure(n, rev, now, s))
        .count()
}

fn node<'a>(by_name: &HashMap<&str, &'a Node>, name: &str) -> Result<&'a Node, String> {
    by_name
        .get(name)
        .copied()
        .ok_or(format!("action names unknown node {name}"))
}

impl Checker {
    /// Invariant 3 on the current state (also between passes, after agents reported).
    pub fn check_blast_radius(
        &self,
        state: &State,
        now: Timestamp,
        s: &Settings,
    ) -> Result<(), String> {
        // Every revision, whatever its phase: one that Succeeded before and is the target again
        // (an undo raised its sequence) has a failure budget like any other.
        for r in &state.revisions {
            let f = failed_now(state, &r.name, now, s);
            let bound = self.bounds.get(&r.name).map_or(s.max_failures, |b| b.0);
            if f > bound {
                return Err(format!(
                    "invariant 3: {f} nodes failed revision {} but the blast radius is {bound} \
                     (max_failures {} + nodes in flight when the failure was detected)",
                    r.name, s.max_failures
                ));
            }
        }
        Ok(())
    }

    /// Every invariant that concerns one pass: `before` is what the planner saw, `after` the
    /// API state once the (possibly partially executed) plan was written.
    pub fn check_pass(
        &mut self,
        before: &State,
        p: &Plan,
        after: &State,
        now: Timestamp,
        s: &Settings,
    ) -> Result<(), String> {
        let by_name: HashMap<&str, &Node> =
            before.nodes.iter().map(|n| (n.name.as_str(), n)).collect();
        let before_phase = |r: &str| {
            before
                .revisions
                .iter()
                .find(|x| x.name == r)
                .map(|x| x.phase)
        };
        let mut effective: HashMap<&str, (u64, RevisionPhase)> = before
            .revisions
            .iter()
            .map(|r| (r.name.as_str(), (r.sequence, r.phase)))
            .collect();
        for a in &p.actions {
            if let Action::SetRevisionPhase {
                revision, phase, ..
            } = a
                && let Some(e) = effective.get_mut(revision.as_str())
            {
                e.1 = *phase;
            }
        }
        let newest_is_bad = effective
            .values()
            .max_by_key(|e| e.0)
            .is_some_and(|e| e.1.is_bad());
        // Pauses: globally, or on the revision being rolled out (the newest, when it is good).
        let newest_paused = before
            .revisions
            .iter()
            .max_by_key(|r| r.sequence)
            .is_some_and(|r| r.paused && !newest_is_bad);
        let dispatches = p
            .actions
            .iter()
            .any(|a| matches!(a, Action::Dispatch { .. }));
        if dispatches && (s.paused || newest_paused) {
            return Err("pause: a dispatch while paused".into());
        }

        // Every action says why, naming what it acts on (for the log line and the Event).
        for a in &p.actions {
            let subject = match a {
                Action::SetRevisionPhase { revision, .. }
                | Action::Dispatch { revision, .. }
                | Action::Prune { revision, .. } => revision,
                Action::MarkUnresponsive { node, .. } | Action::RecordDispatch { node, .. } => node,
            };
            if !a.reason().contains(subject.as_str()) {
                return Err(format!("action without a reason naming {subject}: {a:?}"));
            }
        }
        for a in &p.actions {
            match a {
                Action::Dispatch {
                    revision, nodes, ..
                } => {
                    // 2: Failed/Blocked revisions are never dispatched.
                    let eff = effective.get(revision.as_str()).map(|e| e.1);
                    if before_phase(revision).is_none_or(RevisionPhase::is_bad)
                        || eff.is_none_or(RevisionPhase::is_bad)
                    {
                        return Err(format!(
                            "invariant 2: dispatched {revision} which is {eff:?}"
                        ));
                    }
                    // 3: no node gets a revision that more than max_failures nodes have
                    // failed, whatever its phase (a Succeeded revision raised again, the
                    // known-good revision of a rollback, the newest Succeeded for joins).
                    let f = failed_now(before, revision, now, s);
                    if f > s.max_failures {
                        return Err(format!(
                            "invariant 3: dispatched {revision} ({eff:?}) although {f} nodes failed it (max_failures {})",
                            s.max_failures
                        ));
                    }
                    // 4: after a failure, only known-good revisions.
                    if newest_is_bad && eff != Some(RevisionPhase::Succeeded) {
                        return Err(format!(
                            "invariant 4: newest revision failed, yet {revision} ({eff:?}) was dispatched"
                        ));
                    }
                    for d in nodes {
                        let n = node(&by_name, &d.node)?;
                        // 5: never change the spec of a node that is applying.
                        if applying(n) {
                            return Err(format!(
                                "invariant 5: spec of {} changed while its agent applies",
                                n.name
                            ));
                        }
                        if n.deleting || !n.ready {
                            return Err(format!("dispatch to leaving or NotReady node {}", n.name));
                        }
                    }
                }
                Action::MarkUnresponsive { node: name, .. } => {
                    let n = node(&by_name, name)?;
                    if applying(n) {
                        return Err(format!(
                            "invariant 5: withdrew the spec of {name} while its agent applies"
                        ));
                    }
                }
                Action::SetRevisionPhase {
                    revision,
                    phase: RevisionPhase::Failed,
                    failed_nodes,
                    reason,
                    ..
                } if !crate::guard::is_guard_failure(failed_nodes)
                    // A failed analysis fails no node (the analysis simulator checks it).
                    && !reason.starts_with("analysis of revision") =>
                {
                    for f in failed_nodes {
                        // A cause, never a sentence (the configurator writes its word); the
                        // sentence goes into the message, which must say something.
                        if matches!(f.cause, FailureCause::HealthRegressed { .. })
                            || f.message.is_empty()
                        {
                            return Err(format!(
                                "failed node {} of {revision}: cause {:?} outside a guard trip, or no message ({:?})",
                                f.node, f.cause, f.message
                            ));
                        }
                        let n = node(&by_name, &f.node)?;
                        // 6: stale status never counts; 7: leaving/NotReady nodes never fail it.
                        if !counted_failure(n, revision, now, s) {
                            return Err(format!(
                                "invariants 6/7: {} counted as a failure of {revision} but is {n:?}",
                                n.name
                            ));
                        }
                    }
                    let bound = self.bounds.get(revision).map_or(s.max_failures, |b| b.0);
                    // With --max-failed-domains, failures in too many domains fail it earlier.
                    let by_domains = s.domains.and_then(|p| p.max_failed).is_some_and(|m| {
                        let domains: std::collections::BTreeSet<&str> = failed_nodes
                            .iter()
                            .filter_map(|f| by_name.get(f.node.as_str()))
                            .map(|n| n.domain.as_str())
                            .collect();
                        domains.len() > m
                    });
                    if (failed_nodes.len() <= s.max_failures && !by_domains)
                        || failed_nodes.len() > bound
                    {
                        return Err(format!(
                            "invariant 3: {revision} failed with {} failures (max_failures {}, radius {bound})",
                            failed_nodes.len(),
                            s.max_failures
                        ));
                    }
                }
                Action::SetRevisionPhase {
                    revision,
                    phase: RevisionPhase::Succeeded,
                    ..
                } => {
                    let ok = before.nodes.iter().any(|n| {
                        !n.deleting
                            && n.spec_revision.as_deref() == Some(revision)
                            && n.current_status()
                                .is_some_and(|st| st.phase == NodePhase::Provisioned)
                    });
                    if !ok {
                        return Err(format!(
                            "invariant 6: {revision} Succeeded without a current success"
                        ));
                    }
                    // Every counted node finished this very revision, or failed it by the apply timeout
                    // (stale status never counts).
                    let behind = before.nodes.iter().find(|n| {
                        !n.deleting
                            && n.ready
                            && n.unresponsive_since.is_none()
                            && !(n.spec_revision.as_deref() == Some(revision)
                                && (n
                                    .current_status()
                                    .is_some_and(|st| st.phase != NodePhase::Provisioning)
                                    || timed_out(n, now, s)))
                    });
                    if let Some(n) = behind {
                        return Err(format!(
                            "invariant 6: {revision} Succeeded while {} has not finished it: {n:?}",
                            n.name
                        ));
                    }
                }
                _ => {}
            }
        }

        // 1: in flight never exceeds the limit (a shrinking fleet may leave it above; then it
        // must not grow).
        let fl_before = (before.nodes.iter())
            .filter(|n| holds_slot(before, n, now, s))
            .count();
        let fl_after = (after.nodes.iter())
            .filter(|n| holds_slot(after, n, now, s))
            .count();
        let managed = after.nodes.iter().filter(|n| !n.deleting).count();
        let limit = s.update_limit.resolve(managed);
        if fl_after > limit && fl_after > fl_before {
            return Err(format!(
                "invariant 1: {fl_after} nodes in flight, limit {limit}"
            ));
        }
        // 7: nobody holds a slot forever.
        let max_hold = s.pickup_timeout + s.apply_timeout + Duration::from_millis(10 * STEP_MS);
        for n in after.nodes.iter().filter(|n| in_flight(n, now, s)) {
            if let Some(d) = n.current_dispatch()
                && now.saturating_since(d.at) > max_hold
            {
                return Err(format!(
                    "invariant 7: {} holds a slot since {:?}",
                    n.name, d.at
                ));
            }
        }

        // 3: a withdrawal puts a node back on the revision it had; when its agent had failed
        // that revision, the failure counts again: not a dispatch, the node's own earlier
        // verdict (a rollback to that revision then halts).
        for a in &p.actions {
            if let Action::MarkUnresponsive {
                node: name,
                restore: Some(r),
                ..
            } = a
                && after
                    .nodes
                    .iter()
                    .any(|n| n.name == *name && counted_failure(n, r, now, s))
            {
                let e = self
                    .bounds
                    .entry(r.clone())
                    .or_insert((s.max_failures, false));
                e.0 += 1;
            }
        }
        // 3: update the blast-radius bounds from the state after the pass.
        self.check_blast_radius(after, now, s)?;
        self.bounds
            .retain(|r, _| after.revisions.iter().any(|x| &x.name == r));
        for r in &after.revisions {
            let e = self
                .bounds
                .entry(r.name.clone())
                .or_insert((s.max_failures, false));
            if e.1 {
                continue;
            }
            // Frozen once the failure is recorded. A detection whose write was lost is not a
            // detection: the next pass re-evaluates (a timed-out node may have finished since).
            // Over its budget and not Failed (a halted rollback's known-good revision, or a
            // failure whose write was lost), a revision's bound never grows: no node may get it.
            if r.phase == RevisionPhase::Failed {
                e.1 = true;
            } else {
                let f = failed_now(after, &r.name, now, s);
                let bound = s.max_failures.max(f) + potential(after, &r.name, now, s);
                e.0 = if f > s.max_failures {
                    e.0.max(f).min(bound)
                } else {
                    bound
                };
            }
        }
        Ok(())
    }
}
