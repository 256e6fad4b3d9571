//! Apply order and layer-3 VNIs: a new VRF with a VNI on nodes that already run EVPN
//! (`advertise-all-vni` on). The agent applies the kernel first (the VRF, its bridge — the
//! VNI's SVI — and VXLAN device, up), then FRR. The hazard of that order, which other
//! operators' FRR 10 agents avoid by creating the devices down, reloading FRR, waiting until
//! the VNI shows in `show vrf vni` and only then bringing the SVI up: zebra sees the new VXLAN
//! device before FRR's `vni` line for its VRF and takes the VNI for a layer-2 one, or hands
//! bgpd a router MAC the bridge no longer has (a bridge takes a port's MAC when the port joins)
//! or none, so the other node's routes to the VRF point at a MAC no one answers.
//!
//! On FRR 8.4 the hazard is real in another form: zebra installs a layer-3 VNI's remote router
//! MAC and next hop only for a route that reaches it while the VNI is up, so a node whose new
//! VRF imported the other node's routes early kept them without router MACs (the echo below
//! timed out in two runs of three before the agent registered new VNIs again after its apply:
//! `src/frr/l3vni.rs`).
//!
//! Checked on both nodes, with real FRR of the run's version and traffic: zebra has the VNI as
//! a layer-3 VNI, up, with the bridge's current MAC as router MAC; the other node's type-5
//! route carries that MAC; and an ICMP echo between the nodes' loopbacks in the new VRF is
//! answered (both directions' routes and their router MACs in use).

use netrollout_api::NodeConfig;

use crate::config::{NODE1_T2, NODE2_T2, ROUTE_WAIT, VNI2, wait, with_t2};
use crate::node::Node;
use crate::say;

pub async fn new_vrf_on_running_nodes(
    n1: &mut Node,
    n2: &mut Node,
    c1: NodeConfig,
    c2: NodeConfig,
) {
    tokio::join!(
        n1.apply_ok("rev-5", with_t2(c1, NODE1_T2)),
        n2.apply_ok("rev-5", with_t2(c2, NODE2_T2))
    );
    say("rev-5 (a second VRF, vr.t2 with VNI 5001) Provisioned on both nodes");
    for (name, n) in [("node 1", &*n1), ("node 2", &*n2)] {
        let mac = n.mac("br.t2");
        let vni = wait(
            &format!("{name}'s zebra has VNI {VNI2} on vr.t2, up, router MAC {mac} (br.t2's)"),
            ROUTE_WAIT,
            || {
                let v = n.vrf_vni("vr.t2")?;
                (v["vni"] == VNI2 && v["state"] == "Up" && v["routerMac"] == mac.as_str())
                    .then_some(v)
            },
        );
        let evpn = n.evpn_vni(VNI2);
        assert_eq!(evpn["type"], "L3", "{name}: {evpn} ({vni})");
    }
    for (name, from, to, prefix) in [
        ("node 2", &*n1, &*n2, "10.60.1.0/24"),
        ("node 1", &*n2, &*n1, "10.60.2.0/24"),
    ] {
        let rmac = from.mac("br.t2");
        let route = wait(
            &format!("{name} receives {prefix} as a type-5 route"),
            ROUTE_WAIT,
            || to.type5(prefix),
        );
        assert!(
            route.contains(&format!("Rmac:{rmac}")),
            "{name}: the type-5 route for {prefix} lacks the sender's router MAC {rmac}: {route}"
        );
    }
    say("each node's type-5 route for its vr.t2 prefix carries its br.t2 MAC as router MAC");
    wait(
        "an echo in vr.t2 from node 2 (10.60.2.1) to node 1's 10.60.1.1 is answered",
        ROUTE_WAIT,
        || n2.ping("vr.t2", "10.60.1.1").then_some(()),
    );
    wait(
        "an echo in vr.t2 from node 1 (10.60.1.1) to node 2's 10.60.2.1 is answered",
        ROUTE_WAIT,
        || n1.ping("vr.t2", "10.60.2.1").then_some(()),
    );
}
