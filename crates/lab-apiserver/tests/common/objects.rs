//! kube::Client helpers: the test Widget kind, CRD installation, sample objects, waiting.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::json;

pub fn widgets_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("lab.example.com", "v1", "Widget"),
        "widgets",
    )
}

pub async fn install_crds(client: &kube::Client) {
    let text = std::fs::read_to_string(super::fixture("crds.yaml")).unwrap();
    let crds: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&text).unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        api.create(&PostParams::default(), &crd).await.unwrap();
    }
}

pub fn widget(name: &str, replicas: i64) -> DynamicObject {
    let mut w = DynamicObject::new(name, &widgets_resource());
    w.data = json!({"spec": {"color": "green", "replicas": replicas}});
    w
}

pub fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

/// Waits (bounded) for `cond` on the items a stream yields.
pub async fn until<T>(
    stream: &mut (impl futures::Stream<Item = T> + Unpin),
    mut cond: impl FnMut(&T) -> bool,
) -> T {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let item = stream.next().await.expect("stream ended");
            if cond(&item) {
                return item;
            }
        }
    })
    .await
    .expect("condition reached within 20s")
}

/// Creates only the Widget CRD.
pub async fn install_widget_crd(client: &kube::Client) {
    let text = std::fs::read_to_string(super::fixture("crds.yaml")).unwrap();
    let crds: Vec<CustomResourceDefinition> = serde_saphyr::from_multiple(&text).unwrap();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.create(&PostParams::default(), &crds[0]).await.unwrap();
}

/// A ConfigMap `name` whose `blob` is `bytes` long, at `version` "0".
pub fn sized_config_map(name: &str, bytes: usize) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"blob": "x".repeat(bytes), "version": "0"}}))
    .unwrap()
}

/// Writes `version` of a [`sized_config_map`]: a new blob of `bytes` (each version's bytes
/// differ from its first byte on).
pub async fn rewrite(cms: &Api<ConfigMap>, name: &str, version: usize, bytes: usize) {
    let blob = format!("{version}{}", "x".repeat(bytes));
    let p = json!({"data": {"version": version.to_string(), "blob": blob}});
    cms.patch(name, &PatchParams::default(), &Patch::Merge(&p))
        .await
        .unwrap();
}
