//! The failure-domain step of a pass ([`crate::domain`]; docs/contract.md, "Failure domains"):
//! which of the eligible nodes a dispatch may take under the per-domain cap and the domain
//! order, and how many domains a revision's failures span.

use std::collections::{BTreeSet, HashMap};

use super::Pass;
use crate::domain::{DomainOrder, DomainPolicy};
use crate::state::Node;

impl<'a> Pass<'a> {
    /// The first `free` of `ordered` (eligible nodes in dispatch order, moving to the goal `g`
    /// or joining) that `policy` lets go now: a node is skipped while its domain has
    /// `policy.cap()` nodes in flight (of any revision, counting the ones picked before it),
    /// and, with [`DomainOrder::Sequential`], while its domain is not the one being rolled
    /// out ([`Pass::current_domains`]).
    pub(super) fn pick_by_domain(
        &self,
        policy: DomainPolicy,
        g: usize,
        ordered: &[&'a Node],
        free: usize,
    ) -> Vec<&'a Node> {
        let cap = policy.cap();
        let mut load: HashMap<&str, usize> = HashMap::new();
        for n in &self.in_flight_at {
            *load.entry(n.domain.as_str()).or_default() += 1;
        }
        let current = match policy.order {
            DomainOrder::Parallel => None,
            DomainOrder::Sequential => Some(self.current_domains(g, ordered)),
        };
        let mut picked = Vec::new();
        for &n in ordered {
            if picked.len() >= free {
                break;
            }
            let d = n.domain.as_str();
            if current.as_ref().is_some_and(|c| !c.contains(d)) {
                continue;
            }
            let l = load.entry(d).or_default();
            if *l >= cap {
                continue;
            }
            *l += 1;
            picked.push(n);
        }
        picked
    }

    /// With domains one after the other: the domains whose nodes may be dispatched now. While
    /// nodes of some domain are in flight to the goal `g`, only those domains (the current one
    /// finishes first). Otherwise the first domain in dispatch order that already has nodes on
    /// `g` and still has eligible ones (a domain started, e.g. before a restart, is finished
    /// first), else the domain of the first eligible node: canaries' and zones' order decide
    /// which domain goes next.
    fn current_domains(&self, g: usize, ordered: &[&'a Node]) -> BTreeSet<&'a str> {
        let goal = self.revs[g].name.as_str();
        let busy: BTreeSet<&'a str> = self
            .in_flight_at
            .iter()
            .filter(|n| n.spec_revision.as_deref() == Some(goal))
            .map(|n| n.domain.as_str())
            .collect();
        if !busy.is_empty() {
            return busy;
        }
        let started = self.fleet.index().domains.get(goal);
        let first_started = ordered
            .iter()
            .find(|n| started.is_some_and(|s| s.contains_key(&n.domain)));
        first_started
            .or(ordered.first())
            .map(|n| n.domain.as_str())
            .into_iter()
            .collect()
    }

    /// How many failure domains hold a Ready managed node that failed revision `i` (reported
    /// Failed, or its apply timed out in this pass).
    pub(super) fn failed_domains(&self, i: usize) -> usize {
        let name = self.revs[i].name.as_str();
        let mut domains: BTreeSet<&str> = self
            .fleet
            .index()
            .failed_domains
            .get(name)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        domains.extend(
            self.timed_out
                .iter()
                .filter(|(r, _)| *r == i)
                .map(|(_, d)| *d),
        );
        domains.len()
    }

    /// Whether revision `i`'s failures span more domains than `--max-failed-domains` allows.
    pub(super) fn over_domain_budget(&self, i: usize) -> bool {
        let Some(max) = self.settings.domains.and_then(|p| p.max_failed) else {
            return false;
        };
        self.tally[i].ready_failed > 0 && self.failed_domains(i) > max
    }
}
