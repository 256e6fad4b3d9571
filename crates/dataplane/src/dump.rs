//! Fast dumps over a plain (blocking) netlink socket: the kernel's answer is parsed lazily, and
//! of each link only the attributes the model needs are decoded (name, MTU, address, master,
//! lower link, kind data). On a node with thousands of links this keeps observe in the tens
//! of milliseconds, where decoding every attribute of every link costs several times that.

use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::{LinkAttribute, LinkExtentMask, LinkMessage};
use netlink_packet_route::route::{RouteMessage, RouteProtocol};
use netlink_packet_route::rule::RuleMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NetlinkBuffer, NetlinkDeserializable,
    NetlinkHeader, NetlinkMessage, NlasIterator, Parseable,
};
use rtnetlink::sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::model::RTPROT_NETROLLOUT;

/// Link attributes the model reads: address, name, MTU, lower link, master, link info,
/// lower link's namespace.
const LINK_ATTRS: [u16; 7] = [1, 3, 4, 5, 10, 18, 37];

/// Receive buffer size; the kernel sizes dump datagrams to fit (up to 32 KiB, more only for a
/// single oversized message).
const RECV_BUF: usize = 256 * 1024;

/// The raw dumps observe needs.
#[derive(Debug, Default)]
pub(crate) struct Dumps {
    pub links: Vec<LinkMessage>,
    pub addresses: Vec<AddressMessage>,
    pub routes: Vec<RouteMessage>,
    pub rules: Vec<RuleMessage>,
}

/// A blocking netlink socket used only for dumps, with strict checking so that the kernel
/// filters routes by protocol itself.
#[derive(Debug)]
pub(crate) struct DumpSocket {
    socket: Mutex<Socket>,
    seq: AtomicU32,
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
        })
    }

    /// Dumps links, addresses, our routes and rules (both families).
    pub fn all(&self) -> Result<Dumps, (&'static str, io::Error)> {
        let t = std::time::Instant::now();
        let mut d = Dumps {
            links: self.links().map_err(|e| ("links", e))?,
            ..Dumps::default()
        };
        let t_links = t.elapsed();
        self.dump(
            RouteNetlinkMessage::GetAddress(AddressMessage::default()),
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
            self.dump(RouteNetlinkMessage::GetRoute(r), |m| {
                if let RouteNetlinkMessage::NewRoute(r) = m {
                    d.routes.push(r);
                }
            })
            .map_err(|e| ("routes", e))?;
            let mut r = RuleMessage::default();
            r.header.family = family;
            self.dump(RouteNetlinkMessage::GetRule(r), |m| {
                if let RouteNetlinkMessage::NewRule(r) = m {
                    d.rules.push(r);
                }
            })
            .map_err(|e| ("rules", e))?;
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
        self.dump(RouteNetlinkMessage::GetLink(req), |m| {
            if let RouteNetlinkMessage::NewLink(l) = m {
                out.push(l);
            }
        })?;
        Ok(out)
    }

    fn dump(
        &self,
        req: RouteNetlinkMessage,
        mut each: impl FnMut(RouteNetlinkMessage),
    ) -> io::Result<()> {
        let is_link = matches!(req, RouteNetlinkMessage::GetLink(_));
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut msg = NetlinkMessage::from(req);
        msg.header.flags = NLM_F_REQUEST | NLM_F_DUMP;
        msg.header.sequence_number = seq;
        msg.finalize();
        let mut buf = vec![0; msg.buffer_len()];
        msg.serialize(&mut buf);
        // A poisoned lock only means another dump panicked; the socket itself is fine.
        let socket = self.socket.lock().unwrap_or_else(|p| p.into_inner());
        socket.send(&buf, 0)?;
        let mut filtered = Vec::new();
        // A large receive buffer lets the kernel pack many messages into each datagram.
        let mut data: Vec<u8> = Vec::with_capacity(RECV_BUF);
        loop {
            data.clear();
            let n = socket.recv(&mut data, 0)?;
            if n > RECV_BUF {
                return Err(invalid(format!(
                    "netlink datagram of {n} bytes exceeds {RECV_BUF}"
                )));
            }
            let mut offset = 0;
            while offset < data.len() {
                let nl = NetlinkBuffer::new_checked(&data[offset..]).map_err(invalid)?;
                let len = nl.length() as usize;
                let header = NetlinkHeader::parse(&nl).map_err(invalid)?;
                offset += (len + 3) & !3;
                if header.sequence_number != seq {
                    continue;
                }
                match header.message_type {
                    NLMSG_DONE => return Ok(()),
                    NLMSG_ERROR => {
                        let code = nl
                            .payload()
                            .get(..4)
                            .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                        return Err(io::Error::from_raw_os_error(-code));
                    }
                    _ => {}
                }
                let payload = if is_link {
                    keep_link_attrs(nl.payload(), &mut filtered)
                } else {
                    nl.payload()
                };
                each(RouteNetlinkMessage::deserialize(&header, payload).map_err(invalid)?);
            }
        }
    }
}

/// Copies the 16-byte `ifinfomsg` header and the wanted attributes of a link message.
fn keep_link_attrs<'a>(payload: &[u8], out: &'a mut Vec<u8>) -> &'a [u8] {
    out.clear();
    let Some((header, attrs)) = payload.split_at_checked(16) else {
        out.extend_from_slice(payload);
        return out;
    };
    out.extend_from_slice(header);
    for nla in NlasIterator::new(attrs).flatten() {
        if LINK_ATTRS.contains(&(nla.kind() & 0x3fff)) {
            let len = (usize::from(nla.length()) + 3) & !3;
            let raw = nla.into_inner();
            out.extend_from_slice(&raw[..len.min(raw.len())]);
            out.resize((out.len() + 3) & !3, 0);
        }
    }
    out
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
