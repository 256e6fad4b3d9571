//! Netlink request messages for operations (pure: the interface indexes are passed in).

use std::net::IpAddr;

use ipnet::IpNet;
use netlink_packet_route::address::{AddressAttribute, AddressHeaderFlags, AddressMessage};
use netlink_packet_route::link::{
    InfoBridgePort, InfoData, InfoKind, InfoMacVlan, InfoPortData, InfoPortKind, InfoVeth,
    InfoVlan, InfoVrf, InfoVxlan, LinkAttribute, LinkFlags, LinkInfo, LinkMessage, MacVlanMode,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST};

use crate::model::{Address, Family, Link, LinkKind, RTPROT_NETROLLOUT, Route, Rule};
use crate::op::{LinkChange, Op};

/// A request ready to send.
#[derive(Debug)]
pub(crate) enum Request {
    /// An rtnetlink message and its netlink header flags.
    Route(RouteNetlinkMessage, u16),
    /// Segmentation offload of the link with this index, on the ethtool netlink socket.
    Segmentation {
        /// The link's interface index.
        ifindex: u32,
        /// On or off.
        on: bool,
    },
}

const ACK: u16 = NLM_F_REQUEST | NLM_F_ACK;

/// Builds the request for `op`; `index` resolves link names, `Err(name)` names a missing link.
pub(crate) fn request(op: &Op, index: &dyn Fn(&str) -> Option<u32>) -> Result<Request, String> {
    let idx = |name: &str| index(name).ok_or_else(|| name.to_string());
    let route = match op {
        Op::SetSegmentation { link, on } => {
            return Ok(Request::Segmentation {
                ifindex: idx(link)?,
                on: *on,
            });
        }
        Op::CreateLink(link) => (
            RouteNetlinkMessage::NewLink(create_link(link, &idx)?),
            ACK | NLM_F_CREATE | NLM_F_EXCL,
        ),
        Op::ModifyLink(change) => (
            RouteNetlinkMessage::SetLink(modify_link(change, &idx)?),
            ACK,
        ),
        Op::DeleteLink(name) => {
            let mut m = LinkMessage::default();
            m.header.index = idx(name)?;
            (RouteNetlinkMessage::DelLink(m), ACK)
        }
        Op::SetBridgePort {
            link,
            neigh_suppress,
        } => {
            let mut m = LinkMessage::default();
            m.header.index = idx(link)?;
            m.attributes.push(LinkAttribute::LinkInfo(vec![
                LinkInfo::PortKind(InfoPortKind::Bridge),
                LinkInfo::PortData(InfoPortData::BridgePort(vec![
                    InfoBridgePort::NeighSupress(*neigh_suppress),
                ])),
            ]));
            (RouteNetlinkMessage::NewLink(m), ACK)
        }
        Op::AddAddress(a) => (
            RouteNetlinkMessage::NewAddress(address(a, idx(&a.link)?)),
            ACK | NLM_F_CREATE | NLM_F_EXCL,
        ),
        Op::DeleteAddress(a) => (
            RouteNetlinkMessage::DelAddress(address(a, idx(&a.link)?)),
            ACK,
        ),
        Op::ReplaceRoute(r) => (
            RouteNetlinkMessage::NewRoute(route(r, &idx)?),
            ACK | NLM_F_CREATE | NLM_F_REPLACE,
        ),
        Op::DeleteRoute(r) => (RouteNetlinkMessage::DelRoute(route(r, &idx)?), ACK),
        Op::AddRule(r) => (
            RouteNetlinkMessage::NewRule(rule(r)),
            ACK | NLM_F_CREATE | NLM_F_EXCL,
        ),
        Op::DeleteRule(r) => (RouteNetlinkMessage::DelRule(rule(r)), ACK),
    };
    Ok(Request::Route(route.0, route.1))
}

type Idx<'a> = dyn Fn(&str) -> Result<u32, String> + 'a;

fn create_link(link: &Link, idx: &Idx<'_>) -> Result<LinkMessage, String> {
    let mut m = LinkMessage::default();
    m.header.flags = LinkFlags::Up;
    m.header.change_mask = LinkFlags::Up;
    m.attributes.push(LinkAttribute::IfName(link.name.clone()));
    let (kind, data) = match &link.kind {
        LinkKind::Bridge => (InfoKind::Bridge, None),
        LinkKind::Dummy => (InfoKind::Dummy, None),
        // Rejected by validation; passed through so the kernel names the problem.
        LinkKind::Unsupported(k) => (InfoKind::Other(k.clone()), None),
        LinkKind::Vrf { table } => (
            InfoKind::Vrf,
            Some(InfoData::Vrf(vec![InfoVrf::TableId(*table)])),
        ),
        LinkKind::Veth { peer } => {
            let mut p = LinkMessage::default();
            p.attributes.push(LinkAttribute::IfName(peer.clone()));
            (InfoKind::Veth, Some(InfoData::Veth(InfoVeth::Peer(p))))
        }
        LinkKind::Macvlan { parent } => {
            m.attributes.push(LinkAttribute::Link(idx(parent)?));
            (
                InfoKind::MacVlan,
                Some(InfoData::MacVlan(vec![InfoMacVlan::Mode(
                    MacVlanMode::Bridge,
                )])),
            )
        }
        LinkKind::Vlan { parent, id } => {
            m.attributes.push(LinkAttribute::Link(idx(parent)?));
            (
                InfoKind::Vlan,
                Some(InfoData::Vlan(vec![InfoVlan::Id(*id)])),
            )
        }
        LinkKind::Vxlan(v) => {
            let mut d = vec![InfoVxlan::Id(v.vni)];
            d.push(match v.local {
                IpAddr::V4(a) => InfoVxlan::Local(a),
                IpAddr::V6(a) => InfoVxlan::Local6(a),
            });
            if let Some(dev) = &v.underlay {
                d.push(InfoVxlan::Link(idx(dev)?));
            }
            d.push(InfoVxlan::Port(v.port));
            d.push(InfoVxlan::Learning(v.learning));
            (InfoKind::Vxlan, Some(InfoData::Vxlan(d)))
        }
    };
    let mut info = vec![LinkInfo::Kind(kind)];
    info.extend(data.map(LinkInfo::Data));
    m.attributes.push(LinkAttribute::LinkInfo(info));
    if let Some(mtu) = link.mtu {
        m.attributes.push(LinkAttribute::Mtu(mtu));
    }
    if let Some(mac) = link.mac {
        m.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
    }
    if let Some(master) = &link.master {
        m.attributes.push(LinkAttribute::Controller(idx(master)?));
    }
    Ok(m)
}

fn modify_link(c: &LinkChange, idx: &Idx<'_>) -> Result<LinkMessage, String> {
    let mut m = LinkMessage::default();
    m.header.index = idx(&c.name)?;
    if c.up {
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
    }
    if let Some(mtu) = c.mtu {
        m.attributes.push(LinkAttribute::Mtu(mtu));
    }
    if let Some(mac) = c.mac {
        m.attributes.push(LinkAttribute::Address(mac.0.to_vec()));
    }
    match &c.master {
        Some(Some(master)) => m.attributes.push(LinkAttribute::Controller(idx(master)?)),
        Some(None) => m.attributes.push(LinkAttribute::Controller(0)),
        None => {}
    }
    Ok(m)
}

fn family(f: Family) -> AddressFamily {
    match f {
        Family::V4 => AddressFamily::Inet,
        Family::V6 => AddressFamily::Inet6,
    }
}

fn address(a: &Address, index: u32) -> AddressMessage {
    let mut m = AddressMessage::default();
    let ip = a.addr.addr();
    m.header.family = family(Family::of(&ip));
    m.header.prefix_len = a.addr.prefix_len();
    m.header.index = index;
    m.attributes.push(AddressAttribute::Address(ip));
    if ip.is_ipv4() {
        m.attributes.push(AddressAttribute::Local(ip));
    } else {
        m.header.flags = AddressHeaderFlags::Nodad;
    }
    m
}

fn route_address(ip: IpAddr) -> RouteAddress {
    match ip {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    }
}

/// The one-byte table field of route and rule headers; ids above 255 travel as an attribute.
fn compat_table(table: u32) -> u8 {
    u8::try_from(table).unwrap_or(252)
}

fn route(r: &Route, idx: &Idx<'_>) -> Result<RouteMessage, String> {
    let mut m = RouteMessage::default();
    let dst: IpNet = r.dst.trunc();
    m.header.address_family = family(Family::of(&dst.addr()));
    m.header.destination_prefix_length = dst.prefix_len();
    m.header.table = compat_table(r.table);
    m.header.protocol = RouteProtocol::from(RTPROT_NETROLLOUT);
    m.header.scope = if r.gateway.is_some() {
        RouteScope::Universe
    } else {
        RouteScope::Link
    };
    m.header.kind = RouteType::Unicast;
    if dst.prefix_len() > 0 {
        m.attributes
            .push(RouteAttribute::Destination(route_address(dst.addr())));
    }
    if let Some(gw) = r.gateway {
        m.attributes
            .push(RouteAttribute::Gateway(route_address(gw)));
    }
    if let Some(dev) = &r.dev {
        m.attributes.push(RouteAttribute::Oif(idx(dev)?));
    }
    m.attributes
        .push(RouteAttribute::Priority(r.effective_metric()));
    m.attributes.push(RouteAttribute::Table(r.table));
    Ok(m)
}

fn rule(r: &Rule) -> RuleMessage {
    let mut m = RuleMessage::default();
    m.header.family = family(r.family);
    m.header.table = compat_table(r.table);
    m.header.action = RuleAction::ToTable;
    m.attributes.push(RuleAttribute::Priority(r.priority));
    if let Some(src) = r.src {
        m.header.src_len = src.prefix_len();
        m.attributes.push(RuleAttribute::Source(src.trunc().addr()));
    }
    if let Some(dst) = r.dst {
        m.header.dst_len = dst.prefix_len();
        m.attributes
            .push(RuleAttribute::Destination(dst.trunc().addr()));
    }
    if let Some(iif) = &r.iif {
        m.attributes.push(RuleAttribute::Iifname(iif.clone()));
    }
    m.attributes.push(RuleAttribute::Table(r.table));
    m.attributes
        .push(RuleAttribute::Protocol(RouteProtocol::from(
            RTPROT_NETROLLOUT,
        )));
    m
}

/// The table id of a route or rule header plus its optional table attribute.
pub(crate) fn table_of(header_table: u8, attr: Option<u32>) -> u32 {
    attr.unwrap_or(u32::from(header_table))
}
