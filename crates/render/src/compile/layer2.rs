//! `Layer2NetworkConfiguration`s: VLAN ids and VNIs unique, MTU, anycast MAC and gateways,
//! the VRF they attach to, and their interface names.

use std::collections::BTreeMap;

use ipnet::IpNet;
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
            let anycast_mac = spec.anycast_mac.as_ref().and_then(|mac| {
                let ok = mac.len() == 17 && mac.split(':').all(|b| b.len() == 2 && b.bytes().all(|c| c.is_ascii_hexdigit()));
                if !ok {
                    self.invalid.push(LAYER2_KIND, name, "spec.anycastMac", format!("{mac:?} is not a MAC address; write six hex pairs, e.g. 1a:ee:cf:2f:a7:a8"));
                }
                ok.then(|| mac.to_ascii_lowercase())
            });
            for (i, gw) in spec.anycast_gateways.iter().enumerate() {
                if gw.parse::<IpNet>().is_err() {
                    self.invalid.push(
                        LAYER2_KIND,
                        name,
                        format!("spec.anycastGateways[{i}]"),
                        format!(
                            "{gw:?} is not an address with prefix length; write e.g. 10.250.0.1/24"
                        ),
                    );
                }
            }
            if spec.advertise_neighbors {
                self.invalid.push(
                    LAYER2_KIND,
                    name,
                    "spec.advertiseNeighbors",
                    netrollout_api::ADVERTISE_NEIGHBORS_REFUSED.to_string(),
                );
            }
            if spec.disable_segmentation {
                self.invalid.push(
                    LAYER2_KIND,
                    name,
                    "spec.disableSegmentation",
                    netrollout_api::DISABLE_SEGMENTATION_REFUSED.to_string(),
                );
            }
            let vrf_name = spec.vrf.clone().filter(|v| !v.is_empty());
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
}
