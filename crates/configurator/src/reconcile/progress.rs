//! The target's progress counts (`ready/total` and the rest) in its status: [`decide`] is the
//! write (pure), [`progress`] carries it out when it is due.

use netrollout_api::NetworkConfigRevision;
use netrollout_rollout::{Summary, Timestamp};

use crate::context::{Context, StatusPatch};
use crate::convert;
use crate::error::Result;
use crate::memo::ProgressMemo;

/// The write of the target's counts, when they changed.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// The status merge patch.
    pub write: StatusPatch,
    /// Whether the maintenance schedule's status changed (written at once, like an urgent
    /// write).
    pub schedule_changed: bool,
}

/// The counts `summary` gives the target `ncr` (with `unresponsive` nodes), its bake and its
/// schedule, as a status write; `None` when its status says all of that already. `now` counts
/// the bake's seconds left.
pub fn decide(
    ncr: &NetworkConfigRevision,
    summary: &Summary,
    unresponsive: usize,
    now: Timestamp,
) -> Option<Progress> {
    let i = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    let total = summary.managed;
    let queued = total
        .saturating_sub(summary.target_updated)
        .saturating_sub(summary.target_failed)
        .saturating_sub(summary.in_flight)
        .saturating_sub(summary.not_ready);
    let mut want = serde_json::json!({
        "total": i(total),
        "queued": i(queued),
        "inFlight": i(summary.in_flight),
        "ready": i(summary.target_updated),
        "failed": i(summary.target_failed),
        "unresponsive": i(unresponsive),
        "skipped": i(summary.not_ready),
        "progress": format!("{}/{}", summary.target_updated, total),
    });
    let current = ncr.status.clone().unwrap_or_default();
    let have = serde_json::json!({
        "total": current.total,
        "queued": current.queued,
        "inFlight": current.in_flight,
        "ready": current.ready,
        "failed": current.failed,
        "unresponsive": current.unresponsive,
        "skipped": current.skipped,
        "progress": current.progress.unwrap_or_default(),
    });
    let bake = summary.bake.as_ref().map(|b| {
        // Whole seconds: the time reads back as written.
        let until = Timestamp::from_millis(b.until.as_millis().div_ceil(1000) * 1000);
        (i(b.nodes), convert::to_time(until), until)
    });
    let had = current.bake.as_ref().map(|b| (b.nodes, b.until.clone()));
    let same_bake = bake.as_ref().map(|(n, t, _)| (*n, t.clone())) == had;
    let schedule = summary.schedule.as_ref().map(crate::schedule::status);
    let same_schedule = schedule == current.schedule;
    if want == have && same_bake && same_schedule {
        return None;
    }
    want["bake"] = match bake {
        Some((nodes, until, at)) => serde_json::json!({
            "nodes": nodes,
            "until": until,
            "secondsLeft": at.saturating_since(now).as_secs(),
        }),
        None => serde_json::Value::Null,
    };
    want["schedule"] = serde_json::to_value(&schedule).unwrap_or_default();
    Some(Progress {
        write: StatusPatch {
            revision: ncr.metadata.name.clone()?,
            status: want,
            what: "patch progress of",
        },
        schedule_changed: !same_schedule,
    })
}

/// Writes the target's counts ([`decide`]) when they changed: at once when the plan sets a
/// phase (`urgent`) or the schedule's status changed, otherwise at most every
/// [`PROGRESS_INTERVAL`](crate::memo::PROGRESS_INTERVAL) (a later pass writes the last counts;
/// the resync guarantees one).
///
/// # Errors
/// The write failed (the pass is retried).
pub async fn progress(
    ctx: &Context,
    memo: &ProgressMemo,
    summary: &Summary,
    unresponsive: usize,
    urgent: bool,
) -> Result<()> {
    let Some(ncr) = (summary.target.as_deref()).and_then(|t| ctx.read().revision(t)) else {
        return Ok(());
    };
    let Some(p) = decide(&ncr, summary, unresponsive, convert::now()) else {
        return Ok(());
    };
    let target = p.write.revision.as_str();
    if !memo.due(target, urgent || p.schedule_changed) {
        return Ok(());
    }
    ctx.writer().patch_status(&p.write).await?;
    memo.written(target);
    Ok(())
}
