//! The tenant-traffic checks scenarios share: start the workloads and their ping streams, and
//! report loss per network and node around a rollout.

use std::time::Duration;

use anyhow::Result;

use super::Monitor;
use super::checks::Summary;
use crate::cluster::Cluster;
use crate::progress;
use crate::traffic::{self, Loss};

/// How long the traffic report watches after a rollout ends.
const AFTER: Duration = Duration::from_secs(3);

/// Checks that every node's agent reports the FRR daemons the lab starts
/// ([`crate::frr::DAEMONS`]) running, waiting for the reports as long as traffic may take to
/// converge; stops the story with the nodes and what they lack otherwise (a story would only be
/// held later: the configurator's pre-flight keeps a `BGPPeering` with `enableBFD` from a node
/// whose agent reported bfdd missing).
pub(super) async fn frr_daemons(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &Cluster,
) -> Result<()> {
    let names: Vec<&str> = crate::frr::DAEMONS.iter().map(|d| d.as_str()).collect();
    let what = format!("every node's FRR runs {}", names.join(" and "));
    let waited = m
        .until(
            lab,
            &format!("{what} (its agent's capabilities)"),
            lab.converge(),
            |o| o.frr_lacking(&crate::frr::DAEMONS).is_empty(),
        )
        .await;
    let lacking: Vec<String> = (m.now.frr_lacking(&crate::frr::DAEMONS).iter())
        .map(|(node, why)| format!("{node}: {why}"))
        .collect();
    let detail = if lacking.is_empty() {
        format!("every agent reports {} present", names.join(", "))
    } else {
        lacking.join("; ")
    };
    summary.check(&what, waited.is_ok() && lacking.is_empty(), detail.clone());
    if let Err(e) = waited {
        dumped(m, lab, "frr-daemons-missing").await;
        anyhow::bail!("{what}: not so ({detail}; {e})");
    }
    Ok(())
}

/// Attaches workloads, starts the ping streams and checks full reachability, after checking
/// every node's FRR daemons ([`frr_daemons`]).
pub(super) async fn start_traffic(
    summary: &mut Summary,
    m: &mut Monitor,
    lab: &mut Cluster,
    objects: &[kube::api::DynamicObject],
) -> Result<()> {
    frr_daemons(summary, m, lab).await?;
    lab.start_traffic(objects).await?;
    let nets: Vec<String> = lab
        .traffic
        .networks
        .iter()
        .map(|n| n.name.clone())
        .collect();
    m.say(&format!(
        "tenant traffic: workloads on {}, {} pair(s), {} probes/s each",
        nets.join(", "),
        lab.traffic.pairs().len(),
        traffic::RATE
    ));
    let missing = lab.traffic.wait_reachable(lab.converge()).await;
    m.say(&format!(
        "tenant traffic: {}",
        if missing.is_empty() {
            "every pair answers".to_string()
        } else {
            format!("{} pair(s) without replies", missing.len())
        }
    ));
    if !missing.is_empty() {
        dumped(m, lab, "unreachable-at-start").await;
    }
    summary.check(
        "full tenant reachability",
        missing.is_empty() && lab.traffic.running() > 0,
        reachability_detail(lab, &missing),
    );
    Ok(())
}

/// Dumps every node's FRR and VRF routes to the logs and says where.
async fn dumped(m: &Monitor, lab: &Cluster, why: &str) {
    let files = lab.dump_frr(why).await;
    m.say(&format!(
        "FRR and VRF routes of every node: {}",
        (files.iter())
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ));
}

fn reachability_detail(lab: &Cluster, missing: &[traffic::Pair]) -> String {
    if missing.is_empty() {
        format!(
            "{} pair(s) on {} network(s), every probe answered for 2 s",
            lab.traffic.pairs().len(),
            lab.traffic.networks.len()
        )
    } else {
        missing
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Prints loss per network and node — before the change, while each node applied, during the
/// rollout `window` and after it — and checks: networks not in `changed` lost nothing during the
/// rollout; with `first_wave` given, pairs not touching those nodes lost nothing either; every
/// pair answers again at the end.
pub(super) async fn traffic_report(
    summary: &mut Summary,
    m: &Monitor,
    lab: &Cluster,
    window: (u64, u64),
    changed: &[&str],
    first_wave: &[&str],
) {
    let (t0, t1) = window;
    // Some probes after the rollout, then until every pair answers again.
    tokio::time::sleep(AFTER).await;
    let missing = lab.traffic.wait_reachable(lab.converge()).await;
    let end = traffic::now_ms().saturating_sub(traffic::PROBE_TIMEOUT.as_millis() as u64);
    let t = &lab.traffic;
    let mut rows = vec![vec![
        "KIND".to_string(),
        "NETWORK".into(),
        "NODE".into(),
        "BEFORE".into(),
        "WHILE IT APPLIED".into(),
        "ROLLOUT".into(),
        "AFTER".into(),
    ]];
    let mut nodes: Vec<String> = t.pairs().into_iter().map(|p| p.from).collect();
    nodes.sort();
    nodes.dedup();
    let flows = t.flows();
    for (kind, net) in &flows {
        for node in &nodes {
            let applied =
                m.windows(node, t0, t1)
                    .into_iter()
                    .fold(Loss::default(), |acc, (a, b)| {
                        let l = t.node_loss(net, node, a, b);
                        Loss {
                            sent: acc.sent + l.sent,
                            lost: acc.lost + l.lost,
                        }
                    });
            rows.push(vec![
                kind.to_string(),
                net.clone(),
                node.clone(),
                t.node_loss(net, node, 0, t0).to_string(),
                applied.to_string(),
                t.node_loss(net, node, t0, t1).to_string(),
                t.node_loss(net, node, t1, end).to_string(),
            ]);
        }
    }
    m.say("tenant probes lost/sent per kind, network and node (a node counts the pairs it sends or answers; routed: the VRF's type-5 flows, to the other nodes' routed workloads and to the outside):");
    for line in progress::table(&rows).lines() {
        crate::out!("           {line}");
    }
    for (kind, net) in flows.iter().filter(|(_, n)| !changed.contains(&n.as_str())) {
        let l = t.loss(t0, t1, |p| p.network == *net);
        if !changed.is_empty() {
            summary.check(
                &format!("untouched network {net} ({kind}) lost no probe during the rollout"),
                l.lost == 0 && l.sent > 0,
                format!("{l} lost/sent"),
            );
        }
    }
    if !first_wave.is_empty() {
        let l = t.loss(t0, t1, |p| {
            !first_wave.contains(&p.from.as_str()) && !first_wave.contains(&p.to.as_str())
        });
        summary.check(
            "tenant loss confined to the first wave's nodes",
            l.lost == 0 && l.sent > 0,
            format!(
                "pairs between other nodes: {l} lost/sent; first wave {}",
                first_wave.join(", ")
            ),
        );
    }
    if !missing.is_empty() {
        dumped(m, lab, "unreachable-at-end").await;
    }
    summary.check(
        "full tenant reachability at the end",
        missing.is_empty() && lab.traffic.running() > 0,
        reachability_detail(lab, &missing),
    );
}
