//! The order in which nodes are dispatched.
//!
//! Nodes with no config first; then canary nodes (`netrollout.io/canary=true`); then
//! round-robin over `topology.kubernetes.io/zone`; then by name. The node running the
//! configurator goes last.

use std::cmp::Ordering;

use crate::state::Node;

/// Sort `nodes` into dispatch order (stable for equal keys, deterministic for distinct names).
pub fn dispatch_order(nodes: &mut Vec<&Node>) {
    fn class(n: &Node) -> (bool, bool, bool) {
        (
            n.runs_configurator,
            n.spec_revision.is_some(),
            !n.is_canary(),
        )
    }
    nodes.sort_by(|a, b| {
        class(a)
            .cmp(&class(b))
            .then_with(|| a.zone().cmp(b.zone()))
            .then_with(|| a.name.cmp(&b.name))
    });
    // Rank of each node within its (class, zone) group: the round-robin turn it is served in.
    let mut ranked: Vec<(usize, &Node)> = Vec::with_capacity(nodes.len());
    let mut rank = 0;
    for (i, n) in nodes.iter().enumerate() {
        let same_group = i > 0 && {
            let prev = nodes[i - 1];
            class(prev) == class(n) && prev.zone() == n.zone()
        };
        rank = if same_group { rank + 1 } else { 0 };
        ranked.push((rank, n));
    }
    ranked.sort_by(|(ra, a), (rb, b)| {
        class(a)
            .cmp(&class(b))
            .then(ra.cmp(rb))
            .then_with(|| a.zone().cmp(b.zone()))
            .then_with(|| a.name.cmp(&b.name))
            .then(Ordering::Equal)
    });
    nodes.clear();
    nodes.extend(ranked.into_iter().map(|(_, n)| n));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{CANARY_LABEL, ZONE_LABEL};

    fn n(name: &str, zone: &str, canary: bool, configured: bool) -> Node {
        let mut node = Node::new(name);
        node.labels.insert(ZONE_LABEL.into(), zone.into());
        if canary {
            node.labels.insert(CANARY_LABEL.into(), "true".into());
        }
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
