//! The result of one check, shared by the probes ([`crate::probe`]), the health-check file
//! ([`crate::healthcheck`]) and the routing probes ([`crate::routing`]); it depends on none of
//! them, so they all point here.

/// The result of one check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// What was checked, e.g. `tcp 10.0.0.1:443`.
    pub name: String,
    /// Why it failed; `None` when it passed.
    pub error: Option<String>,
}

impl Outcome {
    /// Whether the check passed.
    pub fn passed(&self) -> bool {
        self.error.is_none()
    }
}
