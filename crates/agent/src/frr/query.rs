//! Query: `vtysh` commands (`show ... json` for the routing probes, `show running-config`).

use std::process::Stdio;

use tokio::process::Command;

use super::parse::error_lines;
use super::{Frr, FrrError};

/// The FRR daemons the agent configures: zebra (interfaces, VNIs, routes) and bgpd.
pub(super) const DAEMONS: [&str; 2] = ["zebra", "bgpd"];

impl Frr {
    /// Runs `vtysh` with `args` (e.g. `-c "show bgp summary json"`); returns stdout.
    pub async fn vtysh(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .vtysh_cmd()
            .args(args)
            .output()
            .await
            .map_err(|e| format!("running vtysh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "vtysh {}: {}{}",
                args.join(" "),
                error_lines(&String::from_utf8_lossy(&out.stdout)),
                error_lines(&String::from_utf8_lossy(&out.stderr)),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Asks each daemon the agent needs (`vtysh -d zebra|bgpd -c 'show version'`); an
    /// [`FrrError::Unavailable`] names those that do not answer.
    pub async fn require_running(&self) -> Result<(), FrrError> {
        let mut daemons = Vec::new();
        let mut detail = Vec::new();
        for daemon in DAEMONS {
            if let Err(e) = self.vtysh(&["-d", daemon, "-c", "show version"]).await {
                daemons.push(daemon);
                // vtysh's own words, when it has any beyond the command.
                let said = e.rsplit_once(": ").map_or("", |(_, s)| s.trim());
                detail.push(match said {
                    "" => format!("vtysh -d {daemon}: no answer"),
                    said => format!("vtysh -d {daemon}: {said}"),
                });
            }
        }
        if daemons.is_empty() {
            return Ok(());
        }
        Err(FrrError::Unavailable {
            daemons,
            detail: detail.join("; "),
        })
    }

    /// `vtysh` reaching this FRR (config directory, pathspace, socket).
    pub(super) fn vtysh_cmd(&self) -> Command {
        let mut cmd = Command::new(self.settings.bindir.join("vtysh"));
        cmd.arg("--config_dir").arg(self.confdir());
        if let Some(ps) = &self.settings.pathspace {
            cmd.args(["-N", ps]);
        }
        if let Some(sock) = &self.settings.vty_socket {
            cmd.arg("--vty_socket").arg(sock);
        }
        cmd.stdin(Stdio::null()).kill_on_drop(true);
        cmd
    }
}
