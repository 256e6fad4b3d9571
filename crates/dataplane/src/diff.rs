//! The pure diff: desired and observed state in, ordered operations out.
//!
//! Order: prune rules, routes and addresses; delete links (ports before masters); create or
//! change links (masters before ports); add addresses; install routes; add rules. A link whose
//! creation-time settings differ is deleted and recreated; everything else changes in place.
//! Objects that disappear with a deleted link, or that the kernel flushes when a link changes
//! master, are planned again rather than trusted.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{Desired, Link, LinkKind, Observed, ObservedLink, Route, Segmentation};
use crate::op::{LinkChange, Op};
use crate::validate::link_order;

/// Computes the operations that turn `observed` into `desired`. Pure: no I/O, deterministic.
/// An empty result means the kernel already matches, and applying makes no writes.
pub fn diff(desired: &Desired, observed: &Observed) -> Vec<Op> {
    let gone = gone_links(desired, observed);
    let order = link_order(desired);
    let mut link_ops = Vec::new();
    // Links whose master changes: the kernel cycles them, flushing routes and IPv6 addresses.
    let mut disturbed: BTreeSet<&str> = gone.iter().map(String::as_str).collect();
    for name in &order {
        let link = &desired.links[*name];
        let existing = observed.links.get(*name).filter(|_| !gone.contains(*name));
        match existing {
            None => plan_new_link(link, desired, observed, &gone, &mut link_ops),
            Some(obs) => {
                let master_changed = plan_existing_link(link, obs, &gone, &mut link_ops);
                if master_changed {
                    disturbed.insert(name);
                }
            }
        }
    }

    let mut ops = Vec::new();
    let wanted_rules: BTreeSet<_> = desired.rules.iter().collect();
    let have_rules: BTreeSet<_> = observed.rules.iter().collect();
    ops.extend(
        have_rules
            .difference(&wanted_rules)
            .map(|r| Op::DeleteRule((*r).clone())),
    );

    let wanted_routes: BTreeMap<_, &Route> = desired.routes.iter().map(|r| (r.key(), r)).collect();
    let routes_alive = |r: &&Route| r.dev.as_deref().is_none_or(|d| !disturbed.contains(d));
    let have_routes: Vec<&Route> = observed.routes.iter().filter(routes_alive).collect();
    for r in &have_routes {
        if !wanted_routes.contains_key(&r.key())
            && r.dev.as_deref().is_none_or(|d| !gone.contains(d))
        {
            ops.push(Op::DeleteRoute((*r).clone()));
        }
    }

    let addr_alive = |a: &&crate::model::Address| {
        !gone.contains(&a.link) && (a.addr.addr().is_ipv4() || !disturbed.contains(a.link.as_str()))
    };
    let have_addrs: BTreeSet<_> = observed.addresses.iter().filter(addr_alive).collect();
    let wanted_addrs: BTreeSet<_> = desired.addresses.iter().collect();
    ops.extend(
        have_addrs
            .difference(&wanted_addrs)
            .map(|a| Op::DeleteAddress((*a).clone())),
    );

    ops.extend(delete_links(observed, &gone));
    ops.extend(link_ops);
    ops.extend(
        wanted_addrs
            .difference(&have_addrs)
            .map(|a| Op::AddAddress((*a).clone())),
    );

    for r in &desired.routes {
        let in_place = have_routes.iter().any(|h| route_matches(r, h));
        if !in_place {
            ops.push(Op::ReplaceRoute(r.clone()));
        }
    }
    ops.extend(
        wanted_rules
            .difference(&have_rules)
            .map(|r| Op::AddRule((*r).clone())),
    );
    ops
}

/// Whether an observed route satisfies a desired one (a desired route without a device accepts
/// the device the kernel resolved).
fn route_matches(want: &Route, have: &Route) -> bool {
    want.key() == have.key()
        && want.gateway == have.gateway
        && (want.dev.is_none() || want.dev == have.dev)
}

/// Managed links that will not survive: not desired, or desired with different creation-time
/// settings (and veth ends whose peer goes with them).
fn gone_links(desired: &Desired, observed: &Observed) -> BTreeSet<String> {
    let mut gone = BTreeSet::new();
    for (name, obs) in &observed.links {
        match desired.links.get(name) {
            None => {
                gone.insert(name.clone());
            }
            Some(want) if !want.kind.same_device(&obs.link.kind) => {
                gone.insert(name.clone());
            }
            Some(_) => {}
        }
    }
    let peers: Vec<String> = gone
        .iter()
        .filter_map(|n| match &observed.links[n].link.kind {
            LinkKind::Veth { peer } if observed.links.contains_key(peer) => Some(peer.clone()),
            _ => None,
        })
        .collect();
    gone.extend(peers);
    gone
}

/// Deletes in reverse dependency order: ports before their masters. Of a veth pair going away
/// together only one end is deleted; the kernel removes the other.
fn delete_links(observed: &Observed, gone: &BTreeSet<String>) -> Vec<Op> {
    let depth = |name: &str| {
        let mut d = 0;
        let mut cur = name;
        while let Some(m) = observed
            .links
            .get(cur)
            .and_then(|l| l.link.master.as_deref())
        {
            d += 1;
            cur = m;
            if d > observed.links.len() {
                break;
            }
        }
        d
    };
    let mut names: Vec<&String> = gone
        .iter()
        .filter(|n| match &observed.links[*n].link.kind {
            LinkKind::Veth { peer } => !(gone.contains(peer) && peer < *n),
            _ => true,
        })
        .collect();
    names.sort_by_key(|n| std::cmp::Reverse(depth(n)));
    names
        .into_iter()
        .map(|n| Op::DeleteLink(n.clone()))
        .collect()
}

/// Plans a link that does not exist (or is being recreated).
fn plan_new_link(
    link: &Link,
    desired: &Desired,
    observed: &Observed,
    gone: &BTreeSet<String>,
    ops: &mut Vec<Op>,
) {
    let created_by_peer = match &link.kind {
        LinkKind::Veth { peer } => {
            let peer_exists = observed.links.contains_key(peer) && !gone.contains(peer);
            peer < &link.name && desired.links.contains_key(peer) && !peer_exists
        }
        _ => false,
    };
    if created_by_peer {
        // The pair is created from the other end; this end then gets its own settings.
        ops.push(Op::ModifyLink(LinkChange {
            name: link.name.clone(),
            mtu: link.mtu,
            mac: link.mac,
            master: link.master.clone().map(Some),
            up: true,
        }));
    } else {
        ops.push(Op::CreateLink(link.clone()));
    }
    if let LinkKind::Vxlan(v) = &link.kind
        && v.neigh_suppress
        && link.master.is_some()
    {
        ops.push(Op::SetBridgePort {
            link: link.name.clone(),
            neigh_suppress: true,
        });
    }
    segmentation(link, at_creation(&link.kind), ops);
}

/// The segmentation offload the kernel gives a new device: bridges, VXLAN devices and macvlans
/// start with every feature on (the kernel tests check it); of other kinds nothing is assumed
/// (a veth starts with GRO off), so a wanted state is always written.
fn at_creation(kind: &LinkKind) -> Segmentation {
    match kind {
        LinkKind::Bridge | LinkKind::Vxlan(_) | LinkKind::Macvlan { .. } => Segmentation::On,
        _ => Segmentation::Mixed,
    }
}

/// Switches the link's segmentation offload when what it has is not what it should have.
fn segmentation(link: &Link, have: Segmentation, ops: &mut Vec<Op>) {
    if let Some(on) = have.to_reach(link.segmentation) {
        ops.push(Op::SetSegmentation {
            link: link.name.clone(),
            on,
        });
    }
}

/// Plans in-place changes of an existing link; returns whether its master changes.
fn plan_existing_link(
    link: &Link,
    obs: &ObservedLink,
    gone: &BTreeSet<String>,
    ops: &mut Vec<Op>,
) -> bool {
    let have = &obs.link;
    let master_recreated = link.master.as_ref().is_some_and(|m| gone.contains(m));
    let master_changed = link.master != have.master || master_recreated;
    let change = LinkChange {
        name: link.name.clone(),
        mtu: link.mtu.filter(|m| Some(*m) != have.mtu),
        mac: link.mac.filter(|m| Some(*m) != have.mac),
        master: master_changed.then(|| link.master.clone()),
        up: !obs.up,
    };
    if change.mtu.is_some() || change.mac.is_some() || change.master.is_some() || change.up {
        ops.push(Op::ModifyLink(change));
    }
    if let (LinkKind::Vxlan(want), LinkKind::Vxlan(got)) = (&link.kind, &have.kind)
        && link.master.is_some()
    {
        // A new master resets the port flags to the kernel default (off).
        let current = if master_changed {
            false
        } else {
            got.neigh_suppress
        };
        if want.neigh_suppress != current {
            ops.push(Op::SetBridgePort {
                link: link.name.clone(),
                neigh_suppress: want.neigh_suppress,
            });
        }
    }
    segmentation(link, have.segmentation, ops);
    master_changed
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
