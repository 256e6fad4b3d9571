//! The real agent in a network namespace against the lab API server, run under libfaketime
//! (Debian package `faketime`, installed by hack/install-deps.sh) with a timestamp file the test
//! rewrites in the middle of a probe hold. A wall-clock jump of an hour, forward or back,
//! changes neither the hold's length nor its outcome (the hold is measured on the monotonic
//! clock), while the status times follow the wall clock (which also proves the jump took
//! effect). A jump of the monotonic clock itself (faked too: what a suspend counted by the
//! clock looks like) counts as time passed: the hold ends at the next probe round, never
//! endlessly.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed step is the test failure

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Lab, layer2s};
use netrollout_api::NodePhase;

/// Debian's libfaketime (package `faketime`), in the multiarch directory of this machine.
fn libfaketime() -> PathBuf {
    std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("faketime/libfaketimeMT.so.1"))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!(
                "no /usr/lib/*/faketime/libfaketimeMT.so.1: install Debian's faketime package \
                 (hack/install-deps.sh)"
            )
        })
}
const HOLD: Duration = Duration::from_secs(3);

/// A lab whose agent runs under libfaketime reading the offset from a file (`+0` at first);
/// `monotonic`: whether the monotonic clock is faked too. Returns the file.
async fn faked_lab(monotonic: bool) -> (Lab, PathBuf) {
    let lib = libfaketime();
    let mut lab = common::lab().await;
    let offset = lab.dir.path().join("faketime");
    std::fs::write(&offset, "+0\n").unwrap();
    let wrapper = lab.dir.path().join("agent-under-faketime");
    let script = format!(
        "#!/bin/sh\nexport LD_PRELOAD={} FAKETIME_TIMESTAMP_FILE={} \
         FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC={}\nexec {} \"$@\"\n",
        lib.display(),
        offset.display(),
        if monotonic { 0 } else { 1 },
        lab.agent_bin.display()
    );
    std::fs::write(&wrapper, script).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&wrapper)
        .status()
        .unwrap();
    lab.agent_bin = wrapper;
    // The hold's rounds check the links only: the API server probe asks this test's own
    // server, which on a loaded machine (load 30 on 2 cores) sometimes took over its 2 s to
    // answer and failed the hold, a verdict on the machine, not on the clocks. (A jump while a
    // check waits is the probe's own unit test: `ticks`.)
    lab.extra_args = [
        "--probe-interval",
        "100ms",
        "--probe-hold",
        "3s",
        "--probe-api-server=false",
    ]
    .map(String::from)
    .to_vec();
    lab.set_spec("rev-1", layer2s(100, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-1", 30).await;
    (lab, offset)
}

/// When the agent logged `step` for `rev`: the line's timestamp, the agent's wall clock, which
/// is the true time as long as the offset file says `+0`. Panics when there is no such line.
fn logged_at(lab: &Lab, step: &str, rev: &str) -> jiff::Timestamp {
    let (step, rev) = (
        format!("\"step\":\"{step}\""),
        format!("\"revision\":\"{rev}\""),
    );
    let log = lab.log();
    let line = log
        .lines()
        .find(|l| l.contains(&step) && l.contains(&rev))
        .unwrap_or_else(|| panic!("no {step} of {rev} in the agent log:\n{log}"));
    let json: serde_json::Value = serde_json::from_str(line).unwrap();
    json["timestamp"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no timestamp in {line}"))
}

/// How long after `since` it is now (the test's wall clock, never faked).
fn since(since: jiff::Timestamp) -> Duration {
    Duration::try_from(jiff::Timestamp::now().duration_since(since)).unwrap_or_default()
}

/// Dispatches rev-2, writes `jump` into the offset file half a second after the agent applied
/// it (inside the hold), and waits for the verdict. Returns the status, the agent's own figure
/// ("applied and probed in N ms") and the time from its apply to the verdict seen by the test.
/// The apply's moment is the agent's own log line (logged before the jump, so the true time):
/// the test's polling, slow on a loaded machine, does not shift it.
async fn jump_during_hold(
    lab: &Lab,
    offset: &PathBuf,
    jump: &str,
) -> (netrollout_api::NodeNetworkConfigStatus, u64, Duration) {
    lab.set_spec("rev-2", layer2s(110, 2)).await;
    lab.wait_log("\"step\":\"apply\"", 2, 30).await;
    let applied = logged_at(lab, "apply", "rev-2");
    tokio::time::sleep(Duration::from_millis(500).saturating_sub(since(applied))).await;
    std::fs::write(offset, format!("{jump}\n")).unwrap();
    let jumped = since(applied);
    let nnc = lab.wait_finished("rev-2", 30).await;
    let took = since(applied);
    eprintln!("{jump} written {jumped:?} after the apply");
    let status = nnc.status.unwrap();
    let message = status.message.clone().unwrap_or_default();
    let figure = message
        .strip_prefix("applied and probed in ")
        .and_then(|m| m.strip_suffix(" ms"))
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {message:?}: {status:?}"));
    (status, figure, took)
}

/// `finishedAt - startedAt` in seconds (the wall clock).
fn wall_span(status: &netrollout_api::NodeNetworkConfigStatus) -> i64 {
    let (Some(start), Some(end)) = (&status.started_at, &status.finished_at) else {
        panic!("no status times: {status:?}");
    };
    end.0.as_second() - start.0.as_second()
}

/// Far below the hour a jump would add or take away, far above what a loaded machine adds to
/// a hold (probe rounds, the status write, this test's polling).
const SLACK: Duration = Duration::from_secs(20);

/// The hold ran its length on the monotonic clock and the change committed.
fn check_hold(status: &netrollout_api::NodeNetworkConfigStatus, figure: u64, took: Duration) {
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let (hold, slack) = (HOLD.as_millis() as u64, SLACK.as_millis() as u64);
    assert!(
        (hold..hold + slack).contains(&figure),
        "the agent measured {figure} ms for a {hold} ms hold"
    );
    // Seen from outside: no early commit, no endless hold.
    assert!(
        took >= HOLD && took < HOLD + SLACK,
        "committed {took:?} after the apply, with a {HOLD:?} hold"
    );
}

/// The wall clock's span of the attempt, `finishedAt - startedAt`, is the jump plus the
/// attempt's length: the status times follow the wall clock (and the jump took effect).
fn check_wall_span(status: &netrollout_api::NodeNetworkConfigStatus, jump: i64) {
    let span = wall_span(status) - jump;
    assert!(
        (0..SLACK.as_secs() as i64).contains(&span),
        "a {jump} s jump, a {} s wall span: {status:?}",
        wall_span(status)
    );
}

#[tokio::test]
async fn a_wall_clock_jump_an_hour_forward_during_the_probe_hold_neither_shortens_nor_fails_it() {
    let (lab, offset) = faked_lab(false).await;
    let (status, figure, took) = jump_during_hold(&lab, &offset, "+1h").await;
    eprintln!(
        "+1h: agent {figure} ms, seen {took:?}, wall span {} s",
        wall_span(&status)
    );
    check_hold(&status, figure, took);
    check_wall_span(&status, 3600);
}

#[tokio::test]
async fn a_wall_clock_jump_an_hour_back_during_the_probe_hold_neither_lengthens_nor_fails_it() {
    let (lab, offset) = faked_lab(false).await;
    let (status, figure, took) = jump_during_hold(&lab, &offset, "-1h").await;
    eprintln!(
        "-1h: agent {figure} ms, seen {took:?}, wall span {} s",
        wall_span(&status)
    );
    check_hold(&status, figure, took);
    check_wall_span(&status, -3600);
}

#[tokio::test]
async fn a_monotonic_clock_jump_during_the_probe_hold_counts_as_time_passed_and_ends_the_hold() {
    let (lab, offset) = faked_lab(true).await;
    let (status, figure, took) = jump_during_hold(&lab, &offset, "+1h").await;
    eprintln!("monotonic +1h: agent {figure} ms, seen {took:?}");
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    // The agent's monotonic clock says an hour passed (the jump took effect)...
    assert!(figure >= 3_600_000, "the agent measured {figure} ms");
    // ...so the hold ended at the next probe round, before its length in real time.
    assert!(took < HOLD, "committed {took:?} after the apply");
}
