//! The order in which nodes are dispatched.
//!
//! Nodes with no config first; then canary nodes (`netrollout.io/canary=true`); then
//! round-robin over `topology.kubernetes.io/zone`; then by name. The node running the
//! configurator goes last.

use std::collections::BTreeMap;

use crate::state::Node;

/// Sort `nodes` into dispatch order (deterministic: node names are unique).
pub fn dispatch_order(nodes: &mut Vec<&Node>) {
    let all = std::mem::take(nodes);
    let n = all.len();
    *nodes = first_in_dispatch_order(all, n);
}

/// The first `take` of `nodes` in dispatch order, without sorting the rest: each (class, zone)
/// group only ever serves its `take` alphabetically first nodes, so the work is linear in the
/// number of nodes plus `take log take` per group.
pub fn first_in_dispatch_order<'a>(nodes: Vec<&'a Node>, take: usize) -> Vec<&'a Node> {
    if take == 0 {
        return Vec::new();
    }
    // (runs the configurator, has config, not a canary): false sorts first; then the zone.
    type Group<'a> = ((bool, bool, bool), &'a str);
    let mut groups: BTreeMap<Group<'a>, Vec<&'a Node>> = BTreeMap::new();
    for n in nodes {
        let class = (
            n.runs_configurator,
            n.spec_revision.is_some(),
            !n.is_canary(),
        );
        groups.entry((class, n.zone())).or_default().push(n);
    }
    for v in groups.values_mut() {
        if v.len() > take {
            v.select_nth_unstable_by(take, |a, b| a.name.cmp(&b.name));
            v.truncate(take);
        }
        v.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    }
    let mut out = Vec::with_capacity(take.min(groups.values().map(Vec::len).sum()));
    let mut groups = groups.into_iter().peekable();
    while let Some(((class, _), first)) = groups.next() {
        // All zones of one class, served round-robin: every zone's first node, then the
        // second, and so on.
        let mut zones = vec![first];
        while let Some((_, v)) = groups.next_if(|((c, _), _)| *c == class) {
            zones.push(v);
        }
        let turns = zones.iter().map(Vec::len).max().unwrap_or(0);
        for turn in 0..turns {
            for n in zones.iter().filter_map(|z| z.get(turn)) {
                if out.len() == take {
                    return out;
                }
                out.push(*n);
            }
        }
    }
    out
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
