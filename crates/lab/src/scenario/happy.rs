//! `happy`: the samples roll out; traffic flows; a one-network change costs nothing on the others;
//! on a kernel without VRFs, the VRF samples meet the configurator's pre-flight.

use anyhow::Result;
use futures::future::BoxFuture;
use netrollout_api::RevisionPhase;

use super::checks::{all_provisioned, untainted};
use super::steps::{new_revision, rollout, settle};
use super::traffic_checks::{start_traffic, traffic_report};
use super::{Scenario, Story};
use crate::traffic;

/// The samples roll out; traffic flows; a one-network change costs nothing on the others.
#[derive(Debug)]
pub struct Happy;

impl Scenario for Happy {
    fn name(&self) -> &'static str {
        "happy"
    }

    fn about(&self) -> &'static str {
        "the samples and the lab's tenant network roll out with at most\n\
         --update-limit nodes in flight; tenant traffic then flows between every node's\n\
         workloads, and a change to one network costs no probe on the others; without\n\
         VRFs, the VRF samples are then applied and pre-flight dispatches them to no node"
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    let target = rollout(m, lab, samples, "the samples").await?;
    all_provisioned(summary, m, lab, &target);
    start_traffic(summary, m, lab, samples).await?;
    untainted(
        summary,
        m,
        lab,
        "startup taints removed once each node's checks passed",
    )
    .await?;
    let mut sessions = Vec::new();
    for n in lab.node_names() {
        if let Err(e) = lab.evpn_established(&n).await {
            sessions.push(format!("{e:#}"));
        }
    }
    summary.check(
        "every node's FRR has an Established EVPN session with the route reflector",
        sessions.is_empty(),
        if sessions.is_empty() {
            format!(
                "{} node(s), show bgp l2vpn evpn summary",
                lab.node_names().len()
            )
        } else {
            sessions.join("; ")
        },
    );
    // A change to one network: the first one of the traffic's networks.
    let changed = lab
        .traffic
        .networks
        .first()
        .map(|n| n.name.clone())
        .unwrap_or_default();
    let objects: Vec<_> = samples
        .iter()
        .filter(|o| o.metadata.name.as_deref() == Some(changed.as_str()))
        .cloned()
        .map(|mut o| {
            o.data["spec"]["mtu"] = serde_json::json!(1400);
            o
        })
        .collect();
    let t0 = traffic::now_ms();
    m.say(&format!("applying MTU 1400 on {changed}"));
    lab.apply(&objects).await?;
    let next = new_revision(m, lab, &target).await?;
    m.until(lab, "the MTU change to succeed", settle(lab), |o| {
        o.phase_of(&next) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    let t1 = traffic::now_ms();
    all_provisioned(summary, m, lab, &next);
    traffic_report(summary, m, lab, (t0, t1), &[changed.as_str()], &[]).await;
    // Only where the kernel lacks VRFs: with --without-vrfs on a kernel that has them, the
    // agents report vrf and the samples would simply roll out.
    if !lab.vrf && !lab.settings().without_vrfs {
        super::preflight::vrf_verdict(summary, m, lab, &next).await?;
    }
    Ok(())
}
