//! The rendered text of the export policy's extras: communities (standard and large) and VRF
//! loopbacks, from the inputs through render to the FRR text.

use crate::common;

use netrollout_api::{
    NodeConfig, PrefixAction, PrefixItem, VRFRouteConfiguration, VRFRouteConfigurationSpec,
    VrfConfig, VrfLoopback, VrfPolicy,
};
use netrollout_frr::render;
use netrollout_render::{Node, from_objects};

fn permit(cidr: &str) -> PrefixItem {
    PrefixItem {
        cidr: cidr.into(),
        le: Some(32),
        ..Default::default()
    }
}

fn with_communities(communities: &[&str]) -> NodeConfig {
    NodeConfig {
        vrfs: vec![VrfConfig {
            name: "t1".into(),
            vrf_interface: "vr.t1".into(),
            veth_default_interface: "vd.t1".into(),
            veth_vrf_interface: "vv.t1".into(),
            policies: vec![VrfPolicy {
                source: "t1".into(),
                seq: 10,
                export: vec![permit("10.50.0.0/16"), permit("fd00::/48")],
                communities: communities.iter().map(|c| (*c).to_string()).collect(),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The lines of one route-map entry, `route-map NAME permit SEQ` up to its `exit`.
fn entry<'a>(text: &'a str, head: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| *l != head);
    let mut out: Vec<&str> = lines.by_ref().take_while(|l| *l != "exit").collect();
    assert!(!out.is_empty(), "no `{head}` in:\n{text}");
    out.remove(0);
    out
}

#[test]
fn large_communities_are_set_with_set_large_community_and_standard_ones_with_set_community() {
    let text = render(
        &with_communities(&["65000:1", "4200000000:1:2", "no-export", "65000:7:8"]),
        &common::settings(),
    );
    for map in ["rm_t1_export", "rm6_t1_export"] {
        assert_eq!(
            entry(&text, &format!("route-map {map} permit 10")),
            [
                format!(
                    " match {} address prefix-list pl_t1_export_10",
                    if map.starts_with("rm6") { "ipv6" } else { "ip" }
                )
                .as_str(),
                " set community 65000:1 no-export",
                " set large-community 4200000000:1:2 65000:7:8",
            ],
            "{text}"
        );
    }
    // Only large ones: no `set community` at all; none: neither line.
    let text = render(&with_communities(&["1:2:3"]), &common::settings());
    assert!(text.contains(" set large-community 1:2:3\n"), "{text}");
    assert!(!text.contains(" set community"), "{text}");
    let text = render(&with_communities(&[]), &common::settings());
    assert!(!text.contains(" set "), "{text}");
    // Import maps never set communities.
    let text = render(&with_communities(&["1:2:3", "1:2"]), &common::settings());
    assert_eq!(text.matches(" set ").count(), 4, "{text}");
}

#[test]
fn a_vrf_loopback_is_announced_through_its_policys_export_prefix_list_after_the_users_items() {
    let spec = VRFRouteConfigurationSpec {
        vrf: "mir".into(),
        seq: 20,
        vni: Some(5020),
        export: vec![
            PrefixItem {
                cidr: "10.61.0.0/24".into(),
                le: Some(32),
                action: PrefixAction::Deny,
                ..Default::default()
            },
            permit("10.50.0.0/16"),
        ],
        loopbacks: vec![
            VrfLoopback {
                name: "lo.mir".into(),
                subnet: "10.60.0.0/24".into(),
            },
            VrfLoopback {
                name: "lo.mir6".into(),
                subnet: "fd60::/64".into(),
            },
        ],
        ..Default::default()
    };
    let input = VRFRouteConfiguration::new("mirror", spec);
    let node = Node {
        name: "worker-1".into(),
        labels: Default::default(),
    };
    let rendered = netrollout_render::render(&from_objects(&[input], &[], &[]), &[node]).unwrap();
    let config = rendered.config("worker-1").unwrap();
    let v4 = &config.vrfs[0].loopbacks[0].address;
    let v6 = &config.vrfs[0].loopbacks[1].address;
    let text = render(&config, &common::settings());
    let list: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("prefix-list pl_mir_export_20 "))
        .collect();
    assert_eq!(
        list,
        [
            "ip prefix-list pl_mir_export_20 seq 1 deny 10.61.0.0/24 le 32".to_string(),
            "ip prefix-list pl_mir_export_20 seq 2 permit 10.50.0.0/16 le 32".to_string(),
            format!("ip prefix-list pl_mir_export_20 seq 3 permit {v4}"),
            format!("ipv6 prefix-list pl_mir_export_20 seq 1 permit {v6}"),
        ],
        "{text}"
    );
    // The export maps match the list, so `redistribute connected` takes the loopback's host
    // route into the VRF's BGP and `advertise ipv4|ipv6 unicast` sends it as a type-5 route.
    for (map, ip) in [("rm_mir_export", "ip"), ("rm6_mir_export", "ipv6")] {
        assert_eq!(
            entry(&text, &format!("route-map {map} permit 20")),
            [format!(" match {ip} address prefix-list pl_mir_export_20").as_str()],
        );
    }
    assert!(text.contains("  redistribute connected route-map rm_mir_export\n"));
    assert!(text.contains("  advertise ipv4 unicast route-map rm_mir_export\n"));
    assert!(text.contains("  advertise ipv6 unicast route-map rm6_mir_export\n"));
}
