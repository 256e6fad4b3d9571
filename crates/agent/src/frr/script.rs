//! Script: the `vtysh -f` that sends the diff, started before the script is known.
//!
//! vtysh's start is most of what a small script costs (it builds its whole command tree: about
//! 40 ms of CPU, 55 ms of wall time). When FRR's running config already differs from the text
//! as written, the agent starts that vtysh while the check (`vtysh -m -f`) still runs, with its
//! standard input as the file it reads (`-f /proc/self/fd/0`), and writes the script once it
//! has it: the start overlaps the check.
//!
//! vtysh reads a file as one configuration session: `enable`, `configure terminal` and
//! `XFRR_start_configuration` to every daemon before the first line, `XFRR_end_configuration`
//! after the last (FRR 8.4 `vtysh_read_file`). A session that gets no line (the check refused
//! the text, the marked text needs no change after all) is ended with nothing between the two,
//! and always waited for, never killed: bgpd counts its configuration as in progress from the
//! start marker until a second after the end marker (it holds new peers down meanwhile; 10
//! minutes when the end never comes).
//!
//! FRR 10's vtysh forks one child per daemon for `-f`, each reading the whole file: from one
//! pipe each child would read only part of the script (FRR 10.3 then missed lines, at random).
//! The agent asks it not to fork (`--no-fork`, FRR 10's option): one vtysh sends each line to
//! the daemons that own it, as FRR 8.4's does.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Child;

use super::parse::error_lines;
use super::{Frr, FrrError};

/// How long an ended session may take to exit before it is killed after all.
const END_TIMEOUT: Duration = Duration::from_secs(60);

/// A `vtysh -f` reading its standard input: started, waiting for the script.
#[derive(Debug)]
pub(super) struct Script {
    child: Child,
}

impl Frr {
    /// Starts `vtysh -f /proc/self/fd/0` for this FRR (`--no-fork` on FRR 10: see the module's
    /// doc).
    pub(super) fn start_script(&self) -> Result<Script, FrrError> {
        let program = self.settings.bindir.join("vtysh");
        let mut cmd = self.vtysh_cmd();
        if self.major().is_some_and(|m| m >= 10) {
            cmd.arg("--no-fork");
        }
        let child = cmd
            .arg("-f")
            .arg("/proc/self/fd/0")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| FrrError::Spawn { program, source })?;
        Ok(Script { child })
    }
}

impl Script {
    /// Sends `lines` (the lines go to the daemons that own them, as a config file's would),
    /// ends the session and waits. Returns FRR's error lines when vtysh succeeded all the same
    /// (a daemon's `CMD_WARNING`: vtysh prints its `% ...` line and goes on, e.g. FRR 8.4 and
    /// 10.3 on a malformed route target; empty when FRR said nothing); a vtysh that failed
    /// (a line a daemon refused outright, an unknown command) is [`FrrError::Rejected`].
    pub(super) async fn run(mut self, lines: &[String]) -> Result<String, FrrError> {
        let mut text = lines.join("\n");
        text.push('\n');
        let stdin = self.child.stdin.take();
        // A write that fails means vtysh is gone: its exit status and output say why.
        let write = async move {
            if let Some(mut stdin) = stdin {
                let _ = stdin.write_all(text.as_bytes()).await;
            }
        };
        let ((), out) = tokio::join!(write, self.child.wait_with_output());
        let out = out.map_err(|source| FrrError::Spawn {
            program: "vtysh".into(),
            source,
        })?;
        let said = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let line = error_lines(&said);
        if out.status.success() {
            return Ok(line);
        }
        Err(FrrError::Rejected {
            line: if line.is_empty() {
                format!("vtysh -f exited with {}", out.status)
            } else {
                line
            },
            wrote: true,
        })
    }

    /// Ends the session without a line and waits for vtysh (killed only after
    /// [`END_TIMEOUT`]).
    pub(super) async fn end(mut self) {
        drop(self.child.stdin.take());
        if tokio::time::timeout(END_TIMEOUT, self.child.wait())
            .await
            .is_err()
        {
            tracing::warn!("a vtysh session with nothing to send did not end; killing it");
            let _ = self.child.kill().await;
        }
    }
}
