//! The agent with real FRR (zebra + bgpd 8.4, each FRR in a network namespace with its own
//! pathspace `-N <namespace>`): the FRR step of the transaction, the routing probes, restores and
//! crash recovery. A second namespace runs the BGP peer of the node (eBGP, IPv4 unicast and L2VPN
//! EVPN over a veth pair).
//!
//! This host kernel has no `vrf` module, so the agent's end-to-end tests use VRF-less configs
//! (layer-2 VNIs: `advertise-all-vni`, EVPN type-3 routes); VRF policies are checked at the
//! library level ([`Frr`] against a real FRR: running config, EVPN VNIs). VRF routes in the BGP
//! tables need the VM kernel. Needs root and FRR (hack/install-deps.sh); fails loudly without.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::AgentLab as _;
use common::frr::{FrrNs, MANAGED_ROUTER_ID, PEER_IP, World, chmod_755, node_base};
use common::{lab, layer2, layer2s};
use netrollout_agent::frr::{Frr, FrrError, FrrSettings};
use netrollout_agent::routing;
use netrollout_api::{NodeConfig, NodePhase, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};
use rand::RngExt;

#[tokio::test]
async fn layer2_vnis_reach_frr_and_the_peer_and_an_unchanged_frr_text_makes_no_write() {
    let mut w = World::new("10s").await;
    w.lab.set_spec("rev-1", layer2s(300, 2)).await;
    w.lab.start_agent();
    let nnc = w.lab.wait_finished("rev-1", 60).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    // With FRR on, the agent's capabilities name bgpd (FRR's `show daemons` lists it).
    let caps = w
        .lab
        .wait_nnc(20, "capabilities naming bgpd", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.capabilities.as_ref())
                .is_some_and(|c| !c.present.is_empty() || !c.missing.is_empty())
        })
        .await;
    let caps = caps.status.unwrap().capabilities.unwrap();
    assert!(
        caps.present.iter().any(|c| c == "bgpd") && !caps.missing.iter().any(|c| c == "bgpd"),
        "{caps:?}"
    );
    // And the version the daemons run, as their running config's `frr version` line says.
    let running = w.node.running();
    let version = running
        .lines()
        .find_map(|l| l.strip_prefix("frr version "))
        .unwrap_or_else(|| panic!("no `frr version` line:\n{running}"));
    assert_eq!(
        caps.frr_version.as_deref(),
        Some(version.trim()),
        "{caps:?}"
    );

    // frr.conf is base + managed; FRR runs it; BGP knows the VNIs; the peer gets type-3 routes.
    let text = std::fs::read_to_string(&w.conf).unwrap();
    assert!(text.starts_with(&node_base()[..40]), "{text}");
    assert!(text.contains(netrollout_frr::BEGIN_MARKER), "{text}");
    assert!(w.node.running().contains("advertise-all-vni"));
    w.node.wait(20, "BGP's EVPN VNIs 20300, 20301", |f| {
        let v = f.vtysh("show bgp l2vpn evpn vni json");
        v.contains("20300") && v.contains("20301")
    });
    let vtep = w.lab.ns_ip.clone();
    w.peer
        .wait(20, "the node's type-3 routes at the peer", |f| {
            f.vtysh("show bgp l2vpn evpn route type multicast json")
                .contains(&vtep)
        });
    assert_eq!(w.frr_writes(), 1, "the first apply writes FRR once");
    let mtime = std::fs::metadata(&w.conf).unwrap().modified().unwrap();

    // Another layer-2 network: the kernel changes, the FRR text does not: no FRR write.
    w.lab.set_spec("rev-2", layer2s(300, 3)).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(w.lab.holds(&layer2s(300, 3)).await);
    assert_eq!(w.frr_writes(), 1, "an unchanged FRR text made an FRR write");
    assert_eq!(
        std::fs::metadata(&w.conf).unwrap().modified().unwrap(),
        mtime,
        "frr.conf was rewritten"
    );
    w.node.wait(20, "BGP's EVPN VNI 20302", |f| {
        f.vtysh("show bgp l2vpn evpn vni json").contains("20302")
    });
    w.lab.wait_log("\"writes\":0", 1, 5).await;

    // No layer-2 networks: the managed section is empty again and FRR drops advertise-all-vni.
    w.lab.set_spec("rev-3", NodeConfig::default()).await;
    let status = w.lab.wait_finished("rev-3", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(!w.node.running().contains("advertise-all-vni"));
    assert_eq!(w.frr_writes(), 2);
    assert!(w.node.established(PEER_IP), "the underlay session survived");
}

#[tokio::test]
async fn a_change_that_drops_an_established_session_is_restored_and_reported_failed() {
    let mut w = World::new("4s").await;
    // A broken session shows only after a keepalive or the hold time (1 s / 3 s here): hold the
    // probes longer than that before committing.
    w.lab
        .extra_args
        .extend(["--probe-hold".into(), "4s".into()]);
    let good = layer2s(400, 1);
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");

    // A gateway address equal to the peer's: the node now delivers the peer's address locally,
    // so the BGP session to it breaks.
    let mut bad = good.clone();
    bad.layer2s.push(layer2(401, vec![format!("{PEER_IP}/32")]));
    w.lab.set_spec("rev-2", bad).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains(&format!("bgp default {PEER_IP}")) && message.contains("was Established"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));
    assert!(w.lab.holds(&good).await, "rev-1 is not restored");
    w.node.wait(30, "the session again after the restore", |f| {
        f.established(PEER_IP)
    });
    let text = netrollout_testkit::http::metrics(
        &format!("{}:9101", w.lab.ns_ip),
        Duration::from_secs(10),
    );
    assert!(
        text.contains("netrollout_agent_probe_failures_total{probe=\"bgp\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_line_frr_rejects_fails_the_attempt_with_frrs_error_and_restores_frr_and_kernel() {
    let mut w = World::new("10s").await;
    let good = layer2s(500, 1);
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let running_before = w.node.running();

    // The operator's base file gets a line bgpd rejects (FRR's parser accepts it).
    let mut base = node_base();
    base.push_str("route-map OPERATOR permit 10\n set community 65000:1:7\nexit\n!\n");
    std::fs::write(&w.base, base).unwrap();
    w.lab.set_spec("rev-2", layer2s(500, 2)).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("FrrRejected"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("% Malformed communities attribute '65000:1:7'"),
        "FRR's own error line is missing: {message}"
    );
    assert!(w.lab.holds(&good).await, "the kernel is not restored");
    assert!(!w.node.running().contains("OPERATOR"));
    assert_eq!(
        strip_header(&w.node.running()),
        strip_header(&running_before),
        "FRR is not restored"
    );

    // A line FRR does not know at all is refused before anything is written.
    let mtime = std::fs::metadata(&w.conf).unwrap().modified().unwrap();
    let mut base = node_base();
    base.push_str("route-map OPERATOR permit 10\n set communityx 65000:1\nexit\n!\n");
    std::fs::write(&w.base, base).unwrap();
    w.lab.set_spec("rev-3", layer2s(500, 3)).await;
    let status = w.lab.wait_finished("rev-3", 60).await.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("FrrRejected"), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("% Unknown command:  set communityx 65000:1"),
        "{message}"
    );
    assert_eq!(
        std::fs::metadata(&w.conf).unwrap().modified().unwrap(),
        mtime,
        "a rejected text reached frr.conf"
    );
    assert!(w.lab.holds(&good).await);
    // Nor FRR: the script's vtysh, started while the check ran (FRR's config differed from
    // the text), ended its session without a line.
    assert_eq!(
        strip_header(&w.node.running()),
        strip_header(&running_before),
        "a rejected text reached FRR"
    );
}

/// `show running-config` without its `Building configuration...` preamble and the kernel's
/// forwarding state (`[no] ip(v6) forwarding`: no config of the text; `frr-reload.py`, the
/// fallback a rejected line goes through, turns forwarding on).
fn strip_header(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .filter(|l| !l.ends_with("ip forwarding") && !l.ends_with("ipv6 forwarding"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn kill_9_during_an_apply_with_frr_leaves_kernel_and_frr_whole() {
    let mut w = World::new("10s").await;
    let with_vnis = layer2s(600, 4);
    let empty = NodeConfig::default();
    w.lab.set_spec("rev-0", with_vnis.clone()).await;
    w.lab.start_agent();
    w.lab.wait_finished("rev-0", 60).await;
    w.lab.kill_agent();
    let mut rng = rand::rng();
    for i in 1..=8 {
        let rev = format!("rev-{i}");
        let config = if i % 2 == 1 {
            empty.clone()
        } else {
            with_vnis.clone()
        };
        w.lab.set_spec(&rev, config).await;
        w.lab.start_agent();
        // Kill somewhere in the apply: after the journal, in the kernel or the FRR step (a
        // reload takes a second or more, so most kills land in FRR's).
        w.lab.wait_applying(Duration::from_secs(60)).await;
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..500))).await;
        w.lab.kill_agent();
        w.lab.start_agent();
        let status = w.lab.wait_finished(&rev, 60).await.status.unwrap();
        w.lab.kill_agent();
        assert_eq!(
            status.phase,
            Some(NodePhase::Provisioned),
            "{rev}: {status:?}"
        );
        let held = if i % 2 == 1 { &empty } else { &with_vnis };
        assert!(w.lab.holds(held).await, "{rev}: kernel");
        assert_eq!(
            w.node.running().contains("advertise-all-vni"),
            !held.layer2s.is_empty(),
            "{rev}: FRR does not run the committed config"
        );
        assert!(
            !std::fs::read_to_string(&w.conf)
                .unwrap()
                .contains("OPERATOR"),
        );
    }
    let interrupted = w
        .lab
        .log()
        .matches("journal says an apply was interrupted")
        .count();
    eprintln!("8 revisions, {interrupted} restarts found an interrupted apply");
    assert!(
        interrupted >= 4,
        "too few kills landed mid-apply ({interrupted}) for the test to mean anything"
    );
    let recovered_frr = w
        .lab
        .log()
        .matches("restored the last-known-good FRR config")
        .count();
    assert!(recovered_frr >= 4, "recovery did not restore FRR");
}

/// A VRF with one policy of every kind. Without a VNI: FRR 8.4 with no kernel VRF device mixes
/// up `vrf NAME`/`vni N` during a reload (the VNI lands on the default VRF); layer-3 VNIs and
/// route targets are shown in the VM, where the kernel step creates the VRF before FRR's.
fn vrf(export: &str, community: &str, aggregate: &str) -> NodeConfig {
    let item = |cidr: &str| PrefixItem {
        cidr: cidr.into(),
        seq: None,
        ge: None,
        le: Some(28),
        action: PrefixAction::Permit,
    };
    NodeConfig {
        vrfs: vec![VrfConfig {
            name: "red".into(),
            table_id: 100,
            vrf_interface: "vr.red".into(),
            bridge_interface: Some("br.red".into()),
            vxlan_interface: Some("vx.red".into()),
            veth_default_interface: "vd.red".into(),
            veth_vrf_interface: "vv.red".into(),
            vni: None,
            route_target: None,
            policies: vec![VrfPolicy {
                source: "red-1".into(),
                seq: 10,
                import: vec![item("10.100.0.0/16")],
                export: vec![item(export)],
                aggregate: vec![aggregate.into()],
                communities: vec![community.into()],
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The library API against a real FRR (no kernel VRFs on this host): a VRF's import, export,
/// aggregate and community changes show up in FRR's running config, FRR answers the routing
/// probes, an unchanged text makes no write, a rejected line comes back as FRR's own error.
#[tokio::test]
async fn vrf_policy_changes_show_up_in_frrs_running_config() {
    let lab = lab().await;
    chmod_755(lab.dir.path());
    let dir = lab.dir.path().join("frr-lib");
    let node = FrrNs::start(&lab.ns, &dir, &node_base());
    let base = dir.join("base.conf");
    std::fs::write(&base, node_base()).unwrap();
    let frr = Frr::new(FrrSettings {
        base_config: base.clone(),
        router_id: Some(MANAGED_ROUTER_ID.parse().unwrap()),
        ..crate::frr_converge::settings(&dir, &lab.ns)
    })
    .unwrap();

    let one = vrf("10.200.0.0/16", "65000:100", "10.200.0.0/16");
    let full = frr.full(&frr.managed(&one).unwrap()).unwrap();
    assert_eq!(frr.apply(&full).await.unwrap(), 1);
    let running = node.running();
    for line in [
        "router bgp 65000 vrf vr.red",
        "set community 65000:100",
        "aggregate-address 10.200.0.0/16",
        "10.100.0.0/16 le 28",
        "10.200.0.0/16 le 28",
    ] {
        assert!(running.contains(line), "{line:?} missing:\n{running}");
    }
    // FRR answers the routing probes; the underlay session is not touched by the VRF.
    let state = routing::state(&frr).await;
    assert_eq!(state.unanswered, None);

    // The same text again: no write.
    assert_eq!(frr.apply(&full).await.unwrap(), 0);

    // Export, community, aggregate and route target change; the old lines are gone.
    let two = vrf("10.201.0.0/16", "65000:200", "10.201.0.0/16");
    let full2 = frr.full(&frr.managed(&two).unwrap()).unwrap();
    assert_eq!(frr.apply(&full2).await.unwrap(), 1);
    let running = node.running();
    for line in [
        "set community 65000:200",
        "aggregate-address 10.201.0.0/16",
        "10.201.0.0/16 le 28",
    ] {
        assert!(running.contains(line), "{line:?} missing:\n{running}");
    }
    for gone in ["65000:100", "10.200.0.0/16"] {
        assert!(
            !running.contains(gone),
            "{gone:?} is still there:\n{running}"
        );
    }

    // A community FRR rejects: FRR's line comes back; loading the previous text restores FRR.
    let bad = vrf("10.201.0.0/16", "65000:x1", "10.201.0.0/16");
    let err = frr
        .apply(&frr.full(&frr.managed(&bad).unwrap()).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, FrrError::Rejected { line, .. } if line.contains("Malformed communities")),
        "{err}"
    );
    assert_eq!(frr.apply(&full2).await.unwrap(), 1);
    assert!(node.running().contains("set community 65000:200"));
    drop(node);
}
