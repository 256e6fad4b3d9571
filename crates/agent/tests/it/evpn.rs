//! The `evpn vni` routing probe of the layer-2 networks, with the real agent and real FRR
//! (zebra + bgpd 8.4 in the node's namespace, see `common/frr.rs`): a layer-2 VNI FRR's EVPN
//! does not learn fails the apply, naming the VNI, and the agent restores; one it already did
//! not know before the change is reported, not enforced.
//!
//! How FRR is made not to learn a layer-2 VNI: the node operator's FRR config binds that VNI to
//! a VRF (`vrf NAME` / `vni N`). zebra then takes the layer-2 network's VXLAN device for the
//! VRF's layer-3 VNI: `show evpn vni json` lists it with type `L3`, and EVPN advertises no
//! layer-2 routes for it. (A VXLAN device that is down, or outside a bridge, is still listed as
//! `L2` by FRR 8.4, so that is no way to hide one.)

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::AgentLab as _;
use common::frr::{World, node_base};
use common::layer2s;
use netrollout_api::NodePhase;

/// The node's base config with `vrf tenant-N` / `vni N` for each of `vnis`, ahead of the
/// `router bgp` block (where the agent puts its own VRF blocks, see docs/agent.md).
fn base_binding(vnis: &[u32]) -> String {
    let base = node_base();
    let (head, rest) = base.split_at(base.find("router bgp").unwrap());
    let vrfs: String = vnis
        .iter()
        .map(|n| format!("vrf tenant-{n}\n vni {n}\nexit-vrf\n!\n"))
        .collect();
    format!("{head}{vrfs}{rest}")
}

/// FRR's EVPN type of `vni` (`show evpn vni json`), if it knows it.
fn evpn_type(w: &World, vni: u32) -> Option<String> {
    let v: serde_json::Value =
        serde_json::from_str(&w.node.vtysh("show evpn vni json")).unwrap_or_default();
    v.get(vni.to_string())?
        .get("type")?
        .as_str()
        .map(String::from)
}

#[tokio::test]
async fn a_layer2_vni_frr_does_not_learn_fails_the_apply_naming_the_vni_and_is_restored() {
    let mut w = World::new("4s").await;
    let good = layer2s(300, 1);
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert_eq!(evpn_type(&w, 20300).as_deref(), Some("L2"));

    // The operator's base now binds 20301 to a VRF; the next revision adds the layer-2 network
    // with VNI 20301, which FRR's EVPN then holds as a layer-3 VNI.
    std::fs::write(&w.base, base_binding(&[20301])).unwrap();
    w.lab.set_spec("rev-2", layer2s(300, 2)).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("evpn vni 20301: layer-2 network net-301")
            && message.contains("as type L3, not as a layer-2 VNI"),
        "{message}"
    );
    assert!(!message.contains("evpn vni 20300"), "{message}");
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));

    // Restored: the kernel holds rev-1, FRR runs rev-1's text again (no binding).
    assert!(w.lab.holds(&good).await, "rev-1 is not restored");
    assert!(
        !w.node.running().contains("vni 20301"),
        "FRR is not restored"
    );
    assert_eq!(evpn_type(&w, 20300).as_deref(), Some("L2"));
    let metrics = netrollout_testkit::http::metrics(
        &format!("{}:9101", w.lab.ns_ip),
        Duration::from_secs(10),
    );
    assert!(
        metrics.contains("netrollout_agent_probe_failures_total{probe=\"evpn\"} 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_layer2_vni_frr_already_did_not_know_before_the_change_is_reported_not_enforced() {
    let mut w = World::new("4s").await;
    w.lab.set_spec("rev-1", layer2s(300, 2)).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");

    // The operator binds the running VNI 20301 to a VRF, in the base file and by hand in FRR:
    // the node's layer-2 network 301 is no layer-2 VNI to EVPN before the next change.
    std::fs::write(&w.base, base_binding(&[20301])).unwrap();
    let out = w
        .node
        .daemons
        .vtysh_cmd()
        .args([
            "-c",
            "configure terminal",
            "-c",
            "vrf tenant-20301",
            "-c",
            "vni 20301",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "vtysh: {out:?}");
    w.node.wait(20, "VNI 20301 as a layer-3 VNI", |_| {
        evpn_type(&w, 20301).as_deref() == Some("L3")
    });

    // A change that adds network 302 (which FRR learns): committed; 20301 is reported.
    let next = layer2s(300, 3);
    w.lab.set_spec("rev-2", next.clone()).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("not judged, as it already failed before the change: evpn vni 20301"),
        "{message}"
    );
    assert!(
        status
            .preexisting_failures
            .iter()
            .any(|c| c.name == "evpn vni 20301" && c.error.contains("layer-2 network net-301")),
        "{status:?}"
    );
    assert!(w.lab.holds(&next).await);
    assert_eq!(evpn_type(&w, 20302).as_deref(), Some("L2"));

    // A change that adds a VNI FRR does not learn still fails, naming only that one.
    std::fs::write(&w.base, base_binding(&[20301, 20303])).unwrap();
    w.lab.set_spec("rev-3", layer2s(300, 4)).await;
    let status = w.lab.wait_finished("rev-3", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(message.contains("evpn vni 20303"), "{message}");
    assert!(!message.contains("evpn vni 20301"), "{message}");
    assert!(w.lab.holds(&next).await, "rev-2 is not restored");
}
