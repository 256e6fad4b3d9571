//! The order in which nodes are dispatched.
//!
//! Nodes with no config first; then canary nodes (`netrollout.io/canary=true`); then
//! round-robin over `topology.kubernetes.io/zone`; then by name. The node running the
//! configurator goes last. The planner continues the round where earlier passes left it (a
//! zone's turn counts its nodes already on the revision being rolled out,
//! [`round_robin`]), so the order does not depend on how many passes a wave took.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::fleet::Class;
use crate::state::Node;

/// Sort `nodes` into dispatch order (deterministic: node names are unique).
pub fn dispatch_order(nodes: &mut Vec<&Node>) {
    let all = std::mem::take(nodes);
    let n = all.len();
    *nodes = first_in_dispatch_order(all, n);
}

/// The first `take` of `nodes` in dispatch order, without sorting the rest (see
/// [`first_in_dispatch_order_of`]).
pub fn first_in_dispatch_order(nodes: Vec<&Node>, take: usize) -> Vec<&Node> {
    first_in_dispatch_order_of(nodes, take)
}

/// A node ordered by name (names are unique).
struct ByName<'a>(&'a Node);

impl PartialEq for ByName<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for ByName<'_> {}

impl PartialOrd for ByName<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByName<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.name.cmp(&other.0.name)
    }
}

/// The first `take` of `nodes` in dispatch order, in one pass and without collecting them: each
/// (class, zone) group only ever serves its `take` alphabetically first nodes, so each group
/// keeps those in a bounded heap. The work is linear in the number of nodes (one name
/// comparison for most) plus `take log take` per group.
pub fn first_in_dispatch_order_of<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    take: usize,
) -> Vec<&'a Node> {
    if take == 0 {
        return Vec::new();
    }
    // Few groups (classes × zones): a list searched from the group of the previous node.
    let mut groups: Vec<((Class, &'a str), BinaryHeap<ByName<'a>>)> = Vec::new();
    let mut last = 0;
    for n in nodes {
        let key = (crate::fleet::class(n), n.zone());
        let g = match groups.get(last).filter(|(k, _)| *k == key) {
            Some(_) => last,
            None => match groups.iter().position(|(k, _)| *k == key) {
                Some(g) => g,
                None => {
                    groups.push((key, BinaryHeap::new()));
                    groups.len() - 1
                }
            },
        };
        last = g;
        let heap = &mut groups[g].1;
        if heap.len() < take {
            heap.push(ByName(n));
        } else if let Some(mut top) = heap.peek_mut()
            && n.name < top.0.name
        {
            *top = ByName(n);
        }
    }
    groups.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let groups: Vec<(Class, usize, Vec<&'a Node>)> = groups
        .into_iter()
        .map(|((class, _), heap)| {
            let names = heap.into_sorted_vec().into_iter().map(|n| n.0).collect();
            (class, 0, names)
        })
        .collect();
    round_robin(&groups, take)
}

/// The first `take` nodes of `groups` in dispatch order. `groups` holds each (class, zone)
/// group's first nodes by name, sorted by (class, zone), each with its turn offset (how many
/// turns the group already had: its nodes already on the revision they move to). The zones of
/// one class are served round-robin, class by class: a node's turn is its group's offset plus
/// its place in the group, and turns go in order, the zones of one turn in zone order. With
/// offsets the round continues where earlier passes left it, so a wave split over several
/// passes is dispatched in the order one pass would give.
pub(crate) fn round_robin<'a>(
    groups: &[(Class, usize, Vec<&'a Node>)],
    take: usize,
) -> Vec<&'a Node> {
    let mut turns: Vec<(Class, usize, usize, &'a Node)> = groups
        .iter()
        .enumerate()
        .flat_map(|(g, (class, offset, nodes))| {
            (nodes.iter().enumerate()).map(move |(i, n)| (*class, offset + i, g, *n))
        })
        .collect();
    turns.sort_unstable_by_key(|&(class, turn, g, _)| (class, turn, g));
    turns.into_iter().take(take).map(|t| t.3).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(name: &str, zone: &str, canary: bool, configured: bool) -> Node {
        let mut node = Node::new(name);
        node.zone = zone.into();
        node.canary = canary;
        node.spec_revision = configured.then(|| "r1".to_string());
        node
    }

    fn names(nodes: &[&Node]) -> Vec<String> {
        nodes.iter().map(|n| n.name.clone()).collect()
    }

    #[test]
    fn unconfigured_nodes_come_first_then_canaries_then_zones_round_robin_then_names() {
        let all = [
            n("a1", "a", false, true),
            n("a2", "a", false, true),
            n("a3", "a", false, true),
            n("b1", "b", false, true),
            n("b2", "b", false, true),
            n("c9", "c", true, true),
            n("z0", "b", false, false),
        ];
        let mut v: Vec<&Node> = all.iter().collect();
        dispatch_order(&mut v);
        assert_eq!(names(&v), ["z0", "c9", "a1", "b1", "a2", "b2", "a3"]);
    }

    /// The rule written out the slow, obvious way: sort by (class, zone, name), number each
    /// node within its (class, zone) group, sort by (class, number, zone, name).
    fn reference_order<'a>(nodes: &[&'a Node]) -> Vec<&'a Node> {
        let class = |n: &Node| {
            (
                n.runs_configurator,
                n.spec_revision.is_some(),
                !n.is_canary(),
            )
        };
        let mut v: Vec<&Node> = nodes.to_vec();
        v.sort_by(|a, b| (class(a), a.zone(), &a.name).cmp(&(class(b), b.zone(), &b.name)));
        let mut ranked: Vec<(usize, &Node)> = Vec::new();
        for (i, n) in v.iter().enumerate() {
            let same = i > 0 && class(v[i - 1]) == class(n) && v[i - 1].zone() == n.zone();
            let rank = if same { ranked[i - 1].0 + 1 } else { 0 };
            ranked.push((rank, n));
        }
        ranked.sort_by(|(ra, a), (rb, b)| {
            (class(a), ra, a.zone(), &a.name).cmp(&(class(b), rb, b.zone(), &b.name))
        });
        ranked.into_iter().map(|(_, n)| n).collect()
    }

    #[test]
    fn the_first_k_nodes_in_dispatch_order_match_the_full_order_for_any_k() {
        let mut x: u64 = 42;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        for _ in 0..200 {
            let all: Vec<Node> = (0..next(40))
                .map(|i| {
                    let mut node = n(
                        &format!("n{:03}", next(1000) * 100 + i),
                        &format!("z{}", next(4)),
                        next(5) == 0,
                        next(3) > 0,
                    );
                    node.runs_configurator = next(30) == 0;
                    node
                })
                .collect();
            let refs: Vec<&Node> = all.iter().collect();
            let expected = names(&reference_order(&refs));
            for k in 0..=refs.len() + 1 {
                let got = names(&first_in_dispatch_order(refs.clone(), k));
                assert_eq!(got, expected[..k.min(expected.len())], "k = {k}");
            }
        }
    }

    #[test]
    fn the_node_running_the_configurator_goes_last_even_without_config() {
        let mut me = n("a0", "a", true, false);
        me.runs_configurator = true;
        let all = [me, n("b1", "b", false, true)];
        let mut v: Vec<&Node> = all.iter().collect();
        dispatch_order(&mut v);
        assert_eq!(names(&v), ["b1", "a0"]);
    }
}
