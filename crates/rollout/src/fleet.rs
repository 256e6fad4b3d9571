//! [`Fleet`]: the planner's nodes kept by name, with an index of them by state that a caller
//! keeps up to date node by node ([`Fleet::upsert`], [`Fleet::remove`]), so that a pass
//! ([`crate::plan_with`]) costs what is in flight and what it dispatches, not the fleet's size.
//!
//! The index holds only what does not depend on the clock: per spec revision the counts a pass
//! tallies, the nodes whose condition the clock decides (dispatched, no outcome yet: `active`),
//! the nodes that may be dispatched (grouped as the dispatch order needs them: class, zone,
//! spec revision, name), the nodes marked unresponsive that may be retried later, and the
//! regressed nodes. A pass reads the clock only for the `active` and the unresponsive nodes.
//! [`Fleet::from_nodes`] builds the same index from scratch: an incrementally kept fleet must
//! equal it (the simulator checks that after every step).

use std::collections::{BTreeMap, BTreeSet};

use crate::state::{Node, NodePhase};

/// Dispatch-order class of a node: (runs the configurator, has config, not a canary); false
/// sorts first ([`crate::order`]).
pub(crate) type Class = (bool, bool, bool);

/// The planner's nodes by name, with their index by state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fleet {
    nodes: BTreeMap<String, Node>,
    index: Index,
}

/// What a pass would otherwise scan the fleet for (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Index {
    /// Nodes not being deleted.
    pub managed: usize,
    /// Of those, NotReady.
    pub not_ready: usize,
    /// Of those, counted (Ready, not marked unresponsive).
    pub counted: usize,
    /// Of those, canaries (an approval gate `canary` holds once they run a revision).
    pub canaries: usize,
    /// Per spec revision name: the counts that do not depend on the clock.
    pub tallies: BTreeMap<String, Counts>,
    /// Managed nodes with a spec revision and no outcome for it: the clock decides whether they
    /// are in flight, overdue or timed out.
    pub active: BTreeSet<String>,
    /// Ready managed nodes not marked unresponsive that are unconfigured or have an outcome
    /// for their spec: by (class, zone), then spec revision, the names.
    pub movable: BTreeMap<(Class, String), BTreeMap<Option<String>, BTreeSet<String>>>,
    /// Like `movable` but marked unresponsive: movable once the pickup timeout passed again.
    pub retry: BTreeSet<String>,
    /// Ready managed nodes whose health regressed.
    pub regressed: BTreeSet<String>,
    /// Managed configured nodes by (class, zone), then spec revision: how many. A zone's turn
    /// in the dispatch order starts after its nodes already on the revision nodes move to
    /// ([`crate::order::round_robin`]), so the order does not depend on how a wave was split
    /// over passes.
    pub placed: BTreeMap<(Class, String), BTreeMap<String, usize>>,
    /// Managed configured nodes by spec revision, then failure domain: how many (a domain
    /// with nodes on the goal has started, `--domain-order=sequential`).
    pub domains: BTreeMap<String, BTreeMap<String, usize>>,
    /// Ready managed nodes that failed their spec revision, by spec revision, then failure
    /// domain: how many (`--max-failed-domains`).
    pub failed_domains: BTreeMap<String, BTreeMap<String, usize>>,
    /// Provisioned managed nodes whose dispatch record has no settle time yet (`--bake-time`
    /// records it).
    pub unsettled: BTreeSet<String>,
    /// Provisioned managed nodes by the time they settled, oldest first: a pass reads only the
    /// newest ones, those still baking.
    pub settled_at: BTreeSet<(crate::time::Timestamp, String)>,
}

/// Counts of the managed nodes whose spec names one revision, without the clock (an apply
/// timeout is added by the pass).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub nodes: usize,
    pub settled: usize,
    pub failed: usize,
    pub ready_failed: usize,
    pub counted: usize,
    pub counted_settled: usize,
    pub counted_failed: usize,
}

/// Where a managed node stands without the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Unconfigured,
    Settled,
    Failed,
    /// Dispatched, no outcome yet.
    Active,
}

fn standing(n: &Node) -> Standing {
    if n.spec_revision.is_none() {
        return Standing::Unconfigured;
    }
    match n.current_status().map(|s| s.phase) {
        Some(NodePhase::Provisioned) => Standing::Settled,
        Some(NodePhase::Failed) => Standing::Failed,
        _ => Standing::Active,
    }
}

/// The dispatch-order class of `n`.
pub(crate) fn class(n: &Node) -> Class {
    (
        n.runs_configurator,
        n.spec_revision.is_some(),
        !n.is_canary(),
    )
}

impl Fleet {
    /// The fleet of `nodes`, indexed from scratch (a later node of the same name replaces an
    /// earlier one).
    pub fn from_nodes(nodes: impl IntoIterator<Item = Node>) -> Self {
        let mut fleet = Fleet::default();
        for n in nodes {
            fleet.upsert(n);
        }
        fleet
    }

    /// Node `n` is now as given (added or replaced); O(log N).
    pub fn upsert(&mut self, n: Node) {
        if let Some(old) = self.nodes.remove(&n.name) {
            self.index.apply(&old, false);
        }
        self.index.apply(&n, true);
        self.nodes.insert(n.name.clone(), n);
    }

    /// Node `name` is gone; O(log N).
    pub fn remove(&mut self, name: &str) -> Option<Node> {
        let old = self.nodes.remove(name)?;
        self.index.apply(&old, false);
        Some(old)
    }

    /// Node `name`.
    pub fn get(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// Every node, by name.
    pub fn nodes(&self) -> impl ExactSizeIterator<Item = &Node> + Clone {
        self.nodes.values()
    }

    /// How many nodes (including those being deleted).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there is no node.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub(crate) fn index(&self) -> &Index {
        &self.index
    }
}

impl Index {
    /// Adds (`add`) or takes away what node `n` contributes.
    fn apply(&mut self, n: &Node, add: bool) {
        if n.deleting {
            return;
        }
        let step = |c: &mut usize, by: bool| {
            if by {
                if add {
                    *c += 1;
                } else {
                    *c -= 1;
                }
            }
        };
        let counted = n.ready && n.unresponsive_since.is_none();
        let s = standing(n);
        step(&mut self.managed, true);
        step(&mut self.not_ready, !n.ready);
        step(&mut self.counted, counted);
        step(&mut self.canaries, n.canary);
        if let Some(spec) = &n.spec_revision {
            let t = self.tallies.entry(spec.clone()).or_default();
            let (settled, failed) = (s == Standing::Settled, s == Standing::Failed);
            step(&mut t.nodes, true);
            step(&mut t.settled, settled);
            step(&mut t.failed, failed);
            step(&mut t.ready_failed, failed && n.ready);
            step(&mut t.counted, counted);
            step(&mut t.counted_settled, settled && counted);
            step(&mut t.counted_failed, failed && counted);
            if t.nodes == 0 {
                self.tallies.remove(spec);
            }
            let key = (class(n), n.zone.clone());
            let by_spec = self.placed.entry(key.clone()).or_default();
            let c = by_spec.entry(spec.clone()).or_default();
            step(c, true);
            if *c == 0 {
                by_spec.remove(spec);
            }
            if by_spec.is_empty() {
                self.placed.remove(&key);
            }
            count_in(&mut self.domains, spec, &n.domain, true, add);
            count_in(
                &mut self.failed_domains,
                spec,
                &n.domain,
                failed && n.ready,
                add,
            );
        }
        let set = |set: &mut BTreeSet<String>, on: bool| {
            if on {
                if add {
                    set.insert(n.name.clone());
                } else {
                    set.remove(&n.name);
                }
            }
        };
        set(&mut self.active, s == Standing::Active);
        if s == Standing::Settled
            && let Some(d) = n.current_dispatch()
        {
            match d.settled_at {
                None => set(&mut self.unsettled, true),
                Some(t) if add => {
                    self.settled_at.insert((t, n.name.clone()));
                }
                Some(t) => {
                    self.settled_at.remove(&(t, n.name.clone()));
                }
            }
        }
        set(
            &mut self.regressed,
            n.ready && n.health.regressed_since().is_some(),
        );
        if !n.ready || s == Standing::Active {
            return;
        }
        if n.unresponsive_since.is_some() {
            set(&mut self.retry, true);
            return;
        }
        let key = (class(n), n.zone.clone());
        let by_spec = self.movable.entry(key.clone()).or_default();
        let names = by_spec.entry(n.spec_revision.clone()).or_default();
        if add {
            names.insert(n.name.clone());
        } else {
            names.remove(&n.name);
        }
        if names.is_empty() {
            by_spec.remove(&n.spec_revision);
        }
        if by_spec.is_empty() {
            self.movable.remove(&key);
        }
    }
}

/// Adds one to (or takes one from) the count of `domain` under `spec` when `on`, dropping
/// entries that reach zero (so a fleet kept node by node equals one indexed from scratch).
fn count_in(
    map: &mut BTreeMap<String, BTreeMap<String, usize>>,
    spec: &str,
    domain: &str,
    on: bool,
    add: bool,
) {
    if !on {
        return;
    }
    let by_domain = map.entry(spec.to_owned()).or_default();
    let c = by_domain.entry(domain.to_owned()).or_default();
    if add {
        *c += 1;
    } else {
        *c -= 1;
    }
    if *c == 0 {
        by_domain.remove(domain);
    }
    if by_domain.is_empty() {
        map.remove(spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::NodeStatus;

    fn node(name: &str, spec: Option<&str>, phase: Option<NodePhase>) -> Node {
        let mut n = Node::new(name);
        n.spec_revision = spec.map(str::to_owned);
        n.status = phase.map(|phase| NodeStatus {
            observed_revision: spec.unwrap_or_default().to_owned(),
            phase,
            started_at: None,
            finished_at: None,
            reason: None,
            message: None,
        });
        n
    }

    #[test]
    fn a_fleet_kept_node_by_node_equals_one_indexed_from_scratch() {
        let mut kept = Fleet::default();
        kept.upsert(node("a", None, None));
        kept.upsert(node("b", Some("r1"), Some(NodePhase::Provisioning)));
        kept.upsert(node("c", Some("r1"), Some(NodePhase::Failed)));
        kept.upsert(node("b", Some("r1"), Some(NodePhase::Provisioned)));
        kept.upsert(node("a", Some("r2"), None));
        kept.remove("c");
        let scratch = Fleet::from_nodes([
            node("a", Some("r2"), None),
            node("b", Some("r1"), Some(NodePhase::Provisioned)),
        ]);
        assert_eq!(kept, scratch);
        assert_eq!(kept.index().active.len(), 1);
        assert_eq!(kept.index().tallies["r1"].settled, 1);
        assert!(!kept.index().tallies.contains_key("r3"));
    }
}
