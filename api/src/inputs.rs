//! Three of the four kinds users write (the fourth, `BGPPeering`, is in [`crate::peering`]). Field names, types and ranges follow the Go operator's
//! `v1alpha1` (groups `network.schiff.telekom.de` and `network.t-caas.telekom.com`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A VRF name: letters, digits, `_` and `-`, starting with a letter or digit.
pub const VRF_NAME_PATTERN: &str = r"^[A-Za-z0-9][A-Za-z0-9_-]*$";

/// A BGP route target: `ASN:number` (ASN up to 4294967295) or `IPv4:number`.
pub const ROUTE_TARGET_PATTERN: &str = r"^([0-9]{1,10}|([0-9]{1,3}\.){3}[0-9]{1,3}):[0-9]{1,10}$";

/// A BGP community: a standard one `AS:number` (each 0 to 65535, set with FRR's `set
/// community`), a large one `a:b:c` (each 0 to 4294967295, RFC 8092, set with `set
/// large-community`), or a well-known name. The ranges are spelt out so that the API server
/// refuses what FRR would (`70000:1`).
pub const COMMUNITY_PATTERN: &str = concat!(
    "^(",
    "(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4}):(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})",
    "|(429496729[0-5]|42949672[0-8][0-9]|4294967[01][0-9]{2}|429496[0-6][0-9]{3}|42949[0-5][0-9]{4}|4294[0-8][0-9]{5}|429[0-3][0-9]{6}|42[0-8][0-9]{7}|4[01][0-9]{8}|[1-3][0-9]{9}|[0-9]{1,9}):(429496729[0-5]|42949672[0-8][0-9]|4294967[01][0-9]{2}|429496[0-6][0-9]{3}|42949[0-5][0-9]{4}|4294[0-8][0-9]{5}|429[0-3][0-9]{6}|42[0-8][0-9]{7}|4[01][0-9]{8}|[1-3][0-9]{9}|[0-9]{1,9}):(429496729[0-5]|42949672[0-8][0-9]|4294967[01][0-9]{2}|429496[0-6][0-9]{3}|42949[0-5][0-9]{4}|4294[0-8][0-9]{5}|429[0-3][0-9]{6}|42[0-8][0-9]{7}|4[01][0-9]{8}|[1-3][0-9]{9}|[0-9]{1,9})",
    "|internet|local-AS|no-advertise|no-export|no-peer|graceful-shutdown|blackhole|accept-own|no-llgr|llgr-stale",
    ")$"
);

/// One VRF's route policy: which prefixes are imported into and exported from the cluster VRF.
/// Several objects may name the same `vrf`; their policies are merged in `seq` order.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "VRFRouteConfiguration",
    plural = "vrfrouteconfigurations",
    shortname = "vrf",
    category = "netrollout",
    status = "InputStatus",
    printcolumn(name = "VRF", type_ = "string", json_path = ".spec.vrf"),
    printcolumn(name = "Sequence", type_ = "integer", json_path = ".spec.seq"),
    printcolumn(name = "Community", type_ = "string", json_path = ".spec.community"),
    printcolumn(
        name = "Accepted",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Accepted\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct VRFRouteConfigurationSpec {
    /// VRF this configuration refers to (at most 12 characters, so that prefixed interface names
    /// fit the kernel's 15-byte limit).
    #[schemars(length(min = 1, max = 12), regex(pattern = VRF_NAME_PATTERN))]
    pub vrf: String,

    /// BGP route target of the VRF, `ASN:number` or `IPv4:number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 26), regex(pattern = ROUTE_TARGET_PATTERN))]
    pub route_target: Option<String>,

    /// VXLAN VNI of the VRF (layer-3 VNI). It is also the VRF's routing table id on every node,
    /// so the kernel's own tables (252 compat, 253 default, 254 main, 255 local) are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 16777215))]
    #[x_kube(validation = Rule::new("!(self in [252, 253, 254, 255])").message("vni is also the VRF's routing table id, and 252 (compat), 253 (default), 254 (main) and 255 (local) are the kernel's own tables; choose another VNI"))]
    pub vni: Option<i64>,

    /// Routes imported from this VRF into the cluster VRF.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub import: Vec<PrefixItem>,

    /// Routes exported from the cluster VRF into this VRF.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub export: Vec<PrefixItem>,

    /// Aggregate routes that are announced (networks, e.g. `10.250.0.0/16`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), inner(length(min = 1, max = 64)))]
    #[x_kube(validation = Rule::new("self.all(c, isCIDR(c))").message("every aggregate entry must be a network with prefix length, e.g. 10.250.0.0/16"))]
    #[x_kube(validation = Rule::new("self.all(c, !isCIDR(c) || cidr(c).ip() == cidr(c).masked().ip())").message("an aggregate entry has host bits set; write the network address, e.g. 10.250.0.0/16"))]
    pub aggregate: Vec<String>,

    /// Traffic from these prefixes is sent directly to this VRF (source-based routing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), inner(length(min = 1, max = 64)))]
    #[x_kube(validation = Rule::new("self.all(c, isCIDR(c))").message("every sbrPrefixes entry must be a network with prefix length, e.g. 10.250.0.0/24"))]
    #[x_kube(validation = Rule::new("self.all(c, !isCIDR(c) || cidr(c).ip() == cidr(c).masked().ip())").message("an sbrPrefixes entry has host bits set; write the network address, e.g. 10.250.0.0/24"))]
    pub sbr_prefixes: Vec<String>,

    /// Sequence of the generated route-map entry; at most 65534 because an explicit
    /// default-deny may follow.
    #[schemars(range(min = 1, max = 65534))]
    pub seq: i32,

    /// Community set on the routes this policy exports: `AS:number` (each 0 to 65535), a large
    /// community `a:b:c` (each 0 to 4294967295), or a well-known name such as `no-export`; none
    /// when omitted. Standard communities become FRR's `set community`, large ones `set
    /// large-community`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), regex(pattern = COMMUNITY_PATTERN))]
    pub community: Option<String>,

    /// Further communities set on the routes this policy exports, written like `community`
    /// (after it, when both are set).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(max = 64), regex(pattern = COMMUNITY_PATTERN)))]
    pub communities: Vec<String>,

    /// MTU of the VRF's interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1000, max = 9000))]
    pub mtu: Option<i32>,

    /// Loopback interfaces in the VRF, each with a per-node address allocated from `subnet`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub loopbacks: Vec<VrfLoopback>,

    /// Nodes to create the VRF on; all nodes when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::label_selector")]
    pub node_selector: Option<LabelSelector>,
}

/// One entry of an import or export prefix list.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
#[x_kube(validation = Rule::new("!has(self.ge) || !has(self.le) || self.ge <= self.le").message("ge must not be greater than le").field_path(".ge"))]
#[x_kube(validation = Rule::new("!has(self.ge) || !isCIDR(self.cidr) || (self.ge >= cidr(self.cidr).prefixLength() && self.ge <= (cidr(self.cidr).ip().family() == 4 ? 32 : 128))").message("ge must lie between the prefix length of cidr and 32 (IPv4) or 128 (IPv6)").field_path(".ge"))]
#[x_kube(validation = Rule::new("!has(self.le) || !isCIDR(self.cidr) || (self.le >= cidr(self.cidr).prefixLength() && self.le <= (cidr(self.cidr).ip().family() == 4 ? 32 : 128))").message("le must lie between the prefix length of cidr and 32 (IPv4) or 128 (IPv6)").field_path(".le"))]
#[serde(rename_all = "camelCase")]
pub struct PrefixItem {
    /// The network, e.g. `10.250.0.0/24`.
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new("isCIDR(self)").message("cidr must be a network with prefix length, e.g. 10.250.0.0/24"))]
    #[x_kube(validation = Rule::new("!isCIDR(self) || cidr(self).ip() == cidr(self).masked().ip()").message("cidr has host bits set; write the network address, e.g. 10.250.0.0/24"))]
    pub cidr: String,

    /// Sequence in the generated prefix list; the list index when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295u32))]
    pub seq: Option<i64>,

    /// Minimum prefix length to match (not below the prefix length of `cidr`); omit it
    /// rather than writing `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i32", range(min = 0, max = 128))]
    pub ge: Option<i32>,

    /// Maximum prefix length to match (not below the prefix length of `cidr`); omit it
    /// rather than writing `null`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i32", range(min = 0, max = 128))]
    pub le: Option<i32>,

    /// Whether matching routes are permitted or denied.
    pub action: PrefixAction,
}

/// What a prefix-list entry does with a matching route.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrefixAction {
    /// Let matching routes through.
    #[default]
    Permit,
    /// Drop matching routes.
    Deny,
}

/// A loopback interface inside a VRF whose address is allocated per node.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct VrfLoopback {
    /// Interface name: `lo.` and then letters, digits, `.`, `_` or `-`, at most 15 bytes in
    /// all (the kernel's limit), e.g. `lo.mir`.
    #[schemars(length(min = 4, max = 15), regex(pattern = crate::naming::USER_IFNAME_PATTERN))]
    pub name: String,
    /// The network from which each node gets one address (no host bits).
    #[schemars(length(min = 1, max = 64))]
    #[x_kube(validation = Rule::new("isCIDR(self)").message("subnet must be a network with prefix length, e.g. 10.100.0.0/24"))]
    #[x_kube(validation = Rule::new("!isCIDR(self) || cidr(self).ip() == cidr(self).masked().ip()").message("subnet has host bits set; write the network address, e.g. 10.100.0.0/24"))]
    pub subnet: String,
}

/// Why `advertiseNeighbors: true` is refused on a network without a VRF (by the CRD, the
/// configurator and `migrate`).
pub const ADVERTISE_NEIGHBORS_NEEDS_VRF: &str = "advertiseNeighbors: true needs spec.vrf: the node announces each neighbour of the network as a /32 or /128 host route in the network's VRF, and a network in the default VRF has none to announce them in (the Go operator's versions before 2025 wrote them into routing table 130, which only a VRF of the site's own FRR setup bound to that table announced); put the network into a VRF (a VRFRouteConfiguration; for a site VRF on table 130, that VRF) and export its host routes there, or remove the field or set it to false (docs/migration.md)";

/// One layer-2 network: a VLAN stretched over VXLAN, optionally routed in a VRF.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "Layer2NetworkConfiguration",
    plural = "layer2networkconfigurations",
    shortname = "layer2",
    category = "netrollout",
    status = "InputStatus",
    printcolumn(name = "VLAN", type_ = "integer", json_path = ".spec.id"),
    printcolumn(name = "VNI", type_ = "integer", json_path = ".spec.vni"),
    printcolumn(name = "VRF", type_ = "string", json_path = ".spec.vrf"),
    printcolumn(
        name = "Gateway",
        type_ = "string",
        json_path = ".spec.anycastGateways"
    ),
    printcolumn(
        name = "Accepted",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Accepted\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[x_kube(validation = Rule::new("!has(self.advertiseNeighbors) || !self.advertiseNeighbors || has(self.vrf)").message(ADVERTISE_NEIGHBORS_NEEDS_VRF).field_path(".advertiseNeighbors"))]
#[serde(rename_all = "camelCase")]
pub struct Layer2NetworkConfigurationSpec {
    /// VLAN id of the network.
    #[schemars(range(min = 1, max = 4094))]
    pub id: i32,

    /// MTU of the network's interfaces.
    #[schemars(range(min = 1000, max = 9000))]
    pub mtu: i32,

    /// VXLAN VNI of the network.
    #[schemars(range(min = 1, max = 16777215))]
    pub vni: i64,

    /// Anycast gateway MAC address, when anycast is wanted: a unicast address (the lowest bit
    /// of the first byte clear), not all zeros.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2}$"))]
    #[x_kube(validation = Rule::new("!self.matches('^[0-9A-Fa-f][13579BbDdFf]')").message("anycastMac is a multicast address (the lowest bit of its first byte is set); use a unicast address, e.g. 1a:ee:cf:2f:a7:a8"))]
    #[x_kube(validation = Rule::new("!self.matches('^(00:){5}00$')").message("anycastMac must not be all zeros; use a unicast address, e.g. 1a:ee:cf:2f:a7:a8"))]
    pub anycast_mac: Option<String>,

    /// Anycast gateway addresses (with prefix length) configured on the bridge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 1, max = 64)))]
    #[x_kube(validation = Rule::new("self.all(g, isCIDR(g))").message("every anycastGateways entry must be an address with prefix length, e.g. 10.0.0.1/24"))]
    #[x_kube(validation = Rule::new("self.all(g, !isCIDR(g) || cidr(g).prefixLength() >= (cidr(g).ip().family() == 4 ? 31 : 127) || cidr(g).ip() != cidr(g).masked().ip())").message("an anycastGateways entry is its subnet's network address; use a host address, e.g. 10.0.0.1/24"))]
    #[x_kube(validation = Rule::new("self.all(g, self.exists_one(h, h == g))").message("an anycastGateways entry appears twice; list each gateway once"))]
    pub anycast_gateways: Vec<String>,

    /// Announce every neighbour the node learns on this network (reachable, stale, delay, probe
    /// or permanent; not those EVPN brought from other nodes) as a /32 or /128 host route in
    /// the network's VRF, kept in step as neighbours come and go; FRR announces them through
    /// the VRF's export policy. Needs `vrf`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub advertise_neighbors: bool,

    /// Create a macvlan attach interface on the bridge.
    #[serde(
        default,
        rename = "createMacVLANInterface",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub create_macvlan_interface: bool,

    /// Enable ARP/ND suppression on the VXLAN device (off when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neigh_suppression: Option<bool>,

    /// Turn off segmentation offload (GSO, GRO, TSO) on the network's interfaces (its bridge,
    /// VXLAN device and macvlan), limiting the packets Linux hands on to the MTU, as AF_PACKET
    /// users need; back on when turned off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disable_segmentation: bool,

    /// VRF to attach the network to (named like `VRFRouteConfiguration.spec.vrf`); the default
    /// VRF when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 12), regex(pattern = VRF_NAME_PATTERN))]
    pub vrf: Option<String>,

    /// Nodes to create the network on; all nodes when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::label_selector")]
    pub node_selector: Option<LabelSelector>,
}

/// An extra host routing table that routes can be exported to.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "RoutingTable",
    plural = "routingtables",
    shortname = "taas",
    category = "netrollout",
    status = "InputStatus",
    printcolumn(name = "Table ID", type_ = "integer", json_path = ".spec.tableId"),
    printcolumn(
        name = "Accepted",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Accepted\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RoutingTableSpec {
    /// The host routing table id; not one of the kernel's own tables (0 unspec, 252 compat,
    /// 253 default, 254 main, 255 local).
    #[schemars(range(min = 1, max = 4294967295u32))]
    #[x_kube(validation = Rule::new("!(self in [252, 253, 254, 255])").message("tables 252 (compat), 253 (default), 254 (main) and 255 (local) belong to the kernel; choose another tableId"))]
    pub table_id: i64,
}

/// Status of an input object: whether the configurator accepted it into a revision.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct InputStatus {
    /// `Accepted` (True/False with reason and message) and future conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), schema_with = "crate::schema::conditions")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// The revision that last included this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}
