//! `node-join`: a node joins mid-rollout.

use anyhow::Result;
use futures::future::BoxFuture;

use super::checks::all_provisioned;
use super::steps::{apply_samples_until, settle_newest};
use super::traffic_checks::start_traffic;
use super::{Scenario, Story};
use crate::settings::Settings;
use crate::settings::UpdateLimit;

/// A node joins mid-rollout.
#[derive(Debug)]
pub struct NodeJoin;

impl Scenario for NodeJoin {
    fn name(&self) -> &'static str {
        "node-join"
    }

    fn about(&self) -> &'static str {
        "a node joins mid-rollout and gets the revision too"
    }

    /// At least 3 nodes, one at a time, so the join lands mid-rollout.
    fn settings(&self, base: Settings) -> Settings {
        Settings {
            nodes: base.nodes.max(3),
            update_limit: UpdateLimit::Count(1),
            ..base
        }
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    let plan = "applying the samples; a node joins once the first wave is in flight";
    apply_samples_until(m, lab, samples, plan, "the first dispatch", |o| {
        !o.in_flight().is_empty()
    })
    .await?;
    let joined = lab.add_node().await?;
    m.say(&format!("node {joined} joined"));
    let target = settle_newest(m, lab).await?;
    all_provisioned(summary, m, lab, &target);
    summary.check(
        "the joining node got the revision",
        m.now.provisioned_on(&target).contains(&joined.as_str()),
        joined.clone(),
    );
    start_traffic(summary, m, lab, samples).await?;
    let carried = lab.traffic.pairs().iter().any(|p| p.from == joined);
    summary.check(
        "the joining node carries tenant traffic",
        carried,
        format!("{joined} pings its neighbour on every network"),
    );
    Ok(())
}
