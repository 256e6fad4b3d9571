//! The identity of a snapshot — canonical JSON, hash, revision name — and the size limits the API
//! server sets.

use netrollout_api::Snapshot;

use crate::error::{Error, Invalid, Result};
use crate::snapshot::{canonical_json, hash_canonical, revision_name};

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
