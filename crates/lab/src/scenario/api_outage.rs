//! `api-outage`: the API server fails every request for 5 s while nodes apply.

use std::time::Duration;

use anyhow::Result;
use futures::future::BoxFuture;
use netrollout_api::RevisionPhase;
use netrollout_lab_apiserver::Outage;

use super::checks::all_provisioned;
use super::steps::{known_good_with_traffic, new_revision, settle};
use super::traffic_checks::traffic_report;
use super::{Scenario, Story};
use crate::{inputs, traffic};

/// The API server fails every request for 5 s while nodes apply.
#[derive(Debug)]
pub struct ApiOutage;

impl Scenario for ApiOutage {
    fn name(&self) -> &'static str {
        "api-outage"
    }

    fn about(&self) -> &'static str {
        "the lab API server answers every request with 500 for 5 s while nodes\n\
         apply; the rollout finishes with no node failed"
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    let good = known_good_with_traffic(summary, m, lab, samples).await?;
    let t0 = traffic::now_ms();
    lab.apply(&[inputs::layer2("lab-extra", 700, "192.168.70.1/24")?])
        .await?;
    let next = new_revision(m, lab, &good).await?;
    m.until(lab, "a node applying the new revision", settle(lab), |o| {
        !o.in_flight().is_empty()
    })
    .await?;
    m.say("API server outage: it answers every request with 500 for 5 s");
    lab.server.faults().set_outage(Outage::Fail);
    tokio::time::sleep(Duration::from_secs(5)).await;
    lab.server.faults().set_outage(Outage::None);
    m.say("API server back");
    m.until(lab, "the new revision to succeed", settle(lab), |o| {
        o.phase_of(&next) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    let t1 = traffic::now_ms();
    let failures = m.failures();
    summary.check(
        "the rollout finished after the outage, no node failed",
        failures.is_empty(),
        format!("{next} Succeeded; failures seen: {failures:?}"),
    );
    all_provisioned(summary, m, lab, &next);
    traffic_report(summary, m, lab, (t0, t1), &["lab-extra"], &[]).await;
    Ok(())
}
