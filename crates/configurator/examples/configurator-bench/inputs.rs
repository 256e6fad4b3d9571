//! The inputs whose rendered configs fill every node's config in the bench (`BENCH_VRFS`).

use anyhow::Result;
use netrollout_api::{
    Layer2NetworkConfiguration, Layer2NetworkConfigurationSpec, VRFRouteConfiguration,
    VRFRouteConfigurationSpec,
};

/// VRF `i` of the bench: table and VNI 1000 + i, a route target, two aggregates, two
/// source-routed prefixes and an MTU. No import or export prefix lists (nor the communities
/// set on exports): the lab API server evaluates the CEL rules of every prefix item of every
/// node config it stores (about 180 ms per node config of 20 VRFs with 8 items each), which
/// would measure the lab server, not the configurator.
pub fn vrf(i: usize) -> Result<VRFRouteConfiguration> {
    let n = i64::try_from(i)?;
    let spec = VRFRouteConfigurationSpec {
        vrf: format!("t{i:04}"),
        seq: i32::try_from(10 + i)?,
        vni: Some(1000 + n),
        route_target: Some(format!("65000:{}", 1000 + n)),
        aggregate: vec![
            format!("10.{}.0.0/16", i % 250),
            format!("10.{}.0.0/17", i % 250),
        ],
        sbr_prefixes: vec![
            format!("10.{}.128.0/24", i % 250),
            format!("10.{}.129.0/24", i % 250),
        ],
        mtu: Some(9000),
        ..VRFRouteConfigurationSpec::default()
    };
    Ok(VRFRouteConfiguration::new(
        &format!("bench-vrf-{i:04}"),
        spec,
    ))
}

/// The layer-2 network of VRF `i`: VLAN 100 + i, VNI 20000 + i, an anycast gateway.
pub fn layer2(i: usize) -> Result<Layer2NetworkConfiguration> {
    let spec = Layer2NetworkConfigurationSpec {
        id: i32::try_from(100 + i)?,
        mtu: 9000,
        vni: 20_000 + i64::try_from(i)?,
        vrf: Some(format!("t{i:04}")),
        anycast_mac: Some("02:00:00:00:00:01".into()),
        anycast_gateways: vec![format!("172.16.{}.1/24", i % 250)],
        ..Layer2NetworkConfigurationSpec::default()
    };
    Ok(Layer2NetworkConfiguration::new(
        &format!("bench-l2-{i:04}"),
        spec,
    ))
}
