//! A flood of agent reports: every node of a 300-node fleet writes its status at the same
//! moment. Leadership renewal must not stall behind the burst, and no report may be lost: the
//! revision counts every node, first as Provisioned, then (a second revision) as Failed (and
//! lists the first 100 of them).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use futures::future::join_all;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use netrollout_api::{DEFAULT_NAMESPACE, NodeNetworkConfig, RevisionPhase};
use tokio::task::JoinHandle;

use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{names, nodes};

const NODES: usize = 300;
/// A short `--lease-duration` (6 s): kube-lease-manager renews a grace period (a third: 2 s,
/// see `controller.rs`) before expiry, so every 4 s, and a stall of over 2 s shows as a lapse.
/// The shortest lease (2 s, renewed every second) lapsed on a loaded 2-core machine with
/// nothing stalled: a renewal's read, waiting a second behind the burst in this process's API
/// server, was enough.
const LEASE_DURATION: Duration = Duration::from_secs(6);
/// The pickup and apply timeouts: the defaults (10 minutes, 2 minutes), not the e2e lab's
/// seconds. The fleet here answers only once every node is dispatched, and each burst of 300
/// reports takes seconds on a loaded machine: with the lab's 3 s pickup timeout the
/// configurator withdrew the dispatches not picked up yet (deleting their configs: the burst
/// then got 404s), with its 2 s apply timeout it failed the first revision. Both timeouts
/// have their own tests (`fleet.rs`, `failure.rs`); this one is about the flood.
const TIMEOUTS: [&str; 2] = ["--pickup-timeout=10m", "--apply-timeout=2m"];

/// One observed change of the Lease: the holder and its renewTime.
#[derive(Clone, Debug)]
struct Renewal {
    holder: Option<String>,
    renew_time: Option<jiff::Timestamp>,
}

const LEASE: &str = "netrollout-configurator";

/// Watches the configurator's Lease with the kube client and records every change: a watch
/// sees each update (polling under load could miss renewals and see false gaps).
fn watch_lease(client: Client) -> (Arc<Mutex<Vec<Renewal>>>, JoinHandle<()>) {
    let seen: Arc<Mutex<Vec<Renewal>>> = Arc::default();
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let api = Api::<Lease>::namespaced(client, DEFAULT_NAMESPACE);
        let config = watcher::Config::default().fields(&format!("metadata.name={LEASE}"));
        let stream = watcher(api, config).default_backoff().applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            let Ok(lease) = event else { continue };
            let spec = lease.spec.unwrap_or_default();
            let now = Renewal {
                holder: spec.holder_identity,
                renew_time: spec.renew_time.map(|t| t.0),
            };
            let mut all = out.lock().unwrap();
            let changed = all
                .last()
                .is_none_or(|l| l.renew_time != now.renew_time || l.holder != now.holder);
            if changed {
                all.push(now);
            }
        }
    });
    (seen, task)
}

/// Waits until every node's config names `revision` (all dispatched at once: the limit is the
/// fleet).
async fn all_dispatched(lab: &LabApi, revision: &str) -> R {
    eventually(Duration::from_secs(10), || async {
        let configs = lab.configs().await?;
        Ok(configs.len() == NODES && configs.iter().all(|c| c.spec.revision == revision))
    })
    .await
}

/// Every node writes `phase` for `revision` at once: all patches are built first and then
/// sent concurrently, the way a fleet of agents answering the same dispatch would.
async fn burst(client: &Client, revision: &str, phase: &str) -> R {
    let api: Api<NodeNetworkConfig> = Api::all(client.clone());
    let now = jiff::Timestamp::now().to_string();
    let mut status = serde_json::json!({ "observedRevision": revision, "phase": phase });
    match phase {
        "Provisioning" => status["startedAt"] = now.into(),
        "Provisioned" => {
            status["finishedAt"] = now.into();
            status["lastKnownGoodRevision"] = revision.into();
        }
        _ => {
            status["finishedAt"] = now.into();
            status["reason"] = "ProbeFailed".into();
            status["message"] = "flood test: every node fails at once".into();
        }
    }
    let patch = serde_json::json!({ "status": status });
    let sends = names(NODES).into_iter().map(|node| {
        let (api, patch) = (api.clone(), patch.clone());
        async move {
            api.patch_status(&node, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(|e| anyhow::anyhow!("status of {node} ({phase}): {e}"))
        }
    });
    for r in join_all(sends).await {
        r?;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_reports_from_every_node_at_once_loses_none_and_never_stalls_the_lease() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, NODES).await?;
    let cfg = lab.configurator(&[
        &format!("--update-limit={NODES}"),
        &format!("--lease-duration={}s", LEASE_DURATION.as_secs()),
        TIMEOUTS[0],
        TIMEOUTS[1],
    ]);
    eventually(Duration::from_secs(10), || async {
        Ok(cfg.metrics.leader.get() == 1)
    })
    .await?;
    let (renewals, lease_task) = watch_lease(lab.client.clone());
    let watch_from = (Instant::now(), jiff::Timestamp::now());

    // Burst 1: every node picks up and then succeeds, each step all at once.
    lab.set_table("extra", 100).await?;
    eventually(Duration::from_secs(10), || async {
        Ok(lab.revisions().await?.len() == 1)
    })
    .await?;
    let good = lab.revisions().await?.remove(0);
    let good_name = good.metadata.name.clone().unwrap();
    all_dispatched(&lab, &good_name).await?;
    burst(&lab.client, &good_name, "Provisioning").await?;
    burst(&lab.client, &good_name, "Provisioned").await?;
    let rev = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(15))
        .await?;
    assert_eq!(rev.metadata.name.as_deref(), Some(good_name.as_str()));
    let s = rev.status.unwrap();
    assert_eq!(
        (
            s.total,
            s.ready,
            s.failed,
            s.in_flight,
            s.queued,
            s.unresponsive
        ),
        (NODES as i32, NODES as i32, 0, 0, 0, 0),
        "every report counted: {s:?}"
    );

    // Burst 2: a new revision goes to every node and every node fails it at once.
    lab.set_table("extra", 666).await?;
    eventually(Duration::from_secs(10), || async {
        Ok(lab.revisions().await?.len() == 2)
    })
    .await?;
    let bad_name = lab.revisions().await?[1].metadata.name.clone().unwrap();
    all_dispatched(&lab, &bad_name).await?;
    burst(&lab.client, &bad_name, "Provisioning").await?;
    burst(&lab.client, &bad_name, "Failed").await?;
    let bad = lab
        .newest_after(
            good.spec.sequence,
            RevisionPhase::Failed,
            Duration::from_secs(15),
        )
        .await?;
    assert_eq!(bad.metadata.name.as_deref(), Some(bad_name.as_str()));
    // The counts follow every report that arrived, also after the halt.
    let api = Api::<netrollout_api::NetworkConfigRevision>::all(lab.client.clone());
    let r = eventually(Duration::from_secs(10), || async {
        let s = api.get(&bad_name).await?.status.unwrap_or_default();
        Ok(s.failed == NODES as i32)
    })
    .await
    .map_err(|e| anyhow::anyhow!("the revision did not count all {NODES} failures: {e}"));
    if let Err(e) = r {
        let status = api.get(&bad_name).await?.status;
        anyhow::bail!("{e}; status: {status:?}");
    }
    let s = api.get(&bad_name).await?.status.unwrap();
    assert_eq!(
        (s.total, s.failed, s.ready),
        (NODES as i32, NODES as i32, 0),
        "exactly one failure per node: {s:?}"
    );
    let mut failed: Vec<&str> = s.failed_nodes.iter().map(|f| f.node.as_str()).collect();
    failed.sort_unstable();
    failed.dedup();
    // A revision lists at most 100 failed nodes (it must stay one storable object); the count
    // above covers every one.
    assert_eq!(
        (failed.len(), s.failed_nodes.len()),
        (NODES.min(100), NODES.min(100)),
        "the first 100 failed nodes listed, each once: {failed:?}"
    );

    // Leadership was held throughout, by the one configurator: every renewal was stamped
    // before the previous one expired (renewTime is the configurator's own clock, so neither
    // the server's nor this test's delays under load count), from the start of the flood to
    // its end. A configurator whose lease task waits behind the burst lets it lapse.
    let watched = watch_from.0.elapsed();
    let until = jiff::Timestamp::now();
    // The watch has delivered every renewal up to now once it shows the one a read sees now.
    let newest = Api::<Lease>::namespaced(lab.client.clone(), DEFAULT_NAMESPACE)
        .get(LEASE)
        .await?
        .spec
        .and_then(|s| s.renew_time)
        .map(|t| t.0);
    eventually(Duration::from_secs(10), || async {
        let all = renewals.lock().unwrap();
        Ok(all.last().is_some_and(|r| r.renew_time >= newest))
    })
    .await?;
    lease_task.abort();
    let renewals = renewals.lock().unwrap().clone();
    let holders: Vec<_> = renewals.iter().map(|r| r.holder.clone()).collect();
    assert!(
        holders.iter().all(|h| h.is_some() && *h == holders[0]),
        "the lease changed hands or was released during the flood: {holders:?}"
    );
    let stamps: Vec<jiff::Timestamp> = renewals.iter().filter_map(|r| r.renew_time).collect();
    assert_eq!(
        stamps.len(),
        renewals.len(),
        "a renewal without renewTime: {renewals:?}"
    );
    let lease = jiff::SignedDuration::try_from(LEASE_DURATION).unwrap();
    let (Some(first), Some(last)) = (stamps.first(), stamps.last()) else {
        panic!("the lease was never seen: {renewals:?}");
    };
    assert!(
        first.checked_add(lease).unwrap() > watch_from.1,
        "the lease had expired when the flood began: {renewals:?}"
    );
    let gaps: Vec<_> = stamps
        .windows(2)
        .map(|w| w[1].duration_since(w[0]))
        .collect();
    let longest = gaps.iter().max().copied().unwrap_or_default();
    assert!(
        longest < lease,
        "the lease lapsed: {longest:?} between two renewTimes, the lease lasts {lease:?}: \
         {renewals:?}"
    );
    assert!(
        last.checked_add(lease).unwrap() > until,
        "the lease lapsed: last renewed at {last}, the flood ended at {until}: {renewals:?}"
    );
    eprintln!(
        "flood: {NODES} nodes, {} lease renewals in {watched:?}, longest gap between renewTimes \
         {longest:?} (the lease: {LEASE_DURATION:?})",
        renewals.len()
    );
    cfg.stop().await
}
