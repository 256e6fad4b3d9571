//! FRR's daemons as a supervisor (watchfrr, systemd) sees them: one crashes (`SIGKILL`, by its
//! pid file), and is started again a few seconds later reading the `frr.conf` on disk, while
//! the other keeps running. Needs root and FRR.

#![allow(clippy::expect_used)] // test helpers: a failed step is the test failure

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use netrollout_frr::daemons::{Log, Start, Version};

/// Where pathspace `ps` keeps its pid files (the test kit's FRR start puts them there).
fn pid_file(ps: &str, daemon: &str) -> std::path::PathBuf {
    Version::from_env()
        .run_dir(ps)
        .join(format!("{daemon}.pid"))
}

/// `daemon` of pathspace `ps` answers `vtysh -d DAEMON`.
pub fn answers(ps: &str, daemon: &str) -> bool {
    Version::from_env()
        .vtysh_cmd(ps)
        .args(["-d", daemon, "-c", "show version"])
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

/// Starts `daemon` again in namespace `ns`, pathspace `ps`, reading `conf` (the test kit's
/// start of one daemon: on FRR 10 the config is sent to it with vtysh), logging next to it, and
/// waits until it answers (at most 20 s).
pub fn restart(ns: &str, ps: &str, daemon: &str, conf: &Path) {
    let dir = conf.parent().expect("the config's directory");
    Start {
        config: Some(conf),
        log: Log::Files(dir.to_path_buf()),
        timeout: Duration::from_secs(20),
        ..Start::from_env(ns, ps)
    }
    .start_one(daemon)
    .unwrap_or_else(|e| panic!("restarting {daemon}: {e}"));
}
