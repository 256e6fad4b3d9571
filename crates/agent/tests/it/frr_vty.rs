//! The agent's read of FRR's running config over the daemons' vty sockets (no vtysh) against
//! real FRR (8.4, or 10.3 with `NETROLLOUT_FRR_VERSION=10.3`), one namespace and pathspace per FRR: for the samples (with staticd beside
//! zebra and bgpd, sharing a VRF block) and the lab's routed tenant the read is vtysh's
//! `show running-config no-header` line for line (less vtysh's own `hostname` line), so the
//! diff reads both the same; a daemon that is down is an error naming it and its socket; the
//! vtysh fallback is taken, and counted, only when the sockets cannot be used. Needs root and
//! FRR; fails loudly without.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::frr::{FrrNs, chmod_755};
use common::supervisor::{crash, restart};
use netrollout_agent::frr::{Frr, FrrError, read_as_diff};
use netrollout_api::NodeConfig;
use netrollout_frr::daemons::Version;
use netrollout_testkit::netns::Netns;

use crate::frr_converge::{BASE, routed_tenant, samples, settings};

/// Static routes in the operator's base, staticd's: one in the default VRF, one in the
/// samples' VRF (a `vrf` block zebra shows too, with the VRF's VNI).
const STATIC: &str = "ip route 198.51.100.0/24 blackhole\n!\nvrf vr.m2m\n \
    ip route 10.99.0.0/24 blackhole\nexit-vrf\n!\n";

/// staticd started beside the test kit's zebra and bgpd; stopped on drop.
struct Staticd(String);

impl Drop for Staticd {
    fn drop(&mut self) {
        let pid_file = Version::from_env().run_dir(&self.0).join("staticd.pid");
        if let Ok(pid) = std::fs::read_to_string(pid_file) {
            let _ = Command::new("kill").arg(pid.trim()).status();
        }
    }
}

/// FRR started from the text of `config` (with `extra` in the base, and staticd beside zebra
/// and bgpd when there is any) in a namespace of its own, and the agent's view of it.
struct Node {
    frr: Frr,
    _staticd: Option<Staticd>,
    daemons: FrrNs,
    _ns: Netns,
}

fn start(root: &Path, name: &str, config: &NodeConfig, extra: &str) -> Node {
    let ns = Netns::new("frrvty");
    let dir: PathBuf = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    chmod_755(&dir);
    let s = settings(&dir, &ns.name);
    std::fs::write(&s.base_config, format!("{BASE}{extra}")).unwrap();
    let frr = Frr::new(s).unwrap();
    let text = frr.full(&frr.managed(config).unwrap()).unwrap();
    assert!(text.contains(extra), "the base's lines are in the text");
    let daemons = FrrNs::start(&ns.name, &dir, &text);
    let staticd = (!extra.is_empty()).then(|| {
        // A daemon reading the whole frr.conf stops at the first top-level `exit` of another
        // daemon's block (it leaves the config mode): staticd reads its own lines.
        std::fs::write(dir.join("staticd.conf"), extra).unwrap();
        restart(&ns.name, &ns.name, "staticd", &dir.join("staticd.conf"));
        Staticd(ns.name.clone())
    });
    Node {
        frr,
        _staticd: staticd,
        daemons,
        _ns: ns,
    }
}

/// vtysh's `show running-config no-header` less the `hostname` line vtysh adds of its own (the
/// machine's name) when the daemons show another one.
fn vtysh_running(node: &Node, ours: &str) -> String {
    let own = format!(
        "hostname {}",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim()
    );
    let text = node.daemons.vtysh("show running-config no-header");
    if ours.lines().any(|l| l == own) {
        return text;
    }
    text.lines()
        .filter(|l| *l != own)
        .map(|l| format!("{l}\n"))
        .collect()
}

#[tokio::test]
async fn the_socket_read_of_the_running_config_is_vtyshs_show_running_config_for_the_samples_and_the_routed_tenant()
 {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let root = dir.path().to_path_buf();
    // Both FRRs start at once.
    let cases = [
        ("the samples with staticd", samples(), STATIC),
        ("the routed tenant", routed_tenant(), ""),
    ];
    let nodes: Vec<(&str, Node)> = std::thread::scope(|s| {
        let started: Vec<_> = cases
            .iter()
            .map(|(name, config, extra)| {
                let root = &root;
                s.spawn(move || (*name, start(root, &name.replace(' ', "-"), config, extra)))
            })
            .collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (name, node) in &nodes {
        let ours = node.frr.running_config().await.unwrap();
        let theirs = vtysh_running(node, &ours);
        assert_eq!(
            ours, theirs,
            "{name}: the daemons' texts joined (left) differ from vtysh's show running-config (right)"
        );
        assert_eq!(read_as_diff(&ours), read_as_diff(&theirs), "{name}");
        // What the test is about is there: the managed VRF, and staticd's lines in its block.
        assert!(ours.contains("router bgp 65000 vrf vr."), "{name}:\n{ours}");
        if name.contains("staticd") {
            // One block (FRR 8.4: zebra's line, then staticd's; 10.3: mgmtd holds both).
            let block = ours
                .split("\nvrf vr.m2m\n")
                .nth(1)
                .and_then(|rest| rest.split("exit-vrf").next())
                .unwrap_or_default();
            let mut lines: Vec<&str> = block.lines().collect();
            lines.sort_unstable();
            assert!(
                lines == [" ip route 10.99.0.0/24 blackhole", " vni 2002026"],
                "{name}: zebra's and staticd's VRF block joined:\n{ours}\nstaticd's log:\n{}",
                std::fs::read_to_string(node.frr.settings().config.with_file_name("staticd.log"))
                    .unwrap_or_default()
            );
        }
        node.frr.require_running().await.unwrap();
        assert_eq!(node.frr.vty_fallbacks(), 0, "{name}: vtysh was used");
    }
}

#[tokio::test]
async fn a_daemon_down_is_an_error_naming_it_and_its_socket_and_vtysh_is_not_asked() {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let node = start(dir.path(), "node", &NodeConfig::default(), "");
    let ps = node.daemons.daemons.pathspace().to_string();
    node.frr.running_config().await.unwrap();

    crash(&ps, "bgpd");
    for e in [
        node.frr.running_config().await.unwrap_err(),
        node.frr.require_running().await.unwrap_err(),
    ] {
        let text = e.to_string();
        let FrrError::Unavailable { daemons, .. } = &e else {
            panic!("not Unavailable: {e:?}");
        };
        assert_eq!(daemons, &["bgpd"], "{text}");
        assert!(
            text.starts_with("FRR is not running: bgpd not answering")
                && text.contains(&format!(
                    "{}",
                    Version::from_env().run_dir(&ps).join("bgpd.vty").display()
                ))
                && text.contains("start or restart FRR"),
            "{text}"
        );
    }
    crash(&ps, "zebra");
    let e = node.frr.running_config().await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("FRR is not running: zebra and bgpd not answering"),
        "{e}"
    );
    assert_eq!(node.frr.vty_fallbacks(), 0, "vtysh was used");
}

#[tokio::test]
async fn without_a_socket_directory_vtysh_reads_frr_and_the_fallback_is_counted() {
    netrollout_frr::daemons::require_installed();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let node = start(dir.path(), "node", &NodeConfig::default(), "");
    // The agent and vtysh both pointed at a directory FRR does not use: the sockets cannot be
    // used, vtysh is asked, and it reaches no daemon (`vtysh -d` says which).
    let mut s = node.frr.settings().clone();
    s.vty_socket = Some(dir.path().join("nowhere"));
    let frr = Frr::new(s).unwrap();
    let e = frr.running_config().await.unwrap_err();
    assert!(
        matches!(&e, FrrError::Unavailable { daemons, detail }
            if daemons == &["zebra", "bgpd"] && detail.contains("vtysh -d zebra")),
        "{e:?}"
    );
    assert_eq!(frr.vty_fallbacks(), 1);
    // The agent's own settings reach FRR without vtysh.
    node.frr.running_config().await.unwrap();
    assert_eq!(node.frr.vty_fallbacks(), 0);
}
