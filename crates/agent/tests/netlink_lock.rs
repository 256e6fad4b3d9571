//! The real agent while the kernel holds its netlink lock: a namespace with thousands of links
//! is removed (the kernel removes them in the background, holding RTNL the whole time) right
//! before a change reaches the agent. The agent says what it waits for and since when (status
//! reason `WaitingForKernel`, its log, the step metrics) while `/healthz` stays 200 (a known
//! wait is reported, not restarted); with the default deadline it finishes once the kernel
//! answers; with a short deadline the apply fails and the restore waits for the kernel: either
//! way the kernel ends holding one whole config.
//!
//! A test binary of its own: it slows every netlink write on the machine for a while, so it
//! does not run beside the other agent tests (cargo runs test binaries one after another), and
//! it waits until the kernel has settled before it ends.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

#[path = "common/lab_ext.rs"]
mod lab_ext;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab_ext::AgentLab as _;
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_testkit::agent::{Lab, layer2s};
use netrollout_testkit::netns::{Netns, remove_and_wait_until_busy, wait_until_settled};

/// Layer-2 networks of the namespace removed (a bridge, a VXLAN port and an address each, as
/// the dataplane benchmark makes them). The kernel's hold grows linearly with them, about 23 ms
/// a network on this machine (250: 5.7 s, 500: 11.4 s, 1,000: 23.5 s; veth pairs go fast:
/// 3,000 in 0.4 s): 500 hold it about 11 s, of which about 10 s after the dispatch, five times
/// the 2 s kernel deadline and ten times the 1 s slow threshold of the tests below. A hold
/// that ends too soon fails them with [`HOLD_TOO_SHORT`].
const NETWORKS: u32 = 500;

/// What a test says when the kernel answered before the agent's deadline.
const HOLD_TOO_SHORT: &str = "if the kernel answered before the agent's deadline, its hold was \
     too short on this machine: give the removed namespace more networks (NETWORKS)";

/// The tests take turns: each holds the kernel's lock on purpose.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A namespace holding `2 * NETWORKS` links, ready to be removed.
fn heavy_namespace() -> Netns {
    let ns = Netns::new("agl");
    let batch: String = (1..=NETWORKS)
        .map(|n| {
            format!(
                "link add name b{n} up type bridge\n\
                 link add name x{n} master b{n} up type vxlan id {} local 192.0.2.1 dstport 4789\n\
                 addr add 10.{}.{}.1/24 dev b{n}\n",
                100_000 + n,
                n / 256,
                n % 256
            )
        })
        .collect();
    let file = std::env::temp_dir().join(format!("{}.batch", ns.name));
    std::fs::write(&file, batch).unwrap();
    ns.ip(&format!("-batch {}", file.display()));
    let _ = std::fs::remove_file(&file);
    ns
}

/// An agent that committed the empty config, with a 1 s slow threshold.
async fn started(extra: &[&str]) -> Lab {
    let mut lab = Lab::new(env!("CARGO_BIN_EXE_netrollout-agent").into()).await;
    lab.extra_args = ["--step-slow", "1s"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    lab.set_spec("rev-0", NodeConfig::default()).await;
    lab.start_agent();
    lab.wait_finished("rev-0", 60).await;
    lab
}

/// Removes `heavy`, waits until the kernel holds its netlink lock for it (`ip netns del`
/// returns before the kernel takes it: a change sent at once may pass before), runs `busy`,
/// and dispatches `rev`; until the status is about `rev` and finished, checks `/healthz` and remembers every
/// reason and message the status showed. Returns them and the finished object.
async fn dispatch_while_the_kernel_is_busy(
    lab: &Lab,
    heavy: Netns,
    rev: &str,
    busy: impl FnOnce(),
) -> (Vec<(String, String)>, netrollout_api::NodeNetworkConfig) {
    let removed = Instant::now();
    let held = remove_and_wait_until_busy(heavy, Duration::from_secs(30));
    eprintln!(
        "the kernel held its netlink lock {:.1} s after the removal began",
        held.as_secs_f64()
    );
    busy();
    lab.set_spec(rev, layer2s(100, 20)).await;
    let mut seen: Vec<(String, String)> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let (status, body) = lab.http_get(9101, "/healthz").await;
        assert_eq!(
            status,
            200,
            "/healthz failed during a wait on the kernel: {body}\n{}",
            lab.log()
        );
        let nnc = lab.nnc_api().get(&lab.node).await.unwrap();
        let status = nnc.status.clone().unwrap_or_default();
        let said = (
            status.reason.clone().unwrap_or_default(),
            status.message.clone().unwrap_or_default(),
        );
        if seen.last() != Some(&said) {
            seen.push(said);
        }
        let finished = status.observed_revision.as_deref() == Some(rev)
            && matches!(
                status.phase,
                Some(NodePhase::Provisioned | NodePhase::Failed)
            );
        if finished && status.reason.as_deref() != Some("RestoreFailed") {
            eprintln!(
                "{rev}: finished {:.1} s after the namespace removal began",
                removed.elapsed().as_secs_f64()
            );
            return (seen, nnc);
        }
        assert!(
            Instant::now() < deadline,
            "{rev} did not finish; seen {seen:#?}\n{}",
            lab.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn waited_on_the_kernel(seen: &[(String, String)]) -> bool {
    seen.iter().any(|(reason, message)| {
        reason == "WaitingForKernel" && message.contains("waiting for the kernel (netlink) since")
    })
}

fn settle() {
    let waited = wait_until_settled(Duration::from_secs(600));
    eprintln!(
        "waited {:.1} s for the kernel to finish removing namespaces",
        waited.as_secs_f64()
    );
}

#[tokio::test]
async fn an_apply_that_waits_on_the_netlink_lock_says_so_stays_live_and_finishes_whole() {
    let _turn = SERIAL.lock().await;
    let lab = started(&[]).await;
    let heavy = heavy_namespace();
    settle();
    let (seen, nnc) = dispatch_while_the_kernel_is_busy(&lab, heavy, "rev-1", || {}).await;
    let status = nnc.status.unwrap();
    assert_eq!(
        status.phase,
        Some(NodePhase::Provisioned),
        "{status:?}\n{}",
        lab.log()
    );
    assert!(
        waited_on_the_kernel(&seen),
        "{seen:#?} ({HOLD_TOO_SHORT})\n{}",
        lab.log()
    );
    assert!(lab.holds(&layer2s(100, 20)).await);
    // The log named the step and the work the kernel had not answered.
    assert!(
        lab.log().lines().any(|l| l.contains("\"step\":\"wait\"")
            && l.contains("\"waiting_for\":\"apply\"")
            && l.contains("netlink apply of rev-1")),
        "{}",
        lab.log()
    );
    settle();
}

/// The apply past its deadline, and beside it a second agent started while the kernel holds
/// its lock: its netlink connection waits (the status says `WaitingForKernel`, "starting:
/// ..."); its capability detection (scratch devices over netlink) is reported slow, times out
/// without assuming anything (nothing detected, nothing written), and is written once the
/// kernel answers; then it applies its revision.
#[tokio::test]
async fn an_apply_past_its_deadline_fails_and_the_restore_waits_for_the_kernel() {
    let _turn = SERIAL.lock().await;
    let lab = started(&["--kernel-deadline", "2s"]).await;
    // Made now: making its namespace and veth waits for the kernel too.
    let mut second = Lab::new(env!("CARGO_BIN_EXE_netrollout-agent").into()).await;
    second.extra_args = ["--step-slow", "1s", "--kernel-deadline", "2s"]
        .map(String::from)
        .to_vec();
    second.set_spec("rev-0", NodeConfig::default()).await;
    let (reasons, watching) = reasons_of(&second);
    let heavy = heavy_namespace();
    settle();
    let (seen, nnc) =
        dispatch_while_the_kernel_is_busy(&lab, heavy, "rev-1", || second.start_agent()).await;
    let status = nnc.status.unwrap();
    assert_eq!(
        (status.phase, status.reason.as_deref()),
        (Some(NodePhase::Failed), Some("ApplyFailed")),
        "{status:?} ({HOLD_TOO_SHORT})\n{}",
        lab.log()
    );
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("the kernel did not answer within 2 s")
            && message.contains("restored last-known-good rev-0"),
        "{message}"
    );
    assert!(waited_on_the_kernel(&seen), "{seen:#?} ({HOLD_TOO_SHORT})");
    // Nothing of rev-1 is left: the restore ran after the kernel answered the late apply.
    assert!(lab.holds(&NodeConfig::default()).await, "{}", lab.log());
    detection_timed_out_and_answered_late(&second).await;
    // Its start waited for its netlink connection, and its status said so.
    let nnc = second.wait_finished("rev-0", 60).await;
    let status = nnc.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    watching.abort();
    let log = second.log();
    assert!(
        log.lines()
            .any(|l| l.contains("\"step\":\"wait\"") && l.contains("\"waiting_for\":\"connect\"")),
        "{log}"
    );
    let seen = reasons.lock().unwrap().clone();
    assert!(
        seen.iter().any(|(r, m)| r == "WaitingForKernel"
            && m.contains("starting: waiting for the kernel (netlink) since")),
        "{seen:#?}\n{log}"
    );
    // What detection found once the kernel answered is written.
    second
        .wait_nnc(30, "capabilities reported", |o| {
            o.status
                .as_ref()
                .and_then(|s| s.capabilities.as_ref())
                .is_some_and(|c| c.present.iter().any(|p| p == "bridge"))
        })
        .await;
    settle();
}

/// Every reason and message `lab`'s status shows (looked at every 100 ms), until the task is
/// aborted.
type Said = Arc<Mutex<Vec<(String, String)>>>;

fn reasons_of(lab: &Lab) -> (Said, tokio::task::JoinHandle<()>) {
    let api = lab.nnc_api();
    let node = lab.node.clone();
    let said = Said::default();
    let to = said.clone();
    let task = tokio::spawn(async move {
        loop {
            if let Ok(o) = api.get(&node).await {
                let s = o.status.unwrap_or_default();
                let said = (s.reason.unwrap_or_default(), s.message.unwrap_or_default());
                let mut seen = to.lock().unwrap();
                if seen.last() != Some(&said) {
                    seen.push(said);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    (said, task)
}

/// The second agent's detection: slow, past its deadline with nothing assumed, then the
/// kernel's answer (bridges work on every kernel the tests run on).
async fn detection_timed_out_and_answered_late(second: &Lab) {
    second.wait_log_line(&["capabilities detected"], 120).await;
    let log = second.log();
    let at = |needles: &[&str]| {
        log.lines()
            .position(|l| needles.iter().all(|n| l.contains(n)))
            .unwrap_or_else(|| panic!("no line with {needles:?} ({HOLD_TOO_SHORT})\n{log}"))
    };
    let slow = at(&[
        "\"step\":\"wait\"",
        "\"waiting_for\":\"capabilities\"",
        "\"part\":\"kernel\"",
    ]);
    let timed_out = at(&["\"step\":\"timed-out\"", "\"waited_for\":\"capabilities\""]);
    let assumed = at(&["nothing is reported until it ends"]);
    let detected = at(&["capabilities detected"]);
    assert!(
        slow < timed_out && timed_out <= assumed && assumed < detected,
        "slow {slow}, timed out {timed_out}, assumed {assumed}, detected {detected}\n{log}"
    );
    assert!(
        log.lines().nth(detected).unwrap().contains("bridge"),
        "{log}"
    );
}
