//! `BGPPeering`: BGP as a service for workloads. A workload (a load balancer, a CNI) runs its
//! own BGP speaker and peers with its node's FRR, either from a layer-2 network (the node
//! listens on the network's subnets: `peeringVlan`) or from fixed addresses routed to it
//! (`loopbackPeer`). Field names, types and meaning follow the Go operator's `v1alpha1`
//! `BGPPeering` (group `network.t-caas.telekom.com`), so its manifests migrate by changing
//! `apiVersion`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::inputs::{InputStatus, PrefixItem};

/// A Go duration in whole seconds, as FRR's timers take them: `90s`, `1m30s`, `3s`, `0s`.
pub const WHOLE_SECONDS_PATTERN: &str = r"^([0-9]{1,5}h)?([0-9]{1,5}m)?([0-9]{1,5}s)?$";

/// One BGP peering between the selected nodes and workloads.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "BGPPeering",
    plural = "bgppeerings",
    shortname = "bgppeering",
    category = "netrollout",
    status = "InputStatus",
    printcolumn(name = "VLAN", type_ = "string", json_path = ".spec.peeringVlan.name"),
    printcolumn(name = "ASN", type_ = "integer", json_path = ".spec.remoteASN"),
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
#[x_kube(validation = Rule::new("has(self.peeringVlan) || has(self.loopbackPeer)").message("a BGPPeering needs peeringVlan (workloads on a layer-2 network) or loopbackPeer (workloads at fixed addresses); set one of them").field_path(".peeringVlan"))]
#[x_kube(validation = Rule::new("!has(self.peeringVlan) || !has(self.loopbackPeer)").message("peeringVlan and loopbackPeer exclude each other (the Go operator used peeringVlan and ignored loopbackPeer); keep one of them, or write two BGPPeerings").field_path(".loopbackPeer"))]
#[x_kube(validation = Rule::new("has(self.holdTime) == has(self.keepaliveTime)").message("holdTime and keepaliveTime are set together (FRR's `neighbor timers` takes both; the Go operator ignored one alone); set both or neither").field_path(".holdTime"))]
#[serde(rename_all = "camelCase")]
pub struct BGPPeeringSpec {
    /// Peer with workloads on this layer-2 network: the node accepts sessions from any address
    /// of the subnets of its anycast gateways, in the network's VRF (the default VRF when it has
    /// none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peering_vlan: Option<BGPPeeringVlan>,

    /// Peer with workloads at these addresses (their loopbacks), from the default VRF, up to two
    /// hops away (`ttl-security hops 2`, as the Go operator).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loopback_peer: Option<BGPPeeringLoopback>,

    /// The workloads' AS number.
    #[serde(rename = "remoteASN")]
    #[schemars(range(min = 1, max = 4294967295u32))]
    pub remote_asn: i64,

    /// Run BFD on the sessions (FRR's `neighbor PEER bfd`; it needs FRR's bfdd on the node).
    #[serde(default, rename = "enableBFD")]
    pub enable_bfd: bool,

    /// The most prefixes a session may receive per address family; FRR closes a session that
    /// receives more. No limit when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 4294967295u32))]
    pub maximum_prefixes: Option<i64>,

    /// BGP hold time, in whole seconds: `0s` (no keepalives) or from `3s` to `65535s`, e.g.
    /// `90s` or `1m30s`. Set together with `keepaliveTime`; FRR's defaults when both are
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 21), regex(pattern = WHOLE_SECONDS_PATTERN))]
    #[x_kube(validation = Rule::new("!self.matches('^([0-9]{1,5}h)?([0-9]{1,5}m)?([0-9]{1,5}s)?$') || duration(self) == duration('0s') || (duration(self) >= duration('3s') && duration(self) <= duration('65535s'))").message("holdTime must be 0s or from 3s to 65535s (18h12m15s), in whole seconds"))]
    pub hold_time: Option<String>,

    /// BGP keepalive interval, in whole seconds from `0s` to `65535s`, e.g. `30s`. Set
    /// together with `holdTime`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 21), regex(pattern = WHOLE_SECONDS_PATTERN))]
    #[x_kube(validation = Rule::new("!self.matches('^([0-9]{1,5}h)?([0-9]{1,5}m)?([0-9]{1,5}s)?$') || duration(self) <= duration('65535s')").message("keepaliveTime must be from 0s to 65535s (18h12m15s), in whole seconds"))]
    pub keepalive_time: Option<String>,

    /// Routes accepted from the workloads; every other route is refused.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub import: Vec<PrefixItem>,

    /// Routes announced to the workloads; no other route is announced.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub export: Vec<PrefixItem>,

    /// Nodes to peer on; all nodes when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::label_selector")]
    pub node_selector: Option<LabelSelector>,
}

/// The layer-2 network whose workloads peer.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct BGPPeeringVlan {
    /// `metadata.name` of the `Layer2NetworkConfiguration`; it needs anycast gateways (their
    /// subnets are where the node listens).
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The addresses of the workloads that peer.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default)]
pub struct BGPPeeringLoopback {
    /// One IPv4 and/or one IPv6 address (no prefix length).
    #[serde(rename = "ips")]
    #[schemars(length(min = 1, max = 2), inner(length(min = 1, max = 64)))]
    #[x_kube(validation = Rule::new("self.all(a, isIP(a))").message("every loopbackPeer.ips entry must be an IP address without prefix length, e.g. 10.250.7.1 or fd00::1"))]
    #[x_kube(validation = Rule::new("!self.all(a, isIP(a)) || self.size() < 2 || ip(self[0]).family() != ip(self[1]).family()").message("loopbackPeer.ips holds one IPv4 and/or one IPv6 address, not two of one family"))]
    pub ip_addresses: Vec<String>,
}
