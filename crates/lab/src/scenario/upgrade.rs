//! `upgrade` (container mode): netrollout itself is upgraded while a revision rolls out. The
//! agent containers are replaced one node at a time, as the DaemonSet's rolling update
//! (`maxUnavailable: 1`) does: the old pod stopped with its grace period, the new image's
//! started, the next node only once it is ready. The first node replaced is one applying the
//! change, and its old container is killed at once (as when the grace period runs out or the
//! node's memory runs out: with SIGTERM the agent finishes its apply first): the new agent
//! recovers by its journal. Then netrollout is rolled back to the old image: every agent
//! restarts idle, on the revision it runs, and must write nothing to the kernel or FRR.

use std::time::Duration;

use anyhow::{Result, bail};
use futures::future::BoxFuture;
use netrollout_api::RevisionPhase;

use super::checks::all_provisioned;
use super::steps::{new_revision, rollout, settle};
use super::traffic_checks::{start_traffic, traffic_report};
use super::{Monitor, Scenario, Story, Summary};
use crate::cluster::Cluster;
use crate::settings::Settings;
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
         one killed mid-apply: the revision succeeds with no node failed, the killed agent\n\
         recovers by its journal, every agent runs the new image and is ready, untouched\n\
         networks lose no probe; rolled back idle, no agent writes to the kernel or FRR;\n\
         an agent stopped with SIGSTOP fails its liveness probe and is restarted"
    }

    fn in_all(&self) -> bool {
        false
    }

    fn settings(&self, base: Settings) -> Settings {
        Settings {
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
    if !lab.settings().containers {
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
    // A node whose agent reports Provisioning: it wrote its journal and applies.
    let applying = |o: &crate::progress::Observed| -> Option<String> {
        (o.configs.iter())
            .find(|c| {
                c.status.as_ref().is_some_and(|s| {
                    s.phase == Some(netrollout_api::NodePhase::Provisioning)
                        && s.observed_revision.as_deref() == Some(next.as_str())
                })
            })
            .and_then(|c| c.metadata.name.clone())
    };
    m.until(lab, "a node applying the change", settle(lab), |o| {
        applying(o).is_some()
    })
    .await?;
    let first = applying(&m.now).unwrap_or_default();
    let mut order = vec![first.clone()];
    order.extend(nodes.iter().filter(|n| **n != first).cloned());
    for (i, node) in order.iter().enumerate() {
        m.observe(lab).await?;
        let done = m.now.provisioned_on(&next).contains(&node.as_str());
        let state = match (m.now.in_flight().contains(&node.as_str()), done) {
            (true, _) => "mid-apply",
            (false, true) => "idle, on the new revision",
            (false, false) => "idle",
        };
        // The first is killed at once; the others stop with their grace period.
        let kill = i == 0;
        let how = if kill {
            "killed at once"
        } else {
            "stopped with its grace period"
        };
        m.say(&format!("replacing the agent of {node} ({state}; {how})"));
        lab.replace_agent(node, &next_image, Duration::from_secs(60), kill)
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
    let log = std::fs::read_to_string(lab.log_path(&first)).unwrap_or_default();
    let recovered = log.contains("journal says an apply was interrupted");
    summary.check(
        "the agent killed mid-apply recovered by its journal: its node runs the revision",
        recovered && m.now.provisioned_on(&next).contains(&first.as_str()),
        format!(
            "{first}: {} the recovery in its log",
            if recovered { "found" } else { "did not find" }
        ),
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
    traffic_report(summary, m, lab, (t0, t1), &[changed.as_str()], &[]).await;
    idle_restarts(summary, m, lab, &old).await?;
    liveness_drill(summary, m, lab, &next).await
}

/// The kubelet's side: an agent whose process is stopped (SIGSTOP) stops answering its liveness
/// probe; after `failureThreshold` failures the container is stopped (SIGTERM, SIGKILL after the
/// grace period) and started again, and the node keeps its revision.
async fn liveness_drill(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &mut Cluster,
    revision: &str,
) -> Result<()> {
    let node = lab.node_names()[0].clone();
    let Some(pod) = lab.agent_pod(&node) else {
        bail!("{node} has no agent pod");
    };
    let name = pod.name.clone();
    lab.drilled.insert(name.clone());
    let pid = crate::pods::pid(&lab.containers_conf(), &name).await?;
    m.say(&format!(
        "stopping the agent process of {node} (SIGSTOP, pid {pid}): its liveness probe must fail and the kubelet restart it"
    ));
    let stopped = std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()?;
    if !stopped.success() {
        bail!("kill -STOP {pid} failed");
    }
    let t0 = std::time::Instant::now();
    let deadline = t0 + Duration::from_secs(150);
    let restarts = loop {
        let status = (lab.agent_pod(&node))
            .map(|p| p.status())
            .unwrap_or_default();
        if !status.restarts.is_empty() && status.ready {
            break status.restarts;
        }
        if std::time::Instant::now() > deadline {
            break status.restarts;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    m.say(&format!(
        "{node}'s agent restarted and ready again {:.0} s after the stop",
        t0.elapsed().as_secs_f64()
    ));
    let why: Vec<&str> = restarts.iter().map(|r| r.1.as_str()).collect();
    summary.check(
        "a stopped agent failed its liveness probe and the kubelet restarted it once; it is ready again",
        why.len() == 1
            && why[0].contains("liveness probe failed")
            && lab.agent_pod(&node).is_some_and(|p| p.status().ready),
        why.join("; "),
    );
    m.observe(lab).await?;
    summary.check(
        "the node kept its revision through the restart",
        m.now.provisioned_on(revision).contains(&node.as_str()),
        node,
    );
    Ok(())
}

/// Netrollout rolled back to `image` once the revision succeeded: every agent restarts idle,
/// on the revision it runs, and must write nothing (no apply, no FRR write).
async fn idle_restarts(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &mut Cluster,
    image: &str,
) -> Result<()> {
    m.say(&format!(
        "rolling every agent back to {image}: each restarts idle"
    ));
    let idle = lab.node_names();
    for node in &idle {
        lab.replace_agent(node, image, Duration::from_secs(60), false)
            .await?;
    }
    // Each agent has read its node config and its state by now; what it would write, it wrote.
    tokio::time::sleep(Duration::from_secs(3)).await;
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
        let (frr, applies, restores) = (
            count("netrollout_agent_frr_writes_total"),
            count("netrollout_agent_applies_total"),
            count("netrollout_agent_restores_total"),
        );
        if frr != 0.0 || applies != 0.0 || restores != 0.0 {
            wrote.push(format!(
                "{node}: {frr} FRR writes, {applies} applies, {restores} restores"
            ));
        }
    }
    summary.check(
        "agents restarted idle wrote nothing: no apply, restore or FRR write since their start",
        !idle.is_empty() && wrote.is_empty(),
        if wrote.is_empty() {
            format!("{} idle replacement(s): {}", idle.len(), idle.join(", "))
        } else {
            wrote.join("; ")
        },
    );
    Ok(())
}
