//! Red team, the garbage collector as a back door: an owner reference to an object that does
//! not exist has the garbage collector delete the object — a delete RBAC never granted — and a
//! finalizer keeps it from going. The lab API server collects such objects as
//! kube-controller-manager does; the bundle's policies keep the agent and the operator from
//! setting either, and each test shows the delete happening once the policy is gone.

use crate::common;

use common::LabApi;
use common::cluster::{Cluster, owner};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const NO_UID: &str = "00000000-0000-0000-0000-000000000000";

#[tokio::test(flavor = "multi_thread")]
async fn objects_whose_owners_are_all_gone_are_collected_and_dangling_references_dropped() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let nodes: Api<Node> = Api::all(client.clone());
    let default_uid = Api::<Namespace>::all(client)
        .get("default")
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();
    let cm = |name: &str, refs: serde_json::Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": refs}}))
            .unwrap()
    };
    let ns_ref =
        |uid: &str| json!({"apiVersion": "v1", "kind": "Namespace", "name": "default", "uid": uid});
    let pp = PostParams::default();
    // Every owner gone (a uid that does not match, a name that does not exist): collected.
    cms.create(&pp, &cm("wrong-uid", json!([ns_ref(NO_UID)])))
        .await
        .unwrap();
    let missing = json!({"apiVersion": "v1", "kind": "Namespace", "name": "gone", "uid": NO_UID});
    cms.create(&pp, &cm("no-owner", json!([missing])))
        .await
        .unwrap();
    // One owner present: only the dangling reference goes.
    cms.create(
        &pp,
        &cm("half", json!([ns_ref(&default_uid), ns_ref(NO_UID)])),
    )
    .await
    .unwrap();
    // Owners that cannot be verified keep their dependent: a kind the server does not serve.
    let deployment =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": NO_UID});
    cms.create(&pp, &cm("unverifiable", json!([deployment])))
        .await
        .unwrap();
    // An update that adds a dangling owner has the object collected too.
    cms.create(&pp, &cm("later", json!([ns_ref(&default_uid)])))
        .await
        .unwrap();
    let p = json!({"metadata": {"ownerReferences": [ns_ref(NO_UID)]}});
    cms.patch("later", &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
    // A cluster-scoped object with an owner that does not exist.
    nodes
        .create(
            &pp,
            &serde_json::from_value(json!({"metadata": {"name": "n1",
            "ownerReferences": [ns_ref(NO_UID)]}}))
            .unwrap(),
        )
        .await
        .unwrap();
    for gone in ["wrong-uid", "no-owner", "later"] {
        assert!(
            cms.get_opt(gone).await.unwrap().is_none(),
            "{gone} was collected"
        );
    }
    assert!(
        nodes.get_opt("n1").await.unwrap().is_none(),
        "the node was collected"
    );
    let half = cms.get("half").await.unwrap();
    let refs = half.metadata.owner_references.unwrap();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].uid, default_uid);
    assert!(cms.get_opt("unverifiable").await.unwrap().is_some());
}

/// The Node survives the agent's attempt; without the policy the same patch has the garbage
/// collector delete it (so this test would notice the policy going).
#[tokio::test]
async fn an_agent_cannot_have_the_garbage_collector_delete_its_node() {
    let c = Cluster::start().await;
    let dangling = owner(
        "Namespace",
        "v1",
        "default",
        "00000000-0000-0000-0000-000000000000",
    );
    let patch = ["patch", "node", "node-a", "--type=merge", "-p"];
    let status = [
        "patch",
        "node",
        "node-a",
        "--subresource=status",
        "--type=merge",
        "-p",
    ];
    let finalizer = json!({"metadata": {"finalizers": ["example.com/hold"]}}).to_string();
    let dangling_text = dangling.to_string();
    for args in [&patch[..], &status[..]] {
        for p in [&dangling_text, &finalizer] {
            let mut a = args.to_vec();
            a.push(p);
            c.kubectl("agent-a", &a, None).await.refused(&[
                "netrollout-agent-own-node",
                "may not change the metadata of node-a",
            ]);
        }
    }
    c.admin(&["get", "node", "node-a"], None).await.ok();
    // Without the policy, the agent's role lets the patch through and the collector deletes.
    c.admin(
        &[
            "delete",
            "validatingadmissionpolicybinding",
            "netrollout-agent-own-node",
        ],
        None,
    )
    .await
    .ok();
    let mut a = status.to_vec();
    a.push(&dangling_text);
    c.kubectl("agent-a", &a, None).await.ok();
    c.admin(&["get", "node", "node-a"], None)
        .await
        .refused(&[r#"nodes "node-a" not found"#]);
}

#[tokio::test]
async fn an_operator_cannot_have_the_garbage_collector_delete_a_revision_or_a_node_config() {
    let c = Cluster::start().await;
    let dangling = owner("Node", "v1", "node-a", NO_UID).to_string();
    for (kind, name) in [("ncr", "ncr-1"), ("nnc", "node-a")] {
        c.kubectl(
            "olga",
            &["patch", kind, name, "--type=merge", "-p", &dangling],
            None,
        )
        .await
        .refused(&[
            "only the netrollout configurator sets the ownerReferences and finalizers of",
            name,
        ]);
        c.admin(&["get", kind, name], None).await.ok();
    }
    // Without the policy the operator's patch right is enough for the collector to delete.
    c.admin(
        &[
            "delete",
            "validatingadmissionpolicybinding",
            "netrollout-revision-immutable",
        ],
        None,
    )
    .await
    .ok();
    c.kubectl(
        "olga",
        &["patch", "ncr", "ncr-1", "--type=merge", "-p", &dangling],
        None,
    )
    .await
    .ok();
    c.admin(&["get", "ncr", "ncr-1"], None)
        .await
        .refused(&["not found"]);
}
