//! The daemons [`super::Start`] started: their pids, vtysh, the dump a failing test prints,
//! their stop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{DUMP, Log, Start, Version};

/// zebra and bgpd (and FRR 10's mgmtd) running in a namespace; stopped on drop.
#[derive(Debug)]
pub struct Daemons {
    pub(super) pathspace: String,
    pub(super) run_dir: PathBuf,
    pub(super) log: Log,
    /// Cleared by [`Daemons::detach`].
    pub(super) stop_on_drop: bool,
    pub(super) version: Version,
    /// Whether bfdd was started too ([`super::Start::bfdd`]).
    pub(super) bfdd: bool,
    /// Host directories bound into FRR 10.3's root file system, with their mount points there
    /// (removed on drop).
    pub(super) binds: Vec<(PathBuf, PathBuf)>,
}

impl Daemons {
    /// Starts zebra and then bgpd (FRR 10: mgmtd first) of the tests' FRR version
    /// ([`Version::from_env`]) inside `netns` with pathspace `pathspace`, reading `conf`, as
    /// user `frr`, and waits until they answer `vtysh`.
    pub fn start(netns: &str, pathspace: &str, conf: &Path, log: Log) -> Self {
        Start {
            config: Some(conf),
            log,
            ..Start::from_env(netns, pathspace)
        }
        .start()
    }

    /// Whether `daemon` answers: zebra is up ([`Daemons::zebra_up`]), bgpd shows its summary,
    /// mgmtd its version.
    pub(super) fn ready(&self, daemon: &str, underlay: Option<&str>) -> bool {
        match daemon {
            "zebra" => self.zebra_up(underlay),
            "bgpd" => self.try_vtysh("show bgp summary json").is_some(),
            _ => self.try_vtysh_daemon(daemon, "show version").is_some(),
        }
    }

    /// The FRR version of these daemons.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Where FRR 10.3's daemons of `pathspace` see the host directory `what` (`conf`, `log`).
    pub(super) fn inside(pathspace: &str, what: &str) -> PathBuf {
        Path::new("/netrollout/mnt").join(pathspace).join(what)
    }

    /// Whether zebra is up: its zserv socket (where bgpd connects) exists, it answers
    /// `show zebra`, and, when `underlay` is given, shows that address in
    /// `show interface brief` (it has read the namespace's interfaces).
    pub fn zebra_up(&self, underlay: Option<&str>) -> bool {
        self.run_dir.join("zserv.api").exists()
            && self.try_vtysh_daemon("zebra", "show zebra").is_some()
            && underlay.is_none_or(|ip| {
                self.try_vtysh_daemon("zebra", "show interface brief")
                    .is_some_and(|out| out.contains(ip))
            })
    }

    /// The daemons in start order: the version's, then bfdd when started.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = self.version.daemons().to_vec();
        if self.bfdd {
            names.push("bfdd");
        }
        names
    }

    /// The pid file of `daemon`.
    pub(super) fn pid_file(&self, daemon: &str) -> PathBuf {
        self.run_dir.join(format!("{daemon}.pid"))
    }

    /// The daemons' pids (in start order), from their pid files.
    pub fn pids(&self) -> Vec<u32> {
        self.names()
            .iter()
            .filter_map(|d| std::fs::read_to_string(self.pid_file(d)).ok())
            .filter_map(|text| text.trim().parse().ok())
            .collect()
    }

    /// Leaves the daemons running after this value is gone (the lab stops them itself, by
    /// their pid files); returns their pids.
    pub fn detach(mut self) -> Vec<u32> {
        self.stop_on_drop = false;
        self.pids()
    }

    /// The pathspace (`vtysh -N`).
    pub fn pathspace(&self) -> &str {
        &self.pathspace
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output, `None` when vtysh fails.
    pub fn try_vtysh(&self, cmd: &str) -> Option<String> {
        self.vtysh_args(&[], cmd)
    }

    /// `vtysh -N PATHSPACE -d DAEMON -c CMD`: asks one daemon only.
    pub fn try_vtysh_daemon(&self, daemon: &str, cmd: &str) -> Option<String> {
        self.vtysh_args(&["-d", daemon], cmd)
    }

    fn vtysh_args(&self, args: &[&str], cmd: &str) -> Option<String> {
        let out = self
            .vtysh_cmd()
            .args(args)
            .args(["-c", cmd])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// vtysh of these daemons' version reaching them (`-N PATHSPACE`, and `--vty_socket` for
    /// FRR 10.3), with no command yet.
    pub fn vtysh_cmd(&self) -> Command {
        self.version.vtysh_cmd(&self.pathspace)
    }

    /// `vtysh -N PATHSPACE -c CMD`'s output; panics when vtysh fails.
    pub fn vtysh(&self, cmd: &str) -> String {
        self.try_vtysh(cmd)
            .unwrap_or_else(|| panic!("vtysh -N {} -c {cmd:?} failed", self.pathspace))
    }

    /// What to print when a test fails: [`DUMP`] (the sessions, the next hops bgpd tracks and
    /// zebra resolves — a route whose next hop zebra has not resolved stays not valid —, the
    /// received type-5 routes, zebra's interfaces, routes and VNIs), the `extra` commands, the
    /// running config and the daemons' log files. Every wait of the VM suites prints it when it
    /// times out, so a slow route names its cause.
    pub fn dump(&self, extra: &[&str]) -> String {
        let mut out = String::new();
        for cmd in DUMP.iter().chain(extra).chain(&["show running-config"]) {
            let text = self
                .try_vtysh(cmd)
                .unwrap_or_else(|| "(vtysh failed)".into());
            out.push_str(&format!("--- {} {cmd}\n{text}\n", self.pathspace));
        }
        out.push_str(&self.logs());
        out
    }

    /// The daemons' log files (nothing when they log to syslog), and what FRR 10.3's daemons
    /// printed (their `.out` files in the run directory).
    pub fn logs(&self) -> String {
        let mut files = Vec::new();
        for d in self.names() {
            if let Log::Files(dir) = &self.log {
                files.push(dir.join(format!("{d}.log")));
            }
            if self.version.root().is_some() {
                files.push(self.run_dir.join(format!("{d}.out")));
            }
        }
        files
            .iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).unwrap_or_default();
                format!("--- {}\n{text}\n", path.display())
            })
            .collect()
    }

    /// Stops the daemons, bgpd first (by their pid files), and waits until all are gone (at
    /// most 5 s).
    pub fn stop(&self) {
        let mut pids = Vec::new();
        for daemon in self.names().iter().rev() {
            let file = self.pid_file(daemon);
            if let Ok(pid) = std::fs::read_to_string(file) {
                let pid = pid.trim().to_string();
                let _ = Command::new("kill").arg(&pid).status();
                pids.push(pid);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && pids.iter().any(|pid| alive(pid)) {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether process `pid` still runs (a zombie no longer does: the test VM's init may not reap).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| !rest.starts_with('Z'))
    })
}

impl Drop for Daemons {
    fn drop(&mut self) {
        if !self.stop_on_drop {
            return;
        }
        self.stop();
        let _ = std::fs::remove_dir_all(&self.run_dir);
        // The mount points (empty here: the mounts lived in the daemons' mount namespaces).
        if let Some(root) = self.version.root() {
            for (_, inside) in &self.binds {
                let _ = std::fs::remove_dir(root.join(inside.strip_prefix("/").unwrap_or(inside)));
            }
            let _ = std::fs::remove_dir(root.join("netrollout/mnt").join(&self.pathspace));
        }
    }
}
