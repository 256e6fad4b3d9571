//! Host routes for a layer-2 network's neighbours (`advertiseNeighbors`), the pure part.
//!
//! The node announces every neighbour it has learned on a network's bridge as a host route
//! (`/32`, `/128`) in the network's VRF table, where FRR's `redistribute kernel` picks it up.
//! Which neighbours count ([`is_announced`]) follows the Go operator's neighbour tracker:
//! learned by this node (not `extern_learn`, which FRR sets on the neighbours EVPN brought from
//! other nodes) and alive (reachable, stale, delay or permanent). netrollout also keeps a
//! neighbour in `probe` (the kernel's check between `delay` and `reachable`), so that a live
//! neighbour's route is not withdrawn and announced again at every check; it leaves out IPv6
//! link-local, multicast and unspecified addresses, which are no destinations to route to.
//!
//! The routes carry a protocol of their own, [`RTPROT_NEIGHBOURS`]: the dataplane's diff owns
//! [`crate::RTPROT_NETROLLOUT`] routes and never sees these; every route of this protocol is the
//! neighbour task's, in every table, so one that is no longer wanted (a neighbour gone, a
//! network whose field was turned off or that was removed) is deleted by the next [`plan`].
//! The kernel side is [`crate::Neighbours`].

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

/// The route protocol (`ip route ... proto 178`) of neighbour host routes.
pub const RTPROT_NEIGHBOURS: u8 = 178;

/// Announce the neighbours of bridge `link` as host routes in routing table `table` (the
/// network's VRF table).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostRoutes {
    /// The layer-2 network's bridge (`l2.<id>`).
    pub link: String,
    /// The routing table of the network's VRF.
    pub table: u32,
}

/// One entry of the kernel's neighbour table (`ip neigh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbour {
    /// The link it was learned on.
    pub ifindex: u32,
    /// Its address.
    pub addr: IpAddr,
    /// `NUD_*` state bits.
    pub state: u16,
    /// `NTF_*` flags.
    pub flags: u8,
}

/// A route of protocol [`RTPROT_NEIGHBOURS`]: `ip route replace DST/LEN dev IFINDEX table T
/// proto 178 scope link`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostRoute {
    /// Routing table.
    pub table: u32,
    /// Destination address.
    pub dst: IpAddr,
    /// Destination prefix length (32 or 128 for the routes the task writes).
    pub len: u8,
    /// Output link.
    pub ifindex: u32,
}

/// The kernel's `NUD_REACHABLE`, `NUD_STALE`, `NUD_DELAY`, `NUD_PROBE`, `NUD_PERMANENT`.
const ALIVE: u16 = 0x02 | 0x04 | 0x08 | 0x10 | 0x80;
/// The kernel's `NTF_EXT_LEARNED`: put there by a control plane (FRR, for EVPN's neighbours).
const EXT_LEARNED: u8 = 0x10;

/// Whether a neighbour is announced: learned here, alive, and a unicast address of its own.
pub fn is_announced(n: &Neighbour) -> bool {
    let routable = match n.addr {
        IpAddr::V4(a) => !(a.is_unspecified() || a.is_multicast() || a.is_broadcast()),
        IpAddr::V6(a) => {
            !(a.is_unspecified()
                || a.is_multicast()
                || a.is_unicast_link_local()
                || a.is_loopback())
        }
    };
    routable && n.state & ALIVE != 0 && n.flags & EXT_LEARNED == 0
}

/// The host routes wanted for `neighbours` on the links of `tables` (link index → table). One
/// route per table and address: an address learned on two networks of one VRF goes out of the
/// link with the lower index (a routing table holds one route per destination).
pub fn wanted(tables: &BTreeMap<u32, u32>, neighbours: &[Neighbour]) -> BTreeSet<HostRoute> {
    let mut by_dst: BTreeMap<(u32, IpAddr), u32> = BTreeMap::new();
    for n in neighbours.iter().filter(|n| is_announced(n)) {
        let Some(&table) = tables.get(&n.ifindex) else {
            continue;
        };
        let link = by_dst.entry((table, n.addr)).or_insert(n.ifindex);
        *link = (*link).min(n.ifindex);
    }
    by_dst
        .into_iter()
        .map(|((table, dst), ifindex)| HostRoute {
            table,
            dst,
            len: host_len(dst),
            ifindex,
        })
        .collect()
}

/// `/32` for IPv4, `/128` for IPv6.
pub fn host_len(addr: IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

/// The writes that turn `present` (every route of protocol [`RTPROT_NEIGHBOURS`]) into `wanted`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Routes to delete (first: a destination moving to another link is deleted, then added).
    pub delete: Vec<HostRoute>,
    /// Routes to add.
    pub add: Vec<HostRoute>,
}

impl Plan {
    /// Whether the kernel already holds what is wanted.
    pub fn is_empty(&self) -> bool {
        self.delete.is_empty() && self.add.is_empty()
    }
}

/// The plan from `present` to `wanted`: nothing when they are equal.
pub fn plan(wanted: &BTreeSet<HostRoute>, present: &BTreeSet<HostRoute>) -> Plan {
    Plan {
        delete: present.difference(wanted).copied().collect(),
        add: wanted.difference(present).copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REACHABLE: u16 = 0x02;
    const STALE: u16 = 0x04;
    const DELAY: u16 = 0x08;
    const PROBE: u16 = 0x10;
    const FAILED: u16 = 0x20;
    const NOARP: u16 = 0x40;
    const PERMANENT: u16 = 0x80;
    const INCOMPLETE: u16 = 0x01;

    fn n(ifindex: u32, addr: &str, state: u16) -> Neighbour {
        Neighbour {
            ifindex,
            addr: addr.parse().unwrap(),
            state,
            flags: 0,
        }
    }

    fn r(table: u32, dst: &str, ifindex: u32) -> HostRoute {
        let dst: IpAddr = dst.parse().unwrap();
        HostRoute {
            table,
            dst,
            len: host_len(dst),
            ifindex,
        }
    }

    #[test]
    fn alive_neighbours_learned_here_are_announced_and_others_are_not() {
        for state in [REACHABLE, STALE, DELAY, PROBE, PERMANENT] {
            assert!(is_announced(&n(1, "10.0.0.5", state)), "state {state:#x}");
        }
        for state in [0, INCOMPLETE, FAILED, NOARP] {
            assert!(!is_announced(&n(1, "10.0.0.5", state)), "state {state:#x}");
        }
        let mut evpn = n(1, "10.0.0.5", REACHABLE);
        evpn.flags = EXT_LEARNED;
        assert!(
            !is_announced(&evpn),
            "extern_learn (EVPN) is another node's"
        );
        // NTF_ROUTER (an IPv6 router) is still a neighbour of this node.
        let mut router = n(1, "2001:db8::5", REACHABLE);
        router.flags = 0x80;
        assert!(is_announced(&router));
        for addr in [
            "fe80::1",
            "ff02::1",
            "::",
            "224.0.0.5",
            "0.0.0.0",
            "255.255.255.255",
        ] {
            assert!(!is_announced(&n(1, addr, REACHABLE)), "{addr}");
        }
    }

    #[test]
    fn neighbours_of_tracked_links_become_host_routes_in_their_table() {
        let tables = BTreeMap::from([(10, 100), (11, 100), (12, 200)]);
        let got = wanted(
            &tables,
            &[
                n(10, "10.0.0.5", REACHABLE),
                n(10, "2001:db8::5", STALE),
                n(12, "10.0.0.5", DELAY),
                // Not tracked: the underlay, a network without the field.
                n(3, "192.168.0.1", REACHABLE),
                n(10, "10.0.0.6", FAILED),
                // The same address on two networks of one VRF: one route, lower index.
                n(11, "10.0.0.7", REACHABLE),
                n(10, "10.0.0.7", REACHABLE),
            ],
        );
        let want = BTreeSet::from([
            r(100, "10.0.0.5", 10),
            r(100, "2001:db8::5", 10),
            r(200, "10.0.0.5", 12),
            r(100, "10.0.0.7", 10),
        ]);
        assert_eq!(got, want);
        assert_eq!(r(1, "2001:db8::5", 1).len, 128);
        assert_eq!(r(1, "10.0.0.5", 1).len, 32);
    }

    #[test]
    fn a_plan_deletes_what_is_not_wanted_adds_what_is_missing_and_is_empty_when_in_place() {
        let wanted = BTreeSet::from([r(100, "10.0.0.5", 10), r(100, "10.0.0.7", 11)]);
        assert!(plan(&wanted, &wanted).is_empty());
        let present = BTreeSet::from([
            r(100, "10.0.0.5", 10),
            // Moved to another link, gone, or in a table no longer tracked.
            r(100, "10.0.0.7", 10),
            r(100, "10.0.0.8", 10),
            r(300, "10.0.0.5", 30),
        ]);
        let p = plan(&wanted, &present);
        assert_eq!(
            p.delete,
            [
                r(100, "10.0.0.7", 10),
                r(100, "10.0.0.8", 10),
                r(300, "10.0.0.5", 30)
            ]
        );
        assert_eq!(p.add, [r(100, "10.0.0.7", 11)]);
        // Turned off everywhere: everything goes.
        let off = plan(&BTreeSet::new(), &present);
        assert_eq!(off.delete.len(), 4);
        assert!(off.add.is_empty());
    }
}
