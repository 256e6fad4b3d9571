//! Segmentation offload (GSO, GRO, TSO) through ethtool netlink, read back with the `ethtool`
//! program: turned off, kept off without writes, repaired after a change by hand, and restored.

use std::process::Command;

use netrollout_dataplane::{Desired, Link, LinkKind, Op, Segmentation};

use crate::common::{TestNs, add_layer2};

/// `ethtool -k DEV` in the namespace: each feature line as `name: on|off`.
fn features(ns: &TestNs, dev: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.name, "ethtool", "-k", dev])
        .output()
        .expect("ip netns exec ethtool: install ethtool (hack/install-deps.sh)");
    assert!(
        out.status.success(),
        "ethtool -k {dev}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Whether `ethtool -k DEV` shows `feature` with `state` (`on` or `off`).
fn shows(ns: &TestNs, dev: &str, feature: &str, state: &str) -> bool {
    let all = features(ns, dev);
    all.lines()
        .any(|l| l.trim_start().starts_with(&format!("{feature}: {state}")))
}

/// A layer-2 network with a macvlan, and a veth pair, all wanting `seg`.
fn network(seg: Segmentation) -> Desired {
    let mut d = Desired::default();
    add_layer2(&mut d, 100, 1500);
    d.add_link(Link::new(
        "mv.100",
        LinkKind::Macvlan {
            parent: "l2.100".into(),
        },
    ));
    d.add_link(Link::new(
        "vd.x",
        LinkKind::Veth {
            peer: "vv.x".into(),
        },
    ));
    d.add_link(Link::new(
        "vv.x",
        LinkKind::Veth {
            peer: "vd.x".into(),
        },
    ));
    for link in d.links.values_mut() {
        link.segmentation = seg;
    }
    d
}

const DEVICES: [&str; 5] = ["l2.100", "lx.100", "mv.100", "vd.x", "vv.x"];

fn switched(report: &netrollout_dataplane::Report) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = (report.ops.iter())
        .filter_map(|op| match op {
            Op::SetSegmentation { link, on } => Some((link.clone(), *on)),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn segmentation_offload_is_turned_off_kept_off_without_writes_and_restored() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let report = dp.apply(&network(Segmentation::Off)).await.unwrap();
    let mut all_off: Vec<(String, bool)> = DEVICES.iter().map(|d| (d.to_string(), false)).collect();
    all_off.sort();
    assert_eq!(switched(&report), all_off, "{:#?}", report.ops);
    for dev in DEVICES {
        for feature in ["generic-segmentation-offload", "generic-receive-offload"] {
            assert!(
                shows(&ns, dev, feature, "off"),
                "{dev} {feature}:\n{}",
                features(&ns, dev)
            );
        }
    }
    // The macvlan's TSO follows its lower device ("[fixed]"); the others' can be changed.
    for dev in ["l2.100", "lx.100", "vd.x"] {
        assert!(
            shows(&ns, dev, "tcp-segmentation-offload", "off"),
            "{dev}:\n{}",
            features(&ns, dev)
        );
    }
    let observed = dp.observe().await.unwrap();
    for dev in DEVICES {
        assert_eq!(
            observed.links[dev].link.segmentation,
            Segmentation::Off,
            "{dev}"
        );
    }

    let again = dp.apply(&network(Segmentation::Off)).await.unwrap();
    assert_eq!(again.writes, 0, "a no-op writes nothing: {:?}", again.ops);
    let untouched = dp.apply(&network(Segmentation::Untouched)).await.unwrap();
    assert_eq!(untouched.writes, 0, "{:?}", untouched.ops);
    assert!(shows(&ns, "l2.100", "generic-receive-offload", "off"));

    // A change by hand is undone, and only on that device.
    Command::new("ip")
        .args([
            "netns", "exec", &ns.name, "ethtool", "-K", "lx.100", "gro", "on",
        ])
        .status()
        .unwrap();
    assert_eq!(
        dp.observe().await.unwrap().links["lx.100"]
            .link
            .segmentation,
        Segmentation::Mixed
    );
    let repaired = dp.apply(&network(Segmentation::Off)).await.unwrap();
    assert_eq!(switched(&repaired), vec![("lx.100".to_string(), false)]);
    assert_eq!(repaired.writes, 1);
    assert!(shows(&ns, "lx.100", "generic-receive-offload", "off"));

    // Turned back on: every feature on again, and a re-apply writes nothing.
    let restored = dp.apply(&network(Segmentation::On)).await.unwrap();
    let mut all_on: Vec<(String, bool)> = DEVICES.iter().map(|d| (d.to_string(), true)).collect();
    all_on.sort();
    assert_eq!(switched(&restored), all_on);
    for dev in DEVICES {
        for feature in [
            "generic-segmentation-offload",
            "generic-receive-offload",
            "tcp-segmentation-offload",
        ] {
            assert!(
                shows(&ns, dev, feature, "on"),
                "{dev} {feature}:\n{}",
                features(&ns, dev)
            );
        }
    }
    let again = dp.apply(&network(Segmentation::On)).await.unwrap();
    assert_eq!(again.writes, 0, "{:?}", again.ops);
}

#[tokio::test]
async fn new_devices_wanting_offload_on_need_no_write_but_a_veth_does() {
    let ns = TestNs::new();
    let dp = ns.dataplane();
    let report = dp.apply(&network(Segmentation::On)).await.unwrap();
    // A bridge, VXLAN device and macvlan start with every feature on; a veth with GRO off.
    assert_eq!(
        switched(&report),
        vec![("vd.x".to_string(), true), ("vv.x".to_string(), true)],
        "{:#?}",
        report.ops
    );
    assert!(shows(&ns, "vd.x", "generic-receive-offload", "on"));
    let again = dp.apply(&network(Segmentation::On)).await.unwrap();
    assert_eq!(again.writes, 0, "{:?}", again.ops);
}
