//! Where the lab's FRR daemons log when they log to files ([`log_to`]: the VM's guest side),
//! and the last lines of those logs for a failure's [`super::dump`].

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// Where the daemons of this process's FRR starts log ([`log_to`]); unset: where their config
/// says (`log stdout`, which a daemon in the background does not keep).
static LOG_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// How many of each daemon's last log lines [`tail`] shows.
const TAIL_LINES: usize = 40;

/// Makes every FRR this process starts log to `DIR/PATHSPACE/DAEMON.log` (the VM's guest side
/// does: in the background a daemon does not keep the config's `log stdout`, and one that
/// ends should say why; [`super::dump`] shows the logs). Only the first call counts.
pub fn log_to(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let _ = LOG_DIR.set(dir.to_path_buf());
    Ok(())
}

/// The log directory of a pathspace when [`log_to`] was called: made, and writable for FRR's
/// user (8.4's `frr` on the host, 10.3's own in its root file system).
pub(super) fn dir(pathspace: &str) -> Result<Option<PathBuf>> {
    let Some(root) = LOG_DIR.get() else {
        return Ok(None);
    };
    let dir = root.join(pathspace);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777))
        .with_context(|| format!("making {} writable for FRR", dir.display()))?;
    Ok(Some(dir))
}

/// Appends the daemons' own words to `out`: the last lines of each daemon's log of the
/// pathspace `netns` (a daemon that ended says why last), when they log to files.
pub(super) fn tail(netns: &str, out: &mut String) {
    let Some(logs) = LOG_DIR.get().map(|root| root.join(netns)) else {
        return;
    };
    for daemon in ["mgmtd", "zebra", "bgpd", "bfdd"] {
        let Ok(text) = std::fs::read_to_string(logs.join(format!("{daemon}.log"))) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        out.push_str(&format!("## {daemon}.log (last lines)\n"));
        for line in &lines[lines.len().saturating_sub(TAIL_LINES)..] {
            out.push_str(line);
            out.push('\n');
        }
    }
}
