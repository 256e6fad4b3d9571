//! Fast dumps over a plain (blocking) netlink socket: the kernel's answer is parsed lazily, and
//! of each link only the attributes the model needs are decoded (name, MTU, address, master,
//! lower link, kind data). On a node with thousands of links this keeps observe in the tens
//! of milliseconds, where decoding every attribute of every link costs several times that.

use std::collections::{HashMap, HashSet};
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::{LinkAttribute, LinkExtentMask, LinkMessage};
use netlink_packet_route::route::{RouteMessage, RouteProtocol};
use netlink_packet_route::rule::RuleMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NetlinkDeserializable,
    NetlinkMessage, NlasIterator,
};
use rtnetlink::sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::ethtool::Ethtool;
use crate::exchange::{acknowledged, error_code, exchange, invalid};
use crate::model::{Managed, RTPROT_NETROLLOUT, Segmentation};
use crate::observe::link_name;

/// Link attributes the model reads besides the link info: address, name, MTU, lower link,
/// master, lower link's namespace.
const LINK_ATTRS: [u16; 6] = [1, 3, 4, 5, 10, 37];

/// The raw dumps observe needs.
#[derive(Debug, Default)]
pub(crate) struct Dumps {
    pub links: Vec<LinkMessage>,
    pub addresses: Vec<AddressMessage>,
    pub routes: Vec<RouteMessage>,
    pub rules: Vec<RuleMessage>,
    /// The segmentation offload of managed links by index (empty without ethtool netlink).
    pub segmentation: HashMap<u32, Segmentation>,
}

/// A blocking netlink socket used only for dumps, with strict checking so that the kernel
/// filters routes by protocol itself.
#[derive(Debug)]
pub(crate) struct DumpSocket {
    socket: Mutex<Socket>,
    seq: AtomicU32,
    /// The ethtool netlink socket; `None` when the kernel has none.
    pub ethtool: Option<Ethtool>,
}

impl DumpSocket {
    /// Opens the socket in the calling thread's network namespace.
    pub fn open() -> io::Result<Self> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        socket.set_netlink_get_strict_chk(true)?;
        Ok(Self {
            socket: Mutex::new(socket),
            seq: AtomicU32::new(1),
            ethtool: Ethtool::open()?,
        })
    }

    /// Dumps links, addresses, our routes and rules (both families).
    pub fn all(&self, owned: &Managed) -> Result<Dumps, (&'static str, io::Error)> {
        let t = std::time::Instant::now();
        let mut d = Dumps {
            links: self.links().map_err(|e| ("links", e))?,
            ..Dumps::default()
        };
        let t_links = t.elapsed();
        let managed: HashSet<u32> = d
            .links
            .iter()
            .filter(|l| link_name(l).is_some_and(|n| owned.owns(n)))
            .map(|l| l.header.index)
            .collect();
        self.dump(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
            &|p| wanted_address(p, &managed),
            |m| {
                if let RouteNetlinkMessage::NewAddress(a) = m {
                    d.addresses.push(a);
                }
            },
        )
        .map_err(|e| ("addresses", e))?;
        let t_addrs = t.elapsed();
        for family in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut r = RouteMessage::default();
            r.header.address_family = family;
            r.header.protocol = RouteProtocol::from(RTPROT_NETROLLOUT);
            self.dump(RouteNetlinkMessage::GetRoute(r), &|_| true, |m| {
                if let RouteNetlinkMessage::NewRoute(r) = m {
                    d.routes.push(r);
                }
            })
            .map_err(|e| ("routes", e))?;
            let mut r = RuleMessage::default();
            r.header.family = family;
            self.dump(RouteNetlinkMessage::GetRule(r), &|_| true, |m| {
                if let RouteNetlinkMessage::NewRule(r) = m {
                    d.rules.push(r);
                }
            })
            .map_err(|e| ("rules", e))?;
        }
        if let Some(ethtool) = &self.ethtool {
            let mut all = ethtool.wanted().map_err(|e| ("segmentation offload", e))?;
            all.retain(|index, _| managed.contains(index));
            d.segmentation = all;
        }
        tracing::debug!(?t_links, ?t_addrs, total = ?t.elapsed(), "dumped");
        Ok(d)
    }

    /// Dumps all links (without statistics), decoding only [`LINK_ATTRS`].
    pub fn links(&self) -> io::Result<Vec<LinkMessage>> {
        let mut req = LinkMessage::default();
        req.attributes
            .push(LinkAttribute::ExtMask(vec![LinkExtentMask::SkipStats]));
        let mut out = Vec::new();
        self.dump(RouteNetlinkMessage::GetLink(req), &|_| true, |m| {
            if let RouteNetlinkMessage::NewLink(l) = m {
                out.push(l);
            }
        })?;
        Ok(out)
    }

    pub(crate) fn dump(
        &self,
        req: RouteNetlinkMessage,
        wanted: &dyn Fn(&[u8]) -> bool,
        mut each: impl FnMut(RouteNetlinkMessage),
    ) -> io::Result<()> {
        let is_link = matches!(req, RouteNetlinkMessage::GetLink(_));
        let (request, seq) = self.message(req, NLM_F_REQUEST | NLM_F_DUMP);
        let mut filtered = Vec::new();
        exchange(&self.socket, &request, seq, |header, payload| {
            match header.message_type {
                NLMSG_DONE => return Some(Ok(())),
                NLMSG_ERROR => {
                    return Some(Err(io::Error::from_raw_os_error(-error_code(payload))));
                }
                _ => {}
            }
            if !wanted(payload) {
                return None;
            }
            let payload = if is_link {
                keep_link_attrs(payload, &mut filtered)
            } else {
                payload
            };
            match RouteNetlinkMessage::deserialize(header, payload) {
                Ok(m) => {
                    each(m);
                    None
                }
                Err(e) => Some(Err(invalid(e))),
            }
        })
    }

    /// Sends one write request (`flags` besides `NLM_F_REQUEST | NLM_F_ACK`) and waits for the
    /// kernel's acknowledgement; its error as an [`io::Error`].
    pub(crate) fn write(&self, req: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        let (request, seq) = self.message(req, NLM_F_REQUEST | NLM_F_ACK | flags);
        exchange(&self.socket, &request, seq, |header, payload| {
            (header.message_type == NLMSG_ERROR).then(|| acknowledged(payload))
        })
    }

    /// `req` with `flags` and a new sequence number, serialized; and that number.
    fn message(&self, req: RouteNetlinkMessage, flags: u16) -> (Vec<u8>, u32) {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut msg = NetlinkMessage::from(req);
        msg.header.flags = flags;
        msg.header.sequence_number = seq;
        msg.finalize();
        let mut buf = vec![0; msg.buffer_len()];
        msg.serialize(&mut buf);
        (buf, seq)
    }
}

/// Copies the 16-byte `ifinfomsg` header and the wanted attributes of a link message; of the
/// link info, only the kind data the model reads (vxlan, vrf, vlan) and a bridge port's
/// neighbour suppression are kept.
fn keep_link_attrs<'a>(payload: &[u8], out: &'a mut Vec<u8>) -> &'a [u8] {
    out.clear();
    let Some((header, attrs)) = payload.split_at_checked(16) else {
        out.extend_from_slice(payload);
        return out;
    };
    out.extend_from_slice(header);
    for nla in NlasIterator::new(attrs).flatten() {
        match nla.kind() & NLA_TYPE_MASK {
            IFLA_LINKINFO => push_nla(out, nla.kind(), &link_info(nla.value())),
            t if LINK_ATTRS.contains(&t) => push_nla(out, nla.kind(), nla.value()),
            _ => {}
        }
    }
    out
}

const NLA_TYPE_MASK: u16 = 0x3fff;
const IFLA_LINKINFO: u16 = 18;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const IFLA_INFO_SLAVE_KIND: u16 = 4;
const IFLA_INFO_SLAVE_DATA: u16 = 5;
const IFLA_BRPORT_NEIGH_SUPPRESS: u16 = 32;

fn link_info(value: &[u8]) -> Vec<u8> {
    let name = |v: &[u8]| {
        v.split(|b| *b == 0)
            .next()
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    };
    let (mut kind, mut port_kind) = (Vec::new(), Vec::new());
    for nla in NlasIterator::new(value).flatten() {
        match nla.kind() & NLA_TYPE_MASK {
            IFLA_INFO_KIND => kind = name(nla.value()),
            IFLA_INFO_SLAVE_KIND => port_kind = name(nla.value()),
            _ => {}
        }
    }
    let wanted_data = [&b"vxlan"[..], b"vrf", b"vlan"].contains(&kind.as_slice());
    let mut out = Vec::new();
    for nla in NlasIterator::new(value).flatten() {
        match nla.kind() & NLA_TYPE_MASK {
            IFLA_INFO_KIND | IFLA_INFO_SLAVE_KIND => push_nla(&mut out, nla.kind(), nla.value()),
            IFLA_INFO_DATA if wanted_data => push_nla(&mut out, nla.kind(), nla.value()),
            IFLA_INFO_SLAVE_DATA if port_kind == b"bridge" => {
                let mut port = Vec::new();
                for x in NlasIterator::new(nla.value()).flatten() {
                    if x.kind() & NLA_TYPE_MASK == IFLA_BRPORT_NEIGH_SUPPRESS {
                        push_nla(&mut port, x.kind(), x.value());
                    }
                }
                push_nla(&mut out, nla.kind(), &port);
            }
            _ => {}
        }
    }
    out
}

/// Appends one attribute (header, value, padding).
fn push_nla(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    // The value came out of an attribute of at most u16::MAX bytes, so it fits again.
    let len = u16::try_from(4 + value.len()).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize((out.len() + 3) & !3, 0);
}

/// Whether an address message is worth decoding: on a managed link and not IPv6 link-local.
fn wanted_address(payload: &[u8], managed: &HashSet<u32>) -> bool {
    const AF_INET6: u8 = 10;
    const RT_SCOPE_LINK: u8 = 253;
    match payload {
        [family, _, _, scope, i0, i1, i2, i3, ..] => {
            managed.contains(&u32::from_ne_bytes([*i0, *i1, *i2, *i3]))
                && !(*family == AF_INET6 && *scope == RT_SCOPE_LINK)
        }
        _ => true,
    }
}
