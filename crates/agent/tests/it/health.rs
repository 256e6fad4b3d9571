//! Continuous health with the real agent in a network namespace: after it commits, the agent
//! keeps running its health-check file's reachability check (a TCP connection from the
//! namespace to a listener on the host) every `--watch-interval`; breaking and restoring the
//! reachability flips `TenantReachable` on its `NodeNetworkConfig`, one status write per
//! transition and none while nothing changes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::runtime::{WatchStreamExt, watcher};
use netrollout_api::{NodeNetworkConfig, TENANT_REACHABLE_CONDITION};
use tokio::net::TcpListener;

use common::{Lab, layer2s};

/// Rounds the test waits through to see that nothing more is written.
const QUIET: Duration = Duration::from_millis(1500);

fn tenant(nnc: &NodeNetworkConfig) -> Option<Condition> {
    nnc.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == TENANT_REACHABLE_CONDITION)
        .cloned()
}

/// A TCP listener on the host's end of the veth that accepts (and drops) every connection,
/// until the returned task is aborted.
async fn serve(addr: &str) -> tokio::task::JoinHandle<()> {
    let listener = TcpListener::bind(addr).await.unwrap();
    tokio::spawn(async move {
        while let Ok((c, _)) = listener.accept().await {
            drop(c);
        }
    })
}

/// Every version of the node's `NodeNetworkConfig` the API server sends (each write is one).
fn record_writes(
    lab: &Lab,
) -> (
    Arc<Mutex<Vec<NodeNetworkConfig>>>,
    tokio::task::JoinHandle<()>,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let cfg = watcher::Config::default().fields(&format!("metadata.name={}", lab.node));
    let stream = watcher(lab.nnc_api(), cfg).applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(o)) = stream.next().await {
            s.lock().unwrap().push(o);
        }
    });
    (seen, task)
}

/// The agent's metrics page (its metrics port in the namespace).
async fn agent_metrics(lab: &Lab) -> String {
    let addr = format!("{}:9101", lab.ns_ip);
    tokio::task::spawn_blocking(move || {
        netrollout_testkit::http::metrics(&addr, Duration::from_secs(5))
    })
    .await
    .unwrap()
}

/// Writes the health-check file `yaml` and has the agent read it, with `flags` after it.
fn healthcheck(lab: &mut Lab, yaml: String, flags: &[&str]) {
    let file = lab.dir.path().join("healthcheck.yaml");
    std::fs::write(&file, yaml).unwrap();
    lab.extra_args = vec!["--healthcheck-config".into(), file.display().to_string()];
    lab.extra_args.extend(flags.iter().map(|f| f.to_string()));
}

/// The health writes the agent sent (it logs each one it made).
fn requests(lab: &Lab) -> usize {
    lab.log().matches("TenantReachable written").count()
}

/// The versions recorded from index `from` on whose `TenantReachable` differs from the one
/// before (the health writes), and all versions from `from` on.
fn writes_since(seen: &Mutex<Vec<NodeNetworkConfig>>, from: usize) -> (usize, usize) {
    let all = seen.lock().unwrap();
    let health = all
        .windows(2)
        .skip(from.saturating_sub(1))
        .filter(|w| tenant(&w[0]) != tenant(&w[1]))
        .count();
    (health, all.len() - from)
}

#[tokio::test]
async fn breaking_reachability_after_commit_turns_tenant_reachable_false_and_restoring_it_true_with_one_write_each()
 {
    let mut lab = common::lab().await;
    let target = format!("{}:{}", lab.host_ip, 20_000 + std::process::id() % 20_000);
    let server = serve(&target).await;
    let (host, port) = target.split_once(':').unwrap();
    let check = format!("tcp {target}");
    healthcheck(
        &mut lab,
        format!("reachability:\n  - host: {host}\n    port: {port}\ntimeout: 500ms\n"),
        &["--watch-interval=300ms"],
    );
    lab.set_spec("rev-a", layer2s(100, 1)).await;
    let (seen, recorder) = record_writes(&lab);
    lab.start_agent();
    lab.wait_finished("rev-a", 60).await;
    let up = lab
        .wait_nnc(20, "TenantReachable=True after the commit", |o| {
            tenant(o).is_some_and(|c| c.status == "True")
        })
        .await;
    assert_eq!(
        tenant(&up).unwrap().observed_generation,
        up.metadata.generation
    );

    // Healthy: rounds run, nothing is written.
    tokio::time::sleep(QUIET).await;
    let healthy_from = seen.lock().unwrap().len();
    assert_eq!(requests(&lab), 1, "the first verdict, once");
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        writes_since(&seen, healthy_from),
        (0, 0),
        "a healthy node writes nothing"
    );
    assert_eq!(requests(&lab), 1, "a healthy node sends nothing");

    // Break: the listener goes away (connection refused from the namespace).
    server.abort();
    let _ = server.await;
    let broken_from = seen.lock().unwrap().len();
    let down = lab
        .wait_nnc(20, "TenantReachable=False", |o| {
            tenant(o).is_some_and(|c| c.status == "False")
        })
        .await;
    let c = tenant(&down).unwrap();
    assert!(c.message.contains(&check), "{c:?}");
    let health = down.status.as_ref().unwrap().health.clone().unwrap();
    assert_eq!(health.failing_checks, vec![check.clone()]);
    assert_eq!(
        down.status.as_ref().unwrap().observed_revision.as_deref(),
        Some("rev-a"),
        "the agent's own status is untouched"
    );
    tokio::time::sleep(QUIET).await;
    assert_eq!(
        writes_since(&seen, broken_from),
        (1, 1),
        "one write for the transition, none while it stays broken"
    );
    assert_eq!(requests(&lab), 2);

    // Restore: the same address listens again.
    let server = serve(&target).await;
    let restored_from = seen.lock().unwrap().len();
    let back = lab
        .wait_nnc(20, "TenantReachable=True again", |o| {
            tenant(o).is_some_and(|c| c.status == "True")
        })
        .await;
    assert!(
        back.status
            .as_ref()
            .unwrap()
            .health
            .as_ref()
            .unwrap()
            .failing_checks
            .is_empty(),
        "{:?}",
        back.status
    );
    tokio::time::sleep(QUIET).await;
    assert_eq!(writes_since(&seen, restored_from), (1, 1));
    assert_eq!(requests(&lab), 3);

    let text = agent_metrics(&lab).await;
    assert!(
        text.contains("netrollout_agent_tenant_reachable 1"),
        "{text}"
    );
    assert!(
        text.contains("netrollout_agent_health_transitions_total{to=\"unreachable\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("netrollout_agent_health_transitions_total{to=\"reachable\"} 1"),
        "{text}"
    );
    let rounds: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("netrollout_agent_health_rounds_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rounds counter: {text}"));
    assert!(rounds >= 10, "rounds keep running: {rounds}");
    recorder.abort();
    server.abort();
    lab.kill_agent();
}

#[tokio::test]
async fn a_watch_interval_of_zero_turns_continuous_health_off() {
    let mut lab = common::lab().await;
    // Unreachable (nothing listens on the host's port 9): the watcher would report it.
    let yaml = format!("reachability:\n  - host: {}\n    port: 9\n", lab.host_ip);
    healthcheck(
        &mut lab,
        yaml,
        &["--watch-interval=0s", "--probe-timeout=1s"],
    );
    lab.set_spec("rev-a", layer2s(100, 1)).await;
    lab.start_agent();
    // The check failed before the change too, so the apply reports it and commits.
    let done = lab.wait_finished("rev-a", 60).await;
    tokio::time::sleep(QUIET).await;
    let nnc = lab.nnc_api().get(&lab.node).await.unwrap();
    assert_eq!(tenant(&nnc), None, "no condition: {:?}", done.status);
    let text = agent_metrics(&lab).await;
    assert!(
        text.contains("netrollout_agent_health_rounds_total 0"),
        "{text}"
    );
    lab.kill_agent();
}
