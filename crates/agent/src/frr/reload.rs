//! Reload: FRR's parser checks the written text, new VRFs get their VNIs, and
//! `frr-reload.py --reload` applies the difference.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use tokio::process::Command;

use super::conf::Conf;
use super::parse::{error_lines, vrf_vnis};
use super::{Frr, FrrError};

/// How many texts' parses [`Frr::check_once`] keeps: the last-known-good and the texts tried
/// since (a restore, an apply again after a failure, a change and its undo).
const MARKS: usize = 4;

impl Frr {
    /// `vtysh -m -f FILE`: FRR's parser reads the file; an unknown line fails with its number.
    /// Returns the file as FRR read it (each context closed explicitly).
    pub(super) async fn check(&self, file: &Path) -> Result<String, FrrError> {
        let program = self.settings.bindir.join("vtysh");
        let out = self
            .vtysh_cmd()
            .arg("-m")
            .arg("-f")
            .arg(file)
            .output()
            .await
            .map_err(|source| FrrError::Spawn { program, source })?;
        if out.status.success() {
            return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
        }
        let mut line = error_lines(&String::from_utf8_lossy(&out.stderr));
        if line.is_empty() {
            line = format!("vtysh -m -f exited with {}", out.status);
        }
        Err(FrrError::Rejected { line, wrote: false })
    }

    /// [`Frr::check`] of `file`, which holds `full`, read as the diff reads it ([`Conf`]),
    /// unless this process parsed the same text before: then FRR's parse of it then, read then
    /// (the same vtysh parses the same text the same way; a text it refused is not kept). The
    /// last [`MARKS`] texts are kept.
    pub(super) async fn check_once(&self, full: &str, file: &Path) -> Result<Arc<Conf>, FrrError> {
        if let Some(marked) = self.kept_mark(full) {
            return Ok(marked);
        }
        let marked = Arc::new(Conf::parse(&self.check(file).await?));
        // A poisoned lock only means a panic elsewhere while it was held; the list is whole.
        let mut marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        if !marks.iter().any(|(t, _)| t == full) {
            if marks.len() == MARKS {
                marks.pop_front();
            }
            marks.push_back((full.to_string(), marked.clone()));
        }
        Ok(marked)
    }

    /// FRR's parse of `full` when [`Frr::check_once`] keeps it.
    pub(super) fn kept_mark(&self, full: &str) -> Option<Arc<Conf>> {
        let marks = self.marks.lock().unwrap_or_else(|e| e.into_inner());
        marks
            .iter()
            .find(|(t, _)| t == full)
            .map(|(_, m)| m.clone())
    }

    /// Configures the VNI of each VRF block of `full` whose VRF FRR has no config for yet,
    /// with one `vtysh -c` per VRF, before `frr-reload.py` runs. frr-reload.py (FRR 8.4) sends
    /// the lines it adds to existing contexts first and new contexts after them, so a new
    /// `vrf NAME` follows a bgpd-only `router bgp` chunk; vtysh then loses zebra's context and
    /// zebra takes ` vni N` as the global command (the VNI lands on the default VRF). A VRF FRR
    /// has config for already is an existing context, which [`netrollout_frr::with_base`] puts first.
    pub(super) async fn add_new_vrf_vnis(&self, full: &str) -> Result<(), FrrError> {
        let blocks = vrf_vnis(full);
        if blocks.is_empty() {
            return Ok(());
        }
        let running = self
            .vtysh(&["-c", "show running-config"])
            .await
            .map_err(|line| FrrError::Rejected { line, wrote: false })?;
        for (vrf, vni) in blocks {
            if running.lines().any(|l| l == format!("vrf {vrf}")) {
                continue;
            }
            let (vrf_line, vni_line) = (format!("vrf {vrf}"), format!("vni {vni}"));
            let out = self
                .vtysh(&["-c", "configure terminal", "-c", &vrf_line, "-c", &vni_line])
                .await
                .map_err(|line| FrrError::Rejected { line, wrote: true })?;
            let line = error_lines(&out);
            if !line.is_empty() {
                return Err(FrrError::Rejected { line, wrote: true });
            }
        }
        Ok(())
    }

    /// `frr-reload.py --reload`: FRR applies the difference to the written `frr.conf`.
    pub(super) async fn reload(&self) -> Result<(), FrrError> {
        let s = &self.settings;
        let mut cmd = Command::new(&s.reload_script);
        cmd.arg("--reload")
            .arg("--stdout")
            .arg("--log-level")
            .arg("error")
            .arg("--bindir")
            .arg(&s.bindir)
            .arg("--confdir")
            .arg(self.confdir())
            .arg("--rundir")
            .arg(&s.rundir);
        if let Some(ps) = &s.pathspace {
            cmd.args(["--pathspace", ps]);
        }
        if let Some(sock) = &s.vty_socket {
            cmd.arg("--vty_socket").arg(sock);
        }
        cmd.arg(&s.config).stdin(Stdio::null()).kill_on_drop(true);
        let out = cmd.output().await.map_err(|source| FrrError::Spawn {
            program: s.reload_script.clone(),
            source,
        })?;
        if out.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut line = error_lines(&text);
        if line.is_empty() {
            line = format!("frr-reload.py exited with {}", out.status);
            // No FRR error line (e.g. a Python exception): its last line says why.
            if let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
                line = format!("{line}: {last}");
            }
        }
        Err(FrrError::Rejected { line, wrote: true })
    }
}
