//! A view decodes what the configurator reads exactly as the whole object does, and nothing
//! else.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, OwnerReference};
use kube::core::WatchEvent;
use netrollout_api::{NodeNetworkConfigSpec, NodePhase};
use netrollout_testkit::objects::{layer2s, node_status};

use super::*;

/// A node config as the API server sends it: a rendered config of 40 layer-2 networks,
/// managedFields, owner, creation time, labels, annotations and a status with times.
fn full() -> NodeNetworkConfig {
    let mut c = NodeNetworkConfig::new(
        "node-7",
        NodeNetworkConfigSpec {
            revision: "ncr-3".into(),
            config: layer2s(100, 40),
        },
    );
    let m = &mut c.metadata;
    m.uid = Some("uid-7".into());
    m.resource_version = Some("4711".into());
    m.generation = Some(3);
    m.labels = Some(
        [(
            "netrollout.io/managed-by".into(),
            "netrollout-configurator".into(),
        )]
        .into(),
    );
    m.annotations = Some(
        [(
            netrollout_api::DISPATCH_ANNOTATION.to_string(),
            r#"{"revision":"ncr-3","at":"2026-11-26T08:00:00.000Z"}"#.to_string(),
        )]
        .into(),
    );
    m.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    m.deletion_timestamp = Some(Time(jiff::Timestamp::from_second(1_800_000_000).unwrap()));
    m.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: "node-7".into(),
        uid: "node-uid".into(),
        ..OwnerReference::default()
    }]);
    m.finalizers = Some(vec!["example.com/keep".into()]);
    m.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("netrollout-configurator".into()),
        operation: Some("Update".into()),
        time: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
        ..ManagedFieldsEntry::default()
    }]);
    let mut status = node_status("ncr-3", NodePhase::Provisioned, Some("applied"));
    status.started_at = Some(Time(jiff::Timestamp::from_second(1_700_000_000).unwrap()));
    status.finished_at = Some(Time(jiff::Timestamp::from_second(1_700_000_002).unwrap()));
    c.status = Some(status);
    c
}

#[test]
fn a_node_config_view_holds_the_metadata_revision_and_status_the_whole_object_holds() {
    let full = full();
    let json = serde_json::to_string(&full).unwrap();
    let view: NodeConfigView = serde_json::from_str(&json).unwrap();
    assert_eq!(view.spec.revision, "ncr-3");
    assert_eq!(
        view.status, full.status,
        "the agent's status, times included"
    );
    let (m, f) = (&view.metadata, &full.metadata);
    assert_eq!(m.name, f.name);
    assert_eq!(m.uid, f.uid);
    assert_eq!(m.resource_version, f.resource_version);
    assert_eq!(m.generation, f.generation);
    assert_eq!(m.labels, f.labels);
    assert_eq!(m.annotations, f.annotations);
    assert_eq!(m.deletion_timestamp, f.deletion_timestamp);
    assert_eq!(view, NodeConfigView::of(&full));
}

#[test]
fn a_node_config_view_skips_the_rendered_config_and_the_metadata_nothing_reads() {
    let view: NodeConfigView =
        serde_json::from_str(&serde_json::to_string(&full()).unwrap()).unwrap();
    let m = &view.metadata;
    assert_eq!(m.managed_fields, None);
    assert_eq!(m.creation_timestamp, None);
    assert_eq!(m.owner_references, None);
    assert_eq!(m.finalizers, None);
    // What a view holds is a small part of what was sent: the rendered config is not kept.
    let sent = serde_json::to_string(&full()).unwrap().len();
    let kept = format!("{view:?}").len();
    assert!(kept * 4 < sent, "the view keeps {kept} of {sent} bytes");
}

#[test]
fn a_watch_event_of_a_node_config_decodes_into_the_view() {
    let full = full();
    let line = serde_json::to_string(&WatchEvent::Modified(full.clone())).unwrap();
    match serde_json::from_str::<WatchEvent<NodeConfigView>>(&line).unwrap() {
        WatchEvent::Modified(view) => assert_eq!(view, NodeConfigView::of(&full)),
        _ => panic!("not a MODIFIED event: {line}"),
    }
    // A config without status (just created) has none in its view either.
    let mut created = full;
    created.status = None;
    let view: NodeConfigView =
        serde_json::from_str(&serde_json::to_string(&created).unwrap()).unwrap();
    assert_eq!(view.status, None);
}

#[test]
fn a_node_config_view_is_served_from_the_node_config_url() {
    use kube::Resource;
    assert_eq!(
        NodeConfigView::url_path(&(), None),
        NodeNetworkConfig::url_path(&(), None)
    );
    assert_eq!(
        NodeConfigView::api_version(&()),
        NodeNetworkConfig::api_version(&())
    );
    assert_eq!(NodeConfigView::kind(&()), "NodeNetworkConfig");
}
