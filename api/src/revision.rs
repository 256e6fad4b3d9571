//! `NetworkConfigRevision`: an immutable, content-addressed snapshot of every input, and the
//! progress of rolling it out.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::analysis::{RevisionAnalysis, RolloutAnalysisSpec};
use crate::inputs::{Layer2NetworkConfigurationSpec, RoutingTableSpec, VRFRouteConfigurationSpec};
use crate::peering::BGPPeeringSpec;

/// A merged snapshot of all inputs. Only `spec.sequence`, `spec.paused` and `spec.promotion`
/// ever change.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "NetworkConfigRevision",
    plural = "networkconfigrevisions",
    shortname = "ncr",
    category = "netrollout",
    status = "NetworkConfigRevisionStatus",
    printcolumn(name = "Sequence", type_ = "integer", json_path = ".spec.sequence"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Ready", type_ = "string", json_path = ".status.progress"),
    printcolumn(name = "Failed", type_ = "integer", json_path = ".status.failed"),
    printcolumn(
        name = "Paused",
        type_ = "boolean",
        json_path = ".spec.paused",
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
#[x_kube(validation = Rule::new("self.hash == oldSelf.hash").message("a revision's content is immutable; change the inputs to get a new revision"))]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfigRevisionSpec {
    /// Orders revisions: the newest revision has the highest sequence.
    #[schemars(range(min = 1))]
    pub sequence: i64,
    /// `sha256:<hex>` of the snapshot's canonical JSON.
    #[schemars(length(max = 71), regex(pattern = r"^sha256:[0-9a-f]{64}$"))]
    pub hash: String,
    /// Stops new dispatches of this revision; nodes already applying finish.
    #[serde(default)]
    pub paused: bool,
    /// Every input, canonically sorted.
    pub snapshot: Snapshot,
    /// The `RolloutAnalysis` objects when the revision was created, by name: the checks that
    /// gate each of its waves. Not part of the content hash: changing an analysis gates the
    /// next revision, it does not make one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub analysis: Vec<NamedInput<RolloutAnalysisSpec>>,
    /// A person's latest promotion (`kubectl netrollout promote`): releases approval gates
    /// (`--pause-after`) or overrides the start checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promotion: Option<crate::approval::Promotion>,
}

/// Every input object at one moment, sorted by name.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// `VRFRouteConfiguration` specs by object name.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub vrf_route_configurations: Vec<NamedInput<VRFRouteConfigurationSpec>>,
    /// `Layer2NetworkConfiguration` specs by object name.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub layer2_network_configurations: Vec<NamedInput<Layer2NetworkConfigurationSpec>>,
    /// `RoutingTable` specs by object name.
    #[serde(default)]
    #[schemars(length(max = 4096))]
    pub routing_tables: Vec<NamedInput<RoutingTableSpec>>,
    /// `BGPPeering` specs by object name (left out when there are none, so that the snapshots
    /// and hashes of inputs without peerings are what they were before the kind existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 4096))]
    pub bgp_peerings: Vec<NamedInput<BGPPeeringSpec>>,
}

/// An input's spec under the name of its object.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct NamedInput<T> {
    /// `metadata.name` of the input object.
    pub name: String,
    /// Its spec at snapshot time.
    pub spec: T,
}

/// Condition type on a revision: `True` once its rollout succeeded (kstatus `Ready`).
pub const READY_CONDITION: &str = "Ready";
/// Condition type on a revision: `True` while its rollout is pending, moving or paused
/// (kstatus `Reconciling`).
pub const RECONCILING_CONDITION: &str = "Reconciling";
/// Condition type on a revision: `True` when it failed or is blocked and only a person can move
/// it on (kstatus `Stalled`).
pub const STALLED_CONDITION: &str = "Stalled";
/// Condition type on a Failed revision: `True` while the current inputs are identical to it
/// and are therefore refused (reason [`IDENTICAL_CONTENT_REFUSED`]).
pub const INPUTS_REFUSED_CONDITION: &str = "InputsRefused";
/// Reason of [`INPUTS_REFUSED_CONDITION`] while it is `True`.
pub const IDENTICAL_CONTENT_REFUSED: &str = "IdenticalContentRefused";

/// Rollout progress of a revision. Written only by the configurator.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfigRevisionStatus {
    /// The `metadata.generation` (sequence and pause) the conditions describe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Where the rollout stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RevisionPhase>,
    /// Why it stands there, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `ready/total`, for `kubectl get ncr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Managed nodes this revision targets.
    #[serde(default)]
    pub total: i32,
    /// Nodes waiting for a free slot.
    #[serde(default)]
    pub queued: i32,
    /// Nodes dispatched and not yet finished.
    #[serde(default)]
    pub in_flight: i32,
    /// Nodes that reported `Provisioned` for this revision.
    #[serde(default)]
    pub ready: i32,
    /// Nodes that failed this revision.
    #[serde(default)]
    pub failed: i32,
    /// Nodes whose agent did not pick the dispatch up in time.
    #[serde(default)]
    pub unresponsive: i32,
    /// NotReady nodes skipped for now.
    #[serde(default)]
    pub skipped: i32,
    /// Failed nodes with their reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10000))]
    pub failed_nodes: Vec<FailedNode>,
    /// The verdict of the checks in `spec.analysis` for its latest wave (absent: not measured
    /// yet, or no checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<RevisionAnalysis>,
    /// Its nodes that committed it and must stay healthy for `--bake-time` before their slots
    /// (or their wave) are released (absent: none baking).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bake: Option<RevisionBake>,
    /// The maintenance schedule holds its rollout (`MaintenanceSchedule`): why, and when it
    /// opens next (absent: not held).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<RevisionSchedule>,
    /// The change record: the inputs that changed to make it the target the last time (created,
    /// or raised), each with who, the client, why and the ticket ([`crate::change`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024))]
    pub changes: Vec<crate::change::InputChange>,
    /// What holds it for a person now: an approval gate, or the start checks (absent:
    /// nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<crate::approval::RevisionHold>,
    /// Every promotion the configurator saw, oldest first: who released what, and when.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub promotions: Vec<crate::approval::Promotion>,
    /// Standard conditions, one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), schema_with = "crate::schema::conditions")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
}

/// The bake of a revision's newest nodes (`--bake-time`).
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RevisionBake {
    /// Nodes baking.
    pub nodes: i32,
    /// When the last of them is done (configurator clock).
    #[schemars(schema_with = "crate::schema::time")]
    pub until: Time,
    /// Seconds left when this was written (the `Reconciling` message says it; `until` is
    /// exact).
    pub seconds_left: i64,
}

/// Why the maintenance schedule holds a revision's rollout, and when it opens next.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RevisionSchedule {
    /// The reason word: `OutsideMaintenanceWindow`, `ChangeFreeze` or
    /// `MaintenanceScheduleInvalid` ([`crate::reason`]).
    pub reason: String,
    /// The freeze holding it (`SCHEDULE/FREEZE`), for `ChangeFreeze`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub freeze: String,
    /// When the next window opens (configurator clock; absent: not within the next 400 days,
    /// or the schedule must be fixed first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub opens_at: Option<Time>,
    /// For `MaintenanceScheduleInvalid`: the object and field to fix, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Lifecycle of a revision.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RevisionPhase {
    /// Created, not yet dispatched.
    Pending,
    /// Being rolled out.
    Progressing,
    /// Every counted managed node (Ready, not marked Unresponsive) runs it, or failed it
    /// within `--max-failures`: a known-good revision. NotReady and Unresponsive nodes are not
    /// waited for; they get it when they are caught up.
    Succeeded,
    /// More nodes failed than `--max-failures` allows; never dispatched again unless retried.
    Failed,
    /// A newer revision replaced it.
    Superseded,
    /// Cannot be rolled out (e.g. identical to a failed revision).
    Blocked,
}

/// A node that failed a revision.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct FailedNode {
    /// Node name.
    pub node: String,
    /// Machine-readable reason, e.g. `ProbeFailed`, `ApplyTimeout`.
    pub reason: String,
    /// What the agent reported.
    #[serde(default)]
    pub message: String,
    /// For a node the fleet guard counted (reason `HealthRegressed`): the health checks its
    /// agent reported failing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub failing_checks: Vec<String>,
    /// When the failure was detected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub time: Option<Time>,
}
