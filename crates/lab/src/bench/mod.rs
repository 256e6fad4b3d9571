//! The lab benchmark (`netrollout-lab bench`, a `hack/bench.sh` row source): a rollout of a
//! one-network change (MTU on `vlan502`) across a lab with tenant traffic flowing. It reports the
//! wall time against the ideal — waves × the agents' mean apply+probe time, both measured in
//! the same run — and the tenant probes lost per node on the changed and the untouched networks;
//! then the API writes of the healthy fleet's continuous health over a steady window
//! ([`writes`]).

pub mod writes;

use std::time::Instant;

use anyhow::Result;
use netrollout_api::RevisionPhase;

use crate::cluster::Cluster;
use crate::inputs;
use crate::scenario::{self, Monitor};
use crate::traffic;

/// How long the healthy fleet's writes are counted.
const STEADY: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs the benchmark on a started lab; returns `hack/bench.sh` rows (area, benchmark,
/// measured, baseline, ratio, goal).
pub async fn run(lab: &mut Cluster) -> Result<Vec<[String; 6]>> {
    let mut m = Monitor::new(lab);
    let (objects, _) = inputs::initial(&inputs::Source::Samples, lab.vrf, lab.node_names().len())?;
    let good = scenario::rollout(&mut m, lab, &objects, "the samples").await?;
    lab.start_traffic(&objects).await?;
    let missing = lab
        .traffic
        .wait_reachable(std::time::Duration::from_secs(30))
        .await;
    anyhow::ensure!(
        missing.is_empty(),
        "tenant traffic never flowed: {missing:?}"
    );
    let changed = "vlan502";
    let change: Vec<_> = objects
        .iter()
        .filter(|o| o.metadata.name.as_deref() == Some(changed))
        .cloned()
        .map(|mut o| {
            o.data["spec"]["mtu"] = serde_json::json!(1400);
            o
        })
        .collect();
    anyhow::ensure!(!change.is_empty(), "the samples have no {changed}");
    let t0 = traffic::now_ms();
    let started = Instant::now();
    lab.apply(&change).await?;
    let next = scenario::new_revision(&mut m, lab, &good).await?;
    m.until(
        lab,
        "the change to succeed",
        std::time::Duration::from_secs(600),
        |o| o.phase_of(&next) == Some(RevisionPhase::Succeeded),
    )
    .await?;
    let wall = started.elapsed().as_secs_f64();
    let t1 = traffic::now_ms();
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let applied: Vec<f64> = m
        .now
        .configs
        .iter()
        .filter_map(|c| {
            let msg = c.status.as_ref()?.message.as_deref()?;
            let ms = msg.split("applied and probed in ").nth(1)?;
            ms.split_whitespace().next()?.parse::<f64>().ok()
        })
        .collect();
    let nodes = lab.node_names().len();
    let limit = lab.settings().update_limit.resolve(nodes);
    let waves = nodes.div_ceil(limit);
    let mean = applied.iter().sum::<f64>() / applied.len().max(1) as f64 / 1000.0;
    let ideal = waves as f64 * mean;
    let per_node = |network: &str| {
        lab.node_names()
            .iter()
            .map(|n| lab.traffic.node_loss(network, n, t0, t1).lost)
            .max()
            .unwrap_or(0)
    };
    let untouched: Vec<String> = lab
        .traffic
        .networks
        .iter()
        .filter(|n| n.name != changed)
        .map(|n| n.name.clone())
        .collect();
    let untouched_lost = untouched.iter().map(|n| per_node(n)).max().unwrap_or(0);
    let sent = |networks: &[String]| {
        lab.traffic
            .loss(t0, t1, |p| networks.contains(&p.network))
            .sent
    };
    let name = format!("{nodes}-node one-network change, limit {limit}");
    let steady = writes::steady(lab, STEADY).await?;
    let [writes_node, writes_fleet] = steady.rows("lab bench");
    Ok(vec![
        writes_node,
        writes_fleet,
        [
            "lab".into(),
            format!("{name}: wall time"),
            format!("{wall:.1} s"),
            format!("ideal {ideal:.1} s ({waves} waves x {mean:.2} s apply+probe)"),
            format!("{:.2}x", wall / ideal.max(f64::EPSILON)),
            "-".into(),
        ],
        [
            "lab".into(),
            format!(
                "{name}: probes lost per node, untouched ({})",
                untouched.join(",")
            ),
            untouched_lost.to_string(),
            format!("of {} probes sent in the rollout", sent(&untouched)),
            "-".into(),
            "0".into(),
        ],
        [
            "lab".into(),
            format!("{name}: probes lost per node, changed ({changed})"),
            per_node(changed).to_string(),
            format!(
                "of {} probes sent in the rollout",
                sent(&[changed.to_string()])
            ),
            "-".into(),
            "-".into(),
        ],
    ])
}
