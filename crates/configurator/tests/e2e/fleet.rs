use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use netrollout_api::{
    CONTROL_CONFIGMAP, CONTROL_PAUSED_KEY, DEFAULT_NAMESPACE, NetworkConfigRevision,
    RECONCILING_CONDITION, RevisionPhase,
};

use crate::agents::{Agents, Outcome, healthy};
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, first_good, names, nodes};

#[tokio::test]
async fn a_node_joining_and_a_node_deleted_mid_rollout_neither_fail_nor_stall_it() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 5).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(300)));
    let cfg = lab.configurator(&["--update-limit=1"]);
    lab.set_table("extra", 100).await?;
    // Mid-rollout: one node leaves, one joins.
    eventually(Duration::from_secs(10), || async {
        Ok(!agents.pickups().is_empty())
    })
    .await?;
    lab.delete_node("n-4").await?;
    lab.add_node("late", &[], true).await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(30))
        .await?;
    let name = rev.metadata.name.clone().unwrap();
    let mut expected = names(4);
    expected.push("late".into());
    all_provisioned(&lab, &expected, &name, Duration::from_secs(5)).await?;
    assert_eq!(rev.status.unwrap().failed, 0);
    assert!(agents.max_in_flight() <= 1);
    cfg.stop().await
}

#[tokio::test]
async fn a_not_ready_node_is_skipped_and_caught_up_once_ready() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    lab.add_node("sick", &[], false).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=3"]);
    let rev = first_good(&lab).await?;
    let name = rev.metadata.name.clone().unwrap();
    all_provisioned(&lab, &names(2), &name, Duration::from_secs(5)).await?;
    assert!(
        lab.configs()
            .await?
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some("sick"))
    );
    lab.set_ready("sick", true).await?;
    all_provisioned(&lab, &["sick".to_string()], &name, Duration::from_secs(10)).await?;
    cfg.stop().await
}

#[tokio::test]
async fn an_agent_that_never_picks_up_is_withdrawn_without_failing_the_revision() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let script: crate::agents::Script = Arc::new(|node, _| {
        let outcome = if node == "n-0" {
            Outcome::Ignore
        } else {
            Outcome::Succeed
        };
        (Duration::from_millis(50), outcome)
    });
    let _agents = Agents::start(lab.client.clone(), script);
    let cfg = lab.configurator(&["--update-limit=3", "--pickup-timeout=1s"]);
    lab.set_table("extra", 100).await?;
    // n-0 never answers: after the pickup timeout its dispatch is withdrawn (it had no config
    // before, so its config goes away) and it is marked unresponsive; others finish.
    let api = Api::<NetworkConfigRevision>::all(lab.client.clone());
    eventually(Duration::from_secs(20), || async {
        let revs = api.list(&Default::default()).await?.items;
        Ok(revs.iter().any(|r| {
            r.status
                .as_ref()
                .is_some_and(|s| s.ready == 2 && s.unresponsive + s.queued + s.in_flight >= 1)
        }))
    })
    .await?;
    for r in api.list(&Default::default()).await?.items {
        assert_ne!(
            r.status.and_then(|s| s.phase),
            Some(RevisionPhase::Failed),
            "unresponsive is never a config failure"
        );
    }
    // The withdrawal is a Warning Event on the revision that names the node.
    let rev = lab.revisions().await?.remove(0);
    let name = rev.metadata.name.unwrap();
    let event = lab
        .event(
            "NetworkConfigRevision",
            &name,
            "Unresponsive",
            Duration::from_secs(10),
        )
        .await?;
    crate::assert_event(&event, true, &["n-0", &name]);
    cfg.stop().await
}

#[tokio::test]
async fn the_global_pause_and_a_paused_revision_stop_new_dispatches_until_resumed() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cm_api = Api::<ConfigMap>::namespaced(lab.client.clone(), DEFAULT_NAMESPACE);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(CONTROL_CONFIGMAP.into());
    cm.data = Some([(CONTROL_PAUSED_KEY.to_string(), "true".to_string())].into());
    cm_api.create(&PostParams::default(), &cm).await?;
    let cfg = lab.configurator(&["--update-limit=2"]);
    lab.set_table("extra", 100).await?;
    eventually(Duration::from_secs(10), || async {
        Ok(lab.revisions().await?.len() == 1)
    })
    .await?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        agents.pickups().is_empty(),
        "globally paused: nothing dispatched"
    );
    // kstatus: still in progress (Reconciling), for the reason Paused.
    let lab_ref = &lab;
    let paused_is = |global: bool| async move {
        let rev = lab_ref.revisions().await?.remove(0);
        let status = rev.status.clone().unwrap_or_default();
        let current = status.observed_generation == rev.metadata.generation;
        Ok::<_, anyhow::Error>(
            current
                && status.conditions.iter().any(|c| {
                    c.type_ == RECONCILING_CONDITION
                        && c.status == "True"
                        && c.reason == "Paused"
                        && c.observed_generation == rev.metadata.generation
                        && c.message.contains("globally") == global
                }),
        )
    };
    eventually(Duration::from_secs(5), || paused_is(true)).await?;

    // Resume globally but pause the revision itself.
    let rev = lab.revisions().await?.remove(0);
    let name = rev.metadata.name.clone().unwrap();
    let ncrs = Api::<NetworkConfigRevision>::all(lab.client.clone());
    ncrs.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "spec": { "paused": true } })),
    )
    .await?;
    cm_api
        .patch(
            CONTROL_CONFIGMAP,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "data": { CONTROL_PAUSED_KEY: "false" } })),
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        agents.pickups().is_empty(),
        "revision paused: nothing dispatched"
    );
    // spec.paused is a new generation: the conditions describe it.
    eventually(Duration::from_secs(5), || paused_is(false)).await?;

    ncrs.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(&serde_json::json!({ "spec": { "paused": false } })),
    )
    .await?;
    lab.newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    all_provisioned(&lab, &names(2), &name, Duration::from_secs(5)).await?;
    cfg.stop().await
}

#[tokio::test]
async fn only_nodes_matching_the_node_selector_are_managed() -> R {
    let lab = LabApi::netrollout().await;
    lab.add_node("worker-1", &[("role", "worker")], true)
        .await?;
    lab.add_node("worker-2", &[("role", "worker")], true)
        .await?;
    lab.add_node("control", &[("role", "control-plane")], true)
        .await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=5", "--node-selector=role=worker"]);
    let rev = first_good(&lab).await?;
    let workers = ["worker-1".to_string(), "worker-2".to_string()];
    all_provisioned(
        &lab,
        &workers,
        rev.metadata.name.as_deref().unwrap(),
        Duration::from_secs(5),
    )
    .await?;
    assert_eq!(rev.status.unwrap().total, 2);
    let configs = lab.configs().await?;
    assert!(
        configs
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some("control"))
    );
    cfg.stop().await
}
