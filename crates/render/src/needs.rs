//! What a rendered node config needs from its node: the kernel drivers of the devices the agent
//! creates for it and the routing daemon that consumes its route policy. The configurator
//! compares this with the capabilities the node's agent reported before it dispatches
//! (docs/contract.md, "Pre-flight").
//!
//! It follows what the agent makes of a config (`crates/agent/src/convert.rs`): a VRF is a
//! `vrf` device with a `veth` pair into the default VRF, plus a `bridge` and a `vxlan` device
//! when it has a VNI, and a `dummy` device per loopback; a layer-2 network is a `bridge` with a
//! `vxlan` port and, when asked for, a `macvlan`; a routing table is a `vrf` device. VRFs and
//! layer-2 networks are routed by FRR's `bgpd` (BGP per VRF, EVPN), and so are the workloads'
//! BGP peerings (which add no device; `enableBFD` needs FRR's `bfdd` too). No config today creates
//! 802.1Q VLAN devices or turns bridge VLAN filtering on, so nothing needs `8021q` or
//! `vlan_filtering` (the agent still reports them).

use std::collections::BTreeSet;

use netrollout_api::{Capability, NodeConfig};

/// The capabilities `config` needs, sorted. An empty config needs nothing.
pub fn needs(config: &NodeConfig) -> BTreeSet<Capability> {
    let mut out = BTreeSet::new();
    for vrf in &config.vrfs {
        out.extend([Capability::Vrf, Capability::Veth, Capability::Bgpd]);
        if vrf.vni.is_some() && vrf.bridge_interface.is_some() && vrf.vxlan_interface.is_some() {
            out.extend([Capability::Bridge, Capability::Vxlan]);
        }
        if !vrf.loopbacks.is_empty() {
            out.insert(Capability::Dummy);
        }
    }
    for l2 in &config.layer2s {
        out.extend([Capability::Bridge, Capability::Vxlan, Capability::Bgpd]);
        if l2.macvlan_interface.is_some() {
            out.insert(Capability::Macvlan);
        }
    }
    if !config.routing_tables.is_empty() {
        out.insert(Capability::Vrf);
    }
    if !config.bgp_peerings.is_empty() {
        out.insert(Capability::Bgpd);
    }
    if config.bgp_peerings.iter().any(|p| p.bfd) {
        out.insert(Capability::Bfdd);
    }
    out
}

#[cfg(test)]
mod tests {
    use netrollout_api::{Layer2Config, LoopbackConfig, NodeConfig, RoutingTableConfig, VrfConfig};

    use super::*;
    use Capability::*;

    fn vrf(vni: Option<u32>, loopbacks: usize) -> VrfConfig {
        VrfConfig {
            name: "tenant".into(),
            table_id: 100,
            vrf_interface: "vr.tenant".into(),
            bridge_interface: vni.map(|_| "br.tenant".into()),
            vxlan_interface: vni.map(|_| "vx.tenant".into()),
            veth_default_interface: "vd.tenant".into(),
            veth_vrf_interface: "vv.tenant".into(),
            vni,
            loopbacks: (0..loopbacks)
                .map(|i| LoopbackConfig {
                    name: format!("lo.t{i}"),
                    address: format!("10.9.0.{i}/32"),
                })
                .collect(),
            ..Default::default()
        }
    }

    fn layer2(macvlan: bool) -> Layer2Config {
        Layer2Config {
            source: "l2-100".into(),
            id: 100,
            vni: 10100,
            mtu: 1500,
            bridge_interface: "l2.100".into(),
            vxlan_interface: "lx.100".into(),
            macvlan_interface: macvlan.then(|| "mv.100".into()),
            ..Default::default()
        }
    }

    fn set(caps: &[Capability]) -> BTreeSet<Capability> {
        caps.iter().copied().collect()
    }

    #[test]
    fn an_empty_config_needs_nothing() {
        assert_eq!(needs(&NodeConfig::default()), set(&[]));
    }

    #[test]
    fn a_vrf_without_a_vni_needs_vrf_veth_and_bgpd_but_no_bridge_or_vxlan() {
        let c = NodeConfig {
            vrfs: vec![vrf(None, 0)],
            ..Default::default()
        };
        assert_eq!(needs(&c), set(&[Vrf, Veth, Bgpd]));
    }

    #[test]
    fn a_vrf_with_a_vni_and_loopbacks_needs_its_evpn_devices_and_dummy() {
        let c = NodeConfig {
            vrfs: vec![vrf(Some(100), 2)],
            ..Default::default()
        };
        assert_eq!(needs(&c), set(&[Vrf, Bridge, Vxlan, Veth, Dummy, Bgpd]));
    }

    #[test]
    fn a_layer2_network_needs_bridge_vxlan_and_bgpd_and_macvlan_only_when_asked() {
        let plain = NodeConfig {
            layer2s: vec![layer2(false)],
            ..Default::default()
        };
        assert_eq!(needs(&plain), set(&[Bridge, Vxlan, Bgpd]));
        let with_macvlan = NodeConfig {
            layer2s: vec![layer2(true)],
            ..Default::default()
        };
        assert_eq!(needs(&with_macvlan), set(&[Bridge, Vxlan, Macvlan, Bgpd]));
    }

    #[test]
    fn a_routing_table_needs_a_vrf_device_and_no_daemon() {
        let c = NodeConfig {
            routing_tables: vec![RoutingTableConfig {
                source: "taas-200".into(),
                table_id: 200,
                interface: "tb.200".into(),
            }],
            ..Default::default()
        };
        assert_eq!(needs(&c), set(&[Vrf]));
    }

    #[test]
    fn a_bgp_peering_alone_needs_bgpd_and_no_device() {
        let c = NodeConfig {
            bgp_peerings: vec![netrollout_api::BgpPeeringConfig::default()],
            ..Default::default()
        };
        assert_eq!(needs(&c), set(&[Bgpd]));
        let mut bfd = c.clone();
        bfd.bgp_peerings.push(netrollout_api::BgpPeeringConfig {
            bfd: true,
            ..Default::default()
        });
        assert_eq!(needs(&bfd), set(&[Bgpd, Bfdd]), "enableBFD needs bfdd");
    }

    #[test]
    fn no_config_needs_vlan_devices_or_vlan_filtering() {
        let c = NodeConfig {
            vrfs: vec![vrf(Some(100), 1)],
            layer2s: vec![layer2(true)],
            routing_tables: vec![RoutingTableConfig::default()],
            bgp_peerings: vec![netrollout_api::BgpPeeringConfig::default()],
        };
        let n = needs(&c);
        assert!(!n.contains(&Vlan) && !n.contains(&VlanFiltering), "{n:?}");
    }
}
