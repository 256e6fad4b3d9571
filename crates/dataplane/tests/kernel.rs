//! Kernel tests on this machine's kernel, each in a fresh network namespace (needs root):
//! bridges, VXLAN, veth, macvlan, addresses, routes in tables, rules, MTU, master/nomaster,
//! idempotency, drift repair, shrinking, foreign objects, errors; segmentation offload
//! (`offload`); neighbour host routes (`neighbours`).
// Test helpers may panic: a failed setup is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "kernel/neighbours.rs"]
mod neighbours;
#[path = "kernel/offload.rs"]
mod offload;

use common::{ANYCAST_MAC, TestNs, add_layer2, address, vxlan};
use netrollout_dataplane::{
    Desired, Error, Family, Link, LinkChange, LinkKind, Op, RTPROT_NETROLLOUT, Route, Rule, diff,
};

fn route(table: u32, dst: &str, gateway: Option<&str>, dev: Option<&str>) -> Route {
    Route {
        table,
        dst: dst.parse().unwrap(),
        gateway: gateway.map(|g| g.parse().unwrap()),
        dev: dev.map(str::to_string),
        metric: 0,
    }
}

/// A node with two Layer2 networks, a macvlan, a veth leak pair, a table route and a rule.
fn node() -> Desired {
    let mut d = Desired::default();
    add_layer2(&mut d, 100, 1450);
    add_layer2(&mut d, 200, 9000);
    d.add_link(Link::new(
        "mv.100",
        LinkKind::Macvlan {
            parent: "l2.100".into(),
        },
    ));
    d.add_link(Link::new("br.red", LinkKind::Bridge));
    d.add_link(Link::new("vx.red", vxlan(5000, false)).master("br.red"));
    d.add_link(Link::new(
        "vd.red",
        LinkKind::Veth {
            peer: "vv.red".into(),
        },
    ));
    d.add_link(
        Link::new(
            "vv.red",
            LinkKind::Veth {
                peer: "vd.red".into(),
            },
        )
        .mtu(1400),
    );
    d.addresses.push(address("vd.red", "169.254.10.0/31"));
    d.addresses.push(address("vv.red", "169.254.10.1/31"));
    d.addresses.push(address("l2.100", "fd00:100::1/64"));
    d.routes.push(route(
        100,
        "10.20.0.0/16",
        Some("169.254.10.0"),
        Some("vv.red"),
    ));
    d.routes
        .push(route(254, "10.30.0.0/16", None, Some("vd.red")));
    d.routes
        .push(route(100, "fd00:30::/48", None, Some("vv.red")));
    d.rules.push(Rule::from_prefix(
        3000,
        "10.100.0.0/24".parse().unwrap(),
        100,
    ));
    d
}

#[tokio::test]
async fn a_node_config_is_created_and_reads_back_as_configured() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let desired = node();
    let report = dp.apply(&desired).await.unwrap();
    assert_eq!(report.writes, report.ops.len());
    assert!(report.writes >= 20, "{report:?}");

    let vx = ns.ip("-d link show lx.100");
    for want in [
        "vxlan id 100100",
        "local 192.0.2.1",
        "dstport 4789",
        "nolearning",
        "master l2.100",
        "mtu 1450",
    ] {
        assert!(vx.contains(want), "lx.100 lacks `{want}`:\n{vx}");
    }
    let br = ns.ip("-d link show l2.100");
    assert!(
        br.contains(&ANYCAST_MAC.to_string()) && br.contains("mtu 1450") && br.contains("bridge"),
        "{br}"
    );
    assert!(ns.ip("link show l2.100").contains("UP"));
    assert!(
        ns.bridge("-d link show dev lx.100")
            .contains("neigh_suppress on")
    );
    assert!(ns.ip("-d link show mv.100").contains("macvlan mode bridge"));
    assert!(ns.ip("link show vv.red").contains("mtu 1400"));
    assert!(ns.ip("addr show dev l2.100").contains("10.0.100.1/24"));
    assert!(ns.ip("addr show dev l2.100").contains("fd00:100::1/64"));
    let t100 = ns.ip("route show table 100");
    assert!(
        t100.contains(&format!(
            "10.20.0.0/16 via 169.254.10.0 dev vv.red proto {RTPROT_NETROLLOUT}"
        )),
        "{t100}"
    );
    assert!(
        ns.ip("-6 route show table 100")
            .contains("fd00:30::/48 dev vv.red")
    );
    assert!(ns.ip("route show").contains("10.30.0.0/16 dev vd.red"));
    assert!(
        ns.ip("rule show")
            .contains("3000:\tfrom 10.100.0.0/24 lookup 100 proto 177")
    );

    let observed = dp.observe().await.unwrap();
    assert_eq!(diff(&desired, &observed), vec![]);
}

#[tokio::test]
async fn applying_the_same_config_twice_makes_zero_writes_the_second_time() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let desired = node();
    dp.apply(&desired).await.unwrap();
    let again = dp.apply(&desired).await.unwrap();
    assert_eq!(again.writes, 0, "{:?}", again.ops);
}

#[tokio::test]
async fn drift_by_hand_is_repaired_and_a_deleted_bridge_recreated() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let desired = node();
    dp.apply(&desired).await.unwrap();
    ns.ip("link del l2.100");

    ns.ip("addr add 10.77.0.1/24 dev l2.200");
    ns.ip("link set vv.red mtu 1300");
    let repair = dp.apply(&desired).await.unwrap();
    assert!(
        !ns.ip("addr show dev l2.200").contains("10.77.0.1"),
        "a stray address on a managed link is removed"
    );
    assert!(ns.ip("link show vv.red").contains("mtu 1400"));
    assert!(
        repair
            .ops
            .iter()
            .any(|op| matches!(op, Op::CreateLink(l) if l.name == "l2.100")),
        "{repair:?}"
    );
    let vx = ns.ip("-d link show lx.100");
    assert!(vx.contains("master l2.100"), "{vx}");
    assert!(ns.ip("addr show dev l2.100").contains("10.0.100.1/24"));
    assert!(
        ns.bridge("-d link show dev lx.100")
            .contains("neigh_suppress on")
    );
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

#[tokio::test]
async fn objects_removed_from_the_config_disappear_and_foreign_ones_stay() {
    let ns = TestNs::new();
    ns.ip("link add eth9 type bridge");
    ns.ip("link set eth9 up");
    ns.ip("addr add 10.9.0.1/24 dev eth9");
    ns.ip("route add 10.99.0.0/16 via 10.9.0.2 table 100");
    ns.ip("rule add from 10.9.0.0/24 lookup 100 pref 3001");
    ns.ip("link add mybr type bridge");
    let dp = ns.dataplane();
    dp.apply(&node()).await.unwrap();

    let mut small = Desired::default();
    add_layer2(&mut small, 100, 1450);
    let report = dp.apply(&small).await.unwrap();
    assert!(report.writes > 0);
    let links = ns.ip("link show");
    for gone in [
        "l2.200", "lx.200", "mv.100", "br.red", "vx.red", "vd.red", "vv.red",
    ] {
        assert!(
            !links.contains(&format!(" {gone}:")) && !links.contains(&format!(" {gone}@")),
            "{gone} left:\n{links}"
        );
    }
    for kept in ["eth9", "mybr", "l2.100", "lx.100"] {
        assert!(links.contains(&format!(" {kept}")), "{kept} gone:\n{links}");
    }
    assert!(ns.ip("addr show dev eth9").contains("10.9.0.1/24"));
    assert!(!ns.ip("addr show dev l2.100").contains("fd00:100::1"));
    let t100 = ns.ip("route show table 100");
    assert!(
        t100.contains("10.99.0.0/16 via 10.9.0.2") && !t100.contains("10.20.0.0"),
        "{t100}"
    );
    let rules = ns.ip("rule show");
    assert!(
        rules.contains("3001:") && !rules.contains("3000:"),
        "{rules}"
    );
    assert!(ns.ip("-6 route show table 100").is_empty());

    dp.apply(&Desired::default()).await.unwrap();
    let links = ns.ip("link show");
    assert!(
        links.contains(" eth9") && links.contains(" mybr") && !links.contains("l2.100"),
        "{links}"
    );
}

#[tokio::test]
async fn changed_settings_are_applied_in_place_with_only_those_ops() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = node();
    dp.apply(&desired).await.unwrap();

    desired.links.get_mut("l2.200").unwrap().mtu = Some(1500);
    desired.links.get_mut("lx.200").unwrap().mtu = Some(1500);
    if let LinkKind::Vxlan(v) = &mut desired.links.get_mut("lx.100").unwrap().kind {
        v.neigh_suppress = false;
    }
    desired.links.get_mut("vx.red").unwrap().master = None;
    desired.routes[0].gateway = Some("169.254.10.1".parse().unwrap());
    let report = dp.apply(&desired).await.unwrap();

    let modify = |name: &str, mtu, master| {
        Op::ModifyLink(LinkChange {
            name: name.into(),
            mtu,
            mac: None,
            master,
            up: false,
        })
    };
    let mut ops = report.ops.clone();
    ops.sort_by_key(|o| o.to_string());
    let mut want = vec![
        modify("l2.200", Some(1500), None),
        modify("lx.200", Some(1500), None),
        modify("vx.red", None, Some(None)),
        Op::SetBridgePort {
            link: "lx.100".into(),
            neigh_suppress: false,
        },
        Op::ReplaceRoute(desired.routes[0].clone()),
    ];
    want.sort_by_key(|o| o.to_string());
    assert_eq!(ops, want);
    assert!(ns.ip("link show l2.200").contains("mtu 1500"));
    assert!(!ns.ip("link show vx.red").contains("master"));
    assert!(
        ns.bridge("-d link show dev lx.100")
            .contains("neigh_suppress off")
    );
    assert!(ns.ip("route show table 100").contains("via 169.254.10.1"));
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

#[tokio::test]
async fn a_changed_vni_recreates_the_vxlan_device_and_reenslaves_it() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = node();
    dp.apply(&desired).await.unwrap();
    desired.links.get_mut("lx.100").unwrap().kind = vxlan(777, true);
    let report = dp.apply(&desired).await.unwrap();
    assert_eq!(report.ops[0], Op::DeleteLink("lx.100".into()));
    let vx = ns.ip("-d link show lx.100");
    assert!(
        vx.contains("vxlan id 777") && vx.contains("master l2.100"),
        "{vx}"
    );
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
}

#[tokio::test]
async fn a_kernel_refusal_names_the_op_the_object_and_the_kernel_error() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    desired.add_link(Link::new("lx.1", vxlan(42, false)));
    desired.add_link(Link::new("lx.2", vxlan(42, false)));
    let err = dp.apply(&desired).await.unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            Error::Kernel {
                op: "create link",
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains("(vxlan)") && text.contains("the kernel answered"),
        "{text}"
    );
    assert!(err.errno().is_some(), "{text}");
}

#[tokio::test]
async fn a_missing_underlay_device_is_reported_by_name() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let mut desired = Desired::default();
    let mut kind = vxlan(42, false);
    if let LinkKind::Vxlan(v) = &mut kind {
        v.underlay = Some("uplink0".into());
    }
    desired.add_link(Link::new("lx.1", kind.clone()));
    let err = dp.apply(&desired).await.unwrap_err();
    assert!(
        matches!(&err, Error::MissingLink { link, .. } if link == "uplink0"),
        "{err}"
    );

    ns.ip("link add uplink0 type bridge");
    dp.apply(&desired).await.unwrap();
    assert!(ns.ip("-d link show lx.1").contains("dev uplink0"));
    assert_eq!(dp.apply(&desired).await.unwrap().writes, 0);
    let rule = Rule {
        priority: 10,
        family: Family::V6,
        src: None,
        dst: None,
        iif: Some("lx.1".into()),
        table: 7,
    };
    desired.rules.push(rule);
    dp.apply(&desired).await.unwrap();
    assert!(
        ns.ip("-6 rule show")
            .contains("10:\tfrom all iif lx.1 lookup 7 proto 177")
    );
}

#[test]
fn connect_works_in_the_namespace_the_caller_already_runs_in() {
    let ns = TestNs::new();
    let path = format!("/run/netns/{}", ns.name);
    // Like the agent inside a node's namespace: this thread enters it, then connects.
    let report = std::thread::spawn(move || {
        let file = std::fs::File::open(path).unwrap();
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let dp = netrollout_dataplane::Dataplane::connect(common::managed()).unwrap();
            let mut desired = Desired::default();
            add_layer2(&mut desired, 7, 1500);
            let first = dp.apply(&desired).await.unwrap();
            let second = dp.apply(&desired).await.unwrap();
            (first.writes, second.writes)
        })
    })
    .join()
    .unwrap();
    // Bridge, VXLAN, its neighbour suppression, the gateway address; then nothing.
    assert_eq!(report, (4, 0));
    assert!(ns.ip("-d link show lx.7").contains("master l2.7"));
}
