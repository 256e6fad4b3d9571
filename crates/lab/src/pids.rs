//! The lab's pid file: every process a lab starts is recorded in `STATE_DIR/pids`, so
//! `netrollout-lab down` can end them after a crash. A leaf module: the cluster, the traffic and
//! the VM host record here, and nothing here calls back.

use std::path::Path;
use std::process::Stdio;

use anyhow::{Context as _, Result};

/// Appends pids to the lab's pid file, so `netrollout-lab down` can end them after a crash.
pub fn record_pids(state_dir: &Path, pids: &[u32]) -> Result<()> {
    let file = state_dir.join("pids");
    let mut text = std::fs::read_to_string(&file).unwrap_or_default();
    for pid in pids {
        text.push_str(&format!("{pid}\n"));
    }
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))
}

/// Kills the processes listed in a lab's pid file; returns how many it signalled.
pub fn kill_recorded(state_dir: &Path) -> usize {
    let Ok(text) = std::fs::read_to_string(state_dir.join("pids")) else {
        return 0;
    };
    let mut killed = 0;
    for pid in text.lines().filter(|l| !l.trim().is_empty()) {
        let ok = std::process::Command::new("kill")
            .args(["-9", pid.trim()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        killed += usize::from(ok);
    }
    let _ = std::fs::remove_file(state_dir.join("pids"));
    killed
}
