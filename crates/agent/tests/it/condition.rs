//! The real agent's `NodeNetworkConfig` condition `NetworkConfigReady` as Kubernetes tooling
//! reads it: the real `kubectl wait --for=condition=NetworkConfigReady nnc/NODE` returns once
//! the agent provisioned the object's current generation, and an agent restart that reports
//! the same status keeps its `lastTransitionTime`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use crate::common;

use common::{Lab, layer2s};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use netrollout_api::{NODE_CONDITION, NodeNetworkConfig};
use netrollout_testkit::kubectl::kubectl;

fn ready_condition(nnc: &NodeNetworkConfig) -> Condition {
    nnc.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == NODE_CONDITION))
        .cloned()
        .unwrap_or_else(|| panic!("no {NODE_CONDITION} on {:?}", nnc.status))
}

async fn kubectl_wait_ready(lab: &Lab) {
    // The server's own kubeconfig (an administrator), on its host address.
    let kubeconfig = lab.dir.path().join("admin-kubeconfig");
    std::fs::write(&kubeconfig, lab.server.kubeconfig_yaml()).unwrap();
    let cache = lab.dir.path().join("kubectl-cache");
    let target = format!("nnc/{}", lab.node);
    let args = [
        "wait",
        "--for=condition=NetworkConfigReady",
        &target,
        "--timeout=60s",
    ];
    let run = kubectl(&kubeconfig, &cache, &args, None, None).await;
    assert_eq!(
        run.code,
        0,
        "kubectl wait: {}\nagent log:\n{}",
        run.stderr,
        lab.log()
    );
}

#[tokio::test]
async fn kubectl_wait_returns_once_the_agent_provisions_the_current_generation() {
    let mut lab = common::lab().await;
    // A kernel busy when the agent restarts (another suite removing namespaces) would have it
    // say `WaitingForKernel` ("starting: ...", Ready False) before "already applied": a real
    // flip of the condition, not the restart this test is about. Reported only past 60 s.
    lab.extra_args = vec![
        "--probe-tcp".into(),
        lab.api_target(),
        "--step-slow".into(),
        "60s".into(),
    ];
    lab.set_spec("rev-a", layer2s(100, 1)).await;
    lab.start_agent();
    kubectl_wait_ready(&lab).await;
    let nnc = lab.nnc_api().get(&lab.node).await.unwrap();
    let first = ready_condition(&nnc);
    assert_eq!(first.status, "True");
    assert_eq!(first.observed_generation, nnc.metadata.generation);
    assert_eq!(
        nnc.status.as_ref().unwrap().observed_revision.as_deref(),
        Some("rev-a")
    );

    // A new spec: kubectl wait ignores the condition of the old generation until the agent
    // has provisioned the new one.
    lab.set_spec("rev-b", layer2s(101, 1)).await;
    kubectl_wait_ready(&lab).await;
    let nnc = lab.nnc_api().get(&lab.node).await.unwrap();
    let second = ready_condition(&nnc);
    assert_eq!(nnc.metadata.generation, Some(2));
    assert_eq!(second.observed_generation, Some(2));
    assert_eq!(
        nnc.status.as_ref().unwrap().observed_revision.as_deref(),
        Some("rev-b")
    );

    // A restarted agent reports rev-b again (Ready stays True): the transition time stays.
    // (Times are whole seconds: past the next second, a rewritten time would show.)
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    lab.kill_agent();
    lab.start_agent();
    lab.wait_log("state recovered", 2, 30).await;
    let nnc = lab
        .wait_nnc(30, "the restarted agent's report", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.starts_with("already applied"))
        })
        .await;
    let after = ready_condition(&nnc);
    assert_eq!(after.status, "True");
    assert_eq!(after.observed_generation, Some(2));
    assert_eq!(
        after.last_transition_time, second.last_transition_time,
        "the same status after a restart keeps its transition time"
    );

    // A dispatch withdrawn at once (rev-c, then rev-b again) is a new generation of the
    // revision the node runs: the agent reports it, and kubectl wait does not hang.
    lab.set_spec("rev-c", layer2s(102, 1)).await;
    lab.set_spec("rev-b", layer2s(101, 1)).await;
    kubectl_wait_ready(&lab).await;
    let nnc = lab.nnc_api().get(&lab.node).await.unwrap();
    assert_eq!(nnc.metadata.generation, Some(4));
    assert_eq!(ready_condition(&nnc).observed_generation, Some(4));
}
