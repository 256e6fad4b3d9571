//! Pre-flight (docs/contract.md, "Pre-flight"): a revision is not rolled out while a node it
//! still has to reach lacks what the revision's config for that node needs, and no node ever
//! gets a revision that lists it as lacking. The configurator fills [`Revision::unmet`]
//! (`crate::state`) from the nodes' reported capabilities; the planner only reads it.

use super::{Decision, Pass};
use crate::action::Mode;
use crate::state::{Node, Unmet};

impl Pass<'_> {
    /// The managed nodes that do not run the rollout target yet and lack what it needs for
    /// them, and whether that holds the target: while a revision rolls out (Pending or
    /// Progressing, or raised from Succeeded or Superseded: [`Pass::rolling_out`], from the pass
    /// that raised it) and any node is listed, it is dispatched to no node (nothing is half
    /// rolled out because of a node that cannot apply it). A Succeeded target the whole fleet
    /// runs is not held (a node that joins lacking what it needs just does not get it), nor is
    /// a rollback (it returns nodes to what they ran): their lacking nodes are only skipped
    /// ([`Pass::lacks`]).
    pub(super) fn preflight(&self, d: &Decision) -> (Vec<Unmet>, bool) {
        let unmet = self.unmet_of_goal(d);
        let held = !unmet.is_empty() && d.goal.is_some_and(|g| self.rolling_out(g));
        (unmet, held)
    }

    fn unmet_of_goal(&self, d: &Decision) -> Vec<Unmet> {
        let (Some(g), Mode::RollingOut | Mode::Paused) = (d.goal, &d.mode) else {
            return Vec::new();
        };
        let unmet = &self.revs[g].unmet;
        if unmet.is_empty() {
            return Vec::new();
        }
        let goal = self.revs[g].name.as_str();
        let targeted = |name: &str| {
            self.fleet
                .get(name)
                .is_some_and(|n| !n.deleting && n.spec_revision.as_deref() != Some(goal))
        };
        unmet
            .iter()
            .filter(|u| targeted(&u.node))
            .cloned()
            .collect()
    }

    /// Whether `n` is listed as lacking what the revision at index `r` needs.
    pub(super) fn lacks(&self, r: usize, n: &Node) -> bool {
        self.revs[r].unmet.iter().any(|u| u.node == n.name)
    }
}
