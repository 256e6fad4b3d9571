//! Bake time (`--bake-time`): a committed node holds its slot until it stayed healthy that
//! long, the revision says it bakes, and a regression within the bake fails the revision.

use std::time::{Duration, Instant};

use netrollout_api::reason::{BAKE_REGRESSED, BAKING};
use netrollout_api::{RECONCILING_CONDITION, RevisionPhase};

use crate::agents::{Agents, healthy};
use crate::guard::set_health;
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, first_good, names, nodes};

#[tokio::test]
async fn with_a_bake_time_each_node_holds_its_slot_and_the_revision_says_it_bakes() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(100)));
    let bake = Duration::from_secs(2);
    let cfg = lab.configurator(&["--update-limit=1", "--bake-time=2s"]);
    let started = Instant::now();
    lab.set_table("extra", 100).await?;
    // While its first node bakes, the revision says so in a typed field and its condition.
    let baking = eventually(Duration::from_secs(10), || async {
        let revs = lab.revisions().await?;
        Ok(revs.iter().any(|r| {
            r.status.as_ref().is_some_and(|s| {
                s.bake.is_some()
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == RECONCILING_CONDITION && c.reason == BAKING)
            })
        }))
    })
    .await;
    baking.map_err(|e| anyhow::anyhow!("the revision never said it bakes: {e}"))?;
    let rev = lab.revisions().await?.remove(0);
    let status = rev.status.clone().unwrap();
    let reconciling = status
        .conditions
        .iter()
        .find(|c| c.type_ == RECONCILING_CONDITION)
        .unwrap();
    assert!(
        reconciling.message.starts_with("baking, ") && reconciling.message.contains(" s left"),
        "{}",
        reconciling.message
    );
    assert_eq!(status.bake.as_ref().map(|b| b.nodes), Some(1));
    let done = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let name = done.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(5)).await?;
    // One slot, each node baked before the next went, and the last before Succeeded.
    assert!(
        started.elapsed() >= bake * 3,
        "Succeeded after {:?}, before three bakes of {bake:?}",
        started.elapsed()
    );
    assert_eq!(agents.max_in_flight(), 1);
    let done = lab.revisions().await?.remove(0);
    assert_eq!(done.status.and_then(|s| s.bake), None, "no bake left");
    cfg.stop().await
}

#[tokio::test]
async fn a_regression_during_the_bake_fails_the_revision_and_its_nodes_go_back() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(100)));
    let cfg = lab.configurator(&["--update-limit=2", "--bake-time=3s", "--guard=off"]);
    let good = first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();
    for n in names(2) {
        set_health(&lab, &n, &[]).await?;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    lab.set_table("extra", 101).await?;
    // Both nodes committed it and bake; one's tenant checks fail within the bake.
    eventually(Duration::from_secs(10), || async {
        let revs = lab.revisions().await?;
        Ok(revs.last().is_some_and(|r| {
            r.spec.sequence == 2 && r.status.as_ref().is_some_and(|s| s.bake.is_some())
        }))
    })
    .await?;
    set_health(&lab, "n-0", &["tenant-ping"]).await?;
    let bad = lab
        .newest_in(RevisionPhase::Failed, Duration::from_secs(10))
        .await?;
    let failed = bad.status.clone().unwrap().failed_nodes;
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(
        (failed[0].node.as_str(), failed[0].reason.as_str()),
        ("n-0", BAKE_REGRESSED)
    );
    assert_eq!(failed[0].failing_checks, vec!["tenant-ping".to_string()]);
    set_health(&lab, "n-0", &[]).await?;
    all_provisioned(&lab, &names(2), &good_name, Duration::from_secs(20)).await?;
    cfg.stop().await
}
