//! The real agent in a network namespace against the lab API server: the happy path, the
//! field selector, what it writes, metrics and health, and probes that failed before a change.

use crate::common;

use std::sync::{Arc, Mutex};

use common::AgentLab as _;
use common::layer2s;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use netrollout_api::{NodeNetworkConfig, NodeNetworkConfigSpec, NodePhase};

#[tokio::test]
async fn a_new_revision_goes_provisioning_to_provisioned_and_the_node_turns_ready() {
    let mut lab = common::lab().await;
    lab.extra_args = vec![
        "--probe-tcp".into(),
        lab.api_target(),
        "--health-addr".into(),
        format!("{}:9102", lab.ns_ip),
    ];
    lab.set_spec("rev-a", layer2s(100, 3)).await;
    // Every status the API server stores, in order, as a watcher sees them.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let phases = seen.clone();
    let cfg = watcher::Config::default().fields(&format!("metadata.name={}", lab.node));
    let stream = watcher(lab.nnc_api(), cfg).applied_objects();
    let watch = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(obj)) = stream.next().await {
            let s = obj.status.unwrap_or_default();
            phases.lock().unwrap().push((s.observed_revision, s.phase));
        }
    });
    lab.start_agent();
    let nnc = lab.wait_finished("rev-a", 30).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    watch.abort();
    let rev = Some("rev-a".to_string());
    let order: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(r, _)| r == &rev)
        .map(|(_, p)| *p)
        .collect();
    assert_eq!(
        order.first(),
        Some(&Some(NodePhase::Provisioning)),
        "phases seen: {order:?}"
    );
    assert_eq!(order.last(), Some(&Some(NodePhase::Provisioned)));
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-a"));
    assert!(status.started_at.is_some() && status.finished_at.is_some());
    assert!(lab.holds(&layer2s(100, 3)).await);
    // The Node's condition is written right after the object's status.
    common::wait_node_condition(&lab, "True", "Applied").await;
    // The agent went through Provisioning (its log names each step with the revision).
    let log = lab.log();
    for step in [
        "\"journal\"",
        "\"probe-before\"",
        "\"apply\"",
        "\"probe-after\"",
        "\"commit\"",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(step) && l.contains("rev-a") && l.contains("duration_ms")),
            "no {step} step line in:\n{log}"
        );
    }

    // The next revision replaces the networks: 101 and 102 stay, 100 goes, 103 comes.
    lab.set_spec("rev-b", layer2s(101, 3)).await;
    lab.wait_finished("rev-b", 30).await;
    assert!(lab.holds(&layer2s(101, 3)).await);
    assert!(!lab.ip("link show").contains("l2.100"));

    let (status, body) = lab.http_get(9101, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("netrollout_agent_applies_total{outcome=\"provisioned\"} 2"),
        "{body}"
    );
    assert!(body.contains("netrollout_agent_apply_duration_seconds_count 2"));
    let events: Api<Event> = Api::all(lab.client.clone());
    let events = events.list(&Default::default()).await.unwrap();
    assert!(
        events
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("Applied")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(lab.node.as_str())),
        "no Applied event for {}: {:?}",
        lab.node,
        events.items
    );
    assert_eq!(lab.http_get(9101, "/healthz").await.0, 200);
    assert_eq!(lab.http_get(9101, "/readyz").await.0, 200);
    // The separate health listener serves the probes and nothing else.
    assert_eq!(lab.http_get(9102, "/healthz").await.0, 200);
    assert_eq!(lab.http_get(9102, "/readyz").await.0, 200);
    assert_eq!(lab.http_get(9102, "/metrics").await.0, 404);
}

#[tokio::test]
async fn the_agent_watches_and_writes_only_its_own_objects() {
    let mut lab = common::lab().await;
    // Another node's config and Node: the agent must neither apply nor touch them.
    let other = NodeNetworkConfig::new(
        "other-node",
        NodeNetworkConfigSpec {
            revision: "rev-other".into(),
            config: layer2s(300, 2),
        },
    );
    let nnc_api: Api<NodeNetworkConfig> = Api::all(lab.client.clone());
    nnc_api
        .create(&PostParams::default(), &other)
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(lab.client.clone());
    let mut other_node = Node::default();
    other_node.metadata.name = Some("other-node".into());
    nodes
        .create(&PostParams::default(), &other_node)
        .await
        .unwrap();
    lab.set_spec("rev-own", layer2s(200, 1)).await;
    lab.start_agent();
    lab.wait_finished("rev-own", 30).await;

    assert!(!lab.ip("link show").contains("l2.300"));
    let other = nnc_api.get("other-node").await.unwrap();
    assert_eq!(other.status, None, "the other node's status was written");
    let other_node = nodes.get("other-node").await.unwrap();
    assert!(other_node.status.and_then(|s| s.conditions).is_none());
    // Its own NNC spec is untouched: only the status changed.
    let own = nnc_api.get(&lab.node).await.unwrap();
    assert_eq!(own.spec.revision, "rev-own");
    assert_eq!(own.spec.config, layer2s(200, 1));
    // The watch used a field selector on its own name (the lab server saw one watcher for it).
    assert!(lab.log().contains("watching the NodeNetworkConfig"));
}

#[tokio::test]
async fn probes_that_failed_before_the_change_are_reported_not_enforced() {
    let mut lab = common::lab().await;
    // Port 1 on the host is closed: this probe fails before and after the change.
    let closed = format!("{}:1", lab.host_ip);
    lab.extra_args = vec![
        "--probe-tcp".into(),
        format!("{closed},{}", lab.api_target()),
        "--probe-each-timeout".into(),
        "500ms".into(),
    ];
    lab.set_spec("rev-c", layer2s(400, 2)).await;
    lab.start_agent();
    let nnc = lab.wait_finished("rev-c", 30).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains(&format!(
            "1 check not judged, as it already failed before the change: tcp {closed}"
        )),
        "{message}"
    );
    assert!(
        status
            .preexisting_failures
            .iter()
            .any(|c| c.name == format!("tcp {closed}") && !c.error.is_empty()),
        "{status:?}"
    );
    assert!(lab.holds(&layer2s(400, 2)).await);
}

/// `disableSegmentation` through the real agent: offload off on the network's bridge, VXLAN
/// device and macvlan (read back with `ethtool -k`), and on again when the next revision turns
/// the field off.
#[tokio::test]
async fn disable_segmentation_turns_offload_off_and_the_next_revision_restores_it() {
    let mut lab = common::lab().await;
    let config = |off: bool| {
        let mut c = layer2s(500, 1);
        c.layer2s[0].macvlan_interface = Some("mv.500".into());
        c.layer2s[0].disable_segmentation = off;
        c
    };
    let ethtool = |ns: &str, dev: &str| {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", ns, "ethtool", "-k", dev])
            .output()
            .expect("ethtool (hack/install-deps.sh)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let has = |text: &str, line: &str| text.lines().any(|l| l.starts_with(line));
    lab.set_spec("rev-off", config(true)).await;
    lab.start_agent();
    let status = lab.wait_finished("rev-off", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    for dev in ["l2.500", "lx.500", "mv.500"] {
        let k = ethtool(&lab.ns, dev);
        for f in ["generic-segmentation-offload", "generic-receive-offload"] {
            assert!(has(&k, &format!("{f}: off")), "{dev} {f}:\n{k}");
        }
    }
    assert!(has(
        &ethtool(&lab.ns, "l2.500"),
        "tcp-segmentation-offload: off"
    ));

    lab.set_spec("rev-on", config(false)).await;
    let status = lab.wait_finished("rev-on", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    for dev in ["l2.500", "lx.500", "mv.500"] {
        let k = ethtool(&lab.ns, dev);
        for f in [
            "generic-segmentation-offload",
            "generic-receive-offload",
            "tcp-segmentation-offload",
        ] {
            assert!(has(&k, &format!("{f}: on")), "{dev} {f}:\n{k}");
        }
    }
}
