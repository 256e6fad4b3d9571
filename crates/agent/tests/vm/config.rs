//! The VM suite's configs and polling: the tenant VRF's config, prefix items, JSON look-ups,
//! waiting for a condition.

use netrollout_api::{LoopbackConfig, NodeConfig, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};
use serde_json::Value;

pub const VNI: u32 = 5000;
pub const ROUTE_TARGET: &str = "65000:5000";
pub const COMMUNITY: &str = "65000:100";
pub const AGGREGATE: &str = "10.50.0.0/21";
pub const NODE1: [&str; 3] = ["10.50.1.1/24", "10.50.3.1/24", "10.50.4.1/24"];
pub const NODE2: [&str; 1] = ["10.50.2.1/24"];
/// The second tenant VRF, added to running nodes (`advertise-all-vni` already on): its VNI, and
/// each node's loopback in it.
pub const VNI2: u32 = 5001;
pub const NODE1_T2: &str = "10.60.1.1/24";
pub const NODE2_T2: &str = "10.60.2.1/24";

/// The value of the first object key, at any depth, that `pred` accepts.
pub fn find_key<'a>(v: &'a Value, pred: &dyn Fn(&str) -> bool) -> Option<&'a Value> {
    match v {
        Value::Object(map) => map
            .iter()
            .find_map(|(k, v)| pred(k).then_some(v))
            .or_else(|| map.values().find_map(|v| find_key(v, pred))),
        Value::Array(items) => items.iter().find_map(|v| find_key(v, pred)),
        _ => None,
    }
}

/// How long a route may take to reach another node's tables. BGP under TCG on the busy 2-core
/// CI machine has taken over 60 s twice (routes received but not yet valid or imported), so
/// route checks wait this long; on a pass each returns as soon as the route is there.
pub const ROUTE_WAIT: u64 = 180;

pub use netrollout_testkit::prefixes::{item, permit_all};

/// Polls `check` every half second until it returns `Some` (said as "agent-frr-vm: ok: what"),
/// or fails after `secs`.
pub fn wait<T>(what: &str, secs: u64, check: impl FnMut() -> Option<T>) -> T {
    netrollout_testkit::poll::until("agent-frr-vm", what, secs, check)
}

/// Tenant VRF `t1` (VNI 5000, route target, one policy with import, export, the community and,
/// on node 1, the aggregate) with a loopback per address: the tenant prefixes the node announces.
pub fn config(
    addresses: &[&str],
    import: Vec<PrefixItem>,
    export: Vec<PrefixItem>,
    route_target: &str,
) -> NodeConfig {
    NodeConfig {
        vrfs: vec![VrfConfig {
            name: "t1".into(),
            table_id: VNI,
            vrf_interface: "vr.t1".into(),
            bridge_interface: Some("br.t1".into()),
            vxlan_interface: Some("vx.t1".into()),
            veth_default_interface: "vd.t1".into(),
            veth_vrf_interface: "vv.t1".into(),
            vni: Some(VNI),
            route_target: Some(route_target.into()),
            loopbacks: addresses
                .iter()
                .enumerate()
                .map(|(i, a)| LoopbackConfig {
                    name: format!("lo.t{i}"),
                    address: (*a).into(),
                })
                .collect(),
            policies: vec![VrfPolicy {
                source: "t1".into(),
                seq: 10,
                import,
                export,
                // Node 1's prefixes only: node 2's own aggregate would hide node 1's.
                aggregate: if addresses == NODE1 {
                    vec![AGGREGATE.into()]
                } else {
                    Vec::new()
                },
                communities: vec![COMMUNITY.into()],
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// `c` with a second tenant VRF `t2` (VNI [`VNI2`], its own route target) holding a loopback
/// with `address`; import and export everything in 10.60.0.0/16.
pub fn with_t2(mut c: NodeConfig, address: &str) -> NodeConfig {
    let all = || vec![item("10.60.0.0/16", 1, Some(32), PrefixAction::Permit)];
    c.vrfs.push(VrfConfig {
        name: "t2".into(),
        table_id: VNI2,
        vrf_interface: "vr.t2".into(),
        bridge_interface: Some("br.t2".into()),
        vxlan_interface: Some("vx.t2".into()),
        veth_default_interface: "vd.t2".into(),
        veth_vrf_interface: "vv.t2".into(),
        vni: Some(VNI2),
        route_target: Some(format!("65000:{VNI2}")),
        // Not `lo.t2`: node 1's t1 already has loopbacks `lo.t0`..`lo.t2`.
        loopbacks: vec![LoopbackConfig {
            name: "lo.x2".into(),
            address: address.into(),
        }],
        policies: vec![VrfPolicy {
            source: "t2".into(),
            seq: 10,
            import: all(),
            export: all(),
            aggregate: Vec::new(),
            communities: vec![COMMUNITY.into()],
        }],
        ..Default::default()
    });
    c
}
