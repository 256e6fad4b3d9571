//! The fleet guard end to end: nodes' health (the agent's `TenantReachable` condition and
//! `status.health.failingChecks`) written as the agent writes it, the configurator with its
//! `--guard` flags against the lab API server.

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    NetworkConfigRevision, NodeNetworkConfig, RevisionPhase, TENANT_REACHABLE_CONDITION,
};

use crate::agents::{Agents, Outcome, Script};
use crate::lab::{Configurator, ConfiguratorLab as _, LabApi, R};
use crate::{all_provisioned, assert_event, first_good, has_table, names, nodes, succeeded_after};

const KIND: &str = "NetworkConfigRevision";

/// Agents take `slow` for configs with table 666 (a long wave) and 100ms for the others.
fn slow_table_666(slow: Duration) -> Script {
    std::sync::Arc::new(move |_, spec| {
        if has_table(spec, 666) {
            (slow, Outcome::Succeed)
        } else {
            (Duration::from_millis(100), Outcome::Succeed)
        }
    })
}

/// Writes `node`'s continuous health as its agent does: `TenantReachable` False naming the
/// `failing` checks, or True when none fail.
pub(crate) async fn set_health(lab: &LabApi, node: &str, failing: &[&str]) -> R {
    let api: Api<NodeNetworkConfig> = Api::all(lab.client.clone());
    let (status, reason, message) = netrollout_api::tenant_reachable(failing);
    let patch = serde_json::json!({ "status": {
        "health": { "failingChecks": failing },
        "conditions": [{
            "type": TENANT_REACHABLE_CONDITION,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": jiff::Timestamp::now().to_string(),
        }],
    }});
    api.patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Every node's agent reports its checks passing, and the configurator has had time to see it
/// (a regression counts only on a node seen healthy first; its passes follow watch events within
/// milliseconds, a second leaves room on a loaded machine).
async fn all_healthy(lab: &LabApi, count: usize) -> R {
    for i in 0..count {
        set_health(lab, &format!("n-{i}"), &[]).await?;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(())
}

/// Rewrites every message `revision`'s status and the nodes' `TenantReachable` conditions
/// carry (the revision's, its failed nodes', its conditions') to one that means nothing.
async fn reword_every_message(lab: &LabApi, revision: &str) -> R {
    const REWORDED: &str = "reworded: no program may read this";
    let revisions: Api<NetworkConfigRevision> = Api::all(lab.client.clone());
    let mut status = revisions.get_status(revision).await?.status.unwrap();
    status.message = Some(REWORDED.into());
    status
        .failed_nodes
        .iter_mut()
        .for_each(|f| f.message = REWORDED.into());
    status
        .conditions
        .iter_mut()
        .for_each(|c| c.message = REWORDED.into());
    let patch = serde_json::json!({ "status": status });
    revisions
        .patch_status(revision, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let configs: Api<NodeNetworkConfig> = Api::all(lab.client.clone());
    for nnc in lab.configs().await? {
        let Some(mut status) = nnc.status else {
            continue;
        };
        status
            .conditions
            .iter_mut()
            .for_each(|c| c.message = REWORDED.into());
        let patch = serde_json::json!({ "status": { "conditions": status.conditions } });
        let name = nnc.metadata.name.unwrap_or_default();
        configs
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}

/// Polls `find` every 50ms until it yields a name, for at most 10s.
async fn poll<F, Fut>(what: &str, mut find: F) -> R<String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = R<Option<String>>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(name) = find().await? {
            return Ok(name);
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "no {what} within 10s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The name of the first config whose spec is `revision`, once one is.
async fn first_dispatched(lab: &LabApi, revision: &str) -> R<String> {
    poll(&format!("node dispatched {revision}"), || async {
        let configs = lab.configs().await?;
        Ok(configs
            .iter()
            .find(|c| c.spec.revision == revision)
            .and_then(|c| c.metadata.name.clone()))
    })
    .await
}

/// The revision after `sequence` once it exists (any phase).
async fn next_revision(lab: &LabApi, sequence: i64) -> R<String> {
    poll(&format!("revision after sequence {sequence}"), || async {
        let revs = lab.revisions().await?;
        Ok(revs
            .iter()
            .find(|r| r.spec.sequence > sequence)
            .and_then(|r| r.metadata.name.clone()))
    })
    .await
}

/// The guard tests' fleet: `count` nodes whose agents take `slow` for table 666, a
/// configurator with update limit 1, a 20s apply timeout and `flags`, and the known-good start.
async fn guarded_fleet(
    lab: &LabApi,
    count: usize,
    slow: Duration,
    flags: &[&str],
) -> R<(Agents, Configurator, NetworkConfigRevision)> {
    nodes(lab, count).await?;
    let agents = Agents::start(lab.client.clone(), slow_table_666(slow));
    let mut args = vec!["--update-limit=1", "--apply-timeout=20s"];
    args.extend_from_slice(flags);
    let cfg = lab.configurator(&args);
    let good = first_good(lab).await?;
    Ok((agents, cfg, good))
}

/// Sets table 666 (the slow one): the revision after `sequence` it makes, and the first node
/// dispatched it.
async fn roll_out_666(lab: &LabApi, sequence: i64) -> R<(String, String)> {
    lab.set_table("extra", 666).await?;
    let revision = next_revision(lab, sequence).await?;
    let first = first_dispatched(lab, &revision).await?;
    Ok((revision, first))
}

#[tokio::test]
async fn an_untouched_node_regressing_during_a_wave_fails_the_revision_and_its_wave_goes_back() -> R
{
    let lab = LabApi::netrollout().await;
    let (agents, cfg, good) = guarded_fleet(&lab, 4, Duration::from_secs(2), &[]).await?;
    all_healthy(&lab, 4).await?;
    let good_name = good.metadata.name.clone().unwrap();

    let (bad_name, first) = roll_out_666(&lab, good.spec.sequence).await?;
    assert_eq!(first, "n-0", "the first wave is n-0 (fleet order)");
    // n-3 is untouched (dispatched last) and healthy: it regresses during n-0's wave.
    set_health(&lab, "n-3", &["tenant-blue-gw", "outside"]).await?;

    let bad = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(10))
        .await?;
    assert_eq!(bad.metadata.name.as_deref(), Some(bad_name.as_str()));
    let status = bad.status.clone().unwrap();
    let message = status.message.clone().unwrap_or_default();
    assert!(message.starts_with("fleet guard tripped"), "{message}");
    let n3 = status
        .failed_nodes
        .iter()
        .find(|f| f.node == "n-3")
        .unwrap_or_else(|| panic!("n-3 is a failed node: {:?}", status.failed_nodes));
    assert_eq!(n3.reason, "HealthRegressed");
    assert_eq!(n3.failing_checks, ["tenant-blue-gw", "outside"]);
    assert!(
        n3.message.contains("tenant-blue-gw, outside"),
        "{}",
        n3.message
    );
    let event = lab
        .event(KIND, &bad_name, "GuardTripped", Duration::from_secs(10))
        .await?;
    assert_event(
        &event,
        true,
        &[&bad_name, "n-3", "tenant-blue-gw", "outside", "n-0"],
    );
    assert_eq!(cfg.metrics.guard_trips.get(), 1);

    // Revert: n-0 (the wave) finishes its apply, then returns; nobody else ever got the
    // revision.
    all_provisioned(&lab, &names(4), &good_name, Duration::from_secs(20)).await?;
    let bad_pickups: Vec<String> = agents
        .pickups()
        .into_iter()
        .filter(|(_, r)| *r == bad_name)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        bad_pickups,
        vec!["n-0".to_string()],
        "halted within the wave"
    );
    assert_eq!(cfg.metrics.guard_trips.get(), 1, "one trip, told once");
    cfg.stop().await
}

#[tokio::test]
async fn with_the_guard_off_a_regressed_node_does_not_stop_the_rollout() -> R {
    let lab = LabApi::netrollout().await;
    let (_agents, cfg, good) =
        guarded_fleet(&lab, 3, Duration::from_millis(800), &["--guard=off"]).await?;
    let (next, _) = roll_out_666(&lab, good.spec.sequence).await?;
    all_healthy(&lab, 3).await?;
    set_health(&lab, "n-2", &["tenant-blue-gw"]).await?;
    let done = succeeded_after(&lab, good.spec.sequence).await?;
    assert_eq!(done.metadata.name.as_deref(), Some(next.as_str()));
    all_provisioned(&lab, &names(3), &next, Duration::from_secs(10)).await?;
    assert_eq!(cfg.metrics.guard_trips.get(), 0);
    cfg.stop().await
}

#[tokio::test]
async fn a_node_regressed_before_the_wave_never_trips_the_guard() -> R {
    let lab = LabApi::netrollout().await;
    let (_agents, cfg, good) = guarded_fleet(&lab, 3, Duration::from_millis(500), &[]).await?;
    all_healthy(&lab, 3).await?;
    set_health(&lab, "n-2", &["outside"]).await?;
    // The configurator has seen the regression before the next revision starts its wave.
    tokio::time::sleep(Duration::from_millis(500)).await;
    lab.set_table("extra", 666).await?;
    let done = succeeded_after(&lab, good.spec.sequence).await?;
    let name = done.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(10)).await?;
    // Still regressed all along (the agents' status writes leave the condition alone).
    let n2 = Api::<NodeNetworkConfig>::all(lab.client.clone())
        .get("n-2")
        .await?;
    let s = n2.status.unwrap();
    assert!(
        s.conditions
            .iter()
            .any(|c| c.type_ == TENANT_REACHABLE_CONDITION && c.status == "False"),
        "{s:?}"
    );
    assert_eq!(cfg.metrics.guard_trips.get(), 0);
    cfg.stop().await
}

#[tokio::test]
async fn with_guard_halt_a_trip_fails_the_revision_and_nothing_moves_afterwards() -> R {
    let lab = LabApi::netrollout().await;
    let (agents, cfg, good) =
        guarded_fleet(&lab, 3, Duration::from_secs(1), &["--guard=halt"]).await?;
    all_healthy(&lab, 3).await?;
    let good_name = good.metadata.name.clone().unwrap();
    let (bad_name, first) = roll_out_666(&lab, good.spec.sequence).await?;
    assert_eq!(first, "n-0");
    set_health(&lab, "n-2", &["outside"]).await?;
    lab.newest_in(RevisionPhase::Failed, Duration::from_secs(10))
        .await?;
    let event = lab
        .event(KIND, &bad_name, "GuardTripped", Duration::from_secs(10))
        .await?;
    assert_event(&event, true, &["n-2", "outside", "--guard=halt"]);
    // Every sentence is reworded, the revision's and the nodes' health alike: the halt stands
    // on words and fields, never on a message.
    reword_every_message(&lab, &bad_name).await?;
    // n-0 finishes its apply and stays; nobody else gets the revision, nobody goes back (many
    // passes later: the halt is read back from the revision's status, not remembered).
    all_provisioned(
        &lab,
        &["n-0".to_string()],
        &bad_name,
        Duration::from_secs(10),
    )
    .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let configs = lab.configs().await?;
    let on = |rev: &str| {
        let mut names: Vec<String> = configs
            .iter()
            .filter(|c| c.spec.revision == rev)
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        names.sort();
        names
    };
    assert_eq!(on(&bad_name), vec!["n-0".to_string()]);
    assert_eq!(on(&good_name), vec!["n-1".to_string(), "n-2".to_string()]);
    let bad_pickups = agents
        .pickups()
        .into_iter()
        .filter(|(_, r)| *r == bad_name)
        .count();
    assert_eq!(bad_pickups, 1);
    cfg.stop().await
}

#[tokio::test]
async fn a_node_whose_first_report_fails_its_checks_during_a_wave_never_trips_the_guard() -> R {
    // A freshly configured node fails its tenant checks until its peers are configured too: its
    // first report is no regression the configurator saw happen (the lab's first rollout).
    let lab = LabApi::netrollout().await;
    let (_agents, cfg, good) = guarded_fleet(&lab, 3, Duration::from_millis(800), &[]).await?;
    let (next, _) = roll_out_666(&lab, good.spec.sequence).await?;
    set_health(&lab, "n-2", &["icmp 10.0.0.3"]).await?;
    let done = succeeded_after(&lab, good.spec.sequence).await?;
    assert_eq!(done.metadata.name.as_deref(), Some(next.as_str()));
    all_provisioned(&lab, &names(3), &next, Duration::from_secs(10)).await?;
    assert_eq!(cfg.metrics.guard_trips.get(), 0);
    cfg.stop().await
}
