//! The pre-flight verdict on a kernel without VRFs (docs/contract.md, "Pre-flight"): after the
//! first rollout the lab applies the VRF samples it left out; the configurator must dispatch
//! the revision they make to no node and name every node as lacking `vrf`. The samples are then
//! deleted again, and the fleet's revision is the target again.

use anyhow::Result;
use netrollout_api::{NODES_CAPABLE_CONDITION, RevisionPhase};

use super::Monitor;
use super::checks::Summary;
use super::steps::{new_revision, settle};
use crate::cluster::Cluster;
use crate::inputs;

/// The message of `NodesCapable=False` on the newest revision, if it carries one.
fn verdict(o: &crate::progress::Observed) -> Option<String> {
    o.newest()?
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == NODES_CAPABLE_CONDITION && c.status == "False")
        .map(|c| c.message.clone())
}

/// Applies the VRF samples, checks the verdict, deletes them; `fleet` is the revision every
/// node runs.
pub(super) async fn vrf_verdict(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &Cluster,
    fleet: &str,
) -> Result<()> {
    let vrf = inputs::vrf_samples()?;
    m.say("no VRFs here: applying the VRF samples to show the pre-flight verdict");
    lab.apply(&vrf).await?;
    let held = new_revision(m, lab, fleet).await?;
    m.until(lab, "the pre-flight verdict", settle(lab), |o| {
        verdict(o).is_some()
    })
    .await?;
    let message = verdict(&m.now).unwrap_or_default();
    m.say(&format!("pre-flight: {message}"));
    let unnamed: Vec<String> = lab
        .node_names()
        .into_iter()
        .filter(|n| !message.contains(&format!("node {n} lacks vrf")))
        .collect();
    let dispatched = m.dispatched(&held);
    summary.check(
        "pre-flight: the revision with the VRF samples is dispatched to no node, every node named as lacking vrf",
        unnamed.is_empty() && dispatched.is_empty() && message.contains("not dispatched to any node"),
        format!("dispatched to {dispatched:?}; not named: {unnamed:?}; {message}"),
    );
    lab.delete(&vrf).await?;
    m.until(
        lab,
        "the fleet's revision to be the target again",
        settle(lab),
        |o| {
            o.newest().is_some_and(|r| {
                r.metadata.name.as_deref() == Some(fleet)
                    && r.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Succeeded)
            })
        },
    )
    .await?;
    Ok(())
}
