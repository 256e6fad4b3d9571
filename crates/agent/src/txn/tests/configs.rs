//! The configs of the transaction's tests: layer-2 networks by VLAN id, and what the model
//! kernel and the model FRR hold for one.

use netrollout_api::{Layer2Config, NodeConfig};
use netrollout_dataplane::Desired;

use crate::convert::{self, Vtep};

/// The FRR text of a config: the base, then one block per VRF and layer-2 network.
pub fn frr_text(config: &NodeConfig) -> String {
    let mut text = String::from("frr defaults datacenter\nrouter bgp 65000\n");
    for l2 in &config.layer2s {
        text.push_str(&format!("! layer2 {} vni {}\n", l2.id, l2.vni));
    }
    text
}

/// The kernel objects of `config`.
pub fn desired(config: &NodeConfig) -> Desired {
    let vtep = Vtep {
        local: Some("192.0.2.1".parse().expect("an address")),
        underlay: None,
    };
    convert::to_desired(config, &vtep).expect("a config of the tests converts")
}

/// A config of layer-2 networks with these VLAN ids.
pub fn config(ids: &[u16]) -> NodeConfig {
    NodeConfig {
        layer2s: ids
            .iter()
            .map(|&id| Layer2Config {
                id,
                vni: 10_000 + u32::from(id),
                mtu: 1500,
                bridge_interface: format!("l2.{id}"),
                vxlan_interface: format!("lx.{id}"),
                anycast_gateways: vec![format!("10.{}.0.1/24", id % 250)],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
