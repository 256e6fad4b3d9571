//! The agent's capability detection beside FRR with bfdd, on a kernel with VRFs: FRR sees every
//! device of the node's namespace, and bfdd (8.4 and 10.3) exits when a VRF it was told about is
//! gone before it binds its sockets to it ("udp-shop: socket: No such device"). The detection
//! once tried a scratch VRF created and deleted at once, and the lab's VM nodes then ran without
//! bfdd (a `BGPPeering` with `enableBFD` held by the pre-flight). Now it asks the VRF driver
//! without a device (`Dataplane::try_vrf_driver`).

use std::time::{Duration, Instant};

use netrollout_agent::capabilities::{detect, scratch_managed};
use netrollout_dataplane::Dataplane;

use super::{Node, say};

/// Both agents reported bfdd, bgpd and the VRF driver present after their start's detection;
/// detecting twice more in node 1's namespace leaves its bfdd running and reporting the same.
pub async fn detection_leaves_bfdd_running(n1: &Node, n2: &Node) {
    for n in [n1, n2] {
        let nnc = n
            .lab
            .wait_nnc(60, "status.capabilities reported", |o| {
                o.status.as_ref().is_some_and(|s| s.capabilities.is_some())
            })
            .await;
        let caps = nnc.status.unwrap().capabilities.unwrap();
        for word in ["vrf", "bgpd", "bfdd"] {
            assert!(
                caps.present.iter().any(|p| p == word),
                "{}'s agent does not report {word} present: {caps:?}\n{}",
                n.lab.node,
                n.daemons().dump(&[])
            );
        }
    }
    say("both agents report vrf, bgpd and bfdd present after their start's detection");
    let dp = Dataplane::in_netns(&n1.lab.ns, scratch_managed().unwrap()).unwrap();
    let frr = n1.frr();
    for round in 1..=2 {
        let found = detect(&dp, Some(&frr)).await;
        for word in ["vrf", "bfdd"] {
            assert!(
                found.present.iter().any(|p| p == word),
                "detection {round} in node 1: no {word}: {found:?}"
            );
        }
    }
    // bfdd hears of a VRF from zebra after the device came: give a crash its chance to show.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert!(
            n1.daemons()
                .try_vtysh_daemon("bfdd", "show version")
                .is_some(),
            "node 1's bfdd ended after the agent's capability detection:\n{}",
            n1.daemons().logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    say("two more detections in node 1: its bfdd runs on");
}
