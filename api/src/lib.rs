//! The `netrollout.io/v1alpha1` API: the eight custom resource kinds and the CRD generator (and
//! two CRDs that only refuse kinds of the Go operator netrollout does not carry).
//!
//! Users write the four input kinds; their field names, types and ranges match the Go network
//! operator's `v1alpha1` API, so its manifests migrate by changing `apiVersion` alone. The
//! configurator writes [`NetworkConfigRevision`]s and the spec of each [`NodeNetworkConfig`]; the
//! agent on a node writes only the status of its own `NodeNetworkConfig`.
//!
//! Layout:
//! - [`inputs`]: `VRFRouteConfiguration`, `Layer2NetworkConfiguration`, `RoutingTable`.
//! - [`peering`]: `BGPPeering`, workloads peering with their node's FRR.
//! - [`revision`]: `NetworkConfigRevision`, the immutable merged snapshot and its rollout status.
//! - [`node`]: `NodeNetworkConfig`, the rendered config of one node and its apply status.
//! - [`analysis`]: `RolloutAnalysis`, checks against Prometheus that gate each wave, and the
//!   verdict a revision carries.
//! - [`approval`]: a person's promotion of a revision and what holds it for one.
//! - [`capabilities`]: what a node's config needs from the node and what its agent found.
//! - [`change`]: the change record of a revision (who changed which input, and why).
//! - [`schedule`]: `MaintenanceSchedule`, weekly maintenance windows and change freezes.
//! - [`refused`]: `MirrorTarget`, `MirrorSelector`: kinds of the Go operator
//!   netrollout does not carry, whose CRDs refuse every object saying why.
//! - [`crds`]: every CRD of the group, and their YAML as committed under `config/crd/`.
//! - [`health`]: a node's continuous health (`TenantReachable`), written and read in one shape.
//! - [`reason`]: the reason words of a revision's failed nodes and Events, read back by word.
//! - The wire contract beyond the kinds: [`labels`], [`annotations`] (every key with its typed
//!   payload) and [`naming`] (interface prefixes and the kernel's length limit). Their items are
//!   re-exported here.

#![forbid(unsafe_code)]
// The `#[kube(printcolumn(...))]` lists repeat `type_ = ...` by design; clippy mistakes them
// for duplicated attributes.
#![allow(clippy::duplicated_attributes)]

pub mod analysis;
pub mod annotations;
pub mod approval;
pub mod capabilities;
pub mod change;
pub mod crds;
pub mod health;
pub mod inputs;
pub mod labels;
pub mod naming;
pub mod node;
pub mod peering;
pub mod reason;
pub mod refused;
pub mod revision;
pub mod schedule;
mod schema;

pub use analysis::{
    ANALYSIS_CONDITION, AnalysisCheck, AnalysisPhase, CheckResult, RevisionAnalysis,
    RolloutAnalysis, RolloutAnalysisSpec, analysis_is_current,
};
pub use annotations::{
    DISPATCH_ANNOTATION, Dispatch, NODE_RETRY_ANNOTATION, RETRIED_ANNOTATION, RETRY_ANNOTATION,
    UNDO_ANNOTATION, UNRESPONSIVE_ANNOTATION,
};
pub use approval::{Promotion, RevisionHold};
pub use capabilities::{
    Capability, NODES_CAPABLE_CONDITION, NODES_LACK_CAPABILITIES, NOT_ROLLING_OUT,
    NodeCapabilities, lacks_sentence,
};
pub use change::{
    CHANGE_REASON_ANNOTATION, CHANGED_BY_ANNOTATION, ChangeKind, InputChange, TICKET_ANNOTATION,
};
pub use health::{Reachability, TENANT_REACHABLE_CONDITION, tenant_reachable};
pub use labels::{CANARY_LABEL, MANAGED_BY_LABEL, ZONE_LABEL};
pub use naming::{MANAGED_PREFIXES, MAX_IFNAME};
pub use schedule::{
    FreezePeriod, MaintenanceSchedule, MaintenanceScheduleSpec, MaintenanceWindow, Weekday,
};

pub use inputs::{
    ADVERTISE_NEIGHBORS_NEEDS_VRF, InputStatus, Layer2NetworkConfiguration,
    Layer2NetworkConfigurationSpec, PrefixAction, PrefixItem, RoutingTable, RoutingTableSpec,
    VRFRouteConfiguration, VRFRouteConfigurationSpec, VrfLoopback,
};
pub use node::{
    BgpPeeringConfig, FailedCheck, Layer2Config, LoopbackConfig, NodeConfig, NodeHealth,
    NodeNetworkConfig, NodeNetworkConfigSpec, NodeNetworkConfigStatus, NodePhase,
    RoutingTableConfig, VrfConfig, VrfPolicy,
};
pub use peering::{BGPPeering, BGPPeeringLoopback, BGPPeeringSpec, BGPPeeringVlan};
pub use revision::{
    FailedNode, IDENTICAL_CONTENT_REFUSED, INPUTS_REFUSED_CONDITION, NamedInput,
    NetworkConfigRevision, NetworkConfigRevisionSpec, NetworkConfigRevisionStatus, READY_CONDITION,
    RECONCILING_CONDITION, RevisionBake, RevisionPhase, RevisionSchedule, STALLED_CONDITION,
    Snapshot,
};

/// The API group of every kind in this crate.
pub const GROUP: &str = "netrollout.io";
/// The API version of every kind in this crate.
pub const VERSION: &str = "v1alpha1";

/// Node condition type the agent sets from the outcome of its last apply.
pub const NODE_CONDITION: &str = "NetworkConfigReady";
/// Condition type the configurator sets on input objects.
pub const ACCEPTED_CONDITION: &str = "Accepted";

/// Name of the ConfigMap (in the configurator's namespace) whose `data.paused: "true"` pauses
/// every rollout: no new dispatches; nodes already applying finish.
pub const CONTROL_CONFIGMAP: &str = "netrollout-control";
/// Key of [`CONTROL_CONFIGMAP`] that holds the global pause.
pub const CONTROL_PAUSED_KEY: &str = "paused";
/// Default namespace of the configurator, its Lease and the control ConfigMap.
pub const DEFAULT_NAMESPACE: &str = "netrollout-system";
