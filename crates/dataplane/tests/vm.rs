//! Kernel tests for the paths this machine's kernel lacks (vrf, 8021q, dummy). Built only with
//! the `vm` feature; `hack/test.d/50-dataplane-vm.sh` boots Debian's stock kernel in a VM and
//! runs them there, each in a fresh network namespace; and segmentation offload on that kernel.
// Test helpers may panic: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{TestNs, add_layer2, address, vxlan};
use netrollout_dataplane::{
    Dataplane, Desired, Link, LinkKind, Managed, Op, Route, Rule, Segmentation, diff,
};

/// A VRF the way the renderer lays it out: `vr.X` bound to `table`, bridge `br.X` and VXLAN
/// `vx.X` in it, veth `vd.X` (default VRF) <-> `vv.X` (in the VRF), a loopback `lo.X`, an
/// SBR rule and a leaked route each way.
fn vrf(d: &mut Desired, x: &str, table: u32) {
    let (vr, br, vx, vd, vv, lo) = (
        format!("vr.{x}"),
        format!("br.{x}"),
        format!("vx.{x}"),
        format!("vd.{x}"),
        format!("vv.{x}"),
        format!("lo.{x}"),
    );
    d.add_link(Link::new(&vr, LinkKind::Vrf { table }));
    d.add_link(Link::new(&br, LinkKind::Bridge).master(&vr));
    d.add_link(Link::new(&vx, vxlan(table, false)).master(&br));
    d.add_link(Link::new(&vd, LinkKind::Veth { peer: vv.clone() }));
    d.add_link(Link::new(&vv, LinkKind::Veth { peer: vd.clone() }).master(&vr));
    d.add_link(Link::new(&lo, LinkKind::Dummy).master(&vr));
    d.addresses.push(address(&lo, "10.255.0.7/32"));
    d.addresses.push(address(&vd, "169.254.0.0/31"));
    d.addresses.push(address(&vv, "169.254.0.1/31"));
    d.rules.push(Rule::from_prefix(
        2000,
        "10.60.0.0/24".parse().unwrap(),
        table,
    ));
    d.routes.push(Route {
        table,
        dst: "0.0.0.0/0".parse().unwrap(),
        gateway: Some("169.254.0.0".parse().unwrap()),
        dev: Some(vv),
        metric: 0,
    });
    d.routes.push(Route {
        table: 254,
        dst: "10.60.0.0/24".parse().unwrap(),
        gateway: None,
        dev: Some(vd),
        metric: 0,
    });
}

#[tokio::test]
async fn a_vrf_binds_its_table_and_holds_bridge_veth_and_loopback() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    vrf(&mut desired, "red", 100);
    dp.apply(&desired).await.unwrap();

    assert!(ns.ip("-d link show vr.red").contains("vrf table 100"));
    for port in ["br.red", "vv.red", "lo.red"] {
        assert!(
            ns.ip(&format!("link show {port}"))
                .contains("master vr.red"),
            "{port}"
        );
    }
    assert!(ns.ip("-d link show lo.red").contains("dummy"));
    assert!(ns.ip("link show vx.red").contains("master br.red"));
    assert!(!ns.ip("link show vd.red").contains("master"));
    assert!(ns.ip("addr show dev lo.red").contains("10.255.0.7/32"));
    let t100 = ns.ip("route show table 100");
    assert!(
        t100.contains("default via 169.254.0.0 dev vv.red proto 177"),
        "{t100}"
    );
    assert!(
        ns.ip("route show vrf vr.red")
            .contains("default via 169.254.0.0")
    );
    assert!(
        ns.ip("rule show")
            .contains("2000:\tfrom 10.60.0.0/24 lookup 100 proto 177")
    );
    assert_eq!(diff(&desired, &dp.observe().await.unwrap()), vec![]);
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

#[tokio::test]
async fn a_vrf_moved_to_another_table_is_recreated_and_its_ports_reenslaved() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    vrf(&mut desired, "blue", 200);
    dp.apply(&desired).await.unwrap();

    let mut moved = Desired::default();
    vrf(&mut moved, "blue", 201);
    let report = dp.apply(&moved).await.unwrap();
    assert!(
        report.ops.contains(&Op::DeleteLink("vr.blue".into())),
        "{report:?}"
    );
    assert!(ns.ip("-d link show vr.blue").contains("vrf table 201"));
    for port in ["br.blue", "vv.blue", "lo.blue"] {
        assert!(
            ns.ip(&format!("link show {port}"))
                .contains("master vr.blue"),
            "{port}"
        );
    }
    assert!(
        ns.ip("route show table 201")
            .contains("default via 169.254.0.0 dev vv.blue")
    );
    assert!(ns.ip("route show table 200").is_empty());
    assert!(ns.ip("addr show dev lo.blue").contains("10.255.0.7/32"));
    assert_eq!(dp.apply(&moved).await.unwrap().writes, 0);
}

#[tokio::test]
async fn a_layer2_network_in_a_vrf_gets_its_vlan_interface_and_a_routing_table_its_own_vrf() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    vrf(&mut desired, "green", 300);
    add_layer2(&mut desired, 30, 1500);
    desired.links.get_mut("l2.30").unwrap().master = Some("vr.green".into());
    desired.add_link(Link::new(
        "vl.30",
        LinkKind::Vlan {
            parent: "l2.30".into(),
            id: 30,
        },
    ));
    desired.add_link(Link::new("tb.400", LinkKind::Vrf { table: 400 }));
    dp.apply(&desired).await.unwrap();

    assert!(
        ns.ip("-d link show vl.30")
            .contains("vlan protocol 802.1Q id 30")
    );
    assert!(ns.ip("link show vl.30").contains("vl.30@l2.30"));
    assert!(ns.ip("link show l2.30").contains("master vr.green"));
    assert!(ns.ip("-d link show tb.400").contains("vrf table 400"));
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);

    desired.links.remove("vl.30");
    desired.links.remove("tb.400");
    desired.links.get_mut("l2.30").unwrap().master = None;
    dp.apply(&desired).await.unwrap();
    let links = ns.ip("link show");
    assert!(
        !links.contains("vl.30") && !links.contains("tb.400"),
        "{links}"
    );
    assert!(!ns.ip("link show l2.30").contains("master"));
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

/// Segmentation offload on Debian's kernel (the VM has no `ethtool` program: the dataplane's
/// own read-back and the zero-write re-apply show it): a layer-2 network in a VRF turns it off,
/// then back on.
#[tokio::test]
async fn segmentation_offload_is_switched_off_and_on_in_a_vrfs_layer2_network() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    vrf(&mut desired, "blue", 500);
    add_layer2(&mut desired, 50, 1500);
    desired.links.get_mut("l2.50").unwrap().master = Some("vr.blue".into());
    let set = |d: &mut Desired, seg: Segmentation| {
        for name in ["l2.50", "lx.50"] {
            d.links.get_mut(name).unwrap().segmentation = seg;
        }
    };
    set(&mut desired, Segmentation::Off);
    let report = dp.apply(&desired).await.unwrap();
    let switched = |ops: &[Op]| {
        ops.iter()
            .filter(|o| matches!(o, Op::SetSegmentation { .. }))
            .count()
    };
    assert_eq!(switched(&report.ops), 2, "{:?}", report.ops);
    let observed = dp.observe().await.unwrap();
    for name in ["l2.50", "lx.50"] {
        assert_eq!(observed.links[name].link.segmentation, Segmentation::Off);
    }
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);

    set(&mut desired, Segmentation::On);
    let report = dp.apply(&desired).await.unwrap();
    assert_eq!(switched(&report.ops), 2, "{:?}", report.ops);
    let observed = dp.observe().await.unwrap();
    for name in ["l2.50", "lx.50"] {
        assert_eq!(observed.links[name].link.segmentation, Segmentation::On);
    }
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

/// The VRF driver is asked without a VRF device ever existing (the agent's capability check,
/// `Dataplane::try_vrf_driver`): `ip monitor link` in the namespace sees a scratch VRF created
/// and deleted at once (what FRR's bfdd exits on, when it comes to bind to it after it is gone),
/// but nothing of the probe, from a marker before it to one after.
#[tokio::test]
async fn the_vrf_driver_is_asked_without_a_vrf_device_coming_and_going() {
    use std::io::BufRead as _;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let ns = TestNs::new();
    let dp = Dataplane::in_netns(&ns.name, Managed::new(["nrcap."]).unwrap()).unwrap();
    let mut monitor = std::process::Command::new("ip")
        .args(["-n", &ns.name, "monitor", "link"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let out = monitor.stdout.take().unwrap();
    let into = Arc::clone(&seen);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            into.lock().unwrap().push_str(&(line + "\n"));
        }
    });
    let ip = |args: &str| {
        let args: Vec<&str> = args.split_whitespace().collect();
        let ok = std::process::Command::new("ip")
            .args(["-n", &ns.name])
            .args(&args)
            .status()
            .unwrap()
            .success();
        assert!(ok, "ip {args:?}");
    };
    // A marker link, added and deleted until the monitor shows it (it listens from then on).
    let mark = |name: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !seen.lock().unwrap().contains(name) {
            assert!(
                Instant::now() < deadline,
                "ip monitor link never showed {name}"
            );
            ip(&format!("link add {name} type dummy"));
            ip(&format!("link del {name}"));
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    mark("mark0");
    ip("link add nrcap.seen type vrf table 4000000001");
    ip("link del nrcap.seen");
    dp.try_vrf_driver("nrcap.vrf").await.unwrap();
    mark("mark1");
    let _ = monitor.kill();
    let _ = monitor.wait();
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.contains("nrcap.seen"),
        "a VRF coming and going shows:\n{seen}"
    );
    assert!(
        !seen.contains("nrcap.vrf"),
        "the driver probe made a device:\n{seen}"
    );
    let links = netrollout_testkit::cmd::run("ip", &["-n", &ns.name, "-o", "link"]);
    assert!(!links.contains("nrcap."), "{links}");
    // Not a name of the connection: refused before the kernel is asked.
    assert!(dp.try_vrf_driver("vr.other").await.is_err());
}
