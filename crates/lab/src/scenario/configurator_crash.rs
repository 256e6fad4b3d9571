//! `configurator-crash`: the leading configurator is killed mid-rollout.

use anyhow::Result;
use futures::future::BoxFuture;

use super::checks::all_provisioned;
use super::steps::{apply_samples_until, settle_newest};
use super::traffic_checks::start_traffic;
use super::{Scenario, Story};
use crate::settings::Settings;
use crate::settings::UpdateLimit;

/// The leading configurator is killed mid-rollout.
#[derive(Debug)]
pub struct ConfiguratorCrash;

impl Scenario for ConfiguratorCrash {
    fn name(&self) -> &'static str {
        "configurator-crash"
    }

    fn about(&self) -> &'static str {
        "two configurators; the leader is killed with SIGKILL mid-rollout and the\n\
         standby finishes it without exceeding the limit"
    }

    /// Two configurators (a leader and a standby), one node at a time.
    fn settings(&self, base: Settings) -> Settings {
        Settings {
            configurators: 2,
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
    let plan = "applying the samples; the leader is killed after the first node finishes";
    apply_samples_until(
        m,
        lab,
        samples,
        plan,
        "a leader and the first node done",
        |o| {
            o.newest().is_some_and(|r| {
                !o.provisioned_on(r.metadata.name.as_deref().unwrap_or_default())
                    .is_empty()
            })
        },
    )
    .await?;
    let leader = lab.leader().await?.unwrap_or_default();
    m.say(&format!("killing the leader {leader} with SIGKILL"));
    lab.kill_configurator(&leader).await?;
    let target = settle_newest(m, lab).await?;
    let new_leader = lab.leader().await?.unwrap_or_default();
    summary.check(
        "the standby took over",
        !new_leader.is_empty() && new_leader != leader,
        format!("{leader} → {new_leader}"),
    );
    all_provisioned(summary, m, lab, &target);
    start_traffic(summary, m, lab, samples).await?;
    Ok(())
}
