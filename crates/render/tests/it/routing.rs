//! The routing fields of the inputs as render carries them to the nodes: VRF loopbacks become
//! host routes their policy exports, communities (standard and large) are checked against what
//! FRR takes, `advertiseNeighbors` reaches the node in a VRF (refused without one, naming the field), `disableSegmentation` reaches the
//! node's config.

use crate::common;

use common::{fields, node, vrf};
use netrollout_api::{
    Layer2NetworkConfiguration as L2, Layer2NetworkConfigurationSpec as L2Spec, NodeConfig,
    PrefixAction, PrefixItem, VRFRouteConfiguration as Vrf, VrfLoopback,
};
use netrollout_render::{Error, Problem, from_objects, render};

fn item(cidr: &str, seq: Option<i64>, le: Option<i32>, action: PrefixAction) -> PrefixItem {
    PrefixItem {
        cidr: cidr.into(),
        seq,
        le,
        action,
        ..Default::default()
    }
}

fn loopback(name: &str, subnet: &str) -> VrfLoopback {
    VrfLoopback {
        name: name.into(),
        subnet: subnet.into(),
    }
}

fn config_of(vrfs: &[Vrf], l2s: &[L2], name: &str) -> NodeConfig {
    let nodes = [node("n1"), node("n2")];
    render(&from_objects(vrfs, l2s, &[]), &nodes)
        .unwrap()
        .config(name)
        .unwrap()
}

fn problems(vrfs: &[Vrf], l2s: &[L2]) -> Vec<Problem> {
    match render(&from_objects(vrfs, l2s, &[]), &[node("n1")]) {
        Err(Error::Invalid(invalid)) => invalid.problems,
        Err(other) => panic!("expected invalid inputs, got {other}"),
        Ok(_) => panic!("expected invalid inputs, got a rendering"),
    }
}

#[test]
fn a_loopback_is_exported_as_this_nodes_host_route_after_its_policys_own_export_items() {
    let mut v = vrf("mirror", "mir", 10);
    v.spec.export = vec![
        item("10.61.0.0/24", Some(7), Some(32), PrefixAction::Deny),
        item("10.50.0.0/16", None, Some(32), PrefixAction::Permit),
        item("fd00::/64", Some(3), None, PrefixAction::Permit),
    ];
    v.spec.loopbacks = vec![
        loopback("lo.a", "10.60.0.0/24"),
        loopback("lo.b", "10.61.0.0/24"),
        loopback("lo.c", "fd60::/64"),
    ];
    for name in ["n1", "n2"] {
        let config = config_of(std::slice::from_ref(&v), &[], name);
        let vrf = &config.vrfs[0];
        let addresses: Vec<&str> = vrf.loopbacks.iter().map(|l| l.address.as_str()).collect();
        assert_eq!(addresses.len(), 3, "{addresses:?}");
        // Host routes (the Go operator's /32 and /128), inside each subnet.
        assert!(addresses[0].starts_with("10.60.0.") && addresses[0].ends_with("/32"));
        assert!(addresses[1].starts_with("10.61.0.") && addresses[1].ends_with("/32"));
        assert!(addresses[2].starts_with("fd60::") && addresses[2].ends_with("/128"));
        // The user's items first, unchanged; then one permit per loopback with the next free
        // sequence of its family (IPv4: after 7, the highest; IPv6: after 3).
        let export = &vrf.policies[0].export;
        assert_eq!(export[..3], v.spec.export[..]);
        assert_eq!(
            export[3..],
            [
                item(addresses[0], Some(8), None, PrefixAction::Permit),
                item(addresses[1], Some(9), None, PrefixAction::Permit),
                item(addresses[2], Some(4), None, PrefixAction::Permit),
            ]
        );
    }
    // Each node exports its own address, not the other node's.
    let (a, b) = (
        config_of(std::slice::from_ref(&v), &[], "n1"),
        config_of(std::slice::from_ref(&v), &[], "n2"),
    );
    assert_ne!(
        a.vrfs[0].loopbacks[0].address,
        b.vrfs[0].loopbacks[0].address
    );
    assert_ne!(a.vrfs[0].policies[0].export, b.vrfs[0].policies[0].export);
}

#[test]
fn a_loopback_is_exported_by_its_own_policy_only() {
    let mut with = vrf("with", "blue", 20);
    with.spec.loopbacks = vec![loopback("lo.blue", "10.70.0.0/24")];
    let mut other = vrf("other", "blue", 10);
    other.spec.export = vec![item("10.1.0.0/24", None, None, PrefixAction::Permit)];
    let config = config_of(&[with, other], &[], "n1");
    let policies = &config.vrfs[0].policies;
    assert_eq!(policies[0].source, "other");
    assert_eq!(policies[0].export.len(), 1);
    assert_eq!(policies[1].source, "with");
    assert_eq!(policies[1].export.len(), 1);
    assert_eq!(policies[1].export[0].seq, Some(1));
    assert_eq!(
        policies[1].export[0].cidr,
        config.vrfs[0].loopbacks[0].address
    );
}

#[test]
fn a_loopback_after_an_export_item_with_the_highest_sequence_is_refused_naming_the_loopback() {
    let mut v = vrf("full", "blue", 1);
    v.spec.export = vec![item(
        "10.0.0.0/8",
        Some(i64::from(u32::MAX)),
        Some(32),
        PrefixAction::Permit,
    )];
    v.spec.loopbacks = vec![
        loopback("lo.v6", "fd60::/64"),
        loopback("lo.v4", "10.60.0.0/24"),
    ];
    let got = problems(&[v], &[]);
    assert_eq!(
        fields(&got),
        ["VRFRouteConfiguration full: spec.loopbacks[1]"]
    );
    assert!(
        got[0].message.contains("give them lower seq values"),
        "{}",
        got[0]
    );
}

#[test]
fn large_communities_are_carried_and_communities_frr_refuses_are_named_where_they_were_written() {
    let mut ok = vrf("ok", "blue", 1);
    ok.spec.export = vec![item("10.0.0.0/24", None, None, PrefixAction::Permit)];
    ok.spec.community = Some("65000:1".into());
    ok.spec.communities = vec![
        "4200000000:1:2".into(),
        "no-export".into(),
        "0:0:4294967295".into(),
    ];
    let config = config_of(std::slice::from_ref(&ok), &[], "n1");
    assert_eq!(
        config.vrfs[0].policies[0].communities,
        ["65000:1", "4200000000:1:2", "no-export", "0:0:4294967295"]
    );

    let mut bad = ok.clone();
    bad.metadata.name = Some("bad".into());
    bad.spec.community = Some("70000:1".into());
    bad.spec.communities = vec!["65000:1".into(), "4294967296:1:2".into(), "1:2:3:4".into()];
    let got = problems(&[bad], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration bad: spec.community",
            "VRFRouteConfiguration bad: spec.communities[1]",
            "VRFRouteConfiguration bad: spec.communities[2]",
        ]
    );
    assert!(
        got[0].message.contains("a large community a:b:c"),
        "{}",
        got[0]
    );
}

#[test]
fn advertise_neighbors_reaches_the_node_in_a_vrf_and_is_refused_without_one_and_disable_segmentation_is_rendered()
 {
    let l2 = |name: &str, id: i32| {
        L2::new(
            name,
            L2Spec {
                id,
                vni: i64::from(id) + 1000,
                mtu: 1500,
                ..Default::default()
            },
        )
    };
    let mut neighbours = l2("neighbours", 10);
    neighbours.spec.advertise_neighbors = true;
    let mut offload = l2("offload", 11);
    offload.spec.disable_segmentation = true;
    let got = problems(&[], &[neighbours.clone(), offload.clone(), l2("fine", 12)]);
    assert_eq!(
        fields(&got),
        ["Layer2NetworkConfiguration neighbours: spec.advertiseNeighbors"]
    );
    assert_eq!(
        got[0].message,
        netrollout_api::ADVERTISE_NEIGHBORS_NEEDS_VRF
    );

    neighbours.spec.vrf = Some("mir".into());
    let vrfs = [vrf("mirror", "mir", 10)];
    let config = config_of(&vrfs, &[neighbours, offload, l2("fine", 12)], "n1");
    let flags: Vec<(u16, bool, bool)> = (config.layer2s.iter())
        .map(|l| (l.id, l.advertise_neighbors, l.disable_segmentation))
        .collect();
    assert_eq!(
        flags,
        [(10, true, false), (11, false, true), (12, false, false)]
    );
}
