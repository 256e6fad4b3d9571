//! A status write that timed out is not lost on the server's side: the API server may still
//! apply it later, after the newer report the agent wrote next. Here the lab API server holds
//! the agent's write of a rev-1 report sent before rev-1 was applied (the agent gives up on it
//! at its `--api-deadline 1s`), lets the agent's next writes through (rev-1 applied lands),
//! and only then serves the held one, as kube-apiserver may serve a request whose client left.
//! The held write must not overwrite the newer status: every status write is conditional on
//! the version it was computed from, so the server refuses it (409 Conflict).

use crate::common;

use std::time::{Duration, Instant};

use common::layer2s;
use netrollout_api::{NodeConfig, NodePhase};

/// How long the probes must keep passing after rev-1's change before it commits: rev-1 is
/// shown applied only this long after the change, long after the held write was sent.
const PROBE_HOLD: &str = "3s";

#[tokio::test]
async fn a_status_write_the_server_applies_after_a_newer_one_does_not_overwrite_it() {
    let mut lab = common::lab().await;
    lab.extra_args = [
        "--step-slow",
        "500ms",
        "--api-deadline",
        "1s",
        "--probe-hold",
        PROBE_HOLD,
    ]
    .map(String::from)
    .to_vec();
    lab.set_spec("rev-0", NodeConfig::default()).await;
    lab.start_agent();
    lab.wait_finished("rev-0", 30).await;
    // rev-0's last write (the Node's condition) and the capabilities (written once, at start)
    // are done: from here the status writer's reports are the only status patches.
    common::wait_node_condition(&lab, "True", "Applied").await;
    lab.wait_nnc(30, "the capabilities", |o| {
        o.status.as_ref().is_some_and(|s| s.capabilities.is_some())
    })
    .await;

    let faults = lab.server.faults();
    // As kube-apiserver may: a write whose client gave up is still served.
    faults.set_serve_abandoned(true);
    faults.hold(Some("patch"), Some("nodenetworkconfigs"));
    let since = lab.log().len();
    // A PUT of the spec: not held. The agent's first status write about rev-1 is.
    lab.set_spec("rev-1", layer2s(20, 2)).await;
    poll(
        &lab,
        30,
        "a status write of rev-1 held in the server",
        || faults.held() >= 1,
    )
    .await;
    faults.stop_holding();
    // The held write was computed before rev-1 was applied: the agent had not decided that
    // report when it was held (rev-1 commits only after the probe hold).
    assert!(
        !netrollout_testkit::agent::has_whole_line(
            &lab.log()[since..],
            &[
                "\"status decided\"",
                "\"revision\":\"rev-1\"",
                "\"reason\":\"Applied\""
            ]
        ),
        "rev-1 was applied before its first report was held: this run shows nothing\n{}",
        lab.log()
    );

    // The agent gives up on the held write and writes its newer reports, which land.
    let applied = lab.wait_finished("rev-1", 60).await;
    let status = applied.status.expect("a status");
    assert_eq!(
        (status.phase, status.reason.as_deref()),
        (Some(NodePhase::Provisioned), Some("Applied")),
        "{}",
        lab.log()
    );
    assert_eq!(faults.held(), 1, "the held write is still held");

    // Now the server serves the held write.
    faults.release_held();
    poll(&lab, 10, "the held write to be served", || {
        faults.held() == 0
    })
    .await;
    let now = lab.nnc_api().get(&lab.node).await.unwrap();
    let status = now.status.expect("a status");
    assert_eq!(
        (
            status.observed_revision.as_deref(),
            status.phase,
            status.reason.as_deref()
        ),
        (Some("rev-1"), Some(NodePhase::Provisioned), Some("Applied")),
        "a status written before rev-1 was applied overwrote it\n{}",
        lab.log()
    );
    // The agent knew its write had timed out: the log says so.
    assert!(
        netrollout_testkit::agent::has_whole_line(
            &lab.log()[since..],
            &["\"step\":\"timed-out\"", "\"waited_for\":\"status\""]
        ),
        "{}",
        lab.log()
    );
}

/// Polls `done` every 20 ms; panics naming `what` (with the agent log) after `secs`.
async fn poll(lab: &common::Lab, secs: u64, what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "no {what} within {secs} s\n{}",
            lab.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
