//! Reading the kernel: netlink dump messages into an [`Observed`] state (managed objects only).

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;
use netlink_packet_route::AddressFamily;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoBridgePort, InfoData, InfoKind, InfoPortData, InfoVlan, InfoVrf, InfoVxlan, LinkAttribute,
    LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteProtocol};
use netlink_packet_route::rule::{RuleAttribute, RuleMessage};

use crate::model::Managed;
use crate::model::{
    Address, Family, Link, LinkKind, Mac, Observed, ObservedLink, RTPROT_NETROLLOUT, Route, Rule,
    Segmentation, VXLAN_PORT, Vxlan,
};
use crate::msg::table_of;

/// Builds the observed state from raw dumps.
pub(crate) fn observed(
    links: &[LinkMessage],
    addresses: &[AddressMessage],
    routes: &[RouteMessage],
    rules: &[RuleMessage],
    segmentation: &HashMap<u32, Segmentation>,
    owned: &Managed,
) -> Observed {
    let names: HashMap<u32, String> = links
        .iter()
        .filter_map(|m| Some((m.header.index, link_name(m)?.to_string())))
        .collect();
    let name_of = |i: u32| names.get(&i).cloned().unwrap_or_else(|| format!("if{i}"));
    let mut out = Observed {
        ifindex: names.iter().map(|(i, n)| (n.clone(), *i)).collect(),
        ..Observed::default()
    };
    for m in links {
        if let Some(name) = link_name(m).filter(|n| owned.owns(n)) {
            let mut l = link(m, name, &name_of);
            if let Some(seg) = segmentation.get(&m.header.index) {
                l.link.segmentation = *seg;
            }
            out.links.insert(name.to_string(), l);
        }
    }
    for m in addresses {
        let Some(name) = names.get(&m.header.index).filter(|n| owned.owns(n)) else {
            continue;
        };
        if let Some(addr) = address(m) {
            out.addresses.push(Address {
                link: name.clone(),
                addr,
            });
        }
    }
    out.addresses.sort();
    out.routes = routes.iter().filter_map(|m| route(m, &name_of)).collect();
    out.routes.sort();
    out.rules = rules.iter().filter_map(rule).collect();
    out.rules.sort();
    out
}

pub(crate) fn link_name(m: &LinkMessage) -> Option<&str> {
    m.attributes.iter().find_map(|a| match a {
        LinkAttribute::IfName(n) => Some(n.as_str()),
        _ => None,
    })
}

fn link(m: &LinkMessage, name: &str, name_of: &dyn Fn(u32) -> String) -> ObservedLink {
    let (mut mtu, mut mac, mut master, mut lower, mut other_ns) = (None, None, None, None, false);
    let (mut kind, mut data, mut port) = (None, None, None);
    for a in &m.attributes {
        match a {
            LinkAttribute::Mtu(v) => mtu = Some(*v),
            LinkAttribute::Address(v) => mac = <[u8; 6]>::try_from(v.as_slice()).ok().map(Mac),
            LinkAttribute::Controller(i) if *i != 0 => master = Some(name_of(*i)),
            LinkAttribute::Link(i) => lower = Some(*i),
            LinkAttribute::LinkNetNsId(_) => other_ns = true,
            LinkAttribute::LinkInfo(infos) => {
                for info in infos {
                    match info {
                        LinkInfo::Kind(k) => kind = Some(k),
                        LinkInfo::Data(d) => data = Some(d),
                        LinkInfo::PortData(p) => port = Some(p),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    // A peer or parent in another namespace has an index that means nothing here.
    let lower_name = || lower.filter(|_| !other_ns).map(name_of).unwrap_or_default();
    let neigh_suppress = match port {
        Some(InfoPortData::BridgePort(p)) => p
            .iter()
            .any(|x| matches!(x, InfoBridgePort::NeighSupress(true))),
        _ => false,
    };
    let kind = match (kind, data) {
        (Some(InfoKind::Bridge), _) => LinkKind::Bridge,
        (Some(InfoKind::Dummy), _) => LinkKind::Dummy,
        (Some(InfoKind::Veth), _) => LinkKind::Veth { peer: lower_name() },
        (Some(InfoKind::MacVlan), _) => LinkKind::Macvlan {
            parent: lower_name(),
        },
        (Some(InfoKind::Vrf), Some(InfoData::Vrf(d))) => LinkKind::Vrf {
            table: d
                .iter()
                .find_map(|x| match x {
                    InfoVrf::TableId(t) => Some(*t),
                    _ => None,
                })
                .unwrap_or(0),
        },
        (Some(InfoKind::Vlan), Some(InfoData::Vlan(d))) => LinkKind::Vlan {
            parent: lower_name(),
            id: d
                .iter()
                .find_map(|x| match x {
                    InfoVlan::Id(i) => Some(*i),
                    _ => None,
                })
                .unwrap_or(0),
        },
        (Some(InfoKind::Vxlan), Some(InfoData::Vxlan(d))) => {
            LinkKind::Vxlan(vxlan(d, neigh_suppress, name_of))
        }
        (k, _) => LinkKind::Unsupported(k.map(|k| k.to_string()).unwrap_or_else(|| "none".into())),
    };
    ObservedLink {
        link: Link {
            name: name.to_string(),
            kind,
            mtu,
            mac,
            master,
            segmentation: Segmentation::Untouched,
        },
        up: m.header.flags.contains(LinkFlags::Up),
    }
}

fn vxlan(d: &[InfoVxlan], neigh_suppress: bool, name_of: &dyn Fn(u32) -> String) -> Vxlan {
    let mut v = Vxlan {
        vni: 0,
        local: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        underlay: None,
        port: VXLAN_PORT,
        learning: true,
        neigh_suppress,
    };
    for x in d {
        match x {
            InfoVxlan::Id(i) => v.vni = *i,
            InfoVxlan::Local(a) => v.local = IpAddr::V4(*a),
            InfoVxlan::Local6(a) => v.local = IpAddr::V6(*a),
            InfoVxlan::Link(i) if *i != 0 => v.underlay = Some(name_of(*i)),
            InfoVxlan::Port(p) => v.port = *p,
            InfoVxlan::Learning(l) => v.learning = *l,
            _ => {}
        }
    }
    v
}

/// The address of an address message, or `None` for IPv6 link-local addresses (kernel-made).
fn address(m: &AddressMessage) -> Option<IpNet> {
    let mut addr = None;
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(ip) => addr = Some(*ip),
            AddressAttribute::Address(ip) if addr.is_none() => addr = Some(*ip),
            _ => {}
        }
    }
    let ip = addr?;
    if let IpAddr::V6(v6) = ip
        && v6.segments()[0] & 0xffc0 == 0xfe80
    {
        return None;
    }
    IpNet::new(ip, m.header.prefix_len).ok()
}

pub(crate) fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    }
}

fn route(m: &RouteMessage, name_of: &dyn Fn(u32) -> String) -> Option<Route> {
    if m.header.protocol != RouteProtocol::from(RTPROT_NETROLLOUT) {
        return None;
    }
    let unspecified = match m.header.address_family {
        AddressFamily::Inet => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        AddressFamily::Inet6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    let (mut dst, mut gateway, mut dev, mut metric, mut table) = (unspecified, None, None, 0, None);
    for a in &m.attributes {
        match a {
            RouteAttribute::Destination(d) => dst = ip_of(d)?,
            RouteAttribute::Gateway(g) => gateway = ip_of(g),
            RouteAttribute::Oif(i) => dev = Some(name_of(*i)),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::Table(t) => table = Some(*t),
            _ => {}
        }
    }
    let dst = IpNet::new(dst, m.header.destination_prefix_length).ok()?;
    Some(Route {
        table: table_of(m.header.table, table),
        dst,
        gateway,
        dev,
        metric,
    })
}

fn rule(m: &RuleMessage) -> Option<Rule> {
    let ours = m.attributes.iter().any(
        |a| matches!(a, RuleAttribute::Protocol(p) if *p == RouteProtocol::from(RTPROT_NETROLLOUT)),
    );
    if !ours {
        return None;
    }
    let family = match m.header.family {
        AddressFamily::Inet => Family::V4,
        AddressFamily::Inet6 => Family::V6,
        _ => return None,
    };
    let mut r = Rule {
        priority: 0,
        family,
        src: None,
        dst: None,
        iif: None,
        table: 0,
    };
    let mut table = None;
    for a in &m.attributes {
        match a {
            RuleAttribute::Priority(p) => r.priority = *p,
            RuleAttribute::Source(ip) => r.src = IpNet::new(*ip, m.header.src_len).ok(),
            RuleAttribute::Destination(ip) => r.dst = IpNet::new(*ip, m.header.dst_len).ok(),
            RuleAttribute::Iifname(n) => r.iif = Some(n.clone()),
            RuleAttribute::Table(t) => table = Some(*t),
            _ => {}
        }
    }
    r.table = table_of(m.header.table, table);
    Some(r)
}

/// Index of every link by name, from a link dump.
pub(crate) fn ifindex(links: &[LinkMessage]) -> BTreeMap<String, u32> {
    links
        .iter()
        .filter_map(|m| Some((link_name(m)?.to_string(), m.header.index)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::msg::{Request, request};
    use crate::op::Op;
    use netlink_packet_route::RouteNetlinkMessage;

    /// A link message as the kernel would report it, built from a creation request.
    fn link_msg(link: &Link, index: u32, names: &[(&str, u32)]) -> LinkMessage {
        let lookup = |n: &str| names.iter().find(|(m, _)| *m == n).map(|(_, i)| *i);
        let Request::Route(RouteNetlinkMessage::NewLink(mut m), _) =
            request(&Op::CreateLink(link.clone()), &lookup).unwrap()
        else {
            panic!("not a link message")
        };
        m.header.index = index;
        m
    }

    #[test]
    fn only_managed_links_addresses_routes_and_rules_are_observed() {
        let names = [("eth0", 1), ("l2.1", 2), ("lx.1", 3)];
        let vx = Vxlan {
            vni: 7,
            local: "192.0.2.1".parse().unwrap(),
            underlay: Some("eth0".into()),
            port: 4789,
            learning: false,
            neigh_suppress: false,
        };
        let links = vec![
            link_msg(&Link::new("eth0", LinkKind::Bridge), 1, &names),
            link_msg(&Link::new("l2.1", LinkKind::Bridge).mtu(1450), 2, &names),
            link_msg(
                &Link::new("lx.1", LinkKind::Vxlan(vx.clone())).master("l2.1"),
                3,
                &names,
            ),
        ];
        let addr = |link: &str, a: &str| {
            let op = Op::AddAddress(Address {
                link: link.into(),
                addr: a.parse().unwrap(),
            });
            match request(&op, &|n| {
                names.iter().find(|(m, _)| *m == n).map(|(_, i)| *i)
            })
            .unwrap()
            {
                Request::Route(RouteNetlinkMessage::NewAddress(m), _) => m,
                _ => panic!(),
            }
        };
        let addresses = vec![
            addr("eth0", "10.0.0.1/24"),
            addr("l2.1", "10.1.0.1/24"),
            addr("l2.1", "fe80::1/64"),
        ];
        let mut foreign_route = RouteMessage::default();
        foreign_route.header.address_family = AddressFamily::Inet;
        let observed = observed(
            &links,
            &addresses,
            &[foreign_route],
            &[],
            &HashMap::from([(1, Segmentation::Off), (2, Segmentation::Off)]),
            &crate::model::for_tests::managed(),
        );

        assert_eq!(
            observed.links.keys().collect::<Vec<_>>(),
            vec!["l2.1", "lx.1"]
        );
        assert_eq!(observed.ifindex.get("eth0"), Some(&1));
        let lx = &observed.links["lx.1"].link;
        assert_eq!(lx.kind, LinkKind::Vxlan(vx));
        assert_eq!(lx.master.as_deref(), Some("l2.1"));
        assert_eq!(observed.links["l2.1"].link.mtu, Some(1450));
        assert_eq!(
            observed.links["l2.1"].link.segmentation,
            Segmentation::Off,
            "the offload read for the link"
        );
        assert_eq!(lx.segmentation, Segmentation::Untouched, "none read for it");
        assert!(observed.links["l2.1"].up);
        let addrs: Vec<String> = observed.addresses.iter().map(ToString::to_string).collect();
        assert_eq!(addrs, vec!["10.1.0.1/24 dev l2.1"]);
        assert!(observed.routes.is_empty() && observed.rules.is_empty());
    }
}
