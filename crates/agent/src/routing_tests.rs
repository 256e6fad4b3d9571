//! Unit tests of the routing probes on parsed FRR JSON.

use super::*;
use serde_json::json;

#[test]
fn sessions_are_read_per_vrf_and_established_in_any_family_counts() {
    let v = json!({
        "default": {
            "ipv4Unicast": {"peers": {"10.0.0.2": {"state": "Established"}, "10.0.0.3": {"state": "Active"}}},
            "l2VpnEvpn": {"peers": {"10.0.0.2": {"state": "Established"}}}
        },
        "vr.red": {"ipv4Unicast": {}}
    });
    let (s, _) = parse_sessions(&v);
    assert_eq!(s["default 10.0.0.2"], "Established");
    assert_eq!(s["default 10.0.0.3"], "Active");
    assert_eq!(s.len(), 2);
}

#[test]
fn vnis_come_from_both_json_shapes() {
    let l3 = json!({"vrfs": [{"vrf": "vr.red", "vni": 5000, "state": "Down"}]});
    let l2 = json!({"20100": {"vni": 20100, "type": "L2"}});
    assert_eq!(
        parse_vrf_vnis(&l3),
        BTreeMap::from([("vr.red".to_string(), 5000)])
    );
    assert_eq!(parse_vnis(&l2), BTreeMap::from([(20100, "L2".to_string())]));
}

#[test]
fn a_session_established_before_and_lost_after_fails_and_new_ones_do_not_count() {
    let mut before = RoutingState::default();
    before
        .sessions
        .insert("default 10.0.0.2".into(), "Established".into());
    before
        .sessions
        .insert("default 10.0.0.3".into(), "Active".into());
    let mut now = before.clone();
    now.sessions
        .insert("default 10.0.0.2".into(), "Connect".into());
    // The VNI is known, but to another VRF (the default one): that is no pass.
    now.vrf_vnis.insert("default".into(), 5000);
    let config = NodeConfig {
        vrfs: vec![netrollout_api::VrfConfig {
            vrf_interface: "vr.red".into(),
            vni: Some(5000),
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = after(&before, &now, &config);
    let failed: Vec<_> = out
        .iter()
        .filter(|o| !o.passed())
        .map(|o| &o.name)
        .collect();
    assert_eq!(failed, ["bgp default 10.0.0.2", "evpn vni 5000"]);
}

#[test]
fn sessions_of_vrfs_the_new_config_removes_may_go() {
    let mut before = RoutingState::default();
    for s in [
        "vr.red vv.red",
        "default vd.red",
        "vr.blue vv.blue",
        "default vd.blue",
    ] {
        before.sessions.insert(s.into(), "Established".into());
    }
    let config = NodeConfig {
        vrfs: vec![netrollout_api::VrfConfig {
            vrf_interface: "vr.blue".into(),
            veth_default_interface: "vd.blue".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = after(&before, &RoutingState::default(), &config);
    let failed: Vec<_> = out
        .iter()
        .filter(|o| !o.passed())
        .map(|o| &o.name)
        .collect();
    assert_eq!(failed, ["bgp default vd.blue", "bgp vr.blue vv.blue"]);
}

/// `show evpn vni json` as FRR 8.4 prints it: 20300 a layer-2 VNI, 20302 a layer-3 one (its
/// VNI bound to a VRF in FRR's config).
fn evpn_vni_json() -> Value {
    json!({
        "20300": {"vni": 20300, "type": "L2", "vxlanIf": "lx.300", "numMacs": 0,
                  "numArpNd": 0, "numRemoteVteps": 0, "tenantVrf": "default"},
        "20302": {"vni": 20302, "vxlanIf": "lx.302", "numMacs": 0, "numArpNd": 0,
                  "numRemoteVteps": "n/a", "type": "L3", "tenantVrf": "Unknown"}
    })
}

fn layer2s(ids: &[u16]) -> NodeConfig {
    NodeConfig {
        layer2s: ids
            .iter()
            .map(|&id| netrollout_api::Layer2Config {
                source: format!("net-{id}"),
                id,
                vni: 20_000 + u32::from(id),
                vxlan_interface: format!("lx.{id}"),
                bridge_interface: format!("l2.{id}"),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The failed outcomes' names and errors.
fn failures(out: &[Outcome]) -> Vec<(&str, &str)> {
    out.iter()
        .filter_map(|o| Some((o.name.as_str(), o.error.as_deref()?)))
        .collect()
}

#[test]
fn a_layer2_vni_missing_from_frrs_evpn_fails_the_probe_after_the_change_naming_it() {
    let now = RoutingState {
        vnis: parse_vnis(&evpn_vni_json()),
        ..Default::default()
    };
    let out = after(&RoutingState::default(), &now, &layer2s(&[300, 301]));
    assert!(out.iter().any(|o| o.name == "evpn vni 20300" && o.passed()));
    let failed = failures(&out);
    assert_eq!(failed.len(), 1, "{failed:?}");
    let (name, error) = failed[0];
    assert_eq!(name, "evpn vni 20301");
    assert!(
        error.contains("net-301") && error.contains("VNI 20301 is not known to FRR's EVPN"),
        "{error}"
    );
}

#[test]
fn a_layer2_vni_frr_holds_as_a_layer3_vni_fails_the_probe() {
    let now = RoutingState {
        vnis: parse_vnis(&evpn_vni_json()),
        ..Default::default()
    };
    let out = after(&RoutingState::default(), &now, &layer2s(&[302]));
    let failed = failures(&out);
    let [(name, error)] = failed[..] else {
        panic!("{failed:?}");
    };
    assert_eq!(name, "evpn vni 20302");
    assert!(
        error.contains("as type L3, not as a layer-2 VNI") && error.contains("vni 20302"),
        "{error}"
    );
}

#[test]
fn a_layer2_vni_evpn_already_missed_before_the_change_is_reported_not_enforced() {
    // The node runs 300; FRR's EVPN does not know it, before or after. The change adds 301,
    // which FRR does not learn either: only 301 is the change's fault.
    let missing = RoutingState::default();
    let current = layer2s(&[300]);
    let before = before(&missing, &current);
    assert_eq!(
        failures(&before).iter().map(|f| f.0).collect::<Vec<_>>(),
        ["evpn vni 20300"]
    );
    let after = after(&missing, &missing, &layer2s(&[300, 301]));
    let enforced: Vec<&str> = crate::outcome::enforced_failures(&before, &after)
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(enforced, ["evpn vni 20301"]);
}

#[test]
fn a_vrf_vni_evpn_already_missed_before_the_change_is_reported_not_enforced() {
    let vrf = |vni| NodeConfig {
        vrfs: vec![netrollout_api::VrfConfig {
            vrf_interface: "vr.red".into(),
            vni: Some(vni),
            ..Default::default()
        }],
        ..Default::default()
    };
    let missing = RoutingState::default();
    let before = before(&missing, &vrf(5000));
    // The same VNI: not enforced; a new VNI for the VRF: enforced.
    let same = after(&missing, &missing, &vrf(5000));
    assert!(crate::outcome::enforced_failures(&before, &same).is_empty());
    let changed = after(&missing, &missing, &vrf(5001));
    let enforced: Vec<&str> = crate::outcome::enforced_failures(&before, &changed)
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(enforced, ["evpn vni 5001"]);
}
