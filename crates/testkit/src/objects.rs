//! Object builders in the shapes the configurator and the agent write: Nodes (with a `Ready`
//! condition), RoutingTable inputs, layer-2 node configs, snapshots, revision and node statuses.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeStatus};
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use netrollout_api::{
    FailedNode, Layer2Config, Layer2NetworkConfigurationSpec, NamedInput, NetworkConfigRevision,
    NetworkConfigRevisionSpec, NetworkConfigRevisionStatus, NodeConfig, NodeNetworkConfigStatus,
    NodePhase, RevisionPhase, RoutingTable, RoutingTableSpec, Snapshot, VRFRouteConfigurationSpec,
};
use serde_json::json;

/// A Node named `name` with `labels`, no status.
pub fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}

/// Creates a Node with `labels`; with `ready`, also its `Ready` condition (True or False).
pub async fn add_node(client: &Client, name: &str, labels: &[(&str, &str)], ready: Option<bool>) {
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node(name, labels))
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    if let Some(ready) = ready {
        set_ready(client, name, ready).await;
    }
}

/// Sets the Node's `Ready` condition (a status merge patch, as the kubelet's).
pub async fn set_ready(client: &Client, name: &str, ready: bool) {
    let status = NodeStatus {
        conditions: Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..NodeCondition::default()
        }]),
        ..NodeStatus::default()
    };
    Api::<Node>::all(client.clone())
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({ "status": status })),
        )
        .await
        .unwrap_or_else(|e| panic!("set node {name} Ready={ready}: {e}"));
}

/// Creates or replaces a RoutingTable input (the simplest input kind) by server-side apply as
/// field manager `manager`.
pub async fn apply_table(client: &Client, manager: &str, name: &str, table_id: i64) {
    let api: Api<RoutingTable> = Api::all(client.clone());
    let obj = RoutingTable::new(name, RoutingTableSpec { table_id });
    api.patch(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&obj),
    )
    .await
    .unwrap_or_else(|e| panic!("apply routing table {name}: {e}"));
}

/// A node config of `count` layer-2 networks with VLAN ids from `first`, each with a gateway in
/// `10.250.<id % 250>.1/24`.
pub fn layer2s(first: u16, count: u16) -> NodeConfig {
    NodeConfig {
        layer2s: (first..first + count)
            .map(|id| layer2(id, vec![format!("10.250.{}.1/24", id % 250)]))
            .collect(),
        ..Default::default()
    }
}

/// One layer-2 network as the renderer names it (`l2.ID`, `lx.ID`, VNI 20000 + ID).
pub fn layer2(id: u16, gateways: Vec<String>) -> Layer2Config {
    Layer2Config {
        source: format!("net-{id}"),
        id,
        vni: 20_000 + u32::from(id),
        mtu: 1500,
        bridge_interface: format!("l2.{id}"),
        vxlan_interface: format!("lx.{id}"),
        anycast_gateways: gateways,
        ..Default::default()
    }
}

/// A snapshot with one VRF, one layer-2 network (with `mtu`) and optionally a routing table.
pub fn snapshot(mtu: i32, with_table: bool) -> Snapshot {
    let vrf = VRFRouteConfigurationSpec {
        vrf: "m2m".into(),
        seq: 10,
        vni: Some(2002026),
        ..Default::default()
    };
    let l2 = Layer2NetworkConfigurationSpec {
        id: 501,
        mtu,
        vni: 4000002,
        vrf: Some("m2m".into()),
        ..Default::default()
    };
    Snapshot {
        vrf_route_configurations: vec![NamedInput {
            name: "m2m".into(),
            spec: vrf,
        }],
        layer2_network_configurations: vec![NamedInput {
            name: "vlan501".into(),
            spec: l2,
        }],
        routing_tables: if with_table {
            vec![NamedInput {
                name: "taas-100".into(),
                spec: RoutingTableSpec { table_id: 100 },
            }]
        } else {
            vec![]
        },
        bgp_peerings: vec![],
    }
}

/// A revision of `snapshot` (its hash as the configurator computes it), not paused.
pub fn revision(name: &str, sequence: i64, snapshot: Snapshot) -> NetworkConfigRevision {
    let hash = netrollout_render::Revision::of(&snapshot)
        .expect("hash a snapshot")
        .hash;
    NetworkConfigRevision::new(
        name,
        NetworkConfigRevisionSpec {
            sequence,
            hash,
            paused: false,
            snapshot,
            analysis: Vec::new(),
            promotion: None,
        },
    )
}

/// A revision status as the configurator writes it.
pub fn rev_status(
    phase: RevisionPhase,
    total: i32,
    ready: i32,
    in_flight: i32,
    queued: i32,
) -> NetworkConfigRevisionStatus {
    NetworkConfigRevisionStatus {
        phase: Some(phase),
        progress: Some(format!("{ready}/{total}")),
        total,
        ready,
        in_flight,
        queued,
        ..Default::default()
    }
}

/// A Failed revision status with one failed node.
pub fn failed_status(node: &str, total: i32) -> NetworkConfigRevisionStatus {
    NetworkConfigRevisionStatus {
        phase: Some(RevisionPhase::Failed),
        message: Some(format!("1 node failed (max 0): {node}")),
        total,
        failed: 1,
        failed_nodes: vec![FailedNode {
            node: node.into(),
            reason: "ProbeFailed".into(),
            message: "gateway 10.250.0.1 unreachable after apply".into(),
            failing_checks: Vec::new(),
            time: None,
        }],
        ..Default::default()
    }
}

/// An agent status for `revision`.
pub fn node_status(
    revision: &str,
    phase: NodePhase,
    message: Option<&str>,
) -> NodeNetworkConfigStatus {
    NodeNetworkConfigStatus {
        observed_revision: Some(revision.into()),
        phase: Some(phase),
        reason: (phase == NodePhase::Failed).then(|| "ProbeFailed".to_string()),
        message: message.map(String::from),
        last_known_good_revision: Some(revision.into()).filter(|_| phase == NodePhase::Provisioned),
        ..Default::default()
    }
}
