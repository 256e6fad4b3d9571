//! The `vrf` blocks and the `router bgp` instances.
//!
//! Route leak: like the Go operator, every VRF is joined to the default VRF by its veth pair
//! (`vd.<name>` in the default VRF, `vv.<name>` in the VRF) with an iBGP session over each end
//! (`neighbor IF interface remote-as internal`, IPv6 link-local, no addresses to allocate). The
//! import route map filters what the default VRF takes in from the VRF; the export route map what
//! it sends into the VRF. The VRF announces into EVPN (type-5) what its export map permits.

use std::fmt::Write as _;

use ipnet::IpNet;
use netrollout_api::{NodeConfig, VrfConfig};

use crate::policy::{Direction, Family, route_map_name};
use crate::{Settings, is_v6, peering};

/// Writes `vrf vr.<name>` with its layer-3 `vni`, for every VRF that has one.
pub(crate) fn vrf_blocks(out: &mut String, config: &NodeConfig) {
    for vrf in &config.vrfs {
        if let Some(vni) = vrf.vni {
            let _ = writeln!(out, "vrf {}", vrf.vrf_interface);
            let _ = writeln!(out, " vni {vni}");
            out.push_str("exit-vrf\n!\n");
        }
    }
}

/// Writes one `router bgp <asn> vrf vr.<name>` per VRF.
pub(crate) fn vrf_instances(out: &mut String, config: &NodeConfig, settings: &Settings) {
    for vrf in &config.vrfs {
        vrf_instance(out, config, vrf, settings);
    }
}

fn vrf_instance(out: &mut String, config: &NodeConfig, vrf: &VrfConfig, settings: &Settings) {
    let peerings = || peering::of_vrf(config, Some(vrf.name.as_str()));
    let peer = &vrf.veth_vrf_interface;
    let _ = writeln!(out, "router bgp {} vrf {}", settings.asn, vrf.vrf_interface);
    let _ = writeln!(out, " bgp router-id {}", settings.router_id);
    out.push_str(" no bgp suppress-duplicates\n");
    // Sessions are activated per family below; FRR then shows every `activate` line, so the
    // running config equals this text and a reload of it changes nothing.
    out.push_str(" no bgp default ipv4-unicast\n");
    let _ = writeln!(out, " neighbor {peer} interface remote-as internal");
    peering::neighbors(out, peerings());
    for family in [Family::V4, Family::V6] {
        let (af, v6) = match family {
            Family::V4 => ("ipv4", false),
            Family::V6 => ("ipv6", true),
        };
        let export = route_map_name(&vrf.name, Direction::Export, family);
        let import = route_map_name(&vrf.name, Direction::Import, family);
        let _ = writeln!(out, " !\n address-family {af} unicast");
        let _ = writeln!(out, "  redistribute connected route-map {export}");
        let _ = writeln!(out, "  redistribute kernel route-map {export}");
        for aggregate in aggregates(vrf, v6) {
            let _ = writeln!(out, "  aggregate-address {aggregate}");
        }
        let _ = writeln!(out, "  neighbor {peer} activate");
        let _ = writeln!(out, "  neighbor {peer} soft-reconfiguration inbound");
        let _ = writeln!(out, "  neighbor {peer} route-map {export} in");
        let _ = writeln!(out, "  neighbor {peer} route-map {import} out");
        peering::address_family(out, family, peerings());
        out.push_str(" exit-address-family\n");
    }
    if vrf.vni.is_some() {
        out.push_str(" !\n address-family l2vpn evpn\n");
        for family in [Family::V4, Family::V6] {
            let af = if family == Family::V4 { "ipv4" } else { "ipv6" };
            let export = route_map_name(&vrf.name, Direction::Export, family);
            let _ = writeln!(out, "  advertise {af} unicast route-map {export}");
        }
        if let Some(rt) = &vrf.route_target {
            let _ = writeln!(out, "  route-target import {rt}");
            let _ = writeln!(out, "  route-target export {rt}");
        }
        out.push_str(" exit-address-family\n");
    }
    out.push_str("exit\n!\n");
}

/// The VRF's aggregates of one family, sorted and without duplicates (several policies may
/// name the same one).
fn aggregates(vrf: &VrfConfig, v6: bool) -> Vec<String> {
    let mut nets: Vec<String> = vrf
        .policies
        .iter()
        .flat_map(|p| p.aggregate.iter())
        .filter(|a| is_v6(a) == v6)
        .map(|a| match a.parse::<IpNet>() {
            Ok(net) => net.trunc().to_string(),
            // Validated by render; kept verbatim so that FRR reports it if not.
            Err(_) => a.clone(),
        })
        .collect();
    nets.sort_by_key(|a| a.parse::<IpNet>().ok());
    nets.dedup();
    nets
}

/// Writes one `router bgp <asn> vrf tb.<id>` per routing table, redistributing its kernel routes.
pub(crate) fn table_instances(out: &mut String, config: &NodeConfig, settings: &Settings) {
    for table in &config.routing_tables {
        let _ = writeln!(out, "router bgp {} vrf {}", settings.asn, table.interface);
        let _ = writeln!(out, " bgp router-id {}", settings.router_id);
        for af in ["ipv4", "ipv6"] {
            let _ = writeln!(out, " !\n address-family {af} unicast");
            out.push_str("  redistribute kernel\n");
            out.push_str(" exit-address-family\n");
        }
        out.push_str("exit\n!\n");
    }
}

/// Writes the agent's additions to the default VRF's `router bgp <asn>` (the base config owns the
/// instance itself): its end of every VRF's route leak, `import vrf` of every routing table, and
/// `advertise-all-vni` when the node has any VNI.
pub(crate) fn default_instance(out: &mut String, config: &NodeConfig, settings: &Settings) {
    let peerings = || peering::of_vrf(config, None);
    let has_peerings = peerings().next().is_some();
    if config.vrfs.is_empty()
        && config.routing_tables.is_empty()
        && config.layer2s.is_empty()
        && !has_peerings
    {
        return;
    }
    let _ = writeln!(out, "router bgp {}", settings.asn);
    for vrf in &config.vrfs {
        let _ = writeln!(
            out,
            " neighbor {} interface remote-as internal",
            vrf.veth_default_interface
        );
    }
    peering::neighbors(out, peerings());
    for family in [Family::V4, Family::V6] {
        if config.vrfs.is_empty() && config.routing_tables.is_empty() && !has_peerings {
            break;
        }
        let af = if family == Family::V4 { "ipv4" } else { "ipv6" };
        let _ = writeln!(out, " !\n address-family {af} unicast");
        for vrf in &config.vrfs {
            let peer = &vrf.veth_default_interface;
            let import = route_map_name(&vrf.name, Direction::Import, family);
            let export = route_map_name(&vrf.name, Direction::Export, family);
            // Explicit for IPv4 too, as the base may say `no bgp default ipv4-unicast`. With
            // FRR's default (on) the running config hides this line, so `frr-reload.py` sends it
            // again on every reload: a no-op.
            let _ = writeln!(out, "  neighbor {peer} activate");
            let _ = writeln!(out, "  neighbor {peer} allowas-in origin");
            let _ = writeln!(out, "  neighbor {peer} soft-reconfiguration inbound");
            let _ = writeln!(out, "  neighbor {peer} route-map {import} in");
            let _ = writeln!(out, "  neighbor {peer} route-map {export} out");
        }
        for table in &config.routing_tables {
            let _ = writeln!(out, "  import vrf {}", table.interface);
        }
        peering::address_family(out, family, peerings());
        out.push_str(" exit-address-family\n");
    }
    let has_vni = !config.layer2s.is_empty() || config.vrfs.iter().any(|v| v.vni.is_some());
    if has_vni {
        out.push_str(" !\n address-family l2vpn evpn\n  advertise-all-vni\n exit-address-family\n");
    }
    out.push_str("exit\n!\n");
}
