//! Vty: the FRR daemons asked over their vty sockets, the unix sockets vtysh itself talks to
//! (`<socket dir>/<pathspace>/<daemon>.vty`), so that reading FRR's running config starts no
//! process.
//!
//! The protocol, as FRR 8.4 and 10.3 speak it (`lib/vty.c` `vtysh_accept`/`vtysh_read`,
//! `vtysh/vtysh.c` `vtysh_client_run`): the client writes a command line ended by one NUL
//! byte; the daemon runs it and answers with its output, three NUL bytes and the command's
//! status (0 = success). A connection starts in the view node; vtysh sends `enable` to every
//! daemon first. `show running-config` is vtysh's own command: it sends each daemon it reached
//! `do write terminal`, in the order of its client list (FRR 10's mgmtd first), and joins their
//! texts by the rules of the version they run ([`super::merge`]; another version's texts make
//! the sockets unusable here, and vtysh is asked). Daemons vtysh cannot connect to are left out
//! without a word; so are they here, except zebra and bgpd, which the agent needs, and FRR 10's
//! mgmtd (it holds the route maps, prefix lists and VRFs): one of them not answering is
//! [`VtyError::Down`] naming it.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::FrrSettings;
use super::merge::{Dialect, Merge};

/// vtysh's daemons in the order of its client list (`vtysh_client[]`), without watchfrr, whose
/// config vtysh does not show; FRR 8.4 has no mgmtd.
const CLIENTS: [&str; 21] = [
    "mgmtd", "zebra", "ripd", "ripngd", "ospfd", "ospf6d", "ldpd", "bgpd", "isisd", "pimd",
    "nhrpd", "eigrpd", "babeld", "sharpd", "fabricd", "pbrd", "staticd", "bfdd", "vrrpd", "pathd",
    "pim6d",
];

/// FRR's socket directory when `--vty_socket` is not given (Debian's build, vtysh's default).
const DEFAULT_DIR: &str = "/var/run/frr";

/// How long a daemon may take to answer: a daemon stopped (`SIGSTOP`) or stuck never does.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// Why the daemons' answers are missing.
#[derive(Debug)]
pub(super) enum VtyError {
    /// Daemons the agent needs do not answer: `(daemon, what happened)` for each.
    Down(Vec<(&'static str, String)>),
    /// The sockets cannot be used here (no socket directory, no permission, an answer outside
    /// the protocol); vtysh may still reach FRR.
    Unusable(String),
}

/// The daemons' vty sockets of one FRR.
#[derive(Debug)]
pub(super) struct Vty {
    dir: PathBuf,
}

impl Vty {
    /// The socket directory vtysh uses for `settings`: `--vty_socket` or FRR's default, then
    /// the pathspace (`-N NAME`).
    pub(super) fn new(settings: &FrrSettings) -> Self {
        let mut dir = settings
            .vty_socket
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR));
        if let Some(ps) = &settings.pathspace {
            dir.push(ps);
        }
        Self { dir }
    }

    /// FRR's running config as vtysh's `show running-config no-header` prints it, less
    /// vtysh's own lines, and the FRR version the daemons run: every daemon with a socket asked
    /// `enable` and `do write terminal` (all at once), the answers joined in vtysh's order by
    /// the rules of that version. Each daemon of `required` must answer, and mgmtd when it has a
    /// socket or the daemons run FRR 10.
    pub(super) async fn running(&self, required: &[&'static str]) -> Result<Running, VtyError> {
        let sockets = self.sockets(required)?;
        let answers = futures::future::join_all(
            sockets
                .iter()
                .map(|(daemon, path)| ask(daemon, path, &["enable", "do write terminal"])),
        )
        .await;
        let mut texts = Vec::new();
        let mut down = Vec::new();
        for ((daemon, _), answer) in sockets.iter().zip(answers) {
            match answer {
                Ok(answers) => texts.push((*daemon, answers.last().cloned().unwrap_or_default())),
                // vtysh leaves out a daemon it cannot reach; the agent needs zebra and bgpd,
                // and FRR 10's mgmtd.
                Err(Failure::Down(detail)) if required.contains(daemon) || *daemon == "mgmtd" => {
                    down.push((*daemon, detail));
                }
                Err(Failure::Down(detail)) => {
                    tracing::debug!(
                        daemon,
                        detail,
                        "FRR daemon not reached; left out as vtysh does"
                    );
                }
                Err(Failure::Unusable(why)) => return Err(VtyError::Unusable(why)),
            }
        }
        if !down.is_empty() {
            return Err(VtyError::Down(down));
        }
        let (version, dialect) = version_of(&texts).map_err(VtyError::Unusable)?;
        if dialect == Dialect::V10_3 && !sockets.iter().any(|(d, _)| *d == "mgmtd") {
            return Err(VtyError::Down(vec![(
                "mgmtd",
                format!(
                    "mgmtd: FRR {version} runs without it (no {})",
                    self.socket("mgmtd").display()
                ),
            )]));
        }
        let mut merge = Merge::new(dialect);
        for (_, text) in &texts {
            merge.add(text);
        }
        Ok(Running {
            text: merge.text(),
            version,
        })
    }

    /// Each daemon of `daemons` answers `enable`.
    pub(super) async fn ping(&self, daemons: &[&'static str]) -> Result<(), VtyError> {
        self.dir_exists()?;
        let answers = futures::future::join_all(
            daemons
                .iter()
                .map(|d| async move { ask(d, &self.socket(d), &["enable"]).await }),
        )
        .await;
        let mut down = Vec::new();
        for (daemon, answer) in daemons.iter().zip(answers) {
            match answer {
                Ok(_) => {}
                Err(Failure::Down(detail)) => down.push((*daemon, detail)),
                Err(Failure::Unusable(why)) => return Err(VtyError::Unusable(why)),
            }
        }
        if down.is_empty() {
            Ok(())
        } else {
            Err(VtyError::Down(down))
        }
    }

    fn socket(&self, daemon: &str) -> PathBuf {
        self.dir.join(format!("{daemon}.vty"))
    }

    fn dir_exists(&self) -> Result<(), VtyError> {
        if self.dir.is_dir() {
            return Ok(());
        }
        Err(VtyError::Unusable(format!(
            "no FRR socket directory {} (FRR's --vty_socket and -N decide it; the agent's \
             --frr-vty-socket and --frr-pathspace must name the same)",
            self.dir.display()
        )))
    }

    /// The sockets vtysh would connect to, in its order: each daemon of [`CLIENTS`] whose
    /// socket exists (always those of `required`), an ospfd's instances (`ospfd-N.vty`) after it.
    fn sockets(&self, required: &[&'static str]) -> Result<Vec<(&'static str, PathBuf)>, VtyError> {
        self.dir_exists()?;
        let names: Vec<String> = std::fs::read_dir(&self.dir)
            .map_err(|e| {
                VtyError::Unusable(format!(
                    "reading FRR's socket directory {}: {e}",
                    self.dir.display()
                ))
            })?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        let mut out = Vec::new();
        for daemon in CLIENTS {
            if required.contains(&daemon) || names.contains(&format!("{daemon}.vty")) {
                out.push((daemon, self.socket(daemon)));
            }
            if daemon == "ospfd" {
                let mut instances: Vec<PathBuf> = names
                    .iter()
                    .filter(|n| n.starts_with("ospfd-") && n.ends_with(".vty"))
                    .map(|n| self.dir.join(n))
                    .collect();
                instances.sort();
                out.extend(instances.into_iter().map(|p| (daemon, p)));
            }
        }
        Ok(out)
    }
}

/// FRR's running config read from the daemons' sockets.
#[derive(Debug)]
pub(super) struct Running {
    /// As vtysh's `show running-config no-header` prints it, less vtysh's own lines.
    pub(super) text: String,
    /// The FRR version the daemons run (their `frr version` line).
    pub(super) version: String,
}

/// The FRR version of the daemons' `texts` (each text's `frr version` line) and the rules
/// [`Merge`] joins them by; an error when a daemon names none, they differ, or the agent does
/// not follow that version's vtysh rules.
fn version_of(texts: &[(&str, String)]) -> Result<(String, Dialect), String> {
    let mut seen: Option<(&str, &str)> = None;
    for (daemon, text) in texts {
        let version = text
            .lines()
            .find_map(|l| l.strip_prefix("frr version "))
            .map(str::trim)
            .ok_or_else(|| format!("{daemon} shows no `frr version` line"))?;
        match seen {
            Some((other, v)) if v != version => {
                return Err(format!("{other} runs FRR {v} and {daemon} FRR {version}"));
            }
            _ => seen = Some((daemon, version)),
        }
    }
    let (_, version) = seen.ok_or("no FRR daemon answered")?;
    let dialect = Dialect::of(version).ok_or_else(|| {
        format!(
            "the daemons run FRR {version}, and the agent joins the daemons' configs by the \
             vtysh rules of FRR {} only",
            Dialect::KNOWN
        )
    })?;
    Ok((version.to_string(), dialect))
}

/// What went wrong with one daemon.
#[derive(Debug)]
enum Failure {
    /// It does not answer (what happened).
    Down(String),
    /// Its socket cannot be used (why).
    Unusable(String),
}

/// Sends `lines` to the daemon at `path` at once, each a command; returns their outputs. A
/// status other than success is [`Failure::Unusable`] (the commands are vtysh's own).
async fn ask(daemon: &str, path: &Path, lines: &[&str]) -> Result<Vec<String>, Failure> {
    let talk = async {
        let mut stream = UnixStream::connect(path)
            .await
            .map_err(|e| match e.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                    Failure::Down(format!("{daemon}: connecting to {}: {e}", path.display()))
                }
                _ => Failure::Unusable(format!("connecting to {}: {e}", path.display())),
            })?;
        let lost = |e: io::Error| Failure::Down(format!("{daemon}: {}: {e}", path.display()));
        let mut message = Vec::new();
        for line in lines {
            message.extend_from_slice(line.as_bytes());
            message.push(0);
        }
        stream.write_all(&message).await.map_err(lost)?;
        let mut buf = Vec::new();
        let mut outputs = Vec::new();
        for line in lines {
            let (text, status) =
                answer(&mut stream, &mut buf)
                    .await
                    .map_err(|e| match e.kind() {
                        io::ErrorKind::InvalidData => {
                            Failure::Unusable(format!("{daemon} ({}): {e}", path.display()))
                        }
                        _ => lost(e),
                    })?;
            if status != 0 {
                return Err(Failure::Unusable(format!(
                    "{daemon} answered `{line}` with status {status}: {}",
                    text.trim()
                )));
            }
            outputs.push(text);
        }
        Ok(outputs)
    };
    match tokio::time::timeout(ANSWER_TIMEOUT, talk).await {
        Ok(answer) => answer,
        Err(_) => Err(Failure::Down(format!(
            "{daemon}: no answer within {} s on {}",
            ANSWER_TIMEOUT.as_secs(),
            path.display()
        ))),
    }
}

/// Reads one answer (output up to the terminator, the status byte) from `stream`; `buf` keeps
/// what was read past it (the next answer's start).
async fn answer(stream: &mut UnixStream, buf: &mut Vec<u8>) -> io::Result<(String, u8)> {
    let mut scanned = 0;
    loop {
        if let Some(at) = buf[scanned..]
            .iter()
            .position(|&b| b == 0)
            .map(|p| p + scanned)
        {
            if buf.len() >= at + 4 {
                if buf[at..at + 3] != [0, 0, 0] {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "an answer's end is not three NUL bytes and a status",
                    ));
                }
                let status = buf[at + 3];
                let text = String::from_utf8_lossy(&buf[..at]).into_owned();
                buf.drain(..at + 4);
                return Ok((text, status));
            }
            scanned = at;
        } else {
            scanned = buf.len();
        }
        buf.reserve(64 * 1024);
        if stream.read_buf(buf).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the daemon closed the connection before its answer ended",
            ));
        }
    }
}

#[cfg(test)]
mod tests;
