//! The status reports of an attempt's outcome, for the status writer.

use netrollout_api::NodePhase;

use crate::status::Report;
use crate::store::{Failure, LastKnownGood};

/// The report of a committed (or already committed) revision.
pub(super) fn provisioned(
    rev: &str,
    generation: Option<i64>,
    reason: &str,
    message: String,
    started: Option<jiff::Timestamp>,
) -> Report {
    let now = jiff::Timestamp::now();
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Provisioned),
        reason: reason.into(),
        message,
        started_at: Some(started.unwrap_or(now)),
        finished_at: Some(now),
        last_known_good: Some(rev.to_string()),
        ready: true,
        generation,
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
    }
}
