//! The agent's watch of its `NodeNetworkConfig` on a connection the network dropped without a
//! word: the lab API server's side of every connection from the agent's namespace is destroyed
//! (`ss -K`) while the server's packets to the namespace are blackholed, so the reset never
//! arrives and the agent's watch is left on a dead connection that nothing will ever end (the
//! agent sends nothing on it). A revision dispatched then is applied once the watch notices:
//! within `--api-watch-timeout` + 5 s (kube's idle limit) + the watch's 5 s backoff cap, not
//! when TCP gives up (the watch sends nothing, so TCP never would).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed step is the test failure

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::{Lab, layer2s};
use netrollout_api::NodePhase;

/// `--api-watch-timeout` of the test: a dead watch is noticed within this + 5 s.
const WATCH_TIMEOUT: Duration = Duration::from_secs(3);

fn host(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Destroys the server's side of every TCP connection from the agent's namespace, with the
/// resets the kernel sends for them dropped on the way (a blackhole route to the namespace's
/// address in the host's namespace, removed afterwards): the agent is not told.
fn drop_connections_silently(lab: &Lab) -> usize {
    let route = format!("{}/32", lab.ns_ip);
    host("ip", &["route", "add", "blackhole", &route]);
    let port = format!(":{}", lab.server.addr().port());
    let killed = host(
        "ss",
        &[
            "-K",
            "-t",
            "-n",
            "state",
            "established",
            "src",
            &lab.host_ip,
            "sport",
            "=",
            &port,
            "dst",
            &lab.ns_ip,
        ],
    );
    // The resets are gone; the path works again.
    host("ip", &["route", "del", "blackhole", &route]);
    killed
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .count()
}

#[tokio::test]
async fn a_watch_on_a_connection_the_network_dropped_is_noticed_and_resumed_within_its_bound() {
    let mut lab = common::lab().await;
    lab.extra_args = [
        "--api-watch-timeout",
        "3s",
        "--probe-api-server=false",
        "--probe-interval",
        "100ms",
    ]
    .map(String::from)
    .to_vec();
    lab.set_spec("rev-1", layer2s(100, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-1", 30).await;
    // Past one whole watch timeout: the watch has renewed itself at least once.
    tokio::time::sleep(WATCH_TIMEOUT + Duration::from_secs(1)).await;

    let killed = drop_connections_silently(&lab);
    let dropped = Instant::now();
    assert!(killed >= 1, "no connection of the agent to destroy");
    lab.set_spec("rev-2", layer2s(110, 2)).await;
    // Idle limit (timeout + 5 s) + backoff cap (5 s) + the apply itself.
    let bound = WATCH_TIMEOUT + Duration::from_secs(5 + 5 + 5);
    let nnc = lab.wait_finished("rev-2", bound.as_secs()).await;
    let took = dropped.elapsed();
    eprintln!("{killed} connections dropped; rev-2 applied {took:?} after (bound {bound:?})");
    assert_eq!(nnc.status.unwrap().phase, Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(110, 2)).await);
    assert!(took <= bound, "{took:?} > {bound:?}");
}
