//! Red team, memory held by slow watchers: watchers that never read cannot make the server
//! hold unbounded memory. An event is encoded once and shared by every watcher (the objects a
//! watcher starts from are sent as the stored bytes too, never copied per watcher); a watcher
//! that would hold more than its bound is dropped and lets go of what it held. This file holds
//! one test: it reads the process's resident memory, so nothing else may run beside it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;

use std::time::Duration;

use common::LabApi;
use common::objects::{rewrite, sized_config_map};
use common::raw;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use netrollout_lab_apiserver::{Config, Identity};
use netrollout_testkit::wait::eventually;

const MIB: usize = 1 << 20;

/// Resident memory of this process, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread")]
async fn slow_watchers_hold_bounded_memory_and_let_it_go_when_they_close() {
    let bound = 4 * MIB;
    let lab = LabApi::start_with(Config {
        event_window_bytes: 4 * MIB,
        watch_bytes: bound,
        ..Config::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(lab.server.client().unwrap(), "default");
    cms.create(&PostParams::default(), &sized_config_map("big", MIB))
        .await
        .unwrap();
    // Warm up the allocator and the client with writes of the same size before measuring.
    for v in 1..=10 {
        rewrite(&cms, "big", v, MIB).await;
    }
    let token = lab.server.issue_token(Identity::admin()).unwrap();
    let before = rss();
    // 30 watchers that never read, each starting from the current 1 MiB object.
    let mut stalled = vec![];
    for _ in 0..30 {
        stalled.push(
            raw::stalled_watch(
                lab.server.addr(),
                &token,
                "/api/v1/namespaces/default/configmaps?watch=true",
            )
            .await,
        );
    }
    eventually(Duration::from_secs(10), || async {
        Ok(lab.server.watcher_count() >= 30)
    })
    .await
    .unwrap();
    // 100 more versions: 100 MiB of events no watcher reads.
    for v in 11..=110 {
        rewrite(&cms, "big", v, MIB).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = lab.server.watch_bytes_held();
    let grown = rss().saturating_sub(before);
    eprintln!("CALIB held={} MiB grown={} MiB", held / MIB, grown / MIB);
    assert!(
        held <= 30 * (bound + 2 * MIB),
        "30 stalled watchers hold {} MiB by the server's count, over 30 x their bound",
        held / MIB
    );
    assert!(
        grown < 64 * MIB,
        "resident memory grew by {} MiB for 30 stalled watchers of a 1 MiB object rewritten 100 \
         times (the events no watcher read were kept, or copied per watcher)",
        grown / MIB
    );
    drop(stalled);
    eventually(Duration::from_secs(10), || async {
        Ok(lab.server.watch_bytes_held() == 0)
    })
    .await
    .unwrap_or_else(|e| {
        panic!(
            "{e}: closed watchers still hold {} bytes",
            lab.server.watch_bytes_held()
        )
    });
}
