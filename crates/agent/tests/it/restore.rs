//! The real agent in a network namespace against the lab API server: configs that break
//! connectivity are restored and reported Failed, also when the API server is unreachable for
//! the whole attempt; a failed revision is retried only when a person asks.

use crate::common;

use std::time::Duration;

use common::AgentLab as _;
use common::{Lab, layer2, layer2s};
use kube::api::{Patch, PatchParams, PostParams};
use netrollout_api::{NODE_RETRY_ANNOTATION, NodeConfig, NodePhase};
use netrollout_lab_apiserver::{ErrorRule, FaultConfig, Outage};

/// A config whose gateway address covers the host's end of the veth: the more specific route
/// over the new bridge takes the route to the API server (and the TCP probe target) away.
fn breaking(lab: &Lab, id: u16) -> NodeConfig {
    NodeConfig {
        layer2s: vec![layer2(id, vec![format!("{}.0/31", lab.net)])],
        ..Default::default()
    }
}

fn probing(lab: &mut Lab) {
    lab.extra_args = vec![
        "--probe-tcp".into(),
        lab.api_target(),
        "--probe-each-timeout".into(),
        "500ms".into(),
        "--probe-timeout".into(),
        "2s".into(),
    ];
}

#[tokio::test]
async fn a_config_that_breaks_connectivity_is_restored_and_not_retried_until_a_person_asks() {
    let mut lab = common::lab().await;
    probing(&mut lab);
    // ICMP to the host and the default gateway (the host) pass before the change.
    lab.ip(&format!("route add default via {}", lab.host_ip));
    let host = lab.host_ip.clone();
    lab.extra_args
        .extend(["--probe-icmp".into(), host, "--probe-gateway".into()]);
    lab.set_spec("rev-good", layer2s(100, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-good", 30).await;

    lab.set_spec("rev-bad", breaking(&lab, 110)).await;
    let nnc = lab.wait_finished("rev-bad", 30).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains(&format!("tcp {}", lab.api_target()))
            && message.contains(&format!("icmp {}", lab.host_ip))
            && message.contains("gateway")
            && message.contains("restored last-known-good rev-good"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-good"));
    assert!(lab.holds(&layer2s(100, 2)).await, "not restored");
    // The Node's condition is written right after the object's status.
    common::wait_node_condition(&lab, "False", "ProbeFailed").await;
    let started = status.started_at.clone();

    // Any other change to the object (a label) does not retry the failed revision.
    let api = lab.nnc_api();
    let label = serde_json::json!({"metadata": {"labels": {"touched": "yes"}}});
    api.patch(&lab.node, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(lab.log().matches("\"journal\"").count(), 2, "{}", lab.log());
    let status = api.get(&lab.node).await.unwrap().status.unwrap();
    assert_eq!(status.started_at, started);

    // A new value of the retry annotation is one more try.
    let retry = serde_json::json!({"metadata": {"annotations": {NODE_RETRY_ANNOTATION: "1"}}});
    api.patch(&lab.node, &PatchParams::default(), &Patch::Merge(&retry))
        .await
        .unwrap();
    lab.wait_log("\"journal\"", 3, 30).await;
    lab.wait_nnc(30, "the retried attempt to fail", |o| {
        o.status
            .as_ref()
            .is_some_and(|s| s.phase == Some(NodePhase::Failed) && s.started_at != started)
    })
    .await;
    assert!(lab.holds(&layer2s(100, 2)).await);
    // The same value again asks for nothing.
    api.patch(&lab.node, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(lab.log().matches("\"journal\"").count(), 3);
}

#[tokio::test]
async fn a_break_while_the_api_server_is_unreachable_is_restored_and_reported_when_it_returns() {
    let mut lab = common::lab().await;
    probing(&mut lab);
    lab.set_spec("rev-good", layer2s(200, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-good", 30).await;

    // From now on every request fails but the agent's open watch and the test's PUT...
    let api = lab.nnc_api();
    let mut obj = api.get(&lab.node).await.unwrap();
    let errors = ["get", "list", "patch", "create", "delete"]
        .into_iter()
        .map(|verb| ErrorRule {
            verb: Some(verb.into()),
            resource: None,
            rate: 1.0,
            code: 503,
            count: None,
        })
        .collect();
    lab.server.faults().set(FaultConfig {
        errors,
        ..FaultConfig::default()
    });
    obj.spec.revision = "rev-bad".into();
    obj.spec.config = breaking(&lab, 210);
    api.replace(&lab.node, &PostParams::default(), &obj)
        .await
        .unwrap();
    // ...and once the agent has journaled the attempt, nothing is served at all.
    lab.wait_log("\"journal\"", 2, 30).await;
    lab.server.faults().set_outage(Outage::Fail);
    lab.wait_log("\"step\":\"failed\"", 1, 30).await;
    assert!(lab.holds(&layer2s(200, 2)).await, "not restored");
    // The server is still out: the status is not there yet (the agent keeps trying).
    let api = lab.nnc_api();
    let read = tokio::time::timeout(Duration::from_secs(2), api.get(&lab.node)).await;
    assert!(
        !matches!(read, Ok(Ok(_))),
        "the API server answered during the outage"
    );

    lab.server.faults().clear();
    let nnc = lab.wait_finished("rev-bad", 30).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed));
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"));
    assert!(lab.holds(&layer2s(200, 2)).await);
    common::wait_node_condition(&lab, "False", "ProbeFailed").await;
}
