//! FRR's error answers are failures: a line FRR answers with `% ...` and does not take fails the
//! apply with FRR's line and the line it lacks, on FRR 8.4 and 10.3 (`NETROLLOUT_FRR_VERSION`;
//! `hack/test.d/57-agent-frr10.sh` runs it on 10.3). A malformed route target is such a line:
//! bgpd prints `% Malformed Route Target list` and returns a warning, past which vtysh and
//! `frr-reload.py` go on and exit 0, so the agent used to count the apply as good while FRR ran
//! without the VRF's route target. Needs root and FRR (hack/install-deps.sh); fails loudly
//! without.

use crate::common;

use common::frr::{FrrNs, chmod_755};
use netrollout_agent::frr::{Frr, FrrError};
use netrollout_api::{NodeConfig, VrfConfig};
use netrollout_testkit::netns::Netns;

use crate::frr_converge::{BASE, settings};

/// A VRF with a layer-3 VNI and `route_target` (the renderer writes it as given; the
/// configurator refuses a malformed one, a hand-made NodeConfig can carry it).
fn tenant(route_target: &str) -> NodeConfig {
    NodeConfig {
        vrfs: vec![VrfConfig {
            name: "a".into(),
            table_id: 100,
            vrf_interface: "vr.a".into(),
            veth_default_interface: "vd.a".into(),
            veth_vrf_interface: "vv.a".into(),
            vni: Some(5100),
            route_target: Some(route_target.into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_route_target_frr_answers_malformed_fails_the_apply_naming_the_line_and_the_vrf() {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let ns = Netns::new("frrerr");
    let node = FrrNs::start(&ns.name, &dir.path().join("node"), BASE);
    let s = settings(&dir.path().join("node"), &ns.name);
    std::fs::write(&s.base_config, BASE).unwrap();
    let frr = Frr::new(s).unwrap();
    let text = |rt: &str| frr.full(&frr.managed(&tenant(rt)).unwrap()).unwrap();

    assert_eq!(frr.apply(&text("65000:100")).await.unwrap(), 1);
    assert!(node.running().contains("route-target import 65000:100"));

    let err = frr.apply(&text("65000:x7")).await.unwrap_err();
    let FrrError::Rejected { line, wrote } = &err else {
        panic!("not a rejection: {err}");
    };
    assert!(wrote, "{err}");
    for part in [
        "% Malformed Route Target list",
        "`route-target import 65000:x7` in router bgp 65000 vrf vr.a > address-family l2vpn evpn",
    ] {
        assert!(line.contains(part), "{part:?} missing from {line:?}");
    }
    // The agent's diff went to frr-reload.py once before it judged (its own script might have
    // been what FRR refused).
    assert_eq!(frr.fallbacks(), 1);
    assert!(!node.running().contains("65000:x7"));

    // The restore: the previous text again, FRR holds it.
    assert_eq!(frr.apply(&text("65000:100")).await.unwrap(), 1);
    let running = node.running();
    assert!(
        running.contains("route-target import 65000:100")
            && running.contains("route-target export 65000:100"),
        "{running}"
    );
}
