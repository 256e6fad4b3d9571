//! `upgrade` (container mode): netrollout itself is upgraded while a revision rolls out. The
//! agent containers are replaced one node at a time, as the DaemonSet's rolling update
//! (`maxUnavailable: 1`) does: the old pod stopped with its grace period, the new image's
//! started, the next node only once it is ready. The first node replaced is one applying the
//! change (its agent restarts mid-apply and recovers by its journal); nodes that already ran
//! the revision restart idle and must write nothing to the kernel or FRR.

use std::time::Duration;

use anyhow::{Result, bail};
use futures::future::BoxFuture;
use netrollout_api::RevisionPhase;

use super::checks::all_provisioned;
use super::steps::{new_revision, rollout, settle};
use super::traffic_checks::{start_traffic, traffic_report};
use super::{Scenario, Story};
use crate::cluster::Options;
use crate::{fabric, traffic};

/// The agents replaced node by node mid-rollout.
#[derive(Debug)]
pub struct Upgrade;

/// The tag the new version's image gets (the same build: the story is the replacement).
const NEXT_TAG: &str = "upgrade-next";

impl Scenario for Upgrade {
    fn name(&self) -> &'static str {
        "upgrade"
    }

    fn about(&self) -> &'static str {
        "(--containers) while a one-network change rolls out (limit 1), every agent\n\
         container is replaced node by node as a DaemonSet rolling update does, the first\n\
         one mid-apply: the revision succeeds with no node failed, the agent replaced\n\
         mid-apply recovers, the agents replaced idle write nothing to the kernel or FRR,\n\
         every agent runs the new image and is ready, untouched networks lose no probe"
    }

    fn in_all(&self) -> bool {
        false
    }

    fn options(&self, base: Options) -> Options {
        Options {
            containers: true,
            update_limit: crate::settings::UpdateLimit::Count(1),
            probe_hold: base.probe_hold.max(Duration::from_secs(4)),
            nodes: base.nodes.max(3),
            ..base
        }
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    if !lab.options().containers {
        bail!("upgrade replaces agent containers: run it with --containers");
    }
    let target = rollout(m, lab, samples, "the samples").await?;
    start_traffic(summary, m, lab, samples).await?;
    let nodes = lab.node_names();
    let old = (lab.agent_pod(&nodes[0]).map(|p| p.image.clone())).unwrap_or_default();
    let next_image = format!(
        "{}:{NEXT_TAG}",
        old.rsplit_once(':').map_or(old.as_str(), |x| x.0)
    );
    crate::pods::tag(&lab.containers_conf(), &old, &next_image).await?;
    let changed = (lab.traffic.networks.first().map(|n| n.name.clone())).unwrap_or_default();
    let objects: Vec<_> = (samples.iter())
        .filter(|o| o.metadata.name.as_deref() == Some(changed.as_str()))
        .cloned()
        .map(|mut o| {
            o.data["spec"]["mtu"] = serde_json::json!(1400);
            o
        })
        .collect();
    let t0 = traffic::now_ms();
    m.say(&format!(
        "applying MTU 1400 on {changed}; then replacing every agent with {next_image}"
    ));
    lab.apply(&objects).await?;
    let next = new_revision(m, lab, &target).await?;
    m.until(lab, "a node applying the change", settle(lab), |o| {
        !o.in_flight().is_empty()
    })
    .await?;
    let first = m.now.in_flight()[0].to_string();
    let mut order = vec![first.clone()];
    order.extend(nodes.iter().filter(|n| **n != first).cloned());
    let mut idle = Vec::new();
    for node in &order {
        m.observe(lab).await?;
        let done = m.now.provisioned_on(&next).contains(&node.as_str());
        let applying = m.now.in_flight().contains(&node.as_str());
        m.say(&format!(
            "replacing the agent of {node} ({})",
            if applying {
                "mid-apply"
            } else if done {
                "idle, on the new revision"
            } else {
                "idle"
            }
        ));
        if done {
            idle.push(node.clone());
        }
        lab.replace_agent(node, &next_image, Duration::from_secs(60))
            .await?;
        m.say(&format!(
            "the agent of {node} runs {next_image} and is ready"
        ));
    }
    m.until(lab, "the change to succeed", settle(lab), |o| {
        o.phase_of(&next) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    let t1 = traffic::now_ms();
    all_provisioned(summary, m, lab, &next);
    let failures = m.failures();
    summary.check(
        "no node failed while its agent was replaced",
        failures.is_empty(),
        format!("{failures:?}"),
    );
    summary.check(
        "the agent replaced mid-apply recovered: its node runs the revision",
        m.now.provisioned_on(&next).contains(&first.as_str()),
        first.clone(),
    );
    let stale: Vec<String> = (nodes.iter())
        .filter(|n| {
            !lab.agent_pod(n)
                .is_some_and(|p| p.image == next_image && p.status().ready)
        })
        .cloned()
        .collect();
    summary.check(
        "every agent runs the new image and is ready",
        stale.is_empty(),
        if stale.is_empty() {
            next_image.clone()
        } else {
            stale.join(", ")
        },
    );
    let mut wrote = Vec::new();
    for node in &idle {
        let index = (lab.node_indices().into_iter())
            .find(|(n, _)| n == node)
            .map_or(0, |(_, i)| i);
        let addr = std::net::SocketAddr::from((
            fabric::node_ip(index),
            crate::cluster::AGENT_METRICS_PORT,
        ));
        let text = crate::pods::fetch(addr, "/metrics").await?;
        let count = |name: &str| -> f64 {
            (text.lines())
                .filter(|l| l.starts_with(name))
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        };
        let (frr, applies) = (
            count("netrollout_agent_frr_writes_total"),
            count("netrollout_agent_applies_total"),
        );
        if frr != 0.0 || applies != 0.0 {
            wrote.push(format!("{node}: {frr} FRR writes, {applies} applies"));
        }
    }
    summary.check(
        "agents replaced idle wrote nothing: no apply, no FRR write since their start",
        !idle.is_empty() && wrote.is_empty(),
        if wrote.is_empty() {
            format!("{} idle replacement(s): {}", idle.len(), idle.join(", "))
        } else {
            wrote.join("; ")
        },
    );
    traffic_report(summary, m, lab, (t0, t1), &[changed.as_str()], &[]).await;
    Ok(())
}
