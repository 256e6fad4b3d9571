//! The exact requests [`run`] makes for the planner's actions, through a real client to the
//! request verifier (`context::verifier`): a phase is one status merge patch (phase, message,
//! conditions and, for Failed, the failed nodes with their reason word and checks) then its
//! Event; a dispatch to a node without a config creates it, then records `Dispatched`.

use std::collections::BTreeMap;

use netrollout_api::reason::HEALTH_REGRESSED;
use netrollout_rollout::{FailureCause, NodeDispatch, Timestamp};

use super::*;
use crate::context::verifier;

fn world<'a>(ncrs: &'a [NetworkConfigRevision], renders: &'a RenderCache) -> World<'a> {
    World {
        nodes: HashMap::new(),
        nncs: HashMap::new(),
        ncrs: ncrs
            .iter()
            .filter_map(|r| Some((r.metadata.name.as_deref()?, r)))
            .collect(),
        renders,
        globally_paused: false,
        refusal: None,
    }
}

#[tokio::test]
async fn a_failed_phase_is_one_status_patch_with_the_failed_nodes_then_its_event() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.metadata.generation = Some(2);
    let ncrs = [ncr];
    let (ctx, server) = verifier::context(&ncrs, &[], true);
    let renders = RenderCache::default();
    let failed = NodeFailure {
        node: "node-1".into(),
        cause: FailureCause::HealthRegressed {
            checks: vec!["tenant-gw".into()],
        },
        message: "health regressed after the wave".into(),
        at: Timestamp::from_millis(1_700_000_000_000),
    };
    let action = Action::SetRevisionPhase {
        revision: "ncr-a".into(),
        phase: RevisionPhase::Failed,
        reason: "1 node(s) failed".into(),
        failed_nodes: vec![failed],
    };

    run(&ctx, &world(&ncrs, &renders), &[action])
        .await
        .expect("run");
    let seen = server.take();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    let status = seen[0].status_patch("ncr-a");
    assert_eq!(status["phase"], "Failed");
    assert_eq!(status["message"], "1 node(s) failed");
    assert_eq!(status["observedGeneration"], 2);
    let ready = (status["conditions"].as_array().unwrap().iter())
        .find(|c| c["type"] == "Ready")
        .expect("the conditions go with the phase");
    assert_eq!(
        (&ready["status"], &ready["reason"]),
        (&"False".into(), &"Failed".into())
    );
    assert_eq!(
        status["failedNodes"],
        serde_json::json!([{
            "node": "node-1",
            "reason": HEALTH_REGRESSED,
            "message": "health regressed after the wave",
            "failingChecks": ["tenant-gw"],
            "time": "2023-11-14T22:13:20Z",
        }])
    );
    assert_eq!(
        seen[1].event_said(),
        ["Failed", "Warning", "ncr-a", "1 node(s) failed"]
    );
}

#[tokio::test]
async fn a_dispatch_creates_the_node_config_then_records_the_event() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.spec.sequence = 3;
    ncr.spec.hash = "sha256:a".into();
    let ncrs = [ncr];
    let (ctx, server) = verifier::context(&ncrs, &[], true);
    let renders = RenderCache::default();
    let node = netrollout_render::Node {
        name: "node-1".into(),
        labels: BTreeMap::new(),
    };
    renders.set_nodes(1, Arc::new(vec![node]));
    let record = DispatchRecord {
        revision: "ncr-a".into(),
        at: Timestamp::from_millis(1_700_000_000_000),
        previous: None,
        picked_up_at: None,
        sequence: Some(3),
        settled_at: None,
    };
    let action = Action::Dispatch {
        revision: "ncr-a".into(),
        kind: DispatchKind::Rollout,
        nodes: vec![NodeDispatch {
            node: "node-1".into(),
            record: record.clone(),
        }],
        reason: "wave 1".into(),
    };

    run(&ctx, &world(&ncrs, &renders), &[action])
        .await
        .expect("run");
    let seen = server.take();
    assert_eq!(seen.len(), 2, "{seen:#?}");
    let create = &seen[0];
    assert_eq!(
        (create.method.as_str(), create.uri.split('?').next()),
        (
            "POST",
            Some("/apis/netrollout.io/v1alpha1/nodenetworkconfigs")
        )
    );
    let body = &create.body;
    assert_eq!(body["metadata"]["name"], "node-1");
    assert_eq!(
        body["metadata"]["labels"][MANAGED_BY_LABEL],
        "netrollout-configurator"
    );
    assert_eq!(
        body["metadata"]["annotations"],
        serde_json::json!({ DISPATCH_ANNOTATION: record_annotations(&record).unwrap()[DISPATCH_ANNOTATION] })
    );
    assert_eq!(body["spec"]["revision"], "ncr-a");
    assert!(body["spec"]["config"].is_object(), "{body}");
    assert_eq!(
        seen[1].event_said(),
        ["Dispatched", "Normal", "ncr-a", "wave 1 (nodes: node-1)"]
    );
}
