//! The revision lifecycle ("Revisions" in docs/contract.md) as a pure function, beside the
//! planner: [`decide()`] looks at the live inputs, the revisions (the configurator's cache plus
//! its own writes), the checked candidate snapshot and the time, and returns the
//! [`RevisionAction`]s to carry out, in order: create a revision, reuse one (raising its
//! sequence), wait for a terminating one, report a name clash, refuse content identical to a
//! Failed revision, carry out retries, and set every input's `Accepted` verdict.
//!
//! Like the planner it works on its own small types and does no I/O; the configurator converts
//! API objects into them and executes the actions as API writes.
//!
//! Layout (dependencies point down the list):
//! - [`model`]: what `decide` looks at — inputs, revisions, the candidate.
//! - [`verdict`]: the `Accepted` condition an input should carry ([`Verdict`]) and the update
//!   that writes it ([`AcceptedUpdate`]).
//! - [`action`]: what it asks for — [`RevisionAction`].
//! - [`decide`](mod@decide): the decisions, in the order they are carried out.

pub mod action;
pub mod decide;
pub mod model;
pub mod verdict;

#[cfg(test)]
mod tests;

pub use action::{RaiseReason, Retried, RevisionAction};
pub use decide::decide;
pub use model::{
    AcceptedShown, Candidate, Content, InputKind, InputObject, InputRef, Invalid, NameClash,
    Problem, RETRY_ANNOTATION, RevisionView, StoreLimits,
};
pub use verdict::{AcceptedUpdate, Since, Verdict};
