//! The identity of a snapshot — canonical JSON, hash, revision name — and the size limits the API
//! server sets.

use netrollout_api::Snapshot;

use crate::error::{Error, Invalid, Result, StoreLimits};
use crate::snapshot::{canonical_json, hash_canonical, revision_name};

/// Largest rendered config of one node: the API server refuses bigger objects.
pub const MAX_NODE_CONFIG_BYTES: usize = 1024 * 1024;
/// Largest object etcd stores by default (`--max-request-bytes`): a revision must fit in it whole.
pub const MAX_OBJECT_BYTES: usize = 1536 * 1024;
/// What a revision keeps besides its snapshot: metadata and status (at most 100 listed failures
/// with bounded messages, the conditions, the counts).
pub const REVISION_HEADROOM_BYTES: usize = 256 * 1024;
/// Largest snapshot: the revision with its metadata and status must still fit in
/// [`MAX_OBJECT_BYTES`].
pub const MAX_SNAPSHOT_BYTES: usize = MAX_OBJECT_BYTES - REVISION_HEADROOM_BYTES;

/// The size limits this renderer checks a snapshot against.
pub const LIMITS: StoreLimits = StoreLimits {
    object_bytes: MAX_OBJECT_BYTES,
    snapshot_bytes: MAX_SNAPSHOT_BYTES,
};

/// No problem found yet, in a snapshot checked against [`LIMITS`].
pub(crate) fn none() -> Invalid {
    Invalid::new(LIMITS)
}

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
        let mut invalid = crate::revision::none();
        if canonical.len() > MAX_SNAPSHOT_BYTES {
            invalid.push(
                "NetworkConfigRevision",
                &name,
                "spec.snapshot",
                format!(
                    "the merged inputs are {} bytes, over the limit of {MAX_SNAPSHOT_BYTES} \
                     (etcd stores objects of at most {MAX_OBJECT_BYTES} bytes; \
                     {REVISION_HEADROOM_BYTES} are kept for the revision's metadata and status); \
                     remove or merge inputs",
                    canonical.len()
                ),
            );
        }
        crate::error::checked(
            invalid,
            Self {
                name,
                hash,
                size: canonical.len(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use netrollout_api::{NamedInput, RoutingTableSpec};

    use super::*;

    /// A snapshot of `n` routing tables (about 60 bytes each in canonical JSON).
    fn tables(n: usize) -> Snapshot {
        Snapshot {
            routing_tables: (0..n)
                .map(|i| NamedInput {
                    name: format!("table-{i:08}"),
                    spec: RoutingTableSpec {
                        table_id: 1000 + i as i64,
                    },
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_snapshot_that_leaves_no_room_for_the_revisions_status_is_refused() {
        // Grow the snapshot until it is just over the limit, but still under etcd's 1.5 MiB.
        let mut n = 16_000;
        while Revision::of(&tables(n)).is_ok() {
            n += 500;
        }
        let size = canonical_json(&tables(n)).unwrap().len();
        assert!(
            size > MAX_SNAPSHOT_BYTES && size < MAX_OBJECT_BYTES,
            "{size} bytes: between the snapshot limit and etcd's"
        );
        let err = Revision::of(&tables(n)).unwrap_err().to_string();
        assert!(
            err.contains("spec.snapshot") && err.contains("metadata and status"),
            "{err}"
        );
        assert_eq!(MAX_SNAPSHOT_BYTES + REVISION_HEADROOM_BYTES, 1536 * 1024);
    }
}
