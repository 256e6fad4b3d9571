//! The steps scenarios share: the opening of a story (the samples rolled out with traffic, or
//! applied until a moment mid-rollout), apply inputs and wait for the revision they make to
//! succeed or fail.

use std::time::Duration;

use anyhow::Result;
use netrollout_api::RevisionPhase;

use super::Monitor;
use super::checks::{Summary, all_provisioned, halted_and_restored, limit};
use super::traffic_checks::start_traffic;
use crate::cluster::Cluster;
use crate::progress::Observed;
use crate::traffic;

/// How long a rollout may take to settle: 2 min, with the nodes in the VM (TCG) 5 min or
/// 150 s per wave, whichever is longer (a VM node's apply took up to 100 s on a loaded
/// machine, so 3 waves of limit 1 outgrew 5 min).
pub(super) fn settle(lab: &Cluster) -> Duration {
    if !lab.in_vm() {
        return Duration::from_secs(120);
    }
    let nodes = lab.node_names().len();
    let waves = nodes.div_ceil(super::checks::limit(lab).max(1)) as u64;
    Duration::from_secs(300.max(150 * waves))
}

/// The opening of a story that breaks something: the samples roll out (the known-good
/// revision, returned) and tenant traffic flows between every node's workloads.
pub(super) async fn known_good_with_traffic(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &mut Cluster,
    samples: &[kube::api::DynamicObject],
) -> Result<String> {
    let good = rollout(m, lab, samples, "the samples (known-good)").await?;
    start_traffic(summary, m, lab, samples).await?;
    Ok(good)
}

/// The opening of a story that acts mid-rollout: says `plan`, applies the samples and waits
/// until `what` holds.
pub(super) async fn apply_samples_until(
    m: &mut Monitor,
    lab: &Cluster,
    samples: &[kube::api::DynamicObject],
    plan: &str,
    what: &str,
    done: impl Fn(&Observed) -> bool,
) -> Result<()> {
    m.say(plan);
    lab.apply(samples).await?;
    m.until(lab, what, settle(lab), done).await
}

/// A change that must fail: applies `objects` on top of revision `good`, waits until the new
/// revision (`what`) Fails and every node is back on `good`, and checks what a halted rollout
/// promises. Returns the nodes the failed revision was dispatched to and the traffic window
/// (from the apply to the last node's restore).
pub(super) async fn fail_and_restore(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &Cluster,
    good: &str,
    objects: &[kube::api::DynamicObject],
    what: &str,
) -> Result<(Vec<String>, (u64, u64))> {
    let t0 = traffic::now_ms();
    lab.apply(objects).await?;
    let bad = new_revision(m, lab, good).await?;
    m.until(lab, &format!("the {what} to fail"), settle(lab), |o| {
        o.phase_of(&bad) == Some(RevisionPhase::Failed)
    })
    .await?;
    summary.check(&format!("{what} Failed"), true, bad.clone());
    m.until(
        lab,
        "every node back on the known-good revision",
        settle(lab),
        |o| o.provisioned_on(good).len() == o.configs.len(),
    )
    .await?;
    let t1 = traffic::now_ms();
    all_provisioned(summary, m, lab, good);
    let given: Vec<String> = m.dispatched(&bad).into_iter().collect();
    halted_and_restored(summary, m, lab, &given, good, limit(lab));
    Ok((given, (t0, t1)))
}

/// Applies inputs and waits for the resulting revision to succeed; returns its name.
pub(crate) async fn rollout(
    m: &mut Monitor,
    lab: &Cluster,
    objects: &[kube::api::DynamicObject],
    what: &str,
) -> Result<String> {
    m.say(&format!("applying {what}"));
    lab.apply(objects).await?;
    let target = settle_newest(m, lab).await?;
    m.say(&format!("revision {target} succeeded"));
    Ok(target)
}

/// Waits until a revision other than `previous` is the newest; returns its name.
pub(crate) async fn new_revision(m: &mut Monitor, lab: &Cluster, previous: &str) -> Result<String> {
    m.until(lab, "a new revision", settle(lab), |o| {
        o.newest()
            .is_some_and(|r| r.metadata.name.as_deref() != Some(previous))
    })
    .await?;
    Ok(m.now
        .newest()
        .and_then(|r| r.metadata.name.clone())
        .unwrap_or_default())
}

/// Waits until the newest revision succeeds; returns its name.
pub(super) async fn settle_newest(m: &mut Monitor, lab: &Cluster) -> Result<String> {
    m.until(lab, "the newest revision to succeed", settle(lab), |o| {
        o.newest().and_then(|r| r.status.as_ref()?.phase) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    Ok(m.now
        .newest()
        .and_then(|r| r.metadata.name.clone())
        .unwrap_or_default())
}
