//! Read: FRR's running config and whether zebra and bgpd answer, asked over the daemons' vty
//! sockets ([`super::vty`]: no process start); through vtysh when the sockets cannot be used
//! (counted in [`Frr::vty_fallbacks`]).

use std::sync::atomic::Ordering;

use tracing::warn;

use super::vty::VtyError;
use super::{Frr, FrrError};

impl Frr {
    /// FRR's running config (`show running-config no-header`, FRR's own view of its config,
    /// less vtysh's own lines), read from the daemons' vty sockets:
    /// [`FrrError::Unavailable`] when zebra or bgpd does not answer (their config would be
    /// missing from the text without an error).
    pub async fn running_config(&self) -> Result<String, FrrError> {
        match self.vty.running(self.required()).await {
            Ok(running) => {
                self.saw_version(&running.version, "vty");
                Ok(running.text)
            }
            Err(VtyError::Down(down)) => Err(unavailable(down)),
            Err(VtyError::Unusable(why)) => {
                self.vty_fallbacks.fetch_add(1, Ordering::Relaxed);
                warn!(%why, "FRR's vty sockets cannot be used; reading its running config with vtysh");
                self.running_vtysh().await
            }
        }
    }

    /// Whether zebra and bgpd answer (`enable` on their vty sockets; `vtysh -d DAEMON -c 'show
    /// version'` when the sockets cannot be used): an [`FrrError::Unavailable`] names those
    /// that do not.
    pub async fn require_running(&self) -> Result<(), FrrError> {
        match self.vty.ping(self.required()).await {
            Ok(()) => Ok(()),
            Err(VtyError::Down(down)) => Err(unavailable(down)),
            Err(VtyError::Unusable(why)) => {
                self.vty_fallbacks.fetch_add(1, Ordering::Relaxed);
                warn!(%why, "FRR's vty sockets cannot be used; asking its daemons with vtysh");
                self.require_running_vtysh().await
            }
        }
    }

    /// `show running-config no-header` read by one vtysh after `show daemons`:
    /// [`FrrError::Unavailable`] when zebra or bgpd is not among the daemons vtysh reached.
    async fn running_vtysh(&self) -> Result<String, FrrError> {
        let out = match self
            .vtysh(&["-c", "show daemons", "-c", "show running-config no-header"])
            .await
        {
            Ok(out) => out,
            Err(line) => {
                // Which daemon, in `require_running_vtysh`'s words; else vtysh's own.
                self.require_running_vtysh().await?;
                return Err(FrrError::Rejected { line, wrote: false });
            }
        };
        let (daemons, running) = out.split_once('\n').unwrap_or((&out, ""));
        if let Some(version) = running.lines().find_map(|l| l.strip_prefix("frr version ")) {
            self.saw_version(version.trim(), "vtysh");
        }
        let reached: Vec<&str> = daemons.split_whitespace().collect();
        let missing: Vec<&'static str> = self
            .required()
            .iter()
            .copied()
            .filter(|d| !reached.contains(d))
            .collect();
        if missing.is_empty() {
            return Ok(running.to_string());
        }
        Err(FrrError::Unavailable {
            detail: format!(
                "vtysh reached only: {}",
                if reached.is_empty() {
                    "none".to_string()
                } else {
                    reached.join(" ")
                }
            ),
            daemons: missing,
        })
    }

    /// Asks each daemon the agent needs (`vtysh -d zebra|bgpd -c 'show version'`).
    async fn require_running_vtysh(&self) -> Result<(), FrrError> {
        let mut daemons = Vec::new();
        let mut detail = Vec::new();
        for &daemon in self.required() {
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
}

/// The daemons that did not answer, with what happened to each.
fn unavailable(down: Vec<(&'static str, String)>) -> FrrError {
    FrrError::Unavailable {
        detail: down
            .iter()
            .map(|(_, d)| d.as_str())
            .collect::<Vec<_>>()
            .join("; "),
        daemons: down.into_iter().map(|(d, _)| d).collect(),
    }
}
