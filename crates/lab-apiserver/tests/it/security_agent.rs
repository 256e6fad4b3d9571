//! The bundle's security promises about agents, enforced by the lab API server as a real one
//! enforces them (see `security.rs`): each agent's token carries its node's name, and with it
//! the agent writes only its own node config's status, its own node's `NetworkConfigReady`
//! condition and removes only its own node's taints. Every test here fails if the protection
//! it names is removed from the bundle (or the server stops enforcing it).

use crate::common;

use common::cluster::{Cluster, NS, ready, status_patch};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use netrollout_lab_apiserver::Identity;
use serde_json::{Value, json};

#[tokio::test]
async fn an_agent_writes_only_its_own_node_config_status() {
    let c = Cluster::start().await;
    let status = ["patch", "nnc", "--subresource=status", "--type=merge", "-p"];
    let own = status_patch("Provisioned");
    let mut args = status.to_vec();
    args.insert(2, "node-a");
    args.push(&own);
    c.kubectl("agent-a", &args, None).await.ok();
    let mut args = status.to_vec();
    args.insert(2, "node-b");
    args.push(&own);
    c.kubectl("agent-a", &args, None).await.refused(&[
        "netrollout-agent-own-node",
        "may write only its own node, not node-b",
    ]);
    // No agent writes any node config's spec: RBAC grants it no such verb.
    c.kubectl(
        "agent-a",
        &["patch", "nnc", "node-a", "--type=merge", "-p", r#"{"spec":{"revision":"ncr-evil"}}"#],
        None,
    )
    .await
    .refused(&[
        r#"User "system:serviceaccount:netrollout-system:netrollout-agent" cannot patch resource "nodenetworkconfigs" in API group "netrollout.io" at the cluster scope"#,
    ]);
}

#[tokio::test]
async fn an_agent_sets_only_the_network_config_ready_condition_of_its_node() {
    let c = Cluster::start().await;
    let agent = c
        .server
        .client_for(Identity::service_account(NS, "netrollout-agent").on_node("node-a"))
        .unwrap();
    let nodes: Api<Node> = Api::all(agent);
    let ours = json!({"type": "NetworkConfigReady", "status": "True", "reason": "Provisioned", "message": "ncr-1"});
    let pp = PatchParams::default();
    nodes
        .patch_status(
            "node-a",
            &pp,
            &Patch::Merge(json!({"status": {"conditions": [ready("True"), ours]}})),
        )
        .await
        .expect("its own NetworkConfigReady condition");
    let err = nodes
        .patch_status(
            "node-a",
            &pp,
            &Patch::Merge(json!({"status": {"conditions": [ready("False"), ours]}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => {
            assert_eq!(e.code, 403, "{e:?}");
            assert!(
                e.message.contains("only the NetworkConfigReady condition"),
                "{}",
                e.message
            );
        }
        other => panic!("expected 403, got {other}"),
    }
    let err = nodes
        .patch_status(
            "node-b",
            &pp,
            &Patch::Merge(json!({"status": {"conditions": [ready("True"), ours]}})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 403),
        "{err}"
    );
}

#[tokio::test]
async fn an_agent_may_only_remove_taints_from_its_own_node() {
    let c = Cluster::start().await;
    // The agent's role gains `patch nodes` for its startup taint (granted here as the bundle
    // will); the own-node policy then limits what such a patch may change.
    let grant = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "agent-taints"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "agent-taints"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "agent-taints"},
         "subjects": [{"kind": "ServiceAccount", "name": "netrollout-agent", "namespace": NS}]},
    ]});
    c.admin(&["apply", "-f", "-"], Some(&grant.to_string()))
        .await
        .ok();
    let taint = |key: &str| json!({"key": key, "effect": "NoSchedule"});
    for node in ["node-a", "node-b"] {
        let p = json!({"spec": {"taints": [taint("netrollout.io/not-ready"), taint("other")]}});
        c.admin(
            &["patch", "node", node, "--type=merge", "-p", &p.to_string()],
            None,
        )
        .await
        .ok();
    }
    let c = &c;
    let agent = |args: Vec<String>| async move {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        c.kubectl("agent-a", &args, None).await
    };
    let patch = |node: &str, p: Value| {
        vec![
            "patch".to_string(),
            "node".into(),
            node.into(),
            "--type=merge".into(),
            "-p".into(),
            p.to_string(),
        ]
    };
    agent(patch("node-a", json!({"spec": {"taints": [taint("netrollout.io/not-ready"), taint("other"), taint("new")]}})))
        .await
        .refused(&["netrollout-agent-own-node", "may only remove taints"]);
    agent(patch("node-a", json!({"spec": {"unschedulable": true}})))
        .await
        .refused(&["may only remove taints"]);
    agent(patch(
        "node-a",
        json!({"metadata": {"labels": {"zone": "b"}}}),
    ))
    .await
    .refused(&["may not change the metadata of node-a"]);
    agent(patch(
        "node-b",
        json!({"spec": {"taints": [taint("other")]}}),
    ))
    .await
    .refused(&["may write only its own node, not node-b"]);
    agent(patch(
        "node-a",
        json!({"spec": {"taints": [taint("other")]}}),
    ))
    .await
    .ok();
    let left = c
        .admin(
            &[
                "get",
                "node",
                "node-a",
                "-o",
                "jsonpath={.spec.taints[*].key}",
            ],
            None,
        )
        .await
        .ok();
    assert_eq!(left.stdout.trim(), "other");
}
