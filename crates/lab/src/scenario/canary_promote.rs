//! `canary-promote`: rollout policy as large operators run it, on real agents. The lab's nodes
//! stand in racks of two (`lab.netrollout.io/rack`); the configurator runs with
//! `--pause-after=canary`, `--domain-key` on the rack label and a bake time. The samples stop
//! after the canary until a person promotes them with `kubectl netrollout promote`; then they go
//! rack-aware, never two nodes of a rack at once, each node baked before the next of its rack.

use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use netrollout_api::reason::AWAITING_PROMOTION;
use netrollout_api::{CANARY_LABEL, RevisionPhase};

use super::checks::all_provisioned;
use super::steps::{new_revision, settle};
use super::traffic_checks::start_traffic;
use super::{Scenario, Story};
use crate::cluster::{Cluster, RACK_LABEL};
use crate::settings::{Settings, UpdateLimit};

/// How long each node bakes.
const BAKE: Duration = Duration::from_secs(3);

/// The canary pause, the promote, racks and the bake.
#[derive(Debug)]
pub struct CanaryPromote;

impl Scenario for CanaryPromote {
    fn name(&self) -> &'static str {
        "canary-promote"
    }

    fn about(&self) -> &'static str {
        "nodes in racks of two; --pause-after=canary, --domain-key on the rack label and\n\
         --bake-time=3s: the samples stop after the canary (AwaitingPromotion, held past the\n\
         bake and the timeouts) until `kubectl netrollout promote`, which records who; then\n\
         never two nodes of a rack in flight, each baked 3 s before the next of its rack"
    }

    /// On demand only (docs/testing.md): `all` (CI's container suite) leaves it out to keep
    /// within CI's time budget; the planner's rules it shows are proven by the simulator and
    /// the configurator's e2e tests.
    fn in_all(&self) -> bool {
        false
    }

    /// Four nodes (two racks), two at a time, and the policy flags.
    fn settings(&self, base: Settings) -> Settings {
        let mut flags = base.configurator_flags.clone();
        flags.extend(
            [
                ("--pause-after", "canary".to_string()),
                ("--domain-key", RACK_LABEL.to_string()),
                ("--bake-time", crate::settings::flag(BAKE)),
            ]
            .map(|(k, v)| (k.to_string(), v)),
        );
        Settings {
            nodes: base.nodes.max(4),
            update_limit: UpdateLimit::Count(2),
            configurator_flags: flags,
            ..base
        }
    }

    fn play<'a>(&'a self, story: &'a mut Story<'_>) -> BoxFuture<'a, Result<()>> {
        Box::pin(play(story))
    }
}

async fn play(story: &mut Story<'_>) -> Result<()> {
    let (m, lab, summary, samples) = story.parts();
    let canary = lab.node_names().last().cloned().unwrap_or_default();
    let label = serde_json::json!({ "metadata": { "labels": { CANARY_LABEL: "true" } } });
    Api::<Node>::all(lab.client.clone())
        .patch(&canary, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .with_context(|| format!("labelling {canary} a canary"))?;
    m.say(&format!("{canary} is the canary; applying the samples"));
    let t0 = crate::traffic::now_ms();
    lab.apply(samples).await?;
    let rev = new_revision(m, lab, "").await?;
    m.until(lab, "the canary gate", settle(lab), |o| {
        (o.revisions.iter()).any(|r| {
            r.metadata.name.as_deref() == Some(rev.as_str())
                && r.status
                    .as_ref()
                    .and_then(|s| s.hold.as_ref())
                    .is_some_and(|h| h.reason == AWAITING_PROMOTION)
        })
    })
    .await?;
    // Held past the canary's apply and bake: nothing more moves, nothing fails.
    m.until(lab, "the canary to finish", settle(lab), |o| {
        o.provisioned_on(&rev).contains(&canary.as_str())
    })
    .await?;
    tokio::time::sleep(BAKE + Duration::from_secs(2)).await;
    m.observe(lab).await?;
    let given = m.dispatched(&rev);
    summary.check(
        "only the canary got the revision before the promote",
        given.len() == 1 && given.contains(&canary),
        format!("{given:?}"),
    );
    summary.check(
        "the held revision is still Progressing (a hold never times out)",
        m.now.phase_of(&rev) == Some(RevisionPhase::Progressing),
        format!("{:?}", m.now.phase_of(&rev)),
    );
    let out = promote(lab, &rev).await?;
    m.say(out.trim());
    m.until(lab, "the promoted revision to succeed", settle(lab), |o| {
        o.phase_of(&rev) == Some(RevisionPhase::Succeeded)
    })
    .await?;
    let t1 = crate::traffic::now_ms();
    all_provisioned(summary, m, lab, &rev);
    let promoted_by = (m.now.revisions.iter())
        .find(|r| r.metadata.name.as_deref() == Some(rev.as_str()))
        .and_then(|r| r.status.as_ref()?.promotions.first().map(|p| p.by.clone()));
    summary.check(
        "the revision's status records who promoted it",
        promoted_by.as_deref() == Some(netrollout_lab_apiserver::auth::ADMIN_USER),
        format!("{promoted_by:?}"),
    );
    rack_checks(summary, m, lab, (t0, t1));
    start_traffic(summary, m, lab, samples).await?;
    Ok(())
}

/// Runs `kubectl-netrollout promote REV` (the plugin built beside the lab) as the lab's admin.
async fn promote(lab: &Cluster, rev: &str) -> Result<String> {
    let plugin = lab.settings().bin_dir.join("kubectl-netrollout");
    let out = tokio::process::Command::new(&plugin)
        .arg("--kubeconfig")
        .arg(lab.kubeconfig())
        .args(["promote", rev])
        .output()
        .await
        .with_context(|| {
            format!(
                "running {} (build it: cargo build --bins)",
                plugin.display()
            )
        })?;
    anyhow::ensure!(
        out.status.success(),
        "kubectl netrollout promote {rev} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Per rack, the nodes' apply windows never overlap, and each starts at least the bake time
/// (less a second of clock and watch slack) after the one before ended.
fn rack_checks(summary: &mut super::Summary, m: &super::Monitor, lab: &Cluster, span: (u64, u64)) {
    let mut racks: std::collections::BTreeMap<String, Vec<(u64, u64)>> = Default::default();
    for n in lab.node_names() {
        let rack = crate::cluster::rack_of(lab, &n);
        racks
            .entry(rack)
            .or_default()
            .extend(m.windows(&n, span.0, span.1));
    }
    let min_gap = BAKE.as_millis() as u64 - 1000;
    let mut bad = Vec::new();
    for (rack, mut w) in racks {
        w.sort_unstable();
        for pair in w.windows(2) {
            let gap = pair[1].0.saturating_sub(pair[0].1);
            if pair[1].0 < pair[0].1 || gap < min_gap {
                bad.push(format!("{rack}: {:?} then {:?}", pair[0], pair[1]));
            }
        }
    }
    summary.check(
        "never two nodes of a rack in flight, each baked before the next of its rack",
        bad.is_empty(),
        if bad.is_empty() {
            format!("bake {}s, one node per rack at a time", BAKE.as_secs())
        } else {
            bad.join("; ")
        },
    );
}
