//! `bad-config`: a config that cuts the nodes off the API server.

use anyhow::Result;
use futures::future::BoxFuture;

use super::steps::{fail_and_restore, known_good_with_traffic};
use super::traffic_checks::traffic_report;
use super::{Scenario, Story};
use crate::inputs;

/// A config that cuts the nodes off the API server.
#[derive(Debug)]
pub struct BadConfig;

impl Scenario for BadConfig {
    fn name(&self) -> &'static str {
        "bad-config"
    }

    fn about(&self) -> &'static str {
        "a config that cuts the nodes off the API server: the first wave restores\n\
         its last-known-good config locally, the rollout halts, and those nodes\n\
         return to the known-good revision"
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    let good = known_good_with_traffic(summary, m, lab, samples).await?;
    m.say("applying a config that makes the API server's address local on every node");
    let breaker = [inputs::connectivity_breaker()?];
    let (given, (t0, t1)) =
        fail_and_restore(summary, m, lab, &good, &breaker, "bad revision").await?;
    let first_wave: Vec<&str> = given.iter().map(String::as_str).collect();
    traffic_report(summary, m, lab, (t0, t1), &[], &first_wave).await;
    Ok(())
}
