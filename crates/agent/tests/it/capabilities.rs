//! Capability detection with the real kernel: the agent's detection tries a scratch device of
//! each kind in a fresh network namespace, and the real agent reports the result once in its
//! `NodeNetworkConfig`'s status. This machine's kernel has no `vrf`, `8021q` or `dummy`
//! drivers and no bridge VLAN filtering; it has bridges, VXLAN, veth and macvlan
//! (docs/testing.md), so the detection must say exactly that.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use crate::common;

use std::time::Duration;

use netrollout_agent::capabilities::{SCRATCH_PREFIX, detect, scratch_managed};
use netrollout_api::NodeCapabilities;
use netrollout_dataplane::Dataplane;
use netrollout_testkit::netns::Netns;

use common::layer2s;

fn this_kernel() -> NodeCapabilities {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect();
    NodeCapabilities {
        present: words(&["bridge", "macvlan", "veth", "vxlan"]),
        missing: words(&["8021q", "dummy", "vlan_filtering", "vrf"]),
        frr_version: None,
    }
}

#[tokio::test]
async fn detection_in_a_namespace_finds_exactly_what_this_kernel_has_and_leaves_nothing_behind() {
    let ns = Netns::new("nr-caps");
    let dp = Dataplane::in_netns(&ns.name, scratch_managed().unwrap()).unwrap();
    let found = detect(&dp, None).await;
    assert_eq!(found, this_kernel());
    let links = netrollout_testkit::cmd::run("ip", &["-n", &ns.name, "-o", "link"]);
    assert!(
        !links.contains(SCRATCH_PREFIX),
        "scratch devices left behind:\n{links}"
    );
}

#[tokio::test]
async fn the_real_agent_reports_its_capabilities_once_and_writes_nothing_more_while_they_stay() {
    let mut lab = common::lab().await;
    lab.set_spec("rev-a", layer2s(100, 1)).await;
    lab.start_agent();
    let nnc = lab
        .wait_nnc(30, "status.capabilities reported", |o| {
            o.status.as_ref().is_some_and(|s| s.capabilities.is_some())
        })
        .await;
    let reported = nnc.status.unwrap().capabilities.unwrap();
    assert_eq!(reported, this_kernel());
    lab.wait_finished("rev-a", 60).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        lab.log().matches("capabilities written").count(),
        1,
        "one write; the layer-2 apply and its status writes do not make it write again"
    );
}
