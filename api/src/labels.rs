//! Label keys of the wire contract: the node labels the rollout reads and the label the
//! configurator puts on the objects it manages. Defined here once; every crate uses these.

/// Node label that puts a node into the canary wave of every rollout (value `"true"`).
pub const CANARY_LABEL: &str = "netrollout.io/canary";
/// Well-known node label naming the node's zone; each wave is spread round-robin over zones.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Label the configurator puts on every `NodeNetworkConfig` it manages.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
