//! `advertiseNeighbors` with real FRR, real VRFs and traffic: node 1 gets a layer-2 network in
//! VRF `t1` with the field on, a workload namespace on it; the workload's address reaches node
//! 2 as a `/32` EVPN type-5 route (a BGP route of the VRF: node 1's export policy announces the
//! network's host routes, not its subnet), node 2's VRF table has the `/32` and node 2 pings
//! the workload from the VRF. The neighbour going withdraws the type-5 route, coming back
//! announces it again; a revision that turns the field off and fails (a community FRR refuses)
//! is restored with the route in place; a revision that turns it off withdraws it.
//!
//! EVPN's own type-2 MAC/IP route of the neighbour (symmetric IRB: the network is in a VRF with
//! a layer-3 VNI) also gives node 2 a `/32` in its VRF table while node 1 has the neighbour:
//! the type-5 route is what `advertiseNeighbors` adds (a route of the VRF's BGP, under its
//! export policy, for whatever imports the VRF's routes beyond EVPN's MAC/IP routes), so the
//! withdrawals are checked on it.

use netrollout_api::{Layer2Config, NodeConfig, NodePhase, PrefixAction, PrefixItem};
use netrollout_testkit::cmd::run;
use netrollout_testkit::netns::Netns;

use super::{Node, say};
use crate::config::{NODE1, ROUTE_TARGET, ROUTE_WAIT, config, item, permit_all, wait};

const WORKLOAD: &str = "10.50.60.5";
const HOST_ROUTE: &str = "10.50.60.5/32";
const SUBNET: &str = "10.50.60.0/24";

/// Node 1's config: its tenant VRF, exporting the host routes of 10.50.60.0/24 but not the
/// subnet itself, with layer-2 network 600 (gateway 10.50.60.1) in it; `broken`: with a
/// community bgpd refuses.
fn node1(advertise: bool, broken: bool) -> NodeConfig {
    let export = vec![
        PrefixItem {
            cidr: SUBNET.into(),
            seq: Some(1),
            ge: Some(32),
            le: Some(32),
            action: PrefixAction::Permit,
        },
        item(SUBNET, 2, None, PrefixAction::Deny),
        item("10.50.0.0/16", 3, Some(32), PrefixAction::Permit),
    ];
    let mut c = config(&NODE1, permit_all(), export, ROUTE_TARGET);
    if broken {
        c.vrfs[0].policies[0].communities = vec!["65000:x1".into()];
    }
    c.layer2s.push(Layer2Config {
        source: "vlan600".into(),
        id: 600,
        vni: 600_600,
        mtu: 1500,
        bridge_interface: "l2.600".into(),
        vxlan_interface: "lx.600".into(),
        vrf: Some("t1".into()),
        anycast_mac: Some("02:54:00:00:06:00".into()),
        anycast_gateways: vec!["10.50.60.1/24".into()],
        advertise_neighbors: advertise,
        ..Default::default()
    });
    c
}

/// Node 1's host routes of protocol 178 in the VRF's table.
fn announced(n1: &Node) -> String {
    n1.lab.ip("route show vrf vr.t1 proto 178")
}

/// Whether node 2's VRF has the workload's host route (and never the subnet: its export
/// policy keeps it out).
fn node2_has_host_route(n2: &Node) -> bool {
    let routes = n2.routes("vrf vr.t1");
    assert!(
        !routes.contains(SUBNET),
        "node 2 has node 1's subnet:\n{routes}"
    );
    routes
        .lines()
        .any(|l| l.starts_with(&format!("{WORKLOAD} ")))
}

/// `ping` from node 2's VRF (its tenant addresses) to the workload.
fn ping_from_node2(n2: &Node) -> bool {
    std::process::Command::new("ip")
        .args(["netns", "exec", n2.ps(), "ping", "-c", "1", "-W", "2"])
        .args(["-I", "vr.t1", WORKLOAD])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub async fn steps(n1: &Node, n2: &Node) {
    let t0 = std::time::Instant::now();
    n1.apply_ok("rev-n1", node1(true, false)).await;
    // The workload: a namespace on node 1's network 600.
    let workload = Netns::new("nrwl");
    n1.lab.ip(&format!(
        "link add wk0 type veth peer name wk1 netns {}",
        workload.name
    ));
    n1.lab.ip("link set wk0 master l2.600 up");
    workload.ip(&format!("addr add {WORKLOAD}/24 dev wk1"));
    workload.ip("link set wk1 up");
    workload.ip("route add default via 10.50.60.1");
    let hello = || {
        run(
            "ip",
            &[
                "netns",
                "exec",
                &workload.name,
                "ping",
                "-c",
                "1",
                "-W",
                "2",
                "10.50.60.1",
            ],
        )
    };
    hello();
    wait(
        "node 1 announces the workload as a host route in its VRF table (proto 178)",
        30,
        || {
            announced(n1)
                .contains(&format!("{WORKLOAD} dev l2.600"))
                .then_some(())
        },
    );
    let route = wait(
        "node 2 receives the workload's /32 as an EVPN type-5 route",
        ROUTE_WAIT,
        || n2.type5(HOST_ROUTE),
    );
    assert!(route.contains(ROUTE_TARGET), "{route}");
    assert!(
        n2.type5(SUBNET).is_none(),
        "node 1's export policy announces the subnet"
    );
    wait("node 2's VRF table has the /32", ROUTE_WAIT, || {
        node2_has_host_route(n2).then_some(())
    });
    wait(
        "node 2 pings the workload from its VRF over the /32",
        60,
        || ping_from_node2(n2).then_some(()),
    );

    // The neighbour goes: the route is withdrawn everywhere (its type-2 too: nothing reaches
    // the workload); it comes back: announced again.
    n1.lab.ip(&format!("neigh del {WORKLOAD} dev l2.600"));
    wait("node 1 withdraws the host route", 30, || {
        (!announced(n1).contains(WORKLOAD)).then_some(())
    });
    wait("node 2 loses the /32", ROUTE_WAIT, || {
        (!node2_has_host_route(n2) && n2.type5(HOST_ROUTE).is_none()).then_some(())
    });
    assert!(
        !ping_from_node2(n2),
        "node 2 reaches the workload without the /32"
    );
    hello();
    wait(
        "the neighbour back: node 2 has the type-5 /32 again",
        ROUTE_WAIT,
        || n2.type5(HOST_ROUTE),
    );

    // A revision that turns the field off and that FRR refuses (a malformed community): the
    // node restores its last-known-good config, and the host route with it.
    let status = n1.apply("rev-n2", node1(false, true)).await;
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    wait(
        "after the restore node 1 announces the workload again",
        30,
        || announced(n1).contains(WORKLOAD).then_some(()),
    );
    wait(
        "after the restore node 2 has the type-5 /32",
        ROUTE_WAIT,
        || n2.type5(HOST_ROUTE),
    );
    say("a failed revision turning the field off is restored with the host route");

    // Turned off: withdrawn though the neighbour stays (its type-2 route stays too).
    n1.apply_ok("rev-n3", node1(false, false)).await;
    assert!(n1.lab.ip("neigh show dev l2.600").contains(WORKLOAD));
    wait("turned off: node 1 announces nothing", 30, || {
        announced(n1).trim().is_empty().then_some(())
    });
    wait(
        "turned off: node 2 loses the type-5 /32",
        ROUTE_WAIT,
        || n2.type5(HOST_ROUTE).is_none().then_some(()),
    );
    drop(workload);
    say(&format!(
        "advertiseNeighbors steps done in {} s",
        t0.elapsed().as_secs()
    ));
}
