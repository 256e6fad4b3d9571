//! Host routes for a layer-2 network's neighbours, the kernel side: [`Neighbours`], a netlink
//! connection that hears the kernel's neighbour notifications ([`Neighbours::changed`]) and
//! brings the routes of protocol [`RTPROT_NEIGHBOURS`] in step with the neighbour tables
//! ([`Neighbours::sync`]: dump links, neighbours and those routes, [`plan`], write). A sync is
//! level-triggered: it reads the whole state each time, so a lost notification (the socket's
//! buffer overran) or a route removed by hand is made good by the next one. [`Neighbours::keep`]
//! runs the syncs for as long as the caller wants (the agent's neighbour task).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use rtnetlink::packet_core::{NLM_F_CREATE, NLM_F_REPLACE, NetlinkBuffer};
use rtnetlink::sys::{AsyncSocket, AsyncSocketExt, TokioSocket, protocols::NETLINK_ROUTE};
use std::time::Duration;

use tokio::sync::watch;

use crate::dump::DumpSocket;
use crate::error::{Error, Result};
use crate::msg::table_of;
use crate::neigh::{HostRoute, HostRoutes, Neighbour, RTPROT_NEIGHBOURS, plan, wanted};
use crate::observe::{ip_of, link_name};

/// The kernel's multicast group of neighbour notifications (`RTNLGRP_NEIGH`).
const RTNLGRP_NEIGH: u32 = 3;
/// Receive buffer of the notification socket: room for a burst (a flushed neighbour table).
const EVENTS_BUF: usize = 1024 * 1024;
/// `ENOBUFS`: notifications were lost (the next sync reads everything anyway).
const ENOBUFS: i32 = 105;
/// After a neighbour notification, wait this long for the rest of a burst before syncing.
pub const GATHER: Duration = Duration::from_millis(100);
/// Pause after the notification socket failed, before listening again.
const RETRY: Duration = Duration::from_secs(5);
/// `ESRCH` / `ENOENT`: a route to delete is already gone.
const GONE: [i32; 2] = [3, 2];

/// What one [`Neighbours::sync`] did.
#[derive(Debug, Default)]
pub struct Synced {
    /// Host routes in place afterwards (wanted and written or already there).
    pub routes: usize,
    /// Routes added.
    pub added: usize,
    /// Routes deleted.
    pub deleted: usize,
    /// Tracked links the kernel does not have (yet): nothing is announced for them.
    pub missing: Vec<String>,
    /// The indexes of the tracked links the kernel has.
    pub links: BTreeSet<u32>,
    /// Writes the kernel refused, each with the route and its answer (the next sync tries
    /// again).
    pub failed: Vec<(HostRoute, io::Error)>,
}

/// A netlink connection that keeps neighbour host routes in one network namespace.
pub struct Neighbours {
    socket: Arc<DumpSocket>,
    events: TokioSocket,
}

impl std::fmt::Debug for Neighbours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Neighbours").finish_non_exhaustive()
    }
}

impl Neighbours {
    /// Connects in the caller's network namespace. Call it inside a tokio runtime (it asks the
    /// kernel: from an async task, through `spawn_blocking`).
    pub fn connect() -> Result<Self> {
        let (socket, events) = open().map_err(Error::Connection)?;
        Ok(Self {
            socket: Arc::new(socket),
            events,
        })
    }

    /// Connects to the namespace `ip netns` calls `name` (a thread enters it to open the
    /// sockets; they stay in it). Call it inside a tokio runtime.
    pub fn in_netns(name: &str) -> Result<Self> {
        let path = Path::new("/run/netns").join(name);
        let shown = path.display().to_string();
        let runtime = tokio::runtime::Handle::current();
        let opened = std::thread::scope(|s| {
            s.spawn(|| {
                let _in = runtime.enter();
                open_in(&path)
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the namespace thread panicked")))
        });
        let (socket, events) = opened.map_err(|source| Error::Namespace {
            path: shown,
            source,
        })?;
        Ok(Self {
            socket: Arc::new(socket),
            events,
        })
    }

    /// Waits until the kernel announces a change of a neighbour on one of `links` (by index),
    /// then reads what else is queued. Notifications about other links (the underlay, pods'
    /// veths) are read and passed over; notifications lost to a full buffer count as a change:
    /// the caller syncs either way.
    pub async fn changed(&self, links: &BTreeSet<u32>) -> Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(64 * 1024);
        let lost = |e: &io::Error| e.raw_os_error() == Some(ENOBUFS);
        let mut hit = false;
        while !hit {
            buf.clear();
            match self.events.recv(&mut buf).await {
                Ok(()) => hit = names_any(&buf, links),
                Err(e) if lost(&e) => hit = true,
                Err(e) => return Err(Error::Connection(e)),
            }
        }
        // The rest of what is queued, without waiting (the socket does not block).
        loop {
            buf.clear();
            match self.events.socket_ref().recv(&mut buf, 0) {
                Ok(_) => {}
                Err(e) if lost(&e) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(Error::Connection(e)),
            }
        }
    }

    /// Makes the routes of protocol [`RTPROT_NEIGHBOURS`] equal the host routes of `targets`'
    /// neighbours: writes nothing when they already are. Routes of this protocol outside
    /// `targets` are deleted (every such route is the task's). A write the kernel refuses is
    /// reported in [`Synced::failed`], the others go on.
    ///
    /// # Errors
    /// [`Error::Dump`] when the kernel's tables cannot be read.
    pub async fn sync(&self, targets: &[HostRoutes]) -> Result<Synced> {
        let socket = self.socket.clone();
        let targets = targets.to_vec();
        tokio::task::spawn_blocking(move || sync(&socket, &targets))
            .await
            .map_err(|e| Error::Connection(io::Error::other(e)))?
    }
}

impl Neighbours {
    /// Keeps the host routes of `targets` in step with the neighbour tables, for as long as
    /// the targets' sender lives. `None`: the caller does not know yet what to track, nothing
    /// is written. It syncs when the targets change, when the kernel announces a change of a
    /// neighbour on a tracked link ([`GATHER`] gathers a burst into one sync; other links'
    /// neighbours cost a read, no sync), and every `resync` (a route removed by hand, a bridge
    /// that appeared after its target). With no tracked link it listens to no neighbour
    /// change: it only deletes routes of the protocol left over, at each resync. A failed sync
    /// is logged and made again at the next occasion.
    pub async fn keep(
        &self,
        mut targets: watch::Receiver<Option<Vec<HostRoutes>>>,
        resync: Duration,
    ) {
        // The tracked links (by index) of the last sync: their neighbours' notifications count.
        let mut links = BTreeSet::new();
        loop {
            let current = targets.borrow_and_update().clone();
            if let Some(t) = &current {
                links = self.logged_sync(t).await.unwrap_or(links);
            }
            tokio::select! {
                changed = targets.changed() => if changed.is_err() { return },
                heard = self.changed(&links), if !links.is_empty() => match heard {
                    Ok(()) => tokio::time::sleep(GATHER).await,
                    Err(e) => {
                        tracing::warn!(error = %e, "neighbour notifications failed; syncing at the next resync");
                        tokio::time::sleep(resync.min(RETRY)).await;
                    }
                },
                () = tokio::time::sleep(resync) => {}
            }
        }
    }

    /// Syncs and logs; the tracked links found, `None` when the sync failed.
    async fn logged_sync(&self, targets: &[HostRoutes]) -> Option<BTreeSet<u32>> {
        match self.sync(targets).await {
            Ok(s) => {
                for (route, error) in &s.failed {
                    tracing::warn!(table = route.table, dst = %route.dst, ifindex = route.ifindex,
                        %error, "the kernel refused a neighbour host route write");
                }
                if s.added + s.deleted > 0 {
                    tracing::info!(step = "neighbours", added = s.added, deleted = s.deleted,
                        routes = s.routes, missing = ?s.missing, "neighbour host routes synced");
                }
                Some(s.links)
            }
            Err(e) => {
                tracing::warn!(error = %e, "syncing neighbour host routes failed; trying again");
                None
            }
        }
    }
}

/// Whether a datagram of neighbour notifications names a neighbour on one of `links`: the
/// `ifindex` of each message's `ndmsg` (bytes 4..8 after the netlink header).
fn names_any(data: &[u8], links: &BTreeSet<u32>) -> bool {
    let mut offset = 0;
    while let Some(nl) = data
        .get(offset..)
        .and_then(|d| NetlinkBuffer::new_checked(d).ok())
    {
        let len = nl.length() as usize;
        if let Some(i) = nl.payload().get(4..8)
            && links.contains(&u32::from_ne_bytes([i[0], i[1], i[2], i[3]]))
        {
            return true;
        }
        if len == 0 {
            break;
        }
        offset += (len + 3) & !3;
    }
    false
}

fn sync(socket: &DumpSocket, targets: &[HostRoutes]) -> Result<Synced> {
    let dump = |what| move |source| Error::Dump { what, source };
    let mut out = Synced::default();
    // Nothing tracked: only routes of the protocol left over are deleted.
    let links = if targets.is_empty() {
        Vec::new()
    } else {
        socket.links().map_err(dump("links"))?
    };
    let index: BTreeMap<&str, u32> = links
        .iter()
        .filter_map(|l| Some((link_name(l)?, l.header.index)))
        .collect();
    let mut tables = BTreeMap::new();
    for t in targets {
        match index.get(t.link.as_str()) {
            Some(&i) => {
                tables.insert(i, t.table);
                out.links.insert(i);
            }
            None => out.missing.push(t.link.clone()),
        }
    }
    let want = if tables.is_empty() {
        BTreeSet::new()
    } else {
        wanted(&tables, &neighbours(socket).map_err(dump("neighbours"))?)
    };
    let present = routes(socket).map_err(dump("neighbour host routes"))?;
    let plan = plan(&want, &present);
    for r in &plan.delete {
        let mut m = message(r);
        // Whatever its scope and type (a route of this protocol written by hand, too).
        m.header.scope = RouteScope::NoWhere;
        m.header.kind = RouteType::Unspec;
        match socket.write(RouteNetlinkMessage::DelRoute(m), 0) {
            Ok(()) => out.deleted += 1,
            Err(e) if e.raw_os_error().is_some_and(|c| GONE.contains(&c)) => {}
            Err(e) => out.failed.push((*r, e)),
        }
    }
    for r in &plan.add {
        let flags = NLM_F_CREATE | NLM_F_REPLACE;
        match socket.write(RouteNetlinkMessage::NewRoute(message(r)), flags) {
            Ok(()) => out.added += 1,
            Err(e) => out.failed.push((*r, e)),
        }
    }
    out.routes = want.len() - out.failed.iter().filter(|(r, _)| want.contains(r)).count();
    Ok(out)
}

/// Every IPv4 and IPv6 neighbour entry (`ip neigh show`).
fn neighbours(socket: &DumpSocket) -> io::Result<Vec<Neighbour>> {
    let mut out = Vec::new();
    for family in [AddressFamily::Inet, AddressFamily::Inet6] {
        let mut req = NeighbourMessage::default();
        req.header.family = family;
        socket.dump(RouteNetlinkMessage::GetNeighbour(req), &|_| true, |m| {
            if let RouteNetlinkMessage::NewNeighbour(n) = m {
                out.extend(neighbour(&n));
            }
        })?;
    }
    Ok(out)
}

fn neighbour(m: &NeighbourMessage) -> Option<Neighbour> {
    let addr = m.attributes.iter().find_map(|a| match a {
        NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => Some((*a).into()),
        NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => Some((*a).into()),
        _ => None,
    })?;
    Some(Neighbour {
        ifindex: m.header.ifindex,
        addr,
        state: m.header.state.into(),
        flags: m.header.flags.bits(),
    })
}

/// Every route of protocol [`RTPROT_NEIGHBOURS`], in every table (the kernel filters by
/// protocol: the socket checks dump requests strictly).
fn routes(socket: &DumpSocket) -> io::Result<BTreeSet<HostRoute>> {
    let mut out = BTreeSet::new();
    for family in [AddressFamily::Inet, AddressFamily::Inet6] {
        let mut req = RouteMessage::default();
        req.header.address_family = family;
        req.header.protocol = RouteProtocol::from(RTPROT_NEIGHBOURS);
        socket.dump(RouteNetlinkMessage::GetRoute(req), &|_| true, |m| {
            if let RouteNetlinkMessage::NewRoute(r) = m {
                out.extend(host_route(&r));
            }
        })?;
    }
    Ok(out)
}

fn host_route(m: &RouteMessage) -> Option<HostRoute> {
    if m.header.protocol != RouteProtocol::from(RTPROT_NEIGHBOURS) {
        return None;
    }
    let (mut dst, mut ifindex, mut table) = (None, 0, None);
    for a in &m.attributes {
        match a {
            RouteAttribute::Destination(d) => dst = ip_of(d),
            RouteAttribute::Oif(i) => ifindex = *i,
            RouteAttribute::Table(t) => table = Some(*t),
            _ => {}
        }
    }
    Some(HostRoute {
        table: table_of(m.header.table, table),
        dst: dst?,
        len: m.header.destination_prefix_length,
        ifindex,
    })
}

/// `ip route {replace|del} DST/LEN dev IFINDEX table T proto 178 scope link`.
fn message(r: &HostRoute) -> RouteMessage {
    let mut m = RouteMessage::default();
    m.header = RouteHeader {
        address_family: if r.dst.is_ipv4() {
            AddressFamily::Inet
        } else {
            AddressFamily::Inet6
        },
        destination_prefix_length: r.len,
        table: u8::try_from(r.table).unwrap_or(252),
        protocol: RouteProtocol::from(RTPROT_NEIGHBOURS),
        scope: RouteScope::Link,
        kind: RouteType::Unicast,
        ..RouteHeader::default()
    };
    m.attributes.push(RouteAttribute::Destination(match r.dst {
        std::net::IpAddr::V4(a) => RouteAddress::Inet(a),
        std::net::IpAddr::V6(a) => RouteAddress::Inet6(a),
    }));
    if r.ifindex != 0 {
        m.attributes.push(RouteAttribute::Oif(r.ifindex));
    }
    m.attributes.push(RouteAttribute::Table(r.table));
    m
}

/// Opens the sync socket and the notification socket in the calling thread's namespace (the
/// latter registered with the current tokio runtime).
fn open() -> io::Result<(DumpSocket, TokioSocket)> {
    let socket = DumpSocket::open()?;
    let mut events = TokioSocket::new(NETLINK_ROUTE)?;
    let raw = events.socket_mut();
    raw.bind_auto()?;
    raw.add_membership(RTNLGRP_NEIGH)?;
    raw.set_rx_buf_sz(EVENTS_BUF)?;
    Ok((socket, events))
}

/// [`open`] in the namespace at `path`, entered by the calling thread (a thread of its own).
fn open_in(path: &PathBuf) -> io::Result<(DumpSocket, TokioSocket)> {
    let ns = File::open(path)?;
    nix::sched::setns(&ns, nix::sched::CloneFlags::CLONE_NEWNET).map_err(io::Error::from)?;
    open()
}
