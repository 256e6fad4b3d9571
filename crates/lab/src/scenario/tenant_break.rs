//! `tenant-break`: a wrong VNI on the tenant network.

use anyhow::Result;
use futures::future::BoxFuture;

use super::checks::untainted;
use super::steps::{fail_and_restore, known_good_with_traffic};
use super::traffic_checks::traffic_report;
use super::{Monitor, Scenario, Story, Summary};
use crate::cluster::Cluster;
use crate::inputs;

/// A wrong VNI on the tenant network.
#[derive(Debug)]
pub struct TenantBreak;

impl Scenario for TenantBreak {
    fn name(&self) -> &'static str {
        "tenant-break"
    }

    fn about(&self) -> &'static str {
        "a wrong VNI on the tenant network: the first wave's tenant probes fail,\n\
         those nodes restore on their own, the revision fails, the rollout halts,\n\
         and the loss stays with the first wave's nodes"
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    story_of(summary, m, lab, samples).await.map(drop)
}

/// The story on a fresh lab, with its checks; returns the known-good revision it leaves every
/// node on (`remote-break` opens with it, so the VM suite boots one VM for both).
pub(super) async fn story_of(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &mut Cluster,
    samples: &[kube::api::DynamicObject],
) -> Result<String> {
    let good = known_good_with_traffic(summary, m, lab, samples).await?;
    untainted(summary, m, lab, "startup taints removed before the break").await?;
    let wrong = inputs::TENANT_VNI + 1;
    m.say(&format!(
        "applying a wrong VNI ({wrong}) on {}: its nodes no longer reach the others' workloads",
        inputs::TENANT
    ));
    let wrong_vni = [inputs::tenant(wrong)?];
    let (given, (t0, t1)) =
        fail_and_restore(summary, m, lab, &good, &wrong_vni, "wrong-VNI revision").await?;
    let failures = m.failures();
    let tenant_probe = failures.values().flatten().any(|msg| msg.contains("icmp"));
    summary.check(
        "the tenant probe (not the API server check) caught it",
        tenant_probe,
        failures
            .values()
            .flatten()
            .next()
            .cloned()
            .unwrap_or_default(),
    );
    let first_wave: Vec<&str> = given.iter().map(String::as_str).collect();
    traffic_report(summary, m, lab, (t0, t1), &[inputs::TENANT], &first_wave).await;
    let tainted = lab.tainted().await?;
    summary.check(
        "a later failure does not taint the nodes again",
        tainted.is_empty(),
        format!("tainted: {tainted:?}"),
    );
    Ok(good)
}
