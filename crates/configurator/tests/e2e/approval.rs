//! Approval gates (`--pause-after`) and a healthy start (`--start-max-unhealthy`,
//! `--start-blocking-query`): a revision waits for a person, says why in a typed field, its
//! condition and an Event, never fails by waiting, and goes on once promoted (who and when
//! recorded) or once the fleet recovers.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use netrollout_api::reason::{AWAITING_PROMOTION, FLEET_UNHEALTHY, PROMOTED, START_BLOCKED};
use netrollout_api::{NetworkConfigRevision, RECONCILING_CONDITION, RevisionPhase};
use netrollout_testkit::fake_prometheus::FakePrometheus;

use crate::agents::{Agents, healthy};
use crate::guard::set_health;
use crate::lab::{ConfiguratorLab as _, LabApi, R, eventually};
use crate::{all_provisioned, names, nodes};

/// The newest revision once its `status.hold` has reason `reason`.
async fn held(lab: &LabApi, reason: &str) -> R<NetworkConfigRevision> {
    eventually(Duration::from_secs(15), || async {
        let revs = lab.revisions().await?;
        Ok(revs.last().is_some_and(|r| {
            r.status.as_ref().is_some_and(|s| {
                s.hold.as_ref().is_some_and(|h| h.reason == reason)
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == RECONCILING_CONDITION && c.reason == reason)
            })
        }))
    })
    .await
    .map_err(|e| anyhow::anyhow!("the newest revision never held with {reason}: {e}"))?;
    Ok(lab.revisions().await?.pop().expect("a revision"))
}

/// How many nodes' config names `revision`.
async fn on(lab: &LabApi, revision: &str) -> R<usize> {
    let api: kube::Api<netrollout_api::NodeNetworkConfig> = kube::Api::all(lab.client.clone());
    let list = api.list(&Default::default()).await?.items;
    Ok(list.iter().filter(|c| c.spec.revision == revision).count())
}

/// Writes a promotion as `kubectl netrollout promote` does (as the lab's admin).
async fn promote(
    lab: &LabApi,
    rev: &NetworkConfigRevision,
    gates: i32,
    full: bool,
    force: bool,
) -> R {
    let name = rev.metadata.name.clone().unwrap_or_default();
    let patch = serde_json::json!({ "spec": { "promotion": {
        "sequence": rev.spec.sequence, "gates": gates, "full": full, "force": force,
        "by": "lab-admin", "at": "2026-11-28T17:00:00Z",
    } } });
    lab.revision_api()
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_revision_waits_at_its_gate_until_promoted_and_records_who() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 4).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    // Short timeouts: a hold must outlive them without failing.
    let cfg = lab.configurator(&[
        "--update-limit=4",
        "--pause-after=1,50%",
        "--apply-timeout=1s",
        "--pickup-timeout=1s",
    ]);
    lab.set_table("extra", 100).await?;
    let rev = held(&lab, AWAITING_PROMOTION).await?;
    let name = rev.metadata.name.clone().unwrap_or_default();
    let hold = rev.status.clone().unwrap().hold.unwrap();
    assert_eq!(
        (hold.gate, hold.gates, hold.nodes),
        (Some(1), Some(2), Some(1))
    );
    assert!(
        hold.message.contains("kubectl netrollout promote"),
        "{}",
        hold.message
    );
    lab.event(
        "NetworkConfigRevision",
        &name,
        AWAITING_PROMOTION,
        Duration::from_secs(5),
    )
    .await?;
    // Held well past every timeout: still one node on it, still Progressing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(on(&lab, &name).await?, 1);
    let still = lab.revisions().await?.pop().unwrap();
    assert_eq!(
        still.status.unwrap().phase,
        Some(RevisionPhase::Progressing)
    );
    promote(&lab, &rev, 1, false, false).await?;
    // The next gate: 50% of 4 nodes.
    let rev = eventually(Duration::from_secs(15), || async {
        let r = lab.revisions().await?.pop().unwrap();
        let s = r.status.clone().unwrap_or_default();
        Ok(s.hold.as_ref().is_some_and(|h| h.gate == Some(2)) && s.promotions.len() == 1)
    })
    .await
    .map(|_| ())
    .map_err(|e| anyhow::anyhow!("never held at the second gate: {e}"));
    rev?;
    assert_eq!(on(&lab, &name).await?, 2);
    let rev = lab.revisions().await?.pop().unwrap();
    let recorded = &rev.status.clone().unwrap().promotions[0];
    assert_eq!((recorded.by.as_str(), recorded.gates), ("lab-admin", 1));
    let note = lab
        .event(
            "NetworkConfigRevision",
            &name,
            PROMOTED,
            Duration::from_secs(5),
        )
        .await?
        .note
        .unwrap_or_default();
    assert!(note.starts_with("lab-admin promoted revision"), "{note}");
    promote(&lab, &rev, 1, true, false).await?;
    let done = lab
        .newest_in(RevisionPhase::Succeeded, Duration::from_secs(20))
        .await?;
    all_provisioned(&lab, &names(4), &name, Duration::from_secs(5)).await?;
    let status = done.status.unwrap();
    assert_eq!(status.hold, None);
    assert_eq!(status.promotions.len(), 2);
    cfg.stop().await
}

#[tokio::test]
async fn an_unhealthy_fleet_is_not_started_until_it_recovers_or_a_person_forces_it() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 3).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let cfg = lab.configurator(&["--update-limit=3", "--start-max-unhealthy=0", "--guard=off"]);
    let good = crate::first_good(&lab).await?;
    let good_name = good.metadata.name.clone().unwrap();
    set_health(&lab, "n-1", &["tenant-ping"]).await?;
    lab.set_table("extra", 101).await?;
    let rev = held(&lab, FLEET_UNHEALTHY).await?;
    let name = rev.metadata.name.clone().unwrap();
    assert_ne!(name, good_name);
    let message = rev.status.clone().unwrap().hold.unwrap().message;
    assert!(message.contains("--start-max-unhealthy=0"), "{message}");
    lab.event(
        "NetworkConfigRevision",
        &name,
        FLEET_UNHEALTHY,
        Duration::from_secs(5),
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(on(&lab, &name).await?, 0, "a degraded fleet is not started");
    // Forced: it starts although n-1 is still unhealthy.
    promote(&lab, &rev, 0, false, true).await?;
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(20)).await?;
    // The next revision waits again; once n-1 recovers it starts on its own.
    lab.set_table("extra", 102).await?;
    let rev = held(&lab, FLEET_UNHEALTHY).await?;
    let name = rev.metadata.name.clone().unwrap();
    set_health(&lab, "n-1", &[]).await?;
    all_provisioned(&lab, &names(3), &name, Duration::from_secs(20)).await?;
    cfg.stop().await
}

#[tokio::test]
async fn a_firing_blocking_query_holds_the_start_and_its_silence_releases_it() -> R {
    let lab = LabApi::netrollout().await;
    nodes(&lab, 2).await?;
    let _agents = Agents::start(lab.client.clone(), healthy(Duration::from_millis(50)));
    let firing = Arc::new(AtomicBool::new(true));
    let f = firing.clone();
    let prometheus =
        FakePrometheus::start_maybe(Arc::new(move |_| f.load(Ordering::SeqCst).then_some(1.0)))
            .await;
    let url = format!("--prometheus-url={}", prometheus.url());
    let query = r#"--start-blocking-query=ALERTS{alertstate="firing"}"#;
    let cfg = lab.configurator(&["--update-limit=2", &url, query]);
    lab.set_table("extra", 100).await?;
    let rev = held(&lab, START_BLOCKED).await?;
    let name = rev.metadata.name.clone().unwrap();
    let message = rev.status.unwrap().hold.unwrap().message;
    assert!(
        message.contains("alertname") && message.contains("1 series"),
        "{message}"
    );
    assert_eq!(on(&lab, &name).await?, 0);
    let queries = prometheus.queries();
    assert!(
        queries
            .iter()
            .all(|q| q.query == r#"ALERTS{alertstate="firing"}"#),
        "{queries:?}"
    );
    // Measured at most every 5 s, however often the configurator plans (it plans every 1 s).
    tokio::time::sleep(Duration::from_secs(6)).await;
    let at: Vec<_> = prometheus.queries().iter().map(|q| q.at).collect();
    assert!(at.len() >= 2, "measured again after 5 s: {at:?}");
    for pair in at.windows(2) {
        let gap = pair[1].duration_since(pair[0]).unwrap_or_default();
        assert!(
            gap >= Duration::from_secs(4),
            "queries {gap:?} apart: {at:?}"
        );
    }
    firing.store(false, Ordering::SeqCst);
    all_provisioned(&lab, &names(2), &name, Duration::from_secs(20)).await?;
    cfg.stop().await
}
