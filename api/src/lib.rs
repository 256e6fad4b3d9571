//! The `netrollout.io/v1alpha1` API: the five custom resource kinds and the CRD generator.
//!
//! Users write the three input kinds; their field names, types and ranges match the Go network
//! operator's `v1alpha1` API, so its manifests migrate by changing `apiVersion` alone. The
//! configurator writes [`NetworkConfigRevision`]s and the spec of each [`NodeNetworkConfig`]; the
//! agent on a node writes only the status of its own `NodeNetworkConfig`.
//!
//! Layout:
//! - [`inputs`]: `VRFRouteConfiguration`, `Layer2NetworkConfiguration`, `RoutingTable`.
//! - [`revision`]: `NetworkConfigRevision`, the immutable merged snapshot and its rollout status.
//! - [`node`]: `NodeNetworkConfig`, the rendered config of one node and its apply status.
//! - [`crds`]: every CRD of the group, and their YAML as committed under `config/crd/`.

#![forbid(unsafe_code)]
// The `#[kube(printcolumn(...))]` lists repeat `type_ = ...` by design; clippy mistakes them
// for duplicated attributes.
#![allow(clippy::duplicated_attributes)]

pub mod crds;
pub mod inputs;
pub mod node;
pub mod revision;

pub use inputs::{
    InputStatus, Layer2NetworkConfiguration, Layer2NetworkConfigurationSpec, PrefixAction,
    PrefixItem, RoutingTable, RoutingTableSpec, VRFRouteConfiguration, VRFRouteConfigurationSpec,
    VrfLoopback,
};
pub use node::{
    Layer2Config, LoopbackConfig, NodeConfig, NodeNetworkConfig, NodeNetworkConfigSpec,
    NodeNetworkConfigStatus, NodePhase, RoutingTableConfig, VrfConfig, VrfPolicy,
};
pub use revision::{
    FailedNode, NamedInput, NetworkConfigRevision, NetworkConfigRevisionSpec,
    NetworkConfigRevisionStatus, RevisionPhase, Snapshot,
};

/// The API group of every kind in this crate.
pub const GROUP: &str = "netrollout.io";
/// The API version of every kind in this crate.
pub const VERSION: &str = "v1alpha1";

/// Node label that puts a node into the canary wave of every rollout (`"true"`).
pub const CANARY_LABEL: &str = "netrollout.io/canary";
/// Well-known node label used to spread each wave across zones.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Node condition type the agent sets from the outcome of its last apply.
pub const NODE_CONDITION: &str = "NetworkConfigReady";
/// Condition type the configurator sets on input objects.
pub const ACCEPTED_CONDITION: &str = "Accepted";

/// Annotation on a `Failed` `NetworkConfigRevision` that asks the configurator to retry it: the
/// configurator clears `Failed`, raises `spec.sequence` so it is the target again, and removes the
/// annotation. Any value works; `kubectl netrollout retry <rev>` sets the time.
pub const RETRY_ANNOTATION: &str = "netrollout.io/retry";
/// Annotation on a `NodeNetworkConfig` that asks its agent to try the current `spec.revision`
/// once more although it failed on this node. Each new value is one retry; the agent remembers
/// the last value it acted on in its state directory.
pub const NODE_RETRY_ANNOTATION: &str = "netrollout.io/retry";
/// Annotation on a `NodeNetworkConfig` where the configurator records its dispatch (JSON: the
/// revision, when, and the revision the node had before) so that a new leader sees it.
pub const DISPATCH_ANNOTATION: &str = "netrollout.io/dispatch";
/// Name of the ConfigMap (in the configurator's namespace) whose `data.paused: "true"` pauses
/// every rollout: no new dispatches; nodes already applying finish.
pub const CONTROL_CONFIGMAP: &str = "netrollout-control";
/// Key of [`CONTROL_CONFIGMAP`] that holds the global pause.
pub const CONTROL_PAUSED_KEY: &str = "paused";
/// Default namespace of the configurator, its Lease and the control ConfigMap.
pub const DEFAULT_NAMESPACE: &str = "netrollout-system";
/// Label the configurator puts on every `NodeNetworkConfig` it manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
