//! The result of one check, shared by the probes ([`crate::probe`]), the health-check file
//! ([`crate::healthcheck`]) and the routing probes ([`crate::routing`]); it depends on none of
//! them, so they all point here; and how outcomes before and after a change are judged (pure:
//! the transaction core uses them).

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

/// The failed checks of `after` that passed in `before` or were not run then (link checks).
pub fn enforced_failures<'a>(before: &[Outcome], after: &'a [Outcome]) -> Vec<&'a Outcome> {
    after
        .iter()
        .filter(|o| !o.passed())
        .filter(|o| !before.iter().any(|b| b.name == o.name && !b.passed()))
        .collect()
}

/// The checks that failed, as one line: `tcp 10.0.0.1:443: connection refused; gateway: ...`.
pub fn describe(failed: &[&Outcome]) -> String {
    failed
        .iter()
        .map(|o| format!("{}: {}", o.name, o.error.as_deref().unwrap_or("passed")))
        .collect::<Vec<_>>()
        .join("; ")
}
