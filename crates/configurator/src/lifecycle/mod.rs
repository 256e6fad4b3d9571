//! The revision lifecycle as a pure function ("Revisions" in ROLLOUT.md), like the planner:
//! [`decide()`] looks at the live inputs, the revisions (cache plus own writes), the checked
//! candidate snapshot and the time, and returns the [`RevisionAction`]s to carry out, in order.
//! `revisions.rs` gathers the inputs and executes the actions against the API; nothing here
//! does I/O.
//!
//! Layout:
//! - [`model`]: what `decide` looks at — inputs, revisions, the candidate.
//! - [`action`]: what it asks for — [`RevisionAction`].
//! - [`verdict`]: the `Accepted` condition an input should carry.
//! - [`decide`](mod@decide): the decisions — retry, create, reuse (raise the sequence), wait
//!   for a terminating revision, name clash, identical to a Failed revision, `Accepted`.

pub mod action;
pub mod decide;
pub mod model;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use action::{AcceptedUpdate, RaiseReason, RevisionAction};
pub use decide::decide;
pub use model::{Candidate, InputKind, InputObject, InputRef, RevisionView};
pub use verdict::Verdict;
