//! What [`decide`](super::decide()) looks at: the live inputs with their `Accepted` state, the
//! revisions as plain values, and the candidate (the inputs merged, validated and hashed), in
//! the lifecycle's own types (the configurator converts API objects into them).

use std::fmt;

use crate::state::RevisionPhase;

/// The four input kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// `VRFRouteConfiguration`.
    Vrf,
    /// `Layer2NetworkConfiguration`.
    Layer2,
    /// `RoutingTable`.
    Table,
    /// `BGPPeering`.
    Peering,
}

impl InputKind {
    /// The Kubernetes kind, as the renderer names it in a [`Problem`].
    pub fn kind(self) -> &'static str {
        match self {
            InputKind::Vrf => "VRFRouteConfiguration",
            InputKind::Layer2 => "Layer2NetworkConfiguration",
            InputKind::Table => "RoutingTable",
            InputKind::Peering => "BGPPeering",
        }
    }
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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

impl fmt::Display for InputRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.name)
    }
}

/// The `Accepted` condition an input's status shows now (its transition time stays with the
/// caller: the lifecycle only says whether it moves, see [`Since`](super::Since)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptedShown {
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// CamelCase reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// The generation it observed.
    pub observed_generation: Option<i64>,
}

/// A live input (not being deleted) and what its status says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputObject {
    /// Kind and name.
    pub input: InputRef,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The `Accepted` condition in `status.conditions`, if any.
    pub accepted: Option<AcceptedShown>,
    /// `status.revision`.
    pub revision: Option<String>,
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
    /// `status.phase` (`None`: no status written yet).
    pub phase: Option<RevisionPhase>,
    /// Whether it is being deleted (`metadata.deletionTimestamp`).
    pub deleting: bool,
    /// The value of the retry annotation, when a person asked for a retry.
    pub retry: Option<String>,
}

/// The revision the current inputs make: its name, hash and size (the snapshot itself stays
/// with the caller, who writes it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Content {
    /// `ncr-<hex>`, derived from the hash.
    pub name: String,
    /// `sha256:<hex>` of the canonical snapshot.
    pub hash: String,
    /// Size of the canonical JSON in bytes.
    pub size: usize,
}

/// The current inputs merged into one snapshot and checked (validated, hashed and rendered for
/// the managed nodes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// The snapshot is valid: this is the revision it makes.
    Valid(Content),
    /// The snapshot is invalid; every problem is listed.
    Invalid(Invalid),
}

/// How large a revision may be, for the message that says the inputs do not fit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreLimits {
    /// The largest object the API server stores, in bytes.
    pub object_bytes: usize,
    /// Of that, the bytes the merged inputs may take.
    pub snapshot_bytes: usize,
}

/// Why the merged inputs are invalid: every problem found (the renderer's error, read by the
/// lifecycle as it is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The problems, in the order the renderer found them.
    pub problems: Vec<Problem>,
    /// The size limits the renderer checked the snapshot against.
    pub limits: StoreLimits,
}

impl Invalid {
    /// No problem found yet, in a snapshot checked against `limits`.
    pub fn new(limits: StoreLimits) -> Self {
        Self {
            problems: Vec::new(),
            limits,
        }
    }

    /// Adds a problem of the object `kind` `object`.
    pub fn push(
        &mut self,
        kind: &str,
        object: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.problems.push(Problem {
            kind: kind.to_string(),
            object: object.to_string(),
            field: field.into(),
            message: message.into(),
        });
    }

    /// The problems of one object (by kind and name), e.g. to set its `Accepted` condition.
    pub fn for_object<'a>(
        &'a self,
        kind: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Problem> {
        self.problems
            .iter()
            .filter(move |p| p.kind == kind && p.object == name)
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} problem(s) in the inputs:", self.problems.len())?;
        for p in &self.problems {
            write!(f, "\n- {p}")?;
        }
        Ok(())
    }
}

/// One problem: which object, which field, what is wrong and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Kind of the object, e.g. `Layer2NetworkConfiguration` (or `NetworkConfigRevision` when
    /// the merged inputs are too large, `Node` when a node is not among the managed ones).
    pub kind: String,
    /// Name of the object.
    pub object: String,
    /// Path of the field, e.g. `spec.import[2].cidr`.
    pub field: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {:?}: {}: {}",
            self.kind, self.object, self.field, self.message
        )
    }
}

/// A revision with the inputs' name holds different content (contract rule 4): it is never
/// overwritten.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "NetworkConfigRevision {name} exists with hash {existing}, but the inputs hash to {wanted}; \
     it is never overwritten: delete that revision if it was edited by hand"
)]
pub struct NameClash {
    /// Revision name.
    pub name: String,
    /// Hash in the existing object.
    pub existing: String,
    /// Hash of the current inputs.
    pub wanted: String,
}

/// The annotation a person sets on a Failed revision to retry it (the API's
/// `RETRY_ANNOTATION`; the lifecycle names it in what it tells people).
pub const RETRY_ANNOTATION: &str = "netrollout.io/retry";
