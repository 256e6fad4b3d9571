//! The rules that keep hostile or careless inputs off the nodes: the kernel's own routing
//! tables, Kubernetes' address syntax, interface-name characters, anycast gateways and MACs,
//! the field each problem names, and that a clash is blamed on the input that is new since the
//! last revision (`compile_against`), not on the one already accepted.

use crate::common;

use common::{fields, l2_with, problems, vrf};
use netrollout_api::{
    Layer2NetworkConfiguration as L2, PrefixItem, RoutingTable, RoutingTableSpec,
    VRFRouteConfiguration as Vrf, VrfLoopback,
};
use netrollout_render::{Error, Problem, compile, compile_against, from_objects};

#[test]
fn no_vrf_vni_or_table_id_may_be_one_of_the_kernels_own_tables() {
    for id in [252, 253, 254, 255] {
        let mut v = vrf("v", "blue", 1);
        v.spec.vni = Some(id);
        let got = problems(&[v], &[], &[]);
        assert_eq!(
            fields(&got),
            ["VRFRouteConfiguration v: spec.vni"],
            "vni {id}"
        );
        assert!(got[0].message.contains("kernel's own table"), "{}", got[0]);
        let t = RoutingTable::new("t", RoutingTableSpec { table_id: id });
        let got = problems(&[], &[], &[t]);
        assert_eq!(fields(&got), ["RoutingTable t: spec.tableId"], "table {id}");
    }
    let mut v = vrf("v", "blue", 1);
    v.spec.vni = Some(256);
    assert!(compile(&from_objects(&[v], &[], &[])).is_ok());
}

#[test]
fn cidrs_are_parsed_as_kubernetes_parses_them() {
    let mut v = vrf("v", "blue", 1);
    for cidr in [
        "010.050.000.000/16",
        "10.0.0.0/016",
        "fe80::%eth0/64",
        "::ffff:10.0.0.0/104",
    ] {
        v.spec.export.push(PrefixItem {
            cidr: cidr.into(),
            ..Default::default()
        });
    }
    v.spec.aggregate.push("10.01.0.0/16".into());
    let got = problems(&[v], &[l2_with("n", 10, 100, &["10.0.0.01/24"])], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration v: spec.export[0].cidr",
            "VRFRouteConfiguration v: spec.export[1].cidr",
            "VRFRouteConfiguration v: spec.export[2].cidr",
            "VRFRouteConfiguration v: spec.export[3].cidr",
            "VRFRouteConfiguration v: spec.aggregate[0]",
            "Layer2NetworkConfiguration n: spec.anycastGateways[0]",
        ]
    );
    assert!(got[0].message.contains("leading zeros"), "{}", got[0]);
    assert!(got[2].message.contains("zone"), "{}", got[2]);
    assert!(got[3].message.contains("IPv4-mapped"), "{}", got[3]);
}

#[test]
fn loopback_names_linux_refuses_and_subnets_with_host_bits_are_rejected() {
    let mut v = vrf("v", "blue", 1);
    for name in ["lo.a:b", "lo.a b", "lo.a/b", "lo.%d", "lo."] {
        v.spec.loopbacks.push(VrfLoopback {
            name: name.into(),
            subnet: "10.9.0.0/24".into(),
        });
    }
    v.spec.loopbacks.push(VrfLoopback {
        name: "lo.ok".into(),
        subnet: "10.9.0.1/24".into(),
    });
    let got = problems(&[v], &[], &[]);
    let want: Vec<String> = (0..5)
        .map(|i| format!("VRFRouteConfiguration v: spec.loopbacks[{i}].name"))
        .chain(["VRFRouteConfiguration v: spec.loopbacks[5].subnet".to_string()])
        .collect();
    assert_eq!(fields(&got), want);
    assert!(got[5].message.contains("host bits"), "{}", got[5]);
}

#[test]
fn anycast_gateways_must_be_distinct_host_addresses_in_subnets_that_do_not_overlap_in_a_vrf() {
    let mut blue = vrf("v", "blue", 1);
    blue.spec.vni = Some(7);
    let mut in_blue = l2_with("b", 11, 101, &["10.1.0.1/24"]);
    in_blue.spec.vrf = Some("blue".into());
    let mut also_blue = l2_with("c", 12, 102, &["10.1.0.200/25"]);
    also_blue.spec.vrf = Some("blue".into());
    let nets = [
        l2_with(
            "a",
            10,
            100,
            &[
                "10.0.0.0/24",
                "10.0.0.255/24",
                "fd00::/64",
                "fd01::1/64",
                "fd01::1/64",
            ],
        ),
        in_blue,
        also_blue,
        // The same subnet in the default VRF is another VRF: no clash with "b".
        l2_with("d", 13, 103, &["10.1.0.1/24", "10.0.1.1/31"]),
    ];
    let got = problems(&[blue], &nets, &[]);
    assert_eq!(
        fields(&got),
        [
            "Layer2NetworkConfiguration a: spec.anycastGateways[0]",
            "Layer2NetworkConfiguration a: spec.anycastGateways[1]",
            "Layer2NetworkConfiguration a: spec.anycastGateways[2]",
            "Layer2NetworkConfiguration a: spec.anycastGateways[4]",
            "Layer2NetworkConfiguration c: spec.anycastGateways[0]",
        ]
    );
    assert!(got[0].message.contains("network address"), "{}", got[0]);
    assert!(got[1].message.contains("broadcast"), "{}", got[1]);
    assert!(
        got[3].message.contains("spec.anycastGateways[3]"),
        "{}",
        got[3]
    );
    assert!(
        got[4].message.contains("\"b\"") && got[4].message.contains("VRF \"blue\""),
        "{}",
        got[4]
    );
}

#[test]
fn multicast_and_all_zero_anycast_macs_are_rejected() {
    for mac in [
        "01:00:5e:00:00:01",
        "ff:ff:ff:ff:ff:ff",
        "00:00:00:00:00:00",
        "1A:EE:CF:2F:A7",
    ] {
        let mut n = l2_with("n", 10, 100, &[]);
        n.spec.anycast_mac = Some(mac.into());
        let got = problems(&[], &[n], &[]);
        assert_eq!(
            fields(&got),
            ["Layer2NetworkConfiguration n: spec.anycastMac"],
            "{mac}"
        );
    }
    let mut n = l2_with("n", 10, 100, &[]);
    n.spec.anycast_mac = Some("1A:EE:CF:2F:A7:A8".into());
    assert!(compile(&from_objects(&[], &[n], &[])).is_ok());
}

#[test]
fn a_bad_community_is_reported_on_the_field_the_user_wrote() {
    let mut v = vrf("v", "blue", 1);
    v.spec.community = Some("65536:1".into());
    v.spec.communities = vec!["no-export".into(), "1:70000".into()];
    v.spec.export.push(PrefixItem {
        cidr: "10.0.0.0/8".into(),
        ..Default::default()
    });
    let got = problems(&[v], &[], &[]);
    assert_eq!(
        fields(&got),
        [
            "VRFRouteConfiguration v: spec.community",
            "VRFRouteConfiguration v: spec.communities[1]",
        ]
    );
}

/// The problems of `now` checked against `accepted`.
fn blamed(
    accepted: (&[Vrf], &[L2], &[RoutingTable]),
    now: (&[Vrf], &[L2], &[RoutingTable]),
) -> Vec<Problem> {
    let accepted = from_objects(accepted.0, accepted.1, accepted.2);
    match compile_against(&from_objects(now.0, now.1, now.2), &accepted) {
        Err(Error::Invalid(invalid)) => invalid.problems,
        other => panic!("expected invalid inputs, got {other:?}"),
    }
}

#[test]
fn a_clash_is_blamed_on_the_input_that_is_new_since_the_last_revision() {
    // A new VRF reusing an accepted layer-2 network's VNI: VRFs are checked first, yet the
    // layer-2 network keeps its VNI and the VRF is the one rejected.
    let old = l2_with("z-old", 10, 100, &[]);
    let mut new = vrf("a-new", "blue", 1);
    new.spec.vni = Some(100);
    let got = blamed(
        (&[], std::slice::from_ref(&old), &[]),
        (std::slice::from_ref(&new), std::slice::from_ref(&old), &[]),
    );
    assert_eq!(fields(&got), ["VRFRouteConfiguration a-new: spec.vni"]);
    assert!(got[0].message.contains("\"z-old\""), "{}", got[0]);
    // Without history the order of checking decides, as before.
    let got = problems(&[new], &[old], &[]);
    assert_eq!(fields(&got), ["Layer2NetworkConfiguration z-old: spec.vni"]);
    // Within one kind: the newcomer sorts first by name and is still the one blamed.
    let (t_old, t_new) = (
        RoutingTable::new("z-old", RoutingTableSpec { table_id: 300 }),
        RoutingTable::new("a-new", RoutingTableSpec { table_id: 300 }),
    );
    let got = blamed(
        (&[], &[], std::slice::from_ref(&t_old)),
        (&[], &[], &[t_new, t_old.clone()]),
    );
    assert_eq!(fields(&got), ["RoutingTable a-new: spec.tableId"]);
    // A routing table accepted before a VRF that now takes its id as VNI.
    let t = RoutingTable::new("z-t", RoutingTableSpec { table_id: 301 });
    let mut v = vrf("a-v", "blue", 1);
    v.spec.vni = Some(301);
    let accepted = [t.clone()];
    let got = blamed((&[], &[], &accepted), (&[v], &[], &[t]));
    assert_eq!(fields(&got), ["VRFRouteConfiguration a-v: spec.vni"]);
    // Loopbacks of two VRFs, gateway subnets and VLAN ids likewise.
    let lo = |name: &str, vrf_name: &str| {
        let mut v = vrf(name, vrf_name, 1);
        v.spec.loopbacks.push(VrfLoopback {
            name: "lo.x".into(),
            subnet: "10.9.0.0/24".into(),
        });
        v
    };
    let got = blamed(
        (&[lo("z-v", "red")], &[], &[]),
        (&[lo("a-v", "blue"), lo("z-v", "red")], &[], &[]),
    );
    assert_eq!(
        fields(&got),
        ["VRFRouteConfiguration a-v: spec.loopbacks[0].name"]
    );
    let (n_old, n_new) = (
        l2_with("z-n", 10, 100, &["10.0.0.1/24"]),
        l2_with("a-n", 10, 101, &["10.0.0.2/24"]),
    );
    let got = blamed(
        (&[], std::slice::from_ref(&n_old), &[]),
        (&[], &[n_new, n_old.clone()], &[]),
    );
    assert_eq!(
        fields(&got),
        [
            "Layer2NetworkConfiguration a-n: spec.id",
            "Layer2NetworkConfiguration a-n: spec.anycastGateways[0]"
        ]
    );
}
