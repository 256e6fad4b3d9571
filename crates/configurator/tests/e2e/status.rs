//! What a revision's status and Events tell tools that know nothing of netrollout: kstatus
//! conditions read by the real kubectl, written without extra writes, and the Events of a prune
//! and of an ignored retry.

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};
use netrollout_api::{
    NetworkConfigRevision, READY_CONDITION, RECONCILING_CONDITION, RETRY_ANNOTATION, RevisionPhase,
    STALLED_CONDITION,
};

use crate::agents::{Agents, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, assert_event, condition, first_good, names, nodes, succeeded_after};

#[tokio::test]
async fn kubectl_wait_for_ready_returns_when_the_rollout_succeeded_and_a_settled_fleet_costs_no_writes()
-> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(150)));
    let cfg = lab.configurator(&["--update-limit=1"]);
    lab.set_table("extra", 100).await?;
    eventually(Duration::from_secs(10), || async {
        Ok(!lab.revisions().await?.is_empty())
    })
    .await?;
    let first = lab.revisions().await?.remove(0);
    let name = first.metadata.name.clone().unwrap();
    let ncr_ref = format!("ncr/{name}");
    // The rollout takes three waves: kubectl waits, and returns once it succeeded.
    lab.ok(&["wait", "--for=condition=Ready", &ncr_ref, "--timeout=30s"])
        .await;
    let ncrs = Api::<NetworkConfigRevision>::all(lab.client.clone());
    let done = ncrs.get(&name).await?;
    assert_eq!(
        done.status.as_ref().and_then(|s| s.phase),
        Some(RevisionPhase::Succeeded),
        "Ready only once Succeeded"
    );
    let ready = condition(&done, READY_CONDITION);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "Succeeded")
    );
    assert!(ready.message.contains(&name), "{}", ready.message);
    assert_eq!(condition(&done, RECONCILING_CONDITION).status, "False");
    assert_eq!(condition(&done, STALLED_CONDITION).status, "False");
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(5)).await?;

    // Settled: passes keep running (every 200 ms) and write nothing.
    eventually(Duration::from_secs(5), || async {
        let r = ncrs.get(&name).await?;
        Ok(r.status.and_then(|s| s.progress).as_deref() == Some("3/3"))
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cfg.metrics.api_writes.get();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        cfg.metrics.api_writes.get(),
        before,
        "no write when nothing changed"
    );

    // An undo raises the old revision's sequence, a new generation: the conditions follow it.
    lab.set_table("extra", 101).await?;
    succeeded_after(&lab, 1).await?;
    lab.set_table("extra", 100).await?;
    eventually(Duration::from_secs(10), || async {
        let r = ncrs.get(&name).await?;
        let status = r.status.clone().unwrap_or_default();
        Ok(r.metadata.generation > first.metadata.generation
            && status.observed_generation == r.metadata.generation
            && status
                .conditions
                .iter()
                .all(|c| c.observed_generation == r.metadata.generation))
    })
    .await?;
    lab.ok(&["wait", "--for=condition=Ready", &ncr_ref, "--timeout=30s"])
        .await;
    cfg.stop().await
}

#[tokio::test]
async fn a_pruned_revision_and_an_ignored_retry_are_normal_events_that_name_the_revision() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=2", "--revision-history-limit=1"]);
    let old = first_good(&lab).await?;
    let old_name = old.metadata.name.clone().unwrap();
    // Two newer revisions: the first is then neither kept by the limit nor the revision a
    // node's dispatch record came from.
    let mut sequence = old.spec.sequence;
    for id in [101, 102] {
        lab.set_table("extra", id).await?;
        let newer = succeeded_after(&lab, sequence).await?;
        sequence = newer.spec.sequence;
    }
    eventually(Duration::from_secs(10), || async {
        let revs = lab.revisions().await?;
        Ok(revs.iter().all(|r| r.metadata.name != old.metadata.name))
    })
    .await?;
    let event = lab
        .event(
            "NetworkConfigRevision",
            &old_name,
            "Pruned",
            Duration::from_secs(10),
        )
        .await?;
    assert_event(&event, false, &[&old_name]);
    assert_eq!(
        event.regarding.and_then(|r| r.uid),
        old.metadata.uid,
        "about the pruned object"
    );

    // A retry asked of a revision that is not Failed is a decision too: ignored, with an Event.
    let newest = lab.revisions().await?.pop().unwrap();
    let newest_name = newest.metadata.name.clone().unwrap();
    let patch = serde_json::json!({ "metadata": { "annotations": { RETRY_ANNOTATION: "now" } } });
    Api::<NetworkConfigRevision>::all(lab.client.clone())
        .patch(&newest_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let ignored = lab
        .event(
            "NetworkConfigRevision",
            &newest_name,
            "RetryIgnored",
            Duration::from_secs(10),
        )
        .await?;
    assert_event(&ignored, false, &[&newest_name]);
    cfg.stop().await
}
