//! Red team, slow watchers: a watcher that does not keep up is dropped, and its client recovers
//! by watching again and, when its resourceVersion is gone from the window, by listing again.
//! (The memory such watchers hold is measured alone in `redteam_watch_memory.rs`.)

use crate::common;

use std::time::Duration;

use common::LabApi;
use common::objects::{rewrite, sized_config_map};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use netrollout_lab_apiserver::Config;
use netrollout_testkit::wait::eventually;

const MIB: usize = 1 << 20;

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_slow_watcher_recovers_by_watching_and_listing_again() {
    let lab = LabApi::start_with(Config {
        event_window_bytes: 2 * MIB,
        watch_bytes: 2 * MIB,
        ..Config::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    cms.create(&PostParams::default(), &sized_config_map("big", 1024))
        .await
        .unwrap();
    let mut seen = watcher(cms.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = seen.try_next().await.unwrap().unwrap();
    assert_eq!(first.data.unwrap()["version"], "0");
    // One change read through the watch itself: the watch stream is open.
    rewrite(&cms, "big", 1, 1024).await;
    let second = seen.try_next().await.unwrap().unwrap();
    assert_eq!(second.data.unwrap()["version"], "1");
    assert_eq!(lab.server.watcher_count(), 1);
    // The watcher's stream is not read while 50 MiB of changes go by: the server drops it.
    for v in 2..=100 {
        rewrite(&cms, "big", v, MIB / 2).await;
    }
    eventually(Duration::from_secs(10), || async {
        Ok(lab.server.watcher_count() == 0)
    })
    .await
    .expect("the watcher that does not read is dropped");
    assert!(lab.server.watch_bytes_held() <= 3 * MIB);
    // Read again: the stream ended, the client watched from its resourceVersion, got 410 (the
    // window has moved on) and listed again; it ends on the last version.
    // kube-runtime's watcher hands the 410 on as an error item, then lists.
    let (last, expired) = tokio::time::timeout(Duration::from_secs(60), async {
        let mut expired = false;
        loop {
            match seen.next().await.unwrap() {
                Ok(cm) if cm.data.as_ref().unwrap()["version"] == "100" => return (cm, expired),
                Ok(_) => {}
                Err(watcher::Error::WatchError(e)) if e.code == 410 => expired = true,
                Err(e) => panic!("unexpected watch error: {e}"),
            }
        }
    })
    .await
    .expect("the watcher caught up with the last version");
    assert_eq!(last.data.unwrap()["version"], "100");
    assert!(
        expired,
        "the resumed watch was answered 410 and the client listed again"
    );
}
