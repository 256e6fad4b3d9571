//! `NodeNetworkConfig`: the rendered config of one node (spec, written by the configurator) and
//! the outcome of applying it (status, written only by that node's agent).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::inputs::PrefixItem;

/// The desired network config of one node; the object's name is the node's name.
#[derive(CustomResource, JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "NodeNetworkConfig",
    plural = "nodenetworkconfigs",
    shortname = "nnc",
    category = "netrollout",
    status = "NodeNetworkConfigStatus",
    selectable = ".spec.revision",
    printcolumn(name = "Revision", type_ = "string", json_path = ".spec.revision"),
    printcolumn(
        name = "Observed",
        type_ = "string",
        json_path = ".status.observedRevision"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Known-Good",
        type_ = "string",
        json_path = ".status.lastKnownGoodRevision",
        priority = "1"
    ),
    printcolumn(
        name = "Message",
        type_ = "string",
        json_path = ".status.message",
        priority = "1"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NodeNetworkConfigSpec {
    /// Name of the `NetworkConfigRevision` this config was rendered from.
    #[schemars(length(min = 1, max = 63))]
    pub revision: String,
    /// What the node's agent makes the kernel hold.
    pub config: NodeConfig,
}

/// A node's rendered network config. Interface names and table ids are final: the agent
/// creates exactly these objects.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeConfig {
    /// VRFs, sorted by name.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub vrfs: Vec<VrfConfig>,
    /// Layer-2 networks, sorted by VLAN id.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub layer2s: Vec<Layer2Config>,
    /// Extra routing tables, sorted by table id.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub routing_tables: Vec<RoutingTableConfig>,
    /// BGP peerings with workloads, sorted by source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 4096))]
    pub bgp_peerings: Vec<BgpPeeringConfig>,
}

/// One `BGPPeering` on a node: where FRR accepts or opens the workloads' sessions, and how.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct BgpPeeringConfig {
    /// Name of the input object.
    pub source: String,
    /// VRF whose BGP instance peers (`VrfConfig.name`); the default VRF when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Networks FRR accepts sessions from (`bgp listen range`), from `peeringVlan`: the subnets
    /// of the layer-2 network's anycast gateways.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub listen_ranges: Vec<String>,
    /// Addresses FRR opens sessions to (`neighbor ADDR`), from `loopbackPeer`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 2))]
    pub neighbors: Vec<String>,
    /// The workloads' AS number.
    pub remote_asn: u32,
    /// BFD on the sessions.
    #[serde(default)]
    pub bfd: bool,
    /// Most prefixes a session may receive per address family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_prefixes: Option<u32>,
    /// Keepalive interval in seconds (with `holdSeconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keepalive_seconds: Option<u32>,
    /// Hold time in seconds (with `keepaliveSeconds`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_seconds: Option<u32>,
    /// Routes accepted from the workloads; every other route is refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub import: Vec<PrefixItem>,
    /// Routes announced to the workloads; no other route is.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub export: Vec<PrefixItem>,
}

/// One VRF on a node: the union of every `VRFRouteConfiguration` naming it.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VrfConfig {
    /// The VRF's name (`spec.vrf` of its inputs).
    pub name: String,
    /// Routing table the VRF device is bound to.
    pub table_id: u32,
    /// VRF device (`vr.<name>`).
    pub vrf_interface: String,
    /// Bridge of the layer-3 VNI (`br.<name>`), when the VRF has a VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge_interface: Option<String>,
    /// VXLAN device of the layer-3 VNI (`vx.<name>`), when the VRF has a VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_interface: Option<String>,
    /// Veth end in the default VRF (`vd.<name>`), leaking routes into the VRF.
    pub veth_default_interface: String,
    /// Veth end enslaved to the VRF device (`vv.<name>`).
    pub veth_vrf_interface: String,
    /// Layer-3 VNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vni: Option<u32>,
    /// BGP route target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_target: Option<String>,
    /// MTU of the VRF's interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Prefixes whose traffic is steered into the VRF by ip rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub sbr_prefixes: Vec<String>,
    /// Loopbacks with this node's address.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub loopbacks: Vec<LoopbackConfig>,
    /// Route policies, one per input object, sorted by `seq`.
    pub policies: Vec<VrfPolicy>,
}

/// The route policy one `VRFRouteConfiguration` contributes to its VRF.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct VrfPolicy {
    /// Name of the input object.
    pub source: String,
    /// Route-map sequence.
    pub seq: i32,
    /// Routes imported into the cluster VRF.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub import: Vec<PrefixItem>,
    /// Routes exported from the cluster VRF.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub export: Vec<PrefixItem>,
    /// Aggregates announced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub aggregate: Vec<String>,
    /// Communities set on export (`community` first, then `communities`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub communities: Vec<String>,
}

/// A loopback interface in a VRF with this node's address.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct LoopbackConfig {
    /// Interface name.
    pub name: String,
    /// This node's address from the loopback's subnet as a host route, e.g. `10.9.0.7/32`
    /// (`/128` for IPv6): the route its VRF policy exports to the other nodes.
    pub address: String,
}

/// One layer-2 network on a node.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Layer2Config {
    /// Name of the input object.
    pub source: String,
    /// VLAN id.
    pub id: u16,
    /// VXLAN VNI.
    pub vni: u32,
    /// MTU.
    pub mtu: u32,
    /// Bridge (`l2.<id>`).
    pub bridge_interface: String,
    /// VXLAN device (`lx.<id>`).
    pub vxlan_interface: String,
    /// Macvlan attach interface (`mv.<id>`), when requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub macvlan_interface: Option<String>,
    /// VRF the bridge is enslaved to; the default VRF when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Anycast gateway MAC, lower case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anycast_mac: Option<String>,
    /// Anycast gateway addresses with prefix length.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub anycast_gateways: Vec<String>,
    /// Advertise host routes for local neighbours.
    #[serde(default)]
    pub advertise_neighbors: bool,
    /// ARP/ND suppression on the VXLAN device.
    #[serde(default)]
    pub neigh_suppression: bool,
    /// Segmentation offload (GSO, GRO, TSO) off on the bridge, the VXLAN device and the
    /// macvlan (`ethtool -K NAME gso off gro off tso off`); on when false.
    #[serde(default)]
    pub disable_segmentation: bool,
}

/// An extra routing table on a node, bound to a VRF device of its own.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RoutingTableConfig {
    /// Name of the input object.
    pub source: String,
    /// The table id.
    pub table_id: u32,
    /// VRF device bound to the table (`tb.<id>`).
    pub interface: String,
}

/// What the node's agent last did with its config.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeNetworkConfigStatus {
    /// The revision this status is about; it counts only when equal to `spec.revision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_revision: Option<String>,
    /// Progress of applying `observedRevision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<NodePhase>,
    /// When the agent started applying `observedRevision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub started_at: Option<Time>,
    /// When the agent finished (committed or restored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub finished_at: Option<Time>,
    /// Machine-readable reason of the phase, e.g. `ProbeFailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What happened, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The revision the node restores on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_known_good_revision: Option<String>,
    /// The agent's continuous health after it committed (the `TenantReachable` condition
    /// carries the same verdict for people); absent when the agent does not watch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<NodeHealth>,
    /// What the node can do (kernel drivers, FRR daemons), as its agent detected it at start;
    /// absent until an agent that detects them reports (docs/contract.md, "Pre-flight").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<crate::capabilities::NodeCapabilities>,
    /// The checks that already failed before the last change, with their errors: reported, not
    /// judged (a change cannot be blamed for them) and not run again until the next change.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub preexisting_failures: Vec<FailedCheck>,
    /// Standard conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), schema_with = "crate::schema::conditions")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

/// A check that failed, and why.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FailedCheck {
    /// What was checked, e.g. `icmp 10.0.0.1` or `interfaces l2.*`.
    #[schemars(length(max = 256))]
    pub name: String,
    /// Why it failed, e.g. `no echo reply within 1s`.
    #[schemars(length(max = 1024))]
    pub error: String,
}

/// The agent's continuous health checks, as of their last transition.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NodeHealth {
    /// The names of the enforced checks that fail (empty: the node is reachable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub failing_checks: Vec<String>,
}

/// Progress of one node's apply.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodePhase {
    /// The agent picked the revision up and is applying it.
    Provisioning,
    /// Applied and probed; the revision is this node's last-known-good.
    Provisioned,
    /// Applying or probing failed; the node restored its last-known-good config.
    Failed,
}
