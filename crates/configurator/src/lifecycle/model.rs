//! What [`decide`](super::decide()) looks at: the live inputs with their `Accepted` state, the
//! revisions as plain values, and the candidate (the inputs merged, validated and hashed).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use netrollout_api::{
    InputStatus, Layer2NetworkConfiguration, NetworkConfigRevision, RETRY_ANNOTATION,
    RevisionPhase, RoutingTable, Snapshot, VRFRouteConfiguration,
};
use netrollout_render::{Invalid, Revision};

/// The three input kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// `VRFRouteConfiguration`.
    Vrf,
    /// `Layer2NetworkConfiguration`.
    Layer2,
    /// `RoutingTable`.
    Table,
}

impl InputKind {
    /// The Kubernetes kind, as in `render::Problem::kind`.
    pub fn kind(self) -> &'static str {
        match self {
            InputKind::Vrf => "VRFRouteConfiguration",
            InputKind::Layer2 => "Layer2NetworkConfiguration",
            InputKind::Table => "RoutingTable",
        }
    }
}

impl std::fmt::Display for InputKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

/// One input object by kind and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InputRef {
    /// Its kind.
    pub kind: InputKind,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for InputRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// A live input (not being deleted) and what its status says now.
#[derive(Clone, Debug, PartialEq)]
pub struct InputObject {
    /// Kind and name.
    pub input: InputRef,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
    /// `status.revision`.
    pub revision: Option<String>,
}

impl InputObject {
    /// The view of an API object of `kind`.
    pub fn of<K: Resource>(kind: InputKind, obj: &K, status: Option<&InputStatus>) -> Self {
        Self {
            input: InputRef {
                kind,
                name: obj.meta().name.clone().unwrap_or_default(),
            },
            generation: obj.meta().generation,
            conditions: status.map(|s| s.conditions.clone()).unwrap_or_default(),
            revision: status.and_then(|s| s.revision.clone()),
        }
    }

    /// Views of the live (not deleting) objects of one kind.
    pub fn live<'a, K: Resource + 'a>(
        kind: InputKind,
        objs: impl IntoIterator<Item = &'a K>,
        status: impl Fn(&K) -> Option<&InputStatus>,
    ) -> Vec<Self> {
        objs.into_iter()
            .filter(|o| o.meta().deletion_timestamp.is_none())
            .map(|o| Self::of(kind, o, status(o)))
            .collect()
    }
}

/// Views of the three kinds' status, for [`InputObject::live`].
pub fn vrf_status(o: &VRFRouteConfiguration) -> Option<&InputStatus> {
    o.status.as_ref()
}

/// See [`vrf_status`].
pub fn layer2_status(o: &Layer2NetworkConfiguration) -> Option<&InputStatus> {
    o.status.as_ref()
}

/// See [`vrf_status`].
pub fn table_status(o: &RoutingTable) -> Option<&InputStatus> {
    o.status.as_ref()
}

/// A revision as the lifecycle sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevisionView {
    /// `metadata.name`.
    pub name: String,
    /// `spec.hash`.
    pub hash: String,
    /// `spec.sequence`.
    pub sequence: i64,
    /// `status.phase`.
    pub phase: Option<RevisionPhase>,
    /// Whether it is being deleted (`metadata.deletionTimestamp`).
    pub deleting: bool,
    /// The value of the retry annotation, when a person asked for a retry.
    pub retry: Option<String>,
}

impl RevisionView {
    /// The view of an API object.
    pub fn of(ncr: &NetworkConfigRevision) -> Self {
        Self {
            name: ncr.metadata.name.clone().unwrap_or_default(),
            hash: ncr.spec.hash.clone(),
            sequence: ncr.spec.sequence,
            phase: ncr.status.as_ref().and_then(|s| s.phase),
            deleting: ncr.metadata.deletion_timestamp.is_some(),
            retry: ncr
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(RETRY_ANNOTATION))
                .cloned(),
        }
    }
}

/// The current inputs merged into one snapshot and checked (validated, hashed and rendered for
/// the managed nodes).
#[derive(Clone, Debug, PartialEq)]
pub enum Candidate {
    /// The snapshot is valid: this is the revision it makes.
    Valid {
        /// Name, hash and size.
        revision: Revision,
        /// The snapshot itself.
        snapshot: Snapshot,
    },
    /// The snapshot is invalid; every problem is listed.
    Invalid(Invalid),
}
