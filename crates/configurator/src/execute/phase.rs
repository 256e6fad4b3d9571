//! The write of a planner's `SetRevisionPhase` (pure): the phase, its message, the conditions
//! that go with it and, for Failed, the failed nodes.

use netrollout_api::FailedNode;
use netrollout_rollout::{FailureCause, NodeFailure, RevisionPhase};

use super::World;
use crate::conditions;
use crate::context::StatusPatch;
use crate::convert;
use crate::error::{Error, Result};

/// The status write that sets `phase` on `revision` for `reason`, with the revision's
/// conditions (as [`conditions::for_phase`] has them) and, for Failed, the `failed` nodes.
///
/// # Errors
/// The failed nodes cannot be serialised.
pub(super) fn decide(
    world: &World<'_>,
    revision: &str,
    phase: RevisionPhase,
    reason: &str,
    failed: &[NodeFailure],
) -> Result<StatusPatch> {
    let mut status = serde_json::json!({ "phase": convert::api_phase(phase), "message": reason });
    // The conditions go with the phase, in the same write.
    if let Some(ncr) = world.ncrs.get(revision) {
        let fields = conditions::for_phase(
            ncr,
            convert::api_phase(phase),
            reason,
            world.globally_paused,
            world.refusal,
        );
        // With `analysis: null` when it is of an earlier targeting (a raised revision).
        for (k, v) in fields.as_object().into_iter().flatten() {
            status[k] = v.clone();
        }
    }
    if phase == RevisionPhase::Failed {
        // At most MAX_LISTED, messages bounded: the revision must stay one storable object
        // (`status.failed` counts every failure; late_failures keeps it in step).
        let nodes: Vec<FailedNode> = failed
            .iter()
            .take(crate::late_failures::MAX_LISTED)
            .map(|f| {
                crate::late_failures::bounded(FailedNode {
                    node: f.node.clone(),
                    reason: convert::failure_reason(&f.cause).to_owned(),
                    message: f.message.clone(),
                    failing_checks: match &f.cause {
                        FailureCause::HealthRegressed { checks }
                        | FailureCause::BakeRegressed { checks } => checks.clone(),
                        _ => Vec::new(),
                    },
                    time: Some(convert::to_time(f.at)),
                })
            })
            .collect();
        status["failedNodes"] = serde_json::to_value(nodes).map_err(|source| Error::Serialize {
            what: "failed nodes",
            source,
        })?;
    }
    Ok(StatusPatch {
        revision: revision.to_string(),
        status,
        what: what(phase),
    })
}

/// What the write does, for its error.
fn what(phase: RevisionPhase) -> &'static str {
    match phase {
        RevisionPhase::Pending => "set phase Pending on",
        RevisionPhase::Progressing => "set phase Progressing on",
        RevisionPhase::Succeeded => "set phase Succeeded on",
        RevisionPhase::Failed => "set phase Failed on",
        RevisionPhase::Superseded => "set phase Superseded on",
        RevisionPhase::Blocked => "set phase Blocked on",
    }
}
