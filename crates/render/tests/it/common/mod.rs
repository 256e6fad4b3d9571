//! Builders the renderer's test files share: inputs, nodes, and the problems a set of inputs
//! gets, each named `KIND OBJECT: FIELD`.

#![allow(dead_code)] // each test file uses its own subset

use netrollout_api::{
    Layer2NetworkConfiguration as L2, Layer2NetworkConfigurationSpec as L2Spec, RoutingTable,
    VRFRouteConfiguration as Vrf, VRFRouteConfigurationSpec as VrfSpec,
};
use netrollout_render::{Error, Node, Problem, compile, from_objects};

/// A VRF input `name` for VRF `vrf` with policy sequence `seq`.
pub fn vrf(name: &str, vrf: &str, seq: i32) -> Vrf {
    Vrf::new(
        name,
        VrfSpec {
            vrf: vrf.into(),
            seq,
            ..Default::default()
        },
    )
}

/// A layer-2 input with VLAN `id`, VNI `vni`, MTU 1500 and the given anycast gateways.
pub fn l2_with(name: &str, id: i32, vni: i64, gateways: &[&str]) -> L2 {
    L2::new(
        name,
        L2Spec {
            id,
            vni,
            mtu: 1500,
            anycast_gateways: gateways.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        },
    )
}

/// A layer-2 input with VLAN `id`, VNI `vni` and MTU 1500.
pub fn l2(name: &str, id: i32, vni: i64) -> L2 {
    l2_with(name, id, vni, &[])
}

/// A node without labels.
pub fn node(name: &str) -> Node {
    Node {
        name: name.into(),
        labels: Default::default(),
    }
}

/// The problems `compile` finds in the inputs; panics when they are valid.
pub fn problems(vrfs: &[Vrf], l2s: &[L2], tables: &[RoutingTable]) -> Vec<Problem> {
    match compile(&from_objects(vrfs, l2s, tables)) {
        Err(Error::Invalid(invalid)) => invalid.problems,
        other => panic!("expected invalid inputs, got {other:?}"),
    }
}

/// Each problem as `KIND OBJECT: FIELD`.
pub fn fields(problems: &[Problem]) -> Vec<String> {
    problems
        .iter()
        .map(|p| format!("{} {}: {}", p.kind, p.object, p.field))
        .collect()
}
