//! Rendering: input objects → a validated, content-addressed snapshot → one `NodeConfig` per node.
//!
//! Pure: no async, no I/O, no clock. The configurator lists the inputs and nodes, calls
//! [`Revision::of`] for the snapshot's identity and [`render`] for the per-node configs.
//!
//! Layout:
//! - [`snapshot`]: building the snapshot from objects (deleting ones count as gone), canonical
//!   JSON, the hash and the revision name.
//! - [`compile`]: validating the snapshot, reporting every problem at once, and deriving
//!   interface names and table ids.
//! - [`render`](mod@render): choosing, per node, the inputs whose `nodeSelector` matches, allocating
//!   per-node loopback addresses, and building each node's `NodeConfig` on demand.
//! - [`selector`]: Kubernetes label-selector semantics.

#![forbid(unsafe_code)]

pub mod compile;
pub mod render;
pub mod selector;
pub mod snapshot;

use std::fmt;

pub use compile::{Compiled, compile};
pub use render::{Node, Rendered, render};
pub use snapshot::{canonical_json, from_objects, hash_canonical, revision_name};

use netrollout_api::Snapshot;

/// Largest rendered config of one node: the API server refuses bigger objects.
pub const MAX_NODE_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest snapshot: the API server's request limit is 1.5 MiB for the whole revision.
pub const MAX_SNAPSHOT_BYTES: usize = 1536 * 1024;

/// The identity of a snapshot: its canonical JSON, hash and revision name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    /// `sha256:<hex>` of the canonical JSON.
    pub hash: String,
    /// `ncr-<first 16 hex digits>`.
    pub name: String,
    /// Size of the canonical JSON in bytes.
    pub size: usize,
}

impl Revision {
    /// Hashes a snapshot.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the snapshot is too big to store; [`Error::Serialize`] only if the
    /// snapshot cannot be serialised, which the types rule out.
    pub fn of(snapshot: &Snapshot) -> Result<Self> {
        let canonical = canonical_json(snapshot).map_err(Error::Serialize)?;
        let hash = hash_canonical(&canonical);
        let name = revision_name(&hash);
        let mut invalid = Invalid::default();
        if canonical.len() > MAX_SNAPSHOT_BYTES {
            invalid.push(
                "NetworkConfigRevision",
                &name,
                "spec.snapshot",
                format!(
                    "the merged inputs are {} bytes, over the API server's limit of {MAX_SNAPSHOT_BYTES}; \
                     remove or merge inputs",
                    canonical.len()
                ),
            );
        }
        invalid.into_result(Self {
            name,
            hash,
            size: canonical.len(),
        })
    }
}

/// Why rendering failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The inputs are invalid; every problem is listed.
    #[error("{0}")]
    Invalid(Invalid),
    /// A value could not be serialised to JSON (a bug, not bad input).
    #[error("cannot serialise the snapshot to JSON: {0}")]
    Serialize(serde_json::Error),
}

/// Result of this crate's fallible functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every problem found in one pass over the inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Invalid {
    /// The problems, in input order.
    pub problems: Vec<Problem>,
}

impl Invalid {
    pub(crate) fn push(
        &mut self,
        kind: &'static str,
        object: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.problems.push(Problem {
            kind,
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

    pub(crate) fn into_result<T>(self, ok: T) -> Result<T> {
        if self.problems.is_empty() {
            Ok(ok)
        } else {
            Err(Error::Invalid(self))
        }
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
    /// Kind of the object, e.g. `Layer2NetworkConfiguration`.
    pub kind: &'static str,
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
