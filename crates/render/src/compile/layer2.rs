//! `Layer2NetworkConfiguration`s: VLAN ids and VNIs unique, MTU, anycast MAC and gateways,
//! the VRF they attach to, and their interface names.

use std::collections::BTreeMap;

use netrollout_api::naming::{
    LAYER2_BRIDGE_PREFIX, LAYER2_VXLAN_PREFIX, MACVLAN_PREFIX, interface,
};
use netrollout_api::{Layer2Config, Layer2NetworkConfigurationSpec, NamedInput};

use super::{Compiler, LAYER2_KIND, Layer2, VRF_KIND, in_range};

impl Compiler {
    pub(super) fn layer2s(&mut self, inputs: &[NamedInput<Layer2NetworkConfigurationSpec>]) {
        let mut ids: BTreeMap<u16, &str> = BTreeMap::new();
        for input in inputs {
            let (name, spec) = (input.name.as_str(), &input.spec);
            let id = in_range::<u16>(
                &mut self.invalid,
                LAYER2_KIND,
                name,
                "spec.id",
                spec.id.into(),
                1,
                4094,
            );
            if let Some(id) = id
                && let Some(other) = ids.insert(id, name)
            {
                let message = format!(
                    "VLAN {id} is also used by {LAYER2_KIND} {other:?}; \
                     give each layer-2 network its own VLAN id"
                );
                self.invalid.push(LAYER2_KIND, name, "spec.id", message);
            }
            let vni = self.vni(LAYER2_KIND, name, "spec.vni", spec.vni);
            let mtu = in_range(
                &mut self.invalid,
                LAYER2_KIND,
                name,
                "spec.mtu",
                spec.mtu.into(),
                1000,
                9000,
            );
            let anycast_mac = spec
                .anycast_mac
                .as_ref()
                .and_then(|mac| self.anycast_mac(name, mac));
            self.anycast_gateways(name, spec.vrf.as_deref(), &spec.anycast_gateways);
            let vrf_name = spec.vrf.clone().filter(|v| !v.is_empty());
            if spec.advertise_neighbors && vrf_name.is_none() {
                self.invalid.push(
                    LAYER2_KIND,
                    name,
                    "spec.advertiseNeighbors",
                    netrollout_api::ADVERTISE_NEIGHBORS_NEEDS_VRF.to_string(),
                );
            }
            let vrf = vrf_name.as_ref().and_then(|v| {
                let found = self.out.vrfs.iter().position(|c| &c.name == v);
                if found.is_none() {
                    self.invalid.push(LAYER2_KIND, name, "spec.vrf", format!("VRF {v:?} is not defined by any {VRF_KIND}; create one with `vrf: {v}` or remove the field"));
                }
                found
            });
            let selector = self.selector(LAYER2_KIND, name, spec.node_selector.as_ref());
            let (Some(id), Some(vni), Some(mtu)) = (id, vni, mtu) else {
                continue;
            };
            self.out.layer2s.push(Layer2 {
                config: Layer2Config {
                    source: name.to_string(),
                    id,
                    vni,
                    mtu,
                    bridge_interface: interface(LAYER2_BRIDGE_PREFIX, id),
                    vxlan_interface: interface(LAYER2_VXLAN_PREFIX, id),
                    macvlan_interface: spec
                        .create_macvlan_interface
                        .then(|| interface(MACVLAN_PREFIX, id)),
                    vrf: vrf_name,
                    anycast_mac,
                    anycast_gateways: spec.anycast_gateways.clone(),
                    advertise_neighbors: spec.advertise_neighbors,
                    neigh_suppression: spec.neigh_suppression.unwrap_or(false),
                    disable_segmentation: spec.disable_segmentation,
                },
                selector,
                vrf,
            });
        }
        self.out.layer2s.sort_by_key(|l| l.config.id);
    }

    /// A unicast MAC address other than all zeros, lower-cased.
    fn anycast_mac(&mut self, name: &str, mac: &str) -> Option<String> {
        let bytes: Vec<u8> = mac
            .split(':')
            .filter(|b| b.len() == 2)
            .filter_map(|b| u8::from_str_radix(b, 16).ok())
            .collect();
        let problem = if mac.len() != 17 || bytes.len() != 6 {
            "is not a MAC address; write six hex pairs"
        } else if bytes[0] & 1 == 1 {
            "is a multicast address (the lowest bit of its first byte is set); use a unicast address"
        } else if bytes.iter().all(|b| *b == 0) {
            "is all zeros; use a unicast address"
        } else {
            return Some(mac.to_ascii_lowercase());
        };
        self.invalid.push(
            LAYER2_KIND,
            name,
            "spec.anycastMac",
            format!("{mac:?} {problem}, e.g. 1a:ee:cf:2f:a7:a8"),
        );
        None
    }

    /// Each gateway a host address of its subnet (not the network or IPv4 broadcast address),
    /// listed once, and its subnet overlapping no other gateway's subnet in the same VRF (the
    /// default VRF for networks without one): the VRF would route one subnet to two bridges.
    fn anycast_gateways(&mut self, name: &str, vrf: Option<&str>, gateways: &[String]) {
        let vrf = vrf
            .filter(|v| !v.is_empty())
            .unwrap_or_default()
            .to_string();
        for (i, gw) in gateways.iter().enumerate() {
            let field = format!("spec.anycastGateways[{i}]");
            let net = match crate::net::parse_cidr(gw) {
                Ok(net) => net,
                Err(e) => {
                    self.invalid.push(LAYER2_KIND, name, field, e.to_string());
                    continue;
                }
            };
            let host_bits = net.max_prefix_len() - net.prefix_len();
            let problem = if host_bits >= 2 && net.addr() == net.network() {
                Some("is the network address of its subnet")
            } else if host_bits >= 2 && net.addr() == net.broadcast() && net.addr().is_ipv4() {
                Some("is the broadcast address of its subnet")
            } else {
                None
            };
            if let Some(problem) = problem {
                self.invalid.push(
                    LAYER2_KIND,
                    name,
                    field,
                    format!(
                        "{gw:?} {problem}; a gateway must be a host address, e.g. {}",
                        ipnet::IpNet::new(
                            net.hosts().next().unwrap_or(net.addr()),
                            net.prefix_len()
                        )
                        .unwrap_or(net)
                    ),
                );
                continue;
            }
            if let Some(j) = gateways[..i]
                .iter()
                .position(|g| crate::net::parse_cidr(g).is_ok_and(|g| g.addr() == net.addr()))
            {
                self.invalid.push(LAYER2_KIND, name, field, format!("{gw:?} repeats the address of spec.anycastGateways[{j}]; list each gateway once"));
                continue;
            }
            let subnets = self.gateway_subnets.entry(vrf.clone()).or_default();
            let clash = subnets.iter().find(|(other, ..)| {
                other.contains(&net.network()) || net.contains(&other.network())
            });
            if let Some((other, owner, owner_field)) = clash {
                let whose = if owner == name {
                    "this network's".to_string()
                } else {
                    format!("{LAYER2_KIND} {owner:?}'s")
                };
                let in_vrf = if vrf.is_empty() {
                    "the default VRF".to_string()
                } else {
                    format!("VRF {vrf:?}")
                };
                let message = format!(
                    "subnet {} overlaps {} ({whose} {owner_field}) in {in_vrf}; give each layer-2 network of a VRF its own subnet",
                    net.trunc(),
                    other.trunc()
                );
                self.invalid.push(LAYER2_KIND, name, field, message);
                continue;
            }
            subnets.push((net, name.to_string(), field));
        }
    }
}
