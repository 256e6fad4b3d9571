use netrollout_api::{Layer2Config, LoopbackConfig, NodeConfig, RoutingTableConfig, VrfConfig};
use netrollout_dataplane::{LinkKind, Mac};

use super::*;

fn vtep() -> Vtep {
    Vtep {
        local: Some("192.0.2.7".parse().unwrap()),
        underlay: Some("eth0".into()),
    }
}

fn layer2(id: u16) -> Layer2Config {
    Layer2Config {
        source: format!("net-{id}"),
        id,
        vni: 10_000 + u32::from(id),
        mtu: 1500,
        bridge_interface: format!("l2.{id}"),
        vxlan_interface: format!("lx.{id}"),
        anycast_mac: Some("02:54:00:00:00:01".into()),
        anycast_gateways: vec!["10.1.0.1/24".into()],
        neigh_suppression: true,
        ..Default::default()
    }
}

fn vrf() -> VrfConfig {
    VrfConfig {
        name: "cluster".into(),
        table_id: 51,
        vrf_interface: "vr.cluster".into(),
        bridge_interface: Some("br.cluster".into()),
        vxlan_interface: Some("vx.cluster".into()),
        veth_default_interface: "vd.cluster".into(),
        veth_vrf_interface: "vv.cluster".into(),
        vni: Some(5000),
        mtu: Some(9000),
        sbr_prefixes: vec!["10.250.0.0/16".into()],
        loopbacks: vec![LoopbackConfig {
            name: "lo.cluster".into(),
            address: "10.9.0.7/24".into(),
        }],
        ..Default::default()
    }
}

#[test]
fn a_layer2_becomes_a_bridge_with_its_vxlan_port_and_gateway_address() {
    let config = NodeConfig {
        layer2s: vec![layer2(100)],
        ..Default::default()
    };
    let d = to_desired(&config, &vtep()).unwrap();
    d.validate(&managed().unwrap()).unwrap();
    let bridge = &d.links["l2.100"];
    assert_eq!(bridge.kind, LinkKind::Bridge);
    assert_eq!(bridge.mtu, Some(1500));
    assert_eq!(bridge.mac, Some(Mac([2, 0x54, 0, 0, 0, 1])));
    let vx = &d.links["lx.100"];
    assert_eq!(vx.master.as_deref(), Some("l2.100"));
    let LinkKind::Vxlan(v) = &vx.kind else {
        panic!("lx.100 is {:?}", vx.kind)
    };
    assert_eq!(
        (v.vni, v.local.to_string(), v.underlay.as_deref()),
        (10_100, "192.0.2.7".into(), Some("eth0"))
    );
    assert!(v.neigh_suppress && !v.learning);
    assert_eq!(d.addresses.len(), 1);
    assert_eq!(d.addresses[0].link, "l2.100");
    assert_eq!(d.addresses[0].addr.to_string(), "10.1.0.1/24");
}

#[test]
fn disable_segmentation_turns_offload_off_on_the_networks_three_devices_and_on_otherwise() {
    let mut off = layer2(100);
    off.macvlan_interface = Some("mv.100".into());
    off.disable_segmentation = true;
    let mut on = layer2(101);
    on.macvlan_interface = Some("mv.101".into());
    let config = NodeConfig {
        layer2s: vec![off, on],
        ..Default::default()
    };
    let d = to_desired(&config, &vtep()).unwrap();
    for (id, want) in [(100, Segmentation::Off), (101, Segmentation::On)] {
        for prefix in ["l2.", "lx.", "mv."] {
            let name = format!("{prefix}{id}");
            assert_eq!(d.links[&name].segmentation, want, "{name}");
        }
    }
    // Nothing else of the node is the network's: left as the kernel has it.
    let mut with_vrf = config.clone();
    with_vrf.vrfs = vec![vrf()];
    let d = to_desired(&with_vrf, &vtep()).unwrap();
    assert_eq!(d.links["vd.cluster"].segmentation, Segmentation::Untouched);
    assert_eq!(d.links["br.cluster"].segmentation, Segmentation::Untouched);
}

#[test]
fn advertise_neighbors_makes_the_bridge_a_host_route_target_in_its_vrfs_table() {
    let mut announced = layer2(100);
    announced.vrf = Some("cluster".into());
    announced.advertise_neighbors = true;
    let mut quiet = layer2(101);
    quiet.vrf = Some("cluster".into());
    let config = NodeConfig {
        vrfs: vec![vrf()],
        layer2s: vec![announced, quiet],
        ..Default::default()
    };
    let d = to_desired(&config, &vtep()).unwrap();
    assert_eq!(
        d.host_routes,
        [HostRoutes {
            link: "l2.100".into(),
            table: 51
        }]
    );
    let mut off = config.clone();
    off.layer2s[0].advertise_neighbors = false;
    assert!(to_desired(&off, &vtep()).unwrap().host_routes.is_empty());
}

#[test]
fn a_vrf_with_a_vni_becomes_a_vrf_device_bridge_vxlan_veth_pair_loopback_and_rules() {
    let mut l2 = layer2(200);
    l2.vrf = Some("cluster".into());
    l2.macvlan_interface = Some("mv.200".into());
    let config = NodeConfig {
        vrfs: vec![vrf()],
        layer2s: vec![l2],
        routing_tables: vec![RoutingTableConfig {
            source: "taas".into(),
            table_id: 300,
            interface: "tb.300".into(),
        }],
        ..Default::default()
    };
    let d = to_desired(&config, &vtep()).unwrap();
    d.validate(&managed().unwrap()).unwrap();
    assert_eq!(d.links["vr.cluster"].kind, LinkKind::Vrf { table: 51 });
    assert_eq!(d.links["br.cluster"].master.as_deref(), Some("vr.cluster"));
    assert_eq!(d.links["vx.cluster"].master.as_deref(), Some("br.cluster"));
    assert_eq!(d.links["vv.cluster"].master.as_deref(), Some("vr.cluster"));
    assert_eq!(d.links["vd.cluster"].master, None);
    assert_eq!(d.links["vd.cluster"].mtu, Some(9000));
    assert_eq!(d.links["lo.cluster"].kind, LinkKind::Dummy);
    assert_eq!(d.links["l2.200"].master.as_deref(), Some("vr.cluster"));
    assert_eq!(
        d.links["mv.200"].kind,
        LinkKind::Macvlan {
            parent: "l2.200".into()
        }
    );
    assert_eq!(d.links["tb.300"].kind, LinkKind::Vrf { table: 300 });
    assert_eq!(d.rules.len(), 1);
    assert_eq!(d.rules[0].table, 51);
    assert_eq!(d.rules[0].priority, SBR_RULE_PRIORITY);
    assert!(d.addresses.iter().any(|a| a.link == "lo.cluster"));
}

#[test]
fn a_vxlan_without_a_vtep_address_names_the_flag_to_set() {
    let config = NodeConfig {
        layer2s: vec![layer2(100)],
        ..Default::default()
    };
    let err = to_desired(&config, &Vtep::default()).unwrap_err();
    assert_eq!(
        err,
        ConvertError::NoVtep {
            link: "lx.100".into()
        }
    );
    assert!(err.to_string().contains("--vtep-ip"));
}

#[test]
fn a_layer2_naming_a_missing_vrf_or_a_bad_gateway_is_rejected() {
    let mut l2 = layer2(100);
    l2.vrf = Some("nope".into());
    let config = NodeConfig {
        layer2s: vec![l2],
        ..Default::default()
    };
    assert!(matches!(
        to_desired(&config, &vtep()),
        Err(ConvertError::UnknownVrf { id: 100, .. })
    ));
    let mut l2 = layer2(100);
    l2.anycast_gateways = vec!["10.1.0.1".into()];
    let config = NodeConfig {
        layer2s: vec![l2],
        ..Default::default()
    };
    assert!(matches!(
        to_desired(&config, &vtep()),
        Err(ConvertError::BadValue {
            field: "anycastGateways[]",
            ..
        })
    ));
}

#[test]
fn an_empty_config_means_no_managed_objects() {
    let d = to_desired(&NodeConfig::default(), &Vtep::default()).unwrap();
    assert!(d.links.is_empty() && d.addresses.is_empty() && d.rules.is_empty());
}

#[test]
fn the_agent_hands_the_dataplane_the_contracts_prefixes_and_limit() {
    let m = managed().unwrap();
    assert_eq!(m.prefixes(), netrollout_api::MANAGED_PREFIXES);
    assert!(m.owns("vr.cluster") && m.owns("l2.100") && !m.owns("eth0"));
    assert_eq!(
        netrollout_dataplane::MAX_NAME_LEN,
        netrollout_api::MAX_IFNAME
    );
}

#[test]
fn two_links_of_one_name_are_refused_naming_both_objects_the_field_and_the_name() {
    // Two VRFs' loopbacks of one name: the kernel has one device per name, so the second would
    // have taken the first's place (and its address) without a word.
    let mut t2 = vrf();
    t2.name = "t2".into();
    t2.vrf_interface = "vr.t2".into();
    t2.bridge_interface = Some("br.t2".into());
    t2.vxlan_interface = Some("vx.t2".into());
    t2.veth_default_interface = "vd.t2".into();
    t2.veth_vrf_interface = "vv.t2".into();
    t2.sbr_prefixes.clear();
    let config = NodeConfig {
        vrfs: vec![vrf(), t2.clone()],
        ..Default::default()
    };
    let err = to_desired(&config, &vtep()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "vrf t2: loopbacks[].name \"lo.cluster\" is the name vrf cluster loopbacks[].name \
         already gives a link; give each link its own name (nothing was applied)"
    );
    // A layer-2 network's bridge named like a VRF's bridge.
    let mut l2 = layer2(100);
    l2.bridge_interface = "br.cluster".into();
    let config = NodeConfig {
        vrfs: vec![vrf()],
        layer2s: vec![l2],
        ..Default::default()
    };
    assert_eq!(
        to_desired(&config, &vtep()).unwrap_err(),
        ConvertError::DuplicateLink {
            object: "layer2 100".into(),
            field: "bridgeInterface",
            name: "br.cluster".into(),
            other: "vrf cluster bridgeInterface".into(),
        }
    );
    // Distinct names: both VRFs' links are there.
    t2.loopbacks[0].name = "lo.t2".into();
    let config = NodeConfig {
        vrfs: vec![vrf(), t2],
        ..Default::default()
    };
    let d = to_desired(&config, &vtep()).unwrap();
    assert!(d.links.contains_key("lo.cluster") && d.links.contains_key("lo.t2"));
}
