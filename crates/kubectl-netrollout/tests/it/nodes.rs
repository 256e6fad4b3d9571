//! `nodes` shows each node's `NodeNetworkConfig` condition `NetworkConfigReady` and flags one
//! written for an older spec as stale, agreeing with the real
//! `kubectl wait --for=condition=NetworkConfigReady nnc/NODE` (which ignores a condition whose
//! `observedGeneration` is behind the object's generation).

use crate::common;

use common::{LabApi, PluginLab as _, node_status};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::PostParams;
use netrollout_api::{NODE_CONDITION, NodePhase};

fn ready(observed_generation: i64) -> Condition {
    Condition {
        type_: NODE_CONDITION.into(),
        status: "True".into(),
        reason: "Applied".into(),
        message: "applied and probed in 12 ms".into(),
        last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        observed_generation: Some(observed_generation),
    }
}

async fn wait_ready(lab: &LabApi) -> i32 {
    let args = [
        "wait",
        "--for=condition=NetworkConfigReady",
        "nnc/node-a",
        "--timeout=2s",
    ];
    lab.kubectl_run(&args, None).await.code
}

fn config_ready(lab_out: &str) -> String {
    let line = lab_out
        .lines()
        .find(|l| l.starts_with("node-a"))
        .unwrap_or_else(|| panic!("node-a missing:\n{lab_out}"));
    line.to_string()
}

#[tokio::test]
async fn nodes_flag_a_stale_config_condition_where_kubectl_wait_does_not_count_it() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    let mut status = node_status("ncr-one", NodePhase::Provisioned, None);
    status.conditions = vec![ready(1)];
    lab.config("node-a", "ncr-one", Some(status.clone())).await;

    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(line.contains("True") && !line.contains("stale"), "{line}");
    assert_eq!(wait_ready(&lab).await, 0, "kubectl wait agrees: ready");

    // A new spec (generation 2) the agent has not reported on yet.
    let mut obj = lab.config_api().get("node-a").await.unwrap();
    obj.spec.revision = "ncr-two".into();
    let obj = lab
        .config_api()
        .replace("node-a", &PostParams::default(), &obj)
        .await
        .unwrap();
    assert_eq!(obj.metadata.generation, Some(2));
    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(
        line.contains("True (stale: generation 2 observed 1)"),
        "the old condition is flagged: {line}"
    );
    let json: serde_json::Value =
        serde_json::from_str(lab.plugin(&["nodes", "-o", "json"]).await.expect_code(0)).unwrap();
    assert_eq!(
        json[0]["configCondition"],
        "True (stale: generation 2 observed 1)"
    );
    assert_ne!(
        wait_ready(&lab).await,
        0,
        "kubectl wait agrees: a stale condition does not count"
    );

    // The agent reports on generation 2.
    status.observed_revision = Some("ncr-two".into());
    status.conditions = vec![ready(2)];
    lab.set_config_status("node-a", status).await;
    let out = lab.plugin(&["nodes"]).await;
    let line = config_ready(out.expect_code(0));
    assert!(line.contains("True") && !line.contains("stale"), "{line}");
    assert_eq!(wait_ready(&lab).await, 0, "kubectl wait agrees: ready");
}
