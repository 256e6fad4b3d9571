//! `BGPPeering`s as render carries them: a `peeringVlan` peering listens on its layer-2
//! network's gateway subnets in the network's VRF, a `loopbackPeer` peering peers with its
//! addresses from the default VRF; bad values, unknown networks, overlapping ranges and a
//! peering on nodes without its network are refused naming the object and the field.

use crate::common;

use std::collections::BTreeMap;

use common::{l2_with, node, vrf};
use netrollout_api::{
    BGPPeering, BGPPeeringLoopback, BGPPeeringSpec, BGPPeeringVlan, BgpPeeringConfig,
    Layer2NetworkConfiguration as L2, PrefixAction, PrefixItem, VRFRouteConfiguration as Vrf,
};
use netrollout_render::{Error, Node, Problem, Revision, from_objects, peerings, render};
use proptest::prelude::*;

fn on_vlan(name: &str, layer2: &str) -> BGPPeering {
    BGPPeering::new(
        name,
        BGPPeeringSpec {
            peering_vlan: Some(BGPPeeringVlan {
                name: layer2.into(),
            }),
            remote_asn: 65511,
            ..Default::default()
        },
    )
}

fn on_loopback(name: &str, ips: &[&str]) -> BGPPeering {
    BGPPeering::new(
        name,
        BGPPeeringSpec {
            loopback_peer: Some(BGPPeeringLoopback {
                ip_addresses: ips.iter().map(|i| i.to_string()).collect(),
            }),
            remote_asn: 65511,
            ..Default::default()
        },
    )
}

fn labelled(name: &str, rack: &str) -> Node {
    Node {
        name: name.into(),
        labels: BTreeMap::from([("rack".to_string(), rack.to_string())]),
    }
}

fn rendered(
    vrfs: &[Vrf],
    l2s: &[L2],
    peers: &[BGPPeering],
    nodes: &[Node],
) -> Result<netrollout_render::Rendered, Error> {
    let mut snapshot = from_objects(vrfs, l2s, &[]);
    snapshot.bgp_peerings = peerings(peers);
    render(&snapshot, nodes)
}

fn problems(vrfs: &[Vrf], l2s: &[L2], peers: &[BGPPeering]) -> Vec<Problem> {
    match rendered(vrfs, l2s, peers, &[node("n1")]) {
        Err(Error::Invalid(invalid)) => invalid.problems,
        Err(other) => panic!("expected invalid inputs, got {other}"),
        Ok(_) => panic!("expected invalid inputs, got a rendering"),
    }
}

/// The one problem of `peering`, as `FIELD: MESSAGE`.
fn refusal(vrfs: &[Vrf], l2s: &[L2], peers: &[BGPPeering], peering: &str) -> String {
    let found: Vec<String> = problems(vrfs, l2s, peers)
        .into_iter()
        .filter(|p| p.kind == "BGPPeering" && p.object == peering)
        .map(|p| format!("{}: {}", p.field, p.message))
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

fn tenant_l2(name: &str, id: i32, gateways: &[&str]) -> L2 {
    let mut l2 = l2_with(name, id, 5000 + i64::from(id), gateways);
    l2.spec.vrf = Some("tenant".into());
    l2
}

#[test]
fn a_vlan_peering_listens_on_its_networks_gateway_subnets_in_its_vrf() {
    let v = vrf("tenant", "tenant", 10);
    let l2 = tenant_l2("vlan501", 501, &["10.250.1.1/24", "fd94:1::1/64"]);
    let mut p = on_vlan("lb", "vlan501");
    p.spec.enable_bfd = true;
    p.spec.maximum_prefixes = Some(16);
    p.spec.hold_time = Some("1m30s".into());
    p.spec.keepalive_time = Some("30s".into());
    p.spec.import = vec![PrefixItem {
        cidr: "10.250.3.0/24".into(),
        le: Some(32),
        action: PrefixAction::Permit,
        ..Default::default()
    }];
    let r = rendered(&[v], &[l2], &[p.clone()], &[node("n1")]).unwrap();
    let config = r.config("n1").unwrap();
    assert_eq!(
        config.bgp_peerings,
        [BgpPeeringConfig {
            source: "lb".into(),
            vrf: Some("tenant".into()),
            listen_ranges: vec!["10.250.1.0/24".into(), "fd94:1::/64".into()],
            neighbors: vec![],
            remote_asn: 65511,
            bfd: true,
            maximum_prefixes: Some(16),
            keepalive_seconds: Some(30),
            hold_seconds: Some(90),
            import: p.spec.import.clone(),
            export: vec![],
        }]
    );
}

#[test]
fn a_loopback_peering_peers_from_the_default_vrf_and_only_on_the_nodes_it_selects() {
    let mut p = on_loopback("calico", &["10.250.7.1", "fd00:7::1"]);
    p.spec.node_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(BTreeMap::from([("rack".into(), "a".into())])),
            ..Default::default()
        },
    );
    let r = rendered(&[], &[], &[p], &[labelled("n1", "a"), labelled("n2", "b")]).unwrap();
    let on = r.config("n1").unwrap().bgp_peerings;
    assert_eq!(on.len(), 1);
    assert_eq!(on[0].vrf, None);
    assert_eq!(on[0].neighbors, ["10.250.7.1", "fd00:7::1"]);
    assert!(on[0].listen_ranges.is_empty());
    assert!(r.config("n2").unwrap().bgp_peerings.is_empty());
}

#[test]
fn bad_values_are_refused_naming_the_peering_and_the_field() {
    let l2 = l2_with("vlan501", 501, 5501, &["10.250.1.1/24"]);
    let with = |f: fn(&mut BGPPeeringSpec)| {
        let mut p = on_vlan("p", "vlan501");
        f(&mut p.spec);
        p
    };
    for (peering, field, words) in [
        (
            with(|s| s.remote_asn = 0),
            "spec.remoteASN",
            "0 is out of range",
        ),
        (
            with(|s| s.remote_asn = 4_294_967_296),
            "spec.remoteASN",
            "out of range",
        ),
        (
            with(|s| s.maximum_prefixes = Some(0)),
            "spec.maximumPrefixes",
            "out of range",
        ),
        (
            with(|s| s.hold_time = Some("90s".into())),
            "spec.holdTime",
            "set together",
        ),
        (
            with(|s| {
                s.hold_time = Some("2s".into());
                s.keepalive_time = Some("1s".into());
            }),
            "spec.holdTime",
            "0s or from 3s to 65535s",
        ),
        (
            with(|s| {
                s.hold_time = Some("1.5s".into());
                s.keepalive_time = Some("1s".into());
            }),
            "spec.holdTime",
            "whole seconds",
        ),
        (
            with(|s| {
                s.hold_time = Some("90s".into());
                s.keepalive_time = Some("18h13m".into());
            }),
            "spec.keepaliveTime",
            "from 0s to 65535s",
        ),
        (
            with(|s| {
                s.peering_vlan = Some(BGPPeeringVlan {
                    name: "vlan9".into(),
                })
            }),
            "spec.peeringVlan.name",
            "no Layer2NetworkConfiguration is named \"vlan9\"",
        ),
        (
            with(|s| s.peering_vlan = None),
            "spec.peeringVlan",
            "needs peeringVlan",
        ),
        (
            with(|s| {
                s.loopback_peer = Some(BGPPeeringLoopback {
                    ip_addresses: vec!["10.0.0.1".into()],
                })
            }),
            "spec.loopbackPeer",
            "exclude each other",
        ),
        (
            with(|s| {
                s.import = vec![PrefixItem {
                    cidr: "10.0.0.1/24".into(),
                    ..Default::default()
                }]
            }),
            "spec.import[0].cidr",
            "host bits",
        ),
    ] {
        let got = refusal(&[], std::slice::from_ref(&l2), &[peering], "p");
        assert!(
            got.starts_with(&format!("{field}: ")) && got.contains(words),
            "want {field} with {words:?}, got {got}"
        );
    }
    for (ips, field, words) in [
        (
            vec!["10.0.0.1", "10.0.0.2"],
            "spec.loopbackPeer.ips[1]",
            "not two of one family",
        ),
        (
            vec!["10.0.0.1/32"],
            "spec.loopbackPeer.ips[0]",
            "not an IP address",
        ),
        (vec![], "spec.loopbackPeer.ips", "one IPv4 and/or one IPv6"),
    ] {
        let got = refusal(&[], &[], &[on_loopback("p", &ips)], "p");
        assert!(
            got.starts_with(&format!("{field}: ")) && got.contains(words),
            "want {field} with {words:?}, got {got}"
        );
    }
}

#[test]
fn a_network_without_gateways_has_nothing_to_listen_on() {
    let l2 = l2_with("vlan501", 501, 5501, &[]);
    let got = refusal(&[], &[l2], &[on_vlan("p", "vlan501")], "p");
    assert!(
        got.starts_with("spec.peeringVlan.name: ") && got.contains("no anycastGateways"),
        "{got}"
    );
}

#[test]
fn two_peerings_on_one_network_or_one_address_are_refused_the_second_naming_the_first() {
    let l2 = l2_with("vlan501", 501, 5501, &["10.250.1.1/24"]);
    let got = refusal(
        &[],
        &[l2],
        &[on_vlan("a", "vlan501"), on_vlan("b", "vlan501")],
        "b",
    );
    assert!(
        got.starts_with("spec.peeringVlan.name: ")
            && got.contains("overlaps 10.250.1.0/24")
            && got.contains("BGPPeering \"a\""),
        "{got}"
    );
    // A loopback address inside a listen range of the same (default) VRF.
    let l2 = l2_with("vlan501", 501, 5501, &["10.250.1.1/24"]);
    let got = refusal(
        &[],
        &[l2],
        &[on_vlan("a", "vlan501"), on_loopback("b", &["10.250.1.9"])],
        "b",
    );
    assert!(
        got.starts_with("spec.loopbackPeer.ips[0]: ") && got.contains("overlaps"),
        "{got}"
    );
    // The same subnet in another VRF is another BGP instance: no clash.
    let v = vrf("tenant", "tenant", 10);
    let other = tenant_l2("vlan502", 502, &["10.250.1.1/24"]);
    let l2 = l2_with("vlan501", 501, 5501, &["10.250.1.1/24"]);
    rendered(
        &[v],
        &[l2, other],
        &[on_vlan("a", "vlan501"), on_vlan("b", "vlan502")],
        &[node("n1")],
    )
    .unwrap();
}

#[test]
fn a_peering_on_nodes_without_its_network_is_refused() {
    let mut l2 = l2_with("vlan501", 501, 5501, &["10.250.1.1/24"]);
    l2.spec.node_selector = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
            match_labels: Some(BTreeMap::from([("rack".into(), "a".into())])),
            ..Default::default()
        },
    );
    let nodes = [labelled("n1", "a"), labelled("n2", "b")];
    let Err(Error::Invalid(invalid)) = rendered(&[], &[l2], &[on_vlan("p", "vlan501")], &nodes)
    else {
        panic!("a peering on nodes without its network rendered");
    };
    let p = &invalid.problems[0];
    assert_eq!(
        (p.kind.as_str(), p.object.as_str(), p.field.as_str()),
        ("BGPPeering", "p", "spec.nodeSelector")
    );
    assert!(
        p.message.contains("\"n2\"") && p.message.contains("vlan501"),
        "{}",
        p.message
    );
}

#[test]
fn snapshots_without_peerings_hash_as_before_the_kind_existed() {
    // The key is left out of the canonical JSON when empty, so revisions of inputs without
    // peerings keep their names across the upgrade.
    let snapshot = from_objects(&[vrf("a", "a", 1)], &[], &[]);
    let json = netrollout_render::canonical_json(&snapshot).unwrap();
    assert!(!json.contains("bgpPeerings"), "{json}");
    let mut with = snapshot.clone();
    with.bgp_peerings = peerings(&[on_loopback("p", &["10.0.0.1"])]);
    assert_ne!(
        Revision::of(&with).unwrap().hash,
        Revision::of(&snapshot).unwrap().hash
    );
}

proptest! {
    /// The snapshot of peerings is content-addressed: their order does not change the hash, a
    /// changed field does.
    #[test]
    fn peerings_are_content_addressed(asns in proptest::collection::vec(1i64..=4_294_967_295, 1..6), bump in 0usize..6) {
        let objects: Vec<BGPPeering> = asns
            .iter()
            .enumerate()
            .map(|(i, asn)| {
                let mut p = on_loopback(&format!("p{i}"), &[&format!("10.0.{i}.1")]);
                p.spec.remote_asn = *asn;
                p
            })
            .collect();
        let hash = |objs: &[BGPPeering]| {
            let mut s = from_objects(&[], &[], &[]);
            s.bgp_peerings = peerings(objs);
            Revision::of(&s).unwrap().hash
        };
        let mut reversed = objects.clone();
        reversed.reverse();
        prop_assert_eq!(hash(&objects), hash(&reversed));
        let mut changed = objects.clone();
        let i = bump % changed.len();
        changed[i].spec.remote_asn = if changed[i].spec.remote_asn == 1 { 2 } else { 1 };
        prop_assert_ne!(hash(&objects), hash(&changed));
    }
}
