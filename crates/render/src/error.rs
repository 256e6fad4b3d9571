//! Why rendering fails: [`Error`], and [`Invalid`], every problem of the inputs found in one pass,
//! each a [`Problem`] naming the object, the field and what to do.

use std::fmt;

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
