//! Node configs against the lab API server: what the watch's cache holds of each config (the
//! view the configurator decodes) and which names it marks for the fleet, and how a write's
//! metadata-only response is laid over the cache.

use std::time::Duration;

use clap::Parser;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use netrollout_api::NodePhase;
use netrollout_lab_apiserver::Config;
use netrollout_testkit::apiserver::{LabApi, install_netrollout};
use netrollout_testkit::objects::node_status;
use netrollout_testkit::wait::eventually;

use super::*;

const WITHIN: Duration = Duration::from_secs(10);

/// The watches of a configurator started with no flags, on `lab`.
async fn watches(lab: &LabApi) -> (Stores, Arc<Changes>, Tasks) {
    let args = Args::parse_from(["netrollout-configurator"]);
    let notify = Arc::new(Notify::new());
    let changes = Arc::new(Changes::default());
    let mut tasks = supervised(&Arc::new(Metrics::default()));
    let stores = start_watches(&lab.client, &args, &notify, &changes, &mut tasks);
    // The first list marks everything (what a new leader starts from).
    let listed = eventually(WITHIN, || {
        let all = changes.take().is_none();
        async move { Ok(all) }
    })
    .await;
    assert!(listed.is_ok(), "the first list did not mark every name");
    tokio::time::timeout(WITHIN, stores.nncs.wait_until_ready())
        .await
        .expect("the node-config cache syncs")
        .expect("the node-config cache syncs");
    (stores, changes, tasks)
}

/// The cached view of `name`: (spec revision, status phase and observed revision).
fn cached(stores: &Stores, name: &str) -> Option<(String, Option<(NodePhase, String)>)> {
    let c = stores.nncs.get(&ObjectRef::new(name))?;
    let status = c
        .status
        .as_ref()
        .and_then(|s| Some((s.phase?, s.observed_revision.clone()?)));
    Some((c.spec.revision.clone(), status))
}

/// Waits until the cache shows `name` with spec revision and status (phase, observed revision)
/// as `want` (`None`: not at all).
async fn until(stores: &Stores, name: &str, want: Option<(&str, Option<(NodePhase, &str)>)>) {
    let want = want.map(|(r, s)| (r.to_string(), s.map(|(p, o)| (p, o.to_string()))));
    let seen = eventually(WITHIN, || {
        let now = cached(stores, name);
        let want = want.clone();
        async move { Ok(now == want) }
    })
    .await;
    assert!(
        seen.is_ok(),
        "node config {name}: the cache shows {:?}, want {want:?}",
        cached(stores, name)
    );
}

#[tokio::test]
async fn the_node_config_cache_follows_writes_status_reports_deletes_and_a_relist() {
    // A window of a few events: a watch that resumes after more writes than that relists.
    let lab = LabApi::start_with(Config {
        event_window: 4,
        ..Config::default()
    })
    .await;
    install_netrollout(&lab.client).await;
    let (stores, changes, _tasks) = watches(&lab).await;
    let api = lab.config_api();

    lab.config("a", "ncr-1", None).await;
    lab.config("b", "ncr-1", None).await;
    until(&stores, "a", Some(("ncr-1", None))).await;
    until(&stores, "b", Some(("ncr-1", None))).await;
    let marked = changes.take().expect("names, not everything");
    assert!(marked.contains("a") && marked.contains("b"), "{marked:?}");

    // The agent's report and a new spec revision are seen.
    lab.set_config_status("a", node_status("ncr-1", NodePhase::Provisioned, None))
        .await;
    until(
        &stores,
        "a",
        Some(("ncr-1", Some((NodePhase::Provisioned, "ncr-1")))),
    )
    .await;
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "spec": { "revision": "ncr-2" } })),
    )
    .await
    .expect("patch the spec");
    until(
        &stores,
        "a",
        Some(("ncr-2", Some((NodePhase::Provisioned, "ncr-1")))),
    )
    .await;

    // A deleted config leaves the cache and its name is marked.
    changes.take();
    api.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    until(&stores, "b", None).await;
    assert_eq!(changes.take(), Some(["b".to_string()].into()));

    // A watch that cannot resume (its resourceVersion left the server's window) relists: the
    // cache is rebuilt from the list and everything is marked.
    lab.server
        .faults()
        .set_error_rate(Some("watch"), Some("nodenetworkconfigs"), 1.0);
    lab.server.faults().drop_watches();
    lab.config("c", "ncr-3", None).await;
    for phase in [NodePhase::Provisioning, NodePhase::Failed] {
        for _ in 0..3 {
            lab.set_config_status("c", node_status("ncr-3", phase, None))
                .await;
            lab.set_config_status("a", node_status("ncr-2", phase, None))
                .await;
        }
    }
    changes.take();
    lab.server
        .faults()
        .set(netrollout_lab_apiserver::FaultConfig::default());
    until(
        &stores,
        "c",
        Some(("ncr-3", Some((NodePhase::Failed, "ncr-3")))),
    )
    .await;
    until(
        &stores,
        "a",
        Some(("ncr-2", Some((NodePhase::Failed, "ncr-2")))),
    )
    .await;
    let relisted = eventually(WITHIN, || {
        let all = changes.take().is_none();
        async move { Ok(all) }
    })
    .await;
    assert!(relisted.is_ok(), "the relist did not mark every name");
}

#[tokio::test]
async fn a_node_config_write_is_seen_at_once_as_the_server_holds_it() {
    use netrollout_api::{NodeNetworkConfig, NodeNetworkConfigSpec};

    use crate::context::Context;
    use crate::fleet::Source;
    use crate::views::NodeConfigView;

    let lab = LabApi::netrollout().await;
    let (stores, changes, _tasks) = watches(&lab).await;
    let (_leading, leader) = tokio::sync::watch::channel(true);
    let ctx = Context::new(
        lab.client.clone(),
        stores.clone(),
        changes.clone(),
        Arc::new(Metrics::default()),
        leader,
        "test".into(),
        WITHIN,
    );
    let api = lab.config_api();
    let mut obj = NodeNetworkConfig::new(
        "a",
        NodeNetworkConfigSpec {
            revision: "ncr-1".into(),
            config: netrollout_testkit::objects::layer2s(100, 3),
        },
    );
    obj.metadata.annotations = Some([("x".to_string(), "1".to_string())].into());
    changes.take();

    // A create: the server's metadata, the revision sent, no status.
    let created = ctx.writer().create_node_config(&obj).await.expect("create");
    let server = api.get("a").await.expect("get a");
    assert_eq!(*created, NodeConfigView::of(&server));
    assert_eq!(created.status, None);
    assert_eq!(ctx.read().config("a").as_deref(), Some(&*created));
    assert_eq!(changes.take(), Some(["a".to_string()].into()));

    // A patch after the agent reported: the merged annotations and the new resourceVersion as
    // the server returns them, the revision written, the status the object has.
    lab.set_config_status("a", node_status("ncr-1", NodePhase::Provisioning, None))
        .await;
    until(
        &stores,
        "a",
        Some(("ncr-1", Some((NodePhase::Provisioning, "ncr-1")))),
    )
    .await;
    let before = ctx.read().config("a").expect("config a");
    let patch = serde_json::json!({
        "metadata": { "annotations": { "y": "2" } },
        "spec": { "revision": "ncr-2" },
    });
    let patched = ctx
        .writer()
        .patch_node_config("a", &patch, &before, Some("ncr-2"))
        .await
        .expect("patch");
    let server = api.get("a").await.expect("get a");
    assert_eq!(*patched, NodeConfigView::of(&server));
    assert_eq!(patched.spec.revision, "ncr-2");
    assert_eq!(
        patched.metadata.annotations.as_ref().map(|a| a.len()),
        Some(2),
        "{:?}",
        patched.metadata.annotations
    );
    assert_ne!(
        patched.metadata.resource_version,
        before.metadata.resource_version
    );
    // Seen at once, whether or not the cache has caught up.
    assert_eq!(ctx.read().config("a").as_deref(), Some(&*patched));
    // A patch of the metadata alone keeps the revision.
    let recorded = ctx
        .writer()
        .patch_node_config(
            "a",
            &serde_json::json!({ "metadata": { "annotations": { "z": "3" } } }),
            &patched,
            None,
        )
        .await
        .expect("patch");
    let server = api.get("a").await.expect("get a");
    assert_eq!(*recorded, NodeConfigView::of(&server));
}
