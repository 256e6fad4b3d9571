//! Test helpers: a fresh network namespace per test, `ip` in it, small config builders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use netrollout_dataplane::{Address, Dataplane, Desired, Link, LinkKind, Mac, VXLAN_PORT, Vxlan};

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A fresh `ip netns` namespace (prefixed `dpt-`), deleted on drop. Needs root; fails loudly.
pub struct TestNs {
    pub name: String,
}

impl TestNs {
    pub fn new() -> Self {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("dpt-{}-{n}", std::process::id());
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip (iproute2 needed)");
        assert!(
            out.status.success(),
            "`ip netns add {name}` failed (kernel tests need root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let ns = Self { name };
        ns.ip("link set lo up");
        ns
    }

    pub fn dataplane(&self) -> Dataplane {
        Dataplane::in_netns(&self.name, managed()).expect("connect in namespace")
    }

    /// Runs `ip -n NS ARGS`, asserts success, returns stdout.
    pub fn ip(&self, args: &str) -> String {
        self.run("ip", args)
    }

    /// Runs `bridge -n NS ARGS`, asserts success, returns stdout.
    pub fn bridge(&self, args: &str) -> String {
        self.run("bridge", args)
    }

    fn run(&self, tool: &str, args: &str) -> String {
        let mut cmd = Command::new(tool);
        cmd.args(["-n", &self.name]).args(args.split_whitespace());
        let out = cmd.output().expect("run iproute2");
        assert!(
            out.status.success(),
            "`{tool} -n {} {args}` failed: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for TestNs {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
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
