//! BGP peering with workloads through the real agent and real FRR: two workload namespaces run
//! their own FRR (zebra + bgpd), each connected to the node over a veth pair: one on the node's
//! side of a listen range (`peeringVlan`), one peering from its loopback address, which the node
//! routes to it (`loopbackPeer`: `ttl-security hops 2` on both sides). The agent applies both
//! `BGPPeering`s (default VRF: this host kernel has no `vrf` module); the sessions come up, the
//! announced prefixes pass the import policies, one outside them does not. A change whose
//! peering does not come up (the workload's AS changed in the peering) fails the `peering`
//! probe, and the node restores the peering that worked.
//! Needs root and FRR (hack/install-deps.sh); fails loudly without.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::frr::{FrrNs, NODE_ASN, World};
use netrollout_api::{BgpPeeringConfig, NodeConfig, NodePhase, PrefixAction, PrefixItem};
use netrollout_testkit::cmd::run;

const WORKLOAD_ASN: u32 = 65511;
const NODE_SIDE: &str = "10.250.51.1";
const WORKLOAD_IP: &str = "10.250.51.9";

/// The workload's FRR: peers with the node, announces a prefix the peering imports and one it
/// does not.
fn workload_conf() -> String {
    format!(
        "frr defaults datacenter\nhostname workload\n!\nrouter bgp {WORKLOAD_ASN}\n \
         bgp router-id {WORKLOAD_IP}\n no bgp ebgp-requires-policy\n no bgp network import-check\n \
         neighbor {NODE_SIDE} remote-as {NODE_ASN}\n neighbor {NODE_SIDE} timers 1 3\n \
         neighbor {NODE_SIDE} timers connect 1\n !\n address-family ipv4 unicast\n  \
         network 10.250.60.1/32\n  network 172.31.0.0/24\n exit-address-family\nexit\n!\n"
    )
}

const LOOPBACK_ASN: u32 = 65512;
const NODE_SIDE2: &str = "10.250.52.1";
const WORKLOAD2_IP: &str = "10.250.52.9";
const LOOPBACK: &str = "10.250.7.1";

/// The second workload's FRR: peers from its loopback, two hops for GTSM.
fn loopback_conf() -> String {
    format!(
        "frr defaults datacenter\nhostname workload2\n!\nrouter bgp {LOOPBACK_ASN}\n \
         bgp router-id {LOOPBACK}\n no bgp ebgp-requires-policy\n no bgp network import-check\n \
         neighbor {NODE_SIDE2} remote-as {NODE_ASN}\n neighbor {NODE_SIDE2} ttl-security hops 2\n \
         neighbor {NODE_SIDE2} update-source {LOOPBACK}\n neighbor {NODE_SIDE2} timers 1 3\n \
         neighbor {NODE_SIDE2} timers connect 1\n !\n address-family ipv4 unicast\n  \
         network 10.250.61.1/32\n exit-address-family\nexit\n!\n"
    )
}

fn peering(asn: u32) -> NodeConfig {
    NodeConfig {
        bgp_peerings: vec![
            BgpPeeringConfig {
                source: "calico".into(),
                neighbors: vec![LOOPBACK.into()],
                remote_asn: LOOPBACK_ASN,
                keepalive_seconds: Some(1),
                hold_seconds: Some(3),
                import: vec![PrefixItem {
                    cidr: "10.250.61.0/24".into(),
                    le: Some(32),
                    action: PrefixAction::Permit,
                    ..Default::default()
                }],
                ..Default::default()
            },
            BgpPeeringConfig {
                source: "lb".into(),
                listen_ranges: vec!["10.250.51.0/24".into()],
                remote_asn: asn,
                maximum_prefixes: Some(4),
                keepalive_seconds: Some(1),
                hold_seconds: Some(3),
                import: vec![PrefixItem {
                    cidr: "10.250.60.0/24".into(),
                    le: Some(32),
                    action: PrefixAction::Permit,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_workloads_peering_comes_up_and_a_change_that_breaks_it_is_restored() {
    let mut w = World::new("6s").await;
    w.lab
        .extra_args
        .extend(["--probe-hold".into(), "4s".into()]);
    // The workload's namespace on the node's side of the listen range.
    let wl_ns = format!("{}-w", w.lab.ns);
    run("ip", &["netns", "add", &wl_ns]);
    let _gone = scopeguard(&wl_ns);
    w.lab.ip("link add wln type veth peer name wlp");
    w.lab.ip(&format!("link set wlp netns {wl_ns}"));
    w.lab.ip(&format!("addr add {NODE_SIDE}/24 dev wln"));
    w.lab.ip("link set wln up");
    // A host route to the workload, as `advertiseNeighbors` writes them (there protocol 178;
    // here a route the agent leaves alone), in place before the session comes up.
    w.lab.ip(&format!("route add {WORKLOAD_IP}/32 dev wln"));
    for args in [
        "link set lo up".to_string(),
        format!("addr add {WORKLOAD_IP}/24 dev wlp"),
        "link set wlp up".to_string(),
    ] {
        let mut a = vec!["-n", wl_ns.as_str()];
        a.extend(args.split_whitespace());
        run("ip", &a);
    }
    let workload = FrrNs::start(
        &wl_ns,
        &w.lab.dir.path().join("frr-workload"),
        &workload_conf(),
    );
    // The second workload, its loopback routed to it by the node.
    let wl2_ns = format!("{}-v", w.lab.ns);
    run("ip", &["netns", "add", &wl2_ns]);
    let _gone2 = scopeguard(&wl2_ns);
    w.lab.ip("link add wl2n type veth peer name wl2p");
    w.lab.ip(&format!("link set wl2p netns {wl2_ns}"));
    w.lab.ip(&format!("addr add {NODE_SIDE2}/24 dev wl2n"));
    w.lab.ip("link set wl2n up");
    w.lab
        .ip(&format!("route add {LOOPBACK}/32 via {WORKLOAD2_IP}"));
    for args in [
        "link set lo up".to_string(),
        format!("addr add {LOOPBACK}/32 dev lo"),
        format!("addr add {WORKLOAD2_IP}/24 dev wl2p"),
        "link set wl2p up".to_string(),
    ] {
        let mut a = vec!["-n", wl2_ns.as_str()];
        a.extend(args.split_whitespace());
        run("ip", &a);
    }
    let workload2 = FrrNs::start(
        &wl2_ns,
        &w.lab.dir.path().join("frr-workload2"),
        &loopback_conf(),
    );

    w.lab.set_spec("rev-1", peering(WORKLOAD_ASN)).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(
        workload.established(NODE_SIDE),
        "the workload's session is not up"
    );
    // The import policy: the workload's /32 in 10.250.60.0/24 is taken, 172.31.0.0/24 is not.
    w.node.wait(10, "the workload's prefix", |f| {
        f.try_vtysh("show bgp ipv4 unicast 10.250.60.1/32 json")
            .is_some_and(|t| t.contains(WORKLOAD_IP))
    });
    // ... and reaches the node's kernel, also with the host route to the workload's address
    // (above) more specific than the listen range's subnet: zebra resolves the eBGP next hop
    // over it only because the peer group has `disable-connected-check`.
    w.node
        .wait(10, "the workload's prefix in the node's kernel", |_| {
            let mut a = vec!["-n", w.lab.ns.as_str()];
            a.extend("route show 10.250.60.1/32 proto bgp".split_whitespace());
            run("ip", &a).contains(&format!("via {WORKLOAD_IP} dev wln"))
        });
    let outside = w.node.vtysh("show bgp ipv4 unicast 172.31.0.0/24 json");
    assert!(!outside.contains(WORKLOAD_IP), "{outside}");
    assert!(
        workload2.established(NODE_SIDE2),
        "the loopback session is not up"
    );
    w.node.wait(10, "the loopback workload's prefix", |f| {
        f.try_vtysh("show bgp ipv4 unicast 10.250.61.1/32 json")
            .is_some_and(|t| t.contains(LOOPBACK))
    });

    // The peering now expects another AS: the workload's session cannot come up.
    w.lab.set_spec("rev-2", peering(65999)).await;
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("peering lb")
            && message.contains("no workload's session from 10.250.51.0/24"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));
    let running = w.node.running();
    assert!(
        running.contains(&format!("neighbor bgpp_lb_4 remote-as {WORKLOAD_ASN}")),
        "rev-1's peering is not restored:\n{running}"
    );
    workload.wait(30, "the workload's session again after the restore", |f| {
        f.established(NODE_SIDE)
    });
    let text = netrollout_testkit::http::metrics(
        &format!("{}:9101", w.lab.ns_ip),
        std::time::Duration::from_secs(10),
    );
    assert!(
        text.contains("netrollout_agent_probe_failures_total{probe=\"peering\"} 1"),
        "{text}"
    );
    assert!(
        workload2.established(NODE_SIDE2),
        "the loopback session went down"
    );
    drop(workload);
    drop(workload2);
}

/// Deletes the workload's namespace when the test ends, passed or not.
fn scopeguard(ns: &str) -> impl Drop + use<> {
    struct Gone(String);
    impl Drop for Gone {
        fn drop(&mut self) {
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &self.0])
                .status();
        }
    }
    Gone(ns.to_string())
}
