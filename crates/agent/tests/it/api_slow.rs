//! The real agent against a lab API server that answers every request late (4 s, past the
//! agent's `--api-deadline 2s`): a config that breaks connectivity is applied, fails its probes
//! and is restored without waiting for a single status write; each write is reported while it
//! waits (`step=wait` past `--step-slow`, the step in flight in the metrics) and fails at its
//! deadline (`step=timed-out`, counted), `/healthz` stays 200; once the server answers in time,
//! the true outcome is written.

use crate::common;

use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::{Lab, layer2, layer2s};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_testkit::agent::has_whole_line;

/// How late the server answers: past the agent's 2 s deadline.
const LATE: Duration = Duration::from_secs(4);

/// A config whose gateway address covers the host's end of the veth: the route to the API
/// server (the TCP probe's target) goes over the new bridge, so the probes fail.
fn breaking(lab: &Lab, id: u16) -> NodeConfig {
    NodeConfig {
        layer2s: vec![layer2(id, vec![format!("{}.0/31", lab.net)])],
        ..Default::default()
    }
}

/// A counter of the agent's metrics (0 when absent).
fn counter(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn status_writes_past_their_deadline_never_hold_up_an_apply_or_its_restore() {
    let mut lab = common::lab().await;
    lab.extra_args = [
        "--probe-tcp",
        &lab.api_target(),
        "--probe-each-timeout",
        "500ms",
        "--probe-timeout",
        "2s",
        "--step-slow",
        "1s",
        "--api-deadline",
        "2s",
    ]
    .map(String::from)
    .to_vec();
    lab.set_spec("rev-good", layer2s(100, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-good", 30).await;

    lab.server.faults().set_latency(LATE);
    // Served late too; the agent's open watch delivers it at once.
    lab.set_spec("rev-bad", breaking(&lab, 110)).await;
    let late_since = lab.log().len();
    let mut in_flight_seen = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, health) = lab.http_get(9101, "/healthz").await;
        assert_eq!(status, 200, "/healthz: {health}");
        let (_, metrics) = lab.http_get(9101, "/metrics").await;
        in_flight_seen |=
            metrics.contains("netrollout_agent_step_in_flight_seconds{step=\"status\"}");
        let log = lab.log();
        let restored = has_whole_line(
            &log[late_since..],
            &["\"step\":\"failed\"", "\"revision\":\"rev-bad\""],
        ) && lab.holds(&layer2s(100, 2)).await;
        if restored && in_flight_seen {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rev-bad was not restored (restored: {restored}, a status write seen in flight: \
             {in_flight_seen}) while the API server answered late\n{log}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The whole attempt ran with no write answered in time.
    let log = lab.log();
    let during = &log[late_since..];
    assert!(
        !during.contains("\"status written\""),
        "a write was answered in time\n{during}"
    );
    for (step, what) in [("wait", "waiting_for"), ("timed-out", "waited_for")] {
        let step = format!("\"step\":\"{step}\"");
        let what = format!("\"{what}\":\"status\"");
        assert!(
            has_whole_line(during, &[&step, &what, "\"part\":\"api\""]),
            "no {step} line for the status write\n{during}"
        );
    }
    let (_, metrics) = lab.http_get(9101, "/metrics").await;
    assert!(
        counter(&metrics, "netrollout_agent_slow_steps_total{part=\"api\"}") >= 1.0
            && counter(
                &metrics,
                "netrollout_agent_step_timeouts_total{part=\"api\"}"
            ) >= 1.0,
        "{metrics}"
    );
    // Writes sent before the attempt ended may still be in the server: every request sent
    // from now on carries the outcome (the writer retries the newest report).
    tokio::time::sleep(LATE + Duration::from_secs(2)).await;
    lab.server.faults().clear();
    let nnc = lab.wait_finished("rev-bad", 30).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ProbeFailed"), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("restored last-known-good rev-good"),
        "{message}"
    );
    common::wait_node_condition(&lab, "False", "ProbeFailed").await;
    assert!(lab.holds(&layer2s(100, 2)).await, "not restored");
}
