//! BGP peerings with workloads (`BGPPeering`), in the BGP instance of their VRF (`router bgp
//! ASN vrf vr.<name>`, or the default VRF's `router bgp ASN`), as the Go operator's template
//! writes them:
//!
//! - a `peeringVlan` peering listens: per address family of its layer-2 network's gateways a
//!   peer group `bgpp_<source>_4` / `bgpp_<source>_6` with `remote-as`, and one `bgp listen range
//!   SUBNET peer-group ...` per gateway subnet; the group is activated in its family only;
//! - a `loopbackPeer` peering opens a session to each address, `ttl-security hops 2` (the Go
//!   operator's multihop of two), activated for IPv4 unicast, and for IPv6 unicast too when the
//!   address is IPv6 (as the Go operator does);
//! - a peer group also gets `disable-connected-check` (its workloads are on the listen range's
//!   connected subnet anyway): so zebra resolves their next hops recursively, also over a host
//!   route `advertiseNeighbors` puts on a workload's address (the comment in `neighbors` says why);
//! - each session gets `bfd` when asked, `timers KEEPALIVE HOLD` when set, per family
//!   `maximum-prefix N` when set and the route maps `rm_bgpp_<source>_in` / `_out` (IPv4) and
//!   `rm6_bgpp_<source>_in` / `_out` (IPv6): `permit 10` matching the prefix list
//!   `pl_bgpp_<source>_<in|out>` of the peering's import or export items of that family, then
//!   `deny 65535`; with no item of a family every route of that family is refused, like the Go
//!   operator's default reject.

use std::fmt::Write as _;

use netrollout_api::{BgpPeeringConfig, NodeConfig, PrefixItem};

use crate::is_v6;
use crate::policy::{DEFAULT_DENY_SEQ, Family, prefix_list_line};

/// Route-map entry that lets the items of the peering's prefix list decide.
const MATCH_SEQ: u32 = 10;

/// The two directions of a peering's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Routes received from the workloads (`import`).
    In,
    /// Routes sent to the workloads (`export`).
    Out,
}

impl Way {
    fn word(self) -> &'static str {
        match self {
            Self::In => "in",
            Self::Out => "out",
        }
    }

    fn items(self, peering: &BgpPeeringConfig) -> &[PrefixItem] {
        match self {
            Self::In => &peering.import,
            Self::Out => &peering.export,
        }
    }
}

/// The peer group of a peering's listen ranges of one family, e.g. `bgpp_lb_4`.
pub fn peer_group_name(source: &str, family: Family) -> String {
    let digit = match family {
        Family::V4 => 4,
        Family::V6 => 6,
    };
    format!("bgpp_{source}_{digit}")
}

/// A peering's route map of one direction and family, e.g. `rm6_bgpp_lb_in`.
pub fn route_map_name(source: &str, way: Way, family: Family) -> String {
    let rm = match family {
        Family::V4 => "rm",
        Family::V6 => "rm6",
    };
    format!("{rm}_bgpp_{source}_{}", way.word())
}

/// A peering's prefix list of one direction (shared by its `ip` and `ipv6` lists).
pub fn prefix_list_name(source: &str, way: Way) -> String {
    format!("pl_bgpp_{source}_{}", way.word())
}

/// The peerings of `config` in the BGP instance of `vrf` (`None`: the default VRF).
pub(crate) fn of_vrf<'a>(
    config: &'a NodeConfig,
    vrf: Option<&'a str>,
) -> impl Iterator<Item = &'a BgpPeeringConfig> {
    config
        .bgp_peerings
        .iter()
        .filter(move |p| p.vrf.as_deref() == vrf)
}

/// Writes the prefix lists of every peering.
pub(crate) fn prefix_lists(out: &mut String, config: &NodeConfig) {
    let before = out.len();
    for peering in &config.bgp_peerings {
        for way in [Way::In, Way::Out] {
            let name = prefix_list_name(&peering.source, way);
            for (i, item) in way.items(peering).iter().enumerate() {
                prefix_list_line(out, &name, item, i);
            }
        }
    }
    if out.len() > before {
        out.push_str("!\n");
    }
}

/// Writes the four route maps of every peering.
pub(crate) fn route_maps(out: &mut String, config: &NodeConfig) {
    for peering in &config.bgp_peerings {
        for way in [Way::In, Way::Out] {
            for family in [Family::V4, Family::V6] {
                let map = route_map_name(&peering.source, way, family);
                let has_family = way
                    .items(peering)
                    .iter()
                    .any(|item| Family::of(&item.cidr) == family);
                if has_family {
                    let list = prefix_list_name(&peering.source, way);
                    let _ = writeln!(out, "route-map {map} permit {MATCH_SEQ}");
                    let _ = writeln!(out, " match {} address prefix-list {list}", family.ip());
                    out.push_str("exit\n!\n");
                }
                let _ = writeln!(out, "route-map {map} deny {DEFAULT_DENY_SEQ}");
                out.push_str("exit\n!\n");
            }
        }
    }
}

/// One session (or peer group of sessions) of a peering.
struct Session {
    /// The peer group or the neighbour's address.
    name: String,
    /// The families it is activated for.
    families: Vec<Family>,
    /// The listen ranges of a peer group; empty for a neighbour.
    ranges: Vec<String>,
}

/// The sessions of a peering: a peer group per family of its listen ranges, a neighbour per
/// loopback address.
fn sessions(peering: &BgpPeeringConfig) -> Vec<Session> {
    let mut out = Vec::new();
    for family in [Family::V4, Family::V6] {
        let v6 = family == Family::V6;
        let ranges: Vec<String> = peering
            .listen_ranges
            .iter()
            .filter(|r| is_v6(r) == v6)
            .cloned()
            .collect();
        if !ranges.is_empty() {
            out.push(Session {
                name: peer_group_name(&peering.source, family),
                families: vec![family],
                ranges,
            });
        }
    }
    for addr in &peering.neighbors {
        let families = if is_v6(addr) {
            vec![Family::V4, Family::V6]
        } else {
            vec![Family::V4]
        };
        out.push(Session {
            name: addr.clone(),
            families,
            ranges: Vec::new(),
        });
    }
    out
}

/// Writes the neighbour statements of the peerings of one BGP instance (inside `router bgp`,
/// before its address families).
pub(crate) fn neighbors<'a>(
    out: &mut String,
    peerings: impl Iterator<Item = &'a BgpPeeringConfig>,
) {
    for peering in peerings {
        for Session { name, ranges, .. } in sessions(peering) {
            let group = !ranges.is_empty();
            if group {
                let _ = writeln!(out, " neighbor {name} peer-group");
            }
            let _ = writeln!(out, " neighbor {name} remote-as {}", peering.remote_asn);
            if !group {
                let _ = writeln!(out, " neighbor {name} ttl-security hops 2");
            }
            if peering.bfd {
                let _ = writeln!(out, " neighbor {name} bfd");
            }
            if group {
                // The workloads are on the listen range's own subnet, so this takes nothing of
                // the check; it lets zebra resolve their next hops recursively. A workload's
                // address also has a host route of the node's (`advertiseNeighbors`: a kernel
                // route, protocol 178) more specific than the connected subnet, and zebra
                // resolves an eBGP route's next hop only over a connected route unless
                // recursion is allowed: without this line the workload's prefixes stay in BGP
                // ("*>") but never reach the kernel (next hop "inactive"), as the lab's
                // `peering` scenario found.
                let _ = writeln!(out, " neighbor {name} disable-connected-check");
            }
            if let (Some(keepalive), Some(hold)) = (peering.keepalive_seconds, peering.hold_seconds)
            {
                let _ = writeln!(out, " neighbor {name} timers {keepalive} {hold}");
            }
            for range in &ranges {
                let _ = writeln!(out, " bgp listen range {range} peer-group {name}");
            }
        }
    }
}

/// Writes, inside the `address-family` of `family`, the activation and policy of every session
/// of the peerings of one BGP instance that runs that family.
pub(crate) fn address_family<'a>(
    out: &mut String,
    family: Family,
    peerings: impl Iterator<Item = &'a BgpPeeringConfig>,
) {
    for peering in peerings {
        for Session { name, families, .. } in sessions(peering) {
            if !families.contains(&family) {
                continue;
            }
            let _ = writeln!(out, "  neighbor {name} activate");
            if let Some(max) = peering.maximum_prefixes {
                let _ = writeln!(out, "  neighbor {name} maximum-prefix {max}");
            }
            let import = route_map_name(&peering.source, Way::In, family);
            let export = route_map_name(&peering.source, Way::Out, family);
            let _ = writeln!(out, "  neighbor {name} route-map {import} in");
            let _ = writeln!(out, "  neighbor {name} route-map {export} out");
        }
    }
}
