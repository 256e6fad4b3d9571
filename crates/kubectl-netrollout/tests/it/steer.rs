//! `pause`, `resume`, `retry`, `diff` and `undo` against a lab API server: what they write is
//! what the configurator and agents read.

use crate::common;

use common::{LabApi, PluginLab as _, failed_status, node_status, rev_status, snapshot};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, PostParams};
use netrollout_api::{
    CONTROL_CONFIGMAP, DEFAULT_NAMESPACE, Layer2NetworkConfiguration, NODE_RETRY_ANNOTATION,
    NodePhase, RETRY_ANNOTATION, RevisionPhase, RoutingTable, RoutingTableSpec,
    VRFRouteConfiguration,
};

async fn paused(lab: &LabApi) -> Option<String> {
    Api::<ConfigMap>::namespaced(lab.client.clone(), DEFAULT_NAMESPACE)
        .get_opt(CONTROL_CONFIGMAP)
        .await
        .unwrap()
        .and_then(|c| c.data)
        .and_then(|d| d.get("paused").cloned())
}

#[tokio::test]
async fn pause_and_resume_write_the_control_configmap_or_one_revisions_spec() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Progressing, 2, 1, 1, 0),
    )
    .await;
    assert_eq!(paused(&lab).await, None);
    lab.plugin(&["pause"]).await.expect_code(0);
    assert_eq!(
        paused(&lab).await.as_deref(),
        Some("true"),
        "pause creates the ConfigMap"
    );
    let status = lab.plugin(&["status"]).await;
    assert!(
        status.expect_code(4).contains("PAUSED globally"),
        "{}",
        status.stdout
    );
    lab.plugin(&["resume"]).await.expect_code(0);
    assert_eq!(paused(&lab).await.as_deref(), Some("false"));

    lab.plugin(&["pause", "1"]).await.expect_code(0);
    assert!(
        lab.revision_api().get("ncr-one").await.unwrap().spec.paused,
        "a sequence number names the revision"
    );
    lab.plugin(&["resume", "ncr-one"]).await.expect_code(0);
    assert!(!lab.revision_api().get("ncr-one").await.unwrap().spec.paused);
    let elsewhere = lab.plugin(&["pause", "-n", "netrollout-elsewhere"]).await;
    elsewhere.expect_code(1);
    assert!(
        elsewhere
            .stderr
            .contains("namespace netrollout-elsewhere does not exist"),
        "{}",
        elsewhere.stderr
    );
    let missing = lab.plugin(&["pause", "ncr-nope"]).await;
    missing.expect_code(1);
    assert!(
        missing
            .stderr
            .contains("no NetworkConfigRevision \"ncr-nope\""),
        "{}",
        missing.stderr
    );
}

#[tokio::test]
async fn retry_annotates_a_failed_revision_and_refuses_one_that_did_not_fail() {
    let lab = LabApi::netrollout().await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    lab.revision(
        "ncr-two",
        2,
        snapshot(9000, false),
        failed_status("node-a", 1),
    )
    .await;
    let refused = lab.plugin(&["retry", "ncr-one"]).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("is Succeeded, not Failed"),
        "{}",
        refused.stderr
    );
    assert!(
        lab.revision_api()
            .get("ncr-one")
            .await
            .unwrap()
            .metadata
            .annotations
            .is_none()
    );

    lab.plugin(&["retry", "ncr-two"]).await.expect_code(0);
    let ann = lab
        .revision_api()
        .get("ncr-two")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap();
    assert!(
        ann[RETRY_ANNOTATION].parse::<jiff::Timestamp>().is_ok(),
        "the value is the time: {ann:?}"
    );
}

#[tokio::test]
async fn retry_node_annotates_only_nodes_that_failed_their_current_revision() {
    let lab = LabApi::netrollout().await;
    lab.config(
        "node-a",
        "ncr-one",
        Some(node_status(
            "ncr-one",
            NodePhase::Failed,
            Some("probe failed"),
        )),
    )
    .await;
    lab.config(
        "node-b",
        "ncr-one",
        Some(node_status("ncr-one", NodePhase::Provisioned, None)),
    )
    .await;
    lab.plugin(&["retry", "--node", "node-a"])
        .await
        .expect_code(0);
    let first = lab
        .config_api()
        .get("node-a")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap()[NODE_RETRY_ANNOTATION]
        .clone();
    lab.plugin(&["retry", "--node", "node-a"])
        .await
        .expect_code(0);
    let second = lab
        .config_api()
        .get("node-a")
        .await
        .unwrap()
        .metadata
        .annotations
        .unwrap()[NODE_RETRY_ANNOTATION]
        .clone();
    assert_ne!(first, second, "each retry is a new value");
    let refused = lab.plugin(&["retry", "--node", "node-b"]).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("has not failed"),
        "{}",
        refused.stderr
    );
}

#[tokio::test]
async fn diff_shows_input_changes_and_which_nodes_change_how() {
    let lab = LabApi::netrollout().await;
    lab.node("node-a", true).await;
    lab.node("node-b", true).await;
    lab.revision(
        "ncr-one",
        1,
        snapshot(1500, false),
        rev_status(RevisionPhase::Succeeded, 2, 2, 0, 0),
    )
    .await;
    lab.revision(
        "ncr-two",
        2,
        snapshot(9000, true),
        rev_status(RevisionPhase::Progressing, 2, 0, 1, 1),
    )
    .await;
    let out = lab.plugin(&["diff", "ncr-one", "ncr-two"]).await;
    let text = out.expect_code(0);
    assert!(
        text.contains("~ layer2NetworkConfigurations[vlan501].spec.mtu: 1500 -> 9000"),
        "{text}"
    );
    assert!(
        text.contains(
            "+ routingTables[taas-100]: {\"name\":\"taas-100\",\"spec\":{\"tableId\":100}}"
        ),
        "{text}"
    );
    assert!(
        text.contains("node-a, node-b (2):"),
        "both nodes change alike: {text}"
    );
    assert!(text.contains("~ layer2s[501].mtu: 1500 -> 9000"), "{text}");
    assert!(text.contains("+ routingTables[100]"), "{text}");
    let one = lab.plugin(&["diff", "2", "-o", "json"]).await;
    let json: serde_json::Value = serde_json::from_str(one.expect_code(0)).unwrap();
    assert_eq!(
        json["from"], "ncr-one",
        "one revision is compared with the one before it"
    );
    assert_eq!(
        json["nodes"][0]["nodes"],
        serde_json::json!(["node-a", "node-b"])
    );
}

pub(crate) async fn create_inputs_of(lab: &LabApi, s: &netrollout_api::Snapshot) {
    let pp = PostParams::default();
    for v in &s.vrf_route_configurations {
        let api = Api::<VRFRouteConfiguration>::all(lab.client.clone());
        api.create(&pp, &VRFRouteConfiguration::new(&v.name, v.spec.clone()))
            .await
            .unwrap();
    }
    for l in &s.layer2_network_configurations {
        let api = Api::<Layer2NetworkConfiguration>::all(lab.client.clone());
        api.create(
            &pp,
            &Layer2NetworkConfiguration::new(&l.name, l.spec.clone()),
        )
        .await
        .unwrap();
    }
    for t in &s.routing_tables {
        let api = Api::<RoutingTable>::all(lab.client.clone());
        api.create(&pp, &RoutingTable::new(&t.name, t.spec.clone()))
            .await
            .unwrap();
    }
}

async fn live_snapshot(lab: &LabApi) -> netrollout_api::Snapshot {
    let lp = ListParams::default();
    let vrfs = Api::<VRFRouteConfiguration>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    let l2s = Api::<Layer2NetworkConfiguration>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    let tables = Api::<RoutingTable>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    netrollout_render::from_objects(&vrfs, &l2s, &tables)
}

#[tokio::test]
async fn undo_shows_the_changes_then_rewrites_the_inputs_to_the_older_snapshot() {
    let lab = LabApi::netrollout().await;
    let old = snapshot(1500, false);
    let mut new = snapshot(9000, true);
    new.routing_tables.push(netrollout_api::NamedInput {
        name: "taas-200".into(),
        spec: RoutingTableSpec { table_id: 200 },
    });
    lab.revision(
        "ncr-one",
        1,
        old.clone(),
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    lab.revision("ncr-two", 2, new.clone(), failed_status("node-a", 1))
        .await;
    create_inputs_of(&lab, &new).await;

    let dry = lab.plugin(&["undo", "--dry-run"]).await;
    let text = dry.expect_code(0);
    assert!(
        text.contains("undo to revision ncr-one (sequence 1): 3 input object(s) change"),
        "{text}"
    );
    assert!(
        text.contains("update Layer2NetworkConfiguration vlan501")
            && text.contains("~ spec.mtu: 9000 -> 1500"),
        "{text}"
    );
    assert!(
        text.contains("delete RoutingTable taas-100")
            && text.contains("delete RoutingTable taas-200"),
        "{text}"
    );
    assert!(text.contains("dry run: nothing changed"));
    assert_eq!(live_snapshot(&lab).await, new, "a dry run writes nothing");

    let refused = lab.plugin(&["undo"]).await;
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("pass --yes"),
        "without a terminal undo needs --yes: {}",
        refused.stderr
    );
    assert!(
        refused
            .stdout
            .contains("update Layer2NetworkConfiguration vlan501"),
        "the diff comes first"
    );
    assert_eq!(live_snapshot(&lab).await, new);

    let done = lab.plugin(&["undo", "--yes"]).await;
    let text = done.expect_code(0);
    assert!(
        text.contains("updated Layer2NetworkConfiguration vlan501"),
        "{text}"
    );
    assert!(
        text.contains("deleted RoutingTable taas-100")
            && text.contains("deleted RoutingTable taas-200"),
        "{text}"
    );
    let live = live_snapshot(&lab).await;
    assert_eq!(live, old);
    let hash = netrollout_render::Revision::of(&live).unwrap().hash;
    assert_eq!(
        hash,
        lab.revision_api().get("ncr-one").await.unwrap().spec.hash,
        "the inputs hash to the older revision"
    );

    let again = lab
        .plugin(&["undo", "--to-revision", "ncr-one", "--yes"])
        .await;
    assert!(
        again.expect_code(0).contains("nothing to change"),
        "{}",
        again.stdout
    );
}

#[tokio::test]
async fn undo_recreates_deleted_inputs_and_refuses_to_go_back_to_a_failed_revision() {
    let lab = LabApi::netrollout().await;
    let old = snapshot(1500, true);
    let new = netrollout_api::Snapshot::default();
    lab.revision(
        "ncr-one",
        1,
        old.clone(),
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    lab.revision(
        "ncr-two",
        2,
        snapshot(9000, false),
        failed_status("node-a", 1),
    )
    .await;
    lab.revision(
        "ncr-three",
        3,
        new,
        rev_status(RevisionPhase::Succeeded, 1, 1, 0, 0),
    )
    .await;
    let refused = lab.plugin(&["undo", "--to-revision", "2", "--yes"]).await;
    refused.expect_code(1);
    assert!(refused.stderr.contains("is Failed"), "{}", refused.stderr);

    let json = lab.plugin(&["undo", "--yes", "-o", "json"]).await;
    let report: serde_json::Value = serde_json::from_str(json.expect_code(0)).unwrap();
    assert_eq!(
        report["target"], "ncr-one",
        "the default is the newest Succeeded revision before the newest"
    );
    assert_eq!(report["applied"].as_array().unwrap().len(), 3, "{report}");
    assert_eq!(live_snapshot(&lab).await, old);
}
