//! Writes served late, as kube-apiserver may serve them: a request whose client gave up is
//! dropped unless `serve_abandoned`; a held request is served only when released, after writes
//! sent since; a patch that names a `resourceVersion` is conditional on it.

use crate::common;

use std::time::Duration;

use common::LabApi;
use common::objects::*;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

/// A create whose client gives up while the server holds it: by default the server drops it
/// with the connection (nothing is created, even once released); with `serve_abandoned` it is
/// still served after its client left, as kube-apiserver may still commit a write whose
/// client gave up.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_whose_client_gave_up_is_dropped_unless_abandoned_requests_are_served() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let faults = lab.server.faults();
    for (serve, name) in [(false, "dropped"), (true, "served")] {
        faults.set_serve_abandoned(serve);
        faults.hold(Some("create"), Some("configmaps"));
        // The client gives up once the server holds its create.
        let (pp, cm) = (PostParams::default(), config_map(name));
        tokio::select! {
            answer = cms.create(&pp, &cm) => {
                panic!("a held create was answered: {answer:?}")
            }
            () = held(faults, 1) => {}
        }
        faults.stop_holding();
        if !serve {
            // Dropped with its connection, before any release.
            held(faults, 0).await;
        }
        faults.release_held();
        held(faults, 0).await;
        assert_eq!(
            cms.get_opt(name).await.unwrap().is_some(),
            serve,
            "serve_abandoned {serve}: created {name}"
        );
    }
    assert!(faults.config().serve_abandoned);
}

/// A status patch naming a `resourceVersion` is conditional on it, as on kube-apiserver: one
/// computed from a version since replaced is refused with 409 Conflict and changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn a_status_patch_conditional_on_a_replaced_version_is_refused() {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Patch, PatchParams};
    let lab = LabApi::start().await;
    let nodes: Api<Node> = Api::all(lab.server.client().unwrap());
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "n1"}})).unwrap();
    let node = nodes.create(&PostParams::default(), &node).await.unwrap();
    let old = node.metadata.resource_version.clone().unwrap();
    let status = |reason: &str, rv: &str| {
        Patch::Merge(json!({
            "metadata": {"resourceVersion": rv},
            "status": {"conditions": [{"type": "X", "status": "True", "reason": reason}]},
        }))
    };
    let pp = PatchParams::default();
    let newer = nodes
        .patch_status("n1", &pp, &status("Newer", &old))
        .await
        .unwrap();
    let err = nodes
        .patch_status("n1", &pp, &status("Stale", &old))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 409),
        "{err}"
    );
    let now = nodes.get_status("n1").await.unwrap();
    assert_eq!(
        now.metadata.resource_version,
        newer.metadata.resource_version
    );
    let reason = now.status.unwrap().conditions.unwrap()[0].reason.clone();
    assert_eq!(reason.as_deref(), Some("Newer"));
}

/// A held patch whose client gave up is served only when released, after a patch sent later:
/// without a precondition it overwrites that newer write (what a client must guard against),
/// with the version it was computed from it is refused. `held()` counts it until served.
#[tokio::test(flavor = "multi_thread")]
async fn a_held_write_is_served_after_later_ones_and_refused_when_its_version_is_stale() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let faults = lab.server.faults();
    faults.set_serve_abandoned(true);
    let pp = PatchParams::default();
    for conditional in [false, true] {
        let name = format!("held-{conditional}");
        let created = cms
            .create(&PostParams::default(), &config_map(&name))
            .await
            .unwrap();
        let version = created.metadata.resource_version.clone().unwrap();
        let set = |v: &str, rv: Option<&str>| {
            let mut p = json!({"data": {"v": v}});
            if let Some(rv) = rv {
                p["metadata"] = json!({"resourceVersion": rv});
            }
            Patch::Merge(p)
        };
        faults.hold(Some("patch"), Some("configmaps"));
        let older = set("older", conditional.then_some(version.as_str()));
        // The client gives up once the server holds its patch.
        tokio::select! {
            answer = cms.patch(&name, &pp, &older) => panic!("a held patch was answered: {answer:?}"),
            () = held(faults, 1) => {}
        }
        faults.stop_holding();
        let newer = set("newer", conditional.then_some(version.as_str()));
        cms.patch(&name, &pp, &newer).await.unwrap();
        assert_eq!(faults.held(), 1, "the first patch is still held");
        faults.release_held();
        held(faults, 0).await;
        let data = cms.get(&name).await.unwrap().data.unwrap();
        let want = if conditional { "newer" } else { "older" };
        assert_eq!(data["v"], want, "conditional {conditional}");
    }
}

/// Waits until `faults.held()` is `n`; panics after 10 s.
async fn held(faults: &netrollout_lab_apiserver::Faults, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while faults.held() != n {
        assert!(
            std::time::Instant::now() < deadline,
            "held {} requests, not {n}",
            faults.held()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
