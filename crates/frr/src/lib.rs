//! The FRR renderer: a node's rendered [`NodeConfig`] plus its routing [`Settings`] → the
//! FRR configuration text the agent manages.
//!
//! The renderer is pure: no I/O, no async, no clock. The same input gives byte-identical text, so the agent can
//! compare texts to know whether FRR needs a write at all. The layout follows the Go network
//! operator's templates (`pkg/frr/tpl/*.tpl`), so its users find the names they know:
//! `vrf vr.<name>` with its `vni`, `ip`/`ipv6 prefix-list pl_<vrf>_<import|export>_<seq>`,
//! `route-map rm_<vrf>_<import|export>` (IPv4) and `rm6_...` (IPv6), one
//! `router bgp <asn> vrf vr.<name>` per VRF peering with the default VRF over its veth pair, and
//! `router bgp <asn> vrf tb.<id>` per routing table. See `docs/frr.md` for every field.
//!
//! Layout:
//! - [`policy`]: prefix lists and route maps of the VRFs' import and export policies.
//! - [`bgp`]: the `vrf` blocks and `router bgp` instances (VRFs, routing tables, the default
//!   VRF's side of the route leak).
//! - [`peering`]: BGP peerings with workloads (`BGPPeering`): listen ranges and peer groups,
//!   loopback neighbours, their prefix lists and route maps.
//! - this file: [`Settings`], [`render`] and [`with_base`] (base + managed text; the managed
//!   VRF blocks ahead of the base, around an FRR 8.4 reload bug).
//! - [`daemons`]: the one start of FRR's daemons (zebra, then bgpd once zebra is up) in a
//!   network namespace and pathspace of their own, the crate's only I/O (std processes, no
//!   runtime): the lab runs its nodes' FRR with it, the tests and benchmarks theirs.

#![forbid(unsafe_code)]

pub mod bgp;
pub mod daemons;
pub mod peering;
pub mod policy;

use std::net::Ipv4Addr;

use netrollout_api::NodeConfig;

/// First line of the managed sections in `frr.conf`.
pub const BEGIN_MARKER: &str = "! ---- netrollout managed: begin (do not edit below) ----";
/// Last line of the managed sections in `frr.conf`.
pub const END_MARKER: &str = "! ---- netrollout managed: end ----";

/// What the rendered config does not say about the node's routing: agent flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The node's BGP AS number (the same as in the base config's `router bgp`).
    pub asn: u32,
    /// The BGP router id of every instance the agent creates (VRFs, routing tables). It must
    /// differ from the router id of the base config's default instance: each VRF peers with the
    /// default VRF over iBGP, and BGP refuses a session between equal ids. The Go operator uses
    /// the node's VTEP (underlay) address here.
    pub router_id: Ipv4Addr,
}

/// Renders the agent-managed FRR configuration of one node.
///
/// The text has, in this order: the `vrf` blocks with their VNI, the prefix lists and route maps
/// (the VRFs', then the peerings'), one `router bgp` instance per VRF and per routing table, and
/// the additions to the default VRF's `router bgp` (its end of every route leak, the routing
/// tables' `import vrf`, the peerings of the default VRF).
/// An empty config renders an empty string.
pub fn render(config: &NodeConfig, settings: &Settings) -> String {
    let mut out = String::new();
    bgp::vrf_blocks(&mut out, config);
    policy::prefix_lists(&mut out, config);
    policy::route_maps(&mut out, config);
    peering::prefix_lists(&mut out, config);
    peering::route_maps(&mut out, config);
    bgp::vrf_instances(&mut out, config, settings);
    bgp::table_instances(&mut out, config, settings);
    bgp::default_instance(&mut out, config, settings);
    out
}

/// The full `frr.conf`: the operator-owned `base`, then `managed` between [`BEGIN_MARKER`] and
/// [`END_MARKER`] — except the managed `vrf NAME` ... `exit-vrf` blocks, which go ahead of the
/// base between [`VRF_BEGIN_MARKER`] and [`VRF_END_MARKER`] (see [`vrfs_first`] for the FRR bug
/// this avoids).
///
/// Managed sections already in `base` (an `frr.conf` the agent wrote before) are dropped first,
/// so `with_base(&with_base(b, m1), m2) == with_base(b, m2)`.
pub fn with_base(base: &str, managed: &str) -> String {
    vrfs_first(&joined(base, managed))
}

/// `base` without an earlier managed section, then `managed` between the markers.
fn joined(base: &str, managed: &str) -> String {
    let stripped = strip_managed(base);
    let mut base = stripped.trim_end();
    // The separator `with_base` wrote before the managed section last time.
    while let Some(rest) = base.strip_suffix("\n!") {
        base = rest.trim_end();
    }
    let mut out = String::with_capacity(base.len() + managed.len() + 128);
    if !base.is_empty() {
        out.push_str(base);
        out.push_str("\n!\n");
    }
    out.push_str(BEGIN_MARKER);
    out.push('\n');
    out.push_str(managed);
    if !managed.is_empty() && !managed.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(END_MARKER);
    out.push('\n');
    out
}

/// First line of the managed VRF blocks, which [`vrfs_first`] puts ahead of the base.
pub const VRF_BEGIN_MARKER: &str = "! ---- netrollout managed VRFs: begin (do not edit below) ----";
/// Last line of the managed VRF blocks.
pub const VRF_END_MARKER: &str = "! ---- netrollout managed VRFs: end ----";

/// `full` (what [`with_base`] joined) with the managed section's `vrf NAME` ... `exit-vrf` blocks
/// moved ahead of the base, after its leading `frr version`/`frr defaults` lines, between
/// [`VRF_BEGIN_MARKER`] and [`VRF_END_MARKER`] (a block already there, from an `frr.conf` copied
/// into the base, is dropped first).
///
/// Why: `frr-reload.py` (FRR 8.4) sends the lines to add in the order of their contexts in the
/// new file, and the base's `router bgp ASN` comes first. Its chunk leaves vtysh in bgpd's
/// `router bgp` node; the following `vrf NAME` is then retried one node up, and zebra, never
/// in that node, gets the `exit` too and leaves its config node, so it misses `vrf NAME` and
/// takes ` vni N` as the global command: the VNI lands on the default VRF (`show vrf vni` says
/// `default`) and the routing probe `evpn vni N` fails. With the VRF blocks first, no bgpd-only
/// chunk comes before them.
fn vrfs_first(full: &str) -> String {
    let (mut head, mut vrfs, mut rest) = (String::new(), String::new(), String::new());
    let (mut in_managed, mut in_vrf, mut in_old, mut leading) = (false, false, false, true);
    let mut after_old = false;
    for line in full.lines() {
        if line == VRF_BEGIN_MARKER {
            in_old = true;
            continue;
        }
        if in_old {
            in_old = line != VRF_END_MARKER;
            after_old = !in_old;
            continue;
        }
        if std::mem::take(&mut after_old) && line == "!" {
            continue;
        }
        if leading && (line.starts_with("frr ") || line.trim().is_empty()) {
            head.push_str(line);
            head.push('\n');
            continue;
        }
        leading = false;
        if line == BEGIN_MARKER {
            in_managed = true;
        } else if line == END_MARKER {
            in_managed = false;
        }
        if in_managed && (in_vrf || line.starts_with("vrf ")) {
            in_vrf = line != "exit-vrf";
            vrfs.push_str(line);
            vrfs.push('\n');
            continue;
        }
        rest.push_str(line);
        rest.push('\n');
    }
    if vrfs.is_empty() {
        return format!("{head}{rest}");
    }
    format!("{head}{VRF_BEGIN_MARKER}\n{vrfs}{VRF_END_MARKER}\n!\n{rest}")
}

/// `text` without the lines from [`BEGIN_MARKER`] to [`END_MARKER`] (inclusive).
pub fn strip_managed(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    for line in text.lines() {
        if line == BEGIN_MARKER {
            inside = true;
        } else if line == END_MARKER {
            inside = false;
        } else if !inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether an address or network string is IPv6 (contains a colon).
pub(crate) fn is_v6(cidr: &str) -> bool {
    cidr.contains(':')
}
