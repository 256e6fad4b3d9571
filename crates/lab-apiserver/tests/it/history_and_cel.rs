//! The bounded watch history and the CEL program caches, driven by kube::Client: a watch from
//! a resourceVersion the byte-bounded window no longer holds gets 410 Gone, and a changed CRD
//! rule or admission policy is enforced from the next write on (no stale compiled program).

use crate::common;

use common::LabApi;
use common::objects::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, PostParams, WatchEvent, WatchParams,
};
use netrollout_lab_apiserver::Config;
use serde_json::{Value, json};

fn big_config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"p": "x".repeat(1000)}}))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_older_than_the_byte_bounded_history_gets_410_and_a_recent_one_resumes() {
    let lab = LabApi::start_with(Config {
        event_window_bytes: 8 * 1024,
        ..Config::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let first = cms
        .create(&PostParams::default(), &big_config_map("first"))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.unwrap();
    let mut last_rv = old_rv.clone();
    // Twenty 1 KB objects: more than 8 KB of history, far fewer than the 10,000-event bound.
    for i in 0..20 {
        let cm = cms
            .create(&PostParams::default(), &big_config_map(&format!("cm-{i}")))
            .await
            .unwrap();
        if i == 18 {
            last_rv = cm.metadata.resource_version.unwrap();
        }
    }

    let mut stale = cms
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stale.try_next().await.unwrap() {
        Some(WatchEvent::Error(s)) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"), "{s:?}")
        }
        other => panic!("a watch from a compacted resourceVersion must get 410, got {other:?}"),
    }

    let mut recent = cms
        .watch(&WatchParams::default(), &last_rv)
        .await
        .unwrap()
        .boxed();
    match recent.try_next().await.unwrap() {
        Some(WatchEvent::Added(cm)) => assert_eq!(cm.metadata.name.as_deref(), Some("cm-19")),
        other => panic!("a watch within the history must replay it, got {other:?}"),
    }
}

async fn set_widget_rule(crds: &Api<CustomResourceDefinition>, rule: &str, message: &str) {
    let mut v = serde_json::to_value(crds.get("widgets.lab.example.com").await.unwrap()).unwrap();
    let path = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations";
    *v.pointer_mut(path).unwrap() = json!([{"rule": rule, "message": message}]);
    crds.replace(
        "widgets.lab.example.com",
        &PostParams::default(),
        &serde_json::from_value(v).unwrap(),
    )
    .await
    .unwrap();
}

fn refusal(r: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn red_widget(name: &str, replicas: i64) -> DynamicObject {
    let mut w = widget(name, replicas);
    w.data["spec"]["color"] = json!("red");
    w
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_crd_rule_is_enforced_from_the_next_write() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_widget_crd(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client.clone(), &widgets_resource());
    let pp = PostParams::default();
    let (code, message) = refusal(widgets.create(&pp, &red_widget("seven", 7)).await);
    assert_eq!(code, 422);
    assert!(message.contains("at most 5 replicas"), "{message}");

    let crds: Api<CustomResourceDefinition> = Api::all(client);
    set_widget_rule(
        &crds,
        "self.replicas <= 8 || self.color != 'red'",
        "red widgets come in at most 8 replicas",
    )
    .await;
    widgets.create(&pp, &red_widget("seven", 7)).await.unwrap();
    let (code, message) = refusal(widgets.create(&pp, &red_widget("nine", 9)).await);
    assert_eq!(code, 422);
    assert!(message.contains("at most 8 replicas"), "{message}");
}

fn policy(bad: &str) -> DynamicObject {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingAdmissionPolicy",
        ),
        "validatingadmissionpolicies",
    );
    let mut p = DynamicObject::new("no-bad-x", &ar);
    p.data = json!({"spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]},
        "validations": [{
            "expression": format!("!has(object.data) || !('x' in object.data) || object.data.x != '{bad}'"),
            "message": format!("x must not be {bad}"),
        }],
    }});
    p
}

fn x_config_map(name: &str, x: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"x": x}})).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_changed_admission_policy_is_enforced_from_the_next_write() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    let gvk = |kind: &str| GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    let policies: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(
            &gvk("ValidatingAdmissionPolicy"),
            "validatingadmissionpolicies",
        ),
    );
    let binding_ar = ApiResource::from_gvk_with_plural(
        &gvk("ValidatingAdmissionPolicyBinding"),
        "validatingadmissionpolicybindings",
    );
    let bindings: Api<DynamicObject> = Api::all_with(client.clone(), &binding_ar);
    let pp = PostParams::default();
    policies.create(&pp, &policy("bad")).await.unwrap();
    let mut b = DynamicObject::new("no-bad-x", &binding_ar);
    b.data = json!({"spec": {"policyName": "no-bad-x", "validationActions": ["Deny"]}});
    bindings.create(&pp, &b).await.unwrap();

    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let (code, message) = refusal(cms.create(&pp, &x_config_map("a", "bad")).await);
    assert_eq!(code, 422);
    assert!(message.contains("x must not be bad"), "{message}");
    // Many writes against the same policy: still enforced (the cached program is the right one).
    for i in 0..20 {
        cms.create(&pp, &x_config_map(&format!("ok-{i}"), "fine"))
            .await
            .unwrap();
    }

    let mut changed = policy("worse");
    let current = policies.get("no-bad-x").await.unwrap();
    changed.metadata.resource_version = current.metadata.resource_version;
    policies.replace("no-bad-x", &pp, &changed).await.unwrap();
    cms.create(&pp, &x_config_map("a", "bad")).await.unwrap();
    let (code, message) = refusal(cms.create(&pp, &x_config_map("b", "worse")).await);
    assert_eq!(code, 422);
    assert!(message.contains("x must not be worse"), "{message}");
    let stored: Value = serde_json::to_value(cms.get("a").await.unwrap()).unwrap();
    assert_eq!(stored["data"]["x"], "bad");
}
