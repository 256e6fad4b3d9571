//! The one FRR start: bgpd starts only once zebra is up (its zserv socket there, `show zebra`
//! answering), whatever the time zebra takes; a missing or silent daemon is an error naming the
//! pathspace and what to do. Real FRR (Debian's `frr`) in a namespace of its own, as root.
//!
//! The daemons are started through small wrapper scripts (the start's `bin_dir`) around the real
//! ones: the zebra wrapper returns at once and starts zebra two seconds later in the background
//! (as a slow machine would), the bgpd wrapper writes down whether zebra was up when it ran.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use netrollout_frr::daemons::{Error, FRR_LIB, Log, Start, require_installed};
use netrollout_testkit::netns::Netns;

/// Writes an executable `/bin/sh` script `name` into `dir`.
fn script(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A namespace (`prefix-PID-N`), the pathspace of the same name, and a directory for the
/// wrapper scripts; needs root and FRR.
fn world(prefix: &str) -> (Netns, String, tempfile::TempDir) {
    require_installed();
    let netns = Netns::new(prefix);
    let ps = pathspace(&netns);
    (netns, ps, tempfile::tempdir().unwrap())
}

/// A pathspace for `netns` whose config (empty) and vtysh.conf FRR may read.
fn pathspace(netns: &Netns) -> String {
    let etc = Path::new("/etc/frr").join(&netns.name);
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::write(etc.join("vtysh.conf"), "").unwrap();
    std::fs::write(etc.join("frr.conf"), "").unwrap();
    let _ = std::process::Command::new("chown")
        .args(["-R", "frr:frr"])
        .arg(&etc)
        .status();
    netns.name.clone()
}

#[test]
fn bgpd_starts_only_once_a_slow_zebra_is_up() {
    let (netns, ps, bin) = world("nrfst");
    let seen = bin.path().join("bgpd-saw");
    script(
        bin.path(),
        "zebra",
        &format!("(sleep 2; exec {FRR_LIB}/zebra \"$@\") >/dev/null 2>&1 &\nexit 0"),
    );
    script(
        bin.path(),
        "bgpd",
        &format!(
            "if [ -S /var/run/frr/{ps}/zserv.api ] && vtysh -N {ps} -d zebra -c 'show zebra' \
             >/dev/null 2>&1; then echo up > {seen}; else echo down > {seen}; fi\n\
             exec {FRR_LIB}/bgpd \"$@\"",
            seen = seen.display()
        ),
    );
    let daemons = Start {
        bin_dir: bin.path(),
        timeout: Duration::from_secs(20),
        ..Start::new(&netns.name, &ps)
    }
    .start();
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        "up",
        "bgpd started before zebra was up"
    );
    assert!(daemons.zebra_up(None) && daemons.try_vtysh("show bgp summary json").is_some());
    assert_eq!(daemons.pids().len(), 2, "a pid per daemon");
    drop(daemons);
    let _ = std::fs::remove_dir_all(Path::new("/etc/frr").join(&ps));
}

#[test]
fn a_zebra_that_never_comes_up_is_an_error_naming_the_pathspace_and_the_wait() {
    let (netns, ps, bin) = world("nrfsu");
    script(bin.path(), "zebra", "exit 0");
    script(bin.path(), "bgpd", "exit 0");
    let err = Start {
        bin_dir: bin.path(),
        log: Log::Files(bin.path().to_path_buf()),
        timeout: Duration::from_secs(1),
        ..Start::new(&netns.name, &ps)
    }
    .try_start()
    .unwrap_err();
    assert!(matches!(err, Error::NotReady { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("pathspace {ps}"))
            && text.contains("no zebra up (zserv socket, show zebra) within 1s"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(Path::new("/etc/frr").join(&ps));
}

#[test]
fn missing_daemons_are_an_error_saying_what_to_install() {
    let empty = tempfile::tempdir().unwrap();
    let err = Start {
        bin_dir: empty.path(),
        ..Start::new("nowhere", "nowhere")
    }
    .try_start()
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&empty.path().join("zebra").display().to_string())
            && text.contains("install Debian's frr package"),
        "{text}"
    );
}

/// `bfdd: true` starts bfdd after bgpd: `show daemons` names it (what the agent's capability
/// detection reads), and a BGP neighbour with `bfd` gets a BFD session in it.
#[test]
fn bfdd_starts_when_asked_and_takes_the_bfd_sessions_of_bgp_neighbours() {
    let (netns, ps, _bin) = world("nrfsb");
    // The neighbour on a connected network (BFD needs the session's local address).
    netns.ip("link add nrb0 type veth peer name nrb1");
    netns.ip("addr add 10.9.9.1/24 dev nrb0");
    netns.ip("link set nrb0 up");
    netns.ip("link set nrb1 up");
    let etc = Path::new("/etc/frr").join(&ps);
    std::fs::write(
        etc.join("frr.conf"),
        "router bgp 65001\n bgp router-id 10.0.0.1\n neighbor 10.9.9.9 remote-as 65002\n \
         neighbor 10.9.9.9 bfd\nexit\n",
    )
    .unwrap();
    let conf = etc.join("frr.conf");
    let daemons = Start {
        bfdd: true,
        config: Some(&conf),
        timeout: Duration::from_secs(20),
        ..Start::from_env(&netns.name, &ps)
    }
    .start();
    let shown = daemons.vtysh("show daemons");
    assert!(
        shown.split_whitespace().any(|d| d == "bfdd"),
        "show daemons: {shown}"
    );
    assert_eq!(
        daemons.pids().len(),
        daemons.names().len(),
        "a pid per daemon"
    );
    let mut peers = String::new();
    for _ in 0..100 {
        peers = daemons.vtysh("show bfd peers brief");
        if peers.contains("10.9.9.9") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        peers.contains("10.9.9.9"),
        "no BFD session for the neighbour:\n{peers}\n{}",
        daemons.vtysh("show running-config")
    );
    drop(daemons);
    let _ = std::fs::remove_dir_all(etc);
}
