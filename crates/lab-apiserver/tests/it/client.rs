//! The lab API server driven by kube::Client: a Controller, server-side apply, conflicts,
//! finalizers, garbage collection, the status subresource and lists. Watches are in
//! `client_watch.rs`.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::LabApi;
use common::objects::*;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{Controller, controller::Action, watcher};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_stale_update_gets_409_conflict() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let first = cms
        .create(&PostParams::default(), &config_map("c"))
        .await
        .unwrap();
    let mut newer = first.clone();
    newer.data = Some([("k".to_string(), "v2".to_string())].into());
    cms.replace("c", &PostParams::default(), &newer)
        .await
        .unwrap();
    let mut stale = first;
    stale.data = Some([("k".to_string(), "v3".to_string())].into());
    match cms.replace("c", &PostParams::default(), &stale).await {
        Err(kube::Error::Api(e)) => assert_eq!((e.code, e.reason.as_str()), (409, "Conflict")),
        other => panic!("expected 409 Conflict, got {other:?}"),
    }
    assert_eq!(cms.get("c").await.unwrap().data.unwrap()["k"], "v2");
    let again = cms
        .create(&PostParams::default(), &config_map("c"))
        .await
        .unwrap_err();
    assert!(matches!(again, kube::Error::Api(e) if e.code == 409 && e.reason == "AlreadyExists"));
    let missing = cms.get("nope").await.unwrap_err();
    assert!(matches!(missing, kube::Error::Api(e) if e.code == 404 && e.reason == "NotFound"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_finalizer_holds_deletion_until_it_is_removed() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let mut cm = config_map("held");
    cm.metadata.finalizers = Some(vec!["lab.example.com/hold".into()]);
    cms.create(&PostParams::default(), &cm).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let still = cms.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    let patch = json!({"metadata": {"finalizers": null}});
    cms.patch("held", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(
        cms.get_opt("held").await.unwrap().is_none(),
        "removing the last finalizer deletes the object"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dependents_are_garbage_collected_with_their_owner_unless_orphaned() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &widgets_resource());
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for (owner, child) in [("owner", "child"), ("keeper", "orphan")] {
        let w = widgets
            .create(&PostParams::default(), &widget(owner, 1))
            .await
            .unwrap();
        let mut cm = config_map(child);
        cm.metadata.owner_references = Some(vec![serde_json::from_value(json!({
            "apiVersion": "lab.example.com/v1", "kind": "Widget", "name": owner, "uid": w.metadata.uid.unwrap()})).unwrap()]);
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    widgets
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    assert!(
        cms.get_opt("child").await.unwrap().is_none(),
        "the dependent went with its owner"
    );
    widgets
        .delete("keeper", &DeleteParams::orphan())
        .await
        .unwrap();
    let orphan = cms.get("orphan").await.unwrap();
    assert!(
        orphan
            .metadata
            .owner_references
            .is_none_or(|r| r.is_empty()),
        "an orphaned dependent loses its owner reference"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn status_and_main_resource_are_written_separately() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client, &widgets_resource());
    widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();

    let before = widgets.get("w").await.unwrap();
    let status = json!({"spec": {"replicas": 9}, "status": {"phase": "Ready"}});
    let after = widgets
        .patch_status("w", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    assert_eq!(after.data["status"]["phase"], "Ready");
    assert_eq!(
        after.metadata.managed_fields, before.metadata.managed_fields,
        "a status write keeps the stored metadata"
    );
    // Only the status changed: written as sent.
    let again = json!({"status": {"phase": "Scaling"}});
    let after = widgets
        .patch_status("w", &PatchParams::default(), &Patch::Merge(&again))
        .await
        .unwrap();
    assert_eq!(after.data["status"], json!({"phase": "Scaling"}));
    assert_eq!(after.data["spec"]["replicas"], 1);
    assert_eq!(
        after.metadata.managed_fields,
        before.metadata.managed_fields
    );
    let back = json!({"status": {"phase": "Ready"}});
    widgets
        .patch_status("w", &PatchParams::default(), &Patch::Merge(&back))
        .await
        .unwrap();
    assert_eq!(
        after.data["spec"]["replicas"], 1,
        "a status write ignores spec"
    );
    assert_eq!(
        after.metadata.generation,
        Some(1),
        "a status write does not bump generation"
    );

    let main = json!({"spec": {"replicas": 2}, "status": {"phase": "Broken"}});
    let after = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(&main))
        .await
        .unwrap();
    assert_eq!(
        after.data["status"]["phase"], "Ready",
        "a main write ignores status"
    );
    assert_eq!(after.data["spec"]["replicas"], 2);
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "a spec change bumps generation"
    );

    let labels = json!({"metadata": {"labels": {"a": "b"}}});
    let after = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "a metadata change does not bump generation"
    );
    let again = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(&labels))
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version, after.metadata.resource_version,
        "a no-op write changes nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_controller_reconciles_custom_objects_and_server_side_apply_merges_and_detects_conflicts()
{
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let ar = widgets_resource();
    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let ssa = PatchParams::apply("lab-test").force();
    let applied = json!({"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"color": "blue", "replicas": 3}});
    widgets
        .patch("a", &ssa, &Patch::Apply(&applied))
        .await
        .unwrap();
    let more = json!({"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"replicas": 4}});
    let merged = widgets
        .patch("a", &ssa, &Patch::Apply(&more))
        .await
        .unwrap();
    assert_eq!(
        (
            merged.data["spec"]["color"].as_str(),
            merged.data["spec"]["replicas"].as_i64()
        ),
        (Some("blue"), Some(4))
    );
    let rival = json!({"apiVersion": "lab.example.com/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {"replicas": 6}});
    let err = widgets
        .patch("a", &PatchParams::apply("rival"), &Patch::Apply(&rival))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(e) if e.code == 409 && e.message.contains(".spec.replicas")),
        "an apply of another manager's field conflicts"
    );
    let forced = widgets
        .patch(
            "a",
            &PatchParams::apply("rival").force(),
            &Patch::Apply(&rival),
        )
        .await
        .unwrap();
    assert_eq!(
        forced.data["spec"]["replicas"], 6,
        "force takes the field over"
    );

    let reconcile = |w: Arc<DynamicObject>, api: Arc<Api<DynamicObject>>| async move {
        let name = w.metadata.name.clone().unwrap_or_default();
        let status =
            json!({"status": {"phase": "Reconciled", "observedGeneration": w.metadata.generation}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok::<_, kube::Error>(Action::await_change())
    };
    let controller = Controller::new_with(widgets.clone(), watcher::Config::default(), ar)
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            Arc::new(widgets.clone()),
        )
        .for_each(|_| async {});
    let task = tokio::spawn(controller);
    widgets
        .create(&PostParams::default(), &widget("b", 2))
        .await
        .unwrap();
    let done = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let list = widgets.list(&Default::default()).await.unwrap();
            if list.items.len() == 2
                && list
                    .items
                    .iter()
                    .all(|w| w.data["status"]["phase"] == "Reconciled")
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    task.abort();
    assert!(done.is_ok(), "the controller reconciled both widgets");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_comes_in_namespace_and_name_order_and_pages_through_every_object_once() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in ["b-ns", "a-ns"] {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        nss.create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await
        .unwrap();
    }
    // Created out of order, in three namespaces.
    let mut want = vec![];
    for (ns, name) in [
        ("default", "m"),
        ("b-ns", "z"),
        ("a-ns", "y"),
        ("b-ns", "c"),
        ("default", "a"),
        ("a-ns", "b"),
    ] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        cms.create(&PostParams::default(), &config_map(name))
            .await
            .unwrap();
        want.push((ns.to_string(), name.to_string()));
    }
    want.sort();
    let all: Api<ConfigMap> = Api::all(client.clone());
    let listed = ids(&all, &Default::default()).await.0;
    // Only the objects of this test (the server may hold others, e.g. kube-root-ca.crt).
    let ours = |i: &(String, String)| ["a-ns", "b-ns", "default"].contains(&i.0.as_str());
    let listed: Vec<_> = listed.into_iter().filter(ours).collect();
    assert_eq!(listed, want, "all namespaces, sorted");
    let in_b = ids(
        &Api::<ConfigMap>::namespaced(client.clone(), "b-ns"),
        &Default::default(),
    )
    .await
    .0;
    assert_eq!(
        in_b,
        [
            ("b-ns".to_string(), "c".to_string()),
            ("b-ns".to_string(), "z".to_string())
        ]
    );
    // Pages of two: every object once, in the same order.
    let mut paged = vec![];
    let mut token: Option<String> = None;
    loop {
        let mut lp = kube::api::ListParams::default().limit(2);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let (page, next) = ids(&all, &lp).await;
        assert!(page.len() <= 2);
        paged.extend(page);
        token = next;
        if token.is_none() {
            break;
        }
    }
    let paged: Vec<_> = paged.into_iter().filter(ours).collect();
    assert_eq!(paged, want);
}

/// (namespace, name) of every listed ConfigMap, and the continue token if any.
async fn ids(
    api: &Api<ConfigMap>,
    lp: &kube::api::ListParams,
) -> (Vec<(String, String)>, Option<String>) {
    let list = api.list(lp).await.unwrap();
    let ids = list
        .items
        .iter()
        .map(|c| {
            (
                c.metadata.namespace.clone().unwrap(),
                c.metadata.name.clone().unwrap(),
            )
        })
        .collect();
    (ids, list.metadata.continue_.filter(|t| !t.is_empty()))
}
