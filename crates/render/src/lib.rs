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
//! - [`diff`](mod@diff): what changes between two snapshots, in the inputs and per node (the
//!   kubectl plugin's `diff`, `undo` and `migrate`).
//! - [`needs`](mod@needs): what a node's rendered config needs from the node (kernel drivers,
//!   FRR's bgpd), for the configurator's pre-flight.
//! - [`selector`]: Kubernetes label-selector semantics.
//! - [`net`]: IP addresses and CIDRs parsed by Kubernetes' rules (`isCIDR`, `cidr()`, `ip()`).
//! - [`revision`](mod@revision): [`Revision`], the identity of a snapshot, and the size limits.
//! - [`error`]: [`Error`], and [`Invalid`]: every problem of the inputs at once, each a
//!   [`Problem`] naming the object, the field and the fix.

#![forbid(unsafe_code)]

pub mod compile;
pub mod diff;
pub mod error;
pub mod needs;
pub mod net;
pub mod render;
pub mod revision;
pub mod selector;
pub mod snapshot;

pub use compile::{Compiled, compile, compile_against};
pub use error::{Error, Invalid, Problem, Result, StoreLimits};
pub use needs::needs;
pub use render::{Node, Rendered, render};
pub use revision::{
    LIMITS, MAX_NODE_CONFIG_BYTES, MAX_OBJECT_BYTES, MAX_SNAPSHOT_BYTES, REVISION_HEADROOM_BYTES,
    Revision,
};
pub use snapshot::{canonical_json, from_objects, hash_canonical, peerings, revision_name};
