//! Failure domains in the simulator (docs/contract.md, "Failure domains"): the chaos scenarios
//! ([`chaos_domains`]) with nodes in racks (some without the label), a random
//! cap per rack, parallel or sequential racks and a random budget of failed racks.
//!
//! Invariants, after every pass (from the API state, independently of the planner):
//! - D1: no rack ever has more nodes in flight than `--max-in-flight-per-domain`, counting every
//!   revision (nodes without the label form one domain).
//! - D2: with `--domain-order=sequential`, the nodes in flight to the target are all in one rack.
//! - D3: no node is dispatched a revision whose failed Ready nodes span more racks than
//!   `--max-failed-domains`.
//!
//! The chaos checks hold as well (a window leaves a slot idle only for a node whose rack is
//! full, or, in sequence, while a rack is in flight), and the healed fleet converges.

use std::collections::{BTreeMap, BTreeSet};

use netrollout_rollout::{
    Action, DomainOrder, DomainPolicy, NodePhase, Plan, Settings, State, Timestamp,
};

use crate::check::in_flight;
use crate::rng::Rng;
use crate::scenario::{Size, chaos_with};
use crate::world::World;

/// [`crate::scenario::chaos`] with failure domains (random racks, caps, order and budget; even
/// seeds use waves, odd seeds a window), checking their invariants too.
pub fn chaos_domains(seed: u64) -> (Result<(), String>, Vec<String>) {
    let strategy = netrollout_rollout::RolloutStrategy::ALL[(seed % 2) as usize];
    chaos_with(seed, strategy, Size::Small, true)
}

/// A random policy: a cap of 1 or 2, either order, no budget or 0-2 failed racks.
pub fn random_policy(rng: &mut Rng) -> DomainPolicy {
    DomainPolicy {
        max_in_flight: rng.range(1, 2) as usize,
        order: DomainOrder::ALL[rng.below(2) as usize],
        max_failed: rng.chance(60).then(|| rng.range(0, 2) as usize),
    }
}

/// Puts node `name` into one of three racks, or (one in five) leaves it without the label.
pub fn place_in_a_rack(w: &mut World, name: &str) {
    let rack = match w.rng.below(5) {
        0 => String::new(),
        r => format!("rack-{}", r % 3),
    };
    let line = match rack.as_str() {
        "" => format!("  {name}: rack-none"),
        r => format!("  {name}: {r}"),
    };
    w.log.push(line);
    if let Some(n) = w.node_mut(name) {
        n.domain = rack;
    }
}

/// Ready, not leaving, on `rev`, and failed it (reported Failed, or its apply timed out).
fn failed(n: &netrollout_rollout::Node, rev: &str, now: Timestamp, s: &Settings) -> bool {
    let Some(st) = n.current_status() else {
        return false;
    };
    let timed_out = st.phase == NodePhase::Provisioning
        && n.current_dispatch()
            .and_then(|d| d.picked_up_at)
            .is_some_and(|t| now >= t.saturating_add(s.apply_timeout));
    n.ready
        && !n.deleting
        && n.spec_revision.as_deref() == Some(rev)
        && (st.phase == NodePhase::Failed || timed_out)
}

/// D1-D3 for one pass: `before` is what the planner saw, `after` the API state once the
/// (possibly partially written) plan was executed. Returns a trace line when a node waits
/// for its rack while the update limit has room.
pub fn check(
    before: &State,
    p: &Plan,
    after: &State,
    now: Timestamp,
    s: &Settings,
) -> Result<Option<String>, String> {
    let Some(policy) = s.domains else {
        return Ok(None);
    };
    let mut load: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for n in after.nodes.iter().filter(|n| in_flight(n, now, s)) {
        load.entry(n.domain.as_str()).or_default().push(&n.name);
    }
    if let Some((d, nodes)) = load.iter().find(|(_, v)| v.len() > policy.cap()) {
        return Err(format!(
            "D1: {} nodes of domain {d:?} in flight ({nodes:?}), cap {}",
            nodes.len(),
            policy.cap()
        ));
    }
    if policy.order == DomainOrder::Sequential
        && let Some(target) = &p.summary.target
    {
        let racks: BTreeSet<&str> = (after.nodes.iter())
            .filter(|n| n.spec_revision.as_ref() == Some(target) && in_flight(n, now, s))
            .map(|n| n.domain.as_str())
            .collect();
        if racks.len() > 1 {
            return Err(format!(
                "D2: nodes of {racks:?} in flight to {target} at once with --domain-order=sequential"
            ));
        }
    }
    for a in &p.actions {
        let Action::Dispatch { revision, .. } = a else {
            continue;
        };
        let racks: BTreeSet<&str> = (before.nodes.iter())
            .filter(|n| failed(n, revision, now, s))
            .map(|n| n.domain.as_str())
            .collect();
        if policy.max_failed.is_some_and(|m| racks.len() > m) {
            return Err(format!(
                "D3: dispatched {revision} although its failures span {racks:?} (--max-failed-domains={:?})",
                policy.max_failed
            ));
        }
    }
    // Not a check: the coverage list asks that some scenario got here.
    let waiting = after.nodes.iter().find(|n| {
        n.ready
            && !n.deleting
            && !in_flight(n, now, s)
            && n.spec_revision != p.summary.target
            && load
                .get(n.domain.as_str())
                .is_some_and(|v| v.len() >= policy.cap())
    });
    Ok(waiting
        .filter(|_| p.summary.in_flight < p.summary.limit)
        .map(|n| format!("  {} waits for its domain {:?}", n.name, n.domain)))
}
