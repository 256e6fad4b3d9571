//! The real agent in a network namespace while the lab API server is stopped for 20 s in the
//! middle of its apply, then started again on the same port from its data file (objects,
//! resourceVersions and tokens kept). The agent finishes on its own (commit, or restore when
//! its probes need the API server), changes nothing else without a dispatch, retries its watch
//! and its status write with bounded backoff (counted: no spinning), and once the server is
//! back the status it writes is the true outcome.
//!
//! Minutes of outage in CI are too long: 20 s is four times the watch's backoff cap (5 s) and
//! ten times the status writer's (2 s), so every retry loop reaches its cap and stays there.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed step is the test failure

use crate::common;

use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::{Lab, api_restart, layer2s};
use netrollout_api::NodePhase;

const OUTAGE: Duration = Duration::from_secs(20);

/// Attempts of the agent, counted in its log: status writes that failed, watch errors.
fn attempts(lab: &Lab) -> (usize, usize) {
    let log = lab.log();
    (
        log.matches("writing status failed; will retry").count(),
        log.matches("watching the NodeNetworkConfig").count(),
    )
}

/// Waits until the agent logged `step` for `rev` (one whole line with both).
async fn wait_logged(lab: &Lab, step: &str, rev: &str, secs: u64) {
    let step = format!("\"step\":\"{step}\"");
    let rev = format!("\"revision\":\"{rev}\"");
    lab.wait_log_line(&[&step, &rev], secs).await;
}

/// rev-1 committed, rev-2 dispatched; returns once the agent journaled rev-2 (and, with
/// `probed`, probed before the change: a probe failing before it is not enforced) and the
/// server is stopped, with the server's port and the attempts counted so far.
///
/// With `probed`, the agent is restarted after rev-1 with a probe hold of ten minutes: the
/// stop must come inside rev-2's hold (a probe failing after the hold is too late to undo
/// anything), and a 2 s hold was sometimes over before this test, slow on a loaded machine,
/// had stopped the server. The failure ends the hold at once, so the test does not wait longer.
async fn stop_mid_apply(lab: &mut Lab, args: &[&str], probed: bool) -> (u16, (usize, usize)) {
    api_restart::persistent(lab).await;
    lab.extra_args = args.iter().map(|s| s.to_string()).collect();
    lab.set_spec("rev-1", layer2s(100, 2)).await;
    lab.start_agent();
    let status = lab.wait_finished("rev-1", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    if probed {
        lab.kill_agent();
        let hold = lab.extra_args.iter().position(|a| a == "--probe-hold");
        lab.extra_args[hold.expect("a --probe-hold") + 1] = "10m".into();
        lab.start_agent();
        // Recovered (once per start): its watch sees what comes next.
        lab.wait_log("state recovered", 2, 30).await;
    }
    lab.set_spec("rev-2", layer2s(110, 2)).await;
    lab.wait_applying(Duration::from_secs(30)).await;
    if probed {
        lab.wait_log("\"step\":\"probe-before\"", 2, 30).await;
    }
    let port = lab.server.addr().port();
    let before = attempts(lab);
    api_restart::stop(lab).await;
    (port, before)
}

/// Through the rest of the outage: the kernel holds `config` and no other apply starts;
/// then the attempts made during the outage are within bounds (at least `min_watch` watch
/// reconnects: a watch whose packets are dropped hangs on its connection instead).
async fn ride_out(
    lab: &Lab,
    since: Instant,
    before: (usize, usize),
    holds: &[u16],
    min_watch: usize,
) {
    let journals = lab.log().matches("\"step\":\"journal\"").count();
    while since.elapsed() < OUTAGE {
        assert!(
            lab.holds(&layer2s(holds[0], holds[1])).await,
            "the kernel changed during the outage"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        lab.log().matches("\"step\":\"journal\"").count(),
        journals,
        "an apply started without a dispatch"
    );
    let (status, watch) = attempts(lab);
    let (status, watch) = (status - before.0, watch - before.1);
    eprintln!("during the {OUTAGE:?} outage: {status} status writes, {watch} watch reconnects");
    // Backoff 0.2 s doubling to 2 s: about 13 writes in 20 s; 0.5 s doubling to 5 s with
    // jitter: about 6 reconnects. A loop without backoff would make thousands.
    assert!((2..=25).contains(&status), "{status} status writes");
    assert!(
        (min_watch..=20).contains(&watch),
        "{watch} watch reconnects"
    );
}

#[tokio::test]
async fn an_apply_under_way_when_the_api_server_stops_commits_and_is_reported_when_it_returns() {
    let mut lab = common::lab().await;
    let args = [
        "--probe-api-server=false",
        "--probe-interval",
        "100ms",
        "--probe-hold",
        "2s",
    ];
    let (port, before) = stop_mid_apply(&mut lab, &args, false).await;
    let since = Instant::now();
    // The commit needs no API server.
    wait_logged(&lab, "commit", "rev-2", 10).await;
    ride_out(&lab, since, before, &[110, 2], 2).await;

    api_restart::start(&mut lab, port).await;
    let back = Instant::now();
    let nnc = lab.wait_finished("rev-2", 30).await;
    eprintln!("reported {:?} after the server returned", back.elapsed());
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-2"));
    common::wait_node_condition(&lab, "True", "Applied").await;
    // Nothing else happens once the server is back: no apply without a dispatch.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lab.log().matches("\"step\":\"journal\"").count(), 2);
    assert!(lab.holds(&layer2s(110, 2)).await);
}

#[tokio::test]
async fn an_apply_whose_probe_needs_the_stopped_api_server_restores_and_is_reported_when_it_returns()
 {
    let mut lab = common::lab().await;
    // Each check keeps its default 2 s: the stopped server refuses connections at once, and
    // on a loaded machine this process's server sometimes took over 300 ms to answer (rev-1
    // failed its hold, or rev-2's probe failed before the change and was not enforced).
    let args = [
        "--probe-timeout",
        "2s",
        "--probe-interval",
        "100ms",
        "--probe-hold",
        "2s",
    ];
    let (port, before) = stop_mid_apply(&mut lab, &args, true).await;
    let since = Instant::now();
    wait_logged(&lab, "failed", "rev-2", 15).await;
    ride_out(&lab, since, before, &[100, 2], 2).await;

    api_restart::start(&mut lab, port).await;
    let back = Instant::now();
    let nnc = lab.wait_finished("rev-2", 30).await;
    eprintln!("reported {:?} after the server returned", back.elapsed());
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("api") && message.contains("restored last-known-good rev-1"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));
    common::wait_node_condition(&lab, "False", "ProbeFailed").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lab.log().matches("\"step\":\"journal\"").count(), 2);
    assert!(lab.holds(&layer2s(100, 2)).await);
}

#[tokio::test]
async fn an_apply_under_way_when_the_api_server_is_blackholed_commits_and_new_dispatches_arrive_after()
 {
    let mut lab = common::lab().await;
    lab.extra_args = [
        "--probe-api-server=false",
        "--probe-interval",
        "100ms",
        "--probe-hold",
        "2s",
    ]
    .map(String::from)
    .to_vec();
    lab.set_spec("rev-1", layer2s(100, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-1", 30).await;
    lab.set_spec("rev-2", layer2s(110, 2)).await;
    lab.wait_applying(Duration::from_secs(30)).await;
    // Packets to the server are dropped: open connections hang, new ones fail.
    let before = attempts(&lab);
    let route = format!("blackhole {}/32", lab.host_ip);
    lab.ip(&format!("route add {route}"));
    let since = Instant::now();
    wait_logged(&lab, "commit", "rev-2", 10).await;
    ride_out(&lab, since, before, &[110, 2], 0).await;

    lab.ip(&format!("route del {route}"));
    let back = Instant::now();
    let nnc = lab.wait_finished("rev-2", 30).await;
    eprintln!("reported {:?} after the route returned", back.elapsed());
    assert_eq!(nnc.status.unwrap().phase, Some(NodePhase::Provisioned));
    common::wait_node_condition(&lab, "True", "Applied").await;
    // The watch did not stay stuck on a dead connection: the next dispatch is applied.
    lab.set_spec("rev-3", layer2s(120, 2)).await;
    let dispatched = Instant::now();
    let nnc = lab.wait_finished("rev-3", 30).await;
    eprintln!("next dispatch applied after {:?}", dispatched.elapsed());
    assert_eq!(nnc.status.unwrap().phase, Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(120, 2)).await);
}
