//! Invalid inputs: every problem is reported at once, naming the object, the field and a fix.

use crate::common;

use common::{fields, l2, problems, vrf};
use netrollout_api::{PrefixItem, RoutingTable, RoutingTableSpec, VrfLoopback};
use netrollout_render::{Error, Node, Revision, from_objects, render};

#[test]
fn duplicate_vlan_ids_and_vnis_are_rejected_naming_both_objects() {
    let got = problems(&[], &[l2("a", 10, 100), l2("b", 10, 100)], &[]);
    assert_eq!(
        fields(&got),
        [
            "Layer2NetworkConfiguration b: spec.id",
            "Layer2NetworkConfiguration b: spec.vni"
        ]
    );
    assert!(
        got[0].message.contains("Layer2NetworkConfiguration \"a\""),
        "{}",
        got[0]
    );
    assert!(got[1].message.contains("VNI 100"));
}

#[test]
fn a_vni_shared_by_a_vrf_and_a_layer2_network_is_rejected() {
    let mut v = vrf("v", "blue", 1);
    v.spec.vni = Some(100);
    let got = problems(&[v], &[l2("a", 10, 100)], &[]);
    assert_eq!(fields(&got), ["Layer2NetworkConfiguration a: spec.vni"]);
}

#[test]
fn a_layer2_network_pointing_at_an_unknown_vrf_is_rejected() {
    let mut net = l2("a", 10, 100);
    net.spec.vrf = Some("nowhere".into());
    let got = problems(&[], &[net], &[]);
    assert_eq!(fields(&got), ["Layer2NetworkConfiguration a: spec.vrf"]);
    assert!(got[0].message.contains("\"nowhere\" is not defined"));
}

#[test]
fn names_too_long_for_the_kernel_bad_cidrs_and_macs_are_all_reported_together() {
    let mut long = vrf("long", "thirteen-char", 1);
    long.spec.import.push(PrefixItem {
        cidr: "10.0.0.0/33".into(),
        ..Default::default()
    });
    let mut ok = vrf("ok", "blue", 2);
    ok.spec.export.push(PrefixItem {
        cidr: "10.0.0.1/24".into(),
        ..Default::default()
    });
    ok.spec.export.push(PrefixItem {
        cidr: "10.0.0.0/24".into(),
        ge: Some(30),
        le: Some(28),
        ..Default::default()
    });
    ok.spec.sbr_prefixes.push("not-a-cidr".into());
    ok.spec.loopbacks.push(VrfLoopback {
        name: "mirror-loopback".into(),
        subnet: "10.9.0.0/24".into(),
    });
    let mut net = l2("net", 5000, 1);
    net.spec.anycast_mac = Some("1a:ee:cf:2f:a7".into());
    net.spec.anycast_gateways.push("10.0.0.1".into());
    net.spec.mtu = 100;
    let got = problems(&[long, ok], &[net], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration long: spec.vrf",
            "VRFRouteConfiguration ok: spec.export[0].cidr",
            "VRFRouteConfiguration ok: spec.export[1].ge",
            "VRFRouteConfiguration ok: spec.sbrPrefixes[0]",
            "VRFRouteConfiguration ok: spec.loopbacks[0].name",
            "Layer2NetworkConfiguration net: spec.id",
            "Layer2NetworkConfiguration net: spec.mtu",
            "Layer2NetworkConfiguration net: spec.anycastMac",
            "Layer2NetworkConfiguration net: spec.anycastGateways[0]",
        ]
    );
    assert!(got[0].message.contains("15 bytes"));
    assert!(got[1].message.contains("write the network, 10.0.0.0/24"));
    let display = got[0].to_string();
    assert!(
        display.starts_with("VRFRouteConfiguration \"long\": spec.vrf: "),
        "{display}"
    );
}

#[test]
fn table_id_clashes_and_kernel_tables_are_rejected() {
    let mut v = vrf("v", "blue", 1);
    v.spec.vni = Some(300);
    let tables = [
        RoutingTable::new("clash", RoutingTableSpec { table_id: 300 }),
        RoutingTable::new("main", RoutingTableSpec { table_id: 254 }),
        RoutingTable::new("twin", RoutingTableSpec { table_id: 400 }),
        RoutingTable::new("twin2", RoutingTableSpec { table_id: 400 }),
    ];
    let got = problems(&[v], &[], &tables);
    assert_eq!(
        fields(&got),
        [
            "RoutingTable clash: spec.tableId",
            "RoutingTable main: spec.tableId",
            "RoutingTable twin2: spec.tableId"
        ]
    );
    assert!(got[0].message.contains("VRF \"blue\""));
}

#[test]
fn policies_of_one_vrf_must_agree_and_use_distinct_seqs() {
    let mut a = vrf("a", "blue", 10);
    a.spec.vni = Some(7);
    let mut b = vrf("b", "blue", 10);
    b.spec.vni = Some(8);
    let got = problems(&[a, b], &[], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration b: spec.vni",
            "VRFRouteConfiguration b: spec.seq"
        ]
    );
}

#[test]
fn a_bad_selector_is_reported_with_its_field() {
    let mut net = l2("net", 10, 10);
    net.spec.node_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("rack".to_string(), "not valid!".to_string())].into()),
            match_expressions: None,
        },
    );
    let got = problems(&[], &[net], &[]);
    assert_eq!(
        fields(&got),
        ["Layer2NetworkConfiguration net: spec.nodeSelector.matchLabels.rack"]
    );
}

#[test]
fn a_layer2_network_on_nodes_without_its_vrf_is_rejected_at_render_time() {
    let mut v = vrf("v", "blue", 1);
    v.spec.node_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some([("rack".to_string(), "r1".to_string())].into()),
            match_expressions: None,
        },
    );
    let mut net = l2("net", 10, 10);
    net.spec.vrf = Some("blue".into());
    let nodes: Vec<Node> = ["r1", "r2"]
        .iter()
        .enumerate()
        .map(|(i, r)| Node {
            name: format!("n{i}"),
            labels: [("rack".to_string(), r.to_string())].into(),
        })
        .collect();
    let Err(Error::Invalid(invalid)) = render(&from_objects(&[v], &[net], &[]), &nodes) else {
        panic!("expected a problem")
    };
    assert_eq!(
        fields(&invalid.problems),
        ["Layer2NetworkConfiguration net: spec.nodeSelector"]
    );
    assert!(invalid.problems[0].message.contains("\"n1\""));
}

#[test]
fn a_node_config_over_one_mebibyte_is_rejected() {
    let mut v = vrf("v", "blue", 1);
    v.spec.export = (0..25_000)
        .map(|i| PrefixItem {
            cidr: format!("10.{}.{}.0/24", i / 256, i % 256),
            le: Some(32),
            ..Default::default()
        })
        .collect();
    let nodes = [Node {
        name: "n0".into(),
        labels: Default::default(),
    }];
    let snapshot = from_objects(&[v], &[], &[]);
    let Err(Error::Invalid(invalid)) = render(&snapshot, &nodes) else {
        panic!("expected a problem")
    };
    assert_eq!(
        fields(&invalid.problems),
        ["NodeNetworkConfig n0: spec.config"]
    );
    assert!(
        invalid.problems[0]
            .message
            .contains("over the API server's limit")
    );
    // The snapshot itself still fits the revision limit.
    Revision::of(&snapshot).unwrap();
}

#[test]
fn loopbacks_get_stable_distinct_per_node_addresses() {
    let mut v = vrf("v", "blue", 1);
    v.spec.loopbacks.push(VrfLoopback {
        name: "lo.mir".into(),
        subnet: "10.9.0.0/29".into(),
    });
    let nodes: Vec<Node> = (0..6)
        .map(|i| Node {
            name: format!("n{i}"),
            labels: Default::default(),
        })
        .collect();
    let snapshot = from_objects(&[v], &[], &[]);
    let addr = |nodes: &[Node], n: &str| {
        render(&snapshot, nodes).unwrap().config(n).unwrap().vrfs[0].loopbacks[0]
            .address
            .clone()
    };
    let all: Vec<String> = nodes.iter().map(|n| addr(&nodes, &n.name)).collect();
    let mut distinct = all.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 6, "{all:?}");
    // Host routes, neither the network nor the broadcast address of the /29.
    assert!(all.iter().all(|a| a.starts_with("10.9.0.")
        && a.ends_with("/32")
        && a != "10.9.0.0/32"
        && a != "10.9.0.7/32"));
    // A node's address does not depend on the other nodes when there is no collision.
    assert_eq!(addr(&nodes[..1], "n0"), all[0]);
    // Seven nodes do not fit a /29 (six usable addresses).
    let seven: Vec<Node> = (0..7)
        .map(|i| Node {
            name: format!("n{i}"),
            labels: Default::default(),
        })
        .collect();
    let Err(Error::Invalid(invalid)) = render(&snapshot, &seven) else {
        panic!("expected a problem")
    };
    assert_eq!(
        fields(&invalid.problems),
        ["VRFRouteConfiguration v: spec.loopbacks[0].subnet"]
    );
}

#[test]
fn routing_settings_frr_cannot_carry_are_rejected_naming_the_field() {
    // A route target without a VNI, communities on a policy that exports nothing, a community and
    // a route target FRR refuses, and two prefix items that would get the same FRR sequence.
    let mut no_vni = vrf("no-vni", "blue", 1);
    no_vni.spec.route_target = Some("65000:1".into());
    no_vni.spec.community = Some("65000:1".into());
    let mut bad = vrf("bad", "red", 1);
    bad.spec.vni = Some(300);
    bad.spec.route_target = Some("4200000000:70000".into());
    bad.spec.communities = vec!["70000:1".into()];
    let item = |cidr: &str, seq: Option<i64>| PrefixItem {
        cidr: cidr.into(),
        seq,
        ..Default::default()
    };
    bad.spec.export = vec![
        item("10.0.0.0/24", None),
        item("fd00::/64", None),
        item("10.1.0.0/24", Some(1)),
    ];
    let mut net = l2("net", 10, 100);
    net.spec.advertise_neighbors = true;
    let got = problems(&[bad, no_vni], &[net], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration no-vni: spec.routeTarget",
            "VRFRouteConfiguration no-vni: spec.community",
            "VRFRouteConfiguration bad: spec.routeTarget",
            "VRFRouteConfiguration bad: spec.export[2].seq",
            "VRFRouteConfiguration bad: spec.communities[0]",
            "Layer2NetworkConfiguration net: spec.advertiseNeighbors",
        ]
    );
    assert!(got[0].message.contains("set spec.vni"), "{}", got[0]);
    assert!(got[1].message.contains("exports nothing"), "{}", got[1]);
    assert!(got[3].message.contains("spec.export[0]"), "{}", got[3]);
    assert!(got[5].message.contains("remove the field"), "{}", got[5]);
}
