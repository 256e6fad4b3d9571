//! FRR dies during an apply: the real agent with real FRR (zebra + bgpd 8.4, an eBGP peer) in a
//! network namespace. bgpd or zebra is killed (`SIGKILL`) after the agent's kernel step, before
//! its FRR step or in the middle of it (the agent's diff sent with `vtysh -f` and FRR's running
//! config read back: the daemon is stopped the moment `frr.conf` is replaced, so the agent's
//! vtysh waits on it, then killed; the agent's script vtysh is held at a gate until then, so
//! that the moment is not a race against a loaded machine), and started again a few seconds
//! later, as a supervisor would:
//! the agent does not commit, says in the status that FRR (naming the daemon) is not running
//! while it waits, restores last-known-good in FRR and the kernel once FRR is back, and reports
//! the revision `Failed` naming the daemon. FRR down when an apply would start: nothing is
//! touched, the status says so, and the revision is applied once FRR is back. Also: the FRR dump
//! the VM suites print on a failed wait answers every command. Needs root and FRR.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::frr::{FrrNs, NODE_IP, PEER_IP, World, chmod_755};
use common::kills::{LogTail, helpers};
use common::layer2s;
use common::supervisor::{crash, restart};
use netrollout_agent::frr::{Frr, FrrError};
use netrollout_agent::store::{JOURNAL_FILE, Store};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_frr::daemons::DUMP;
use netrollout_testkit::netns::Netns;

use crate::frr_converge::{BASE, settings};

/// When the daemon dies.
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// Right after the kernel step, before FRR's step starts.
    AfterKernel,
    /// In the agent's FRR step: after `frr.conf` is replaced, while the agent's vtysh sends the
    /// diff or reads FRR's running config back.
    DuringSync,
}

/// rev-1 (three layer-2 networks: bridges, VXLANs, `advertise-all-vni`) committed, then rev-2
/// (none: the kernel objects go, and FRR's managed section) with `daemon` killed at `moment`.
async fn frr_daemon_dies_during_an_apply(daemon: &str, moment: Moment) {
    let mut w = World::new("10s").await;
    let gate = Gate::install(&mut w);
    let good = layer2s(700, 3);
    let mut tail = LogTail::from_end(&w.lab.log_path());
    w.lab.set_spec("rev-1", good.clone()).await;
    w.lab.start_agent();
    let status = w.lab.wait_finished("rev-1", 60).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    let running_good = strip_header(&w.node.running());
    let conf_good = std::fs::read_to_string(&w.conf).unwrap();

    if let Moment::DuringSync = moment {
        gate.close();
    }
    w.lab.set_spec("rev-2", NodeConfig::default()).await;
    let quoted = "\"revision\":\"rev-2\"";
    tail.wait_line(&["\"step\":\"apply\"", quoted], Duration::from_secs(60))
        .await;
    let ps = w.lab.ns.clone();
    if let Moment::DuringSync = moment {
        // The agent replaces frr.conf (a rename) right before it sends the diff: stop the daemon
        // then, so that the agent's vtysh (the diff, or the read-back after it) waits on it.
        let inode = |p: &std::path::Path| {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(p).map(|m| m.ino()).unwrap_or(0)
        };
        let before = inode(&w.conf);
        let deadline = Instant::now() + Duration::from_secs(30);
        while inode(&w.conf) == before {
            assert!(
                Instant::now() < deadline,
                "frr.conf was never replaced:\n{}",
                w.lab.log()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        signal_daemon(&ps, daemon, "STOP");
        // The script's vtysh has waited at the gate: the FRR step cannot have finished. Now it
        // sends the diff to the stopped daemon.
        gate.open();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !helpers(&w.lab).iter().any(|p| p.cmdline.contains("vtysh")) {
            assert!(
                Instant::now() < deadline,
                "no vtysh of the agent waits on the stopped {daemon}:\n{}",
                w.lab.log()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tail.refresh();
        assert!(
            !tail.has_line(&["\"step\":\"apply-frr\"", quoted]),
            "the FRR step finished with {daemon} stopped:\n{}",
            tail.text
        );
    }
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
async fn bgpd_killed_while_the_agent_sends_its_diff_makes_no_commit_and_frr_and_kernel_are_restored_once_it_is_back()
 {
    frr_daemon_dies_during_an_apply("bgpd", Moment::DuringSync).await;
}

#[tokio::test]
async fn zebra_killed_while_the_agent_sends_its_diff_makes_no_commit_and_frr_and_kernel_are_restored_once_it_is_back()
 {
    frr_daemon_dies_during_an_apply("zebra", Moment::DuringSync).await;
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
    common::wait_node_condition(&w.lab, "True", "Applied").await;
}

/// The fallback, `frr-reload.py`, with bgpd killed while it runs: the apply fails naming bgpd;
/// once bgpd is back (reading the frr.conf on disk), the agent's diff brings FRR to the text.
#[tokio::test]
async fn bgpd_killed_while_frr_reload_runs_fails_the_apply_naming_bgpd_and_the_diff_converges_once_it_is_back()
 {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let ns = Netns::new("frrdies");
    let node_dir = dir.path().join("node");
    let node = FrrNs::start(&ns.name, &node_dir, BASE);
    let s = settings(&node_dir, &ns.name);
    std::fs::write(&s.base_config, BASE).unwrap();
    let frr = Frr::new(s.clone()).unwrap();
    let text = frr.full(&frr.managed(&layer2s(700, 3)).unwrap()).unwrap();
    let apply = tokio::spawn(async move { frr.apply_with_reload_script(&text).await });
    let conf = s.config.to_string_lossy().into_owned();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !running_with(&["frr-reload", &conf]) {
        assert!(Instant::now() < deadline, "frr-reload.py never ran");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    crash(&ns.name, "bgpd");
    match apply.await.unwrap() {
        Err(FrrError::Unavailable { daemons, .. }) => assert_eq!(daemons, ["bgpd"]),
        other => panic!("the apply with bgpd killed returned {other:?}"),
    }
    restart(&ns.name, &ns.name, "bgpd", &s.config);
    let frr = Frr::new(s.clone()).unwrap();
    let text = frr.full(&frr.managed(&layer2s(700, 3)).unwrap()).unwrap();
    frr.apply(&text).await.unwrap();
    assert_eq!(frr.fallbacks(), 0, "the diff fell back to frr-reload.py");
    assert!(node.running().contains("advertise-all-vni"));
}

/// Whether a process's command line contains every one of `needles`.
fn running_with(needles: &[&str]) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            needles.iter().all(|n| c.contains(n))
        })
    })
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

/// `kill -SIG` to `daemon` of pathspace `ps` (by its pid file).
fn signal_daemon(ps: &str, daemon: &str, sig: &str) {
    let pid_file = netrollout_frr::daemons::Version::from_env()
        .run_dir(ps)
        .join(format!("{daemon}.pid"));
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let ok = std::process::Command::new("kill")
        .args([format!("-{sig}"), pid.trim().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {daemon} ({})", pid.trim());
}

/// A gate on the agent's diff script: the agent's `--frr-bindir` becomes a directory whose
/// `vtysh` runs the real one, except that the script's (`vtysh ... -f /proc/self/fd/0`, the
/// diff the agent sends after it replaced `frr.conf`) first waits while the gate is closed.
/// The agent's other vtysh calls (reads, the check of the file) and `frr-reload.py`'s pass.
/// So a daemon stopped once `frr.conf` is replaced is stopped before the diff reaches it,
/// however slow the test is to notice the replacement (it once noticed after the whole FRR
/// step had finished, at load 10).
struct Gate {
    closed: std::path::PathBuf,
}

impl Gate {
    fn install(w: &mut World) -> Self {
        let dir = w.lab.dir.path().join("gated-bin");
        std::fs::create_dir_all(&dir).unwrap();
        let closed = dir.join("closed");
        let bindir = w
            .lab
            .extra_args
            .iter()
            .position(|a| a == "--frr-bindir")
            .expect("the FRR flags name --frr-bindir")
            + 1;
        let real = std::path::Path::new(&w.lab.extra_args[bindir]).join("vtysh");
        let wrapper = dir.join("vtysh");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh
case \" $* \" in
  *\" -f /proc/self/fd/0 \"*)
    \
                 while [ -e '{}' ]; do sleep 0.005; done ;;
esac
exec '{}' \"$@\"
",
                closed.display(),
                real.display()
            ),
        )
        .unwrap();
        chmod_755(&wrapper);
        chmod_755(&dir);
        w.lab.extra_args[bindir] = dir.display().to_string();
        Self { closed }
    }

    fn close(&self) {
        std::fs::write(&self.closed, "").unwrap();
    }

    fn open(&self) {
        std::fs::remove_file(&self.closed).unwrap();
    }
}

/// `show running-config` without its `Building configuration...` preamble.
fn strip_header(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .collect::<Vec<_>>()
        .join("\n")
}
