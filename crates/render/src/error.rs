//! Why rendering fails: [`Error`], and [`Invalid`], every problem of the inputs found in one pass,
//! each a [`Problem`] naming the object, the field and what to do. [`Invalid`] and [`Problem`]
//! are the planner's own types (`netrollout_rollout::lifecycle`): the lifecycle reads the
//! renderer's verdict as it is.

pub use netrollout_rollout::lifecycle::{Invalid, Problem, StoreLimits};

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

/// `ok` when no problem was found, else every problem.
pub(crate) fn checked<T>(invalid: Invalid, ok: T) -> Result<T> {
    if invalid.problems.is_empty() {
        Ok(ok)
    } else {
        Err(Error::Invalid(invalid))
    }
}
