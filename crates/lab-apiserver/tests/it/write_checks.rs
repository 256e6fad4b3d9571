//! What a write that changes part of an object is still checked for: a patch is checked where
//! it differs from the stored version, so a field it changes is refused for a wrong type even
//! when the rest of the object is kept as stored.

use crate::common;

use common::LabApi;
use common::objects::{install_crds, widget, widgets_resource};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_giving_a_metadata_field_the_wrong_type_is_refused_and_nothing_is_stored() {
    let lab = LabApi::start().await;
    let client = lab.server.client().unwrap();
    install_crds(&client).await;
    let widgets: Api<DynamicObject> = Api::all_with(client, &widgets_resource());
    let mut w = widget("w", 1);
    w.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
    w.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    let stored = widgets.create(&PostParams::default(), &w).await.unwrap();

    for bad in [
        json!({"metadata": {"labels": {"team": 1}}}),
        json!({"metadata": {"annotations": {"note": true}}}),
        json!({"metadata": {"finalizers": "example.com/f"}}),
        json!({"metadata": {"labels": {"team": "b"}, "ownerReferences": {"uid": "u"}}}),
    ] {
        let err = widgets
            .patch("w", &PatchParams::default(), &Patch::Merge(&bad))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, kube::Error::Api(e) if e.code == 400
                && e.message.contains("Widget in version \"v1\" cannot be handled as a Widget")),
            "{bad}: {err}"
        );
    }
    let after = widgets.get("w").await.unwrap();
    assert_eq!(
        after.metadata.resource_version, stored.metadata.resource_version,
        "no refused patch was stored"
    );

    let ok = json!({"metadata": {"labels": {"team": "b"}}});
    let after = widgets
        .patch("w", &PatchParams::default(), &Patch::Merge(&ok))
        .await
        .unwrap();
    assert_eq!(after.metadata.labels.unwrap()["team"], "b");
    assert_eq!(after.metadata.annotations.unwrap()["note"], "x");
}
