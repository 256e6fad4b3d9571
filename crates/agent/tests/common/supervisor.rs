//! FRR's daemons as a supervisor (watchfrr, systemd) sees them: one crashes (`SIGKILL`, by its
//! pid file), and is started again a few seconds later reading the `frr.conf` on disk, while
//! the other keeps running. Needs root and FRR.

#![allow(clippy::expect_used)] // test helpers: a failed step is the test failure

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use netrollout_frr::daemons::FRR_LIB;

/// Where pathspace `ps` keeps its pid files (the test kit's FRR start puts them there).
fn pid_file(ps: &str, daemon: &str) -> String {
    format!("/var/run/frr/{ps}/{daemon}.pid")
}

/// `daemon` of pathspace `ps` answers `vtysh -d DAEMON`.
pub fn answers(ps: &str, daemon: &str) -> bool {
    Command::new("vtysh")
        .args(["-N", ps, "-d", daemon, "-c", "show version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Kills `daemon` of pathspace `ps` with `SIGKILL` (a crash: no clean-up) and waits until it
/// no longer answers.
pub fn crash(ps: &str, daemon: &str) {
    let pid = std::fs::read_to_string(pid_file(ps, daemon)).expect("the daemon's pid file");
    let status = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -KILL {daemon} ({})", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(5);
    while answers(ps, daemon) {
        assert!(
            Instant::now() < deadline,
            "{daemon} still answers after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `daemon` again in namespace `ns`, pathspace `ps`, reading `conf`, logging next to it,
/// and waits until it answers (at most 20 s).
pub fn restart(ns: &str, ps: &str, daemon: &str, conf: &Path) {
    let log = conf.with_file_name(format!("{daemon}.log"));
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(Path::new(FRR_LIB).join(daemon))
        .args(["-d", "-N", ps, "-u", "frr", "-g", "frr", "-i"])
        .arg(pid_file(ps, daemon))
        .arg("--log")
        .arg(format!("file:{}", log.display()))
        .arg("-f")
        .arg(conf)
        .output()
        .expect("start the daemon");
    assert!(
        out.status.success(),
        "restarting {daemon}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !answers(ps, daemon) {
        assert!(
            Instant::now() < deadline,
            "{daemon} does not answer after its restart"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
