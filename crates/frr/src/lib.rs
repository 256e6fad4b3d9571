//! The FRR renderer: a node's rendered [`NodeConfig`] plus its routing [`Settings`] → the
//! FRR configuration text the agent manages.
//!
//! Pure: no I/O, no async, no clock. The same input gives byte-identical text, so the agent can
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
//! - this file: [`Settings`], [`render`] and [`with_base`].

#![forbid(unsafe_code)]

pub mod bgp;
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
/// The text has, in this order: the `vrf` blocks with their VNI, the prefix lists, the route
/// maps, one `router bgp` instance per VRF and per routing table, and the additions to the
/// default VRF's `router bgp` (its end of every route leak, the routing tables' `import vrf`).
/// An empty config renders an empty string.
pub fn render(config: &NodeConfig, settings: &Settings) -> String {
    let mut out = String::new();
    bgp::vrf_blocks(&mut out, config);
    policy::prefix_lists(&mut out, config);
    policy::route_maps(&mut out, config);
    bgp::vrf_instances(&mut out, config, settings);
    bgp::table_instances(&mut out, config, settings);
    bgp::default_instance(&mut out, config, settings);
    out
}

/// The full `frr.conf`: the operator-owned `base`, then `managed` between [`BEGIN_MARKER`] and
/// [`END_MARKER`].
///
/// A managed section already in `base` (an `frr.conf` the agent wrote before) is dropped first, so
/// `with_base(&with_base(b, m1), m2) == with_base(b, m2)`.
pub fn with_base(base: &str, managed: &str) -> String {
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
