//! Consistency checks on a [`Desired`] state and the dependency order of its links.

use std::collections::{BTreeMap, BTreeSet};

use crate::Error;
use crate::model::{Desired, Family, LinkKind, MAX_NAME_LEN, Managed};

impl Desired {
    /// Checks that the state can be applied: managed names that fit the kernel, masters that are
    /// bridges or VRFs in the same state, mutual veth peers, no dependency cycles, addresses and
    /// routes on known links, families that match.
    /// Links are managed when they carry one of the `managed` prefixes.
    pub fn validate(&self, managed: &Managed) -> Result<(), Error> {
        for (key, link) in &self.links {
            let object = || format!("link {}", link.name);
            if key != &link.name {
                return Err(invalid(object(), format!("is stored under the key {key}")));
            }
            if !managed.owns(&link.name) {
                return Err(invalid(
                    object(),
                    format!("has no managed prefix ({})", managed.prefixes().join(" ")),
                ));
            }
            if link.name.len() > MAX_NAME_LEN {
                return Err(invalid(object(), "is longer than the kernel's 15 bytes"));
            }
            if let Some(master) = &link.master {
                match self.links.get(master).map(|m| &m.kind) {
                    Some(LinkKind::Bridge | LinkKind::Vrf { .. }) => {}
                    Some(_) => {
                        return Err(invalid(
                            object(),
                            format!("master {master} is no bridge or VRF"),
                        ));
                    }
                    None => {
                        return Err(invalid(
                            object(),
                            format!("master {master} is not in the config"),
                        ));
                    }
                }
            }
            for dep in link.dependencies() {
                if managed.owns(dep) && !self.links.contains_key(dep) {
                    return Err(invalid(
                        object(),
                        format!("needs {dep}, which is not in the config"),
                    ));
                }
            }
            if let LinkKind::Vxlan(v) = &link.kind
                && v.neigh_suppress
                && !matches!(
                    link.master
                        .as_ref()
                        .and_then(|m| self.links.get(m))
                        .map(|m| &m.kind),
                    Some(LinkKind::Bridge)
                )
            {
                return Err(invalid(
                    object(),
                    "has neighbour suppression but no bridge master",
                ));
            }
            if let LinkKind::Unsupported(kind) = &link.kind {
                return Err(invalid(
                    object(),
                    format!("has kind {kind}, which cannot be created"),
                ));
            }
            if let LinkKind::Veth { peer } = &link.kind {
                let mutual = matches!(self.links.get(peer).map(|p| &p.kind),
                    Some(LinkKind::Veth { peer: back }) if back == &link.name);
                if !mutual || peer == &link.name {
                    return Err(invalid(
                        object(),
                        format!("veth peer {peer} must list it as its peer"),
                    ));
                }
            }
        }
        if link_order(self).len() != self.links.len() {
            return Err(invalid(
                "links".to_string(),
                "masters and parents form a cycle",
            ));
        }
        let mut seen = BTreeSet::new();
        for a in &self.addresses {
            if !self.links.contains_key(&a.link) {
                return Err(invalid(
                    format!("address {a}"),
                    "is on a link that is not in the config",
                ));
            }
            if let std::net::IpAddr::V6(v6) = a.addr.addr()
                && v6.segments()[0] & 0xffc0 == 0xfe80
            {
                return Err(invalid(
                    format!("address {a}"),
                    "is IPv6 link-local, which the kernel manages",
                ));
            }
            if !seen.insert(a) {
                return Err(invalid(format!("address {a}"), "is listed twice"));
            }
        }
        let mut keys = BTreeSet::new();
        for r in &self.routes {
            if let Some(dev) = &r.dev
                && managed.owns(dev)
                && !self.links.contains_key(dev)
            {
                return Err(invalid(
                    format!("route {r}"),
                    "uses a link that is not in the config",
                ));
            }
            if r.gateway.is_none() && r.dev.is_none() {
                return Err(invalid(format!("route {r}"), "needs a gateway or a device"));
            }
            if r.gateway
                .is_some_and(|gw| Family::of(&gw) != Family::of(&r.dst.addr()))
            {
                return Err(invalid(format!("route {r}"), "mixes address families"));
            }
            if !keys.insert(r.key()) {
                return Err(invalid(
                    format!("route {r}"),
                    "is listed twice (same table, prefix, metric)",
                ));
            }
        }
        let mut rules = BTreeSet::new();
        for r in &self.rules {
            let fam_ok = [r.src, r.dst]
                .iter()
                .flatten()
                .all(|n| Family::of(&n.addr()) == r.family);
            if !fam_ok {
                return Err(invalid(format!("rule {r}"), "mixes address families"));
            }
            if !rules.insert(r) {
                return Err(invalid(format!("rule {r}"), "is listed twice"));
            }
        }
        Ok(())
    }
}

fn invalid(object: String, reason: impl Into<String>) -> Error {
    Error::Invalid {
        object,
        reason: reason.into(),
    }
}

/// Desired link names with every link after the links it depends on (masters, parents,
/// underlays inside the config); links caught in a cycle are left out.
pub(crate) fn link_order(desired: &Desired) -> Vec<&str> {
    let mut pending: BTreeMap<&str, usize> = BTreeMap::new();
    let mut dependents: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for link in desired.links.values() {
        let deps: Vec<&str> = link
            .dependencies()
            .into_iter()
            .filter(|d| desired.links.contains_key(*d))
            .collect();
        pending.insert(&link.name, deps.len());
        for d in deps {
            dependents.entry(d).or_default().push(&link.name);
        }
    }
    // Level by level (all links without dependencies, then their dependents, ...), so that the
    // executor can create each level's links concurrently.
    let mut level: Vec<&str> = pending
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    let mut order = Vec::with_capacity(pending.len());
    while !level.is_empty() {
        let mut next = Vec::new();
        for name in &level {
            for dep in dependents.get(name).into_iter().flatten() {
                if let Some(n) = pending.get_mut(dep) {
                    *n -= 1;
                    if *n == 0 {
                        next.push(*dep);
                    }
                }
            }
        }
        order.append(&mut level);
        next.sort_unstable();
        level = next;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Address, Link};

    fn desired(links: Vec<Link>) -> Desired {
        let mut d = Desired::default();
        for l in links {
            d.add_link(l);
        }
        d
    }

    #[test]
    fn masters_come_before_their_ports() {
        let d = desired(vec![
            Link::new("lx.10", LinkKind::Bridge).master("l2.10"),
            Link::new("l2.10", LinkKind::Bridge).master("vr.a"),
            Link::new("vr.a", LinkKind::Vrf { table: 5 }),
        ]);
        assert_eq!(link_order(&d), vec!["vr.a", "l2.10", "lx.10"]);
    }

    #[test]
    fn a_foreign_name_is_rejected() {
        let d = desired(vec![Link::new("eth0", LinkKind::Bridge)]);
        assert!(matches!(
            d.validate(&crate::model::for_tests::managed()),
            Err(Error::Invalid { .. })
        ));
    }

    #[test]
    fn a_name_over_fifteen_bytes_is_rejected() {
        let d = desired(vec![Link::new("br.abcdefghijklm", LinkKind::Bridge)]);
        let err = d
            .validate(&crate::model::for_tests::managed())
            .unwrap_err()
            .to_string();
        assert!(err.contains("15 bytes"), "{err}");
    }

    #[test]
    fn a_one_sided_veth_is_rejected() {
        let d = desired(vec![Link::new(
            "vd.a",
            LinkKind::Veth {
                peer: "vv.a".into(),
            },
        )]);
        assert!(d.validate(&crate::model::for_tests::managed()).is_err());
    }

    #[test]
    fn a_master_cycle_is_rejected() {
        let d = desired(vec![
            Link::new("br.a", LinkKind::Bridge).master("br.b"),
            Link::new("br.b", LinkKind::Bridge).master("br.a"),
        ]);
        let err = d
            .validate(&crate::model::for_tests::managed())
            .unwrap_err()
            .to_string();
        assert!(err.contains("cycle"), "{err}");
    }

    #[test]
    fn an_address_on_an_unknown_link_is_rejected() {
        let mut d = desired(vec![Link::new("br.a", LinkKind::Bridge)]);
        d.addresses.push(Address {
            link: "br.b".into(),
            addr: "10.0.0.1/24".parse().unwrap(),
        });
        assert!(d.validate(&crate::model::for_tests::managed()).is_err());
    }

    #[test]
    fn neighbour_suppression_needs_a_bridge_master() {
        let vx = crate::model::Vxlan {
            vni: 1,
            local: "192.0.2.1".parse().unwrap(),
            underlay: None,
            port: 4789,
            learning: false,
            neigh_suppress: true,
        };
        let d = desired(vec![Link::new("lx.1", LinkKind::Vxlan(vx))]);
        let err = d
            .validate(&crate::model::for_tests::managed())
            .unwrap_err()
            .to_string();
        assert!(err.contains("neighbour suppression"), "{err}");
    }

    #[test]
    fn a_consistent_config_is_accepted() {
        let mut d = desired(vec![
            Link::new("vr.a", LinkKind::Vrf { table: 5 }),
            Link::new(
                "vd.a",
                LinkKind::Veth {
                    peer: "vv.a".into(),
                },
            ),
            Link::new(
                "vv.a",
                LinkKind::Veth {
                    peer: "vd.a".into(),
                },
            )
            .master("vr.a"),
        ]);
        d.addresses.push(Address {
            link: "vd.a".into(),
            addr: "10.0.0.1/31".parse().unwrap(),
        });
        d.validate(&crate::model::for_tests::managed()).unwrap();
    }
}
