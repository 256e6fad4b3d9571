//! The lab API server's watches driven by kube::Client's watcher: resuming after dropped streams
//! and 410 Gone, a slow watcher under a burst, label-selected and streaming-list watches. The
//! other client behaviours (a Controller, server-side apply, conflicts, finalizers, garbage
//! collection, status, lists) are in `client.rs`.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use common::LabApi;
use common::objects::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use netrollout_lab_apiserver::Config;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_watcher_resumes_after_dropped_streams_and_relists_after_410_gone() {
    let lab = LabApi::start_with(Config {
        event_window: 5,
        ..Config::default()
    })
    .await;
    let client = lab.server.client().unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let inits = Arc::new(AtomicUsize::new(0));
    let counted = inits.clone();
    let mut events = watcher(cms.clone(), watcher::Config::default())
        .inspect_ok(move |e| {
            if matches!(e, watcher::Event::Init) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        })
        .filter_map(|e| async move { e.ok() })
        .boxed();
    until(&mut events, |e| matches!(e, watcher::Event::InitDone)).await;
    cms.create(&PostParams::default(), &config_map("one"))
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, watcher::Event::Apply(c) if c.metadata.name.as_deref() == Some("one")),
    )
    .await;

    // A dropped stream is resumed from the last resourceVersion, without a relist.
    lab.server.faults().drop_watches();
    cms.create(&PostParams::default(), &config_map("two"))
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, watcher::Event::Apply(c) if c.metadata.name.as_deref() == Some("two")),
    )
    .await;
    assert_eq!(inits.load(Ordering::SeqCst), 1, "resuming must not relist");

    // Keep the watcher away while more changes happen than the window retains: 410, relist.
    lab.server
        .faults()
        .set_error_rate(Some("watch"), Some("configmaps"), 1.0);
    lab.server.faults().drop_watches();
    for i in 0..10 {
        cms.create(&PostParams::default(), &config_map(&format!("burst-{i}")))
            .await
            .unwrap();
    }
    lab.server.faults().clear();
    until(&mut events, |e| matches!(e, watcher::Event::InitApply(c) if c.metadata.name.as_deref() == Some("burst-9"))).await;
    assert_eq!(
        inits.load(Ordering::SeqCst),
        2,
        "410 Gone must make the watcher relist once"
    );
}

/// Events queued behind one another go out in one chunk (`watch::coalesce`); the watcher must
/// still see every one, once, in resourceVersion order.
#[tokio::test(flavor = "multi_thread")]
async fn a_burst_of_changes_reaches_a_slow_watcher_whole_and_in_order() {
    const BURST: usize = 300;
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let start = lab.server.resource_version().to_string();
    let mut events = cms
        .watch(&kube::api::WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();
    // Nothing reads the stream while the burst is written: the events queue in the server.
    futures::stream::iter(0..BURST)
        .map(|i| {
            let cms = cms.clone();
            async move {
                cms.create(&PostParams::default(), &config_map(&format!("b-{i:03}")))
                    .await
                    .unwrap()
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let mut seen: Vec<u64> = Vec::new();
    while seen.len() < BURST {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("the watch went quiet before the whole burst arrived")
            .expect("the watch ended")
            .unwrap();
        match event {
            kube::api::WatchEvent::Added(cm) => {
                seen.push(cm.metadata.resource_version.unwrap().parse().unwrap());
            }
            kube::api::WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(seen, sorted, "every event once, in resourceVersion order");
    assert_eq!(
        cms.list(&Default::default()).await.unwrap().items.len(),
        BURST
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_label_selected_watch_sees_objects_enter_and_leave_its_selection() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    let mut events = watcher(cms.clone(), watcher::Config::default().labels("pick=yes"))
        .filter_map(|e| async move { e.ok() })
        .boxed();
    until(&mut events, |e| matches!(e, watcher::Event::InitDone)).await;
    cms.create(&PostParams::default(), &config_map("m"))
        .await
        .unwrap();
    let label = |v: &str| json!({"metadata": {"labels": {"pick": v}}});
    cms.patch("m", &PatchParams::default(), &Patch::Merge(&label("yes")))
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, watcher::Event::Apply(c) if c.metadata.name.as_deref() == Some("m")),
    )
    .await;
    cms.patch("m", &PatchParams::default(), &Patch::Merge(&label("no")))
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, watcher::Event::Delete(c) if c.metadata.name.as_deref() == Some("m")),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_streaming_list_watcher_gets_the_initial_state_then_changes() {
    let lab = LabApi::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    cms.create(&PostParams::default(), &config_map("before"))
        .await
        .unwrap();
    let cfg = watcher::Config::default().streaming_lists();
    let mut events = watcher(cms.clone(), cfg)
        .filter_map(|e| async move { e.ok() })
        .boxed();
    until(&mut events, |e| matches!(e, watcher::Event::InitApply(c) if c.metadata.name.as_deref() == Some("before"))).await;
    until(&mut events, |e| matches!(e, watcher::Event::InitDone)).await;
    cms.create(&PostParams::default(), &config_map("after"))
        .await
        .unwrap();
    until(
        &mut events,
        |e| matches!(e, watcher::Event::Apply(c) if c.metadata.name.as_deref() == Some("after")),
    )
    .await;
}
