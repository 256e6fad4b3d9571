//! Query: `vtysh` commands (`show ... json` for the routing probes, `show running-config`).

use std::process::Stdio;

use tokio::process::Command;

use super::Frr;
use super::parse::error_lines;

/// The FRR daemons the agent configures: zebra (interfaces, VNIs, routes) and bgpd.
pub(super) const DAEMONS: [&str; 2] = ["zebra", "bgpd"];

/// [`DAEMONS`] of FRR 10, with mgmtd, which holds the route maps, prefix lists and VRFs.
pub(super) const DAEMONS_10: [&str; 3] = ["mgmtd", "zebra", "bgpd"];

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
