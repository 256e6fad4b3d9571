//! The nodes a pass may dispatch, read from the fleet's index ([`crate::fleet`]): per
//! (class, zone) group the movable nodes of every spec revision but the goal, merged by name,
//! plus the unresponsive nodes due for a retry. Picking a wave reads each group only as far as
//! the wave needs (`take` nodes per group at most), so its cost follows the wave, not the fleet.

use std::collections::BTreeMap;
use std::iter::Peekable;

use super::Pass;
use crate::fleet::{Class, class};
use crate::order::round_robin;
use crate::state::Node;

/// Names from several sources, each sorted, merged into one sorted sequence (the sources are
/// disjoint: a node is in one of them).
struct Merge<'a> {
    sources: Vec<Peekable<Box<dyn Iterator<Item = &'a String> + 'a>>>,
}

impl<'a> Iterator for Merge<'a> {
    type Item = &'a String;

    fn next(&mut self) -> Option<&'a String> {
        let mut best: Option<(usize, &'a String)> = None;
        for (i, s) in self.sources.iter_mut().enumerate() {
            if let Some(&x) = s.peek()
                && best.is_none_or(|(_, b)| x < b)
            {
                best = Some((i, x));
            }
        }
        let (i, _) = best?;
        self.sources[i].next()
    }
}

impl<'a> Pass<'a> {
    /// The (class, zone) groups of the nodes that may be dispatched and do not run the goal
    /// `g`, in (class, zone) order, each with its turn offset (configured nodes: how many of
    /// the group already run `g`; unconfigured nodes leave their group when dispatched, so
    /// none) and an iterator by name; a node listed as lacking what it would get (`join` when
    /// unconfigured, else `g`) is left out.
    fn eligible_groups(
        &self,
        g: usize,
        join: usize,
    ) -> Vec<(Class, usize, impl Iterator<Item = &'a Node> + '_)> {
        let goal = self.revs[g].name.as_str();
        let fleet = self.fleet;
        let mut groups: BTreeMap<(Class, &'a str), Vec<_>> = BTreeMap::new();
        for ((class, zone), by_spec) in &fleet.index().movable {
            let sources = groups.entry((*class, zone.as_str())).or_default();
            for (spec, names) in by_spec {
                if spec.as_deref() != Some(goal) {
                    let it: Box<dyn Iterator<Item = &'a String> + 'a> = Box::new(names.iter());
                    sources.push(it.peekable());
                }
            }
        }
        let mut due: BTreeMap<(Class, &'a str), Vec<&'a String>> = BTreeMap::new();
        for &n in &self.retry_due {
            if n.spec_revision.as_deref() != Some(goal) {
                due.entry((class(n), n.zone.as_str()))
                    .or_default()
                    .push(&n.name);
            }
        }
        for (key, names) in due {
            let it: Box<dyn Iterator<Item = &'a String> + 'a> = Box::new(names.into_iter());
            groups.entry(key).or_default().push(it.peekable());
        }
        groups
            .into_iter()
            .map(move |((class, zone), sources)| {
                let offset = fleet
                    .index()
                    .placed
                    .get(&(class, zone.to_owned()))
                    .and_then(|by_spec| by_spec.get(goal))
                    .copied()
                    .unwrap_or(0);
                let nodes = Merge { sources }
                    .filter_map(move |name| fleet.get(name))
                    .filter(move |n| {
                        let gets = if n.spec_revision.is_none() { join } else { g };
                        !self.lacks(gets, n) && !self.holds_bake(n)
                    });
                (class, offset, nodes)
            })
            .collect()
    }

    /// The first `take` eligible nodes in dispatch order ([`crate::order`]).
    pub(super) fn first_eligible(&self, g: usize, join: usize, take: usize) -> Vec<&'a Node> {
        if take == 0 {
            return Vec::new();
        }
        let groups: Vec<(Class, usize, Vec<&'a Node>)> = self
            .eligible_groups(g, join)
            .into_iter()
            .map(|(class, offset, nodes)| (class, offset, nodes.take(take).collect()))
            .collect();
        round_robin(&groups, take)
    }

    /// Every eligible node in dispatch order (failure domains pick from them,
    /// [`Pass::pick_by_domain`]).
    pub(super) fn eligible_in_order(&self, g: usize, join: usize) -> Vec<&'a Node> {
        let groups: Vec<(Class, usize, Vec<&'a Node>)> = self
            .eligible_groups(g, join)
            .into_iter()
            .map(|(class, offset, nodes)| (class, offset, nodes.collect()))
            .collect();
        round_robin(&groups, usize::MAX)
    }

    /// Whether more than `n` nodes are eligible (counting no further than needed).
    pub(super) fn eligible_more_than(&self, g: usize, join: usize, n: usize) -> bool {
        let mut seen = 0;
        for (_, _, nodes) in self.eligible_groups(g, join) {
            seen += nodes.take(n + 1 - seen).count();
            if seen > n {
                return true;
            }
        }
        false
    }

    /// Every eligible node (a rollback after a guard trip orders them by dispatch time).
    pub(super) fn eligible_all(&self, g: usize, join: usize) -> Vec<&'a Node> {
        self.eligible_groups(g, join)
            .into_iter()
            .flat_map(|(_, _, nodes)| nodes)
            .collect()
    }
}
