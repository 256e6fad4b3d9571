//! Test helpers: a fresh network namespace per test (the test kit's), small config builders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::ops::Deref;

use netrollout_dataplane::{Address, Dataplane, Desired, Link, LinkKind, Mac, VXLAN_PORT, Vxlan};
use netrollout_testkit::netns::Netns;

/// A fresh network namespace from the test kit (prefixed `dpt-`, `ip`/`bridge` in it, deleted
/// on drop) with the dataplane connected to it. Needs root; fails loudly.
pub struct TestNs(Netns);

impl Deref for TestNs {
    type Target = Netns;
    fn deref(&self) -> &Netns {
        &self.0
    }
}

impl TestNs {
    pub fn new() -> Self {
        Self(Netns::new("dpt"))
    }

    pub fn dataplane(&self) -> Dataplane {
        Dataplane::in_netns(&self.name, managed()).expect("connect in namespace")
    }
}

pub const ANYCAST_MAC: Mac = Mac([0x02, 0x54, 0x00, 0x00, 0x00, 0x01]);

pub fn vxlan(vni: u32, neigh_suppress: bool) -> LinkKind {
    LinkKind::Vxlan(Vxlan {
        vni,
        local: "192.0.2.1".parse().unwrap(),
        underlay: None,
        port: VXLAN_PORT,
        learning: false,
        neigh_suppress,
    })
}

/// A Layer2 network the way the renderer names it: bridge `l2.N` with the anycast MAC and a
/// gateway address, VXLAN `lx.N` enslaved to it.
pub fn add_layer2(d: &mut Desired, vlan: u32, mtu: u32) {
    let bridge = format!("l2.{vlan}");
    d.add_link(
        Link::new(&bridge, LinkKind::Bridge)
            .mtu(mtu)
            .mac(ANYCAST_MAC),
    );
    d.add_link(
        Link::new(format!("lx.{vlan}"), vxlan(100_000 + vlan, true))
            .mtu(mtu)
            .master(&bridge),
    );
    let addr = format!("10.{}.{}.1/24", vlan / 256, vlan % 256)
        .parse()
        .unwrap();
    d.addresses.push(Address { link: bridge, addr });
}

pub fn address(link: &str, addr: &str) -> Address {
    Address {
        link: link.into(),
        addr: addr.parse().unwrap(),
    }
}

/// The contract's managed prefixes, as the agent hands them to the dataplane.
pub fn managed() -> netrollout_dataplane::Managed {
    netrollout_dataplane::Managed::new(netrollout_api::MANAGED_PREFIXES)
        .expect("the API's prefixes")
}
