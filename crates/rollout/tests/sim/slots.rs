//! The invariants about slots, checked after a pass that was written in full: with a window no
//! slot is idle while a node could move (failure domains aside), and the plan's awaited nodes
//! are the ones in flight.

use netrollout_rollout::{DomainOrder, Mode, Node, NodePhase, Plan, Settings, State, Timestamp};

use crate::check::holds_slot;

/// Could move now: Ready, not leaving, not on `target`, finished with its spec (or has none),
/// not in flight, not baking, and not waiting out an earlier withdrawal.
fn movable(n: &Node, target: &str, now: Timestamp, s: &Settings) -> bool {
    n.ready
        && !n.deleting
        && n.spec_revision.as_deref() != Some(target)
        && (n.spec_revision.is_none()
            || n.current_status()
                .is_some_and(|st| st.phase != NodePhase::Provisioning))
        && n.unresponsive_since
            .is_none_or(|t| now >= t.saturating_add(s.pickup_timeout))
}

/// Window strategy (work conservation): after a fully executed pass that rolls out or back, a
/// slot is idle only when no node is left that could move. `after` is the API state once the
/// whole plan was written.
pub fn check_window(p: &Plan, after: &State, now: Timestamp, s: &Settings) -> Result<(), String> {
    let (Mode::RollingOut | Mode::RollingBack, Some(target)) = (&p.summary.mode, &p.summary.target)
    else {
        return Ok(());
    };
    // Held by pre-flight, the analysis gate or the maintenance schedule: nothing moves to the
    // target (a schedule hold is checked to be legitimate by the schedule scenario, S2).
    if p.summary.held
        || p.summary.analysis.as_ref().is_some_and(|g| g.held)
        || p.summary.schedule.is_some()
    {
        return Ok(());
    }
    // Held by an approval gate or the start checks (computed from the API state).
    if p.summary.mode == Mode::RollingOut && crate::approval::held(after, target, s) {
        return Ok(());
    }
    // Pre-flight: a node never gets a revision that lists it as lacking (a joining node may
    // be due the newest Succeeded revision instead of the target).
    let lacks = |n: &Node| {
        after.revisions.iter().any(|r| {
            (r.name == *target || n.spec_revision.is_none())
                && r.unmet.iter().any(|u| u.node == n.name)
        })
    };
    let managed = after.nodes.iter().filter(|n| !n.deleting).count();
    let limit = s.update_limit.resolve(managed);
    let in_flight = (after.nodes.iter())
        .filter(|n| holds_slot(after, n, now, s))
        .count();
    if in_flight >= limit {
        return Ok(());
    }
    // Failure domains: a node may wait for its domain's slot; one after the other, for the
    // domain before it (but never with nothing in flight).
    let domain_has_room = |n: &Node| match s.domains {
        None => true,
        Some(p) if p.order == DomainOrder::Sequential && in_flight > 0 => false,
        Some(p) => {
            let load = (after.nodes.iter())
                .filter(|m| m.domain == n.domain && holds_slot(after, m, now, s))
                .count();
            load < p.cap()
        }
    };
    match after.nodes.iter().find(|n| {
        movable(n, target, now, s)
            && !holds_slot(after, n, now, s)
            && !lacks(n)
            && domain_has_room(n)
    }) {
        Some(n) => Err(format!(
            "window: {in_flight} of {limit} slots in use after the pass, yet {} could move to {target}: {n:?}",
            n.name
        )),
        None => Ok(()),
    }
}

/// After a fully executed pass, the plan's awaited nodes are exactly the nodes in flight (the
/// configurator skips its debounce once all of them have reported).
pub fn check_awaited(p: &Plan, after: &State, now: Timestamp, s: &Settings) -> Result<(), String> {
    let mut awaited: Vec<&str> = p.summary.awaited.iter().map(String::as_str).collect();
    awaited.sort_unstable();
    let mut flying: Vec<&str> = after
        .nodes
        .iter()
        .filter(|n| holds_slot(after, n, now, s))
        .map(|n| n.name.as_str())
        .collect();
    flying.sort_unstable();
    if awaited != flying || awaited.len() != p.summary.in_flight {
        return Err(format!(
            "awaited {awaited:?} ({} in flight in the summary), but in flight after the pass: {flying:?}",
            p.summary.in_flight
        ));
    }
    Ok(())
}
