//! Failure domains (`--domain-key`): racks of nodes under a per-rack cap, racks one after the
//! other, and a budget of failed racks, through the configurator's flags and the real API.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use netrollout_api::RevisionPhase;

use crate::agents::{self, Agents};
use crate::lab::{ConfiguratorLab as _, LabApi, R};
use crate::{all_provisioned, has_table};

const RACK: &str = "example.com/rack";

/// Racks `a` and `b` of `per_rack` nodes each: `a-0`, `a-1`, …, `b-0`, …; returns every name.
async fn racks(lab: &LabApi, per_rack: usize) -> R<Vec<String>> {
    let mut names = Vec::new();
    for rack in ["a", "b"] {
        for i in 0..per_rack {
            let name = format!("{rack}-{i}");
            lab.add_node(&name, &[(RACK, rack)], true).await?;
            names.push(name);
        }
    }
    Ok(names)
}

/// The most nodes of one rack (the name's prefix) that applied together.
fn most_of_one_rack(together: &[Vec<String>]) -> usize {
    together
        .iter()
        .flat_map(|set| ["a-", "b-"].map(|rack| set.iter().filter(|n| n.starts_with(rack)).count()))
        .max()
        .unwrap_or(0)
}

fn slow(latency: Duration) -> agents::Script {
    agents::healthy(latency)
}

#[tokio::test]
async fn with_a_domain_key_no_two_nodes_of_a_rack_apply_at_once_whatever_the_update_limit() -> R {
    let lab = LabApi::netrollout().await;
    let all = racks(&lab, 3).await?;
    let agents = Agents::start(lab.client.clone(), slow(Duration::from_millis(300)));
    let cfg = lab.configurator(&["--update-limit=6", &format!("--domain-key={RACK}")]);
    lab.set_table("extra", 100).await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let name = rev.metadata.name.clone().unwrap();
    all_provisioned(&lab, &all, &name, Duration::from_secs(5)).await?;
    let together = agents.together();
    assert_eq!(most_of_one_rack(&together), 1, "{together:?}");
    assert_eq!(
        agents.max_in_flight(),
        2,
        "one node of each rack at a time, both racks at once: {together:?}"
    );
    cfg.stop().await
}

#[tokio::test]
async fn in_sequence_a_rack_finishes_before_the_next_one_starts() -> R {
    let lab = LabApi::netrollout().await;
    let all = racks(&lab, 2).await?;
    let agents = Agents::start(lab.client.clone(), slow(Duration::from_millis(200)));
    let cfg = lab.configurator(&[
        "--update-limit=4",
        &format!("--domain-key={RACK}"),
        "--max-in-flight-per-domain=2",
        "--domain-order=sequential",
    ]);
    lab.set_table("extra", 100).await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let name = rev.metadata.name.clone().unwrap();
    all_provisioned(&lab, &all, &name, Duration::from_secs(5)).await?;
    let racks_in_order: Vec<char> = agents
        .pickups()
        .iter()
        .map(|(n, _)| n.chars().next().unwrap())
        .collect();
    let first = racks_in_order[0];
    let switched = racks_in_order.iter().position(|r| *r != first).unwrap();
    assert!(
        racks_in_order[switched..].iter().all(|r| *r != first),
        "one rack after the other: {racks_in_order:?}"
    );
    let together = agents.together();
    assert!(
        together.iter().all(|set| set
            .iter()
            .all(|n| n.starts_with(set[0].as_str().split('-').next().unwrap()))),
        "never two racks applying at once: {together:?}"
    );
    assert_eq!(
        most_of_one_rack(&together),
        2,
        "the rack's cap is used: {together:?}"
    );
    cfg.stop().await
}

#[tokio::test]
async fn a_failure_in_a_second_rack_fails_the_revision_within_the_node_budget() -> R {
    let lab = LabApi::netrollout().await;
    let all = racks(&lab, 2).await?;
    let breaks = Arc::new(AtomicBool::new(true));
    let on = breaks.clone();
    // Table 101 fails on a-0 and b-0 (the first node of each rack).
    let script: agents::Script = Arc::new(move |node, spec| {
        let fail = has_table(spec, 101) && node.ends_with("-0") && on.load(Ordering::SeqCst);
        let outcome = if fail {
            agents::Outcome::Fail
        } else {
            agents::Outcome::Succeed
        };
        (Duration::from_millis(100), outcome)
    });
    let _agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&[
        "--update-limit=4",
        "--max-failures=3",
        &format!("--domain-key={RACK}"),
        "--max-failed-domains=1",
    ]);
    lab.set_table("extra", 100).await?;
    let good = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let good_name = good.metadata.name.clone().unwrap();
    lab.set_table("extra", 101).await?;
    let bad = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(30))
        .await?;
    let status = bad.status.clone().unwrap();
    let mut failed: Vec<&str> = status
        .failed_nodes
        .iter()
        .map(|f| f.node.as_str())
        .collect();
    failed.sort_unstable();
    assert_eq!(failed, ["a-0", "b-0"], "two nodes, within --max-failures=3");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("--max-failed-domains=1"),
        "the message names the domain budget: {message}"
    );
    all_provisioned(&lab, &all, &good_name, Duration::from_secs(20)).await?;
    breaks.store(false, Ordering::SeqCst);
    cfg.stop().await
}
