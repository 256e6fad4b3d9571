//! The status reports of a transaction's outcomes.

use netrollout_api::NodePhase;

use crate::report::Report;
use crate::state::{Failure, LastKnownGood};

/// The report of a committed (or already committed) revision, decided at `now`.
pub(super) fn provisioned(
    rev: &str,
    generation: Option<i64>,
    message: String,
    started: Option<jiff::Timestamp>,
    now: jiff::Timestamp,
) -> Report {
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Provisioned),
        reason: "Applied".into(),
        message,
        started_at: Some(started.unwrap_or(now)),
        finished_at: Some(now),
        last_known_good: Some(rev.to_string()),
        ready: true,
        generation,
        preexisting_failures: Some(Vec::new()),
    }
}

/// The report of a revision that failed on this node.
pub(super) fn failed(
    rev: &str,
    generation: Option<i64>,
    f: &Failure,
    lkg: &LastKnownGood,
) -> Report {
    let at = f.at.parse().ok();
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Failed),
        reason: f.reason.as_str().into(),
        message: f.message.clone(),
        started_at: at,
        finished_at: at,
        last_known_good: lkg.revision.clone(),
        ready: false,
        generation,
        preexisting_failures: None,
    }
}

/// The report of an attempt that started.
pub(super) fn provisioning(
    rev: &str,
    generation: Option<i64>,
    attempt: u32,
    started: jiff::Timestamp,
    lkg: &LastKnownGood,
) -> Report {
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Provisioning),
        reason: "Applying".into(),
        message: format!("applying {rev} (attempt {attempt})"),
        started_at: Some(started),
        finished_at: None,
        last_known_good: lkg.revision.clone(),
        ready: false,
        generation,
        preexisting_failures: Some(Vec::new()),
    }
}
