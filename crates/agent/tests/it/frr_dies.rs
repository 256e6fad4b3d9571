//! FRR dies during an apply: the real agent with real FRR (zebra + bgpd 8.4, an eBGP peer) in a
//! network namespace. bgpd or zebra is killed (`SIGKILL`) after the agent's kernel step, before
//! or while `frr-reload.py` runs, and started again a few seconds later, as a supervisor would:
//! the agent does not commit, says in the status that FRR (naming the daemon) is not running
//! while it waits, restores last-known-good in FRR and the kernel once FRR is back, and reports
//! the revision `Failed` naming the daemon. FRR down when an apply would start: nothing is
//! touched, the status says so, and the revision is applied once FRR is back. Also: the FRR dump
//! the VM suites print on a failed wait answers every command. Needs root and FRR.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::frr::{NODE_IP, PEER_IP, World};
use common::kills::{LogTail, helpers};
use common::layer2s;
use common::supervisor::{crash, restart};
use netrollout_agent::store::{JOURNAL_FILE, Store};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_testkit::frr::DUMP;

/// When the daemon dies.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// Right after the kernel step, before FRR's step starts.
    AfterKernel,
    /// While `frr-reload.py` runs.
    DuringReload,
}

/// rev-1 (three layer-2 networks: bridges, VXLANs, `advertise-all-vni`) committed, then rev-2
/// (none: the kernel objects go, and FRR's managed section) with `daemon` killed at `moment`.
async fn frr_daemon_dies_during_an_apply(daemon: &str, moment: Moment) {
    let mut w = World::new("10s").await;
    let good = layer2s(700, 3);
    let mut tail = LogTail::from_end(&w.lab.log_path());
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let running_good = strip_header(&w.node.running());
    let conf_good = std::fs::read_to_string(&w.conf).unwrap();

    w.lab.set_spec("rev-2", NodeConfig::default()).await;
    let quoted = "\"revision\":\"rev-2\"";
    tail.wait_line(&["\"step\":\"apply\"", quoted], Duration::from_secs(60))
        .await;
    if let Moment::DuringReload = moment {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !helpers(&w.lab)
            .iter()
            .any(|p| p.cmdline.contains("frr-reload"))
        {
            assert!(
                Instant::now() < deadline,
                "frr-reload.py never ran:\n{}",
                w.lab.log()
            );
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    let ps = w.lab.ns.clone();
    crash(&ps, daemon);

    // While FRR is down: no commit, the journal stays, the status says which daemon is missing.
    let (_, reason, message) = wait_condition(&w, "FrrUnavailable", 30).await;
    assert!(
        message.contains(daemon) && message.contains("FRR is not running"),
        "{reason}: {message}"
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = w.lab.status().await;
    assert_ne!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(w.lab.state_dir().join(JOURNAL_FILE).exists(), "no journal");
    let lkg = Store::open(w.lab.state_dir())
        .unwrap()
        .last_known_good()
        .unwrap();
    assert_eq!(lkg.revision.as_deref(), Some("rev-1"));

    // The supervisor starts the daemon again: it reads the frr.conf on disk.
    restart(&ps, &ps, daemon, &w.conf);
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("ApplyFailed"), "{status:?}");
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains(&format!("FRR is not running: {daemon}"))
            && message.contains("restored last-known-good rev-1"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));
    assert!(w.lab.holds(&good).await, "the kernel does not hold rev-1");
    assert_eq!(
        strip_header(&w.node.running()),
        running_good,
        "FRR does not run rev-1's config"
    );
    assert_eq!(std::fs::read_to_string(&w.conf).unwrap(), conf_good);
    assert!(!w.lab.state_dir().join(JOURNAL_FILE).exists());
    assert!(
        !w.lab
            .log()
            .contains("\"step\":\"commit\",\"revision\":\"rev-2\"")
    );
    w.node.wait(30, "the session to the peer again", |f| {
        f.established(PEER_IP)
    });
}

#[tokio::test]
async fn bgpd_killed_after_the_kernel_step_makes_no_commit_and_frr_and_kernel_are_restored_once_it_is_back()
 {
    frr_daemon_dies_during_an_apply("bgpd", Moment::AfterKernel).await;
}

#[tokio::test]
async fn bgpd_killed_during_frr_reload_makes_no_commit_and_frr_and_kernel_are_restored_once_it_is_back()
 {
    frr_daemon_dies_during_an_apply("bgpd", Moment::DuringReload).await;
}

#[tokio::test]
async fn zebra_killed_during_frr_reload_makes_no_commit_and_frr_and_kernel_are_restored_once_it_is_back()
 {
    frr_daemon_dies_during_an_apply("zebra", Moment::DuringReload).await;
}

#[tokio::test]
async fn frr_down_when_an_apply_would_start_touches_nothing_and_the_revision_is_applied_once_frr_is_back()
 {
    let mut w = World::new("10s").await;
    let good = layer2s(720, 2);
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let conf_good = std::fs::read_to_string(&w.conf).unwrap();
    let ps = w.lab.ns.clone();
    crash(&ps, "bgpd");
    crash(&ps, "zebra");

    let next = layer2s(730, 1);
    w.lab.set_spec("rev-2", next.clone()).await;
    let (_, _, message) = wait_condition(&w, "FrrUnavailable", 30).await;
    assert!(
        message.contains("FRR is not running: zebra and bgpd not answering"),
        "{message}"
    );
    // Nothing touched: no journal, the kernel and frr.conf hold rev-1, no verdict on rev-2.
    assert!(!w.lab.state_dir().join(JOURNAL_FILE).exists(), "a journal");
    assert!(w.lab.holds(&good).await, "the kernel changed");
    assert_eq!(std::fs::read_to_string(&w.conf).unwrap(), conf_good);
    let status = w.lab.status().await;
    assert_eq!(
        status.observed_revision.as_deref(),
        Some("rev-1"),
        "{status:?}"
    );

    restart(&ps, &ps, "zebra", &w.conf);
    restart(&ps, &ps, "bgpd", &w.conf);
    let status = w.lab.wait_finished("rev-2", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(w.lab.holds(&next).await, "rev-2 is not in place");
    assert!(w.node.running().contains("advertise-all-vni"));
    let (ready, _, _) = w.lab.node_condition().await.unwrap();
    assert_eq!(ready, "True");
}

/// The dump every FRR wait of the VM suites prints when it times out (the test kit's
/// `Daemons::dump`): on a real FRR with a session and a received route, each command answers,
/// bgpd's next-hop table shows the peer, and zebra's interfaces show the underlay address.
#[tokio::test]
async fn the_failure_dump_shows_bgp_next_hops_type_5_routes_and_zebras_view() {
    let w = World::new("10s").await;
    // The next hop is registered when the session comes up, the route a moment later: wait
    // for both, or the dump may be taken in between.
    w.node.wait(30, "the peer's route and its next hop", |f| {
        f.vtysh("show bgp nexthop").contains(PEER_IP)
            && f.vtysh("show ip route vrf all").contains("198.51.100.0/24")
    });
    let dump = w.node.daemons.dump(&["show bgp summary"]);
    let section = |cmd: &str| -> String {
        let header = format!("--- {} {cmd}\n", w.lab.ns);
        let start = dump
            .find(&header)
            .unwrap_or_else(|| panic!("no {cmd:?} in:\n{dump}"));
        let rest = &dump[start + header.len()..];
        rest[..rest.find("\n--- ").unwrap_or(rest.len())].to_string()
    };
    for cmd in DUMP
        .iter()
        .chain(&["show bgp summary", "show running-config"])
    {
        assert!(
            !section(cmd).starts_with("(vtysh failed)"),
            "{cmd:?} did not answer:\n{dump}"
        );
    }
    assert!(section("show bgp nexthop").contains(PEER_IP), "{dump}");
    assert!(section("show ip nht vrf all").contains(PEER_IP), "{dump}");
    assert!(section("show interface brief").contains(NODE_IP), "{dump}");
    assert!(
        section("show ip route vrf all").contains("198.51.100.0/24"),
        "{dump}"
    );
}

/// Waits until the Node's `NetworkConfigReady` condition has `reason`; returns it.
async fn wait_condition(w: &World, reason: &str, secs: u64) -> (String, String, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(c) = w.lab.node_condition().await
            && c.1 == reason
        {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "no {reason} condition within {secs} s: {:?}\nagent log:\n{}",
            w.lab.node_condition().await,
            w.lab.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `show running-config` without its `Building configuration...` preamble.
fn strip_header(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .collect::<Vec<_>>()
        .join("\n")
}
