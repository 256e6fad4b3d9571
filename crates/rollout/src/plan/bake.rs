//! Bake time (`--bake-time`; docs/contract.md, "Bake time"): a node that committed a revision
//! keeps its slot of the update limit (and, with waves, its wave) until it stayed healthy for
//! the bake time, measured on the configurator's clock from when it first saw the node
//! Provisioned (`DispatchRecord::settled_at`, recorded by the pass that sees it). A node whose
//! health regresses during its bake failed the revision (cause
//! [`crate::FailureCause::BakeRegressed`]), counted against `--max-failures` like any failure,
//! for as long as it stays regressed. A revision is Succeeded only once no node of it bakes.
//!
//! The fleet's index keeps the Provisioned nodes by the time they settled
//! ([`crate::fleet`]), so a pass reads only the nodes baking now, the ones whose settle time is
//! not recorded yet, and the regressed ones (usually none).

use std::collections::BTreeSet;

use super::Pass;
use crate::action::Action;
use crate::state::{DispatchRecord, Node};
use crate::time::Timestamp;

impl<'a> Pass<'a> {
    /// Reads the bakes of the fleet into the pass: records the settle time of nodes first seen
    /// Provisioned, puts the baking nodes in flight, and counts the nodes that regressed during
    /// their bake as failures of their spec revision.
    pub(super) fn read_bakes(&mut self) {
        let bake = self.settings.bake_time;
        if bake.is_zero() {
            return;
        }
        let fleet = self.fleet;
        let index = fleet.index();
        let mut failed: BTreeSet<&'a str> = BTreeSet::new();
        for n in index.regressed.iter().filter_map(|name| fleet.get(name)) {
            let (Some(settled), Some(since)) = (settled_at(n), n.health.regressed_since()) else {
                continue;
            };
            if since > settled && since < settled.saturating_add(bake) {
                failed.insert(n.name.as_str());
                self.fail_baked(n);
            }
        }
        for n in index.unsettled.iter().filter_map(|name| fleet.get(name)) {
            let Some(d) = n.current_dispatch() else {
                continue;
            };
            // A record written before settle times were kept (or while the bake was off),
            // finished long ago: it baked already, and says so without holding a slot.
            let start = d.picked_up_at.unwrap_or(d.at);
            let long_done = self.now
                >= start.saturating_add(
                    self.settings.apply_timeout + self.settings.pickup_timeout + bake,
                );
            let at = if long_done { d.at } else { self.now };
            self.records.push(Action::RecordDispatch {
                node: n.name.clone(),
                record: DispatchRecord {
                    settled_at: Some(at),
                    ..d.clone()
                },
                reason: format!(
                    "node {} finished revision {}; its bake of {}s runs from {}",
                    n.name,
                    d.revision,
                    bake.as_secs(),
                    if long_done {
                        "its dispatch (long done)"
                    } else {
                        "now"
                    }
                ),
            });
            if !long_done && !failed.contains(n.name.as_str()) && !self.on_bad(n) {
                self.baking.push((n, self.now.saturating_add(bake)));
            }
        }
        for (settled, name) in index.settled_at.iter().rev() {
            if self.now >= settled.saturating_add(bake) {
                break;
            }
            let Some(n) = fleet.get(name) else {
                continue;
            };
            if !failed.contains(name.as_str()) && !self.on_bad(n) {
                self.baking.push((n, settled.saturating_add(bake)));
            }
        }
        self.in_flight_at
            .extend(self.baking.iter().map(|(n, _)| *n));
    }

    /// `n` regressed during its bake: it counts as a failure of its spec revision, not as a
    /// node that finished it.
    fn fail_baked(&mut self, n: &Node) {
        let Some(&r) = n.spec_revision.as_deref().and_then(|s| self.by_name.get(s)) else {
            return;
        };
        let counted = n.ready && n.unresponsive_since.is_none();
        let t = &mut self.tally[r];
        t.settled = t.settled.saturating_sub(1);
        t.counted_settled = t.counted_settled.saturating_sub(usize::from(counted));
        t.failed += 1;
        t.ready_failed += usize::from(n.ready);
        t.counted_failed += usize::from(counted);
        self.bake_failed.push(n.name.clone());
    }

    /// Nodes baking a revision this pass failed have nothing left to bake: they leave the
    /// nodes in flight and may go back at once.
    pub(super) fn drop_bad_bakes(&mut self) {
        if self.baking.is_empty() {
            return;
        }
        let baking = std::mem::take(&mut self.baking);
        let (bad, keep): (Vec<_>, Vec<_>) = baking.into_iter().partition(|(n, _)| self.on_bad(n));
        self.baking = keep;
        if !bad.is_empty() {
            self.in_flight_at
                .retain(|n| !bad.iter().any(|(b, _)| b.name == n.name));
        }
    }

    /// Whether `n` runs a Failed or Blocked revision: it has nothing left to bake, it goes back.
    fn on_bad(&self, n: &Node) -> bool {
        (n.spec_revision.as_deref())
            .and_then(|s| self.by_name.get(s))
            .is_some_and(|&r| self.phases[r].is_bad())
    }

    /// Whether `n` bakes a revision this pass did not fail: it finishes its bake before it
    /// moves on (as a node applying finishes its apply).
    pub(super) fn holds_bake(&self, n: &Node) -> bool {
        self.baking.iter().any(|(b, _)| b.name == n.name)
    }

    /// The nodes of revision `g` baking now, and when the last of them is done.
    pub(super) fn bake_of(&self, g: usize) -> Option<(usize, Timestamp)> {
        let goal = self.revs[g].name.as_str();
        let of_goal = || {
            self.baking
                .iter()
                .filter(move |(n, _)| n.spec_revision.as_deref() == Some(goal))
        };
        let until = of_goal().map(|(_, t)| *t).max()?;
        Some((of_goal().count(), until))
    }
}

/// When the configurator first saw `n` Provisioned for its spec revision, if it is.
pub(crate) fn settled_at(n: &Node) -> Option<Timestamp> {
    let status = n.current_status()?;
    if status.phase != crate::state::NodePhase::Provisioned {
        return None;
    }
    n.current_dispatch()?.settled_at
}
